"""The White Shark Optimizer in the shared optimizer interface (Ni et al. 2024 eqs. 12-28)."""

import numpy as np
import pytest

from robodyn.identification import optimizers as opt
from robodyn.identification.optimizers import wso


def test_coefficients_follow_ni_2024():
    assert opt.wso_constriction(4.125) == pytest.approx(0.7034, abs=1e-4)  # eq. 18
    assert opt.wso_frequency(0.07, 0.75) == pytest.approx(0.07 + 0.68 / 0.82)  # eq. 23
    a1, a2 = opt.wso_weights(0, 3000, 0.5, 1.5)  # eqs. 16-17 at k = 0
    assert (a1, a2) == pytest.approx((2.5, 1.5))
    a1, a2 = opt.wso_weights(3000, 3000, 0.5, 1.5)
    assert a1 == pytest.approx(1.5, abs=1e-6) and a2 == pytest.approx(0.5, abs=1e-6)
    mv = [opt.wso_movement_force(k, 3000, 6.25, 100.0) for k in (0, 1500, 3000)]  # eq. 24
    assert mv[0] < 1e-6 < mv[1] < mv[2] < 1 / 6.25
    assert opt.wso_school_strength(3000, 3000, 0.005) == pytest.approx(1 - np.exp(-0.005))  # eq. 27


def sphere(X):
    return np.sum((X - 0.3) ** 2, axis=1)


def test_wso_minimises_a_shifted_sphere_reproducibly():
    bounds = opt.Bounds(-np.ones(10) * 5, np.ones(10) * 5)
    options = opt.WSOOptions(population=40, iterations=400)
    a = opt.minimize(sphere, bounds, "wso", seed=3, options=options)
    b = opt.minimize(sphere, bounds, "wso", seed=3, options=options)
    assert a.fun < 1e-3
    assert np.array_equal(a.x, b.x) and a.history == b.history
    assert len(a.history) == 400 and np.all(np.diff(a.history) <= 0)
    assert np.all(a.x >= bounds.lower) and np.all(a.x <= bounds.upper)


def test_wso_reports_progress_and_can_be_stopped():
    seen = []

    def callback(p):
        seen.append(p.iteration)
        return p.iteration >= 5

    res = opt.minimize(sphere, opt.Bounds(-np.ones(3), np.ones(3)), "wso", seed=0,
                       options=opt.WSOOptions(population=10, iterations=100), callback=callback)
    assert seen == [1, 2, 3, 4, 5] and res.message == "stopped by callback"


def test_wso_is_listed_with_the_other_methods():
    assert "wso" in opt.ALL_METHODS and isinstance(opt.default_options("wso"), opt.WSOOptions)
    assert opt.default_options("wso").population == 150 and opt.default_options("wso").iterations == 3000


def test_velocity_update_is_eq_15_with_its_memory_term():
    # v <- mu [v + a1 (gbest - p) c1 + a2 (remembered - p) c2], numbers worked by hand
    V = np.array([[0.5, -1.0]])
    X = np.array([[1.0, 2.0]])
    gbest = np.array([3.0, 0.0])
    remembered = np.array([[0.0, 4.0]])
    c1, c2 = np.array([[0.5, 0.25]]), np.array([[0.2, 0.75]])
    v = opt.wso_velocity(V, X, gbest, remembered, a1=2.0, a2=1.0, mu=0.5, c1=c1, c2=c2)
    # joint 1: 0.5 [0.5 + 2 (2)(0.5) + 1 (-1)(0.2)] = 0.5 * 2.3; joint 2: 0.5 [-1 + 2 (-2)(0.25) + 1 (2)(0.75)]
    assert v == pytest.approx(np.array([[1.15, -0.25]]))
    # the memory term pulls towards the remembered position, independently of gbest
    pulled = opt.wso_velocity(np.zeros((1, 2)), X, X[0], remembered, 1.0, 1.0, 1.0, np.ones((1, 2)), np.ones((1, 2)))
    assert pulled == pytest.approx(remembered - X)


def test_fish_school_divides_by_rand_eq_28():
    X = np.array([[1.0, -2.0]])
    towards_best = np.array([[3.0, 0.0]])
    r = np.array([[0.25, 0.8]])
    assert opt.wso_school(X, towards_best, r) == pytest.approx(np.array([[8.0, -1.25]]))  # (p + p~) / (2 rand)
    # a small rand throws the shark far: the exploration eq. 28 is meant to give
    assert abs(opt.wso_school(X, towards_best, np.array([[0.01, 0.01]]))[0, 0]) == pytest.approx(200.0)


def test_wso_uses_eq_15_and_eq_28(monkeypatch):
    calls = {"velocity": 0, "school": 0}
    velocity, school = opt.wso_velocity, opt.wso_school

    def counting_velocity(*args, **kwargs):
        calls["velocity"] += 1
        return velocity(*args, **kwargs)

    def counting_school(*args, **kwargs):
        calls["school"] += 1
        return school(*args, **kwargs)

    monkeypatch.setattr(wso, "wso_velocity", counting_velocity)
    monkeypatch.setattr(wso, "wso_school", counting_school)
    # K = 200 with a2 = 0.5: the school strength S_s reaches 0.39 so eq. 28 runs in most iterations
    opt.minimize(sphere, opt.Bounds(-np.ones(3), np.ones(3)), "wso", seed=0,
                 options=opt.WSOOptions(population=10, iterations=200, school_a2=0.5))
    assert calls["velocity"] == 200 and calls["school"] > 150

