"""Warnings a user must read: parameters the poses cannot determine, poses evaluated outside the
joint ranges the calibration saw (revolute joints modulo a turn), residual outliers, and a
calibration that made the errors worse than the nominal model. Each check returns structured findings
and one line of text per warning; the CLI prints them in its text output and its JSON."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .methods import CalibrationResult
from .measurements import MeasurementSet

OUTLIER_SIGMAS = 5.0  # robust standard deviations: a 3-D Gaussian point exceeds this with p ~ 1e-5
RANGE_TOLERANCE_DEG = 0.5  # how far beyond the identification range a pose may lie unmentioned
ROBUST_MAD = 1.4826  # MAD -> standard deviation for Gaussian data


@dataclass
class Outlier:
    label: str
    error_m: float
    sigmas: float
    pose: int = -1


def poorly_identifiable_warning(result: CalibrationResult, advice: str | None = None) -> str | None:
    """One line on the identified parameters whose uncertainty moves the points by more than the noise:
    with ``advice`` (a cross-validated subset, subset_advice.py) that advice instead of their names."""
    ident = result.identifiability.get("identified") or {}
    poor = list(ident.get("poorly_identifiable") or [])
    if not poor:
        return None
    cond = ident.get("condition_number")
    count = ident.get("parameter_count", len(result.free_names))
    if advice:
        return (f"warning: {len(poor)} of {count} parameters are poorly identifiable from these poses (condition "
                f"number {'inf' if cond is None else f'{cond:.3g}'}; named in the result file under identifiability); "
                f"{advice}; or plan poses that move several joints at once (calibrate plan --optimal POOL)")
    return (f"warning: {len(poor)} of {count} parameters are poorly identifiable from these poses (condition number "
            f"{'inf' if cond is None else f'{cond:.3g}'}; their uncertainty moves the points more than the noise): "
            f"{', '.join(poor)}; plan poses that move several joints at once (calibrate plan --optimal POOL) or fix "
            "them (--free)")


def joint_ranges(sets, joint_map=None) -> dict:
    """Per-joint min/max of the controller joint values over measurement sets (rad)."""
    q = np.vstack([s.controller_q for s in sets if s is not None and len(s)])
    return {"q_min": q.min(0).tolist(), "q_max": q.max(0).tolist()}


def range_warnings(ranges: dict | None, meas: MeasurementSet, joint_types=None) -> tuple[list[dict], list[str]]:
    """Poses with a joint outside the identification set's range: one line per pose, naming the joints."""
    if not ranges:
        return [], []
    lo, hi = np.asarray(ranges["q_min"], float), np.asarray(ranges["q_max"], float)
    q = meas.controller_q
    tol = np.deg2rad(RANGE_TOLERANCE_DEG)
    prismatic = np.zeros(q.shape[1], bool) if joint_types is None else np.asarray(joint_types) == 1
    tol = np.where(prismatic, 5e-4, tol)
    outside = outside_range(q, lo, hi, tol, prismatic)
    findings, lines = [], []
    for n in range(len(meas)):
        out = np.flatnonzero(outside[n])
        if not out.size:
            continue
        joints = []
        for j in out:
            if prismatic[j]:
                joints.append(f"J{j + 1} = {q[n, j] * 1000:.1f} mm (identified on {lo[j] * 1000:.1f}..{hi[j] * 1000:.1f} mm)")
            else:
                joints.append(f"J{j + 1} = {np.rad2deg(q[n, j]):.1f}° (identified on {np.rad2deg(lo[j]):.1f}.."
                              f"{np.rad2deg(hi[j]):.1f}°)")
        findings.append({"pose": meas.ids[n], "joints": [int(j) + 1 for j in out],
                         "values_rad": [float(q[n, j]) for j in out]})
        lines.append(f"warning: pose {meas.ids[n]} lies outside the identification poses' joint ranges: "
                     f"{', '.join(joints)}; its error is an extrapolation")
    return findings, lines


