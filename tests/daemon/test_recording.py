"""Recordings: self-description, gaps, crash recovery, CSV/NPZ export and CSV import."""

import json
import os

import numpy as np
import pytest

from robodyn.daemon.recording import (RecordingWriter, export_csv, export_npz, import_csv, load_recording,
                                      read_recording_info)
from robodyn.drivers.sim import SimulatedRobot

DESC = SimulatedRobot({"seed": 0}).describe().to_dict()
WIDTH = sum(s["width"] for s in DESC["signals"])


def write(path, seqs, block_ms=50.0, close=True):
    meta = {"run_id": "r1", "driver": DESC, "rate_hz": 1000.0, "trajectory": {"family": "fourier"},
            "robot": {"name": "panda"}}
    w = RecordingWriter(path, meta, WIDTH, "zstd", block_ms)
    for chunk in np.array_split(np.asarray(seqs, dtype=np.uint64), max(1, len(seqs) // 100)):
        n = chunk.shape[0]
        w.append(chunk, chunk * 1e-3, chunk.astype(np.int64) * 1000, np.full(n, 2, np.uint8),
                 np.outer(chunk, np.ones(WIDTH)).astype(float))
        w.flush_block()  # as if every 100 samples took one block period
    if close:
        w.event({"event": "phase", "phase": "execute", "host_time_ns": 5})
        w.close({"status": "completed", "expected_samples": int(seqs[-1] - seqs[0] + 1),
                 "recorded_samples": len(seqs), "lost_samples": int(seqs[-1] - seqs[0] + 1) - len(seqs)})
    return w


def test_round_trip_is_self_describing(tmp_path):
    path = tmp_path / "r1.mcap"
    write(path, np.arange(1, 1001))
    rec = load_recording(path)
    assert rec.samples == 1000 and not rec.truncated and rec.gaps() == [] and rec.lost == 0
    assert rec.meta["software_version"] and rec.meta["rate_hz"] == 1000.0 and rec.meta["trajectory"]
    assert rec.units["tau"] == "N.m" and rec.signal("q").shape == (1000, 7)
    assert np.array_equal(rec.signal("q")[:, 0], np.arange(1, 1001))
    assert rec.summary["status"] == "completed" and rec.events[0]["phase"] == "execute"
    info = read_recording_info(path)  # from the summary, without decoding the samples
    assert (info["id"], info["samples"], info["lost"], info["status"]) == ("r1", 1000, 0, "completed")


def test_gaps_are_counted_never_hidden(tmp_path):
    seqs = np.concatenate([np.arange(1, 301), np.arange(311, 601), np.arange(602, 1001)])
    write(tmp_path / "g.mcap", seqs)
    rec = load_recording(tmp_path / "g.mcap")
    assert rec.gaps() == [(300, 10), (600, 1)] and rec.lost == 11


def test_truncated_file_still_opens_with_every_complete_block(tmp_path):
    path = tmp_path / "t.mcap"
    write(path, np.arange(1, 901), close=False)
    complete = os.path.getsize(path)  # every block is on disk as soon as it is written
    write(tmp_path / "full.mcap", np.arange(1, 1001), close=False)
    full = (tmp_path / "full.mcap").read_bytes()
    # the same file cut in the middle of its tenth block, as a SIGKILL during the write would
    path.write_bytes(full[:complete + 200])
    rec = load_recording(path)
    assert rec.truncated and rec.summary is None and rec.read_error
    assert rec.samples == 900 and rec.seq[0] == 1 and rec.gaps() == []
    assert rec.meta["run_id"] == "r1"
    info = read_recording_info(path)
    assert info["samples"] == 900 and info["status"] == "incomplete (recovered)"


def test_csv_and_npz_export_and_csv_import(tmp_path):
    path = tmp_path / "e.mcap"
    write(path, np.arange(1, 201))
    rec = load_recording(path)
    csv_path = export_csv(rec, tmp_path / "e.csv")
    header = csv_path.read_text().splitlines()[0].split(",")
    assert header[:4] == ["t", "seq", "phase", "q1"] and "tau7" in header
    back = import_csv(csv_path)
    assert np.allclose(back.signal("q"), rec.signal("q")) and np.allclose(back.signal("tau"), rec.signal("tau"))
    assert np.allclose(back.signal("qd"), rec.signal("qd")) and np.allclose(back.t, rec.t)
    assert "q_d1" in back.meta["ignored_columns"]
    npz = np.load(export_npz(rec, tmp_path / "e.npz"))
    assert npz["q"].shape == (200, 7) and json.loads(str(npz["meta_json"]))["run_id"] == "r1"


def test_csv_import_column_convention(tmp_path):
    p = tmp_path / "ext.csv"
    p.write_text("# exported by some other tool\nt,q1,q2,tau1,tau2\n0,0,0,1,2\n0.01,0.1,0.2,1.5,2.5\n")
    rec = import_csv(p)
    assert rec.signal("q").shape == (2, 2) and "qd" not in rec.signals and rec.units["q"] == "rad"
    bad = tmp_path / "bad.csv"
    bad.write_text("t,q1,q2,tau1\n0,0,0,1\n")
    with pytest.raises(ValueError, match="tau2"):
        import_csv(bad)
    bad.write_text("t,q1,qd1,tau1\n0,0,0,1\n0,0,0,1\n")
    with pytest.raises(ValueError, match="strictly increase"):
        import_csv(bad)
    bad.write_text("t,q1,q2,qd1,tau1,tau2\n0,0,0,0,1,1\n")
    with pytest.raises(ValueError, match="all of qd1..qd2 or none"):
        import_csv(bad)
