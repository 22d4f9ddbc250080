"""The kernel's scheduler statistics of one task (``/proc/<pid>/schedstat``, ``/proc/thread-self/
schedstat``): how long it has waited runnable for a CPU. That time is the host's, not the task's:
it tells a task that is starved (runnable, not running) from one that is wedged or slow on its
own. Where the kernel keeps no such statistics every read is None and callers fall back to wall
time."""

from __future__ import annotations

import os


def open_schedstat(pid: int | None = None) -> int | None:
    """A descriptor on the schedstat of ``pid`` (its main thread), or of the calling thread when
    None; None where the file does not exist or cannot be opened."""
    path = "/proc/thread-self/schedstat" if pid is None else f"/proc/{int(pid)}/schedstat"
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def run_delay_s(fd: int | None) -> float | None:
    """Seconds the task has spent runnable but waiting for a CPU since it started (the second
    field, in nanoseconds); None without statistics or once the task is gone."""
    if fd is None:
        return None
    try:
        return int(os.pread(fd, 64, 0).split()[1]) * 1e-9
    except (OSError, ValueError, IndexError):
        return None


def process_run_delay_s(pid: int) -> float | None:
    """:func:`run_delay_s` of another process's main thread, read once."""
    fd = open_schedstat(pid)
    try:
        return run_delay_s(fd)
    finally:
        if fd is not None:
            os.close(fd)
