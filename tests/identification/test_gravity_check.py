"""The gravity direction checked from the data (identification/gravity_check.py): torques of a
robot whose base is tilted (the plant: the model's own inertia under a gravity 1.5 degrees off,
with measurement noise) are recognised as such; a level one is not."""

import numpy as np
import pytest

from robodyn.identification.gravity_check import check_gravity
from robodyn.identification.regressor import ColumnSpec
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.loader import load_model


def motion(model, seconds=30.0, rate=100.0, seed=4):
    rng = np.random.default_rng(seed)
    t = np.arange(0, seconds, 1 / rate)[:, None]
    w = 2 * np.pi * np.array([0.1, 0.2, 0.3])
    a, b = rng.normal(0, 0.3, (3, model.dof)), rng.normal(0, 0.3, (3, model.dof))
    mid = 0.5 * (np.clip(model.q_min, -2, 2) + np.clip(model.q_max, -2, 2))
    q = mid + sum(a[k] * np.sin(w[k] * t) + b[k] * np.cos(w[k] * t) for k in range(3))
    qd = sum(w[k] * (a[k] * np.cos(w[k] * t) - b[k] * np.sin(w[k] * t)) for k in range(3))
    qdd = sum(-w[k] ** 2 * (a[k] * np.sin(w[k] * t) + b[k] * np.cos(w[k] * t)) for k in range(3))
    return q, qd, qdd


@pytest.mark.parametrize("tilt_deg", [1.5, 0.0])
def test_a_tilted_base_is_found_and_a_level_one_is_left_alone(tilt_deg):
    model = load_model("panda")
    q, qd, qdd = motion(model)
    angle = np.radians(tilt_deg)
    g = 9.81 * np.array([np.sin(angle), 0.0, -np.cos(angle)])  # tilted about y
    tau = inverse_dynamics(model.with_gravity(g), q, qd, qdd)
    tau += np.random.default_rng(1).normal(0, 0.05, tau.shape)
    got = check_gravity(model, q, qd, qdd, tau, ColumnSpec())
    if tilt_deg:
        assert got["tilt_deg"] == pytest.approx(tilt_deg, abs=0.2)
        assert np.allclose(got["gravity"], g, atol=0.05)
        assert got["warning"].startswith("gravity: the data fit") and "1.5 degrees" in got["warning"]
    else:
        assert got["tilt_deg"] < 0.3 and got["warning"] is None
