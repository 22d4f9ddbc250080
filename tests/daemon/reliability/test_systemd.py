"""systemd integration: the unit files verify; readiness, watchdog heartbeat and stopping through
the notify protocol (a fake NOTIFY_SOCKET); the main loop stays live while a long trajectory is
validated; SIGTERM ramps motion to rest, finalizes the recording and exits 0."""

import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from robodyn.daemon.logs import DaemonFormatter, format_fields
from robodyn.recording import load_recording
from robodyn.daemon.sdnotify import notify_address, watchdog_interval_s
from robodyn.daemon.client import DaemonError
from tests.daemon.conftest import DaemonProcess, excitation
from tests.system_tools import require_system_tool

from .scenarios import NotifySocket, wait_state

ROOT = Path(__file__).resolve().parents[3]
UNITS = sorted((ROOT / "systemd").glob("*.service"))
WATCHDOG_S = 2.0
# a trajectory whose check takes many heartbeat periods (its file estimate, about 0.75 GB, must fit on disk)
LONG_RUN_S = 1800.0
# The check's length is set by its work, which the test chooses: 3 harmonics per joint took 0.32-0.37 s
# for LONG_RUN_S on an idle host with warm kernels (67b0137), too short to see heartbeats. With
# LONG_HARMONICS (budget LONG_CHECK_COST) the abort stopped it after 428,904 of 3,600,001 samples,
# 3 heartbeats in, on the same host: the whole check takes about 8 times what the test waits for.
LONG_HARMONICS = 100
LONG_CHECK_COST = 2e10


def test_unit_files_pass_systemd_analyze_verify(tmp_path, figure):
    tool = require_system_tool("systemd-analyze", "systemd", "the unit files in systemd/ are checked with it")
    assert {u.name for u in UNITS} >= {"robodyn-daemon.service", "robodyn-worker.service"}
    robodyn = Path(shutil.which("robodyn") or ROOT / ".venv" / "bin" / "robodyn").resolve()
    copies = []
    for unit in UNITS:
        text = unit.read_text()
        assert "/opt/robodyn/venv/bin/robodyn" in text
        # verify checks that ExecStart exists: point it at this checkout's entry point
        (tmp_path / unit.name).write_text(text.replace("/opt/robodyn/venv/bin/robodyn", str(robodyn)))
        copies.append(str(tmp_path / unit.name))
    done = subprocess.run([tool, "verify", *copies], capture_output=True, text=True, timeout=120)
    ours = [line for line in (done.stdout + done.stderr).splitlines() if "robodyn" in line]
    assert done.returncode == 0 and not ours, done.stdout + done.stderr
    daemon_unit = (ROOT / "systemd" / "robodyn-daemon.service").read_text()
    for directive in ("Type=notify", "WatchdogSec=", "Restart=on-failure", "User=robodyn", "ProtectSystem=strict",
                      "PrivateTmp=yes", "NoNewPrivileges=yes", "ReadWritePaths=/var/lib/robodyn", "LimitRTPRIO=",
                      "LimitMEMLOCK=", "KillMode=mixed", "/etc/robodyn/daemon.toml"):
        assert directive in daemon_unit, directive
    figure("systemd-analyze verify: no findings", units=[u.name for u in UNITS])


def test_notify_helpers_and_journald_format():
    assert notify_address("@robodyn/notify") == b"\0robodyn/notify"
    assert notify_address("/run/systemd/notify") == "/run/systemd/notify" and notify_address(None) is None
    assert watchdog_interval_s("10000000", None, 42) == 5.0
    assert watchdog_interval_s("10000000", "41", 42) is None  # the watchdog is another process's
    assert watchdog_interval_s(None, None, 42) is None
    import logging

    rec = logging.LogRecord("robodyn.daemon", logging.WARNING, __file__, 1, "run %s aborted", ("r1",), None)
    rec.fields = {"run_id": "r1", "reason": "disk full"}
    assert DaemonFormatter(journald=True).format(rec) == \
        '<4>robodyn.daemon: run r1 aborted run_id=r1 reason="disk full"'
    assert format_fields({"a": 'x"y'}) == 'a="x\\"y"'


