"""Blocked cross-validation folds, the one-standard-error rule, and the coverage record with its
extrapolation warnings, on hand-made data whose answer is known."""

import numpy as np
import pytest

from robodyn.identification.coverage import coverage_of, extrapolation_warnings
from robodyn.identification.folds import blocked_folds, repeat_folds
from robodyn.identification.selection import fold_summary, one_standard_error_choice
from robodyn.identification.signals import SampledData, repeat_period


def _candidate(scores, parameters):
    return {"parameters": parameters, **fold_summary(scores)}


def test_a_candidate_within_one_standard_error_never_displaces_the_reference():
    reference = _candidate([1.0, 1.2, 0.8, 1.1, 0.9], 10)  # mean 1.0
    se = fold_summary([0.95, 1.15, 0.75, 1.05, 0.85])["standard_error"]
    better_within = _candidate([0.95, 1.15, 0.75, 1.05, 0.85], 12)  # mean 0.95, se 0.0707: 0.95 + se > 1.0
    assert 0.95 + se > 1.0
    chosen, rule = one_standard_error_choice([reference, better_within], reference=0)
    assert chosen == 0 and "kept" in rule


def test_a_candidate_beyond_one_standard_error_is_chosen():
    reference = _candidate([1.0, 1.2, 0.8, 1.1, 0.9], 10)
    far = _candidate([0.5, 0.52, 0.48, 0.51, 0.49], 14)  # mean 0.5, se 0.0071
    chosen, rule = one_standard_error_choice([reference, far], reference=0)
    assert chosen == 1 and "beyond" in rule


def test_the_simplest_within_one_standard_error_of_the_best_wins_and_ties_go_to_the_simpler():
    reference = _candidate([2.0, 2.1, 1.9, 2.0, 2.0], 10)
    best = _candidate([0.50, 0.60, 0.40, 0.55, 0.45], 20)  # mean 0.5, se ~0.035
    simpler_close = _candidate([0.52, 0.62, 0.42, 0.57, 0.47], 12)  # mean 0.52: within
    simpler_far = _candidate([0.70, 0.71, 0.69, 0.70, 0.70], 11)  # mean 0.70: beyond
    chosen, _ = one_standard_error_choice([reference, best, simpler_close, simpler_far], reference=0)
    assert chosen == 2
    # equal scores: the one with fewer parameters
    a, b = _candidate([0.5, 0.6, 0.4], 15), _candidate([0.5, 0.6, 0.4], 13)
    assert one_standard_error_choice([_candidate([3, 3.1, 2.9], 10), a, b], reference=0)[0] == 2


def test_failed_candidates_are_skipped_and_all_failed_is_an_error():
    failed = {"parameters": 5, "mean": None, "standard_error": None}
    ok = _candidate([1.0, 1.1, 0.9], 8)
    assert one_standard_error_choice([failed, ok], reference=0)[0] == 1
    with pytest.raises(ValueError, match="no candidate"):
        one_standard_error_choice([failed], reference=0)


@pytest.mark.parametrize("counts,k", [([1000], 5), ([700, 1300, 450], 4), ([3000, 2999], 7)])
def test_blocks_are_contiguous_disjoint_and_cover_every_sample(counts, k):
    folds = blocked_folds(counts, k)
    assert len(folds) == k
    seen = [np.zeros(c, int) for c in counts]
    for fold in folds:
        held = [np.zeros(c, bool) for c in counts]
        for r, s, e in fold.held_out:
            assert 0 <= s < e <= counts[r]
            seen[r][s:e] += 1
            held[r][s:e] = True
        fit = [np.zeros(c, bool) for c in counts]
        for r, s, e in fold.fit:
            fit[r][s:e] = True
        for h, f in zip(held, fit):
            assert not (h & f).any() and (h | f).all()  # the fit is exactly the complement of the block
        # one block: contiguous in the recordings laid end to end
        flat = np.concatenate(held)
        idx = np.flatnonzero(flat)
        assert idx.size >= 200 and np.all(np.diff(idx) == 1)
    assert all((s == 1).all() for s in seen)  # every sample held out exactly once


