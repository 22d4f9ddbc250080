"""The optimizers' math against hand-evaluated values and the papers' definitions.

Expected values are written out from the formulas (Zhong et al. 2023 Table 1 and eqs. 11-16;
Ni et al. 2024 eq. 15; Deb's feasibility rules), never produced by the code under test.
"""
import math

import numpy as np
import pytest

import robodyn.identification.optimizers as opt
from robodyn.identification.optimizers import wso


def test_table1_functions_equal_their_definitions_at_hand_evaluated_points():
    X = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, -2.0, 3.0]])
    # Ackley: -20 exp(-0.2 sqrt(mean x^2)) - exp(mean cos 2 pi x) + 20 + e
    assert opt.ackley(X[:1]) == pytest.approx([0.0], abs=1e-12)
    assert opt.ackley(X[1:2]) == pytest.approx([20 - 20 * math.exp(-0.2)], rel=1e-12)
    r = math.sqrt(14 / 3)
    assert opt.ackley(X[2:]) == pytest.approx([-20 * math.exp(-0.2 * r) - math.e + 20 + math.e], rel=1e-12)
    half = np.array([[0.5, 0.5]])  # cos(pi) = -1
    assert opt.ackley(half) == pytest.approx([-20 * math.exp(-0.1) - math.exp(-1) + 20 + math.e], rel=1e-12)
    # Griewank: sum x^2 / 4000 - prod cos(x_i / sqrt(i)) + 1
    g = 14 / 4000 - math.cos(1.0) * math.cos(-2 / math.sqrt(2)) * math.cos(3 / math.sqrt(3)) + 1
    assert opt.griewank(X) == pytest.approx([0.0, 3 / 4000 - math.cos(1) * math.cos(1 / math.sqrt(2))
                                             * math.cos(1 / math.sqrt(3)) + 1, g], rel=1e-12, abs=1e-15)
    # Schwefel 2.22: sum |x| + prod |x|; 2.21: max |x|
    assert opt.schwefel_222(X).tolist() == [0.0, 4.0, 12.0]
    assert opt.schwefel_221(X).tolist() == [0.0, 1.0, 3.0]
    # quartic: sum i x^4 plus uniform [0, 1) noise
    f5, b5 = opt.benchmark("F5", 3, np.random.default_rng(0))
    noise = f5(X) - np.array([0.0, 6.0, 1 + 2 * 16 + 3 * 81])
    assert np.all((noise >= 0) & (noise < 1)) and np.ptp(noise) > 0


def test_table1_search_ranges():
    for name, r in (("F1", 32.768), ("F2", 600.0), ("F3", 10.0), ("F4", 100.0), ("F5", 1.28)):
        _, b = opt.benchmark(name, 4)
        assert b.lower.tolist() == [-r] * 4 and b.upper.tolist() == [r] * 4
    assert opt.benchmark("F1")[1].dim == 30 and opt.benchmark("F3")[0] is opt.schwefel_222
    with pytest.raises(ValueError, match="unknown function 'F6'"):
        opt.benchmark("F6")


def test_bounds_and_constraint_violations_by_hand():
    b = opt.Bounds([-1.0, 0.0], [1.0, 4.0])
    assert b.dim == 2 and b.span.tolist() == [2.0, 4.0]
    S = b.sample(np.random.default_rng(1), 2000)
    assert np.all((S >= b.lower) & (S <= b.upper)) and S[:, 1].max() > 3.9 and S[:, 0].min() < -0.99
    assert b.clip(np.array([[-3.0, 5.0], [0.5, 2.0]])).tolist() == [[-1.0, 4.0], [0.5, 2.0]]
    with pytest.raises(ValueError, match="finite"):
        opt.Bounds([0.0], [np.inf])
    with pytest.raises(ValueError, match="equal-length"):
        opt.Bounds([0.0, 1.0], [1.0])
    with pytest.raises(ValueError, match=r"upper\[1\] = 1.0 must exceed lower\[1\] = 2.0"):
        opt.Bounds([0.0, 2.0], [1.0, 1.0])
    # A x <= ub: x1 + x2 <= 1, x1 - x2 <= 0
    lin = opt.LinearConstraint(np.array([[1.0, 1.0], [1.0, -1.0]]), np.array([1.0, 0.0]))
    assert lin.violation(np.array([[0.2, 0.3], [2.0, 0.5], [0.0, 0.0]])).tolist() == [0.0, 1.5 + 1.5, 0.0]
    non = opt.NonlinearConstraint(lambda X: np.column_stack([X[:, 0] ** 2 - 1, -X[:, 1]]))
    assert non.violation(np.array([[2.0, -1.0], [0.5, 1.0]])).tolist() == [3.0 + 1.0, 0.0]


