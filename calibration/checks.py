"""Warnings a user must read: parameters the poses cannot determine, poses evaluated outside the
joint ranges the calibration saw, and residual outliers. Each check returns structured findings
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
    findings, lines = [], []
    for n in range(len(meas)):
        out = np.flatnonzero((q[n] < lo - tol) | (q[n] > hi + tol))
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