@pytest.fixture(scope="module")
def notified(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("notify")
    ns = NotifySocket(tmp / "notify")
    # the validation test's trajectory costs more than the default check budget allows
    d = DaemonProcess(tmp, env={"NOTIFY_SOCKET": str(tmp / "notify"), "WATCHDOG_USEC": str(int(WATCHDOG_S * 1e6))},
                      extra_config=f"[safety]\nrequire_arm = true\nmax_validation_cost = {LONG_CHECK_COST:g}\n")
    d.notify = ns
    yield d
    d.stop()
    ns.closed = True


def test_heartbeat_is_due_once_per_half_watchdog_period(monkeypatch):
    """The heartbeat schedule the code controls, on a fake clock: one WATCHDOG=1 per half period
    however often the loop calls, the next one due a half period after the last one sent (a late
    loop beats at once, then on its own schedule). How far a loaded host stretches the gaps is a
    figure: bench/reliability/run.py --only heartbeat."""
    import types

    from robodyn.daemon import sdnotify

    clock = [1000.0]
    monkeypatch.setattr(sdnotify, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    n = sdnotify.Notifier({"NOTIFY_SOCKET": "/nonexistent/notify", "WATCHDOG_USEC": str(int(WATCHDOG_S * 1e6))})
    sent = []
    monkeypatch.setattr(n, "send", lambda *fields: sent.append((clock[0], fields)))
    assert n.watchdog_s == WATCHDOG_S / 2
    for k in range(1000):  # a loop turning every 10 ms for 10 s
        clock[0] = 1000.0 + k * 0.01
        n.heartbeat()
    times = np.array([t for t, _ in sent]) - 1000.0
    assert all(fields == ("WATCHDOG=1",) for _, fields in sent)
    assert times.shape == (10,) and np.allclose(times, np.arange(10) * WATCHDOG_S / 2, atol=0.011), times
    clock[0] += 0.75  # the loop was late: it beats at once on its next turn ...
    n.heartbeat()
    clock[0] += 0.5  # ... and not again before a half period has passed since that beat
    n.heartbeat()
    assert len(sent) == 11


def test_ready_once_bound_and_connected_then_a_steady_heartbeat(notified, figure):
    ns = notified.notify
    ready = [m for _, m in ns.drain() if "READY=1" in m.split("\n")]
    assert len(ready) == 1 and "STATUS=" in ready[0] and "MAINPID=" in ready[0]
    # READY is sent only after start-up finished: by then the driver had connected and reported
    st = notified.client.status()
    assert st["driver"]["ready"] and st["recorder"]["ready"]
    # the loop keeps beating on its own, with nobody talking to it (generous outer time-out only)
    t0 = time.monotonic()
    while len(beats := [t for t in ns.times_of("WATCHDOG=1") if t >= t0]) < 5:
        assert time.monotonic() - t0 < 60, beats
        time.sleep(0.1)
    gaps = np.diff(beats)
    figure("READY=1 after bind + driver connect; WATCHDOG=1 every half period",
           heartbeat_mean_s=round(float(gaps.mean()), 3), heartbeat_max_gap_s=round(float(gaps.max()), 3))


def test_long_trajectory_validation_does_not_block_the_main_loop(notified, figure):
    """The known issue: a 10-minute trajectory took ~12 s to validate on the main loop. Now the
    check runs on a thread; status, abort and the heartbeat keep going meanwhile. Asserted by
    counting, not timing: status replies in which the daemon itself reports the validation still
    running (each a separate request by its own counter), and heartbeats that arrived between two
    such replies. The trajectory lasts LONG_RUN_S, so its check outlasts three heartbeats with a
    wide margin on a host many times faster than this one; the abort stops the check at its next
    window (the daemon logs it), so the length costs no CPU after the test. The latencies are
    figures (bench/reliability/run.py --only validation)."""
    c = notified.client
    ns = notified.notify
    sub = __import__("threading").Thread(target=lambda: _submit_expecting_cancel(notified))
    t_submit = time.monotonic()
    sub.start()
    during = []  # (sent, received, the daemon's request counter, validating_s) of replies made while validating
    latencies = []

    def beats_between_replies() -> list:
        # validation ran from before the first such reply was received until after the last one was asked for
        return [t for t in ns.times_of("WATCHDOG=1") if during and during[0][1] < t < during[-1][0]]

    while len(during) < 10 or len(beats_between_replies()) < 3:
        assert time.monotonic() - t_submit < 300, ("validation still not seen with the loop live", during)
        sent = time.monotonic()
        st = c.status()
        received = time.monotonic()
        latencies.append(received - sent)
        if st["control"]["validating_s"] is not None:
            during.append((sent, received, st["control"]["requests"], st["control"]["validating_s"]))
        else:
            # before the submission arrived, or (a broken loop) only answered once validation ended
            assert not during and sub.is_alive(), ("status answered only outside the validation", during)
        time.sleep(0.05)
    counters = [d[2] for d in during]
    validating = [d[3] for d in during]
    assert all(np.diff(counters) > 0) and all(np.diff(validating) > 0), during  # separate answers, clock moving
    with pytest.raises(DaemonError) as e:
        c.submit_run("panda", excitation(2.0))
    assert e.value.code == "busy"
    assert c.abort(reason="operator changed their mind")["cancelled_submission"] is True
    sub.join(60)
    assert not sub.is_alive() and notified.cancel_reply.code == "cancelled"
    deadline = time.monotonic() + 60  # outer: the check stops within one window of samples
    while "withdrawn submission: its check stopped" not in notified.log_text():
        assert time.monotonic() < deadline, notified.log_text()[-3000:]
        time.sleep(0.1)
    beats = [t for t in ns.times_of("WATCHDOG=1") if t >= t_submit]
    figure(f"{LONG_RUN_S / 60:.0f}-min trajectory validating: loop stays live", status_replies_while_validating=len(during),
           heartbeats_while_validating=len(beats_between_replies()),
           status_max_latency_ms=round(1000 * max(latencies), 1),
           status_p50_latency_ms=round(1000 * float(np.median(latencies)), 1),
           heartbeat_max_gap_s=round(float(np.diff([t_submit] + beats).max()), 3))


def _submit_expecting_cancel(d) -> None:
    from robodyn.daemon.client import Client

    with Client(d.control, timeout=60) as c:
        try:
            c.submit_run("panda", excitation(LONG_RUN_S, harmonics=LONG_HARMONICS, harmonic_decay=2.0))
            d.cancel_reply = None
        except DaemonError as exc:
            d.cancel_reply = exc


def test_sigterm_ramps_to_rest_finalizes_and_exits_zero(notified, figure):
    c = notified.client
    accepted = c.submit_run("panda", excitation(30.0, amplitude=0.06))
    wait_state(c, accepted["run_id"], ("execute",))
    time.sleep(0.3)
    t0 = time.monotonic()
    notified.proc.send_signal(signal.SIGTERM)
    code = notified.proc.wait(30)
    exit_s = time.monotonic() - t0
    assert code == 0, notified.log_text()[-3000:]
    assert notified.notify.times_of("STOPPING=1")
    rec = load_recording(accepted["recording"])
    assert not rec.truncated and rec.summary["status"] == "aborted", rec.summary
    assert "shutting down" in rec.summary["reason"] and rec.summary["lost_samples"] == 0
    assert rec.phase_mask("stopping").sum() > 0
    assert np.abs(rec.signal("qd_d")[-1]).max() == 0.0 and np.abs(rec.signal("qd")[-1]).max() < 0.05
    figure("SIGTERM mid-run: ramp to rest, recording finalized, exit 0", exit_s=round(exit_s, 2),
           stopping_samples=int(rec.phase_mask("stopping").sum()))


def test_worker_service_runs_the_queue_in_order_and_survives_a_failing_job(tmp_path):
    """robodyn-worker.service's command: jobs queued by the daemon ([jobs] runner = "service")
    run one at a time in queue order; a job that fails does not stop the worker."""
    import json

    from robodyn.jobs.identification import JobManager, queued_jobs

    manager = JobManager(tmp_path, tmp_path / "recordings", runner="service")
    (tmp_path / "recordings").mkdir()
    for name in ("a", "b"):
        (tmp_path / "recordings" / f"{name}.mcap").write_bytes(b"not a recording")
    first = manager.cmd_identify({"recordings": ["a"]})["job"]
    time.sleep(0.01)
    second = manager.cmd_identify({"recordings": ["b"]})["job"]
    assert queued_jobs(manager.jobs_dir) == [first, second]
    assert manager.summary()["queued"] == [first, second]
    done = subprocess.run([shutil.which("robodyn") or str(ROOT / ".venv" / "bin" / "robodyn"), "worker",
                           "--data-dir", str(tmp_path), "--once"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for job in (first, second):
        st = json.loads((manager.jobs_dir / job / "status.json").read_text())
        assert st["state"] == "failed" and "robodyn recording" in st["error"], st
    assert queued_jobs(manager.jobs_dir) == []
