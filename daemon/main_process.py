"""How a worker process (driver, recorder, publisher) tells that the daemon's main process died.

The main process's pid is the one multiprocessing recorded when the main process created the
worker, not ``os.getppid()`` read in the worker: a worker still starting (importing, compiling
the simulator's kernels, connecting to its robot) when the main process is SIGKILLed reads the
pid of whoever adopted it (init, or a subreaper: 1 when tried by hand), compares later reads
against that, and never notices. The check is ``os.getppid() != main_pid``: the kernel re-parents
an orphan at once, so a worker's parent is the main process exactly while it lives.

Each worker checks on entry, before it reports ready and then while it runs, and leaves on its
own: the driver brings any motion to rest first, the recorder finalizes an open file (neither is
ever killed for this; PR_SET_PDEATHSIG would SIGKILL them mid-motion or mid-write). During
start-up no run exists, so leaving is a clean exit. Each says why on stderr (the daemon's log).
"""

from __future__ import annotations

import multiprocessing
import os
import sys


def main_process_pid() -> int:
    """The daemon's main process: the creator of this worker process; when this object was made
    in a process not started by multiprocessing (a test), this process's parent."""
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None and parent.pid else os.getppid()


def main_process_gone(main_pid: int) -> bool:
    """The main process died (however: SIGKILL too); this worker was re-parented."""
    return os.getppid() != main_pid


def say_leaving(worker: str, main_pid: int, what: str) -> None:
    """One line on stderr (the daemon's log): the main process died, and what this worker does."""
    print(f"robodyn {worker}: the daemon's main process (pid {main_pid}) died; {what}", file=sys.stderr, flush=True)
