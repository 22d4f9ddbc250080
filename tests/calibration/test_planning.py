import numpy as np
import pytest

from robodyn.calibration.planning import (Plan, check_configurations, flange_targets, iso9283_points,
                                          plan_measurements, sample_poses, segment_distance)
from robodyn.robot.kinematics import forward_kinematics


def test_segment_distance_matches_dense_sampling():
    rng = np.random.default_rng(0)
    t = np.linspace(0, 1, 400)
    for _ in range(20):
        p1, q1, p2, q2 = rng.normal(size=(4, 3))
        a = p1 + t[:, None] * (q1 - p1)
        b = p2 + t[:, None] * (q2 - p2)
        brute = np.min(np.linalg.norm(a[:, None] - b[None], axis=-1))
        d = float(segment_distance(p1, q1, p2, q2))
        assert d <= brute + 1e-12 and brute - d < 5e-3
    # parallel and degenerate segments
    assert np.isclose(segment_distance(np.zeros(3), np.array([1.0, 0, 0]), np.array([0.5, 1.0, 0]), np.array([2.0, 1.0, 0])), 1.0)
    assert np.isclose(segment_distance(np.zeros(3), np.zeros(3), np.array([0, 2.0, 0]), np.array([0, 3.0, 0])), 2.0)


def test_test_cube_and_poses_pass_every_check(ur5_robot, ur5_setup, ur5_cube):
    cube, q_ref = ur5_cube
    assert 0.2 < cube.edge < 0.8  # UR5 reach 850 mm (seed 004); the ball faces a tracker 2 m away
    poses = sample_poses(ur5_robot, ur5_setup, cube, 40, q_ref, seed=3)
    checks = check_configurations(ur5_robot, poses.q, ur5_setup)
    assert checks["valid"].all()
    assert np.all(np.abs(poses.positions - cube.center) <= cube.edge / 2 + 1e-12)
    T = forward_kinematics(ur5_robot, poses.q)
    ball = T[:, :3, :3] @ np.array(ur5_setup.tool_offset) + T[:, :3, 3]
    assert np.allclose(ball, poses.positions, atol=1e-9)
    again = sample_poses(ur5_robot, ur5_setup, cube, 40, q_ref, seed=3)
    assert np.array_equal(again.q, poses.q)  # deterministic by seed
    assert not np.allclose(sample_poses(ur5_robot, ur5_setup, cube, 40, q_ref, seed=4).q, poses.q)


def test_checks_reject_singular_colliding_hidden_and_buried_configurations(ur5_robot, ur5_setup, ur5_cube):
    _, q_ref = ur5_cube
    assert check_configurations(ur5_robot, q_ref, ur5_setup)["valid"][0]
    wrist = q_ref.copy()
    wrist[4] = 0.0  # joint 5 at zero: joints 4 and 6 line up
    elbow = q_ref.copy()
    elbow[2] = 0.0  # stretched elbow
    folded = q_ref.copy()
    folded[2] = np.deg2rad(-175.0)  # forearm folded back onto the upper arm
    away = q_ref.copy()
    away[0] += np.pi  # the ball now faces away from the tracker
    down = q_ref.copy()
    down[1] += np.deg2rad(-100.0)  # upper arm into the table
    checks = check_configurations(ur5_robot, np.array([wrist, elbow, folded, away, down]), ur5_setup)
    assert not checks["nonsingular"][0] and not checks["nonsingular"][1]
    assert not checks["collision_free"][2]
    assert not checks["line_of_sight"][3]
    assert not checks["collision_free"][4]
    assert not checks["valid"].any()


def test_iso9283_points_lie_on_the_diagonal_plane_at_ten_percent(ur5_cube):
    cube, _ = ur5_cube
    P = iso9283_points(cube)
    assert np.allclose(P[0], cube.center)
    h = cube.edge / 2
    corners = cube.center + np.array([[-h, -h, -h], [h, -h, -h], [h, h, h], [-h, h, h]])
    diagonal = np.sqrt(3) * cube.edge  # the diagonal plane is edge x edge*sqrt(2): its diagonal is the cube's
    for p, c in zip(P[1:], corners):
        assert np.isclose(np.linalg.norm(p - c), 0.1 * diagonal)
    # all five on the plane through the (y-, z-) and (y+, z+) edges: y - z constant
    assert np.allclose((P[:, 1] - cube.center[1]) - (P[:, 2] - cube.center[2]), 0.0)