def test_feasibility_rules_rank_infeasible_points_behind_every_feasible_one():
    b = opt.Bounds([-10.0], [10.0])
    con = opt.LinearConstraint(np.array([[1.0]]), np.array([1.0]))  # x <= 1
    ev = opt._Evaluator(lambda X: X[:, 0] ** 2, b, [con], None, None)
    R = ev.ranked(np.array([[3.0], [-2.0], [0.5]]))
    assert R.tolist() == [opt.INFEASIBLE_OFFSET + 2.0, 4.0, 0.25]
    assert ev.best_x.tolist() == [0.5] and ev.best_f == 0.25 and ev.best_raw == 0.25 and ev.nfev == 3
    # a better infeasible point does not displace the feasible incumbent; NaN ranks behind real values
    ev2 = opt._Evaluator(lambda X: np.where(X[:, 0] > 0, np.nan, X[:, 0]), b, [], None, None)
    assert ev2.ranked(np.array([[1.0], [-1.0]])).tolist() == [opt.INFEASIBLE_OFFSET / 2, -1.0]
    ev.ranked(np.array([[1.5]]))
    assert ev.best_x.tolist() == [0.5] and ev.nfev == 4
    # a repair maps into the feasible set before evaluation, clipped to the box again
    ev3 = opt._Evaluator(lambda X: X[:, 0], b, [], lambda X: X * 3.0, None)
    assert ev3.prepare(np.array([[2.0], [5.0]])).tolist() == [[6.0], [10.0]]
    # minimize reports a constrained optimum as feasible and the raw fitness, not the ranked one
    res = opt.minimize(lambda X: (X[:, 0] - 3.0) ** 2, b, "pso", seed=1, constraints=[con],
                       options=opt.PSOOptions(population=20, iterations=60))
    assert res.feasible and res.x[0] == pytest.approx(1.0, abs=1e-3) and res.fun == pytest.approx(4.0, abs=1e-2)


def test_multistart_rule_and_combination():
    def result(fun, feasible, nfev, elapsed, run):
        return opt.OptimizeResult(np.array([fun]), fun, "pso", 1, nfev, elapsed, feasible, "", [],
                                  runs=[{"run": run}])
    a, b, c = result(5.0, True, 10, 1.0, 0), result(1.0, False, 20, 2.0, 1), result(5.0, True, 30, 4.0, 2)
    assert opt.is_better(a, None) and opt.is_better(a, b) and not opt.is_better(b, a)
    assert opt.is_better(result(4.0, True, 1, 1, 0), a) and not opt.is_better(c, a)  # a tie keeps the earlier
    best = opt.best_of([a, b, c])
    assert best.x.tolist() == [5.0] and best.runs == [{"run": 0}, {"run": 1}, {"run": 2}]
    assert best.nfev == 60 and best.elapsed == 7.0
    with pytest.raises(ValueError, match="no results"):
        opt.best_of([])


