"""Metaheuristics compared at one budget of fitness evaluations, over several seeds.

The paper's iteration counts (Ni et al. 2024: WSO 3000 iterations of 150 sharks, PSO 800 and GA 460
iterations of populations it does not state; robodyn gives them 150) give the three optimisers
different numbers of fitness evaluations, and WSO evaluates only the sharks
inside the box, so its iterations are not a measure of its cost either. Here every optimiser gets
the same number B of evaluations of eq. 14, counted by the optimiser's own evaluator (``nfev``):

- PSO and GA evaluate the whole population once per iteration: their iteration count is the one
  that spends B (population + population x iterations >= B);
- WSO's spend per iteration depends on how many sharks are inside the box, so its iteration count
  K (which sets its schedules, eqs. 16-17, 24, 27) comes from a pilot run at seed 0;

and every run stops after the iteration in which its count reaches B, so each spends B plus less
than one population. The seeds change only the optimiser's random numbers; the data stay fixed.
"""

from __future__ import annotations

import math

import numpy as np

from robodyn.identification.metaheuristic import (
    NI2024_POPULATION,
    QuadraticFitness,
    identify_linear,
    ni2024_options,
)

# WSO's pilot run measures its evaluations per iteration; K gets this margin so that the runs of
# other seeds (with a few more sharks outside the box) still reach B before their schedule ends.
# Measured at B = 120000: the long schedule evaluates MORE sharks per iteration than the short pilot
# (about 71 against 61 on the TX40), so the runs stop at 75-95 % of K and WSO's last phase is not run.
WSO_MARGIN = 1.1


# An optimiser whose spend per iteration varies (ICPSO: M chaotic points per premature particle).
# To give it a budget of B evaluations, a pilot run at its own iteration count measures its
# spend per iteration and the run gets the iteration count that spends B (its schedules depend
# on the count) and stops after the iteration in which it reaches B. A shorter schedule finds the swarm
# premature less often, so a run can end below B: it is then rerun with its count scaled up by the
# shortfall, at most MAX_BUDGET_RETRIES times. A method that evaluates exactly one population per
# iteration gets the count that spends B at once.
MAX_BUDGET_RETRIES = 4


def iterations_for_evaluations(pilot_nfev: int, pilot_iterations: int, budget: int, population: int) -> int:
    """The iteration count that spends ``budget`` evaluations at a pilot run's spend per iteration."""
    if budget < 2 * population:
        raise ValueError(f"budget: must be at least two populations ({2 * population}), got {budget}")
    per_iteration = max((pilot_nfev - population) / max(pilot_iterations, 1), float(population))
    return max(1, math.ceil((budget - population) / per_iteration))


def stop_at(budget: int):
    def stop(progress) -> bool:
        return progress.nfev >= budget

    return stop


def spend_budget(run, iterations: int, budget: int, population: int):
    """``run(iterations, callback) -> (result, nfev)`` given ``budget`` evaluations: the first count
    is ``iterations``; a run that ends below the budget is rerun with more (see above). Returns the
    last result, its evaluations and its iteration count."""
    for _ in range(MAX_BUDGET_RETRIES + 1):
        result, nfev = run(iterations, stop_at(budget))
        if nfev >= budget:
            break
        iterations = max(iterations + 1, math.ceil(iterations * (budget - population) / max(nfev - population, 1)))
    return result, nfev, iterations


def iterations_for(method: str, budget: int, population: int, ne=None, weights=None, names=None) -> int:
    """The iteration count that lets ``method`` spend ``budget`` evaluations (see the module doc)."""
    if budget < 2 * population:
        raise ValueError(f"budget: must be at least two populations ({2 * population}), got {budget}")
    full = math.ceil((budget - population) / population)
    if method != "wso":
        return full
    pilot = identify_linear(ne, "wso", weights=weights, seed=0, options=ni2024_options("wso", population, full),
                            names=names)
    per_iteration = max((pilot.nfev - population) / max(pilot.iterations, 1), 1.0)
    return math.ceil(WSO_MARGIN * (budget - population) / per_iteration)


def run_at_budget(ne, method: str, budget: int, seeds, *, population: int = NI2024_POPULATION, weights=None,
                  names=None, iterations: int | None = None) -> list[dict]:
    """One run of ``method`` per seed, each stopped once it has spent ``budget`` evaluations."""
    its = iterations if iterations is not None else iterations_for(method, budget, population, ne, weights, names)
    options = ni2024_options(method, population, its)
    runs = []
    for seed in seeds:
        res = identify_linear(ne, method, weights=weights, seed=int(seed), options=options,
                              callback=stop_at(budget), names=names)
        runs.append({"seed": int(seed), "theta": res.theta, "fitness": res.fitness, "nfev": res.nfev,
                     "iterations": res.iterations, "schedule_iterations": its, "first_fitness": res.history[0],
                     "elapsed_s": res.elapsed})
    return runs


