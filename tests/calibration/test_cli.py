"""`robodyn calibrate ...` end to end through the console entry point."""

import json
import sys

import numpy as np
import pytest

from robodyn.calibration.result_file import result_from_dict
from robodyn.calibration.robots import load_robot
from robodyn.calibration.parameters import robot_for
from robodyn.calibration.paper_replay import format_replay
from robodyn.cli import main
from robodyn.robot.kinematics import forward_kinematics
from robodyn.robot.urdf import model_from_urdf

LOAD = "4.678,0,-0.03686,0.02985"


def run(capsys, *argv, prefix=("calibrate",)):
    code = main([*prefix, *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("calibrate")


@pytest.fixture(scope="module")
def calibrated(workdir):
    """plan -> measure (unloaded, loaded) -> identify, as a user would; returns the paths."""
    d = workdir
    assert main(["calibrate", "plan", "--robot", "ur5_li2023", "--poses", "40", "--loaded", "16", "--seed", "2", "--out", str(d / "poses.json")]) == 0
    assert main(["calibrate", "measure", str(d / "poses.json"), "--out", str(d / "meas.csv"), "--units", "mm"]) == 0
    assert main(["calibrate", "measure", str(d / "poses.json"), "--load", LOAD, "--out", str(d / "meas_load.csv")]) == 0
    assert main(["calibrate", "identify", str(d / "meas.csv"), "--robot", "ur5_li2023", "--loaded",
                 str(d / "meas_load.csv"), "--out", str(d / "calib.json")]) == 0
    return d


def test_plan_measure_identify_evaluate(calibrated, capsys):
    d = calibrated
    plan = json.loads((d / "poses.json").read_text())
    assert len(plan["poses"]) == 40 and len(plan["loaded_pose_ids"]) == 16
    loaded_ids = [l.split(",")[0] for l in (d / "meas_load.csv").read_text().splitlines()
                  if not l.startswith(("#", "pose_id"))]
    assert loaded_ids == plan["loaded_pose_ids"]  # the loaded run measured the plan's loaded subset
    code, out, _ = run(capsys, "identify", str(d / "meas.csv"), "--robot", "ur5_li2023", "--loaded",
                       str(d / "meas_load.csv"), "--out", str(d / "calib2.json"), "--json")
    assert code == 0
    rep = json.loads(out)
    assert rep["units"] == {"position": "mm", "angle": "rad", "joint_values": "controller"}
    assert rep["method"] == "combined"  # what a loaded set supports
    assert rep["evaluation"]["loaded"]["after"]["mean_mm"] < 0.1 < rep["evaluation"]["loaded"]["before"]["mean_mm"]
    assert "d3" in [x["name"] for x in rep["dropped"]]
    # held-out poses: a second plan with another seed, measured with fresh noise
    assert main(["calibrate", "plan", "--robot", "ur5_li2023", "--poses", "60", "--seed", "9",
                 "--out", str(d / "hold.json")]) == 0
    assert main(["calibrate", "measure", str(d / "hold.json"), "--seed", "5", "--load", LOAD, "--subset", "all",
                 "--out", str(d / "hold_load.csv")]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "evaluate", str(d / "calib.json"), str(d / "hold_load.csv"), "--json", "--per-pose")
    assert code == 0
    ev = json.loads(out)
    assert ev["load"]["mass_kg"] == 4.678  # taken from the CSV metadata
    assert ev["after"]["mean_mm"] < 0.06 and ev["before"]["mean_mm"] > 1.0 and ev["max_reduction"] > 0.9
    assert len(ev["per_point_mm"]["after"]) == 60
    code, out, _ = run(capsys, "evaluate", str(d / "calib.json"), str(d / "hold_load.csv"))
    assert code == 0 and "before: nominal model (base frame as measured)" in out and "after (combined)" in out
    assert "before: nominal model + base fitted to this set" in out


def test_compensate(calibrated, capsys):
    code, out, _ = run(capsys, "compensate", str(calibrated / "calib.json"), "--target", "0.6,0.05,0.2,1.2,1.2,1.2",
                       "--load", LOAD, "--json")
    assert code == 0
    rep = json.loads(out)
    assert rep["predicted_error_before_mm"] > 1.0 and rep["predicted_error_after_mm"] < 1e-4
    assert np.max(np.abs(rep["correction_deg"])) < 1.0
    code, out, _ = run(capsys, "compensate", str(calibrated / "calib.json"), "--target", "0.6,0.05,0.2",
                       "--q0", "0.2,-1.8,-2,0.5,1.5,0", "--json")
    assert code == 0 and json.loads(out)["predicted_error_after_mm"] < 1e-4
    code, _, err = run(capsys, "compensate", str(calibrated / "calib.json"), "--target", "0.6,0.05,0.2")
    assert code == 2 and "--q0" in err


def test_export_urdf_reproduces_the_calibrated_kinematics(calibrated, capsys):
    path = calibrated / "calibrated.urdf"
    assert main(["export-urdf", str(calibrated / "calib.json"), "--out", str(path)]) == 0  # one command for a URDF
    code, _, err = run(capsys, "export-urdf", str(calibrated / "calib.json"), "--out", str(path))  # the old name
    assert code == 0 and "deprecated, use `robodyn export-urdf" in err
    result = result_from_dict(json.loads((calibrated / "calib.json").read_text()))
    model = model_from_urdf(path)
    q = np.random.default_rng(0).uniform(-2, 2, size=(10, 6))
    assert np.allclose(forward_kinematics(model, q), forward_kinematics(robot_for(result.gm, result.params), q), atol=1e-12)
    assert not np.allclose(forward_kinematics(model, q), forward_kinematics(load_robot("ur5_li2023"), q), atol=1e-5)
    assert "joint stiffness" in path.read_text()


def test_identifiability_command(capsys):
    code, out, _ = run(capsys, "identifiability", "--robot", "ur5_li2023", "--at", "li2023-truth", "--json")
    assert code == 0
    rep = json.loads(out)
    assert rep["requested"]["rank"] == 18 and rep["requested"]["condition_number"] > 1e6
    assert rep["after_dropping_structural_redundancies"]["parameter_count"] == 16
    code, out, _ = run(capsys, "identifiability", "--robot", "ur5_li2023")
    assert code == 0 and "redundant: d3 ≈ +1·d2" in out
    code, _, err = run(capsys, "identifiability")
    assert code == 2 and "--robot: required" in err


def test_replay_prints_table4_rows(capsys, replay_report):
    code, out, err = run(capsys, "replay", "--check-poses", "40", "--json")
    assert code == 0 and "use `robodyn reproduce calibration`" in err
    rep = json.loads(out)
    rows = rep["table4_mm"]["loaded"]["held_out_true"]
    assert list(rows) == ["nominal", "geometric", "geometric-stiffness", "combined"]
    assert rows["combined"]["mean_mm"] < rows["geometric-stiffness"]["mean_mm"] < rows["geometric"]["mean_mm"]
    assert "_per_pose_mm" not in rep and rep["paper"]["table5_max_reduction"] == {"no_load": 0.755, "loaded": 0.851}
    text = format_replay(replay_report)  # the text form of the same report
    assert "Table 4" in text and "geometric then stiffness" in text and "Table 5" in text
    assert "rank 16/18" in text and "d3 ≈ +1·d2" in text


def test_bad_input_gives_one_line_errors(calibrated, tmp_path, capsys):
    code, _, err = run(capsys, "identify", str(calibrated / "meas.csv"), "--robot", "ur5_li2023", "--loaded",
                       str(calibrated / "meas_load.csv"), "--units", "m", "--out", str(tmp_path / "x.json"))
    assert code == 2 and "units: m was given but the file says mm" in err
    code, _, err = run(capsys, "measure", str(calibrated / "poses.json"), "--load", "4.678,0,-36.86,29.85",
                       "--out", str(tmp_path / "x.csv"))
    assert code == 2 and "load.com" in err and "millimetres" in err
    code, _, err = run(capsys, "measure", str(calibrated / "poses.json"), "--daemon", "tcp://robot",
                       "--out", str(tmp_path / "x.csv"))
    assert code == 2 and "robodyn calibrate collect" in err
    few = tmp_path / "few.csv"
    lines = (calibrated / "meas.csv").read_text().splitlines()
    head = sum(1 for l in lines if l.startswith("#")) + 1
    few.write_text("\n".join(lines[:head + 7]) + "\n")  # metadata + header + 7 poses
    code, _, err = run(capsys, "identify", str(few), "--robot", "ur5_li2023", "--method", "geometric", "--units",
                       "mm", "--angles", "rad", "--out", str(tmp_path / "x.json"))
    assert code == 2 and "poses: 7 poses" in err
    # tracker-frame data: refused without --identify-base, calibrated with it
    moved = tmp_path / "tracker.csv"
    out_lines = []
    for line in lines:
        if line.startswith("#") or line.startswith("pose_id"):
            out_lines.append(line)
            continue
        f = line.split(",")
        x, y, z = (float(v) for v in f[-3:])
        out_lines.append(",".join(f[:-3] + [repr(-y + 1500.0), repr(x + 800.0), repr(z - 300.0)]))
    moved.write_text("\n".join(out_lines) + "\n")
    code, _, err = run(capsys, "identify", str(moved), "--robot", "ur5_li2023", "--out", str(tmp_path / "x.json"))
    assert code == 2 and "not in the robot base frame" in err
    code, out, _ = run(capsys, "identify", str(moved), "--robot", "ur5_li2023", "--identify-base",
                       "--out", str(tmp_path / "x.json"), "--json")
    rep = json.loads(out)
    assert code == 0 and rep["evaluation"]["no_load"]["after"]["mean_mm"] < 0.3
    assert rep["method"] == "geometric"  # unloaded-only data: the default is what they support
    assert rep["base_frame"].startswith("fitted to the identification set")


def test_plot_writes_a_png_or_says_matplotlib_is_missing(calibrated, tmp_path, capsys, monkeypatch):
    png = tmp_path / "errors.png"
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    code, _, err = run(capsys, "evaluate", str(calibrated / "calib.json"), str(calibrated / "meas.csv"),
                       "--plot", str(png))
    assert code == 2 and "matplotlib is not installed" in err and not png.exists()
    monkeypatch.undo()
    pytest.importorskip("matplotlib", reason="plots need the `plot` extra (installed by make test)")
    code, _, _ = run(capsys, "evaluate", str(calibrated / "calib.json"), str(calibrated / "meas.csv"), "--plot", str(png))
    assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_reproduce_calibration_plot_writes_both_pngs(tmp_path, capsys, monkeypatch, replay_report):
    """`robodyn reproduce calibration --part ur5 --plot PREFIX` (the replacement of `calibrate replay --plot`)
    draws the held-out error per pose of every method: two PNGs with a line per method."""
    import copy

    from robodyn.calibration import paper_replay

    mpimg = pytest.importorskip("matplotlib.image", reason="plots need the `plot` extra (installed by make test)")
    asked = []

    def session_replay(**kw):  # the session's replay (seed 0, 200 held out) is the run the command asks for
        asked.append(kw)
        return copy.deepcopy(replay_report)

    monkeypatch.setattr(paper_replay, "run_paper_replay", session_replay)
    code, out, err = run(capsys, "reproduce", "calibration", "--part", "ur5", "--plot", str(tmp_path / "li"), prefix=())
    assert asked == [{"seed": 0, "holdout": 200}]
    assert code == 0 and "Table 4" in out and "li_no_load.png" in err
    for cond in ("no_load", "loaded"):
        png = tmp_path / f"li_{cond}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        img = mpimg.imread(png)[..., :3].reshape(-1, 3)
        methods = replay_report["_per_pose_mm"][cond]
        assert len(methods) >= 4
        # a line per method, in matplotlib's default colour cycle. Loaded, every line shows; unloaded,
        # geometric-stiffness is the geometric fit (no payload to twist the joints) drawn over it
        cycle = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"][:len(methods)]
        shown = [np.count_nonzero(np.abs(img - np.array([int(h[k:k + 2], 16) / 255 for k in (1, 3, 5)])).max(axis=1)
                                  < 0.02) > 200 for h in cycle]
        assert sum(shown) >= (len(methods) if cond == "loaded" else len(methods) - 1), (cond, shown)
    code, _, err = run(capsys, "reproduce", "wso", "--plot", str(tmp_path / "w"), prefix=())
    assert code == 2 and err.count("\n") == 1 and "plot: only calibration" in err
    code, _, err = run(capsys, "reproduce", "calibration", "--plot", str(tmp_path / "nowhere" / "li"), prefix=())
    assert code == 2 and "does not exist" in err
