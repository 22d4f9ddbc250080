"""Helpers for tests that start other processes."""

from __future__ import annotations

import signal


def die_with_parent() -> None:
    """``preexec_fn`` for subprocess.Popen: the child gets SIGKILL when the test process dies,
    however it dies (timeout, SIGKILL, a crashed interpreter). A daemon or a simulated controller
    that busy-waits at SCHED_FIFO must never outlive a killed test run and starve the host."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
