"""Model selection by held-out error: which friction model, cut-off and estimator predict best.

The training recordings are split by time: the last ``holdout`` fraction of each recording is held
out, the rest is fitted. Every combination of

- friction model: viscous + Coulomb + offset, sigmoid (tanh) and Stribeck, each identified with the
  dynamics (friction.FrictionColumns; the velocity scales chosen on the fitted part),
- cut-off: the automatic one times each of ``cutoff_factors``,
- estimator: OLS, WLS, IRLS, ridge and total least squares,

is fitted on the first part and scored on the held-out part against the measured torque (sum of
per-joint RMSE, the figure of Ni et al. 2024's Table 4). The best combination is then refitted on
the whole of the training data, and the result carries the whole table, so the choice can be
audited. Processing and the normal equations are shared by the estimators of one (friction,
cut-off) pair: one pass over the data per pair, not per candidate.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Sequence

import numpy as np

from robodyn.robot.model import RobotModel

from .estimators import accumulate, estimate
from .pipeline import IdentificationConfig, IdentificationResult, identify, prepare, validate_many
from .signals import SampledData
from .processing import resolve_processing

FRICTIONS = ("coulomb-viscous", "sigmoid", "stribeck")
CUTOFF_FACTORS = (0.5, 1.0, 2.0)
METHODS = ("ols", "wls", "irls", "ridge", "tls")
SCORE = "sum of per-joint RMSE against the measured torque on the held-out part"


def split_by_time(data: SampledData, holdout: float) -> tuple[SampledData, SampledData]:
    """(first part, held-out last part) of a recording, cut at a time, not a sample count."""
    if not 0.05 <= holdout <= 0.5:
        raise ValueError(f"holdout: expected a fraction between 0.05 and 0.5 of each recording, got {holdout}")
    cut = data.t[0] + (1.0 - holdout) * (data.t[-1] - data.t[0])
    k = int(np.searchsorted(data.t, cut))
    if k < 200 or data.count - k < 200:
        raise ValueError(f"holdout: a recording of {data.count} samples is too short to hold out "
                         f"{holdout:.0%} of it (each part needs at least 200 samples)")
    return data.select(slice(0, k)), data.select(slice(k, data.count))


def select(model: RobotModel, datasets: Sequence[SampledData], config: IdentificationConfig, *,
           holdout: float = 0.25, frictions: Sequence[str] = FRICTIONS,
           cutoff_factors: Sequence[float] = CUTOFF_FACTORS, methods: Sequence[str] = METHODS,
           sources: Sequence[str] = (), progress: Callable[[str, float], None] | None = None) -> IdentificationResult:
    """The best combination by held-out error, refitted on all of ``datasets``; the result's
    ``selection`` entry holds every candidate's score."""
    report = progress or (lambda stage, fraction: None)
    if config.friction_model is not None:
        raise ValueError("select: a subtracted friction model fixes the friction; selection chooses it (drop "
                         "--friction-model, or identify without --select)")
    pairs = [split_by_time(d, holdout) for d in datasets]
    fit_parts = [a for a, _ in pairs]
    held_out = [b for _, b in pairs]
    auto = resolve_processing(dataclasses.replace(config.processing, cutoff_hz="auto"), fit_parts)
    rate = min(1.0 / float(np.median(np.diff(d.t))) for d in fit_parts)
    cutoffs = sorted({round(min(auto.cutoff_hz * f, 0.4 * rate / 2.0), 3) for f in cutoff_factors})
    candidates: list[dict] = []
    total = len(frictions) * len(cutoffs)
    step = 0
    for friction in frictions:
        for cutoff in cutoffs:
            step += 1
            report(f"candidates: friction {friction}, cut-off {cutoff:g} Hz", step / (total + 1))
            trial = dataclasses.replace(config, friction=friction, friction_scales=None,
                                        processing=dataclasses.replace(config.processing, cutoff_hz=cutoff,
                                                                       cutoff_choice=None))
            t0 = time.perf_counter()
            try:
                prep = prepare(model, fit_parts, trial, cache=True)
                statistics = accumulate(prep.chunks, model.dof, prep.params)
            except ValueError as exc:
                for method in methods:
                    candidates.append(_failed(friction, cutoff, method, exc))
                continue
            estimates = []
            for method in methods:
                try:
                    est, _ = estimate(method, prep.chunks, model.dof, prep.params, prep.names, statistics=statistics)
                    estimates.append((method, est))
                except ValueError as exc:
                    candidates.append(_failed(friction, cutoff, method, exc))
            if not estimates:
                continue
            scores = validate_many(model, prep, [est.theta for _, est in estimates], held_out)
            for (method, est), score in zip(estimates, scores):
                candidates.append({"friction": friction, "cutoff_hz": cutoff, "method": method,
                                   "friction_scales": prep.config.friction_scales,
                                   "held_out_rmse_sum": score["rmse_sum"], "held_out_rmse": score["rmse"],
                                   "held_out_relative_error": score["relative_error_total"],
                                   "fit_relative_residual": est.relative_residual,
                                   "seconds": round(time.perf_counter() - t0, 3)})
    scored = [c for c in candidates if c.get("held_out_rmse_sum") is not None]
    if not scored:
        reasons = "; ".join(sorted({c["error"] for c in candidates}))[:500]
        raise ValueError(f"select: no candidate could be fitted ({reasons})")
    scored.sort(key=lambda c: c["held_out_rmse_sum"])
    best = scored[0]
    report("refitting the best candidate on all the data", total / (total + 1))
    chosen = dataclasses.replace(config, friction=best["friction"], method=best["method"],
                                 friction_scales=best["friction_scales"],
                                 processing=dataclasses.replace(config.processing, cutoff_hz=best["cutoff_hz"],
                                                                cutoff_choice=None))
    result = identify(model, datasets, chosen, sources=sources)
    result.selection = {
        "holdout": f"the last {holdout:.0%} of each recording, by time",
        "score": SCORE,
        "automatic_cutoff": auto.cutoff_choice,
        "chosen": {k: best[k] for k in ("friction", "cutoff_hz", "method", "friction_scales", "held_out_rmse_sum")},
        "candidates": scored + [c for c in candidates if c.get("held_out_rmse_sum") is None],
    }
    return result


def _failed(friction: str, cutoff: float, method: str, exc: Exception) -> dict:
    return {"friction": friction, "cutoff_hz": cutoff, "method": method, "held_out_rmse_sum": None,
            "error": " ".join(str(exc).split())[:200]}
