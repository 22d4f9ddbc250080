"""End to end: the daemon as a subprocess on loopback, driven through the Python client and CLI."""

import json
import os
import signal
import time

import msgpack
import numpy as np
import pytest

from robodyn.cli import main as cli_main
from robodyn.daemon import protocol as P
from robodyn.recording import load_recording
from robodyn.daemon.client import DaemonError

from .conftest import READY_Q, excitation, recorder_flushed

RATE = 1000


def wait_state(client, run_id, states, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = client.run_status(run_id)
        if st["state"] in states:
            return st
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} never reached {states}; last {st['state']}")


def test_run_records_the_complete_expected_sample_count(daemon):
    c = daemon.client
    doc = excitation(5.0)
    accepted = c.submit_run("panda", doc, label="e2e complete")
    final = c.wait_run(accepted["run_id"], timeout=180)
    assert final["state"] == "completed", final
    s = final["summary"]
    assert s["lost_samples"] == 0 and s["samples"] == s["expected_samples"]
    assert s["executed_samples"] == s["trajectory_samples"] == int(5.0 * RATE) + 1
    assert s["tracking"]["max_overall_rad"] < 0.02 and s["loop"]["count"] > 0

    rec = load_recording(s["recording"])
    assert not rec.truncated and rec.samples == s["expected_samples"] and rec.gaps() == []
    assert int(rec.phase_mask("execute").sum()) == int(5.0 * RATE) + 1
    assert int(rec.phase_mask("move_to_start").sum()) == accepted["move_samples"]
    assert np.all(np.diff(rec.seq.astype(np.int64)) == 1)
    assert np.allclose(np.diff(rec.robot_time), 1.0 / RATE)
    assert rec.meta["trajectory"]["family"] == "fourier_poly" and rec.meta["label"] == "e2e complete"
    assert rec.meta["robot"]["name"] == "panda" and "<robot" in rec.meta["model_urdf"]
    assert rec.meta["driver"]["info"]["friction"]["fs"][0] == pytest.approx(0.3834)
    # the robot really followed the excitation: the commanded and measured q agree within ~1 cm
    ex = rec.phase_mask("execute")
    assert np.abs(rec.signal("q")[ex] - rec.signal("q_d")[ex]).max() < 0.02
    assert np.ptp(rec.signal("q")[ex], axis=0).min() > 0.01
    # the recorder wrote the listing's entry on close; the daemon lists the run from it
    from robodyn.recording import read_index

    entry = read_index(s["recording"])
    assert (entry["id"], entry["samples"], entry["lost"], entry["status"]) == (accepted["run_id"], rec.samples, 0,
                                                                               "completed")
    assert entry["label"] == "e2e complete" and entry["created"] == rec.meta["created_wall"]
    assert entry["duration_s"] == pytest.approx((rec.samples - 1) / RATE)
    # and the digest of its closing summary, what the status page shows without reading the file
    assert entry["summary"]["recorded_samples"] == rec.samples and entry["summary"]["gaps"] == 0
    assert entry["summary"]["loop"]["p99_ms"] == rec.summary["loop"]["p99_ms"] > 0
    listed = {r["id"]: r for r in c.recordings()}
    assert listed[accepted["run_id"]]["samples"] == rec.samples


def settled_commands(daemon, timeout=120.0):
    """The sim's command counts once no run is in progress and the driver reports its robot
    stopped (lifecycle 'connected'): a previous run may still be ramping to rest or settling. The
    counts travel in the same telemetry message as the lifecycle, and a stopped driver writes
    nothing until the next run starts, so they are final; judged by that state, not by a quiet
    spell of the wall clock, which a loaded host can fake by starving the driver (the time-out is
    an outer one only)."""
    deadline = time.monotonic() + timeout
    while True:
        st = daemon.client.status()
        if st["run"] is None and st["driver"]["lifecycle"] == "connected":
            return st["driver"]["diagnostics"]["commands"]
        assert time.monotonic() < deadline, (st["run"], st["driver"]["lifecycle"])
        time.sleep(0.05)


