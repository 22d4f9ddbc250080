"""The CSV path and the recording path fit the same samples; joint counts that do not match the
robot, and results evaluated with another model, are refused in one line.

Data: a daemon recording written here with the recording writer: a move to the start (phase 1), a
Fourier excitation of the Panda model (phase 2, torques from the RNEA with Coulomb-viscous friction
and 0.05 N.m noise) and a settle (phase 3); then exported as CSV by the daemon's own exporter.
"""

import json

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.recording import RecordingWriter, export_csv, load_recording
from robodyn.drivers.sim import SimulatedRobot
from robodyn.identification.data import load_dataset
from robodyn.robot.loader import load_model
from tests.identification.conftest import rest_to_rest_fourier, simulate

DESC = SimulatedRobot({"seed": 0}).describe().to_dict()
RATE = 200


def phased_recording(path, excitation_seed=3):
    model = load_model("panda")
    run = simulate(model, rest_to_rest_fourier(model, excitation_seed, periods=1), rate=RATE, noise=0.05)
    n_move, n_settle = 300, 200
    start = run.q[0]
    # the move to the start: a slow ramp from another pose; the settle: standing at the end pose
    ramp = np.linspace(0.0, 1.0, n_move)[:, None]
    q = np.vstack([start - 0.4 + 0.4 * ramp, run.q, np.repeat(run.q[-1:], n_settle, 0)])
    qd = np.vstack([np.full((n_move, 7), 0.4 * RATE / n_move), run.qd, np.zeros((n_settle, 7))])
    tau = np.vstack([np.full((n_move, 7), 3.0), run.tau, np.full((n_settle, 7), -2.0)])
    phase = np.concatenate([np.full(n_move, 1), np.full(run.count, 2), np.full(n_settle, 3)]).astype(np.uint8)
    N = q.shape[0]
    seq = np.arange(1, N + 1, dtype=np.uint64)
    values = np.hstack([q, qd, tau, q, qd, tau])  # q, qd, tau, then the commanded q_d, qd_d, tau_d
    meta = {"run_id": "r1", "driver": DESC, "rate_hz": float(RATE), "robot": {"name": "panda"}}
    w = RecordingWriter(path, meta, values.shape[1], "zstd", 50.0)
    w.append(seq, seq / RATE, seq.astype(np.int64) * 5_000_000, phase, values)
    w.flush_block()
    w.close({"status": "completed", "expected_samples": N, "recorded_samples": N, "lost_samples": 0})
    return run.count, N


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("parity")
    mcap = d / "run.mcap"
    execute, total = phased_recording(mcap)
    csv = export_csv(load_recording(mcap), d / "run.csv")
    # an older CSV: the same rows without the phase column
    lines = csv.read_text().splitlines()
    header = lines[0].split(",")
    k = header.index("phase")
    old = d / "old.csv"
    old.write_text("\n".join(",".join(c for i, c in enumerate(line.split(",")) if i != k) for line in lines) + "\n")
    return {"mcap": mcap, "csv": csv, "old": old, "execute": execute, "total": total, "dir": d}


def test_exported_csv_loads_the_same_samples_as_the_recording(files):
    model = load_model("panda")
    a = load_dataset(files["mcap"], model=model)
    b = load_dataset(files["csv"], model=model)
    assert a.count == b.count == files["execute"] < files["total"]
    # the CSV's t starts at the first sample, the recording's at its robot time: same spacing
    assert np.allclose(np.diff(a.t), np.diff(b.t))
    assert np.array_equal(a.q, b.q) and np.array_equal(a.qd, b.qd) and np.array_equal(a.tau, b.tau)
    with pytest.warns(UserWarning, match="no 'phase' column"):
        c = load_dataset(files["old"], model=model)
    assert c.count == files["total"]


def test_identify_fits_the_same_rows_from_recording_and_csv(files, capsys):
    rows = {}
    for key in ("mcap", "csv", "old"):
        out = files["dir"] / f"{key}.json"
        assert main(["identify", str(files[key]), "--robot", "panda", "--out", str(out), "--cutoff", "0",
                     "--json"]) == 0
        rows[key] = json.loads(out.read_text())["estimate"]["rows"]
        err = capsys.readouterr().err
        notes = [line for line in err.splitlines() if "phase" in line]
        assert len(notes) == (1 if key == "old" else 0), err
    assert rows["mcap"] == rows["csv"] < rows["old"]


def test_csv_with_more_joints_than_the_robot_is_refused_in_one_line(files, capsys):
    assert main(["identify", str(files["csv"]), "--robot", "ur5", "--out", str(files["dir"] / "x.json")]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "7 joints" in err and "has 6" in err and "Traceback" not in err


def test_validate_with_a_model_the_result_was_not_identified_with(files, tmp_path, capsys):
    result = files["dir"] / "panda.json"
    assert main(["identify", str(files["mcap"]), "--robot", "panda", "--out", str(result), "--cutoff", "0"]) == 0
    ur5 = load_model("ur5")
    run = simulate(ur5, rest_to_rest_fourier(ur5, 1, periods=1), rate=RATE,
                   friction={"viscous": np.full(6, 0.3), "coulomb": np.full(6, 0.5), "offset": np.full(6, 0.05)})
    path = tmp_path / "ur5.csv"
    header = ",".join(["t"] + [f"{s}{j + 1}" for s in ("q", "qd", "tau") for j in range(6)])
    np.savetxt(path, np.column_stack([run.t, run.q, run.qd, run.tau]), delimiter=",", header=header, comments="")
    capsys.readouterr()
    for command in ("validate", "predict"):
        extra = ["--out", str(tmp_path / "p.csv")] if command == "predict" else []
        assert main([command, str(result), str(path), "--robot", "ur5", *extra]) != 0
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "identified with robot panda" in err and "matmul" not in err, err
    # same layout, another name: evaluated, with one note
    assert main(["validate", str(result), str(files["csv"]), "--robot", "fr3"]) == 0
    err = capsys.readouterr().err
    assert sum("identified with robot panda, evaluated with model fr3" in line for line in err.splitlines()) == 1
