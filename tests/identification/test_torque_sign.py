"""The torque-sign check names a joint whose logged torque has the opposite sign to the model's
and says nothing when the signs agree. The torques come from a plant unlike the identified model:
the Panda's nominal inertias perturbed by 20 %, Stribeck friction the model's columns lack, and noise
(real logs: bench/realdata/torque_signs.py)."""

import numpy as np
import pytest

from robodyn.identification.config import IdentificationConfig
from robodyn.identification.torque_sign import REPORTED_SHARE, check_torque_signs
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.loader import load_model
from tests.identification.test_gravity_check import motion


def plant_torque(model, q, qd, qdd):
    rng = np.random.default_rng(3)
    scaled = model.with_inertial(model.inertial * (1.0 + 0.2 * rng.uniform(-1, 1, model.inertial.shape)))
    stribeck = 2.0 * np.tanh(qd / 0.02) + 1.5 * np.exp(-(qd / 0.1) ** 2) * np.sign(qd) + 0.8 * qd
    return inverse_dynamics(scaled, q, qd, qdd) + stribeck + rng.normal(0, 0.05, q.shape)


@pytest.mark.parametrize("flipped", [None, 1, 3])
def test_a_joint_logged_with_the_other_sign_is_named_and_agreeing_signs_are_left_alone(flipped):
    model = load_model("panda")
    q, qd, qdd = motion(model, seconds=60.0)
    tau = plant_torque(model, q, qd, qdd)
    if flipped is not None:
        tau[:, flipped] *= -1.0
    got = check_torque_signs(model, q, qd, qdd, tau, IdentificationConfig().spec)
    if flipped is None:
        assert got["suspect"] == [] and got["warning"] is None
        assert min(got["flipped_share"]) > REPORTED_SHARE
    else:
        assert got["suspect"] == [flipped]
        assert got["warning"].startswith("torque sign:") and model.joint_names[flipped] in got["warning"]
        # negating the flipped joint back is what fits best, by a wide margin
        assert int(np.argmin(got["flipped_share"])) == flipped and got["flipped_share"][flipped] < 0.5
