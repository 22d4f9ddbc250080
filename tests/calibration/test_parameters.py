import numpy as np
import pytest

from robodyn.calibration.parameters import (geometric_model, numeric_parameter_jacobian, parallel_axis_rows,
                                            parameter_jacobian, preset_free_names, robot_for, rot_y,
                                            target_positions)
from robodyn.calibration.robots import UR5_LI2023_MODEL
from robodyn.robot.dynamics import gravity_torques
from robodyn.robot.kinematics import forward_kinematics, rot_z, trans
from robodyn.robot.loader import load_model, model_from_toml


def test_shipped_li2023_model_is_the_ur5_with_the_same_joint_angles():
    # Table 2 + flange d6 = UR's DH chain shifted down by d1; the re-expressed link data gives the same gravity
    seed, ur = model_from_toml(UR5_LI2023_MODEL), load_model("ur5")
    q = np.random.default_rng(0).uniform(-3, 3, size=(40, 6))
    assert np.allclose(trans(z=0.089159) @ forward_kinematics(seed, q), forward_kinematics(ur, q), atol=1e-12)
    assert np.allclose(gravity_torques(seed, q), gravity_torques(ur, q), atol=1e-9)
    assert np.isclose(seed.dh.d[1], 0.10915) and np.isclose(seed.dh.a[2], 0.425) and np.isclose(seed.dh.a[3], 0.39225)
    assert np.allclose(np.rad2deg(seed.dh.theta), [0, 180, 0, 0, -180, 0])


@pytest.mark.parametrize("name", ["ur5_li2023", "ur5", "scara", "panda"])
def test_target_positions_are_the_shared_forward_kinematics(name):
    robot = model_from_toml(UR5_LI2023_MODEL) if name == "ur5_li2023" else load_model(name)
    base = trans(1.0, -2.0, 0.3) @ rot_z(0.7)
    tool = np.array([0.03, -0.02, 0.05])
    gm = geometric_model(robot, tool_offset=tool, base=base)
    q = np.random.default_rng(1).uniform(-2, 2, size=(6, robot.dof))
    T = base @ forward_kinematics(robot_for(gm, gm.nominal), q)
    assert np.allclose(target_positions(gm, gm.nominal, q), T[:, :3, :3] @ tool + T[:, :3, 3], atol=1e-12)
    assert np.allclose(forward_kinematics(robot_for(gm, gm.nominal), q), forward_kinematics(robot, q), atol=1e-12)


@pytest.mark.parametrize("name", ["ur5_li2023", "ur5", "scara"])
def test_analytic_parameter_jacobian_matches_finite_differences(name):
    # seed 004 eqs. 10-13 for MDH, their standard-DH counterparts, prismatic joints, Hayati betas, base, tool
    robot = model_from_toml(UR5_LI2023_MODEL) if name == "ur5_li2023" else load_model(name)
    plain = geometric_model(robot)
    gm = geometric_model(robot, tool_offset=(0.03, 0.04, 0.05), base=trans(0.5, 0.2, 0.1) @ rot_z(-1.0),
                         hayati_rows=parallel_axis_rows(plain))
    rng = np.random.default_rng(2)
    params = gm.nominal + rng.normal(scale=1e-2, size=gm.size)
    q = rng.uniform(-2, 2, size=(5, robot.dof))
    assert np.allclose(parameter_jacobian(gm, params, q), numeric_parameter_jacobian(gm, params, q), atol=1e-7)


def test_hayati_beta_tilts_the_next_axis_about_y():
    robot = model_from_toml(UR5_LI2023_MODEL)
    gm = geometric_model(robot, hayati_rows=parallel_axis_rows(geometric_model(robot)))
    assert gm.hayati_rows == (2, 3)  # MDH rows 3 and 4: joints 3 and 4 are parallel to their predecessors
    p = gm.nominal.copy()
    p[gm.index("beta3")] = 0.01
    q = np.zeros((1, 6))
    plain_frames = robot_for(gm, gm.nominal)
    tilted = robot_for(gm, p)
    # joint 3's frame turns by exactly Ry(0.01) right after the common normal of row 3
    F_plain, F_tilt = plain_frames.fixed[2], tilted.fixed[2]
    A = np.array(robot.fixed[2])  # RotZ(theta) TransZ(d) are identity here, so F = RotX(alpha) TransX(a)
    assert np.allclose(F_plain, A)
    assert np.allclose(F_tilt, A @ rot_y(0.01))
    assert not np.allclose(target_positions(gm, p, q), target_positions(gm, gm.nominal, q))


