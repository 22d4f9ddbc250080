import numpy as np
import pytest

from robodyn.calibration.ik import nominal_ik, ur_geometry, ur_ik
from robodyn.calibration.robots import UR5_LI2023_MODEL
from robodyn.robot.kinematics import forward_kinematics
from robodyn.robot.loader import load_model, model_from_toml


def _robot(name):
    return model_from_toml(UR5_LI2023_MODEL) if name == "ur5_li2023" else load_model(name)


@pytest.mark.parametrize("name", ["ur5_li2023", "ur5", "ur10e"])
def test_closed_form_ur_ik_returns_the_configuration_and_only_exact_solutions(name):
    robot = _robot(name)
    geometry = ur_geometry(robot)
    assert geometry is not None
    rng = np.random.default_rng(0)
    q_true = rng.uniform(-3.0, 3.0, size=(100, 6))
    targets = forward_kinematics(robot, q_true)
    q, ok = ur_ik(robot, geometry, targets, np.zeros(6))
    assert ok.sum(axis=1).min() >= 2  # a UR reaches a generic pose in several branches
    wrapped = (q - q_true[:, None, :] + np.pi) % (2 * np.pi) - np.pi
    found = np.any(ok & np.all(np.abs(wrapped) < 1e-7, axis=-1), axis=1)
    assert found.all()
    assert np.allclose(forward_kinematics(robot, q[ok]), np.repeat(targets, ok.sum(axis=1), axis=0), atol=1e-9)


def test_non_ur_chains_fall_back_to_the_numeric_ik():
    panda = load_model("panda")
    assert ur_geometry(panda) is None
    q_true = np.array([0.3, -0.4, 0.2, -1.9, 0.1, 1.6, 0.5])
    target = forward_kinematics(panda, q_true)
    q = nominal_ik(panda, target, q_true + 0.05)
    assert np.allclose(forward_kinematics(panda, q), target, atol=1e-8)


def test_unreachable_target_is_refused():
    robot = _robot("ur5_li2023")
    far = np.eye(4)
    far[:3, 3] = [3.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="target"):
        nominal_ik(robot, far, np.zeros(6))
