"""The joint map (controller joint values <-> model joint variables), shared by calibration and
identification: round trips, power conservation, the chain rule, model files and URDF references."""

import numpy as np
import pytest

from robodyn.robot.absorb import absorb_joint_map
from robodyn.robot.dynamics import gravity_torques
from robodyn.robot.joint_map import JointMap
from robodyn.robot.kinematics import forward_kinematics, geometric_jacobian
from robodyn.robot.loader import load_model, model_from_dict, model_from_toml
from robodyn.robot.urdf import model_to_urdf

RNG = np.random.default_rng(0)


def fanuc_like(n=6) -> JointMap:
    """Reversed J2..J6, a zero offset on J2 and the FANUC J2/J3 coupling (J3 measured from the horizontal)."""
    return JointMap.from_terms(n, sign=[1, -1, 1, -1, -1, -1], offset=[0, np.pi / 2, 0, 0, 0, 0],
                               coupling=[(2, 1, 1.0)])


def test_identity_is_the_default_and_changes_nothing():
    model = load_model("ur5")
    assert model.joint_map.is_identity
    q = RNG.uniform(-2, 2, size=(5, 6))
    assert np.array_equal(model.joint_map.to_model(q), q) and np.array_equal(model.joint_map.to_controller(q), q)
    assert "joint_map" not in model.summary()


def test_coupled_map_is_what_it_says_and_round_trips():
    jm = fanuc_like()
    qc = RNG.uniform(-2, 2, size=(50, 6))
    qm = jm.to_model(qc)
    # q3 of the model = controller J3 + controller J2 (the coupling), q2 = -J2 + pi/2
    assert np.allclose(qm[:, 2], qc[:, 2] + qc[:, 1])
    assert np.allclose(qm[:, 1], -qc[:, 1] + np.pi / 2)
    assert np.allclose(qm[:, 0], qc[:, 0]) and np.allclose(qm[:, 5], -qc[:, 5])
    assert np.allclose(jm.to_controller(qm), qc, atol=1e-13)
    assert np.allclose(jm.to_model(jm.to_controller(qm[0])), qm[0], atol=1e-13)  # single vectors too
    assert jm.describe()[2] == "q3 = J2 + J3"
    assert jm.describe()[1] == "q2 = -J2 + 1.5708"


def test_velocities_have_no_offset_and_torques_keep_the_power():
    jm = JointMap(RNG.normal(size=(6, 6)) + 3 * np.eye(6), RNG.normal(size=6))
    qc = RNG.normal(size=(20, 6))
    qdc = RNG.normal(size=(20, 6))
    h = 1e-6
    # the velocity map is the derivative of the position map along any path
    numeric = (jm.to_model(qc + h * qdc) - jm.to_model(qc - h * qdc)) / (2 * h)
    assert np.allclose(jm.velocity_to_model(qdc), numeric, atol=1e-8)
    assert np.allclose(jm.velocity_to_controller(jm.velocity_to_model(qdc)), qdc, atol=1e-12)
    tau_c = RNG.normal(size=(20, 6))
    tau_m = jm.torque_to_model(tau_c)
    power_c = np.sum(tau_c * qdc, axis=1)
    power_m = np.sum(tau_m * jm.velocity_to_model(qdc), axis=1)
    assert np.allclose(power_c, power_m, atol=1e-12)
    assert np.allclose(jm.torque_to_controller(tau_m), tau_c, atol=1e-12)
    assert not np.allclose(tau_m, tau_c)  # a test of something


def test_jacobian_chain_rule_against_finite_differences_in_controller_values():
    model = load_model("ur5").with_joint_map(fanuc_like())
    jm = model.joint_map
    qc = RNG.uniform(-1.5, 1.5, size=6)
    point = np.array([0.01, 0.02, 0.1])
    J_c = jm.jacobian_to_controller(geometric_jacobian(model, jm.to_model(qc), point_in_tool=point)[:3])

    def position(qcv):
        T = forward_kinematics(model, jm.to_model(qcv))
        return T[:3, :3] @ point + T[:3, 3]

    h = 1e-6
    numeric = np.column_stack([(position(qc + h * e) - position(qc - h * e)) / (2 * h) for e in np.eye(6)])
    assert np.allclose(J_c, numeric, atol=1e-8)
    assert np.allclose(jm.jacobian_to_model(J_c), geometric_jacobian(model, jm.to_model(qc), point_in_tool=point)[:3])


def test_static_torques_by_power_match_the_gravity_in_controller_values():
    # holding torques a controller sees: the derivative of the potential energy in its own joint values
    model = load_model("ur5").with_joint_map(fanuc_like())
    jm = model.joint_map
    qc = RNG.uniform(-1.5, 1.5, size=6)
    tau_c = jm.torque_to_controller(gravity_torques(model, jm.to_model(qc)[None])[0])

    def potential(qcv):  # sum of m g h over the links, with the shared forward kinematics
        from robodyn.robot.kinematics import joint_frames
        from robodyn.robot.model import com_inertia

        frames = joint_frames(model, jm.to_model(qcv))
        energy = 0.0
        for i in range(model.dof):
            m, c, _ = com_inertia(model.inertial[i])
            energy += -m * float(model.gravity @ (frames[i, :3, :3] @ c + frames[i, :3, 3]))
        return energy

    h = 1e-6
    numeric = np.array([(potential(qc + h * e) - potential(qc - h * e)) / (2 * h) for e in np.eye(6)])
    assert np.allclose(tau_c, numeric, atol=1e-5)


