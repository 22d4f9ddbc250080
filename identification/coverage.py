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
from .signals import SampledData

QUANTITIES = ("q", "qd", "qdd", "tau")
# near zero velocity: below this fraction of the joint's largest identified speed (a relative
# threshold, so it means the same for a fast wrist and a slow base, rotary or prismatic)
STILL_RELATIVE = 0.02
STILL_EXCESS = 0.2  # warn when the evaluated data are still this much more of the time than the fit's
MIN_DIRECTION = 0.01  # a direction of motion counts as seen when at least this fraction moves that way
MIN_OUTSIDE = 0.001  # fractions outside the range below this (isolated noisy samples) are not warned about


def coverage_of(pieces: Iterable[SampledData], joint_names: Sequence[str]) -> dict:
    """The per-joint record of processed ``pieces`` (each with q, qd, qdd, tau)."""
    pieces = list(pieces)
    if not pieces:
        raise ValueError("coverage: no processed samples")
    lo = {k: np.min([np.min(getattr(p, k), axis=0) for p in pieces], axis=0) for k in QUANTITIES}
    hi = {k: np.max([np.max(getattr(p, k), axis=0) for p in pieces], axis=0) for k in QUANTITIES}
    speed = np.max(np.abs(np.stack([lo["qd"], hi["qd"]])), axis=0)
    threshold = STILL_RELATIVE * speed
    n = sum(p.count for p in pieces)
    still = sum((np.abs(p.qd) <= threshold).sum(0) for p in pieces) / n
    pos = sum((p.qd > threshold).sum(0) for p in pieces) / n
    neg = sum((p.qd < -threshold).sum(0) for p in pieces) / n
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
    more often than in the fit, or motion in a direction the fit never saw. [] without a record."""
    if not coverage:
        return []
    pieces = list(pieces)
    n = sum(p.count for p in pieces)
    if n == 0:
        return []
    out = []
    for j, rec in enumerate(coverage["joints"]):
        outside_any = 0
        per = {}
        for k in QUANTITIES:
            lo, hi = rec[k]
            count = 0
            ev_lo, ev_hi = np.inf, -np.inf
            for p in pieces:
                x = getattr(p, k)[:, j]
                bad = (x < lo) | (x > hi)
                count += int(bad.sum())
                ev_lo, ev_hi = min(ev_lo, float(x.min())), max(ev_hi, float(x.max()))
            per[k] = {"fraction": count / n, "identified": [lo, hi], "evaluated": [ev_lo, ev_hi]}
        for p in pieces:
            bad = np.zeros(p.count, bool)
            for k in QUANTITIES:
                x = getattr(p, k)[:, j]
                bad |= (x < rec[k][0]) | (x > rec[k][1])
            outside_any += int(bad.sum())
        fraction = outside_any / n
        thr = rec["still_below"]
        still = sum(int((np.abs(p.qd[:, j]) <= thr).sum()) for p in pieces) / n
        pos = sum(int((p.qd[:, j] > thr).sum()) for p in pieces) / n
        neg = sum(int((p.qd[:, j] < -thr).sum()) for p in pieces) / n
        reasons = []
        if fraction >= MIN_OUTSIDE:
            worst = [f"{k} {v['fraction']:.1%} (to [{v['evaluated'][0]:.3g}, {v['evaluated'][1]:.3g}], identified "
                     f"[{v['identified'][0]:.3g}, {v['identified'][1]:.3g}])" for k, v in per.items()
                     if v["fraction"] >= MIN_OUTSIDE]
            reasons.append(f"{fraction:.1%} of samples outside the identified range: " + "; ".join(worst))
        still_flag = still > rec["still_fraction"] + STILL_EXCESS
        if still_flag:
            reasons.append(f"near zero velocity {still:.0%} of the time (identified {rec['still_fraction']:.0%})")
        unseen = [d for d, ev, seen in (("positive", pos, rec["moving_positive_fraction"]),
                                        ("negative", neg, rec["moving_negative_fraction"]))
                  if ev >= MIN_DIRECTION and seen < MIN_DIRECTION]
        if unseen:
            reasons.append(f"moves in the {' and '.join(unseen)} direction, which the identification never saw")
        if reasons:
            out.append({"joint": rec["joint"], "fraction_outside": fraction, "outside": per,
                        "still_fraction": {"identified": rec["still_fraction"], "evaluated": still},
                        "unseen_direction": unseen,
                        "message": f"warning: joint {rec['joint']}: " + "; ".join(reasons)})
    return out


def result_warnings(model, result: dict, datasets: Sequence[SampledData]) -> list[dict]:
    """Extrapolation warnings of evaluated raw ``datasets`` against a saved result's coverage, the
    data processed as prediction processes them."""
    from robodyn.robot.friction import FrictionModel

    coverage = result.get("coverage")
    if not coverage:
        return []
    friction = FrictionModel.from_dict(result["friction_model"]) if result.get("friction_model") else None
    processing = ProcessingConfig(**result["config"]["processing"])
    if len(coverage["joints"]) != model.dof:
        raise ValueError(f"coverage: the result records {len(coverage['joints'])} joints, robot {model.name} has "
                         f"{model.dof}")
    return extrapolation_warnings(coverage, processed(datasets, processing, friction, "predict"))
