"""Warnings people read: one line each in the text output (not only in the JSON), and the CLI
rules around them (--robot required, the default method, a closed pipe)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from robodyn.calibration.measurement_csv import write_measurements_csv
from robodyn.calibration.measurements import MeasurementSet
from robodyn.calibration.planning import sample_poses
from robodyn.calibration.simulation import measure_poses, ur5_li2023_cell
from robodyn.cli import main


def run(capsys, *argv):
    code = main(["calibrate", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def files(tmp_path_factory, ur5_robot, ur5_setup, ur5_cube):
    d = tmp_path_factory.mktemp("warnings")
    cube, q_ref = ur5_cube
    q = sample_poses(ur5_robot, ur5_setup, cube, 40, q_ref, seed=41).q
    gm, cell = ur5_li2023_cell(seed=6)
    meas = measure_poses(cell, q)
    write_measurements_csv(d / "clean.csv", meas, robot="ur5_li2023", tool=np.array(gm.targets[0].offset))
    bad = MeasurementSet(meas.q, meas.p.copy(), meas.ids)
    bad.p[4] += [0.0015, 0.0, 0.0]  # a beam that caught the wrong reflector
    bad.p[17] += [0.0, -0.001, 0.0012]
    write_measurements_csv(d / "outliers.csv", bad, robot="ur5_li2023", tool=np.array(gm.targets[0].offset))
    assert main(["calibrate", "identify", str(d / "clean.csv"), "--robot", "ur5_li2023", "--out", str(d / "calib.json")]) == 0
    # poses that stretch joint 2 beyond the identification range
    far = q[:6].copy()
    lo, hi = q[:, 1].min(), q[:, 1].max()
    far[2, 1] = hi + np.deg2rad(12.0)
    far[4, 1] = lo - np.deg2rad(7.0)
    write_measurements_csv(d / "far.csv", measure_poses(cell, far), robot="ur5_li2023",
                           tool=np.array(gm.targets[0].offset))
    return d, np.rad2deg([lo, hi]), np.rad2deg(far[:, 1])


def test_residual_outliers_are_named_and_a_robust_loss_handles_them(files, capsys):
    d, _, _ = files
    code, out, _ = run(capsys, "identify", str(d / "outliers.csv"), "--robot", "ur5_li2023", "--out", str(d / "o.json"))
    assert code == 0
    lines = [l for l in out.splitlines() if "residual outliers" in l]
    assert len(lines) == 1 and lines[0].startswith("warning: no load set: 2 of 40 measured points")
    assert "P005" in lines[0] and "P018" in lines[0] and "--loss huber" in lines[0]
    code, out, _ = run(capsys, "identify", str(d / "outliers.csv"), "--robot", "ur5_li2023", "--loss", "huber",
                       "--out", str(d / "h.json"))
    line = next(l for l in out.splitlines() if "residual outliers" in l)
    assert "the huber loss down-weighted them" in line
    # judged on the same poses without the two bad readings, the robust fit is the better one
    scores = {}
    for name in ("o", "h"):
        code, out, _ = run(capsys, "evaluate", str(d / f"{name}.json"), str(d / "clean.csv"), "--json")
        scores[name] = json.loads(out)["after"]["mean_mm"]
    assert scores["h"] < 0.5 * scores["o"]
    code, out, _ = run(capsys, "identify", str(d / "clean.csv"), "--robot", "ur5_li2023", "--out", str(d / "c.json"))
    assert "residual outliers" not in out  # clean data: no false alarm


def test_poses_outside_the_identification_ranges_are_named_with_their_joint(files, capsys):
    d, (lo, hi), far = files
    code, out, _ = run(capsys, "evaluate", str(d / "calib.json"), str(d / "far.csv"))
    assert code == 0
    lines = [l for l in out.splitlines() if "outside the identification poses' joint ranges" in l]
    assert len(lines) == 2
    assert lines[0] == (f"warning: pose P003 lies outside the identification poses' joint ranges: J2 = {far[2]:.1f}° "
                        f"(identified on {lo:.1f}..{hi:.1f}°); its error is an extrapolation")
    assert lines[1].startswith("warning: pose P005 ") and f"J2 = {far[4]:.1f}°" in lines[1]
    code, out, _ = run(capsys, "evaluate", str(d / "calib.json"), str(d / "clean.csv"))
    assert "outside the identification" not in out


def test_evaluate_prints_both_before_figures(files, capsys):
    d, _, _ = files
    code, out, _ = run(capsys, "evaluate", str(d / "calib.json"), str(d / "far.csv"))
    before = [l for l in out.splitlines() if l.startswith("before:")]
    assert [l.split("  mean")[0].strip() for l in before] == [
        "before: nominal model (base frame as measured)", "before: nominal model + base fitted to this set"]


def test_robot_is_required_and_must_match_the_file(files, capsys):
    d, _, _ = files
    assert main(["calibrate", "identify", str(d / "clean.csv"), "--out", str(d / "x.json")]) == 2
    assert "--robot" in capsys.readouterr().err
    code, _, err = run(capsys, "identify", str(d / "clean.csv"), "--robot", "ur5", "--out", str(d / "x.json"))
    assert code == 2 and "was measured on 'ur5_li2023'" in err
    assert main(["calibrate", "plan", "--out", str(d / "p.json")]) == 2


def test_unloaded_data_default_to_the_method_they_support(files, capsys):
    d, _, _ = files
    code, out, _ = run(capsys, "identify", str(d / "clean.csv"), "--robot", "ur5_li2023", "--out",
                       str(d / "x.json"), "--json")
    assert code == 0 and json.loads(out)["method"] == "geometric"
    code, _, err = run(capsys, "identify", str(d / "clean.csv"), "--robot", "ur5_li2023", "--method", "combined",
                       "--out", str(d / "x.json"))
    assert code == 2 and "combined-gravity" in err and "geometric" in err  # the error names the ways out


def test_a_closed_pipe_ends_quietly(files):
    d, _, _ = files
    cmd = [sys.executable, "-m", "robodyn", "calibrate", "evaluate", str(d / "calib.json"), str(d / "far.csv"),
           "--per-pose", "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first line (like `| head` that already exited)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
    shell = subprocess.run(" ".join(cmd) + " | head -1", shell=True, capture_output=True, timeout=120)
    assert shell.stdout.strip() == b"{" and b"Traceback" not in shell.stderr
