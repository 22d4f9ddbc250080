"""Measurement types: several targets per pose, target orientations, planar contacts, each weighted
by its stated noise. The analytic Jacobians against finite differences, and identifications that
only the richer measurements make possible."""

import numpy as np
import pytest

from robodyn.calibration.methods import calibrate, error_stats
from robodyn.calibration.geometric import fit_geometry
from robodyn.calibration.measurements import MeasurementSet, Residual, plane_from_points
from robodyn.calibration.parameters import (Target, all_target_positions, geometric_model, measurement_jacobians,
                                            parallel_axis_rows, preset_free_names, target_rotations)
from robodyn.calibration.simulation import load_ur5_li2023, ur5_li2023_truth
from robodyn.robot.kinematics import rot_x, rot_y, rotation_error, trans
from robodyn.robot.loader import load_model

RNG = np.random.default_rng(7)
NEST = [Target("A", (0.05, 0.0, 0.04)), Target("B", (-0.025, 0.043, 0.04), oriented=True,
                                               rotation=tuple(map(tuple, rot_x(0.3)[:3, :3] @ rot_y(-0.2)[:3, :3]))),
        Target("C", (-0.025, -0.043, 0.04))]


@pytest.mark.parametrize("name", ["ur5_li2023", "ur5"])
def test_position_and_orientation_jacobians_of_every_target_match_finite_differences(name):
    robot = load_ur5_li2023() if name == "ur5_li2023" else load_model(name)
    plain = geometric_model(robot, targets=NEST)
    gm = geometric_model(robot, targets=NEST, base=trans(0.4, -0.3, 0.2) @ rot_x(0.4),
                         hayati_rows=parallel_axis_rows(plain))
    params = gm.nominal + RNG.normal(scale=1e-2, size=gm.size)
    q = RNG.uniform(-2, 2, size=(4, 6))
    Jp, Jr = measurement_jacobians(gm, params, q)
    h = 1e-7
    for k in range(gm.size):
        dp = np.zeros(gm.size)
        dp[k] = h
        num_p = (all_target_positions(gm, params + dp, q) - all_target_positions(gm, params - dp, q)) / (2 * h)
        assert np.allclose(Jp[..., k], num_p, atol=1e-7), gm.names[k]
        for t in range(3):
            R_plus, R_minus = target_rotations(gm, params + dp, q, t), target_rotations(gm, params - dp, q, t)
            num_r = rotation_error(R_plus, R_minus) / (2 * h)  # the small rotation from minus to plus
            assert np.allclose(Jr[:, t, :, k], num_r, atol=1e-6), (gm.names[k], t)


def _mixed_set(gm, params, q):
    """Points of A and C (C missing on two poses), B's full pose, and planar contacts of A."""
    N = q.shape[0]
    pos = all_target_positions(gm, params, q)
    p = pos.copy()
    p[:, 1] = np.nan  # B is measured as a pose below
    p[[1, 4], 2] = np.nan
    rotation = np.full((N, 3, 3, 3), np.nan)
    rotation[:, 1] = target_rotations(gm, params, q, 1)
    p_b = pos[:, 1].copy()
    p[:, 1] = p_b
    plane = np.full((N, 3), -1)
    plane[5:, 0] = 0
    p[5:, 0] = np.nan  # A only touches the plane on those poses
    return MeasurementSet(q, p, sigma=2e-5, rotation=rotation, sigma_rotation=1e-4, plane=plane, sigma_plane=1e-5)


def test_weighted_residual_jacobian_of_mixed_measurements_matches_finite_differences():
    robot = load_ur5_li2023()
    q = RNG.uniform(-2, 2, size=(8, 6))
    gm0 = geometric_model(robot, targets=NEST)
    plane = plane_from_points(all_target_positions(gm0, gm0.nominal, q)[5:, 0]) @ rot_x(0.1) @ trans(z=0.01)
    gm = geometric_model(robot, targets=NEST, planes=[("P", plane)])
    meas = _mixed_set(gm, gm.nominal, q)
    res = Residual(gm, meas)
    assert res.size == 3 * int(meas.point_mask.sum()) + 3 * 8 + 3
    params = gm.nominal + RNG.normal(scale=3e-3, size=gm.size)
    J, Jq = res.jacobian(params, joint=True)
    h = 1e-7
    num = np.column_stack([(res(params + h * e) - res(params - h * e)) / (2 * h) for e in np.eye(gm.size)])
    assert np.allclose(J, num, rtol=1e-5, atol=1e-2)  # weighted rows are ~1e5 per metre
    num_q = np.zeros_like(Jq)
    for j in range(6):
        dq = np.zeros(6)
        dq[j] = h
        diff = (res(params, meas.q + dq) - res(params, meas.q - dq)) / (2 * h)
        num_q[:, j] = diff  # every pose moved: each row depends on its own pose only
    assert np.allclose(Jq, num_q, rtol=1e-5, atol=1e-2)


