"""Lockstep: the simulated controller's clock waits for the streaming client (``--clock lockstep``).

While a control client is streaming servoJ, its input packages are queued and every tick applies
exactly one, in arrival order. A tick goes ahead only once the client has answered the package
before it (at most ``wait_s``; then the tick goes ahead, counted, and lockstep pauses until the
client sends again). No command is ever overwritten by the next one before a tick applied it (the
free clock keeps the newest, as a real controller does), so a servo run is the same sequence of
targets on any host.

A client can run one package behind the ticks: when it answered a package after a tick that did
not wait for it had already sent the next one (the first servoJ, which arrives while the clock is
still free, or the first command after a pause), its answers are applied a tick later than they
were sent for. Then one queued command is not yet the answer to the newest package, and a tick
that went ahead on it would send the next package before the client read the last one: the client,
which keeps only the newest package, would lose it, outside any pause. So the lead is counted (a
servoJ that arrives while more commands are queued than the lead raises it; any other command ends
the stream and the lead) and a tick waits until the queue holds more commands than the lead.
"""

from __future__ import annotations

import threading
from collections import deque

from .script import CMD_SERVOJ

KEPT = 1000  # pauses and lead ticks kept for `sim status`


class Lockstep:
    """The command queue and its counters; ``lock`` is the controller's (held by the callers of
    ``receive`` and ``pop``, taken by ``wait``)."""

    def __init__(self, lock: threading.Lock, wait_s: float):
        self.wait_s = wait_s
        self.queue: deque[dict] = deque()
        self.arrived = threading.Condition(lock)
        self.received = 0  # input packages, all of them (a paused lockstep resumes on the next)
        self._pause_mark = 0  # `received` when lockstep paused
        # commands the client sent ahead of the ticks; reset when lockstep pauses (the queue
        # drains on the wall clock) and when the stream ends
        self.lead = 0
        self.leads: deque[int] = deque(maxlen=KEPT)  # the ticks at which the lead grew
        self.waits = 0  # ticks that waited for the client's command
        self.timeouts = 0  # ticks that went ahead without it (wait_s)
        # the ticks lockstep was paused, [first, last] (last None while still paused): from a
        # timeout until the client's next command the ticks run on the wall clock, so a client can
        # miss packages only inside these spans, which tests check against its count
        self.pauses: deque[list] = deque(maxlen=KEPT)
        self.paused = False

    def receive(self, values: dict, streaming: bool, tick: int) -> bool:
        """One input package (lock held). True if it was queued; False: write it at once."""
        self.received += 1
        # (a package behind queued ones queues too, even after streaming ended: order is kept)
        queued = bool(self.queue) or streaming
        if queued:
            if values.get("input_int_register_0") != CMD_SERVOJ:
                self.lead = 0  # the stream ends: the ticks apply what is queued, this last
            elif streaming and not self.paused and len(self.queue) > self.lead:
                # the client answered a newer package while its answer to an older one is still
                # queued: it is one more command ahead of the ticks
                self.lead += 1
                self.leads.append(tick)
            self.queue.append(values)
        self.arrived.notify_all()
        return queued

    def pop(self) -> dict | None:
        """The command this tick applies, if one is queued (lock held)."""
        return self.queue.popleft() if self.queue else None

    def wait(self, tick: int) -> bool:
        """Before a tick while the client streams (lock not held): wait until the client has
        answered the newest package, i.e. more commands are queued than its lead. True if the tick
        had to wait. A client that stops streaming pauses lockstep until its next command."""
        with self.arrived:
            if self.paused:
                if self.received == self._pause_mark:
                    return False
                if self.pauses:
                    self.pauses[-1][1] = tick
                self.paused = False
            if len(self.queue) > self.lead:
                return False
            self.waits += 1
            if not self.arrived.wait_for(lambda: len(self.queue) > self.lead, self.wait_s):
                self.timeouts += 1
                self.pauses.append([tick, None])
                self.paused = True
                self._pause_mark = self.received
                self.lead = 0
            return True

    def status(self) -> dict:
        return {"lockstep_waits": self.waits, "lockstep_timeouts": self.timeouts, "lockstep_lead": self.lead,
                "lockstep_leads": list(self.leads), "lockstep_pauses": [list(p) for p in self.pauses]}