def test_a_held_out_recording_is_its_own_fold_fitted_on_everything():
    folds = blocked_folds([1000, 800], 3, holdout_recordings=2)
    extra = folds[3:]
    assert [f.held_out_recording for f in extra] == [0, 1]
    assert all(f.fit == ((0, 0, 1000), (1, 0, 800)) and f.held_out == () for f in extra)


def test_a_boundary_near_a_recording_edge_moves_to_it_and_too_few_samples_are_refused():
    folds = blocked_folds([1050, 950], 2)  # the middle (1000) is 50 samples from the edge at 1050
    assert folds[0].held_out == ((0, 0, 1050),)
    with pytest.raises(ValueError, match="folds"):
        blocked_folds([500], 5)
    with pytest.raises(ValueError, match="folds"):
        blocked_folds([5000], 1)



def _periodic(period, duration, rate=500.0, jitter=0.0, seed=0):
    """Two joints moving with two harmonics of ``period`` (no other repeat), jittered sampling."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, duration, 1 / rate)
    t = np.sort(t + rng.uniform(0, jitter / rate, t.size))
    w = 2 * np.pi / period
    q = np.column_stack([np.sin(w * t) + 0.4 * np.cos(3 * w * t), 0.7 * np.cos(w * t + 0.3) - 0.2 * np.sin(2 * w * t)])
    return SampledData(t, q, np.zeros_like(q))


@pytest.mark.parametrize("period", [2.5, 3.7])
def test_the_repeat_period_of_a_periodic_motion_and_none_without_two_repeats(period):
    d = _periodic(period, 3 * period, jitter=0.3)
    assert repeat_period(d.t, d.q) == pytest.approx(period, abs=0.02)
    once = _periodic(period, 1.6 * period)  # less than two periods: nothing repeats within it
    assert repeat_period(once.t, once.q) is None
    ramp = SampledData(d.t, np.column_stack([d.t, d.t ** 2]), np.zeros_like(d.q))
    assert repeat_period(ramp.t, ramp.q) is None


def test_repeat_folds_hold_out_a_phase_of_every_period_that_no_fit_sees():
    """Block k holds phase [k/K, (k+1)/K) of every period: the fit (its complement) holds no sample
    at a phase of the block, so a repeat of the held-out motion never stays in the fit, as it
    does with contiguous blocks."""
    period, k = 2.0, 5
    d = _periodic(period, 3 * period)
    folds = repeat_folds([d], k)
    assert folds is not None and len(folds) == k
    phase = ((d.t - d.t[0]) % period) / period
    seen = np.zeros(d.count, int)
    for j, fold in enumerate(folds):
        held = np.zeros(d.count, bool)
        for r, s, e in fold.held_out:
            held[s:e] = True
        fit = np.zeros(d.count, bool)
        for r, s, e in fold.fit:
            fit[s:e] = True
        assert not (held & fit).any() and (held | fit).all()
        assert len(fold.held_out) == 3  # one stretch per period
        lo, hi = phase[held].min(), phase[held].max()
        assert lo >= j / k - 0.01 and hi <= (j + 1) / k + 0.01
        assert not np.any((phase[fit] > lo + 0.01) & (phase[fit] < hi - 0.01))
        seen += held
    assert (seen == 1).all()
    # contiguous blocks of the same data leave the held-out phases in the fit, a period away
    block = blocked_folds([d.count], k)[0]
    s, e = block.held_out[0][1:]
    assert np.any((phase[e:] >= phase[s:e].min()) & (phase[e:] <= phase[s:e].max()))
    # nothing repeats: no repeat folds (contiguous blocks say the same)
    assert repeat_folds([_periodic(period, 1.5 * period)], k) is None

def test_repeat_folds_stay_on_their_phases_over_many_periods():
    """The period is found between the 100 Hz grid steps of the search: over 20 periods of 1.237 s
    a period rounded to the grid (1.24 s) shifts the last period's blocks by 0.06 s, a quarter of a
    block, into phases the other folds fit on."""
    period, k = 1.237, 5
    d = _periodic(period, 20 * period, rate=1000.0)
    assert repeat_period(d.t, d.q) == pytest.approx(period, abs=1e-4)
    folds = repeat_folds([d], k)
    assert folds is not None
    phase = ((d.t - d.t[0]) % period) / period  # the true phase
    for j, fold in enumerate(folds):
        held = np.zeros(d.count, bool)
        for r, s, e in fold.held_out:
            held[s:e] = True
        off_centre = (phase[held] - (j + 0.5) / k + 0.5) % 1.0 - 0.5  # circular: block 1 starts at phase 0
        assert np.abs(off_centre).max() <= 0.5 / k + 0.004, j


def _piece(q, qd, qdd, tau):
    n = len(q)
    col = lambda a: np.column_stack([np.asarray(a, float), np.zeros(n)])  # noqa: E731 (joint 2 never moves)
    return SampledData(np.arange(n) * 0.01, col(q), col(tau), col(qd), col(qdd))


def test_coverage_records_ranges_stillness_and_directions():
    qd = np.concatenate([np.linspace(-1, 1, 90), np.zeros(10)])
    cov = coverage_of([_piece(np.linspace(-1, 2, 100), qd, np.ones(100), np.linspace(0, 5, 100))], ["a", "b"])
    a = cov["joints"][0]
    assert a["q"] == [-1.0, 2.0] and a["tau"] == [0.0, 5.0] and a["qdd"] == [1.0, 1.0]
    assert a["still_below"] == pytest.approx(0.02)
    # |qd| <= 0.02 on linspace(-1, 1, 90): the two samples nearest zero, plus the 10 zeros
    assert a["still_fraction"] == pytest.approx(12 / 100)
    assert a["moving_positive_fraction"] == pytest.approx(44 / 100)
    assert a["moving_negative_fraction"] == pytest.approx(44 / 100)


def test_leaving_the_range_warns_with_the_fraction_outside_and_staying_inside_warns_nothing():
    base = _piece(np.linspace(-1, 1, 200), np.tile([-1.0, 1.0], 100), np.zeros(200), np.zeros(200))
    cov = coverage_of([base], ["a", "b"])
    inside = _piece(np.linspace(-0.5, 0.5, 400), np.tile([-0.5, 0.5], 200), np.zeros(400), np.zeros(400))
    assert extrapolation_warnings(cov, [inside]) == []
    q = np.concatenate([np.zeros(300), np.full(100, 3.0)])  # a quarter of the samples beyond q = 1
    out = _piece(q, np.tile([-0.5, 0.5], 200), np.zeros(400), np.zeros(400))
    (w,) = extrapolation_warnings(cov, [out])
    assert w["joint"] == "a" and w["fraction_outside"] == pytest.approx(0.25)
    assert w["outside"]["q"]["fraction"] == pytest.approx(0.25) and w["outside"]["tau"]["fraction"] == 0
    assert "25.0% of samples outside" in w["message"] and w["message"].startswith("warning: joint a")


def test_standing_still_and_an_unseen_direction_warn():
    qd = np.abs(np.tile([-1.0, 1.0], 100))  # the fit only ever moved forward
    cov = coverage_of([_piece(np.zeros(200), qd, np.zeros(200), np.zeros(200))], ["a", "b"])
    ev_qd = np.concatenate([np.zeros(120), -np.ones(80)])  # 60 % still, 40 % backwards
    (w,) = extrapolation_warnings(cov, [_piece(np.zeros(200), ev_qd, np.zeros(200), np.zeros(200))])
    assert w["still_fraction"]["evaluated"] == pytest.approx(0.6) and w["unseen_direction"] == ["negative"]
    assert "near zero velocity 60%" in w["message"] and "negative direction" in w["message"]
    assert extrapolation_warnings(None, []) == []
