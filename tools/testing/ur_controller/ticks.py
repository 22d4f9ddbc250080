"""The tick schedule of the simulated UR controller: when the next tick is due (absolute deadlines,
packages never closer than MIN_SPACING periods), how to wait for it, and how well the schedule
held (:class:`TickTiming`, reported by ``sim status``)."""

from __future__ import annotations

import time

# ur_rtde keeps only the newest package when two wait in its socket buffer, so two packages sent
# back to back lose one at the client: consecutive packages leave at least this many periods apart
MIN_SPACING = 0.6
SPIN_NS = 150_000  # the last 150 us before a tick are busy-waited (time.sleep overshoots)


def next_deadline(deadline_ns: int, start_ns: int, period_ns: int, min_gap_ns: int) -> int:
    """When the tick after one due at ``deadline_ns`` and started at ``start_ns`` is due: one period
    later, unless this tick started so late that two packages would leave closer than ``min_gap_ns``
    (MIN_SPACING periods) apart. The gap is counted from tick start to tick start, which is also the
    spacing of the packages each tick sends at its end: counted from a tick's end, the tick's own work
    stretched every period (1 ms of work at 500 Hz made it 2.2 ms, 448 Hz, with no tick "late")."""
    return max(deadline_ns + period_ns, start_ns + min_gap_ns)


class TickTiming:
    """How well the tick keeps its schedule: lateness of each tick against the time it was due
    (its deadline, or in lockstep the arrival of the command it waited for: time spent waiting for
    the client is the client's), and the tick's own work. A tick more than half a period late is an
    overrun."""

    def __init__(self, dt: float):
        self.half_period_ns = int(dt * 1e9) // 2
        self.ticks = 0
        self.overruns = 0
        self.max_late_ms = 0.0
        self.max_work_ms = 0.0
        self.last_late_ms = 0.0
        self.execution_ms = 0.0  # of the previous tick, sent in the next package
        self.dt = dt
        self.first_start_ns: int | None = None
        self.last_start_ns = 0

    def add(self, due_ns: int, start_ns: int, end_ns: int) -> bool:
        """Count one tick; True on the first overrun (to announce it once)."""
        late_ns = max(0, start_ns - due_ns)
        work_ms = (end_ns - start_ns) * 1e-6
        self.ticks += 1
        if self.first_start_ns is None:
            self.first_start_ns = start_ns
        self.last_start_ns = start_ns
        self.max_work_ms = max(self.max_work_ms, work_ms)
        self.execution_ms = late_ns * 1e-6 + work_ms
        if late_ns <= self.half_period_ns:
            return False
        self.last_late_ms = late_ns * 1e-6
        self.max_late_ms = max(self.max_late_ms, self.last_late_ms)
        self.overruns += 1
        return self.overruns == 1

    def real_time_ratio(self) -> float | None:
        """Controller time over wall time between the first and the last tick timed: 1.0 when the
        schedule held; below 1 when the host (or lockstep waits for the client) slowed it."""
        if self.first_start_ns is None or self.last_start_ns <= self.first_start_ns:
            return None
        return (self.ticks - 1) * self.dt / ((self.last_start_ns - self.first_start_ns) * 1e-9)

    def summary(self) -> dict:
        ratio = self.real_time_ratio()
        return {"overruns": self.overruns, "max_late_ms": round(self.max_late_ms, 3),
                "max_tick_work_ms": round(self.max_work_ms, 3), "ticks_timed": self.ticks,
                "real_time_ratio": None if ratio is None else round(ratio, 4)}


def sleep_until(deadline_ns: int) -> None:
    remaining = deadline_ns - time.monotonic_ns()
    if remaining > SPIN_NS:
        time.sleep((remaining - SPIN_NS) * 1e-9)
    while time.monotonic_ns() < deadline_ns:
        pass
