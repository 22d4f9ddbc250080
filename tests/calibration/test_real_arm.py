"""Calibrating a real arm: a heavy arm with a FANUC-style coupled J2/J3 and reversed axes, measured
with three SMRs per pose in the tracker's frame, goes through identify / evaluate / compensate /
export-urdf without any hand conversion. The arm is the plant of calibration/heavy_arm.py (bending
links, true masses, a joint tilt beyond the DH parameters): the model never matches it exactly."""

import json

import numpy as np
import pytest

from robodyn.calibration.robots import load_robot
from robodyn.calibration.heavy_arm import (NEST, SWEEP_HOME, SWEEP_SPANS, HeavyArmPlant, HeavyArmTruth, heavy_arm_poses,
                                       single_axis_sweeps)
from robodyn.cli import main
from robodyn.robot.kinematics import forward_kinematics
from robodyn.robot.loader import load_model

NEST_META = "; ".join(f"{n}: {o[0]}, {o[1]}, {o[2]}" for n, o in NEST)


def write_tracker_export(path, ids, q_controller, points):
    """What a lab has: the controller's joint log (deg) beside a tracker export of three SMRs (mm)."""
    header = ["Point"] + [f"J{j + 1} [deg]" for j in range(6)]
    for k in range(3):
        header += [f"X{k + 1} [mm]", f"Y{k + 1} [mm]", f"Z{k + 1} [mm]"]
    lines = ["# heavy arm, nest of three SMRs, tracker frame", "# robot = heavy6", f"# targets = {NEST_META}",
             ";".join(header)]
    for i, pid in enumerate(ids):
        vals = [pid] + [f"{v:.6f}" for v in np.rad2deg(q_controller[i])] + [f"{v * 1000:.4f}" for v in points[i].reshape(-1)]
        lines.append(";".join(vals))
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    d = tmp_path_factory.mktemp("heavy")
    robot = load_robot("heavy6")
    plant = HeavyArmPlant(robot, HeavyArmTruth(seed=3))
    q_id = single_axis_sweeps(SWEEP_HOME, SWEEP_SPANS, 6)
    write_tracker_export(d / "sweeps.csv", [f"S{k + 1:02d}" for k in range(len(q_id))], q_id, plant.points(q_id))
    q_held = heavy_arm_poses(robot, 30, seed=77, j2=(-30, 34), j3=(-35, 25))
    q_held[:, 4] = np.deg2rad(np.random.default_rng(78).uniform(-75, 35, 30))  # inside the sweeps' J5 range
    q_held[0, 1] = np.deg2rad(50.0)  # beyond the sweeps' J2 range, like the FANUC data set's held-out pose
    write_tracker_export(d / "held.csv", [f"H{k + 1:02d}" for k in range(len(q_held))], q_held, plant.points(q_held))
    return d, plant, q_held


