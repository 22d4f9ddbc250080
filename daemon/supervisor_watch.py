"""The driver's watch on its supervisor: the main process says it is alive on the control pipe
(daemon/supervision.py ``serve_forever``, beside systemd's watchdog heartbeat), and the driver
loop (daemon/rtloop.py) ramps a moving robot to rest by itself when it falls silent too long."""

from __future__ import annotations

import mmap
import os
import struct

from . import protocol as P

# The main process says it is alive on the control pipe at most this often, from its loop (daemon/
# supervision.py serve_forever, beside systemd's watchdog heartbeat): the same bytes every time.
# Any message on the pipe counts as word from it.
SUPERVISOR_ALIVE = P.packb({"type": "supervisor_alive"})
SUPERVISOR_ALIVE_S = 0.025
# the silence is looked into (the main process's scheduler statistics read) past this share of the bound
SILENCE_LOOK_FRACTION = 4


class SupervisorWatch:
    """Whether the main process, which supervises this loop, has been silent too long.

    Its silence is the time since this loop last found a message on the control pipe, less the
    time the main process's loop thread waited runnable for a CPU meanwhile (daemon/schedstat.py,
    as the main process judges its workers: supervision.py ``wedged``): on an overloaded host a
    starved supervisor is still a supervisor. One that is stopped (SIGSTOP: not runnable) or stuck
    on its CPU (decoding a hostile frame: running) accrues no such wait, so all of its silence
    counts. Too long means more than ``bound_s``.

    Cheap enough to ask every few cycles: below a quarter of the bound a check is a subtraction
    and a comparison; past it, the main process's statistics are read once (the start of the
    starvation count: any earlier starvation counts against it), then again only when the wait
    counted so far no longer excuses the silence. Without statistics (``run_delay_s`` gives None)
    the wall time alone is judged."""

    def __init__(self, bound_s: float, run_delay_s, now_ns: int):
        self.bound_ns = int(round(bound_s * 1e9))
        self.look_ns = self.bound_ns // SILENCE_LOOK_FRACTION
        self.run_delay_s = run_delay_s  # () -> seconds the main process has waited for a CPU, or None
        self.heard_ns = now_ns
        self.looked = False
        self.base_s: float | None = None
        self.starved_ns = 0

    def heard(self, now_ns: int) -> None:
        self.heard_ns = now_ns
        self.looked = False
        self.starved_ns = 0

    def too_long(self, now_ns: int) -> bool:
        silence = now_ns - self.heard_ns
        if silence <= self.look_ns:
            return False
        if not self.looked:
            self.looked = True
            self.base_s = self.run_delay_s()
        if silence - self.starved_ns <= self.bound_ns:
            return False
        delay = self.run_delay_s()
        if delay is not None and self.base_s is not None:
            self.starved_ns = max(0, int((delay - self.base_s) * 1e9))
        return silence - self.starved_ns > self.bound_ns

    def reason(self, now_ns: int) -> str:
        """The run's abort reason: the silence counted against the main process."""
        starved = (f"; {self.starved_ns / 1e9:.2f} s more spent waiting for a CPU, not counted"
                   if self.starved_ns else "")
        return (f"supervisor silent for {(now_ns - self.heard_ns - self.starved_ns) / 1e9:.2f} s (bound "
                f"{self.bound_ns / 1e9:g} s, [safety].supervisor_silence_s{starved}): motion stopped by the driver")


class AliveBeacon:
    """The main loop's word that it runs, without a socket: an 8-byte counter in a file of the
    daemon's private runtime folder, mapped into both processes. The main loop bumps it (a store
    into shared memory); the driver compares it with what it read last. A message on the pipe
    passes through both processes' ZeroMQ I/O threads, and on a loaded host those threads waited
    for a CPU long enough (0.67 s at load 8 on 2 cores) for the driver to stop a run the main loop
    was serving well; this has nothing between the two loops."""

    SIZE = 8

    def __init__(self, path: str, writer: bool):
        fd = os.open(path, (os.O_RDWR | os.O_CREAT) if writer else os.O_RDONLY, 0o600)
        try:
            if writer:
                os.ftruncate(fd, self.SIZE)
            self.map = mmap.mmap(fd, self.SIZE, access=mmap.ACCESS_WRITE if writer else mmap.ACCESS_READ)
        finally:
            os.close(fd)
        self.count = 0
        self.last = None

    def bump(self) -> None:
        self.count += 1
        struct.pack_into("<Q", self.map, 0, self.count)

    def changed(self) -> bool:
        """Whether the counter moved since the last call (the first call: True)."""
        value = struct.unpack_from("<Q", self.map, 0)[0]
        moved, self.last = value != self.last, value
        return moved

    def close(self) -> None:
        self.map.close()
