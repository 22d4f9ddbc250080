"""Regressor against RNEA, both against pinocchio and MuJoCo, and the URDF path."""

import numpy as np
import pytest

from robodyn.identification.datasets import tx40
from robodyn.identification.regressor import ColumnSpec, regressor, sample_states, standard_parameter_vector
from robodyn.robot.dynamics import gravity_torques, inverse_dynamics, mass_matrix
from robodyn.robot.loader import builtin_model_names, load_model
from robodyn.robot.urdf import model_from_urdf, model_to_urdf, pinocchio_inverse_dynamics

ALL_COLUMNS = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))


def random_states(model, count, seed):
    rng = np.random.default_rng(seed)
    q, _, _ = sample_states(model, count, seed=seed)
    qd = rng.normal(size=q.shape) * 1.5
    qdd = rng.normal(size=q.shape) * 4.0
    return q, qd, qdd


def relative_error(tau, reference):
    """Max error relative to each joint's torque range (floored at 1e-3 of the largest joint's,
    so a joint that carries almost nothing, e.g. a massless last link, cannot divide by zero)."""
    scale = np.max(np.abs(reference), axis=0)
    scale = np.maximum(scale, 1e-3 * scale.max())
    return float(np.max(np.abs(tau - reference) / scale))


def random_friction(model, seed):
    rng = np.random.default_rng(seed)
    return {"viscous": rng.uniform(0, 2, model.dof), "coulomb": rng.uniform(0, 3, model.dof),
            "offset": rng.normal(size=model.dof)}


@pytest.mark.parametrize("name", builtin_model_names())
def test_regressor_times_parameters_equals_rnea(name):
    model = load_model(name)
    q, qd, qdd = random_states(model, 1000, seed=7)
    friction = random_friction(model, 3)
    rotor = np.full(model.dof, 0.05) + model.rotor_inertia
    model = model.__class__(**{**model.__dict__, "rotor_inertia": rotor})
    Y = regressor(model, q, qd, qdd, ALL_COLUMNS)
    tau_regressor = (Y @ standard_parameter_vector(model, ALL_COLUMNS, friction)).reshape(q.shape)
    tau_rnea = inverse_dynamics(model, q, qd, qdd, rotor_inertia=rotor, friction=friction)
    assert relative_error(tau_regressor, tau_rnea) < 1e-10


def test_regressor_blocks_are_lower_triangular_and_friction_columns_exact():
    model = load_model("panda")
    q, qd, qdd = random_states(model, 50, seed=1)
    qd[0, 2] = 0.0
    Y = regressor(model, q, qd, qdd, ALL_COLUMNS).reshape(50, 7, -1)
    w = ALL_COLUMNS.per_joint
    for i in range(7):
        assert np.all(Y[:, i, : w * i] == 0.0)  # joint i never sees links before it
    assert np.array_equal(Y[:, 3, w * 3 + 10], qdd[:, 3])  # IA4
    assert np.array_equal(Y[:, 3, w * 3 + 11], qd[:, 3])  # FV4
    assert np.array_equal(Y[:, 3, w * 3 + 12], np.sign(qd[:, 3]))  # FC4
    assert Y[0, 2, w * 2 + 12] == 0.0  # sign(0) = 0 for Coulomb
    assert np.all(Y[:, 3, w * 3 + 13] == 1.0)  # FO4


def test_regressor_threads_and_out_buffer_give_identical_results():
    model = load_model("ur5")
    q, qd, qdd = random_states(model, 333, seed=5)
    a = regressor(model, q, qd, qdd, ALL_COLUMNS, threads=1)
    out = np.full_like(a, np.nan)
    b = regressor(model, q, qd, qdd, ALL_COLUMNS, out=out)
    assert b is out
    assert np.array_equal(a, b)


def _mujoco_inverse(urdf_text, gravity, q, qd, qdd):
    mujoco = pytest.importorskip("mujoco", reason="MuJoCo is the independent oracle (extra 'test')")
    xml = urdf_text.replace("<robot name=", "<robot name=", 1)
    head, rest = xml.split(">", 2)[0:2], xml.split(">", 2)[2]
    xml = ">".join(head) + '><mujoco><compiler discardvisual="true" balanceinertia="false" fusestatic="false"/></mujoco>' + rest
    m = mujoco.MjModel.from_xml_string(xml)
    m.opt.gravity[:] = gravity
    d = mujoco.MjData(m)
    out = np.empty_like(q)
    for k in range(q.shape[0]):
        d.qpos[:] = q[k]
        d.qvel[:] = qd[k]
        d.qacc[:] = qdd[k]
        mujoco.mj_inverse(m, d)
        out[k] = d.qfrc_inverse
    return out


def _pinocchio_inverse(urdf_text, gravity, q, qd, qdd):
    pytest.importorskip("pinocchio", reason="pinocchio is the independent oracle (extra 'test')")
    return pinocchio_inverse_dynamics(urdf_text, gravity)(q, qd, qdd)