def test_li2023_preset_is_the_papers_18_parameters():
    gm = geometric_model(model_from_toml(UR5_LI2023_MODEL))
    names = preset_free_names(gm, "li2023")
    assert names == ["alpha2", "a2", "d2", "theta2", "alpha3", "a3", "d3", "theta3", "alpha4", "a4", "d4", "theta4",
                     "alpha5", "a5", "d5", "theta5", "alpha6", "a6"]
    assert len(preset_free_names(gm, "li2023", identify_base=True, identify_tool=True)) == 27
    # "all": every DH value of every row, 1-based like the papers, then base corrections on request
    every = preset_free_names(gm, "all", identify_base=True)
    assert every[:8] == ["alpha1", "a1", "d1", "theta1", "alpha2", "a2", "d2", "theta2"]
    assert every[20:24] == ["alpha6", "a6", "d6", "theta6"]
    assert every[24:] == ["base_x", "base_y", "base_z", "base_rx", "base_ry", "base_rz"]
    with pytest.raises(ValueError, match="unknown parameter preset 'dh'"):
        preset_free_names(gm, "dh")


def test_bad_model_input_names_the_field():
    robot = load_model("ur5")
    with pytest.raises(ValueError, match="tool_offset"):
        geometric_model(robot, tool_offset=(0.1, 0.2))
    with pytest.raises(ValueError, match="base"):
        geometric_model(robot, base=np.diag([1.0, 2.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="hayati_rows"):
        geometric_model(robot, hayati_rows=[7])
    gm = geometric_model(robot)
    with pytest.raises(ValueError, match="q:"):
        target_positions(gm, gm.nominal, np.zeros((3, 5)))
    with pytest.raises(ValueError, match="parameters: unknown parameter 'd9'"):
        gm.index("d9")


def test_shipped_ur5_li2023_file_is_what_its_generator_writes(capsys):
    import runpy
    from pathlib import Path

    script = Path(__file__).parents[2] / "bench" / "calibration_make_ur5_li2023.py"
    runpy.run_path(str(script), run_name="not_main")["main"]()
    assert capsys.readouterr().out == UR5_LI2023_MODEL.read_text()


def test_oriented_target_frame_is_its_nominal_rotation_plus_zero_corrections():
    from robodyn.calibration.parameters import Target, tool_transform
    from robodyn.robot.kinematics import rot_x

    R = rot_x(0.3)[:3, :3] @ rot_y(-0.2)[:3, :3]
    robot = model_from_toml(UR5_LI2023_MODEL)
    gm = geometric_model(robot, targets=[Target("B", (0.01, 0.02, 0.03), oriented=True, rotation=tuple(map(tuple, R)))])
    assert gm.nominal[gm.indices(gm.tool_rotation_names(0))].tolist() == [0.0, 0.0, 0.0]
    T = tool_transform(gm, gm.nominal, 0)
    assert np.allclose(T[:3, :3], R, atol=1e-15) and T[:3, 3].tolist() == [0.01, 0.02, 0.03] and T[3].tolist() == [0, 0, 0, 1]
    # a correction about z is applied in the flange frame, before the nominal rotation
    p = gm.nominal.copy()
    p[gm.index("tool_rz")] = 0.1
    assert np.allclose(tool_transform(gm, p, 0)[:3, :3], rot_z(0.1)[:3, :3] @ R, atol=1e-15)
    # a plane's corrections (two tilts and an offset along its normal) also start at zero
    with_plane = geometric_model(robot, planes=[("P1", trans(0.5, 0.0, 0.1))])
    assert with_plane.nominal[with_plane.indices(with_plane.all_plane_names())].tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"hayati_rows: row 7 is outside 1..6"):
        geometric_model(robot, hayati_rows=[6])
