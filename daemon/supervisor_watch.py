"""The driver's watch on its supervisor: the main process says it is alive on the control pipe
(daemon/supervision.py ``serve_forever``, beside systemd's watchdog heartbeat), and the driver
loop (daemon/rtloop.py) ramps a moving robot to rest by itself when it falls silent too long."""

from __future__ import annotations

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
