"""What an identification saw, and where evaluated data leave it (extrapolation warnings).

A rigid-body-plus-friction fit is only checked where its data went: a joint that reaches 6 rad
after an excitation that stayed within 1.4 rad, or that stands nearly still half the time after an
excitation that always moved, is predicted by extrapolation. The result stores, per joint, the
ranges of q, qd, qdd and tau of the processed samples the fit used, the fraction of them near zero
velocity and the fraction moving each way; ``validate`` and ``predict`` compare the evaluated data,
processed the same way, with that record and warn one line per joint.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from .processing import ProcessingConfig, process_windows
from .result import IdentificationResult, as_result
from .signals import SampledData

QUANTITIES = ("q", "qd", "qdd", "tau")
# near zero velocity: below this fraction of the joint's largest identified speed (a relative
# threshold, so it means the same for a fast wrist and a slow base, rotary or prismatic)
STILL_RELATIVE = 0.02
STILL_EXCESS = 0.2  # warn when the evaluated data are still this much more of the time than the fit's
MIN_DIRECTION = 0.01  # a direction of motion counts as seen when at least this fraction moves that way
MIN_OUTSIDE = 0.001  # fractions outside the range below this (isolated noisy samples) are not warned about


def coverage_of(pieces: Iterable[SampledData], joint_names: Sequence[str]) -> dict:
    """The per-joint record of processed ``pieces`` (each with q, qd, qdd, tau), streamed: only the
    ranges and the velocities (for the stillness threshold, known at the end) are kept."""
    lo = hi = None
    velocities = []
    for p in pieces:
        plo = {k: np.min(getattr(p, k), axis=0) for k in QUANTITIES}
        phi = {k: np.max(getattr(p, k), axis=0) for k in QUANTITIES}
        lo = plo if lo is None else {k: np.minimum(lo[k], plo[k]) for k in QUANTITIES}
        hi = phi if hi is None else {k: np.maximum(hi[k], phi[k]) for k in QUANTITIES}
        velocities.append(np.asarray(p.qd, np.float32))
    if lo is None:
        raise ValueError("coverage: no processed samples")
    speed = np.maximum(np.abs(lo["qd"]), np.abs(hi["qd"]))
    threshold = STILL_RELATIVE * speed
    n = sum(v.shape[0] for v in velocities)
    still = sum((np.abs(v) <= threshold).sum(0) for v in velocities) / n
    pos = sum((v > threshold).sum(0) for v in velocities) / n
    neg = sum((v < -threshold).sum(0) for v in velocities) / n
    joints = []
    for j, name in enumerate(joint_names):
        joints.append({"joint": name, **{k: [float(lo[k][j]), float(hi[k][j])] for k in QUANTITIES},
                       "still_below": float(threshold[j]), "still_fraction": float(still[j]),
                       "moving_positive_fraction": float(pos[j]), "moving_negative_fraction": float(neg[j])})
    return {"samples": int(n), "of": "processed samples (q, qd, qdd, tau in the model's joint frame)",
            "still": f"|qd| at most {STILL_RELATIVE:g} x the joint's largest identified |qd|", "joints": joints}


def processed(datasets: Sequence[SampledData], processing: ProcessingConfig, friction=None,
              purpose: str = "fit", preprocessed: bool = False) -> Iterable[SampledData]:
    for raw in datasets:
        if preprocessed:
            yield raw
            continue
        for piece in process_windows(raw, processing, friction=friction, purpose=purpose):
            yield piece.data


def identification_coverage(datasets, processing: ProcessingConfig, joint_names, friction=None,
                            preprocessed: bool = False) -> dict:
    """The coverage record of the data a fit used (processed as for the fit)."""
    return coverage_of(processed(datasets, processing, friction, "fit", preprocessed), joint_names)


def extrapolation_warnings(coverage: dict | None, pieces: Iterable[SampledData]) -> list[dict]:
    """One warning per joint whose evaluated samples leave ``coverage``: the fraction of samples with
    any of q, qd, qdd, tau outside the identified range (and per quantity), near-zero velocity far
    more often than in the fit, or motion in a direction the fit never saw. [] without a record.
    Streamed: counts and extremes only, piece by piece."""
    if not coverage:
        return []
    recs = coverage["joints"]
    dof = len(recs)
    lo = {k: np.array([r[k][0] for r in recs]) for k in QUANTITIES}
    hi = {k: np.array([r[k][1] for r in recs]) for k in QUANTITIES}
    thr = np.array([r["still_below"] for r in recs])
    count = {k: np.zeros(dof, int) for k in QUANTITIES}
    ev_lo = {k: np.full(dof, np.inf) for k in QUANTITIES}
    ev_hi = {k: np.full(dof, -np.inf) for k in QUANTITIES}
    any_out, still, pos, neg = (np.zeros(dof, int) for _ in range(4))
    n = 0
    for p in pieces:
        bad_any = np.zeros((p.count, dof), bool)
        for k in QUANTITIES:
            x = getattr(p, k)
            bad = (x < lo[k]) | (x > hi[k])
            count[k] += bad.sum(0)
            bad_any |= bad
            ev_lo[k] = np.minimum(ev_lo[k], x.min(0))
            ev_hi[k] = np.maximum(ev_hi[k], x.max(0))
        any_out += bad_any.sum(0)
        still += (np.abs(p.qd) <= thr).sum(0)
        pos += (p.qd > thr).sum(0)
        neg += (p.qd < -thr).sum(0)
        n += p.count
    if n == 0:
        return []
    out = []
    for j, rec in enumerate(recs):
        per = {k: {"fraction": float(count[k][j] / n), "identified": rec[k],
                   "evaluated": [float(ev_lo[k][j]), float(ev_hi[k][j])]} for k in QUANTITIES}
        fraction = float(any_out[j] / n)
        reasons = []
        if fraction >= MIN_OUTSIDE:
            worst = [f"{k} {v['fraction']:.1%} (to [{v['evaluated'][0]:.3g}, {v['evaluated'][1]:.3g}], identified "
                     f"[{v['identified'][0]:.3g}, {v['identified'][1]:.3g}])" for k, v in per.items()
                     if v["fraction"] >= MIN_OUTSIDE]
            reasons.append(f"{fraction:.1%} of samples outside the identified range: " + "; ".join(worst))
        s = float(still[j] / n)
        if s > rec["still_fraction"] + STILL_EXCESS:
            reasons.append(f"near zero velocity {s:.0%} of the time (identified {rec['still_fraction']:.0%})")
        unseen = [d for d, ev, seen in (("positive", pos[j] / n, rec["moving_positive_fraction"]),
                                        ("negative", neg[j] / n, rec["moving_negative_fraction"]))
                  if ev >= MIN_DIRECTION and seen < MIN_DIRECTION]
        if unseen:
            reasons.append(f"moves in the {' and '.join(unseen)} direction, which the identification never saw")
        if reasons:
            out.append({"joint": rec["joint"], "fraction_outside": fraction, "outside": per,
                        "still_fraction": {"identified": rec["still_fraction"], "evaluated": s},
                        "unseen_direction": unseen,
                        "message": f"warning: joint {rec['joint']}: " + "; ".join(reasons)})
    return out


def result_warnings(model, result: IdentificationResult | dict, datasets: Sequence[SampledData]) -> list[dict]:
    """Extrapolation warnings of evaluated raw ``datasets`` against a saved result's coverage, the
    data processed as prediction processes them."""
    result = as_result(result)
    coverage = result.coverage
    if not coverage:
        return []
    if len(coverage["joints"]) != model.dof:
        raise ValueError(f"coverage: the result records {len(coverage['joints'])} joints, robot {model.name} has "
                         f"{model.dof}")
    return extrapolation_warnings(coverage, processed(datasets, result.processing, result.friction_model, "predict"))