def test_toml_joint_map_is_read_and_bad_tables_are_named(tmp_path):
    src = (load_model.__globals__["DATA_DIR"] / "ur5.toml").read_text()
    path = tmp_path / "ur5_mapped.toml"
    path.write_text(src + "\n[joint_map]\nsign = [1, -1, 1, -1, -1, -1]\noffset = [0, 1.5707963267948966, 0, 0, 0, 0]\n"
                          "coupling = [ { joint = 3, controller = 2, factor = 1.0 } ]\n")
    model = model_from_toml(path)
    assert np.allclose(model.joint_map.matrix, fanuc_like().matrix)
    assert np.allclose(model.joint_map.offset, fanuc_like().offset)
    assert model.summary()["joint_map_text"][2] == "q3 = J2 + J3"
    again = JointMap.from_dict(model.joint_map.to_dict(), 6)
    assert np.array_equal(again.matrix, model.joint_map.matrix)
    doc = {"convention": "mdh", "joints": [{"type": "revolute", "alpha": 0, "a": 0, "d": 0, "theta": 0, "q_min": -1,
                                             "q_max": 1, "qd_max": 1, "qdd_max": 1, "qddd_max": 1, "tau_max": 1}] * 2}
    for table, message in (({"sign": [1, 2]}, "joint_map.sign: each sign must be 1 or -1"),
                           ({"scale": [1, 0]}, "joint_map.scale: each scale must be > 0"),
                           ({"coupling": [{"joint": 2, "controller": 2}]}, "coupled to itself"),
                           ({"coupling": [{"joint": 3, "controller": 1}]}, "joints must be in 1..2"),
                           ({"matrix": [[1, 1], [1, 1]]}, "joint_map.matrix: singular"),
                           ({"matrix": [[1, 0], [0, 1]], "sign": [1, 1]}, "either matrix or"),
                           ({"offset": [0, 0, 0]}, "joint_map.offset: expected 2 numbers"),
                           ({"colour": 1}, "joint_map.colour: unknown key")):
        with pytest.raises(ValueError, match=message):
            model_from_dict(dict(doc, joint_map=table))


def test_a_urdf_reference_takes_a_joint_map(tmp_path):
    ur5 = load_model("ur5")
    (tmp_path / "arm.urdf").write_text(model_to_urdf(ur5, name="arm"))
    (tmp_path / "arm.toml").write_text('urdf = "arm.urdf"\nname = "arm_mapped"\ngravity = [0.0, 0.0, -9.81]\n'
                                       "[limits]\nqdd_max = [5, 5, 5, 10, 10, 10]\nqddd_max = [50, 50, 50, 100, 100, 100]\n"
                                       "[joint_map]\nsign = [1, 1, -1, 1, 1, 1]\n")
    model = load_model(tmp_path / "arm.toml")
    assert model.name == "arm_mapped" and model.dh is None and model.limits_are_finite()
    qc = RNG.uniform(-2, 2, size=(4, 6))
    qm = model.joint_map.to_model(qc)
    assert np.allclose(qm[:, 2], -qc[:, 2])
    assert np.allclose(forward_kinematics(model, qm), forward_kinematics(ur5, qm), atol=1e-12)
    (tmp_path / "bad.toml").write_text('urdf = "arm.urdf"\nconvention = "mdh"\n')
    with pytest.raises(ValueError, match="convention: not allowed beside 'urdf'"):
        load_model(tmp_path / "bad.toml")
    (tmp_path / "missing.toml").write_text('urdf = "nope.urdf"\n')
    with pytest.raises(ValueError, match="urdf: file .*nope.urdf.* does not exist"):
        load_model(tmp_path / "missing.toml")


def test_absorbing_a_sign_and_offset_map_gives_a_model_in_controller_values():
    base = load_model("ur5")
    jm = JointMap.from_terms(6, sign=[1, -1, -1, 1, -1, 1], offset=[0.3, -1.2, 0.5, 0.0, 2.0, -0.7])
    mapped = base.with_joint_map(jm)
    direct = absorb_joint_map(mapped)
    assert direct.joint_map.is_identity
    qc = RNG.uniform(-2, 2, size=(30, 6))
    qm = jm.to_model(qc)
    assert np.allclose(forward_kinematics(direct, qc), forward_kinematics(mapped, qm), atol=1e-12)
    # dynamics too: the same gravity torques, seen through the power-conserving torque map
    assert np.allclose(gravity_torques(direct, qc), jm.torque_to_controller(gravity_torques(mapped, qm)), atol=1e-9)
    lo, hi = jm.limits_to_controller(base.q_min, base.q_max)
    assert np.allclose(direct.q_min, lo) and np.allclose(direct.q_max, hi)
    with pytest.raises(ValueError, match="coupling or a scale"):
        absorb_joint_map(base.with_joint_map(fanuc_like()))
    with pytest.raises(ValueError, match="joint_map: maps 2 joints but the model has 6"):
        base.with_joint_map(JointMap.identity(2))
