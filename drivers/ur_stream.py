"""Sample accounting for a UR's RTDE stream, by the controller's own timestamps.

ur_rtde's receive thread keeps only the newest package (and silently skips a package when two wait
in its buffer), its getters return whatever is newest, and after a disconnect they keep returning
the last values. None of that shows in the values themselves; the controller ``timestamp`` (its
clock, one tick per RTDE period) does. ``SampleClock`` classifies each poll:

- same timestamp as before: not a new sample (a repeat, never recorded twice);
- one period later: the next sample;
- k > 1 periods later: k - 1 samples lost, counted;
- earlier than before: the controller restarted (its clock rewound), counted and reported.
"""

from __future__ import annotations

from dataclasses import dataclass

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
