"""The sampling report, the split at gaps and the checks of SampledData read a long recording chunk
by chunk (a day at 1 kHz would otherwise need 0.7 GB temporaries): the same results as the
whole-array numpy expressions, here with chunks of a few samples on small synthetic logs
(generated below: 1 kHz stamps with Gaussian jitter, repeated intervals and gaps)."""

import numpy as np
import pytest

from robodyn.identification import signals
from robodyn.identification.signals import SampledData, median_interval, sampling_report, split_at_gaps


def jittered_log_with_gaps(n: int, seed: int) -> np.ndarray:
    """1 kHz stamps, jitter of 2 % of a period, a third of the intervals exactly the nominal one
    (ties at the median), and three gaps of 5 to 40 periods (fewer in a log of fewer intervals)."""
    rng = np.random.default_rng(seed)
    dt = 1e-3 + rng.normal(scale=2e-5, size=n - 1)
    dt[rng.random(n - 1) < 0.33] = 1e-3
    gaps = min(3, n - 1)
    dt[rng.choice(n - 1, gaps, replace=False)] = rng.uniform(5e-3, 4e-2, gaps)
    return np.concatenate([[0.25], 0.25 + np.cumsum(dt)])


@pytest.mark.parametrize("n", [1001, 1000, 2, 3])  # odd and even numbers of intervals, and the least
@pytest.mark.parametrize("chunk", [1, 7, 64, 4096])
def test_median_of_the_intervals_is_numpys_exactly(n, chunk):
    t = jittered_log_with_gaps(n, seed=n)
    assert median_interval(t, chunk) == float(np.median(np.diff(t)))


def test_median_of_an_even_count_with_the_middle_pair_tied_and_untied():
    # intervals 1 1 2 2 | 3 3: the middle pair (2, 2) is tied; 1 2 | 3 4: it is not
    for steps in ([1.0, 1.0, 2.0, 2.0, 3.0, 3.0], [1.0, 2.0, 3.0, 4.0], [5.0, 1.0, 4.0, 2.0]):
        t = np.concatenate([[0.0], np.cumsum(steps)])
        for chunk in (1, 2, 3):
            assert median_interval(t, chunk) == float(np.median(steps))


def test_selection_orders_negative_and_zero_intervals_like_the_floats():
    # the order keys must sort negatives below zero below positives (a time vector not yet checked)
    rng = np.random.default_rng(5)
    for k in range(40):
        t = np.round(rng.normal(size=int(rng.integers(3, 200))), 1)
        assert median_interval(t, 5) == float(np.median(np.diff(t))), k


def test_sampling_report_equals_the_whole_array_expressions():
    t = jittered_log_with_gaps(5001, seed=1)
    dt = np.diff(t)
    med = float(np.median(dt))
    report = sampling_report(t, chunk=97)
    assert report["median_period"] == med and report["rate_hz"] == 1.0 / med
    assert report["max_period"] == float(dt.max()) and report["min_period"] == float(dt.min())
    assert report["gaps"] == int(np.sum(dt > 1.5 * med)) == 3
    # the standard deviation is summed chunk by chunk: equal up to rounding, and exact in one chunk
    assert report["jitter_std"] == pytest.approx(float(np.std(dt)), rel=1e-12)
    assert report["jitter_relative"] == pytest.approx(float(np.std(dt)) / med, rel=1e-12)
    whole = sampling_report(t, chunk=t.size)
    assert whole["jitter_std"] == float(np.std(dt)) and whole["median_period"] == med


def test_split_at_gaps_cuts_where_the_whole_array_rule_does():
    t = jittered_log_with_gaps(3000, seed=2)
    dt = np.diff(t)
    cuts = np.flatnonzero(dt > 3.0 * np.median(dt)) + 1
    expected = [slice(int(a), int(b)) for a, b in zip(np.r_[0, cuts], np.r_[cuts, t.size])]
    assert len(expected) == 4
    for chunk in (1, 10, 999, 5000):
        assert split_at_gaps(t, 3.0, chunk=chunk) == expected
        assert split_at_gaps(t, 3.0, median_period=float(np.median(dt)), chunk=chunk) == expected