def run(capsys, *argv):
    code = main(["calibrate", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_coupled_arm_model_states_its_joint_map():
    from robodyn.robot.kinematics import joint_frames

    robot = load_robot("heavy6")
    jm = robot.joint_map
    assert jm.describe()[2] == "q3 = -J2 - J3"  # the model's elbow turns with J2 and J3
    q = np.deg2rad([[0, 0, 0, 0, 0, 0], [0, 25, 0, 0, 0, 0], [0, 25, 20, 0, 0, 0]])
    forearm = joint_frames(robot, jm.to_model(q))[:, 3, :3, 2]  # joint 4's axis runs along the forearm
    # J3 is the forearm's pitch from the horizontal: J2 alone leaves the forearm level, J3 raises it
    assert np.allclose(forearm[0], forearm[1], atol=1e-12) and abs(forearm[0, 2]) < 1e-12
    assert np.rad2deg(np.arcsin(forearm[2, 2])) == pytest.approx(20.0)


def test_identify_evaluate_compensate_without_hand_conversion(arm, capsys, tmp_path):
    d, plant, q_held = arm
    calib = d / "calib.json"
    code, out, err = run(capsys, "identify", str(d / "sweeps.csv"), "--robot", "heavy6", "--identify-base",
                         "--identify-tool", "--method", "combined-gravity", "--out", str(calib))
    assert code == 0, err
    assert "37 poses: 111 points of SMR1, SMR2, SMR3" in out
    assert "before: nominal model (base fitted to the identification set)" in out
    doc = json.loads(calib.read_text())
    assert doc["units"] == {"position": "mm", "angle": "deg", "joint_values": "controller"}
    assert [t["name"] for t in doc["targets"]] == ["SMR1", "SMR2", "SMR3"]
    # the nest was identified: its shape (the SMRs' distances; where it sits on the flange trades off
    # against the last DH row) matches the true nest, which differs from the nominal one by ~0.15 mm
    found = np.array([[doc["parameters"][f"{name}_{a}"]["identified"] for a in "xyz"] for name in ("tool", "tool2", "tool3")])
    true = np.array([plant.params[plant.gm.indices(plant.gm.tool_names(k))] for k in range(3)])
    for a, b in ((0, 1), (0, 2), (1, 2)):
        assert np.linalg.norm(found[a] - found[b]) == pytest.approx(np.linalg.norm(true[a] - true[b]), abs=5e-5)
    # the same file read as if its joint values were the model's does not fit: the coupling matters
    code, _, err = run(capsys, "identify", str(d / "sweeps.csv"), "--robot", "heavy6", "--identify-base",
                       "--joint-values", "model", "--units", "mm", "--angles", "deg", "--out", str(tmp_path / "x.json"))
    assert code == 2 and "do not match the nominal robot" in err

    code, out, err = run(capsys, "evaluate", str(calib), str(d / "held.csv"), "--json")
    assert code == 0, err
    ev = json.loads(out)
    assert ev["after"]["max_mm"] < 0.5 * ev["before"]["max_mm"]
    assert ev["before_base_fitted"]["mean_mm"] <= ev["before"]["mean_mm"] + 1e-9
    assert [f["pose"] for f in ev["outside_identification_ranges"]] == ["H01"]
    assert ev["outside_identification_ranges"][0]["joints"] == [2]

    # compensation: the controller angles it hands back put the real arm's SMR1 on the target
    q_star = q_held[5]
    target = plant.points(q_star[None], noise=False)[0, 0] + np.array([0.002, -0.001, 0.0015])
    code, out, err = run(capsys, "compensate", str(calib), "--target=" + ",".join(map(str, target)),
                         "--q0=" + ",".join(map(str, q_star)), "--json")
    assert code == 0, err
    comp = json.loads(out)
    assert comp["joint_values"] == "controller"
    q_comp, q_nom = np.array(comp["q_compensated_rad"]), np.array(comp["q_nominal_rad"])
    reached = plant.points(q_comp[None], noise=False)[0, 0]
    missed = plant.points(q_nom[None], noise=False)[0, 0]
    assert np.linalg.norm(reached - target) < 0.15e-3
    assert np.linalg.norm(reached - target) < 0.25 * np.linalg.norm(missed - target)
    # they are controller values: the model's elbow variable differs from the controller's J3
    jm = load_robot("heavy6").joint_map
    assert np.allclose(jm.to_model(q_comp), comp["q_model_compensated_rad"], atol=1e-12)
    assert not np.allclose(q_comp[2], comp["q_model_compensated_rad"][2], atol=1e-3)


def test_export_urdf_of_a_coupled_arm_keeps_the_joint_map_beside_it(arm, capsys, tmp_path):
    d, _, _ = arm
    calib = tmp_path / "calib.json"
    assert main(["calibrate", "identify", str(d / "sweeps.csv"), "--robot", "heavy6", "--identify-base",
                 "--out", str(calib)]) == 0
    capsys.readouterr()
    code, _, err = run(capsys, "export-urdf", str(calib))
    assert code == 2 and "coupling" in err
    code, out, _ = run(capsys, "export-urdf", str(calib), "--out", str(tmp_path / "arm.urdf"))
    assert code == 0 and "arm.toml" in out
    exported = load_model(tmp_path / "arm.toml")
    assert exported.joint_map.describe()[2] == "q3 = -J2 - J3"
    from robodyn.calibration.result_file import result_from_dict
    from robodyn.calibration.parameters import robot_for

    result = result_from_dict(json.loads(calib.read_text()))
    qc = np.deg2rad(np.random.default_rng(0).uniform(-30, 30, size=(5, 6)))
    assert np.allclose(forward_kinematics(exported, exported.joint_map.to_model(qc)),
                       forward_kinematics(robot_for(result.gm, result.params), result.gm.robot.joint_map.to_model(qc)),
                       atol=1e-12)


def test_sweeps_warn_of_poorly_identifiable_parameters_in_the_text(arm, capsys, tmp_path):
    d, _, _ = arm
    code, out, _ = run(capsys, "identify", str(d / "sweeps.csv"), "--robot", "heavy6", "--identify-base",
                       "--out", str(tmp_path / "g.json"))
    assert code == 0
    line = next(l for l in out.splitlines() if "poorly identifiable" in l)
    assert line.startswith("warning: ") and "condition number" in line
    doc = json.loads((tmp_path / "g.json").read_text())
    poor = doc["identifiability"]["identified"]["poorly_identifiable"]
    assert len(poor) >= 5 and not any(f" {n}," in line for n in poor)  # advice, not a list of names
    # the advice: a subset chosen by cross-validation on the identification poses, with its predicted error
    advice = doc["identifiability_advice"]
    assert "cross-validation" in line and f"{advice['predicted_rms_mm']:.3f} mm" in line
    rms = [c["cv_rms_mm"] for c in advice["candidates"]]
    assert advice["predicted_rms_mm"] == min(r for r in rms if r == r)
    assert advice["candidates"][0]["fixed"] == [] and advice["all_free_rms_mm"] == rms[0]
    if advice["suggested_fixed"]:
        assert f"--free {','.join(advice['suggested_free'])}" in line
        assert set(advice["suggested_free"]) | set(advice["suggested_fixed"]) == set(doc["free_parameters"])
