"""Which model do the data support? Cross-validation over poses of the candidate calibration models.

The candidates, simplest first:

* ``geometric``: the geometry only;
* ``lumped gravity``: the geometry and the joints' deflection under the links' weight in lumped form
  (compliance x mass-moment terms, lumped_gravity.py), which needs no link masses;
* ``joint stiffness with the model's masses``: combined-gravity with the model's link masses (only
  when the model has masses).

The poses are dealt into FOLDS folds (pose k into fold k mod FOLDS, so that each fold samples every
part of a sweep); each candidate is fitted without a fold and its error measured on the fold's
poses. A candidate more complex than the geometric one is named only when its out-of-fold RMS is lower and
the mean per-pose log ratio of the squared errors exceeds GAIN_STANDARD_ERRORS standard errors: a
gain within the noise is no reason for more parameters. The sentence saying what decided comes
from measured quantities: the share of the geometric model's out-of-fold error vectors that the
directions of a gravity deflection can express, against the share as many random directions would
(extrapolation.gravity_share), and the joint whose fitted deflection moves the targets most.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .extrapolation import gravity_share
from .measurements import MeasurementSet
from .methods import calibrate, massless_links
from .parameters import all_target_positions

FOLDS = 4
GAIN_STANDARD_ERRORS = 1.645  # a one-sided test at 5 %: the question is only whether the larger model is better
GEOMETRIC = "geometric"
LUMPED = "lumped gravity (no link masses needed)"
WITH_MASSES = "joint stiffness with the model's link masses"
METHOD_OPTIONS = {GEOMETRIC: "--method geometric",
                  LUMPED: "--method combined-gravity with a model without link masses",
                  WITH_MASSES: "--method combined-gravity"}


def without_masses(gm):
    """The same geometric model on a robot whose links have no mass (what lumped gravity fits)."""
    return replace(gm, robot=replace(gm.robot, inertial=np.zeros_like(gm.robot.inertial)))


def candidates(gm) -> dict:
    """{name: (geometric model, method)}, simplest first."""
    out = {GEOMETRIC: (gm, "geometric"), LUMPED: (without_masses(gm), "combined-gravity")}
    if len(massless_links(gm.robot)) < gm.dof:
        out[WITH_MASSES] = (gm, "combined-gravity")
    return out


def fold_of(count: int, folds: int) -> np.ndarray:
    return np.arange(count) % folds


def _error_vectors(result, meas: MeasurementSet) -> np.ndarray:
    """Model minus measured position of every target, (N, K, 3), nan where a target was not seen."""
    res, q_link = result.residual(meas)
    out = np.full((len(meas), meas.target_count, 3), np.nan)
    out[res.points[:, 0], res.points[:, 1]] = res.raw(result.params, q_link)[:3 * len(res.points)].reshape(-1, 3)
    return out


def pose_mse(vectors: np.ndarray) -> np.ndarray:
    """Mean squared point error per pose (m^2) from (N, K, 3) error vectors; nan without points."""
    with np.errstate(invalid="ignore"):
        return np.nanmean(np.sum(vectors ** 2, axis=-1), axis=1)


def cross_validate(gm, meas: MeasurementSet, free, *, folds: int = FOLDS, progress=None) -> dict:
    """Out-of-fold error vectors (N, K, 3) of every candidate, or a str saying why it could not be fitted."""
    fold = fold_of(len(meas), folds)
    out = {}
    cands = candidates(gm)
    for c, (name, (model, method)) in enumerate(cands.items()):
        errors = np.full((len(meas), meas.target_count, 3), np.nan)
        try:
            for f in range(folds):
                if progress:
                    progress(f"cross-validation: {name}, fold {f + 1}", (c * folds + f) / (len(cands) * folds))
                train, test = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
                fit = calibrate(model, meas.subset(train), None, method=method, free_names=free)
                if fit.failed:
                    raise ValueError(f"fold {f + 1}: {fit.failure}")
                errors[test] = _error_vectors(fit, meas.subset(test))
        except ValueError as exc:
            out[name] = str(exc)
            continue
        out[name] = errors
    return out


def _rms_mm(ms: np.ndarray) -> float:
    return float(np.sqrt(np.nanmean(ms))) * 1000


def paired_gain(simple: np.ndarray, complex_: np.ndarray) -> tuple[float, float]:
    """The mean over poses of log(simple / complex) of the per-pose mean squared errors, and its size
    in standard errors. Logarithms, because a model that lacks an effect errs by it at a few poses
    (a sweep's ends) and a mean of squared differences is then as noisy as its largest term."""
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.log(simple / complex_)
    d = d[np.isfinite(d)]
    if d.size < 2:
        return 0.0, 0.0
    se = float(np.std(d, ddof=1)) / np.sqrt(d.size)
    mean = float(d.mean())
    return mean, (mean / se if se > 0 else (np.inf if mean > 0 else 0.0))


def gravity_displacement(result, meas: MeasurementSet) -> tuple[np.ndarray, np.ndarray]:
    """How far the fitted deflection moves the targets: per pose (max over targets, m) and per joint
    (rms over poses and targets of the move by that joint's deflection alone, m)."""
    rigid = all_target_positions(result.gm, result.params, meas.q)
    dq = result.link_angles(meas.q, meas.load) - meas.q
    per_pose = np.linalg.norm(all_target_positions(result.gm, result.params, meas.q + dq) - rigid, axis=-1).max(-1)
    per_joint = np.zeros(meas.q.shape[1])
    for j in range(meas.q.shape[1]):
        one = meas.q.copy()
        one[:, j] += dq[:, j]
        move = np.linalg.norm(all_target_positions(result.gm, result.params, one) - rigid, axis=-1)
        per_joint[j] = float(np.sqrt(np.mean(move ** 2)))
    return per_pose, per_joint


def advise(gm, meas: MeasurementSet, free, *, folds: int = FOLDS, progress=None) -> dict:
    """Cross-validate the candidates on the unloaded set; name the winner, its held-out estimate and
    what in the data decided (module docstring)."""
    if len(meas) < 2 * folds:
        raise ValueError(f"poses: {len(meas)} poses are too few to cross-validate over {folds} folds "
                         f"(at least {2 * folds})")
    vectors = cross_validate(gm, meas, free, folds=folds, progress=progress)
    if isinstance(vectors[GEOMETRIC], str):
        raise ValueError(f"poses: the geometric model cannot be cross-validated on these poses ({vectors[GEOMETRIC]})")
    scores = {n: v if isinstance(v, str) else pose_mse(v) for n, v in vectors.items()}
    geo = scores[GEOMETRIC]
    rows = {}
    for name, e in scores.items():
        if isinstance(e, str):
            rows[name] = {"held_out_rms_mm": None, "why_not": e}
            continue
        gain, z = (0.0, 0.0) if name == GEOMETRIC else paired_gain(geo, e)
        rows[name] = {"held_out_rms_mm": _rms_mm(e), "gain_over_geometric_standard_errors": z,
                      "method": METHOD_OPTIONS[name]}
    better = [n for n, r in rows.items() if n != GEOMETRIC and r["held_out_rms_mm"] is not None
              and r["gain_over_geometric_standard_errors"] > GAIN_STANDARD_ERRORS
              and r["held_out_rms_mm"] < rows[GEOMETRIC]["held_out_rms_mm"]]
    winner = min(better, key=lambda n: rows[n]["held_out_rms_mm"]) if better else GEOMETRIC
    # the measured reason: the geometric model's held-out error against the gravity deflection
    gravity_name = winner if winner != GEOMETRIC else next(
        (n for n in (LUMPED, WITH_MASSES) if rows.get(n, {}).get("held_out_rms_mm") is not None), None)
    evidence = {}
    if gravity_name is not None:
        model, method = candidates(gm)[gravity_name]
        full = calibrate(model, meas, None, method=method, free_names=free)
        per_pose, per_joint = gravity_displacement(full, meas)
        geo_full = calibrate(gm, meas, None, method="geometric", free_names=free)
        share, chance = gravity_share(geo_full, meas, np.arange(len(meas)), vectors[GEOMETRIC])
        evidence = {"model": gravity_name, "gravity_share": share, "gravity_share_by_chance": chance,
                    "poses": len(meas),
                    "max_deflection_mm": float(per_pose.max()) * 1000,
                    "deflection_rms_by_joint_mm": (per_joint * 1000).tolist(),
                    "dominant_joint": int(np.argmax(per_joint)) + 1}
    g = rows[GEOMETRIC]["held_out_rms_mm"]
    if winner == GEOMETRIC:
        others = "; ".join(f"{n}: {r['held_out_rms_mm']:.4f} mm, gain {r['gain_over_geometric_standard_errors']:.1f} "
                           "standard errors" for n, r in rows.items() if n != GEOMETRIC and r["held_out_rms_mm"] is not None)
        why = (f"no gravity model lowered the held-out error by more than {GAIN_STANDARD_ERRORS:g} standard errors of "
               f"the per-pose difference ({others})")
        if evidence:
            why += f"; the gravity deflection fitted to all poses moves the targets by at most {evidence['max_deflection_mm']:.3f} mm"
    else:
        r = rows[winner]
        why = (f"it lowers the held-out error from {g:.4f} to {r['held_out_rms_mm']:.4f} mm rms "
               f"({r['gain_over_geometric_standard_errors']:.1f} standard errors of the per-pose difference), and the "
               f"directions of a joint deflection under the links' weight express {evidence['gravity_share']:.0%} of the "
               f"geometric model's held-out error vectors (as many random directions: "
               f"{evidence['gravity_share_by_chance']:.0%}); the fitted deflection is up to "
               f"{evidence['max_deflection_mm']:.3f} mm at the targets (its constant part the geometry alone absorbs), "
               f"mostly through joint {evidence['dominant_joint']}")
    return {"folds": folds, "poses": len(meas), "candidates": rows, "winner": winner,
            "held_out_rms_mm": rows[winner]["held_out_rms_mm"], "method": METHOD_OPTIONS[winner],
            "evidence": evidence, "why": why,
            "sentence": f"use {winner} ({METHOD_OPTIONS[winner]}): {rows[winner]['held_out_rms_mm']:.4f} mm rms held "
                        f"out over {folds} folds of poses; {why}"}
