"""The main process kills a worker that is silent for HANG_TIMEOUT_S of its own time, and not one
that is silent because the host gives it no CPU (daemon/supervision.py: wedged). Real processes
and the kernel's real scheduler statistics; only the wall clock of the silence is given, so no
test waits for HANG_TIMEOUT_S."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time

import pytest

from robodyn.daemon.schedstat import process_run_delay_s
from robodyn.daemon.supervision import HANG_TIMEOUT_S, SILENCE_NOTICED_S, Component, wedged
from tests.processes import die_with_parent

SPIN = [sys.executable, "-c", "while True: pass"]

pytestmark = pytest.mark.skipif(process_run_delay_s(os.getpid()) is None,
                                reason="this kernel keeps no scheduler statistics (/proc/<pid>/schedstat)")


class _Process:
    """The part of multiprocessing.Process that wedged() reads."""

    def __init__(self, popen: subprocess.Popen):
        self.pid = popen.pid


def _component(popen: subprocess.Popen, last_time: float) -> Component:
    return Component("recorder", None, process=_Process(popen), ready=True, pid=popen.pid, last_time=last_time)


def _stop(popen: subprocess.Popen) -> None:
    popen.kill()
    popen.wait(30)


def test_a_stopped_worker_is_wedged_once_its_silence_passes_the_limit(caplog):
    """SIGSTOP: not runnable, so none of its silence is excused."""
    child = subprocess.Popen(SPIN, preexec_fn=die_with_parent)
    try:
        os.kill(child.pid, signal.SIGSTOP)
        comp = _component(child, last_time=0.0)
        assert not wedged(comp, SILENCE_NOTICED_S / 2)  # too short to look into
        assert comp.silence_base is None
        assert not wedged(comp, SILENCE_NOTICED_S + 0.1)  # looked into: the starvation count starts
        assert comp.silence_base is not None and comp.silence_base[0] == 0.0
        assert not wedged(comp, HANG_TIMEOUT_S - 0.1)
        with caplog.at_level(logging.ERROR, logger="robodyn.daemon"):
            assert wedged(comp, HANG_TIMEOUT_S + 0.1)
        assert "killing it" in caplog.text and "0.0 s of it waiting for a CPU" in caplog.text
    finally:
        _stop(child)


def test_a_starved_worker_is_not_killed_and_the_overload_is_logged_once(caplog):
    """A runnable worker given no CPU: a spinning child at SCHED_IDLE on the same CPU as a
    nice-0 spinner gets about 0.3 % of it, so its run delay grows with the wall clock, and the
    silence it excuses is what the kernel counted, not an estimate."""
    cpu = min(os.sched_getaffinity(0))
    hog = subprocess.Popen(SPIN, preexec_fn=die_with_parent)
    child = subprocess.Popen(SPIN, preexec_fn=die_with_parent)
    try:
        os.sched_setaffinity(hog.pid, {cpu})
        os.sched_setaffinity(child.pid, {cpu})
        os.sched_setscheduler(child.pid, os.SCHED_IDLE, os.sched_param(0))
        comp = _component(child, last_time=0.0)
        assert not wedged(comp, SILENCE_NOTICED_S + 0.1)
        base = comp.silence_base[1]
        # work done, not time: wait until the kernel has counted 2 s of waiting (outer guard 120 s)
        deadline = time.monotonic() + 120
        while process_run_delay_s(child.pid) - base < 2.0:
            assert time.monotonic() < deadline, "the starved child's run delay did not grow"
            time.sleep(0.1)
        # silent HANG_TIMEOUT_S + 1 s by the wall clock, of which at least 2 s starved: excused
        with caplog.at_level(logging.WARNING, logger="robodyn.daemon"):
            assert not wedged(comp, HANG_TIMEOUT_S + 1.0)
            assert not wedged(comp, HANG_TIMEOUT_S + 1.5)
        warnings = [r for r in caplog.records if "not killed" in r.getMessage()]
        assert len(warnings) == 1 and "waiting for a CPU" in warnings[0].getMessage()
        # the excuse is the starvation counted, no more: far past it, the silence is the worker's
        starved = process_run_delay_s(child.pid) - base
        assert wedged(comp, HANG_TIMEOUT_S + starved + 60.0)
    finally:
        _stop(child)
        _stop(hog)


def test_a_new_message_restarts_the_count():
    """The starvation excused is counted from the present silence only: a worker that spoke since
    gets a new base, so an earlier starvation cannot excuse a later wedge."""
    child = subprocess.Popen(SPIN, preexec_fn=die_with_parent)
    try:
        os.kill(child.pid, signal.SIGSTOP)
        comp = _component(child, last_time=0.0)
        assert not wedged(comp, SILENCE_NOTICED_S + 0.1)
        first = comp.silence_base
        comp.last_time = 10.0  # it spoke
        assert not wedged(comp, 10.0 + SILENCE_NOTICED_S / 2)
        assert comp.silence_base is None
        assert not wedged(comp, 10.0 + SILENCE_NOTICED_S + 0.1)
        assert comp.silence_base is not first and comp.silence_base[0] == 10.0
        assert wedged(comp, 10.0 + HANG_TIMEOUT_S + 0.1)
    finally:
        _stop(child)
