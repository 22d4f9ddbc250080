"""Faults mid-run: a worker process SIGKILLed, a client that vanishes, a full disk.
(20 kills of each worker: bench/reliability/run.py; here 3 of each.)"""

import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import zmq

from robodyn.recording import load_recording
from robodyn.daemon.rtloop import BATCH_CAPACITY
from robodyn.daemon.client import Client, DaemonError
from tests.daemon.conftest import DaemonProcess, excitation, recorder_flushed
from tests.processes import die_with_parent

from .scenarios import kill_daemon_mid_run, kill_mid_run, official_read, wait_state, wait_stopped

KILLS_EACH = 3


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = DaemonProcess(tmp_path_factory.mktemp("faults"))
    yield d
    d.stop()
    assert d.proc.returncode == 0, d.log_text()[-3000:]


def test_sigkill_driver_and_recorder_mid_run(daemon, figure):
    results = []
    for i in range(KILLS_EACH):
        for component in ("recorder", "driver"):
            r = kill_mid_run(daemon, component, excitation(20.0, seed=i + 1))
            results.append(r)
            assert r["state"] == "aborted" and f"{component} process died" in r["reason"], r
            assert r["samples"] > 0 and r["gaps"] == [], r  # the file opens and holds a gap-free prefix
            # and any MCAP tool opens it: the official reader's default call, every sample
            assert r["official_ok"] and r["official_samples"] == r["samples"], r
            assert r["repaired"] == (component == "recorder"), r  # only a killed recorder leaves it unfinished
            # loss counted in samples against what the code is responsible for (the time lost
            # before a kill depends on how far behind a loaded host lets the recorder fall; it is
            # a figure: bench/reliability/run.py --only kills): every sample the recorder had
            # written before the kill is in the file ...
            assert r["samples"] >= r["flushed_before_kill"] > 0, r
            if component == "driver":
                # ... and, with the recorder alive, every sample the dead driver had published at its
                # last telemetry (its unpublished batch, at most BATCH_CAPACITY samples, dies with it)
                assert r["last_seq"] >= r["driver_seq_before_kill"] - BATCH_CAPACITY, r
            assert r["stopped"] and r["hard_brakes"] == 0, r  # motion stopped; brakes only at rest
            assert r["armed_after"] is False, r  # a fault disarms
            daemon.client.arm()  # the operator's decision, again
    st = daemon.client.status()
    assert st["driver"]["restarts"] == KILLS_EACH and st["recorder"]["restarts"] == KILLS_EACH
    # and the daemon still completes a run after all that
    final = daemon.client.wait_run(daemon.client.submit_run("panda", excitation(2.0))["run_id"], timeout=60)
    assert final["state"] == "completed" and final["summary"]["lost_samples"] == 0, final
    for component in ("recorder", "driver"):
        rs = [r for r in results if r["component"] == component]
        figure(f"SIGKILL {component} x{len(rs)}: all aborted, all files open",
               max_loss_ms=round(max(r["loss_ms"] for r in rs), 1),
               max_noticed_s=round(max(r["noticed_s"] for r in rs), 2),
               max_restart_s=round(max(r["restart_s"] for r in rs), 2))


def test_client_loss_mid_run_does_not_wedge_the_daemon(daemon, figure):
    """Policy: a run belongs to the daemon, not to the connection that submitted it. A client that
    dies mid-run changes nothing; any client can watch, abort or disarm."""
    st = daemon.client.status()
    if not st["safety"]["armed"]:
        daemon.client.arm()
    script = (
        "import sys, time\n"
        "from robodyn.daemon.client import Client\n"
        "from tests.daemon.conftest import excitation\n"
        "c = Client(sys.argv[1], timeout=60)\n"
        "a = c.submit_run('panda', excitation(6.0))\n"
        "print(a['run_id'], flush=True)\n"
        "for _ in range(1_000_000):  # bounded; killed long before\n"
        "    c.run_status(a['run_id'])\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script, daemon.control], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).resolve().parents[3], preexec_fn=die_with_parent)
    try:
        run_id = child.stdout.readline().strip()
        wait_state(daemon.client, run_id, ("execute",))
    finally:
        child.kill()  # vanishes mid-run, mid-request
        child.wait(10)
    # a second client floods requests and never reads a reply, then disappears
    ctx = zmq.Context()
    rude = ctx.socket(zmq.DEALER)
    rude.setsockopt(zmq.LINGER, 0)
    rude.connect(daemon.control)
    from robodyn.daemon import access
    from robodyn.daemon import protocol as P

    for i in range(2000):
        rude.send(P.make_request("status", rid=i, auth=access.client_token(daemon.control)))
    latencies = []
    with Client(daemon.control, timeout=30.0) as watcher:  # an outer time-out; latencies are a figure
        for _ in range(6000):  # bounded: at least 300 s of polling
            t0 = time.monotonic()
            run = watcher.run_status(run_id)
            latencies.append(time.monotonic() - t0)
            if run["state"] in ("completed", "aborted", "failed"):
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"run {run_id} did not end: {run}")
    rude.close(linger=0)
    ctx.destroy(linger=0)
    assert run["state"] == "completed" and run["summary"]["lost_samples"] == 0, run
    final = daemon.client.wait_run(daemon.client.submit_run("panda", excitation(2.0))["run_id"], timeout=60)
    assert final["state"] == "completed"
    figure("client killed mid-run + 2000 unread requests: run completed, daemon served",
           max_status_latency_ms=round(1000 * max(latencies), 1), run_lost_samples=run["summary"]["lost_samples"])


