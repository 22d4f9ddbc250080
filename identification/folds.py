"""The folds of cross-validation on recordings: which samples each fold fits and which it holds
out, and the recordings a fold's fit and held-out samples make. Model selection (selection.py)
and the prediction intervals (intervals.py) score on the same folds.

Neighbouring samples are strongly correlated, so no fold is shuffled: the training recordings,
laid end to end, are cut into contiguous blocks, or, when an excitation repeats, into blocks by
phase of its period (a contiguous block's motion would come back a period later and stay in the
fit). A held-out block is a gap in its recording's fit, whose edges processing drops; it is scored
inside its recording, processed whole."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .signals import SampledData

FOLDS = 5
MIN_BLOCK = 200  # samples: a held-out block shorter than this says little and filters badly
MIN_PIECE = 50  # samples: processing refuses shorter pieces (processing.process_windows)


@dataclass(frozen=True)
class Fold:
    """One fold: sample ranges (recording, start, stop) fitted and held out. A held-out recording
    (index into the ``holdout`` list) is scored whole and the fit uses every training sample."""

    name: str
    fit: tuple
    held_out: tuple
    held_out_recording: int | None = None


def blocked_folds(counts: Sequence[int], folds: int = FOLDS, holdout_recordings: int = 0,
                  min_block: int = MIN_BLOCK) -> list[Fold]:
    """``folds`` contiguous blocks over the recordings of ``counts`` samples laid end to end (equal
    sample counts; a boundary closer than ``min_block`` to a recording's edge moves to that edge, so
    no sliver of a recording becomes a piece), then one fold per held-out recording. The blocks are
    disjoint and cover every sample; each fold fits on the complement of its block."""
    counts = [int(c) for c in counts]
    if folds < 2:
        raise ValueError(f"folds: need at least 2 blocks for cross-validation, got {folds}")
    total = sum(counts)
    if total < folds * min_block:
        raise ValueError(f"folds: {total} samples cannot make {folds} blocks of at least {min_block} samples "
                         f"(use fewer --folds)")
    edges = np.concatenate([[0], np.cumsum(counts)])
    bounds = []
    for k in range(folds + 1):
        b = int(round(k * total / folds))
        near = edges[np.argmin(np.abs(edges - b))]
        bounds.append(int(near) if abs(near - b) < min_block else b)
    if any(hi - lo < min_block for lo, hi in zip(bounds[:-1], bounds[1:])):
        raise ValueError(f"folds: the recordings cannot be cut into {folds} blocks of at least {min_block} samples "
                         f"(use fewer --folds)")
    out = []
    for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        held, fit = [], []
        for r, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
            s, e = max(lo, a), min(hi, b)
            if s < e:
                held.append((r, int(s - a), int(e - a)))
                if s > a:
                    fit.append((r, 0, int(s - a)))
                if e < b:
                    fit.append((r, int(e - a), int(b - a)))
            else:
                fit.append((r, 0, int(b - a)))
        out.append(Fold(f"block {k + 1}/{folds}", tuple(fit), tuple(held)))
    whole = tuple((r, 0, c) for r, c in enumerate(counts))
    for h in range(holdout_recordings):
        out.append(Fold(f"held-out recording {h + 1}", whole, (), h))
    return out



def repeat_folds(datasets: Sequence[SampledData], folds: int = FOLDS, min_block: int = MIN_BLOCK) -> list[Fold] | None:
    """Folds whose held-out block is motion the fit never saw, for a periodic excitation run for
    several periods: block k holds the k-th of ``folds`` equal stretches of every period (phase
    k/folds to (k+1)/folds after the recording's start), so no repeat of it stays in the fit, as a
    contiguous block would. A recording whose motion does not repeat (:func:`.signals.repeat_period`)
    is cut into ``folds`` contiguous blocks of its own. None when no recording repeats (contiguous
    blocks, :func:`blocked_folds`, say the same) or a stretch would be shorter than ``min_block``
    samples. Each fold fits on the complement of its block."""
    from .signals import repeat_period

    periods = [repeat_period(d.t, d.q) for d in datasets]
    if not any(periods):
        return None
    held = [[] for _ in range(folds)]
    for r, (d, period) in enumerate(zip(datasets, periods)):
        span = period or (d.t[-1] - d.t[0]) * (1.0 + 1e-9)
        if d.count * span / max(d.t[-1] - d.t[0], 1e-12) / folds < min_block:
            return None
        phase = np.minimum(((d.t - d.t[0]) % span) / span * folds, folds - 1).astype(int)
        cuts = np.nonzero(np.diff(phase))[0] + 1
        for s, e in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [d.count]])):
            held[phase[s]].append((r, int(s), int(e)))
    out = []
    for k in range(folds):
        fit = []
        for r, s, e in sorted(x for j, block in enumerate(held) if j != k for x in block):
            if fit and fit[-1][0] == r and fit[-1][2] == s:
                fit[-1] = (r, fit[-1][1], e)
            else:
                fit.append((r, s, e))
        out.append(Fold(f"phase {k + 1}/{folds} of each period", tuple(fit), tuple(held[k])))
    return out

def cross_validation_folds(datasets: Sequence[SampledData], folds: int = FOLDS, holdout_recordings: int = 0,
                           min_block: int = MIN_BLOCK) -> tuple[list[Fold], str]:
    """The folds model selection and the prediction intervals score on, and the sentence naming
    them: blocks by phase of each recording's repeat period when an excitation repeats
    (:func:`repeat_folds`; a contiguous block would leave its repeat, a period away, in the fit and
    score in-sample), else contiguous blocks (:func:`blocked_folds`); then one fold per held-out
    recording, fitted on all the training samples. ValueError when the data are too short."""
    plan = repeat_folds(datasets, folds, min_block)
    if plan is None:
        plan = blocked_folds([d.count for d in datasets], folds, 0, min_block)
        text = f"{folds} contiguous blocks over the training recordings laid end to end (no shuffling)"
    else:
        text = (f"{folds} blocks by phase of each recording's repeat period (block k holds the k-th "
                f"{folds}th of every period, so no repeat of it stays in the fit; a recording that does "
                "not repeat is cut into contiguous blocks)")
    whole = tuple((r, 0, d.count) for r, d in enumerate(datasets))
    plan = plan + [Fold(f"held-out recording {h + 1}", whole, (), h) for h in range(holdout_recordings)]
    if holdout_recordings:
        text += f", plus {holdout_recordings} held-out recording(s) as their own fold"
    return plan, text


def fit_recordings(datasets: Sequence[SampledData], ranges) -> tuple[list[int], list[SampledData]]:
    """Per recording with samples in ``ranges``, one recording of them: a held-out block is a gap,
    whose edges processing drops (:func:`.processing.process_windows`, half a period of the lowest
    cut-off), instead of a recording edge whose filter transient would stay in the fit."""
    parts: dict[int, list] = {}
    for r, s, e in ranges:
        if e - s >= MIN_PIECE:
            parts.setdefault(r, []).append(np.arange(s, e))
    order = sorted(parts)
    return order, [datasets[r].select(np.sort(np.concatenate(parts[r]))) for r in order]


def held_out_masks(datasets: Sequence[SampledData], ranges) -> tuple[list[SampledData], list[np.ndarray]]:
    """The recordings holding a held-out block, each whole, with the mask of its held-out samples
    (scored in context: :func:`.pipeline.validate_many`)."""
    masks: dict[int, np.ndarray] = {}
    for r, s, e in ranges:
        masks.setdefault(r, np.zeros(datasets[r].count, bool))[s:e] = True
    order = sorted(masks)
    return [datasets[r] for r in order], [masks[r] for r in order]
