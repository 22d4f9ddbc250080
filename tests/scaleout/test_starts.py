"""The optimizer hook behind distributed multi-start: starts run apart combine to the joint run."""

from __future__ import annotations

import numpy as np
import pytest

from robodyn.identification import optimizers as opt


def rastrigin(X):
    return 10 * X.shape[1] + np.sum(X * X - 10 * np.cos(2 * np.pi * X), axis=1)


@pytest.mark.parametrize("method", ["pso", "ga"])
def test_starts_run_one_by_one_combine_to_the_joint_run(method):
    bounds = opt.Bounds(np.full(3, -5.0), np.full(3, 5.0))
    options = opt.PSOOptions(population=12, iterations=15) if method == "pso" else opt.GAOptions(population=12,
                                                                                              generations=15)
    joint = opt.minimize(rastrigin, bounds, method, seed=7, options=options, restarts=4)
    # in reverse order, as a cluster may finish them: best_of orders by start index, not arrival
    pieces = [opt.minimize(rastrigin, bounds, method, seed=7, options=options, restarts=4, runs=[k])
              for k in (3, 2, 1, 0)][::-1]
    combined = opt.best_of(pieces)
    np.testing.assert_array_equal(combined.x, joint.x)
    assert combined.fun == joint.fun and combined.nfev == joint.nfev
    strip = [{k: v for k, v in r.items() if k != "elapsed"} for r in joint.runs]
    assert [{k: v for k, v in r.items() if k != "elapsed"} for r in combined.runs] == strip
    assert len({r["fun"] for r in joint.runs}) > 1  # the starts really differ


def test_runs_must_name_existing_starts():
    bounds = opt.Bounds(np.zeros(2), np.ones(2))
    with pytest.raises(ValueError, match="runs"):
        opt.minimize(rastrigin, bounds, "pso", restarts=2, runs=[2])
    with pytest.raises(ValueError, match="best_of"):
        opt.best_of([])
