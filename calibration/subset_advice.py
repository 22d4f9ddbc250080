"""Identifiability advice that helps: which parameters to fix, chosen by cross-validation on the
identification poses, with the held-out error that choice predicts.

A list of poorly identifiable names does not say whether fixing them helps: a parameter can be
uncertain and still needed (its true value is far from nominal). So each candidate set is refitted
on k - 1 folds of the poses and judged on the fold left out: every identified parameter free; the
more uncertain half of the poorly identifiable ones fixed at nominal; all of them fixed. The set
with the lowest cross-validated rms error is suggested, with that error.
"""

from __future__ import annotations

import numpy as np

from .geometric import fit_geometry
from .measurements import MeasurementSet
from .methods import nominal_result

FOLDS = 5


def _cv_rms(result, meas: MeasurementSet, free: list[str], folds: int) -> float:
    gm = result.gm
    start = result.params.copy()
    fixed = np.setdiff1d(np.arange(gm.size), gm.indices(free))
    start[fixed] = gm.nominal[fixed]  # fixed parameters sit at nominal, not at the full fit's values
    errors = []
    for k in range(folds):
        test = np.arange(k, len(meas), folds)
        train = np.setdiff1d(np.arange(len(meas)), test)
        fit = fit_geometry(gm, meas.q[train], meas.subset(train), free, initial=start)
        errors.append(nominal_result(gm, params=fit.params).errors(meas.subset(test)))
    e = np.concatenate(errors)
    return float(np.sqrt(np.mean(e ** 2)))


def subset_advice(result, meas: MeasurementSet, folds: int = FOLDS) -> dict | None:
    """Cross-validated held-out rms of candidate free sets (geometric fits); None when nothing is
    poorly identifiable or the method is not geometric."""
    ident = result.identifiability.get("identified") or {}
    poor = [n for n in ident.get("poorly_identifiable") or [] if n in result.free_names]
    if not poor or result.method != "geometric" or len(meas) < 2 * folds:
        return None
    effect = ident.get("effect_std_m") or {}
    ranked = sorted(poor, key=lambda n: -(effect.get(n) or 0.0))  # most uncertain first
    candidates = [("all free", [])]
    if len(ranked) > 1:
        candidates.append((f"the {len(ranked[:len(ranked) // 2])} most uncertain fixed", ranked[:len(ranked) // 2]))
    candidates.append((f"all {len(ranked)} poorly identifiable fixed", ranked))
    rows = []
    for label, fixed in candidates:
        free = [n for n in result.free_names if n not in fixed]
        try:
            rms = _cv_rms(result, meas, free, folds)
        except ValueError:  # a fold cannot determine this set
            rms = float("nan")
        rows.append({"label": label, "fixed": fixed, "free": free, "cv_rms_mm": rms * 1000})
    ok = [r for r in rows if np.isfinite(r["cv_rms_mm"])]
    if not ok:
        return None
    best = min(ok, key=lambda r: r["cv_rms_mm"])
    return {"folds": folds, "candidates": rows, "suggested": best["label"], "suggested_free": best["free"],
            "suggested_fixed": best["fixed"], "predicted_rms_mm": best["cv_rms_mm"], "all_free_rms_mm": rows[0]["cv_rms_mm"]}


def advice_text(advice: dict | None) -> str | None:
    if not advice:
        return None
    if not advice["suggested_fixed"]:
        return (f"cross-validation on the identification poses ({advice['folds']} folds) predicts the lowest held-out "
                f"error, {advice['predicted_rms_mm']:.3f} mm rms, with every parameter free: keep them; fixing them "
                "does not help")
    return (f"cross-validation on the identification poses ({advice['folds']} folds) predicts {advice['predicted_rms_mm']:.3f} mm "
            f"rms held out with {advice['suggested']} (against {advice['all_free_rms_mm']:.3f} mm with all free): "
            f"--free {','.join(advice['suggested_free'])}")