def test_checks_name_the_first_bad_sample_in_a_later_chunk(monkeypatch):
    monkeypatch.setattr(signals, "CHUNK_SAMPLES", 16)
    t = np.arange(100) / 100.0
    q = np.zeros((100, 2))
    bad = q.copy()
    bad[70, 1] = np.nan
    bad[71, 0] = np.inf  # the same chunk
    bad[90, 0] = np.inf
    with pytest.raises(ValueError, match=r"^q: NaN or infinite value at sample 70 "):
        SampledData(t, bad, q)
    late = t.copy()
    late[53] = late[52]
    with pytest.raises(ValueError, match=r"sample 53: 0\.52 after 0\.52"):
        SampledData(late, q, q)
    stamps = t.copy()
    stamps[40] = np.nan
    with pytest.raises(ValueError, match="^t: NaN or infinite timestamps"):
        SampledData(stamps, q, q)


def test_selecting_in_order_skips_the_checks_and_a_shuffle_does_not(monkeypatch):
    t = np.arange(50) / 50.0
    q = np.column_stack([np.sin(t), np.cos(t)])
    data = SampledData(t, q, 2 * q)
    calls = []
    monkeypatch.setattr(signals, "_intervals", lambda *a: calls.append(1) or iter(()))
    for pick in (slice(5, 40), slice(0, None, 3), t > 0.3, np.array([1, 4, 9])):
        part = data.select(pick)
        assert np.array_equal(part.t, t[pick]) and np.array_equal(part.tau, 2 * q[pick])
        assert isinstance(part, SampledData) and part.qd is None
    assert calls == []  # no pass over the time stamps for an in-order pick
    monkeypatch.undo()
    with pytest.raises(ValueError, match="strictly increase"):
        data.select(np.array([3, 1, 2]))


def test_repeated_rows_and_runs_across_chunk_edges_are_counted_once(monkeypatch):
    # runs of frozen rows placed across the boundaries of 8-row chunks (4 joints: 32 values a chunk)
    rng = np.random.default_rng(6)
    t = np.arange(200) / 100.0
    q = rng.normal(size=(200, 4))
    for start, length in ((5, 3), (14, 12), (30, 1), (60, 40), (150, 9)):
        q[start:start + length + 1] = q[start]
    tau = q.copy()
    tau[70] += 1.0  # splits the 40-row run: rows 61-69 and 72-100 repeat (9 and 29)
    same = np.all(q[1:] == q[:-1], axis=1) & np.all(tau[1:] == tau[:-1], axis=1)
    edges = np.diff(np.r_[0, same.astype(int), 0])
    longest = int((np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)).max())
    whole = signals.repeated_samples(SampledData(t, q, tau))
    monkeypatch.setattr(signals, "CHUNK_SAMPLES", 32)
    chunked = signals.repeated_samples(SampledData(t, q, tau))
    expected = (int(same.sum()), longest)
    assert (chunked["count"], chunked["longest_run"]) == (whole["count"], whole["longest_run"]) == expected
    assert longest == 29 and chunked["count"] == 3 + 12 + 1 + 9 + 29 + 9
    assert chunked["share"] == whole["share"] and chunked["warning"] == whole["warning"]


def test_a_run_ended_inside_a_chunk_is_not_carried_into_the_next(monkeypatch):
    # 8 intervals a chunk (4 joints, 32 values): runs of 6 at intervals 0-5 and 8-13, not one of 12
    t = np.arange(40) / 100.0
    q = np.random.default_rng(7).normal(size=(40, 4))
    q[0:7] = q[0]
    q[8:15] = q[8]
    monkeypatch.setattr(signals, "CHUNK_SAMPLES", 32)
    rep = signals.repeated_samples(SampledData(t, q, q.copy()))
    assert (rep["count"], rep["longest_run"]) == (12, 6)
