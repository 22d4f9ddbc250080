import numpy as np

from robodyn.calibration.simulation import SimulatedTracker, TrackerNoise


def test_tracker_noise_follows_the_at960_figure_and_is_deterministic():
    tracker = SimulatedTracker(np.zeros(3), TrackerNoise(15e-6, 6e-6), seed=7)
    near = np.tile([1.0, 0.0, 0.0], (20000, 1))
    far = np.tile([5.0, 0.0, 0.0], (20000, 1))
    std_near = np.std(tracker.measure(near) - near, axis=0)
    std_far = np.std(tracker.measure(far) - far, axis=0)
    assert np.allclose(std_near, 21e-6, rtol=0.03)  # 15 um + 6 um/m x 1 m, per axis
    assert np.allclose(std_far, 45e-6, rtol=0.03)
    a = SimulatedTracker(np.zeros(3), seed=3).measure(near[:5])
    b = SimulatedTracker(np.zeros(3), seed=3).measure(near[:5])
    c = SimulatedTracker(np.zeros(3), seed=4).measure(near[:5])
    assert np.array_equal(a, b) and not np.array_equal(a, c)