# --------------------------------------------------------------------------- disk full


def _tmpfs_prefix(mountpoint: Path, size_mb: int):
    """A command prefix that runs the daemon with ``mountpoint`` on a private tmpfs (a user and
    mount namespace: no root needed), or None when this host does not allow it."""
    if shutil.which("unshare") is None:
        return None
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs {mountpoint}"],
                           capture_output=True)
    if probe.returncode != 0:
        return None
    return ["unshare", "-rm", "sh", "-c", f'mount -t tmpfs -o size={size_mb}m tmpfs "$0" && exec "$@"',
            str(mountpoint)]


def test_disk_full_mid_run_aborts_safely_and_keeps_a_readable_file(tmp_path, figure):
    data = tmp_path / "data"
    data.mkdir()
    prefix = _tmpfs_prefix(data, 48)
    if prefix is None:
        pytest.skip("cannot mount a tmpfs here (no unshare / user namespaces): see docs/reliability.md")
    d = DaemonProcess(tmp_path, prefix=prefix, data_dir=data, extra_config="[safety]\nrequire_arm = true\n"
                                                                            "min_free_mb = 0\n")
    try:
        # the daemon's view of its data directory: inside its own mount namespace
        view = Path(f"/proc/{d.proc.pid}/root") / str(data).lstrip("/")
        assert shutil.disk_usage(view).total <= 48 * 2 ** 20
        with pytest.raises(DaemonError) as e:  # a run that cannot fit is refused before any motion
            d.client.submit_run("panda", excitation(600.0))
        assert e.value.code == "unavailable" and "disk space" in e.value.message

        accepted = d.client.submit_run("panda", excitation(30.0))
        wait_state(d.client, accepted["run_id"], ("execute",))
        # the recorder's path is the one inside the daemon's namespace, as the run reported it
        _, flushed = recorder_flushed(d.client, accepted["recording"])
        free = shutil.disk_usage(view).free
        with open(view / "filler", "wb") as fh:  # someone else fills the disk
            try:
                fh.write(b"\0" * max(0, free - 256 * 1024))
            except OSError:
                pass
        filled_ns = time.monotonic_ns()
        final = d.client.wait_run(accepted["run_id"], timeout=180, poll_s=0.05)
        reaction_s = (time.monotonic_ns() - filled_ns) / 1e9
        assert final["state"] == "aborted" and "No space left on device" in final["abort_reason"], final
        st = wait_stopped(d.client)
        assert st["driver"]["lifecycle"] == "connected" and st["safety"]["armed"] is False
        assert st["driver"]["diagnostics"]["commands"]["hard_brakes"] == 0  # ramped to rest first
        path = view / "recordings" / f"{accepted['run_id']}.mcap"
        rec = load_recording(path)
        # the file was cut back to its last complete block: no torn record
        assert rec.samples > 0 and rec.gaps() == [], rec.read_error
        assert rec.samples >= flushed  # kept everything the recorder had written before the fill
        assert rec.meta["run_id"] == accepted["run_id"]
        assert np.all(np.diff(rec.seq.astype(np.int64)) == 1)
        # space is back: the recorder finalizes the cut file (at once if its few KB fitted), so
        # any MCAP tool opens it; the samples are the ones the loader read from the cut file
        (view / "filler").unlink()
        deadline = time.monotonic() + 120  # outer time-out only
        while not (official := official_read(path))["ok"] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert official["ok"] and official["repaired"] and official["samples"] == rec.samples, official
        finalized = load_recording(path)
        assert not finalized.truncated and finalized.samples == rec.samples
        assert "No space left on device" in finalized.summary["reason"], finalized.summary
        d.client.arm()
        again = d.client.wait_run(d.client.submit_run("panda", excitation(2.0))["run_id"], timeout=60)
        assert again["state"] == "completed" and again["summary"]["lost_samples"] == 0
        figure("disk full mid-run (48 MiB tmpfs): run aborted, robot ramped to rest, file readable",
               samples_kept=rec.samples, reaction_s=round(reaction_s, 2))
    finally:
        d.stop()
    assert d.proc.returncode == 0


def test_main_process_killed_mid_run_workers_stop_the_robot_and_finalize(tmp_path, figure):
    """Nobody supervises the workers any more: the driver ramps to rest and exits, the recorder
    finalizes the file, naming the main process in its reason, and exits (systemd then restarts
    the service, disarmed)."""
    r = kill_daemon_mid_run(tmp_path / "work", tmp_path / "data", excitation(20.0))
    assert not r["workers_left"], r
    assert r["official_ok"] and r["official_samples"] == r["samples"] > 0, r
    assert not r["truncated"] and r["status"] == "aborted" and r["gaps"] == [], r
    # the reason said "recorder shut down before the run ended"
    assert "main process" in r["reason"] and "died" in r["reason"], r["reason"]
    assert r["stopping_samples"] > 0 and r["final_qd_d"] == 0.0, r
    figure("main process SIGKILLed mid-run: driver ramped to rest, recording finalized, workers exited",
           workers_gone_s=round(r["workers_gone_s"], 2), stopping_samples=r["stopping_samples"])