def test_icpso_schedules_equal_hand_evaluated_values():
    # eq. 11: w = w_max - (w_max - w_min) tanh(k1 t / T)^k2
    assert opt.icpso_inertia(25, 100, 0.4, 0.9, 4, 3) == pytest.approx(0.9 - 0.5 * math.tanh(1.0) ** 3, rel=1e-12)
    assert opt.icpso_inertia(50, 100, 0.2, 1.0, 2, 2) == pytest.approx(1.0 - 0.8 * math.tanh(1.0) ** 2, rel=1e-12)
    # eqs. 12-13: f_low = mean of the lower quartile, f_avg = mean; r = (f - f_low) / (f_avg - f_low)
    F = np.array([1.0, 2.0, 3.0, 4.0, 10.0])  # quantile 0.25 = 2: f_low = 1.5; f_avg = 4
    c1, c2 = opt.icpso_learning_factors(F, 0.5, 2.5)
    r = np.clip((F - 1.5) / 2.5, 0, 1)
    assert c1 == pytest.approx(2.5 - 2.0 * r) and c2 == pytest.approx(0.5 + 2.0 * r)
    assert c1[1] == pytest.approx(2.5 - 0.4) and c2[2] == pytest.approx(0.5 + 1.2)
    # all equal: everyone halfway
    c1, c2 = opt.icpso_learning_factors(np.full(4, 7.0), 0.5, 2.5)
    assert c1.tolist() == [1.5] * 4 and c2.tolist() == [1.5] * 4
    # eq. 14: the 1/Size variance of the feasible particles
    assert opt.premature_variance(np.array([1.0, 3.0, opt.INFEASIBLE_OFFSET + 5])) == pytest.approx(1.0)
    assert opt.premature_variance(np.array([2.0, opt.INFEASIBLE_OFFSET])) == math.inf
    # eq. 15: variance below C *and* best still delta above the target
    F = np.array([1.0, 3.0])  # variance 1
    assert opt.is_premature(F, 5.0, 0.0, 1.5, 4.0)
    assert not opt.is_premature(F, 5.0, 0.0, 1.0, 4.0)  # variance not below C
    assert not opt.is_premature(F, 4.0, 0.0, 1.5, 4.0)  # best - target not above delta
    # eq. 16 from values clipped to [0, 1]: 0.3 -> 0.6 -> 0.8 -> 0.4; 1.2 -> 1 -> 0
    seq = opt.tent_map_sequence(np.array([0.3, 1.2]), 3)
    assert seq[:, 0] == pytest.approx([0.6, 0.8, 0.4]) and seq[:, 1].tolist() == [0.0, 0.0, 0.0]


def test_wso_pulls_each_shark_towards_a_remembered_best_not_its_own_position(monkeypatch):
    # Ni et al. 2024 eq. 15: the second pull is towards p_best^nu, the best position shark nu has
    # *remembered* - a point that was evaluated and is the best of nu's history. Record what the
    # optimiser passes and check it against the points the fitness function saw.
    evaluated = {}

    def fitness(X):
        F = np.sum((X - 0.3) ** 2, axis=1)
        for x, f in zip(X, F):
            evaluated[tuple(x)] = f
        return F

    calls = []
    velocity = opt.wso_velocity

    def recording(V, X, gbest, remembered, *args, **kwargs):
        calls.append((X.copy(), gbest.copy(), np.array(remembered, copy=True)))
        return velocity(V, X, gbest, remembered, *args, **kwargs)

    monkeypatch.setattr(wso, "wso_velocity", recording)
    opt.minimize(fitness, opt.Bounds(-np.ones(4), np.ones(4)), "wso", seed=3,
                 options=opt.WSOOptions(population=12, iterations=40))
    assert len(calls) == 40
    differs = 0
    for X, gbest, remembered in calls:
        rows = [tuple(r) for r in remembered]
        assert all(r in evaluated for r in rows)  # remembered points were evaluated
        # no remembered point is better than the global best the same update uses
        assert min(evaluated[r] for r in rows) >= evaluated[tuple(gbest)] - 1e-15
        differs += not np.array_equal(remembered, X)
    assert differs >= 39
    # drawn from several sharks, not the global best for everyone
    assert len({tuple(r) for r in calls[-1][2]}) > 1
    # memory is the best so far: on average it beats where the sharks are now
    X, _, remembered = calls[-1]
    assert np.mean([evaluated[tuple(r)] for r in remembered]) < np.mean(np.sum((X - 0.3) ** 2, axis=1))


