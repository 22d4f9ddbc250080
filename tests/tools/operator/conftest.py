"""The operator's viewers against a real daemon: a simulated Panda in real time (1 kHz, as on a
lab PC), the bridge and the status page as the `robodyn` subprocesses an operator would start."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading

import pytest

from tests.processes import die_with_parent
from tests.daemon.conftest import DaemonProcess, excitation  # noqa: F401 (re-exported for the tests)


@pytest.fixture(scope="package")
def rt_daemon(tmp_path_factory):
    """Real time, so that a run lasts long enough to be watched while it executes."""
    d = DaemonProcess(tmp_path_factory.mktemp("operator-daemon"), speed=1.0)
    yield d
    d.stop()


class ViewerProcess:
    """`robodyn <command> ... --json`: the first stdout line is the address it serves."""

    # outer time-outs only (start, SIGTERM): at a load average of 19 a view took over 15 s to stop
    def __init__(self, argv: list[str], log_path, startup_timeout: float = 180.0):
        self.log = open(log_path, "w+")
        self.proc = subprocess.Popen([sys.executable, "-m", "robodyn", *argv, "--json"], stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, preexec_fn=die_with_parent)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            first = self.lines.get(timeout=startup_timeout)
        except queue.Empty:
            first = None
        if first is None:  # no address in time, or the view exited first (a refused argument): say so now
            text = self.log_text()
            self.proc.kill()
            self.proc.wait(30)
            self.log.close()
            raise AssertionError(f"{argv[0]} did not start (exit code {self.proc.returncode}; outer time-out "
                                 f"{startup_timeout:.0f} s):\n{text}")
        self.info = json.loads(first)

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)  # end of output: the view has exited

    def log_text(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self, timeout: float = 60.0) -> list[dict]:
        """SIGTERM, as systemd or Ctrl-C would; the JSON lines it printed on the way out."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
                raise AssertionError(f"did not stop on SIGTERM within {timeout:.0f} s:\n{self.log_text()}")
        out = []
        while not self.lines.empty():
            line = self.lines.get()
            if line is not None:
                out.append(json.loads(line))
        self.log.close()
        return out
