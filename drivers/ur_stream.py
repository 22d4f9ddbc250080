"""Sample accounting for a UR's RTDE stream, by the controller's own timestamps.

ur_rtde's receive thread keeps only the newest package (and silently skips a package when two wait
in its buffer), its getters return whatever is newest, and after a disconnect they keep returning
the last values. None of that shows in the values themselves; the controller ``timestamp`` (its
clock, one tick per RTDE period) does. ``SampleClock`` classifies each poll:

- same timestamp as before: not a new sample (a repeat, never recorded twice);
- one period later: the next sample;
- k > 1 periods later: k - 1 samples lost, counted;
- earlier than before: the controller restarted (its clock rewound), counted and reported.

The driver's options (``URConfig``) live here too, beside the stream's timing, because the daemon's
configuration check reads them on hosts without ur_rtde installed.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import NUMBER, DriverOptions, option

NEW, REPEAT, REWIND = 1, 0, -1


@dataclass
class SampleClock:
    period: float  # s, 1 / RTDE frequency
    last: float | None = None
    received: int = 0
    lost: int = 0
    repeats: int = 0
    rewinds: int = 0
    max_gap: int = 0

    def classify(self, timestamp: float) -> tuple[int, int]:
        """(kind, samples lost just before this one)."""
        if self.last is None:
            self.last = timestamp
            self.received += 1
            return NEW, 0
        steps = round((timestamp - self.last) / self.period)
        if steps == 0:
            self.repeats += 1
            return REPEAT, 0
        if steps < 0:
            self.rewinds += 1
            self.last = timestamp
            self.received += 1
            return REWIND, 0
        gap = steps - 1
        self.lost += gap
        self.max_gap = max(self.max_gap, gap)
        self.last = timestamp
        self.received += 1
        return NEW, gap

    def summary(self) -> dict:
        total = self.received + self.lost
        return {"received": self.received, "lost": self.lost, "repeats_skipped": self.repeats,
                "rewinds": self.rewinds, "max_gap": self.max_gap,
                "completeness": (self.received / total) if total else None}


@dataclass
class URConfig(DriverOptions):
    driver = "ur"

    host: str = option("192.168.1.10", "controller address", types=(str,))
    robot: str = option("ur5e", "model name for limits and joint names", types=(str,))
    frequency: float | None = option(None, "RTDE rate, Hz; unset: 500 (e-Series); a CB3 needs 125", low=0.0,
                                     low_open=True, high=500.0, types=NUMBER)
    drive_gains: list | None = option(None, "N.m/A per joint; unset: nominal (ur_gains.NOMINAL_DRIVE_GAINS)",
                                      low=0.0, low_open=True, types=(list, tuple))
    lookahead_time: float = option(0.1, "servoJ lookahead, s", low=0.03, high=0.2, types=NUMBER)
    servo_gain: float = option(300.0, "servoJ proportional gain", low=100.0, high=2000.0, types=NUMBER)
    stale_timeout_s: float = option(0.25, "no new controller timestamp for this long = link dead", low=0.0,
                                    low_open=True, types=NUMBER)
    poll_s: float = option(0.0002, "sleep between timestamp polls, s (the receive thread updates asynchronously)",
                           low=0.0, high=0.01, types=NUMBER)
    connect_timeout_s: float = option(2.0, "how long connect waits for the controller, s", low=0.0, low_open=True,
                                      types=NUMBER)
    rt_priority: int = option(0, "> 0: SCHED_FIFO for this thread and ur_rtde's receive threads", low=0, high=99,
                              types=(int,))
