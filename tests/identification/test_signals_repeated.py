"""Repeated samples: a log resampled by repeating rows (a 100 Hz stream logged at 400 Hz) is
named with its share, its longest run and the rate of its distinct rows."""

import numpy as np

from robodyn.identification.signals import SampledData, repeated_samples


def test_a_log_upsampled_by_repetition_is_named_with_its_true_rate():
    t = np.arange(400) / 400.0
    q = np.repeat(np.sin(np.arange(100) / 10.0)[:, None] * np.ones(3), 4, axis=0)
    rep = repeated_samples(SampledData(t, q, 2 * q))
    assert rep["count"] == 300 and rep["longest_run"] == 3
    assert np.isclose(rep["share"], 300 / 399) and np.isclose(rep["distinct_rate_hz"], 400 * (1 - 300 / 399))
    assert rep["warning"].startswith("data: 75% of the samples repeat") and "about 99.2 Hz, not 400 Hz" in rep["warning"]


def test_a_frozen_stretch_counts_and_a_joint_at_rest_does_not():
    t = np.arange(1000) / 1000.0
    q = np.sin(t[:, None] * np.array([1.0, 2.0, 3.0]))
    q[:, 2] = 0.5  # one joint at rest: its samples repeat, the rows do not
    assert repeated_samples(SampledData(t, q, q.copy()))["count"] == 0
    frozen = q.copy()
    frozen[500:520] = frozen[499]  # the sensor froze for 20 samples
    rep = repeated_samples(SampledData(t, frozen, frozen.copy()))
    assert rep["count"] == 20 and rep["longest_run"] == 20 and rep["warning"] is not None
    tau = frozen.copy()
    tau[505] += 1.0  # the torque moved while the positions stood: not a repeated row
    assert repeated_samples(SampledData(t, frozen, tau))["count"] == 18
