"""The equal-budget comparison of metaheuristics (robodyn.reproduce.equal_budget): properties of the
runs, never which optimiser wins."""

import numpy as np
import pytest
from robodyn.identification.estimators import NormalEquations, ols
from robodyn.identification.metaheuristic import QuadraticFitness

from robodyn.reproduce.equal_budget import (
    equal_budget_comparison,
    iterations_for,
    run_at_budget,
    spread,
)

POP = 20


def normal_equations(seed=3, n=2, N=200, p=6):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(n, N, p))
    theta = rng.normal(size=p) + 2.0
    tau = np.einsum("jNp,p->Nj", W, theta) + 0.05 * rng.normal(size=(N, n))
    ne = NormalEquations(n, p)
    ne.add(W, tau)
    return ne


@pytest.mark.parametrize("method", ["wso", "pso", "ga"])
def test_every_run_spends_the_budget_and_not_a_population_more(method):
    ne = normal_equations()
    budget = 1500
    runs = run_at_budget(ne, method, budget, [0, 1, 2], population=POP)
    for r in runs:
        # counted by the optimiser's own evaluator; the stop comes after the iteration that reaches B
        assert budget <= r["nfev"] < budget + POP
        assert r["iterations"] <= r["schedule_iterations"]


def test_iteration_counts_follow_evaluations_not_iterations():
    ne = normal_equations()
    assert iterations_for("pso", 1500, POP) == iterations_for("ga", 1500, POP) == 74  # 20 + 20 x 74 >= 1500
    # WSO leaves the sharks outside the box unevaluated: its schedule needs more iterations for B
    assert iterations_for("wso", 1500, POP, ne) > 74
    with pytest.raises(ValueError, match="budget"):
        iterations_for("pso", 30, POP)


def test_seeds_change_the_runs_and_the_optimiser_improves_on_its_start():
    ne = normal_equations()
    runs = run_at_budget(ne, "pso", 1000, [0, 1], population=POP)
    assert runs[0]["fitness"] != runs[1]["fitness"]
    again = run_at_budget(ne, "pso", 1000, [0], population=POP)
    assert again[0]["fitness"] == runs[0]["fitness"]  # a seed repeats its run exactly
    for r in runs:
        assert r["fitness"] < r["first_fitness"]
    # no run gets below the closed form: eq. 14 is convex and OLS is its minimum
    floor = float(QuadraticFitness.from_statistics(ne)(ols(ne).theta)[0])
    assert all(r["fitness"] >= floor - 1e-12 for r in runs)


def test_the_comparison_scores_every_run_and_reports_the_spread():
    ne = normal_equations()
    calls = []

    def score(thetas):
        calls.append(len(thetas))
        return [np.abs(np.asarray(th))[:2] for th in thetas]

    out = equal_budget_comparison(ne, score, ("pso", "ga"), budget=800, seeds=range(3), population=POP)
    assert calls == [3, 3] and out["budget"] == 800 and out["seeds"] == [0, 1, 2]
    for m in ("pso", "ga"):
        runs = out["methods"][m]["runs"]
        assert [r["seed"] for r in runs] == [0, 1, 2]
        assert out["methods"][m]["heldout_sum"]["n"] == 3
        assert all(r["heldout_sum"] == pytest.approx(sum(r["heldout_rmse"])) for r in runs)
    assert sorted(out["ranking_heldout"]) == ["ga", "pso"]


def test_spread_is_mean_and_sample_std():
    s = spread([1.0, 2.0, 3.0])
    assert s == {"mean": 2.0, "std": 1.0, "min": 1.0, "max": 3.0, "n": 3}
