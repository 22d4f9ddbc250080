import numpy as np
import pytest

from robodyn.identification.regressor import regressor
from robodyn.robot.kinematics import (dh_transform, forward_kinematics, geometric_jacobian,
                                      inverse_kinematics, joint_frames)
from robodyn.robot.loader import load_model, model_from_dict
from robodyn.robot.urdf import model_from_urdf, model_to_urdf


def test_panda_flange_matches_pinocchio_frame():
    pin = pytest.importorskip("pinocchio", reason="pinocchio is the independent kinematics oracle (extra 'test')")
    model = load_model("panda")
    pm = pin.buildModelFromXML(model_to_urdf(model))
    pd = pm.createData()
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.uniform(model.q_min, model.q_max)
        pin.framesForwardKinematics(pm, pd, q)
        T_pin = pd.oMf[pm.getFrameId("tool")].homogeneous
        assert np.allclose(forward_kinematics(model, q), T_pin, atol=1e-12)


def test_panda_home_pose_matches_franka_documentation():
    # at q = 0 the links stack up: flange 0.088 m forward (a7), 0.333 + 0.316 + 0.384 - 0.107 m up
    model = load_model("panda")
    T = forward_kinematics(model, np.zeros(7))
    assert np.allclose(T[:3, 3], [0.088, 0.0, 0.333 + 0.316 + 0.384 - 0.107], atol=1e-12)


def test_jacobian_matches_finite_differences_for_prismatic_and_revolute():
    for name in ("ur5", "scara"):
        model = load_model(name)
        rng = np.random.default_rng(1)
        q = rng.uniform(model.q_min, model.q_max) * 0.8
        J = geometric_jacobian(model, q)
        h = 1e-7
        for j in range(model.dof):
            dq = np.zeros(model.dof)
            dq[j] = h
            dp = (forward_kinematics(model, q + dq)[:3, 3] - forward_kinematics(model, q - dq)[:3, 3]) / (2 * h)
            assert np.allclose(J[:3, j], dp, atol=1e-6)


def test_batched_kinematics_equal_single_calls():
    model = load_model("fr3")
    q = np.random.default_rng(3).uniform(model.q_min, model.q_max, size=(5, 7))
    batch = joint_frames(model, q)
    for k in range(5):
        assert np.allclose(batch[k], joint_frames(model, q[k]))


def test_numeric_ik_reaches_a_reachable_pose():
    model = load_model("ur5")
    rng = np.random.default_rng(5)
    q_true = rng.uniform(-1.5, 1.5, 6)
    target = forward_kinematics(model, q_true)
    result = inverse_kinematics(model, target, q_true + rng.normal(scale=0.1, size=6))
    assert result.success, result.message
    assert np.allclose(forward_kinematics(model, result.q), target, atol=1e-8)
    pos = inverse_kinematics(model, target[:3, 3], np.zeros(6), position_only=True)
    assert pos.success and pos.position_error < 1e-9


def test_dh_conventions_are_the_textbook_ones():
    T = dh_transform("mdh", np.pi / 2, 0.1, 0.2, 0.0)
    assert np.allclose(T[:3, 3], [0.1, -0.2, 0.0])  # RotX(alpha) TransX(a) RotZ TransZ(d)
    T = dh_transform("dh", np.pi / 2, 0.1, 0.2, 0.0)
    assert np.allclose(T[:3, 3], [0.1, 0.0, 0.2])  # RotZ TransZ(d) TransX(a) RotX
    with pytest.raises(ValueError, match="convention"):
        dh_transform("xyz", 0, 0, 0, 0)


def _joint(**over):
    j = dict(name="j", type="revolute", alpha=0.0, a=0.0, d=0.0, theta=0.0, q_min=-1.0, q_max=1.0, qd_max=1.0,
             qdd_max=1.0, qddd_max=1.0, tau_max=1.0)
    j.update(over)
    return j


@pytest.mark.parametrize("doc, field", [
    ({"convention": "mdh", "joints": [_joint(type="spherical")]}, "joints[0].type"),
    ({"convention": "weird", "joints": [_joint()]}, "convention"),
    ({"convention": "mdh", "joints": [_joint(q_min=2.0)]}, "joints[0].q_min"),
    ({"convention": "mdh", "joints": [_joint(qd_max=0.0)]}, "joints[0].qd_max"),
    ({"convention": "mdh", "joints": [_joint(d=float("nan"))]}, "joints[0].d"),
    ({"convention": "mdh", "joints": [{k: v for k, v in _joint().items() if k != "tau_max"}]}, "joints[0].tau_max"),
    ({"convention": "mdh", "joints": [_joint(link={"mass": -1.0})]}, "joints[0].link.mass"),
    ({"convention": "mdh", "joints": [_joint(link={"mass": 1.0, "inertia": {"xx": -1.0}})]}, "joints[0].link.inertia"),
    ({"convention": "mdh", "joints": [_joint(link={"mass": 1.0, "com": [0, 0]})]}, "joints[0].link.com"),
    ({"convention": "mdh", "joints": [_joint()], "gravity": [0, 0]}, "gravity"),
    ({"convention": "mdh", "joints": []}, "joints"),
])
def test_bad_model_tables_name_the_field(doc, field):
    with pytest.raises(ValueError) as info:
        model_from_dict(doc)
    assert str(info.value).startswith(field)


def test_bad_states_name_the_field():
    model = load_model("ur5")
    good = np.zeros((4, 6))
    with pytest.raises(ValueError, match=r"^q: expected shape \(N, 6\)"):
        regressor(model, np.zeros((4, 5)), good, good)
    with pytest.raises(ValueError, match="^qd: shape"):
        regressor(model, good, np.zeros((3, 6)), good)
    bad = good.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="^qdd: non-finite value .* sample 2"):
        regressor(model, good, good, bad)


@pytest.mark.parametrize("snippet, message", [
    ('<joint name="f" type="floating"><parent link="a"/><child link="b"/></joint>', "floating"),
    ('<joint name="m" type="revolute"><parent link="a"/><child link="b"/><mimic joint="x"/></joint>', "mimic"),
    ('<joint name="p" type="planar"><parent link="a"/><child link="b"/></joint>', "planar"),
])
def test_unsupported_urdf_features_are_rejected(snippet, message):
    text = f'<robot name="r"><link name="a"/><link name="b"/>{snippet}</robot>'
    with pytest.raises(ValueError, match=message):
        model_from_urdf(text)


def test_urdf_model_without_acceleration_limits_reports_it():
    model = model_from_urdf(model_to_urdf(load_model("ur5")))
    assert not model.limits_are_finite()
    fixed = model_from_urdf(model_to_urdf(load_model("ur5")),
                            limits_override={"qdd_max": [5] * 6, "qddd_max": [50] * 6})
    assert fixed.limits_are_finite()