def outside_range(q, lo, hi, tol, prismatic) -> np.ndarray:
    """(N, n) bool: joint values beyond [lo - tol, hi + tol]. A revolute joint's angle is compared
    modulo 2π, because the arm's geometry and the gravity torques repeat every turn: J6 at 360° is
    the pose J6 at 0° and no extrapolation."""
    q = np.atleast_2d(np.asarray(q, float))
    lo, hi, tol = (np.broadcast_to(np.asarray(v, float), q.shape[1:]) for v in (lo, hi, tol))
    linear = (q < lo - tol) | (q > hi + tol)
    span = hi - lo
    past_lo = np.mod(q - lo, 2 * np.pi)  # how far round the circle beyond the range's low end
    circular = (span + 2 * tol < 2 * np.pi) & (past_lo > span + tol) & (past_lo < 2 * np.pi - tol)
    return np.where(np.asarray(prismatic, bool), linear, circular)


def find_outliers(result: CalibrationResult, meas: MeasurementSet, exclude_poses=()) -> tuple[list[Outlier], float]:
    """Points whose residual exceeds OUTLIER_SIGMAS robust standard deviations (a MAD of the noise-
    weighted residual coordinates). Returns the outliers and the robust scale (in stated-noise units).
    Poses in ``exclude_poses`` (indices; beyond the identified joint ranges) are never called outliers."""
    res, q_link = result.residual(meas)
    if not len(res.points):
        return [], float("nan")
    raw = res.raw(result.params, q_link)[:3 * len(res.points)].reshape(-1, 3)
    w = res.weights[:3 * len(res.points)].reshape(-1, 3)[:, 0]
    z = raw * w[:, None]
    scale = ROBUST_MAD * float(np.median(np.abs(z)))
    if not scale > 0:
        return [], scale
    dist = np.linalg.norm(z, axis=1) / scale
    labels = res.point_labels()
    skip = set(int(i) for i in exclude_poses)
    poses = res.points[:, 0]
    found = [Outlier(labels[m], float(np.linalg.norm(raw[m])), float(dist[m]), int(poses[m]))
             for m in np.flatnonzero(dist > OUTLIER_SIGMAS) if int(poses[m]) not in skip]
    return sorted(found, key=lambda o: -o.sigmas), scale


def outlier_warning(outliers: list[Outlier], loss: str, total: int, limit: int = 6) -> str | None:
    if not outliers:
        return None
    shown = ", ".join(f"{o.label} {o.error_m * 1000:.3f} mm ({o.sigmas:.1f}σ)" for o in outliers[:limit])
    more = f" and {len(outliers) - limit} more" if len(outliers) > limit else ""
    advice = ("refit with a robust loss (--loss huber or soft_l1) or check those measurements" if loss == "linear"
              else f"the {loss} loss down-weighted them")
    return (f"warning: {len(outliers)} of {total} measured points are residual outliers (> {OUTLIER_SIGMAS:g} robust "
            f"σ): {shown}{more}; {advice}")


def worse_than_nominal_warnings(before: dict, after: dict) -> list[str]:
    """One line for each statistic (max, mean) that calibration made worse than the nominal model."""
    lines = []
    for key, what in (("max_mm", "worst point"), ("mean_mm", "mean error")):
        b, a = before.get(key), after.get(key)
        if b is not None and a is not None and a > b:
            lines.append(f"warning: calibration made the {what} worse than the nominal model on these poses "
                         f"({a:.4f} mm against {b:.4f} mm, {100 * (a / b - 1):.1f} % worse); the calibrated model "
                         "does not hold here (poses outside the identified ranges, or an effect it lacks)")
    return lines


def change_text(reduction: float, what: str) -> str:
    """A signed relative change as words: 'max error reduced by 12.0 %' or 'max error 13.7 % worse'."""
    if reduction >= 0:
        return f"{what} reduced by {100 * reduction:.1f} %"
    return f"{what} {100 * -reduction:.1f} % worse"