@pytest.mark.parametrize("name", ["panda", "fr3", "ur5", "ur10e", "scara", "twolink"])
def test_against_pinocchio_and_mujoco_from_urdf(name):
    model = load_model(name).with_gravity([0.4, -1.2, -9.7])  # a tilted base
    urdf = model_to_urdf(model)
    q, qd, qdd = random_states(model, 200, seed=11)
    tau_rnea = inverse_dynamics(model, q, qd, qdd)
    Y = regressor(model, q, qd, qdd)
    tau_reg = (Y @ standard_parameter_vector(model, ColumnSpec())).reshape(q.shape)
    tau_pin = _pinocchio_inverse(urdf, model.gravity, q, qd, qdd)
    tau_mj = _mujoco_inverse(urdf, model.gravity, q, qd, qdd)
    for tau in (tau_rnea, tau_reg, tau_mj):
        assert relative_error(tau, tau_pin) < 1e-10
    # the URDF read back by our own parser is the same robot
    reread = model_from_urdf(urdf, gravity=model.gravity)
    assert relative_error(inverse_dynamics(reread, q, qd, qdd), tau_pin) < 1e-10


def test_third_party_urdf_matches_pinocchio():
    path = tx40.DATA_DIR / "tx40_mdh_modified.urdf"
    model = model_from_urdf(path)
    assert model.dof == 6
    q, qd, qdd = random_states(model, 200, seed=2)
    tau_pin = _pinocchio_inverse(path.read_text(), model.gravity, q, qd, qdd)
    tau_reg = (regressor(model, q, qd, qdd) @ standard_parameter_vector(model, ColumnSpec())).reshape(q.shape)
    assert relative_error(tau_reg, tau_pin) < 1e-10


ODD_URDF = """<?xml version="1.0"?>
<robot name="odd">
  <link name="world"/>
  <link name="base"><inertial><mass value="3"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <joint name="mount" type="fixed"><parent link="world"/><child link="base"/><origin xyz="0.1 0.2 0.3" rpy="0.1 0.2 0.3"/></joint>
  <link name="l1"><inertial><origin xyz="0.05 -0.02 0.1" rpy="0.3 -0.2 0.1"/><mass value="2.5"/>
    <inertia ixx="0.02" ixy="0.001" ixz="-0.002" iyy="0.03" iyz="0.0005" izz="0.015"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0 0 0.2" rpy="0 0 0.5"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="50" velocity="2"/></joint>
  <link name="bracket"><inertial><origin xyz="0.02 0.01 0" rpy="0 0 0"/><mass value="0.7"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.001"/></inertial></link>
  <joint name="weld" type="fixed"><parent link="l1"/><child link="bracket"/><origin xyz="0.3 0 0" rpy="0.4 0 0"/></joint>
  <link name="sensor"><inertial><mass value="0.3"/><inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0" izz="0.0001"/></inertial></link>
  <joint name="side" type="fixed"><parent link="l1"/><child link="sensor"/><origin xyz="0 0.1 0" rpy="0 0 0"/></joint>
  <link name="l2"><inertial><origin xyz="0.1 0 0" rpy="0 0 0"/><mass value="1.5"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.012" iyz="0" izz="0.008"/></inertial></link>
  <joint name="j2" type="prismatic"><parent link="bracket"/><child link="l2"/><origin xyz="0 0 0.1" rpy="0 0.3 0"/>
    <axis xyz="0.6 0 -0.8"/><limit lower="-0.2" upper="0.2" effort="100" velocity="0.5"/></joint>
  <link name="l3"><inertial><origin xyz="0 0.05 0.02" rpy="0 0 0"/><mass value="0.8"/>
    <inertia ixx="0.004" ixy="0.0002" ixz="0" iyy="0.003" iyz="0" izz="0.002"/></inertial></link>
  <joint name="j3" type="continuous"><parent link="l2"/><child link="l3"/><origin xyz="0.2 0 0" rpy="0 0 0"/>
    <axis xyz="0 0 -1"/></joint>
  <link name="tool"/>
  <joint name="tool_joint" type="fixed"><parent link="l3"/><child link="tool"/><origin xyz="0 0 0.05" rpy="0 0 0"/></joint>
</robot>
"""


def test_urdf_with_fixed_joints_and_general_axes_matches_pinocchio():
    model = model_from_urdf(ODD_URDF, gravity=[0.0, 0.0, -9.81])
    assert model.joint_names == ("j1", "j2", "j3")
    assert not np.isfinite(model.q_max[2])  # continuous joint
    q, qd, qdd = random_states(model, 100, seed=4)
    tau_pin = _pinocchio_inverse(ODD_URDF, model.gravity, q, qd, qdd)
    tau = inverse_dynamics(model, q, qd, qdd)
    tau_reg = (regressor(model, q, qd, qdd) @ standard_parameter_vector(model, ColumnSpec())).reshape(q.shape)
    assert relative_error(tau, tau_pin) < 1e-10
    assert relative_error(tau_reg, tau_pin) < 1e-10


def test_gravity_and_mass_matrix_helpers_are_consistent():
    model = load_model("panda")
    q, qd, qdd = random_states(model, 3, seed=9)
    M = mass_matrix(model, q[0])
    assert np.allclose(M, M.T, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(M) > 0)
    g = gravity_torques(model, q[:1])[0]
    tau = inverse_dynamics(model, q[:1], np.zeros((1, 7)), qdd[:1])[0]
    assert np.allclose(tau, M @ qdd[0] + g, atol=1e-10)
    upside_down = model.with_gravity(-model.gravity)
    assert np.allclose(gravity_torques(upside_down, q[:1])[0], -g, atol=1e-12)
