"""Absolute-deadline pacing for real-time loops.

Deadlines are ``t0 + k * period`` on CLOCK_MONOTONIC, so waking late never accumulates drift.
The wait sleeps until shortly before the deadline and spins the rest: on this class of host
``time.sleep`` overshoots by 20-50 us typically and up to ~200 us, and a 1 kHz loop whose
period p99 must stay under 1.2 ms cannot afford that. The spin costs roughly ``SPIN_NS`` of CPU
per cycle.
"""

from __future__ import annotations

import gc
import os
import time
from contextlib import contextmanager

SPIN_NS = 120_000  # the last 120 us before a deadline are busy-waited


class Pacer:
    def __init__(self, period_s: float):
        if not period_s > 0:
            raise ValueError(f"period: must be > 0 s, got {period_s}")
        self.period_ns = int(round(period_s * 1e9))
        self._next_ns = 0
        self.overruns = 0  # cycles that started more than one period late

    def reset(self) -> None:
        self._next_ns = time.monotonic_ns() + self.period_ns

    def wait(self) -> int:
        """Sleep until the next deadline; return it (ns). Late cycles are counted, not skipped."""
        deadline = self._next_ns
        now = time.monotonic_ns()
        remaining = deadline - now
        if remaining > SPIN_NS:
            time.sleep((remaining - SPIN_NS) * 1e-9)
        while time.monotonic_ns() < deadline:
            pass
        if now - deadline > self.period_ns:
            self.overruns += 1
            # far behind (e.g. the host was suspended): restart the schedule instead of bursting
            self._next_ns = now + self.period_ns
        else:
            self._next_ns = deadline + self.period_ns
        return deadline


def set_realtime(priority: int) -> str:
    """Move the calling thread to SCHED_FIFO ``priority`` (0: leave it alone); say what it got.

    Threads created afterwards inherit the policy, which is why callers do this before a client
    library starts its receive threads."""
    if priority <= 0:
        return "default scheduler"
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return f"SCHED_FIFO {priority}"
    except (PermissionError, OSError) as exc:
        return f"default scheduler (SCHED_FIFO {priority} refused: {exc})"


@contextmanager
def realtime(priority: int, pause_gc: bool = True):
    """A real-time section of the calling thread: ``set_realtime`` for the duration of the block,
    and the cyclic garbage collector paused (a full collection of a large heap takes several ms,
    longer than a 500 Hz period). The thread's own policy and the collector come back after, so
    processes spawned later do not inherit SCHED_FIFO."""
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    collecting = gc.isenabled()
    if pause_gc:
        gc.collect()
        gc.disable()
    try:
        yield set_realtime(priority)
    finally:
        if priority > 0:
            os.sched_setscheduler(0, policy, param)
        if pause_gc and collecting:
            gc.enable()
