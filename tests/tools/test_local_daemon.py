"""tools/testing/local_daemon.py: a daemon that is slow to become ready (a first start after an
install compiles its numba kernels) is waited for as long as the daemon itself allows, and the
caller hears what it is waiting for."""

import subprocess
import sys
import time

import pytest

from robodyn.daemon.supervision import STARTUP_TIMEOUT_S
from robodyn.daemon.warm_up import DEFAULT_LIMIT_S
from robodyn.errors import UserError
from robodyn.tools.testing import local_daemon


class QuarterSecondPolls:
    """``local_daemon``'s time module, with a monotonic clock that each sleep between polls moves
    by exactly 0.25 s (so the count of reports is exact on any host)."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += 0.25

    def __getattr__(self, name):
        return getattr(time, name)


def test_a_slow_start_is_reported_while_waited_for_then_given_up_with_one_line(tmp_path, monkeypatch):
    started = []
    popen = subprocess.Popen

    def silent_daemon(argv, **kw):  # a process that never answers on the control port
        started.append(argv)
        return popen([sys.executable, "-c", "import time; time.sleep(60)"], **kw)

    monkeypatch.setattr(local_daemon.subprocess, "Popen", silent_daemon)
    monkeypatch.setattr(local_daemon, "WAIT_REPORT_S", 1.0)
    monkeypatch.setattr(local_daemon, "POLL_TIMEOUT_S", 0.2)
    # the wait's clock moves a quarter second per poll, whatever the host does: 16 polls in the
    # 4 s, and a report at 1, 2, 3 and 4 s, not on every poll
    monkeypatch.setattr(local_daemon, "time", QuarterSecondPolls())
    heard = []
    with pytest.raises(UserError, match=r"did not become ready in 4 s; see .*daemon\.log"):
        local_daemon.LocalDaemon(tmp_path, startup_timeout=4.0, say=heard.append)
    assert started and started[0][1:4] == ["-m", "robodyn", "daemon"]
    assert len(heard) == 4, heard
    assert all("waiting for the daemon" in h and "numba" in h for h in heard)


def test_the_default_wait_covers_the_daemons_own_start_up_limits():
    import inspect

    assert inspect.signature(local_daemon.LocalDaemon).parameters["startup_timeout"].default is None
    assert local_daemon.STARTUP_MARGIN_S > 0
    # what __init__ uses when none is given: the workers' limit plus the warm-up's hard cap, and a margin
    assert STARTUP_TIMEOUT_S + DEFAULT_LIMIT_S + local_daemon.STARTUP_MARGIN_S > 90.0


def test_an_abandoned_start_leaves_no_daemon_and_the_wait_repeats_the_daemons_warm_up_line(tmp_path, monkeypatch):
    """Ctrl-C (or any error) during the wait stops the daemon it started; while waiting, the caller
    hears the daemon's own warm-up status line from its log."""
    started = []
    popen = subprocess.Popen
    line = "compiling the validation kernels in a child process (20 s, 9 s of CPU; limit 1800 s)"

    def warming_daemon(argv, **kw):
        proc = popen([sys.executable, "-c", f"import sys, time; print({line!r}, flush=True); time.sleep(60)"], **kw)
        started.append(proc)
        return proc

    monkeypatch.setattr(local_daemon.subprocess, "Popen", warming_daemon)
    monkeypatch.setattr(local_daemon, "WAIT_REPORT_S", 0.5)
    monkeypatch.setattr(local_daemon, "POLL_TIMEOUT_S", 0.2)
    heard = []

    def say(text):
        heard.append(text)
        if "it is compiling" in text or len(heard) >= 100:  # the fake's start may take a while on a busy host
            raise KeyboardInterrupt  # the user gives up while the daemon is still compiling

    with pytest.raises(KeyboardInterrupt):
        local_daemon.LocalDaemon(tmp_path, say=say)
    assert started and started[0].poll() is not None  # stopped, not left running
    assert heard[-1].endswith("it is " + line)
