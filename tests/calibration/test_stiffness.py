import numpy as np
import pytest

from robodyn.calibration.parameters import geometric_model, robot_for, target_positions
from robodyn.calibration.li2023 import LOAD_COM, LOAD_MASS, TABLE3_STIFFNESS
from robodyn.calibration.simulation import ur5_li2023_truth
from robodyn.calibration.stiffness import (Load, compliance_regressor, deflected_positions, holding_torques,
                                           identify_compliance, joint_deflection, joint_position_jacobian,
                                           payload_holding_torques)
from robodyn.robot.dynamics import gravity_torques
from robodyn.robot.model import standard_parameters


@pytest.fixture(scope="module")
def gm(ur5_robot):
    return geometric_model(ur5_robot, tool_offset=(0.04, 0.04, 0.03))


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
    robot = robot_for(gm, ur5_li2023_truth(gm))
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
    params = ur5_li2023_truth(gm)
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
    params = ur5_li2023_truth(gm)
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


def test_gear_play_is_fitted_where_the_data_support_it(gm):
    # a plant with a sharp gear play at joints 2 and 3: the link rests on the flank gravity pushes it to
    from robodyn.calibration.methods import calibrate, error_stats
    from robodyn.calibration.measurements import MeasurementSet
    from robodyn.calibration.parameters import preset_free_names

    params = ur5_li2023_truth(gm)
    robot = robot_for(gm, params)
    c = 1.0 / TABLE3_STIFFNESS
    play = np.array([0.0, 4e-4, 3e-4, 0.0, 0.0, 0.0])  # rad

    def plant(q):
        d = np.zeros_like(q)
        for _ in range(60):
            tau = holding_torques(robot, q + d, None)
            d = -c * tau - 0.5 * play * np.sign(tau)
        return target_positions(gm, params, q + d)

    rng = np.random.default_rng(5)
    q = rng.uniform([-2, -3.0, -2.5, -3, -2, -3], [2, -0.2, 2.5, 3, 2, 3], size=(60, 6))
    held = rng.uniform([-2, -3.0, -2.5, -3, -2, -3], [2, -0.2, 2.5, 3, 2, 3], size=(80, 6))
    noload = MeasurementSet(q, plant(q) + rng.normal(scale=1e-5, size=(60, 3)), sigma=1e-5)
    truth = MeasurementSet(held, plant(held))
    free = preset_free_names(gm, "li2023")
    without = calibrate(gm, noload, method="combined-gravity", free_names=free)
    with_play = calibrate(gm, noload, method="combined-gravity", free_names=free, backlash=[0, 1, 2])
    assert with_play.backlash[1] == pytest.approx(play[1], rel=0.2)
    assert with_play.backlash[2] == pytest.approx(play[2], rel=0.3)
    assert any("backlash of joint 1 not fitted: the data do not support it" in n for n in with_play.notes)
    fitted, ignored = error_stats(with_play.errors(truth)), error_stats(without.errors(truth))
    assert fitted["mean_mm"] < 0.5 * ignored["mean_mm"]
    # near a torque reversal the smooth lean differs from the sharp plant: the max gains less
    assert fitted["max_mm"] < ignored["max_mm"]
