"""How a worker process (driver, recorder, publisher) tells that the daemon's main process died.

The main process's pid is the one multiprocessing recorded when the main process created the
worker, not ``os.getppid()`` read in the worker: a worker still starting (importing, compiling
the simulator's kernels, connecting to its robot) when the main process is SIGKILLed reads the
pid of whoever adopted it (init, or a subreaper: 1 when tried by hand), compares later reads
against that, and never notices. The check is ``os.getppid() != main_pid``: the kernel re-parents
an orphan at once, so a worker's parent is the main process exactly while it lives.

**Before it reports ready** (no run exists, nothing moves, no file is open for a run) a worker
leaves within about a second, whatever its main thread is doing: :class:`StartupWatch`, started
on entry (:func:`watch_start_up`), is a daemon thread that polls :func:`main_process_gone` every
:data:`POLL_S` and, when the main process is gone, prints the one line of :func:`say_leaving`
naming the step the worker was in (:func:`start_up_step`: "while building the simulated robot
and compiling its numba kernels", "while connecting to the Franka at ADDRESS") and ends the process with ``os._exit``:
the main thread may be inside a step that does not return for minutes (a cold numba compile on a
busy host) or never (a robot address that accepts and does not answer), so there is nothing to
unwind to. A numba compile lets the thread run (numba is Python; LLVM is called through ctypes,
which releases the GIL). Some client libraries' C++ calls hold the GIL while they block
(pylibfranka's ``Robot()`` and its configuration calls, ur_rtde's interface constructors: no
``gil_scoped_release`` in their bindings, and a connect to a loopback listener that never answers
stops every other Python thread until the process is killed). No Python thread can run then, so
during such a call (:func:`holding_the_gil`) the kernel watches instead: ``PR_SET_PDEATHSIG``
with SIGKILL, armed for that call only and disarmed after it. A worker killed there leaves at
once but without its line (nothing in the process can write it while the GIL is held). The
parent-death signal fires when the *thread* that created the worker exits; the daemon creates
its workers from its main thread, which lives as long as the daemon serves.

**From ready on** the watch is gone (:func:`start_up_done`) and each worker checks while it runs
and leaves on its own: the driver brings any motion to rest first, the recorder finalizes an open
file (neither is ever killed for this; a parent-death signal, or this watch, would end them
mid-motion or mid-write). The hand-over cannot let the watch fire after ready: see
:meth:`StartupWatch.hand_over`. Each worker says why it leaves on stderr (the daemon's log).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading

POLL_S = 0.2  # the start-up watch's period: a dead main process is noticed within it
JOIN_S = 5.0  # outer bound for the watch thread to end once handed over (it only waits on an event)
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


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


class StartupWatch:
    """A worker's start-up, watched from a thread: the process ends at once (``os._exit``) when the
    main process dies before :meth:`hand_over`, saying in which step."""

    def __init__(self, worker: str, main_pid: int, step: str = "while starting up"):
        self.worker = worker
        self.main_pid = main_pid
        self.step = step  # a phrase: "while ..."
        self._lock = threading.Lock()
        self._handed_over = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"robodyn-{worker}-start-up-watch", daemon=True)

    @property
    def watching(self) -> bool:
        return not self._handed_over

    def start(self) -> StartupWatch:
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            if main_process_gone(self.main_pid):
                self.leave()
                return

    def leave(self) -> None:
        """End this process now, unless the start-up was handed over (then do nothing)."""
        with self._lock:
            if self._handed_over:
                return
            try:
                say_leaving(self.worker, self.main_pid, f"leaving at once, {self.step}, before reporting ready "
                                                        "(no run existed)")
            except (OSError, ValueError):  # a closed or broken stderr must not keep the process alive
                pass
            os._exit(0)

    def hand_over(self) -> None:
        """The worker reports ready next (or leaves on its own): from here on its own checks apply.

        Why the watch can never end the process after ready: :meth:`leave` exits only while it
        holds the lock and finds the start-up not handed over; this sets "handed over" under the
        same lock, and the worker sends ready only after this returns. So either :meth:`leave`
        took the lock first (the process ends inside it, this call waits on the lock until then,
        and ready is never sent), or this did (then :meth:`leave` finds it handed over and does
        nothing). There is no third order."""
        with self._lock:
            self._handed_over = True
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(JOIN_S)  # the driver's loop owns its process: no thread runs beside it


_watch: StartupWatch | None = None  # this process's start-up watch (one worker per process)


def watch_start_up(worker: str, main_pid: int) -> StartupWatch:
    """Start watching this worker's start-up (on entry, before anything slow)."""
    global _watch
    _watch = StartupWatch(worker, main_pid).start()
    return _watch


def start_up_step(what: str) -> None:
    """Name the step the worker is in now ("while ..."), for the line it prints if it leaves in it."""
    if _watch is not None:
        _watch.step = what


def start_up_done() -> None:
    """Before the worker reports ready, or leaves on its own: the watch ends (see
    :meth:`StartupWatch.hand_over`). Does nothing where no watch runs (a worker object in a test)."""
    global _watch
    watch, _watch = _watch, None
    if watch is not None:
        watch.hand_over()


def set_parent_death_signal(sig: int) -> bool:
    """prctl(PR_SET_PDEATHSIG, sig) (0 disarms); False where unavailable (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig)) == 0
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def holding_the_gil():
    """Around a client library's call that blocks in C++ while holding the GIL, during start-up:
    the watch thread cannot run then, so the kernel SIGKILLs this process if the main process
    dies meanwhile (PR_SET_PDEATHSIG), disarmed when the call returns. Outside a watched start-up
    (after ready: a reconnect; or no watch at all) it does nothing, so it never kills a worker
    that may be moving the robot or writing a recording."""
    watch = _watch
    armed = watch is not None and watch.watching and set_parent_death_signal(signal.SIGKILL)
    try:
        if armed and main_process_gone(watch.main_pid):  # died before the kernel was asked to watch
            watch.leave()
        yield
    finally:
        if armed:
            set_parent_death_signal(0)
