"""Motors and joints: R = diag(gear_ratio) + coupling terms; shared motors as identification columns."""

import numpy as np
import pytest

from robodyn.robot.joint_map import JointMap
from robodyn.robot.transmission import Transmission

TX40_N = [32.0, 32.0, 45.0, -48.0, 45.0, 32.0]


def tx40():
    return Transmission.from_terms(TX40_N, [(5, 4, 32.0)])


def test_tx40_wrist_matches_its_published_reduction_matrices():
    # figaroh-plus T40X_config.yaml: red_q = diag(N), red_q[5, 4] = N6; red_tau = diag(N), red_tau[4, 5] = N6
    red_q = np.diag(TX40_N)
    red_q[5, 4] = 32.0
    red_tau = np.diag(TX40_N)
    red_tau[4, 5] = 32.0
    tr = tx40()
    assert np.array_equal(tr.matrix, red_q)
    rng = np.random.default_rng(0)
    qm, tm = rng.normal(size=(50, 6)), rng.normal(size=(50, 6))
    assert np.allclose(tr.joint_positions(qm), qm @ np.linalg.inv(red_q).T)
    assert np.allclose(tr.joint_torques(tm), tm @ red_tau.T)
    assert tr.motor_couplings() == ((0.0, 0.0, 0.0, 0.0, 1.0, 1.0),)


def test_power_is_conserved_and_couplings_follow_the_joint_map():
    tr = tx40()
    rng = np.random.default_rng(1)
    qd, tm = rng.normal(size=6), rng.normal(size=6)
    qd_motor = tr.matrix @ qd
    assert np.isclose(tr.joint_torques(tm) @ qd, tm @ qd_motor)
    # a controller that reports joint 5 reversed: the shared motor's weights are on model variables
    jm = JointMap.from_terms(6, sign=[1, 1, 1, 1, -1, 1])
    (c,) = tr.motor_couplings(jm)
    qd_model = jm.velocity_to_model(qd)
    assert np.isclose(np.dot(c, qd_model) * tr.matrix[5, 5], qd_motor[5])


def test_bad_transmissions_are_refused_with_the_field_named():
    with pytest.raises(ValueError, match="gear ratio of 0"):
        Transmission.from_terms([1.0, 0.0])
    with pytest.raises(ValueError, match="two different numbers"):
        Transmission.from_terms([1.0, 2.0], [(1, 1, 3.0)])
    with pytest.raises(ValueError, match=r"transmission.coupling\[0\]"):
        Transmission.from_dict({"coupling": [{"motor": 2, "joint": 1}]}, [1.0, 1.0])
    with pytest.raises(ValueError, match="unknown key"):
        Transmission.from_dict({"ratios": [1, 2]}, [1.0, 1.0])
    with pytest.raises(ValueError, match="singular"):
        Transmission(np.array([[1.0, 1.0], [1.0, 1.0]]))