def test_three_smrs_per_pose_identify_the_nest_and_beat_one():
    robot = load_ur5_li2023()
    gm = geometric_model(robot, targets=[Target(t.name, t.offset) for t in NEST])
    truth = ur5_li2023_truth(gm)
    for k in range(3):
        truth[gm.indices(gm.tool_names(k))] += RNG.normal(scale=2e-4, size=3)
    q = RNG.uniform(-2.5, 2.5, size=(14, 6))
    held = RNG.uniform(-2.5, 2.5, size=(60, 6))
    noise = RNG.normal(scale=3e-5, size=(14, 3, 3))
    three = MeasurementSet(q, all_target_positions(gm, truth, q) + noise, sigma=3e-5)
    one = MeasurementSet(q, three.points[:, :1], sigma=3e-5)
    gm1 = geometric_model(robot, targets=[Target("A", NEST[0].offset)])
    free3 = preset_free_names(gm, "li2023", identify_tool=True)
    free1 = preset_free_names(gm1, "li2023", identify_tool=True)
    r3 = calibrate(gm, three, method="geometric", free_names=free3)
    r1 = calibrate(gm1, one, method="geometric", free_names=free1)
    # every SMR offset is found (the nest itself)
    for k in range(3):
        idx = gm.indices(gm.tool_names(k))
        assert np.allclose(r3.params[idx], truth[idx], atol=1e-4)
    truth_held = MeasurementSet(held, all_target_positions(gm, truth, held)[:, :1])
    e3 = error_stats(r3.errors(truth_held))
    e1 = error_stats(r1.errors(truth_held))
    assert e3["mean_mm"] < 0.7 * e1["mean_mm"]  # three times the equations from the same poses


def test_orientation_measurements_reach_what_a_point_on_the_last_axis_cannot():
    robot = load_ur5_li2023()
    on_axis = Target("probe", (0.0, 0.0, 0.1), oriented=True)
    gm = geometric_model(robot, targets=[on_axis])
    truth = gm.nominal.copy()
    truth[gm.index("alpha6")] += np.deg2rad(0.2)
    truth[gm.index("tool_rz")] = np.deg2rad(0.5)  # the probe frame turned about its own axis
    q = RNG.uniform(-2.5, 2.5, size=(20, 6))
    positions = all_target_positions(gm, truth, q)
    free = ["alpha6", "tool_rz"]
    with pytest.raises(ValueError, match="tool_rz cannot be told apart"):
        fit_geometry(gm, q, MeasurementSet(q, positions), free)
    rotation = target_rotations(gm, truth, q)[:, None]
    pose = MeasurementSet(q, positions, sigma=1e-4, rotation=rotation, sigma_rotation=2e-4)
    fit = fit_geometry(gm, q, pose, free)
    assert np.rad2deg(fit.params[gm.index("tool_rz")]) == pytest.approx(0.5, abs=1e-6)
    with pytest.raises(ValueError, match="sigma_rot: orientation measurements need their stated noise"):
        MeasurementSet(q, positions, rotation=rotation)


def test_stated_noise_weights_the_fit():
    # a precise tracker target and a noisy second target: weighting by the stated noise beats equal weights
    robot = load_ur5_li2023()
    gm = geometric_model(robot, targets=[Target("precise", (0.05, 0.0, 0.04)), Target("coarse", (-0.05, 0.0, 0.04))])
    truth = ur5_li2023_truth(gm)
    q = RNG.uniform(-2.5, 2.5, size=(30, 6))
    held = RNG.uniform(-2.5, 2.5, size=(60, 6))
    p = all_target_positions(gm, truth, q)
    p[:, 0] += RNG.normal(scale=1e-5, size=(30, 3))
    p[:, 1] += RNG.normal(scale=1e-3, size=(30, 3))
    sigma = np.column_stack([np.full(30, 1e-5), np.full(30, 1e-3)])
    free = preset_free_names(gm, "li2023")
    weighted = calibrate(gm, MeasurementSet(q, p, sigma=sigma), method="geometric", free_names=free)
    equal = calibrate(gm, MeasurementSet(q, p), method="geometric", free_names=free)
    truth_held = MeasurementSet(held, all_target_positions(gm, truth, held)[:, :1])
    assert error_stats(weighted.errors(truth_held))["mean_mm"] < 0.3 * error_stats(equal.errors(truth_held))["mean_mm"]
    assert weighted.chi2 == pytest.approx(1.0, rel=0.5)  # the stated noise was right


