"""Start a simulated daemon as a child process on free loopback ports, for the demo, the tests and
the benchmarks."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from robodyn.daemon.warm_up import cpu_seconds  # noqa: F401  (the benchmarks' CPU meter, from here)
from robodyn.errors import UserError


STARTUP_MARGIN_S = 30.0  # beyond the daemon's own start-up limits: its process start and imports
WARM_UP_LINE = "compiling the validation kernels"  # the daemon's own status line while it warms up
WAIT_REPORT_S = 10.0  # how often a waiting caller hears what it waits for
POLL_TIMEOUT_S = 1.0  # one readiness poll's wait for the daemon's answer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalDaemon:
    """``robodyn daemon`` in a subprocess, with its own config, data dir and log file."""

    def __init__(self, workdir: str | Path, robot: str = "panda", driver_options: dict | None = None,
                 startup_timeout: float | None = None, say=None):
        """``startup_timeout`` defaults to what the daemon itself allows its start (its workers' time-out
        plus the numba warm-up's hard cap, daemon/supervision.py and daemon/warm_up.py): the daemon
        judges its warm-up by progress and starts without it at that cap, so it gets ready or exits
        before this wait ends. ``say(text)``, when given, hears what the wait is for every
        WAIT_REPORT_S, with the daemon's own warm-up status line when it has one. The daemon dies
        with the process that started it (Linux), and a start that is given up on (time-out,
        Ctrl-C, any error) stops it."""
        from robodyn.daemon.supervision import STARTUP_TIMEOUT_S
        from robodyn.daemon.warm_up import DEFAULT_LIMIT_S, die_with_parent

        if startup_timeout is None:
            startup_timeout = STARTUP_TIMEOUT_S + DEFAULT_LIMIT_S + STARTUP_MARGIN_S
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.control = f"tcp://127.0.0.1:{free_port()}"
        self.state = f"tcp://127.0.0.1:{free_port()}"
        self.data_dir = self.workdir / "data"
        options = {"speed": 0.0, "seed": 0, **(driver_options or {})}
        lines = [f'[daemon]\ncontrol = "{self.control}"\nstate = "{self.state}"\ndata_dir = "{self.data_dir}"',
                 f'[robot]\nname = "{robot}"\ndriver = "sim"', "[driver]"]
        lines += [f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"' for k, v in options.items()]
        self.config = self.workdir / "daemon.toml"
        self.config.write_text("\n".join(lines) + "\n")
        self.log_path = self.workdir / "daemon.log"
        self._log = open(self.log_path, "w")
        # the kernel's parent-death signal follows the starting thread: only the main thread lives
        # as long as this process
        tie = die_with_parent if threading.current_thread() is threading.main_thread() else None
        self.proc = subprocess.Popen([sys.executable, "-m", "robodyn", "daemon", "--config", str(self.config)],
                                     stdout=self._log, stderr=subprocess.STDOUT, preexec_fn=tie)
        from robodyn.daemon.client import Client

        self.client = Client(self.control, timeout=30.0)
        try:
            self._wait_ready(startup_timeout, say)
        except BaseException:  # given up on, interrupted or failed: no daemon (or compiler) left behind
            self.stop()
            raise

    def _wait_ready(self, startup_timeout: float, say) -> None:
        from robodyn.daemon.client import DaemonError

        started = time.monotonic()
        deadline = started + startup_timeout
        next_report = started + WAIT_REPORT_S
        while True:
            if self.proc.poll() is not None:
                raise UserError(f"the daemon exited during start-up; see {self.log_path}")
            try:
                # a short wait per poll (DEALER: a late reply is dropped by its id), so the deadline
                # and the reports keep their pace while the daemon does not answer yet
                st = self.client.call("status", timeout=POLL_TIMEOUT_S)
                if st["driver"]["ready"] and st["recorder"]["ready"] and st["state"].get("q"):
                    break
            except Exception:  # not listening yet
                pass
            now = time.monotonic()
            if now > deadline:
                raise UserError(f"the daemon did not become ready in {startup_timeout:.0f} s; see {self.log_path}")
            if say is not None and now >= next_report:
                latest = self._latest_warm_up_line()
                say(f"  waiting for the daemon to become ready ({now - started:.0f} s): "
                    + (f"it is {latest}" if latest else "the first start after an install compiles its numba "
                       "kernels (about 25 s on an idle 2-core host, minutes on a busy one)"))
                next_report = now + WAIT_REPORT_S
            time.sleep(0.2)
        # whoever starts a local simulated daemon is its operator: arm it, as `robodyn arm` would
        # (the first state samples may still be in flight: the daemon refuses to arm without them)
        for attempt in range(50):
            try:
                self.client.arm()
                break
            except DaemonError:
                if attempt == 49:
                    raise
                time.sleep(0.2)

    def _latest_warm_up_line(self) -> str:
        """The daemon's last warm-up status line in its log ("compiling ... (N s, M s of CPU; ...)")."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - 8192))
                tail = f.read().decode(errors="replace")
        except OSError:
            return ""
        found = [line[line.index(WARM_UP_LINE):] for line in tail.splitlines() if WARM_UP_LINE in line]
        return found[-1].rstrip('"}') if found else ""

    def recording_path(self, run_or_recording_id: str) -> Path:
        return self.data_dir / "recordings" / f"{run_or_recording_id}.mcap"

    def stop(self) -> None:
        try:
            self.client.close()
        finally:
            terminate_daemon(self.proc)
            self._log.close()

    def __enter__(self) -> "LocalDaemon":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def terminate_daemon(proc: subprocess.Popen, grace_s: float = 30.0) -> None:
    """SIGTERM (the daemon ramps any motion to rest and finalizes its recording), then SIGKILL if
    it has not exited within ``grace_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