def spread(values) -> dict:
    """Mean, sample standard deviation, min and max of a list of numbers."""
    v = np.asarray(values, float)
    return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if v.size > 1 else 0.0, "min": float(v.min()),
            "max": float(v.max()), "n": int(v.size)}


def equal_budget_comparison(ne, score, methods=("wso", "pso", "ga"), *, budget: int, seeds=range(10),
                            population: int = NI2024_POPULATION, weights=None, names=None) -> dict:
    """Every method of ``methods`` at ``budget`` evaluations for every seed of ``seeds``.

    ``score(thetas) -> list of per-joint held-out RMSE arrays`` judges the estimates (the caller
    decides against what: the measured torque of a later run, of a later segment, ...). Returns per
    method the runs and the spread of J, of the held-out RMSE sum and of the evaluations spent."""
    out = {"budget": int(budget), "population": int(population), "seeds": [int(s) for s in seeds], "methods": {}}
    for method in methods:
        runs = run_at_budget(ne, method, budget, seeds, population=population, weights=weights, names=names)
        rmses = score([r["theta"] for r in runs])
        for r, rmse in zip(runs, rmses):
            r["heldout_rmse"] = [float(x) for x in rmse]
            r["heldout_sum"] = float(np.sum(rmse))
            del r["theta"]
        out["methods"][method] = {"runs": runs, "fitness": spread([r["fitness"] for r in runs]),
                                  "heldout_sum": spread([r["heldout_sum"] for r in runs]),
                                  "nfev": spread([r["nfev"] for r in runs]),
                                  "iterations": spread([r["iterations"] for r in runs]),
                                  "schedule_iterations": runs[0]["schedule_iterations"]}
    order = sorted(methods, key=lambda m: out["methods"][m]["heldout_sum"]["mean"])
    out["ranking_heldout"] = order
    out["ranking_fitness"] = sorted(methods, key=lambda m: out["methods"][m]["fitness"]["mean"])
    return out


def comparison_scorer(data, prep, ne):
    """score(thetas) for a :class:`~robodyn.identification.comparison.ComparisonData`, judged as
    :func:`~robodyn.identification.comparison.compare_methods` judges it: against the measured torque
    of the held-out part (realistic plants, real data) or its exact torque (own-model runs)."""
    from robodyn.identification.methods import prepare_statistics
    from robodyn.identification.pipeline import validate_many

    joints = list(data.model.joint_names)
    if data.plant.get("measured_heldout"):
        def score(thetas):
            return [np.asarray(out["rmse"]) for out in
                    validate_many(data.model, prep, thetas, data.plant["measured_heldout"])]
    elif data.preprocessed:
        held_ne = prepare_statistics(data.model, data.held_out, prep.config, preprocessed=True)[1]

        def score(thetas):
            return [np.asarray(held_ne.metrics(th, joints)["rmse"]) for th in thetas]
    else:
        def score(thetas):
            return [np.asarray(out["rmse"]) for out in validate_many(data.model, prep, thetas, data.held_out)]
    return score


def equal_budget_on_data(data, methods=("wso", "pso", "ga"), *, budget: int, seeds=range(10),
                         population: int = NI2024_POPULATION) -> dict:
    """:func:`equal_budget_comparison` on a comparison's data, processed once as the comparison does."""
    from robodyn.identification.estimators import ols
    from robodyn.identification.methods import prepare_statistics

    prep, ne = prepare_statistics(data.model, data.identification, data.config, preprocessed=data.preprocessed)
    out = equal_budget_comparison(ne, comparison_scorer(data, prep, ne), methods, budget=budget, seeds=seeds,
                                  population=population, names=prep.names)
    theta_ols = ols(ne, prep.names).theta
    out["ols_heldout_sum"] = float(np.sum(comparison_scorer(data, prep, ne)([theta_ols])[0]))
    out["ols_fitness"] = float(QuadraticFitness.from_statistics(ne)(theta_ols)[0])
    return out


__all__ = ["equal_budget_comparison", "equal_budget_on_data", "iterations_for", "iterations_for_evaluations",
           "run_at_budget", "spend_budget", "spread", "stop_at"]
