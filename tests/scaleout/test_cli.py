"""`robodyn scaleout run`: a batch file in, one result file per job out, re-runs skip finished jobs."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from robodyn.commands import scaleout as scaleout_cli


def run_cli(*argv) -> int:
    parser = argparse.ArgumentParser(prog="robodyn")
    scaleout_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["scaleout", *argv])
    return args.handler(args)


@pytest.fixture
def batch(tmp_path, recordings, fleet):
    # (recording 0 reverses joint 3 once in 4 s: with its measured velocity filtered, its Coulomb
    # friction is not identifiable from it alone, and the job would rightly refuse it)
    rec = recordings[1]
    npz = tmp_path / "arm1.npz"
    np.savez(npz, t=rec.t, q=rec.q, qd=rec.qd, tau=rec.tau)
    meas, loaded = fleet[0]
    doc = {"format": "robodyn.scaleout.batch", "version": 1, "cluster": "inline",
           "jobs": [{"kind": "identify", "payload": {"robot": "scara", "recordings": [str(npz)],
                                                     "config": {"method": "ols"}}},
                    {"kind": "calibrate", "job_id": "cell-1",
                     "payload": {"measurements": str(meas), "loaded": str(loaded),
                                 "options": {"robot": "ur5_li2023", "method": "geometric"}}},
                    {"kind": "identify", "job_id": "missing-robot",
                     "payload": {"robot": "no-such-robot", "recordings": [str(npz)]}}]}
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(doc))
    return path


def test_batch_runs_once_and_a_rerun_skips_stored_results(batch, tmp_path, capsys):
    out = tmp_path / "results"
    assert run_cli("run", str(batch), "--out", str(out), "--json") == 1  # one job fails
    summary = json.loads(capsys.readouterr().out)
    assert [r["ok"] for r in summary["results"]] == [True, True, False]
    stored = sorted(p.name for p in out.glob("*.json"))
    assert "cell-1.json" in stored and len(stored) == 2  # failures are not stored: tomorrow retries them
    ident = json.loads((out / f"{summary['results'][0]['job_id']}.json").read_text())
    assert ident["format"] == "robodyn.scaleout.result"
    assert ident["value"]["format"] == "robodyn.identification" and ident["value"]["robot"] == "scara"
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.json")}
    assert run_cli("run", str(batch), "--out", str(out), "--json") == 1
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.json")} == before  # nothing rewritten


def test_batch_file_errors_name_the_problem(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "robodyn.scaleout.batch", "jobs": [
        {"kind": "identify", "payload": {"robot": "scara", "recordings": [str(tmp_path / "gone.npz")]}}]}))
    with pytest.raises(FileNotFoundError, match="gone.npz"):
        run_cli("run", str(bad), "--out", str(tmp_path / "o"))
    bad.write_text(json.dumps({"format": "something-else", "jobs": []}))
    with pytest.raises(ValueError, match="format"):
        run_cli("run", str(bad), "--out", str(tmp_path / "o"))