def test_grid_search_resolution_follows_its_budget_and_refinement():
    # k = floor(max_evaluations^(1/d)) points per free coordinate, then refine_rounds zooms of
    # refine_points over +-2 cells around the best, each shrinking the cell by 4 / (refine_points - 1)
    target = np.array([0.123, -0.377])
    seen = []

    def fitness(X):
        seen.append(X.copy())
        return np.sum((X[:, :2] - target) ** 2, axis=1)

    b = opt.Bounds([-1.0, -1.0, 0.5], [1.0, 1.0, 0.5 + 1e-9])  # the third coordinate is pinned
    o = opt.GridOptions(points=50, max_evaluations=100, refine_rounds=3, refine_points=9, batch=1000)
    res = opt.minimize(fitness, b, "grid", options=o)
    assert res.message.startswith("grid of 10 points per free coordinate (2 free), 3 refinements")
    assert res.nfev == 10 ** 2 + 3 * 9 ** 2
    first = np.concatenate(seen)[:100]
    assert np.allclose(np.unique(first[:, 0]), np.linspace(-1, 1, 10))
    assert np.allclose(first[:, 2], 0.5 + 0.5e-9)  # pinned coordinates sit at the box centre
    # each refinement batch is a 9 x 9 grid spaced by the current cell x 4 / (refine_points - 1)
    for r, batch in enumerate(seen[1:4], start=1):
        step = np.diff(np.unique(batch[:, 1]))
        assert batch.shape[0] == 81 and step == pytest.approx(np.full(8, 2.0 / 9 * 0.5 ** r), rel=1e-9)
    spacing = 2.0 / 9 * (4.0 / 8) ** 3
    assert np.all(np.abs(res.x[:2] - target) <= spacing / 2 + 1e-12)
    # the budget caps k; a tiny budget still takes two points per coordinate
    assert "grid of 2 points" in opt.minimize(fitness, b, "grid", options=opt.GridOptions(
        max_evaluations=3, refine_rounds=0)).message
    with pytest.raises(ValueError, match="4 free coordinates"):
        opt.minimize(fitness, opt.Bounds(-np.ones(4), np.ones(4)), "grid")
    one = opt.minimize(lambda X: X[:, 0], opt.Bounds([2.0], [2.0 + 1e-9]), "grid")
    assert one.nfev == 1 and one.x[0] == pytest.approx(2.0)


def test_wso_replaces_sharks_that_leave_the_box_onto_its_bounds():
    # Ni et al. 2024 eqs. 19-22: a shark outside the box is put back on the bound it crossed. With
    # the optimum outside the box the sharks keep leaving it, and re-placement lands them exactly
    # on the corner that is the constrained optimum.
    res = opt.minimize(lambda X: np.sum((X - 2.0) ** 2, axis=1), opt.Bounds(-np.ones(2), np.ones(2)), "wso",
                       seed=0, options=opt.WSOOptions(population=10, iterations=30))
    assert res.x.tolist() == [1.0, 1.0] and res.fun == 2.0


def test_icpso_options_refuse_values_outside_their_limits():
    assert opt.ICPSOOptions(chaos_steps=0, chaos_radius=1.0).chaos_steps == 0  # the limits themselves are valid
    for bad, match in (({"chaos_steps": -1}, r"chaos_steps: must be >= 0, got -1"),
                       ({"chaos_radius": 0.0}, r"chaos_radius: must be in \(0, 1\]"),
                       ({"chaos_radius": 1.5}, r"chaos_radius: must be in \(0, 1\]"),
                       ({"chaos_region": "all"}, "chaos_region: expected one of"),
                       ({"chaos_acceptance": "never"}, "chaos_acceptance: expected one of")):
        with pytest.raises(ValueError, match=match):
            opt.ICPSOOptions(**bad)


def test_slsqp_keeps_a_constrained_optimum_whose_fitness_is_large():
    # SLSQP ends on the constraint to its own accuracy (here about 1e-8 outside it, below its ftol of
    # 1e-7): that point is the incumbent and is reported feasible, whatever the fitness's magnitude
    con = opt.LinearConstraint(np.array([[1.0, 1.0]]), np.array([1.0]))
    res = opt.minimize(lambda X: np.sum((X - 3.0) ** 2, axis=1) * 50.0 + 100.0, opt.Bounds([-5.0, -5.0], [5.0, 5.0]),
                       "slsqp", seed=0, constraints=[con])
    assert con.violation(res.x[None])[0] < 1e-7 and res.x == pytest.approx([0.5, 0.5], abs=1e-5)
    assert res.fun == pytest.approx(50.0 * 2 * 2.5 ** 2 + 100.0, rel=1e-7)
    assert res.feasible