def test_rejections_name_the_problem_and_the_robot_never_moves(daemon):
    c = daemon.client
    before = settled_commands(daemon)
    too_fast = {"format": "robodyn.trajectory", "version": 1, "family": "point_to_point", "dof": 7,
                "params": {"q_start": (READY_Q + 0.05).tolist(),
                           "q_end": (READY_Q + np.array([0, 0, 0, 0, 0, 0, -2.0])).tolist(), "duration": 0.4}}
    with pytest.raises(DaemonError) as e:
        c.submit_run("panda", too_fast)
    assert e.value.code == "limit_violation"
    assert "joint7" in e.value.message and "t=" in e.value.message and "before any motion" in e.value.message
    first = e.value.details["report"]["violations"][0]
    assert first["joint"] == "joint7" and first["time"] is not None and first["limit"].endswith("_max")

    outside = json.loads(json.dumps(too_fast))
    outside["params"].update(q_end=(READY_Q + np.array([0, 3.0, 0, 0, 0, 0, 0])).tolist(), duration=20.0)
    with pytest.raises(DaemonError) as e:
        c.submit_run("panda", outside)
    assert e.value.code == "limit_violation" and "q_max violated on joint2" in e.value.message

    cases = [
        (lambda: c.submit_run("ur5", excitation(2.0)), "robot_mismatch", "drives 'panda'"),
        (lambda: c.submit_run("panda", {"family": "spline"}), "invalid_trajectory", "unknown trajectory family"),
        (lambda: c.submit_run("panda", dict(excitation(2.0), dof=6)), "invalid_trajectory", "dof"),
        (lambda: c.call("submit_run", robot="panda"), "invalid_args", "missing required argument 'trajectory'"),
        (lambda: c.call("submit_run", robot="panda", trajectory=[1, 2]), "invalid_args", "must be a map"),
        # the simulator's torque mode applies raw torques: it cannot track a run's trajectory
        (lambda: c.submit_run("panda", excitation(2.0), mode="torque"), "invalid_args",
         "'torque' is not a trajectory mode of the sim driver"),
        (lambda: c.call("teleport"), "unknown_command", "unknown command 'teleport'"),
        (lambda: c.call("run_status", run_id="nope"), "not_found", "no run 'nope'"),
    ]
    for call, code, words in cases:
        with pytest.raises(DaemonError) as e:
            call()
        assert e.value.code == code and words in e.value.message, (code, e.value.message)

    for payload, code in ((b"\xc1garbage", "malformed"), (msgpack.packb([1, 2, 3]), "malformed"),
                          (msgpack.packb({"v": 99, "cmd": "ping"}), "unsupported_version"),
                          (b"\x92" + b"\xff" * 10, "malformed")):
        reply = c.call_raw(payload)
        assert reply["ok"] is False and reply["error"]["code"] == code and reply["error"]["message"]

    after = settled_commands(daemon)  # motion begun by mistake is counted once the driver has stopped
    assert after["starts"] == before["starts"] and after["writes"] == before["writes"]
    assert after["path_length"] == before["path_length"]
    assert c.ping()["protocol"] == P.PROTOCOL_VERSION  # still serving


def test_abort_ramps_to_rest_and_keeps_the_recording(daemon):
    c = daemon.client
    accepted = c.submit_run("panda", excitation(60.0, amplitude=0.06))
    wait_state(c, accepted["run_id"], ("execute",))
    time.sleep(0.3)
    with pytest.raises(DaemonError) as e:  # one run at a time
        c.submit_run("panda", excitation(2.0))
    assert e.value.code == "busy"
    assert c.abort(reason="test abort")["aborted"] == accepted["run_id"]
    final = c.wait_run(accepted["run_id"], timeout=180)
    assert final["state"] == "aborted" and final["abort_reason"] == "test abort"
    s = final["summary"]
    assert s["lost_samples"] == 0 and 0 < s["executed_samples"] < s["trajectory_samples"]
    rec = load_recording(s["recording"])
    stopping = rec.phase_mask("stopping")
    assert stopping.sum() > 0 and rec.samples == s["expected_samples"]
    qd_d = rec.signal("qd_d")
    assert np.abs(qd_d[-1]).max() == 0.0  # commanded to rest
    assert np.abs(rec.signal("qd")[-1]).max() < 0.05  # and at rest
    assert daemon.commands()["hard_brakes"] == 0  # brakes closed only once the arm stood still


