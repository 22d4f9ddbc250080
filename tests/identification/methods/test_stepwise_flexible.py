"""Chen et al. 2021: sub-system rank/cond analysis, stepwise order, flexible-joint 2-DOF arm."""

import numpy as np
import pytest

from robodyn.identification.base_params import base_parameters
from robodyn.identification.flexible_joints import demonstrate
from robodyn.identification.regressor import ColumnSpec
from robodyn.identification.stepwise import column_groups, propose_order, rank_and_cond, subsystem_analysis
from robodyn.robot.loader import load_model


@pytest.fixture(scope="module")
def twolink():
    return load_model("twolink")


def test_groups_of_the_two_link_arm(twolink):
    base = base_parameters(twolink, ColumnSpec(friction=("viscous", "coulomb", "offset")))
    groups = column_groups(twolink, base)
    named = {g: [base.names[k] for k in cols] for g, cols in groups.items()}
    assert named["gravity"] == ["MX1R", "MY1", "MX2", "MY2"]
    assert named["inertia"] == ["ZZ1R", "ZZ2"]
    assert named["friction"] == ["FV1", "FC1", "FV2", "FC2"] and named["offset"] == ["FO1", "FO2"]


def test_rank_deficient_group_is_merged_into_the_next_step():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(50, 1))
    Y = np.hstack([a, 2 * a, rng.normal(size=(50, 2))])  # group 'friction' alone has rank 1 of 2
    analysis = subsystem_analysis(Y, {"friction": [0, 1], "gravity": [2, 3]})
    assert not analysis["alone"]["friction"]["full_rank"]
    assert propose_order(analysis)[0]["groups"] == ["friction", "gravity"]
    assert rank_and_cond(np.eye(3))["cond"] == pytest.approx(1.0)


def test_noise_free_flexible_arm_is_recovered_exactly(twolink):
    res = demonstrate(twolink, sensor_noise=0.0, motor_noise=0.0)
    truth = res.truth
    assert res.stiffness == pytest.approx(truth["stiffness"], rel=1e-5)
    assert res.motor["inertia"] == pytest.approx(truth["motor_inertia"], rel=1e-5)
    assert res.motor["coulomb"] == pytest.approx(truth["motor_coulomb"], rel=1e-5)
    assert res.sensor_offset == pytest.approx(truth["sensor_offset"], abs=1e-4)
    assert res.link_friction["viscous"] == pytest.approx(truth["link_viscous"], rel=1e-3)  # position binning
    assert max(res.errors["base_abs"].values()) < 1e-4
    assert [s["groups"] for s in res.order] == [["friction"], ["gravity"], ["inertia"], ["offset"]]


def test_noisy_flexible_arm_and_why_motor_and_stiffness_stay_apart(twolink):
    res = demonstrate(twolink)  # 0.02 N.m sensor noise, 1e-4 N.m motor noise
    assert max(res.errors["stiffness"]) < 0.03
    assert max(res.errors["motor_inertia"]) < 0.02
    stacked = res.analysis["motor_and_stiffness_stacked"]
    motor = res.analysis["motor"]
    assert all(s["cond"] > 1e4 * m["cond"] for s, m in zip(stacked, motor))  # Chen et al. 2021 eqs. 13-16
