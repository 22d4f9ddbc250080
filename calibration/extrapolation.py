"""Extrapolation judged from the identification data: how well does the fitted model predict a
pose beyond the range it was fitted on?

For each joint that moves, the identification poses at the two ends of its range (the end poses of
a single-axis sweep) are left out one at a time and the model is refitted without them: the error
there is an extrapolation. The same number of interior poses (at no joint's end) are left out the
same way: their error is an interpolation. A model that extrapolates much worse than it
interpolates is biased by an effect it lacks; the check then tests one candidate, gravity sag, by
how much of the end poses' errors a joint-compliance-under-gravity deflection (the lumped terms of
lumped_gravity.py, so no masses are needed) can express, against the share any as many random
directions would.
"""

from __future__ import annotations

import numpy as np

from .geometric import fit_geometry
from .lumped_gravity import lumped_terms
from .measurements import MeasurementSet, Residual
from .methods import nominal_result
from .parameters import robot_for

RANGE_MIN_DEG = 1.0  # a joint that moves less than this has no ends to extrapolate to
EXTRAPOLATION_RATIO = 2.0  # end-pose rms error over interior rms error that counts as extrapolating badly
GRAVITY_SHARE = 0.5  # share of the end-pose error a gravity deflection must express to be named
CHANCE_FACTOR = 2.0  # ... and this many times the share as many random directions would express


def end_poses(q_controller: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(poses at the ends of a moving joint's range, interior poses), indices into the rows."""
    q = np.asarray(q_controller, float)
    ends = set()
    for j in range(q.shape[1]):
        if np.ptp(q[:, j]) < np.deg2rad(RANGE_MIN_DEG):
            continue
        ends.add(int(np.argmin(q[:, j])))
        ends.add(int(np.argmax(q[:, j])))
    ends = np.array(sorted(ends), int)
    interior = np.setdiff1d(np.arange(q.shape[0]), ends)
    if interior.size > ends.size:  # evenly spread, as many as there are end poses
        interior = interior[np.round(np.linspace(0, interior.size - 1, ends.size)).astype(int)]
    return ends, interior


def _left_out_errors(meas: MeasurementSet, poses, refit) -> tuple[np.ndarray, list]:
    """Refit without each pose in turn: the error vectors at that pose (model - measured), (P, K, 3)."""
    out = np.full((len(poses), meas.target_count, 3), np.nan)
    fits = []
    for m, pose in enumerate(poses):
        keep = np.setdiff1d(np.arange(len(meas)), [pose])
        r = refit(meas.subset(keep))
        one = meas.subset([pose])
        res, q_link = r.residual(one)
        raw = res.raw(r.params, q_link)[:3 * len(res.points)].reshape(-1, 3)
        out[m, res.points[:, 1]] = raw
        fits.append(r)
    return out, fits


def gravity_share(result, meas: MeasurementSet, poses, errors: np.ndarray) -> tuple[float, float]:
    """Share of the end poses' error vectors a gravity deflection can express (least squares over the
    lumped terms' position columns at those poses), and the share as many random directions would."""
    gm = result.gm
    terms = lumped_terms(gm.robot)
    if not terms.count:
        return 0.0, 1.0
    sub = meas.subset(poses)
    res = Residual(gm, sub)
    q_link = result.link_angles(sub.q, sub.load)
    _, Jq = res.jacobian(result.params, q_link, joint=True)
    rows = res.kind == 0
    C = (-Jq[:, terms.joint] * terms.columns(robot_for(gm, result.params), q_link)[res.row_pose])[rows]
    C = C / res.weights[rows, None]  # back to metres per unit term
    e = np.concatenate([errors[n, k] for n, k in res.points])
    ok = np.isfinite(e)
    C, e = C[ok], e[ok]
    if not e.size or not np.any(e):
        return 0.0, 1.0
    a, *_ = np.linalg.lstsq(C, e, rcond=1e-10)
    share = float(np.sum((C @ a) ** 2) / np.sum(e ** 2))
    rank = np.linalg.matrix_rank(C, tol=1e-10 * max(float(np.abs(C).max()), 1e-300))
    return share, rank / e.size


def geometric_refit(result):
    """The geometric method refitted on a subset, from the full fit's geometry (fast: no reports)."""
    def refit(meas: MeasurementSet):
        fit = fit_geometry(result.gm, meas.q, meas, result.free_names, initial=result.params)
        return nominal_result(result.gm, params=fit.params)
    return refit


def extrapolation_check(result, meas: MeasurementSet, refit) -> tuple[dict, list[str]]:
    """Leave-one-out errors at the end poses against interior poses; a warning when the model
    extrapolates badly, naming gravity sag when it would explain the end-pose errors.
    ``refit(measurements)`` fits the same method on a subset."""
    ends, interior = end_poses(meas.controller_q)
    if ends.size == 0 or interior.size == 0:
        return {"checked": False, "why": "no joint moves, or every pose is at a joint's end"}, []
    e_end, _ = _left_out_errors(meas, ends, refit)
    e_int, _ = _left_out_errors(meas, interior, refit)
    d_end = np.linalg.norm(e_end, axis=-1)
    d_int = np.linalg.norm(e_int, axis=-1)
    rms_end = float(np.sqrt(np.nanmean(d_end ** 2)))
    rms_int = float(np.sqrt(np.nanmean(d_int ** 2)))
    worst = int(np.nanargmax(np.nanmax(d_end, axis=1)))
    ratio = rms_end / rms_int if rms_int > 0 else float("inf")
    report = {"checked": True, "end_poses": [meas.ids[i] for i in ends],
              "interior_poses": [meas.ids[i] for i in interior],
              "end_rms_mm": rms_end * 1000, "interior_rms_mm": rms_int * 1000, "ratio": ratio,
              "worst_end_pose": meas.ids[ends[worst]], "worst_end_mm": float(np.nanmax(d_end[worst])) * 1000,
              "extrapolates_badly": bool(ratio > EXTRAPOLATION_RATIO)}
    lines = []
    if report["extrapolates_badly"]:
        share, chance = gravity_share(result, meas, ends, e_end)
        report["gravity_share"], report["gravity_share_by_chance"] = share, chance
        gravity = result.method in ("nominal", "geometric", "geometric-stiffness") and share >= GRAVITY_SHARE \
            and share >= CHANCE_FACTOR * chance
        report["explained_by"] = "gravity sag" if gravity else None
        why = (f"gravity sag would explain it: a joint-compliance deflection under the links' weight expresses "
               f"{share:.0%} of the end-pose errors (as many random directions: {chance:.0%}); fit it with "
               "--method combined-gravity (no link masses needed)" if gravity else
               "the model lacks an effect that grows towards the ends of the joint ranges; 'calibrate advise' "
               "compares the models by cross-validation over the poses")
        lines.append(f"warning: the {result.method} model extrapolates badly: left out of the fit, the poses at the "
                     f"ends of the joint ranges err by {rms_end * 1000:.3f} mm rms (worst {report['worst_end_pose']} "
                     f"{report['worst_end_mm']:.3f} mm) against {rms_int * 1000:.3f} mm at interior poses "
                     f"({ratio:.1f}x); {why}")
    return report, lines
