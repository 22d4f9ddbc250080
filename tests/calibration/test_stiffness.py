import numpy as np
import pytest

from robodyn.calibration.parameters import geometric_model, robot_for, target_positions
from robodyn.calibration.seed004 import LOAD_COM, LOAD_MASS, TABLE3_STIFFNESS
from robodyn.calibration.simulation import seed004_true_parameters
from robodyn.calibration.stiffness import (Load, compliance_regressor, deflected_positions, holding_torques,
                                           identify_compliance, joint_deflection, joint_position_jacobian,
                                           payload_holding_torques)
from robodyn.robot.dynamics import gravity_torques
from robodyn.robot.model import standard_parameters


@pytest.fixture(scope="module")
def gm(seed004_robot):
    return geometric_model(seed004_robot, tool_offset=(0.04, 0.04, 0.03))


def test_payload_torque_by_force_jacobian_equals_rnea_with_the_payload_on_link_6(gm):
    # eq. 19 (J_F^T F) against the shared RNEA with the payload added to the last link's inertia
    robot = gm.robot
    load = Load(LOAD_MASS, LOAD_COM)
    com_in_joint6 = robot.tool[:3, :3] @ np.array(LOAD_COM) + robot.tool[:3, 3]
    inertial = robot.inertial.copy()
    inertial[5] += standard_parameters(LOAD_MASS, com_in_joint6, np.zeros((3, 3)))
    q = np.random.default_rng(0).uniform(-3, 3, size=(30, 6))
    with_payload = gravity_torques(robot, q, inertial=inertial)
    assert np.allclose(payload_holding_torques(robot, q, load), with_payload - gravity_torques(robot, q), atol=1e-9)
    assert np.allclose(holding_torques(robot, q, load), with_payload, atol=1e-9)


def test_deflection_is_the_fixed_point_and_its_first_step_is_eq_25(gm):
    robot = robot_for(gm, seed004_true_parameters(gm))
    c = 1.0 / TABLE3_STIFFNESS
    load = Load(LOAD_MASS, LOAD_COM)
    q = np.random.default_rng(1).uniform(-2.5, 2.5, size=(20, 6))
    d = joint_deflection(robot, q, c, load)
    assert np.allclose(d, -c * holding_torques(robot, q + d, load), atol=1e-13)
    first = -c * holding_torques(robot, q, load)  # eq. 20 + 25 in joint space
    assert np.max(np.abs(d - first)) < 1e-2 * np.max(np.abs(first))
    assert np.max(np.abs(d[:, 1])) > 1e-3  # joint 2 of a UR5 sags by milliradians: worth calibrating
    assert np.allclose(d[:, 0], 0.0, atol=1e-15)  # gravity never twists the vertical joint 1


def test_linear_deflection_of_eq_20_matches_the_position_change(gm):
    params = seed004_true_parameters(gm)
    c = 1.0 / TABLE3_STIFFNESS
    load = Load(LOAD_MASS, LOAD_COM)
    q = np.random.default_rng(2).uniform(-2.5, 2.5, size=(10, 6))
    A = compliance_regressor(gm, params, q, load)
    exact = deflected_positions(gm, params, q, c, load, links=False) - target_positions(gm, params, q)
    # dX = J K^-1 J_F^T F is first order: it agrees to a few micrometres on millimetre deflections
    assert np.max(np.abs(A @ c - exact.reshape(-1))) < 0.02 * np.max(np.abs(exact)) + 5e-6
    J = joint_position_jacobian(gm, params, q)
    assert J.shape == (10, 3, 6)


def test_compliance_identification_recovers_the_excited_joints(gm):
    params = seed004_true_parameters(gm)
    c_true = 1.0 / TABLE3_STIFFNESS
    load = Load(LOAD_MASS, LOAD_COM)
    q = np.random.default_rng(3).uniform(-2.5, 2.5, size=(25, 6))
    delta = (deflected_positions(gm, params, q, c_true, load) - deflected_positions(gm, params, q, c_true, None))
    prior = np.full(6, 1 / 50000.0)
    fit = identify_compliance(gm, params, q, delta, load, prior)
    assert not fit.identified[0] and fit.compliance[0] == prior[0]  # vertical load, vertical axis
    assert np.all(fit.identified[1:])
    assert np.allclose(fit.compliance[1:], c_true[1:], rtol=1e-4)


def test_load_given_in_millimetres_is_refused():
    with pytest.raises(ValueError, match="load.com"):
        Load(4.678, (0.0, -36.86, 29.85))
    with pytest.raises(ValueError, match="load.mass"):
        Load(-1.0, (0.0, 0.0, 0.0))
