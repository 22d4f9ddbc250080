"""The shared optimizer interface: convergence, seeds, constraints, multi-start, ICPSO pieces."""

import numpy as np
import pytest

from robodyn.identification import optimizers as opt


def sphere(X):
    return np.sum((X - 0.3) ** 2, axis=1)


BOUNDS = opt.Bounds(np.full(5, -2.0), np.full(5, 2.0))
FAST = {"slsqp": None, "ga": opt.GAOptions(generations=150), "pso": opt.PSOOptions(population=30, iterations=150),
        "icpso": opt.ICPSOOptions(population=30, iterations=150)}


@pytest.mark.parametrize("method", opt.METHODS)
def test_every_method_finds_the_sphere_minimum(method):
    res = opt.minimize(sphere, BOUNDS, method, seed=1, options=FAST[method])
    assert res.feasible
    assert res.fun < 1e-3
    assert np.allclose(res.x, 0.3, atol=0.05)
    assert res.nfev > 0 and res.history and res.history[-1] <= res.history[0]


@pytest.mark.parametrize("method", ["ga", "pso", "icpso"])
def test_same_seed_same_result_other_seed_differs(method):
    a = opt.minimize(sphere, BOUNDS, method, seed=7, options=FAST[method])
    b = opt.minimize(sphere, BOUNDS, method, seed=7, options=FAST[method])
    c = opt.minimize(sphere, BOUNDS, method, seed=8, options=FAST[method])
    assert np.array_equal(a.x, b.x)
    assert not np.array_equal(a.x, c.x)


def test_population_is_evaluated_in_one_call():
    sizes = []

    def fitness(X):
        sizes.append(X.shape[0])
        return sphere(X)

    opt.minimize(fitness, BOUNDS, "pso", seed=0, options=opt.PSOOptions(population=17, iterations=3))
    assert set(sizes) == {17}
    sizes.clear()
    opt.minimize(fitness, BOUNDS, "slsqp", seed=0, options=opt.SLSQPOptions(max_iter=3))
    assert BOUNDS.dim in sizes  # the whole finite-difference stencil at once


def test_constraints_are_respected_by_slsqp_and_metaheuristics():
    # minimise the sphere centred at 0.3 subject to x0 + x1 <= -1 (optimum on the constraint)
    lin = opt.LinearConstraint(np.array([[1.0, 1, 0, 0, 0]]), np.array([-1.0]))
    nonlin = opt.NonlinearConstraint(lambda X: (X[:, 0] + X[:, 1] + 1.0)[:, None])
    for method, con in (("slsqp", lin), ("ga", lin), ("pso", nonlin), ("icpso", nonlin)):
        res = opt.minimize(sphere, BOUNDS, method, seed=3, options=FAST[method], constraints=[con])
        assert res.feasible, method
        assert res.x[0] + res.x[1] <= -1.0 + 1e-7, method
        assert res.x[0] + res.x[1] == pytest.approx(-1.0, abs=0.05), method


def test_repair_is_applied_before_evaluation():
    seen = []

    def fitness(X):
        seen.append(X.copy())
        return sphere(X)

    opt.minimize(fitness, BOUNDS, "pso", seed=0, options=opt.PSOOptions(population=10, iterations=5),
                 repair=lambda X: np.minimum(X, 0.0))
    assert all(np.all(X <= 0.0) for X in seen)


def test_multistart_keeps_the_best_run_and_callback_can_stop():
    res = opt.minimize(sphere, BOUNDS, "pso", seed=0, options=opt.PSOOptions(population=5, iterations=5), restarts=4)
    assert len(res.runs) == 4
    assert res.fun == min(r["fun"] for r in res.runs)
    calls = []
    res = opt.minimize(sphere, BOUNDS, "ga", seed=0, callback=lambda p: calls.append(p.iteration) or p.iteration >= 3)
    assert calls == [1, 2, 3] and res.nit == 3


def test_icpso_pieces_follow_seed_002():
    # eq. 11: w_max at t = 0, close to w_min at the end, monotone
    w = [opt.icpso_inertia(t, 100, 0.4, 0.9, 4, 3) for t in range(101)]
    assert w[0] == pytest.approx(0.9) and w[-1] == pytest.approx(0.4, abs=0.01)
    assert np.all(np.diff(w) <= 0)
    # eqs. 12-13: good particles explore (c1 high), poor ones follow the swarm (c2 high)
    F = np.arange(20.0)
    c1, c2 = opt.icpso_learning_factors(F, 0.5, 2.5)
    assert c1[0] == 2.5 and c2[0] == 0.5 and c1[-1] == 0.5 and c2[-1] == 2.5
    assert np.all((c1 >= 0.5) & (c1 <= 2.5)) and np.allclose(c1 + c2, 3.0)
    # eqs. 14-15
    assert opt.is_premature(np.full(10, 5.0), best=5.0, target=0.0, variance_threshold=10, delta=1)
    assert not opt.is_premature(np.full(10, 0.5), best=0.5, target=0.0, variance_threshold=10, delta=1)
    assert not opt.is_premature(np.array([0.0, 100.0]), best=5.0, target=0.0, variance_threshold=10, delta=1)
    # eq. 16: the tent map
    seq = tent_values = opt.tent_map_sequence(np.array([0.2, 0.7]), 3)
    assert np.allclose(seq[:, 0], [0.4, 0.8, 0.4]) and np.allclose(tent_values[:, 1], [0.6, 0.8, 0.4])


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="method"):
        opt.minimize(sphere, BOUNDS, "nelder")
    with pytest.raises(ValueError, match="upper"):
        opt.Bounds([0.0], [0.0])
    with pytest.raises(ValueError, match="options"):
        opt.minimize(sphere, BOUNDS, "pso", options=opt.GAOptions())