def test_slsqp_feasibility_is_judged_in_constraint_units_not_relative_to_the_fitness():
    # a constraint violated by 1e-5 everywhere (100 x SLSQP's ftol): no point is feasible, however
    # large the fitness; a tolerance scaled by |f| (1e-9 x 1e6 = 1e-3) would have taken the optimum
    always_over = opt.NonlinearConstraint(lambda X: np.full((X.shape[0], 1), 1e-5))
    res = opt.minimize(lambda X: np.sum(X ** 2, axis=1) + 1e6, opt.Bounds([-1.0, -1.0], [1.0, 1.0]), "slsqp",
                       seed=0, x0=[0.5, -0.5], constraints=[always_over])
    assert not res.feasible and res.x.tolist() == [0.5, -0.5]
    # the tolerance is SLSQP's ftol: at 1e-4 the same point is feasible and the optimum is found
    res = opt.minimize(lambda X: np.sum(X ** 2, axis=1) + 1e6, opt.Bounds([-1.0, -1.0], [1.0, 1.0]), "slsqp",
                       seed=0, x0=[0.5, -0.5], constraints=[always_over], options=opt.SLSQPOptions(ftol=1e-4))
    assert res.feasible and res.x == pytest.approx([0.0, 0.0], abs=1e-6)


def test_ga_children_are_blx_alpha_blends_of_two_parents():
    # BLX-alpha with one u per gene and pair: c1 = p1 + u (p2 - p1), c2 = p2 + u (p1 - p2), u uniform
    # in [-alpha, 1 + alpha]. So c1 + c2 = p1 + p2, and u = (c1 - p1) / (p2 - p1) spans that range.
    # No selection pressure (tournament of 1), no elite, no mutation: every child is such a blend.
    calls = []

    def fitness(X):
        calls.append(X.copy())
        return np.sum(X ** 2, axis=1)

    o = opt.GAOptions(population=4, generations=60, crossover=1.0, mutation=0.0, blend=0.3, elite=0, tournament=1)
    opt.minimize(fitness, opt.Bounds(-1e6 * np.ones(3), 1e6 * np.ones(3)), "ga", seed=2, options=o)
    us = []
    for before, after in zip(calls[:-1], calls[1:]):
        assert after.shape == (4, 3)
        for a, b in ((0, 2), (1, 3)):
            s = after[a] + after[b]
            pairs = [(i, j) for i in range(4) for j in range(4)
                     if np.allclose(before[i] + before[j], s, rtol=1e-12, atol=1e-6 * np.abs(s).max())
                     and np.allclose(after[a] - before[i], -(after[b] - before[j]), atol=1e-6)]
            assert pairs, "a child pair that is not a blend of two members of the previous population"
            i, j = pairs[0]
            gap = before[j] - before[i]
            if i != j and np.all(np.abs(gap) > 1e-3):
                us.append((after[a] - before[i]) / gap)
    us = np.concatenate(us)
    assert us.min() >= -0.3 - 1e-9 and us.max() <= 1.3 + 1e-9
    assert us.min() < -0.2 and us.max() > 1.2 and np.mean((us > 0.3) & (us < 1.0)) > 0.3


def test_iteration_counts_elapsed_time_and_early_stop_are_reported_as_they_happened():
    b = opt.Bounds(-np.ones(2), np.ones(2))
    sphere = lambda X: np.sum((X - 0.2) ** 2, axis=1)  # noqa: E731
    for method, options in (("pso", opt.PSOOptions(population=6, iterations=7)),
                            ("icpso", opt.ICPSOOptions(population=6, iterations=7)),
                            ("ga", opt.GAOptions(population=6, generations=7)),
                            ("wso", opt.WSOOptions(population=6, iterations=7))):
        seen = []
        t0 = __import__("time").perf_counter()
        res = opt.minimize(sphere, b, method, seed=0, options=options, callback=lambda p: seen.append(p))
        wall = __import__("time").perf_counter() - t0
        assert res.nit == 7 and [p.iteration for p in seen] == list(range(1, 8)) and len(res.history) == 7
        assert all(0 <= p.elapsed <= wall for p in seen) and 0 <= res.elapsed <= wall
    # SLSQP stopped by its callback after three iterations reports three
    seen = []
    res = opt.minimize(lambda X: np.sum((X - 0.2) ** 2 * np.arange(1, 3) * 10, axis=1), b, "slsqp", seed=0,
                       callback=lambda p: seen.append(p.iteration) or p.iteration >= 3)
    assert seen == [1, 2, 3] and res.nit == 3 and "stopped" in res.message


