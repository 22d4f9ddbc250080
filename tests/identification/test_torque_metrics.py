"""The torque metrics' correlation stays a correlation: from running sums, rounding used to put a
perfect affine fit past 1 (a table printed 1.0000000003). (The normal equations' own running-sum
metrics, identification/estimators.py, clip the same way.)"""

import numpy as np

from robodyn.identification.pipeline import TorqueMetrics


def test_a_perfect_affine_fit_has_correlation_one_not_more():
    rng = np.random.default_rng(0)
    for _ in range(20):  # unclipped, 261 of 300 such draws gave a value above 1
        measured = rng.normal(size=(1000, 3)) * 10 + 50
        metrics = TorqueMetrics(3)
        for m, p in zip(np.array_split(measured, 7), np.array_split(measured * 1.7 + 0.3, 7)):
            metrics.add(m, p)
        corr = np.array(metrics.result(["a", "b", "c"])["correlation"])
        assert np.all(corr <= 1.0) and np.allclose(corr, 1.0, atol=1e-9)
    anti = TorqueMetrics(1)
    anti.add(measured[:, :1], -2.0 * measured[:, :1] + 4.0)
    assert -1.0 <= anti.result(["a"])["correlation"][0] <= -1.0 + 1e-9
