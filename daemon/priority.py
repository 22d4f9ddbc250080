"""The main process's scheduling: its loop thread (the control socket, the worker pipes),
ZeroMQ's I/O thread (which moves a request from the TCP or ipc socket to the loop) and the Python
threads alive when the loop starts serving run at a real-time priority just under the driver's
loop, where the host allows it.

Why: on the default scheduler a stop that the loop would answer at once still waits until the
host's scheduler runs the loop again. At a load average of 13 on 2 cores that wait reached 7.4
real-time periods for a stop whose own work ahead was under one period
(bench/reliability/observer_flood.py). SCHED_FIFO just under the driver puts the loop ahead of
every ordinary process and never ahead of the driver. The other Python threads alive then (the
identification jobs' supervisor) go with it: the loop needs the GIL after every poll, and an
ordinary thread preempted while holding it would hold the loop up (priority inversion).

The loop thread is raised when it starts serving: start-up (spawning the workers, loading the
validation kernels, a full garbage collection) runs on the default scheduler. ZeroMQ's threads get
their priority when they start, with the context's first socket. ``SCHED_RESET_ON_FORK``: every
thread and process started afterwards starts on the default scheduler (a validation thread, the
heavy reads' pool, the workers, the identification jobs).
"""

from __future__ import annotations

import os
import time


def main_priority(driver_priority: int) -> int:
    """The loop thread's SCHED_FIFO priority: one under the driver's, or 0 (default scheduler)
    when the driver runs on the default scheduler (or at 1, with nothing under it)."""
    return driver_priority - 1 if driver_priority > 1 else 0


def set_main_realtime(priority: int) -> tuple[bool, str]:
    """Move the calling thread to SCHED_FIFO ``priority`` with SCHED_RESET_ON_FORK; (done, what
    it runs on). Refused without CAP_SYS_NICE (root) or an RLIMIT_RTPRIO of at least ``priority``."""
    if priority <= 0:
        return False, "default scheduler"
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(priority))
    except OSError as exc:
        return False, f"default scheduler (SCHED_FIFO {priority} refused: {exc.strerror or exc})"
    return True, f"SCHED_FIFO {priority}"


def default_scheduler() -> None:
    """The calling thread back on the default scheduler (always allowed)."""
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def realtime_io_threads(ctx, zmq, priority: int) -> None:
    """ZeroMQ's I/O threads of ``ctx`` at SCHED_FIFO ``priority``: they start with the context's
    first socket, so this is called before it. Only once ``set_main_realtime`` succeeded: libzmq
    aborts the process when the host refuses its threads' priority."""
    ctx.set(zmq.THREAD_SCHED_POLICY, os.SCHED_FIFO)
    ctx.set(zmq.THREAD_PRIORITY, priority)


class GcPauses:
    """The cyclic garbage collector's pauses in this process, per generation: count, longest and
    total (ms, monotonic clock). A collection runs inside whatever allocates when a threshold is
    crossed, a request's handling included, so its pause is work a stop can wait behind."""

    def __init__(self):
        self.started = 0
        self.by_generation = {g: {"count": 0, "max_ms": 0.0, "total_ms": 0.0} for g in (0, 1, 2)}

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.started = time.perf_counter_ns()
            return
        entry = self.by_generation.get(info.get("generation"))
        if entry is None or not self.started:
            return
        ms = (time.perf_counter_ns() - self.started) / 1e6
        entry["count"] += 1
        entry["max_ms"] = max(entry["max_ms"], ms)
        entry["total_ms"] += ms

    def report(self) -> dict:
        return {str(g): {k: round(v, 3) if isinstance(v, float) else v for k, v in e.items()}
                for g, e in self.by_generation.items()}


def realtime_python_threads(priority: int) -> list[str]:
    """The process's other Python threads alive now (the identification jobs' supervisor, started
    by an extension) at SCHED_FIFO ``priority`` too, reset on fork; the names of those moved.

    Why: the loop thread needs the GIL after every poll. Held by an ordinary thread that the host
    has preempted, the loop waits until that thread runs again, however high its own priority
    (priority inversion). These threads do little (the jobs' supervisor looks every 0.2 s), so at
    the loop's priority they take the GIL briefly and give it back without being preempted.
    Threads started later (a validation, the heavy reads' pool) stay on the default scheduler."""
    import threading

    moved = []
    for thread in threading.enumerate():
        if thread is threading.current_thread() or not thread.native_id:
            continue
        try:
            os.sched_setscheduler(thread.native_id, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(priority))
            moved.append(thread.name)
        except OSError:  # ended meanwhile
            pass
    return moved