def test_slsqp_without_a_feasible_iterate_reports_its_given_start():
    # x <= -5 cannot hold in [-1, 1]: no iterate is feasible, and the start the caller gave is
    # what gets ranked and returned (honestly infeasible), not a random point
    con = opt.LinearConstraint(np.array([[1.0]]), np.array([-5.0]))
    res = opt.minimize(lambda X: X[:, 0] ** 2, opt.Bounds([-1.0], [1.0]), "slsqp", seed=0, x0=[0.3],
                       constraints=[con], options=opt.SLSQPOptions(max_iter=1))
    assert not res.feasible and res.x.tolist() == [0.3]


def test_wso_replaces_sharks_below_the_box_onto_its_lower_bounds():
    res = opt.minimize(lambda X: np.sum((X + 2.0) ** 2, axis=1), opt.Bounds(-np.ones(2), np.ones(2)), "wso",
                       seed=0, options=opt.WSOOptions(population=10, iterations=30))
    assert res.x.tolist() == [-1.0, -1.0] and res.fun == 2.0


def test_tent_map_starts_from_values_clipped_into_the_unit_interval():
    seq = opt.tent_map_sequence(np.array([-0.2, 0.25]), 2)
    assert seq[:, 0].tolist() == [0.0, 0.0] and seq[:, 1].tolist() == [0.5, 1.0]


def test_slsqp_honours_a_nonlinear_constraint_at_its_hand_derived_optimum():
    # min |x - (2, 2)|^2 subject to |x|^2 <= 1: the optimum is the unit circle's point towards (2, 2)
    disk = opt.NonlinearConstraint(lambda X: (np.sum(X ** 2, axis=1) - 1.0)[:, None])
    res = opt.minimize(lambda X: np.sum((X - 2.0) ** 2, axis=1), opt.Bounds([-3.0, -3.0], [3.0, 3.0]), "slsqp",
                       seed=1, constraints=[disk])
    assert res.x == pytest.approx([1 / math.sqrt(2)] * 2, abs=1e-5)
    assert res.fun == pytest.approx(2 * (2 - 1 / math.sqrt(2)) ** 2, rel=1e-5)


def test_default_options_are_the_papers_settings():
    ga = opt.default_options("ga")  # Chen et al. 2021 Table 2
    assert (ga.population, ga.generations, ga.crossover, ga.mutation) == (20, 800, 0.8, 0.2)
    ic = opt.default_options("icpso")  # Zhong et al. 2023 sections 2 and 3.1
    assert (ic.k1, ic.k2, ic.w_min, ic.w_max, ic.c_min, ic.c_max, ic.variance_threshold, ic.delta) == \
        (4.0, 3.0, 0.4, 0.9, 0.5, 2.5, 10.0, 1.0)
    ws = opt.default_options("wso")  # Ni et al. 2024 sections 3-4
    assert (ws.population, ws.iterations, ws.a_min, ws.a_max, ws.acceleration, ws.f_min, ws.f_max, ws.alpha0,
            ws.alpha1, ws.school_a2) == (150, 3000, 0.5, 1.5, 4.125, 0.07, 0.75, 6.25, 100.0, 0.005)


def test_slsqp_differences_from_a_start_at_zero_and_ga_runs_with_two_individuals():
    # the forward-difference step is fd_step * max(1, |x|): a coordinate at exactly 0 still gets a step
    res = opt.minimize(lambda X: np.sum((X - 0.3) ** 2, axis=1), opt.Bounds([-1.0, -1.0], [1.0, 1.0]), "slsqp",
                       x0=[0.0, 0.0])
    assert res.x == pytest.approx([0.3, 0.3], abs=1e-5)
    two = opt.minimize(lambda X: np.sum(X ** 2, axis=1), opt.Bounds([-1.0], [1.0]), "ga", seed=0,
                       options=opt.GAOptions(population=2, generations=5))
    assert two.nit == 5
    with pytest.raises(ValueError, match="population must be >= 2"):
        opt.minimize(lambda X: X[:, 0], opt.Bounds([-1.0], [1.0]), "ga", options=opt.GAOptions(population=1))