def test_recorder_sigkill_mid_run_leaves_a_readable_file(daemon):
    c = daemon.client
    st = c.status()
    old_pid = st["recorder"]["pid"]
    accepted = c.submit_run("panda", excitation(60.0))
    wait_state(c, accepted["run_id"], ("execute",))
    time.sleep(0.5)
    _, flushed = recorder_flushed(c, accepted["recording"])  # the recorder's own count, just before the kill
    os.kill(old_pid, signal.SIGKILL)
    final = c.wait_run(accepted["run_id"], timeout=180)
    assert final["state"] == "aborted" and "recorder process died" in final["abort_reason"]

    deadline = time.monotonic() + 180  # outer time-out only
    while True:  # the daemon restarts its recorder
        st = c.status()["recorder"]
        if st["alive"] and st["ready"] and st["pid"] != old_pid:
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert st["restarts"] == 1
    # the new recorder finalized the cut file before it reported ready
    rec = load_recording(accepted["recording"])
    assert not rec.truncated and rec.summary["repaired"] and rec.samples > 0 and rec.gaps() == []
    assert rec.summary["recorded_samples"] == rec.samples and rec.summary["status"] == "aborted"
    assert rec.meta["run_id"] == accepted["run_id"]
    # every sample the recorder had written before the kill is in the file (what a loaded host lets
    # it fall behind by is a figure: bench/reliability/run.py --only kills)
    assert rec.samples >= flushed > 0
    from mcap.reader import make_reader

    with open(accepted["recording"], "rb") as fh:  # and the official reader's default call opens it
        assert sum(1 for _ in make_reader(fh).iter_messages()) > 0
    # the repair wrote the listing's entry, and the daemon lists the file from it
    from robodyn.recording import read_index

    entry = read_index(accepted["recording"])
    assert (entry["samples"], entry["status"]) == (rec.samples, "aborted")
    deadline = time.monotonic() + 30
    while {r["id"]: r for r in c.recordings()}[accepted["run_id"]].get("samples") != rec.samples:
        assert time.monotonic() < deadline, c.recordings()
        time.sleep(0.2)


def test_cli_status_recordings_and_export(daemon, capsys, tmp_path, monkeypatch):
    ep = ["--endpoint", daemon.control]
    assert cli_main(["status", "--json"] + ep) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["robot"]["name"] == "panda" and st["driver"]["alive"]
    assert cli_main(["recordings", "--json"] + ep) == 0
    rows = json.loads(capsys.readouterr().out)
    done = [r for r in rows if r.get("status") == "completed"]
    assert done and all(r["lost"] == 0 for r in done)
    assert cli_main(["recordings"] + ep) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:5] == ["recording", "status", "samples", "lost", "duration"]
    assert len(table) == len(rows) + 1 and table[1].startswith(rows[0]["id"])
    out = tmp_path / "x.csv"
    assert cli_main(["export", done[0]["id"], "--format", "csv", "--out", str(out)] + ep) == 0
    assert out.read_text().startswith("t,seq,phase,q1")
    # no --out: the current folder, not the daemon's data folder
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert cli_main(["export", done[0]["id"], "--format", "npz"] + ep) == 0
    assert (here / f"{done[0]['id']}.npz").exists()
    assert str(here / f"{done[0]['id']}.npz") in capsys.readouterr().out
    # an id the daemon does not list: one line, found from the listing (no file decoded)
    assert cli_main(["export", "20990101-000000-none", "--format", "csv"] + ep) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such recording on the daemon" in err
    monkeypatch.chdir(tmp_path)
    assert cli_main(["stream", "--duration", "1.2"] + ep) == 0
    shown = capsys.readouterr().out
    assert "samples/s" in shown and "lost 0" in shown and shown.count("q ") >= 1
    seqs = np.concatenate([b["seq"] for b in daemon.client.stream(max_batches=200, timeout=30.0)])
    assert seqs.size >= 200 and np.all(np.diff(seqs.astype(np.int64)) == 1)
    traj_file = tmp_path / "bad.json"
    traj_file.write_text(json.dumps({"family": "fourier", "params": {"wf": -1}}))
    assert cli_main(["run", "--robot", "panda", "--trajectory", str(traj_file)] + ep) == 2
    assert "q0" in capsys.readouterr().err  # one line naming the missing field, no traceback
