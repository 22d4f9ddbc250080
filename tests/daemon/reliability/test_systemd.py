"""systemd integration: the unit files verify; readiness, watchdog heartbeat and stopping through
the notify protocol (a fake NOTIFY_SOCKET); the main loop stays live while a long trajectory is
validated; SIGTERM ramps motion to rest, finalizes the recording and exits 0."""

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from robodyn.daemon.logs import DaemonFormatter, format_fields
from robodyn.daemon.recording import load_recording
from robodyn.daemon.sdnotify import notify_address, watchdog_interval_s
from robodyn.daemon.client import DaemonError
from tests.daemon.conftest import DaemonProcess, excitation
from tests.system_tools import require_system_tool

from .scenarios import wait_state

ROOT = Path(__file__).resolve().parents[3]
UNITS = sorted((ROOT / "systemd").glob("*.service"))
WATCHDOG_S = 2.0


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


class NotifySocket:
    """systemd's side of the notify protocol: a datagram socket read by a thread, so each
    message is stamped when it arrives."""

    def __init__(self, path: Path):
        import threading

        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.1)
        self.messages: list[tuple[float, str]] = []
        self.closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while not self.closed:
            try:
                self.messages.append((time.monotonic(), self.sock.recv(4096).decode()))
            except (TimeoutError, socket.timeout):
                continue

    def drain(self) -> list[tuple[float, str]]:
        return list(self.messages)

    def times_of(self, field: str) -> list[float]:
        return [t for t, m in self.drain() if field in m.split("\n")]


@pytest.fixture(scope="module")
def notified(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("notify")
    ns = NotifySocket(tmp / "notify")
    d = DaemonProcess(tmp, env={"NOTIFY_SOCKET": str(tmp / "notify"), "WATCHDOG_USEC": str(int(WATCHDOG_S * 1e6))})
    d.notify = ns
    yield d
    d.stop()
    ns.closed = True


def test_ready_once_bound_and_connected_then_a_steady_heartbeat(notified, figure):
    ns = notified.notify
    ready = [m for _, m in ns.drain() if "READY=1" in m.split("\n")]
    assert len(ready) == 1 and "STATUS=" in ready[0] and "MAINPID=" in ready[0]
    # READY is sent only after start-up finished: by then the driver had connected and reported
    st = notified.client.status()
    assert st["driver"]["ready"] and st["recorder"]["ready"]
    t0 = time.monotonic()
    time.sleep(3 * WATCHDOG_S)
    beats = [t for t in ns.times_of("WATCHDOG=1") if t >= t0]
    gaps = np.diff(beats)
    assert len(beats) >= 5 and gaps.max() < WATCHDOG_S * 0.75, gaps
    figure("READY=1 after bind + driver connect; WATCHDOG=1 every half period",
           heartbeat_mean_s=round(float(gaps.mean()), 3), heartbeat_max_gap_s=round(float(gaps.max()), 3))


def test_long_trajectory_validation_does_not_block_the_main_loop(notified, figure):
    """The known issue: a 10-minute trajectory took ~12 s to validate on the main loop. Now the
    check runs on a thread; status, abort and the heartbeat keep going meanwhile."""
    c = notified.client
    ns = notified.notify
    t_submit = time.monotonic()
    sub = __import__("threading").Thread(target=lambda: _submit_expecting_cancel(notified))
    sub.start()
    latencies = []
    while time.monotonic() - t_submit < 3.0:
        t0 = time.monotonic()
        st = c.status()
        latencies.append(time.monotonic() - t0)
        time.sleep(0.05)
    assert st["control"]["validating_s"] is not None  # still validating the 10-minute trajectory
    with pytest.raises(DaemonError) as e:
        c.submit_run("panda", excitation(2.0))
    assert e.value.code == "busy"
    assert c.abort(reason="operator changed their mind")["cancelled_submission"] is True
    sub.join(30)
    assert not sub.is_alive() and notified.cancel_reply.code == "cancelled"
    beats = [t for t in ns.times_of("WATCHDOG=1") if t >= t_submit]
    gap = float(np.diff([t_submit] + beats).max())
    assert max(latencies) < 0.5 and gap < WATCHDOG_S * 0.75, (max(latencies), gap)
    figure("10-min trajectory validating: loop stays live", status_max_latency_ms=round(1000 * max(latencies), 1),
           status_p50_latency_ms=round(1000 * float(np.median(latencies)), 1), heartbeat_max_gap_s=round(gap, 3))


def _submit_expecting_cancel(d) -> None:
    from robodyn.daemon.client import Client

    with Client(d.control, timeout=60) as c:
        try:
            c.submit_run("panda", excitation(600.0))
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

    from robodyn.identification.daemon_jobs import JobManager, queued_jobs

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
