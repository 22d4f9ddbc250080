"""Allocation-free timing statistics of a real-time loop (loop period histogram), kept by the drivers
and by the daemon's loop process."""

from __future__ import annotations

import numpy as np

BIN_NS = 1_000  # 1 us resolution
MAX_NS = 20_000_000  # periods beyond 20 ms land in the last bin (max is still exact)


class PeriodHistogram:
    """Histogram of loop periods: O(1) per sample, percentiles on demand (not per cycle)."""

    def __init__(self):
        self.counts = np.zeros(MAX_NS // BIN_NS + 1, dtype=np.int64)
        self.reset()

    def reset(self) -> None:
        self.counts[:] = 0
        self.n = 0
        self.max_ns = 0
        self.sum_ns = 0

    def add(self, period_ns: int) -> None:
        b = period_ns // BIN_NS
        self.counts[b if b < self.counts.shape[0] else -1] += 1
        self.n += 1
        self.sum_ns += period_ns
        if period_ns > self.max_ns:
            self.max_ns = period_ns

    def percentile_ms(self, p: float) -> float | None:
        if self.n == 0:
            return None
        rank = int(np.ceil(p / 100.0 * self.n))
        b = int(np.searchsorted(np.cumsum(self.counts), max(rank, 1)))
        return (b + 0.5) * BIN_NS / 1e6  # bin centre

    def summary(self) -> dict:
        if self.n == 0:
            return {"count": 0}
        return {"count": self.n, "mean_ms": self.sum_ns / self.n / 1e6, "p50_ms": self.percentile_ms(50),
                "p99_ms": self.percentile_ms(99), "p999_ms": self.percentile_ms(99.9),
                "max_ms": self.max_ns / 1e6}


def latency_summary(latencies_ms: np.ndarray) -> dict:
    if latencies_ms.size == 0:
        return {"count": 0}
    return {"count": int(latencies_ms.size), "p50_ms": float(np.percentile(latencies_ms, 50)),
            "p99_ms": float(np.percentile(latencies_ms, 99)), "p999_ms": float(np.percentile(latencies_ms, 99.9)),
            "max_ms": float(np.max(latencies_ms))}
