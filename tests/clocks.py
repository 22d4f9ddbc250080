"""Fake clocks for tests of code that reads the wall clock: no real time is measured."""


class TickingClock:
    """Fake wall time that advances ``step`` s at every reading."""

    def __init__(self, step: float):
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now