def test_flange_targets_point_the_ball_at_the_tracker(ur5_setup):
    p = np.array([[0.5, 0.1, 0.2], [0.4, -0.2, 0.3]])
    T = flange_targets(ur5_setup, p, np.zeros(2), np.zeros(2), np.array([0.0, 1.0]))
    opening = T[:, :3, :3] @ np.array(ur5_setup.smr_axis)
    beam = np.array(ur5_setup.tracker_position) - p
    assert np.allclose(opening, beam / np.linalg.norm(beam, axis=1, keepdims=True))
    assert np.allclose(T[:, :3, :3] @ np.array(ur5_setup.tool_offset) + T[:, :3, 3], p)


def test_plan_round_trips_through_json(ur5_robot, ur5_setup, ur5_cube):
    cube, q_ref = ur5_cube
    plan = plan_measurements(ur5_robot, ur5_setup, 12, seed=1, cube=cube, q_ref=q_ref)
    back = Plan.from_dict(plan.to_dict())
    assert np.array_equal(back.q, plan.q) and back.ids[0] == "P001" and back.setup == plan.setup
    with pytest.raises(ValueError, match="plan"):
        Plan.from_dict({"format": "something else"})


def test_detmax_exchange_leaves_no_improving_swap_and_beats_greedy():
    from robodyn.calibration.planning import _log_det, select_d_optimal

    rng = np.random.default_rng(3)
    blocks = rng.normal(size=(40, 3, 7)) * rng.uniform(0.2, 2.0, size=(40, 1, 1))
    greedy = select_d_optimal(blocks, 9, exchange=False)
    chosen = select_d_optimal(blocks, 9)
    assert len(set(chosen.tolist())) == 9
    best = _log_det(blocks, chosen, 1e-9)
    assert best > _log_det(blocks, greedy, 1e-9) + 1e-6  # greedy's early picks were worth a second look
    for slot in range(9):  # DetMax's stopping rule: no single exchange raises the determinant
        for cand in sorted(set(range(40)) - set(chosen.tolist())):
            trial = chosen.copy()
            trial[slot] = cand
            assert _log_det(blocks, trial, 1e-9) <= best + 1e-9


def test_joint_space_plan_for_an_arm_without_closed_form_ik(tmp_path, capsys):
    # heavy6: coupled J2/J3, numeric IK only; the plan draws controller values in the given ranges
    import json

    from robodyn.calibration.robots import load_robot
    from robodyn.calibration.planning import CellSetup
    from robodyn.cli import main

    out = tmp_path / "plan.json"
    assert main(["calibrate", "plan", "--robot", "heavy6", "--poses", "12", "--optimal", "80", "--joint-space",
                 "--joint-range", "2:-30:50", "--joint-range", "3:-40:30", "--tool", "0.0693,0,0.06",
                 "--tracker", "3.5,0,1.0", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["selection"].startswith("d-optimal") and summary["identifiability"]["rank"] > 15
    assert summary["log_det"]["exchange"] >= summary["log_det"]["greedy"] > summary["log_det"]["first_drawn"]
    robot = load_robot("heavy6")
    q = np.array([p["q"] for p in json.loads(out.read_text())["poses"]])
    qc = np.rad2deg(robot.joint_map.to_controller(q))
    assert np.all((qc[:, 1] >= -30) & (qc[:, 1] <= 50) & (qc[:, 2] >= -40) & (qc[:, 2] <= 30))
    setup = CellSetup(tracker_position=(3.5, 0.0, 1.0), tool_offset=(0.0693, 0.0, 0.06))
    assert check_configurations(robot, q, setup)["valid"].all()