def test_planar_contacts_identify_the_geometry_without_an_external_sensor():
    robot = load_ur5_li2023()
    gm0 = geometric_model(robot, tool_offset=(0.0, 0.0, 0.05))
    truth0 = ur5_li2023_truth(gm0)
    planes_true = [trans(0.45, 0.0, -0.05), trans(0.5, 0.3, 0.1) @ rot_x(-1.2), trans(0.55, -0.3, 0.1) @ rot_x(1.2)]
    # poses whose tip touches each true plane: numeric IK of the true robot onto points of the planes
    from robodyn.calibration.parameters import robot_for
    from robodyn.robot.kinematics import inverse_kinematics

    true_robot = robot_for(gm0, truth0)
    rows, labels = [], []
    q_guess = np.array([0.0, -1.6, -1.6, -1.5, 1.57, 0.0])
    for j, P in enumerate(planes_true):
        for _ in range(40):
            local = np.array([RNG.uniform(-0.12, 0.12), RNG.uniform(-0.12, 0.12), 0.0, 1.0])
            target = (P @ local)[:3]
            q0 = q_guess + RNG.normal(scale=0.4, size=6)
            r = inverse_kinematics(true_robot, target, q0, position_only=True, point_in_tool=np.array([0, 0, 0.05]),
                                   tol_position=1e-12)
            if r.success:
                rows.append(r.q)
                labels.append(j)
    q = np.array(rows)
    assert len(q) > 90
    nominal_pts = all_target_positions(gm0, gm0.nominal, q)[:, 0]
    planes = [(name, plane_from_points(nominal_pts[np.array(labels) == j])) for j, name in enumerate("ABC")]
    gm = geometric_model(robot, tool_offset=(0.0, 0.0, 0.05), planes=planes)
    truth = gm.nominal.copy()
    truth[:gm0.size] = truth0
    meas = MeasurementSet(q, None, plane=np.array(labels)[:, None], sigma_plane=1e-5)
    free = [n for n in preset_free_names(gm, "li2023") if not n.startswith(("d3", "d4"))]
    result = calibrate(gm, meas, method="geometric", free_names=free)
    contact = Residual(gm, meas).contact_errors(result.params, q)
    assert np.max(contact) < 1e-6  # every contact back on its plane
    held = RNG.uniform(-2.0, 2.0, size=(60, 6))
    truth_held = MeasurementSet(held, all_target_positions(gm, truth, held))
    from robodyn.calibration.methods import nominal_result

    # distances to the planes fix the geometry up to the rigid motion the planes cannot see
    assert error_stats(result.errors(truth_held))["mean_mm"] < 0.5 * error_stats(nominal_result(gm).errors(truth_held))["mean_mm"]


def test_metric_jacobian_is_the_unweighted_residual_slope_with_angles_as_arc_length():
    # rows in metres: a point row is d(position residual)/dp, an orientation row is
    # ANGLE_LENGTH (0.5 m) x d(angle residual)/dp; checked against central differences of the raw residual
    robot = load_ur5_li2023()
    gm = geometric_model(robot, targets=[NEST[0], NEST[1]])
    params = ur5_li2023_truth(gm)
    q = RNG.uniform(-2.5, 2.5, size=(4, 6))
    rotation = np.full((4, 2, 3, 3), np.nan)  # target B is the oriented one
    rotation[:, 1] = target_rotations(gm, params, q, target=1)
    meas = MeasurementSet(q, all_target_positions(gm, params, q), sigma=1e-5, rotation=rotation, sigma_rotation=1e-4)
    res = Residual(gm, meas)
    J = res.metric_jacobian(params)
    idx = [gm.index("a3"), gm.index("theta2"), gm.index("d4")]
    h = 1e-7
    for col in idx:
        step = np.zeros_like(params)
        step[col] = h
        fd = (res.raw(params + step) - res.raw(params - step)) / (2 * h)
        fd[res.kind == 1] *= 0.5
        assert np.allclose(J[:, col], fd, atol=1e-6), gm.names[col]
    assert np.any(res.kind == 1) and np.any(res.kind == 0)
    # labels: pose id, and the target's name once a pose has several targets
    assert res.point_labels()[:2] == ["P001 A", "P001 B"]
    single = Residual(geometric_model(robot, targets=[NEST[0]]), MeasurementSet(q, meas.points[:, :1]))
    assert single.point_labels() == ["P001", "P002", "P003", "P004"]


def test_a_single_point_per_pose_and_unmeasured_poses_named():
    one = MeasurementSet(np.zeros(6), [0.1, 0.2, 0.3])
    assert one.points.shape == (1, 1, 3) and one.p.tolist() == [[0.1, 0.2, 0.3]]
    p = np.full((3, 1, 3), np.nan)
    p[0, 0] = [0.1, 0.2, 0.3]
    with pytest.raises(ValueError, match="measurements: pose P002 has no measurement"):
        MeasurementSet(np.zeros((3, 6)), p)
