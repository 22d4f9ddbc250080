"""Prediction intervals for the identified torque, and how well they are calibrated.

The interval of joint j at a sample is  prediction +- z * sqrt(phi_j * w_j' C w_j + s_j^2):

- ``w_j`` is the sample's base-regressor row of joint j (the columns the prediction multiplies), ``C``
  the estimator's parameter covariance (``estimate.covariance`` of the result);
- ``s_j^2`` is the residual variance of joint j: the mean square of measured minus predicted torque
  over the identification data, processed exactly as prediction processes any data (so it holds
  the sensor noise the low-pass removed from the fit, and whatever the model misses there);
- ``phi_j = (1 + rho_j) / (1 - rho_j)`` accounts for residual autocorrelation in the parameter term:
  ``C`` assumes independent residuals, and a lag-1 autocorrelation ``rho_j`` of joint j's residual
  (AR(1) model) leaves fewer independent samples, so the parameters are that much less certain
  (``rho`` is clipped at 0.999). The residual term itself is a per-sample (marginal) variance,
  which autocorrelation does not change.

The interval is Gaussian; residuals with heavier tails, or a trajectory where the model errs more
than on the identification data (model error, extrapolation), are covered less than nominal. The
calibration (:func:`calibration`) reports the fraction of measured samples inside the nominal 95 %
interval per joint, with the ratio of the evaluated residual RMS to ``s_j`` and the evaluated
residual's lag-1 autocorrelation, so a miss can be traced to one or the other.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from robodyn.robot.model import RobotModel

from .pipeline import _result_parts, base_rows, result_processing
from .processing import process_windows
from .signals import SampledData

LEVEL = 0.95
Z = {0.95: 1.959963984540054}
MAX_RHO = 0.999
OUT_OF_FOLD_FOLDS = 5  # blocks of the identification data for the out-of-fold residuals


def _rows(model: RobotModel, base, d: SampledData) -> np.ndarray:
    """Sample-major base-regressor rows (m*n, parameters), Stribeck excess columns appended."""
    W = base_rows(model, d, base.spec)[:, base.independent]
    if d.friction_extra is None:
        return W
    n = model.dof
    extra = np.zeros((W.shape[0], n))
    idx = np.arange(d.count) * n
    for j in range(n):
        extra[idx + j, j] = d.friction_extra[:, j]
    return np.hstack([W, extra])


def _covariance(result: dict, params: int) -> np.ndarray | None:
    cov = np.asarray(result["estimate"].get("covariance") or [], float)
    if cov.shape != (params, params) or not np.all(np.isfinite(cov)):
        return None  # metaheuristics, the consistent fit and the network report none
    return cov


def predicted_pieces(model: RobotModel, result: dict, raw: SampledData, *, variance: bool = True,
                     chunk: int = 20000) -> Iterator[tuple]:
    """(t, measured, predicted, parameter variance w' C w) at the measured samples of each processed
    piece of ``raw``, processed as :func:`.pipeline.predict` does (the same prediction); torques and
    variances in the controller's joints. ``variance`` False skips the parameter term (zeros)."""
    base, theta, friction, columns = _result_parts(result)
    cov = _covariance(result, theta.size) if variance else None
    n = model.dof
    jm = model.joint_map
    for piece in process_windows(raw, result_processing(result), friction=friction, purpose="predict",
                                 columns=columns):
        d = piece.data
        pred = np.empty((d.count, n))
        var = np.zeros((d.count, n))
        for s in range(0, d.count, chunk):
            e = min(d.count, s + chunk)
            W = _rows(model, base, d.select(slice(s, e)))
            pred[s:e] = (W @ theta).reshape(e - s, n)
            if cov is not None:
                var[s:e] = np.einsum("ip,ip->i", W @ cov, W).reshape(e - s, n)
        if d.tau_friction is not None:
            pred = pred + d.tau_friction
        lo = int(np.searchsorted(raw.t, d.t[0] - 1e-9, side="left"))
        hi = int(np.searchsorted(raw.t, d.t[-1] + 1e-9, side="right"))
        t = raw.t[lo:hi]
        if not (t.shape[0] == d.count and np.array_equal(t, d.t)):
            pred = np.stack([np.interp(t, d.t, pred[:, j]) for j in range(n)], axis=1)
            var = np.stack([np.interp(t, d.t, var[:, j]) for j in range(n)], axis=1)
        measured = raw.tau[lo:hi]
        if not jm.is_identity:  # tau_c = tau_m M: the variance of a sum, cross terms left out
            measured, pred = jm.torque_to_controller(measured), jm.torque_to_controller(pred)
            var = var @ (np.asarray(jm.matrix, float) ** 2)
        yield t, measured, pred, var


class _ResidualStats:
    """Per-joint sums of the residual r = measured - predicted: mean square, mean, lag-1 products
    within each piece (never across a gap)."""

    def __init__(self, n: int):
        self.count = 0
        self.pairs = 0
        self.sum = np.zeros(n)
        self.sq = np.zeros(n)
        self.lag = np.zeros(n)
        self.sq_lag = np.zeros(n)  # sum of r_k^2 over the first sample of each pair

    def add(self, r: np.ndarray) -> None:
        self.count += r.shape[0]
        self.sum += r.sum(0)
        self.sq += (r * r).sum(0)
        if r.shape[0] > 1:
            self.pairs += r.shape[0] - 1
            self.lag += (r[1:] * r[:-1]).sum(0)
            self.sq_lag += (r[:-1] * r[:-1]).sum(0)

    def rms(self) -> np.ndarray:
        return np.sqrt(self.sq / max(self.count, 1))

    def lag1(self) -> np.ndarray:
        """Lag-1 autocorrelation about zero (the interval is centred on the prediction)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = self.lag / self.sq_lag
        return np.where(np.isfinite(rho), rho, 0.0)


def _config_of(result: dict, recordings: int):
    """The least-squares configuration a result was identified with (its resolved cut-off, friction
    scales and weights), to refit it on part of its data; None for other methods."""
    from .pipeline import IdentificationConfig
    from .processing import ProcessingConfig

    c = result.get("config") or {}
    method = (result.get("estimate") or {}).get("method")
    if method not in ("ols", "wls", "irls", "ridge", "tls") or c.get("method") != method:
        return None
    weights = c.get("recording_weights", "equal")
    if isinstance(weights, list) and len(weights) != recordings:
        weights = "equal"
    return IdentificationConfig(method=method, friction=c["friction"], rotor_inertia=c["rotor_inertia"],
                                friction_model=c.get("friction_model"), processing=ProcessingConfig(**c["processing"]),
                                chunk_samples=c.get("chunk_samples", 20000),
                                motor_couplings=tuple(tuple(x) for x in c.get("motor_couplings", ())),
                                friction_scales=c.get("friction_scales"), recording_weights=weights)


def out_of_fold_residuals(model: RobotModel, result: dict, datasets: Sequence[SampledData],
                          folds: int = OUT_OF_FOLD_FOLDS):
    """Residuals (measured minus predicted torque, per piece) of blocked cross-validation: the
    identification recordings laid end to end and cut into ``folds`` contiguous blocks, each
    predicted by the result's configuration refitted on the other blocks. None when the method
    cannot be refitted (not least squares) or the data are too short for the blocks."""
    import dataclasses

    from .pipeline import identify
    from .selection import MIN_PIECE, blocked_folds

    config = _config_of(result, len(datasets))
    if config is None:
        return None
    try:
        plan = blocked_folds([d.count for d in datasets], folds)
    except ValueError:
        return None
    weights = config.recording_weights
    out = []
    for fold in plan:
        ranges = [(r, s, e) for r, s, e in fold.fit if e - s >= MIN_PIECE]
        fit = [datasets[r].select(slice(s, e)) for r, s, e in ranges]
        trial = config if not isinstance(weights, list) else dataclasses.replace(
            config, recording_weights=[weights[r] for r, _, _ in ranges])
        if len(fit) < 2 and isinstance(weights, list):
            trial = dataclasses.replace(config, recording_weights="equal")
        try:
            part = identify(model, fit, trial).to_dict()
        except ValueError:
            return None  # a block's complement too poor to fit (rank): no out-of-fold estimate
        for r, s, e in fold.held_out:
            if e - s < MIN_PIECE:
                continue
            for _, measured, pred, _ in predicted_pieces(model, part, datasets[r].select(slice(s, e)),
                                                         variance=False):
                out.append(measured - pred)
    return out or None


def residual_model(model: RobotModel, result: dict, datasets: Sequence[SampledData],
                   out_of_fold: bool = True, held_out: Sequence[SampledData] = ()) -> dict:
    """The residual model the intervals use, estimated on the identification data ``datasets``.

    Its spread is that of out-of-fold residuals (blocked cross-validation, see
    :func:`out_of_fold_residuals`) when the method can be refitted: a residual of a sample the fit
    did not see holds the model error a new stretch of motion brings, which the in-sample residual
    (the fit's own samples, which it was tuned to) understates. The half width is the empirical
    95 % quantile of the absolute out-of-fold residual per joint (heavier tails than a Gaussian
    are common: friction transitions, an elastic joint), never below 1.96 times the in-sample
    residual std. The lag-1 autocorrelation, for the parameter term's inflation, is the in-sample
    residual's (the fit the covariance belongs to).

    Blocks of one excitation share its kind of motion, so out-of-fold residuals still understate
    the error on a different trajectory (measured: bench/realdata/interval_coverage.py). Recordings
    of other motion given as ``held_out`` (``identify --holdout``) calibrate the spread instead:
    their residuals, never fitted, set the std and the quantile (split-conformal calibration)."""
    stats = _ResidualStats(model.dof)
    for raw in datasets:
        for _, measured, pred, _ in predicted_pieces(model, result, raw, variance=False):
            stats.add(measured - pred)
    if stats.count == 0:
        raise ValueError("residual model: no samples left after processing")
    rho = stats.lag1()
    clipped = np.clip(rho, 0.0, MAX_RHO)
    in_sample = stats.rms()
    z = Z[LEVEL]
    calibrating = []
    for raw in held_out:
        calibrating += [m - p for _, m, p, _ in predicted_pieces(model, result, raw, variance=False)]
    oof = None if calibrating or not out_of_fold else out_of_fold_residuals(model, result, datasets)
    if calibrating:
        r = np.concatenate(calibrating)
        std = np.sqrt(np.mean(r * r, axis=0))
        half = np.maximum(np.quantile(np.abs(r), LEVEL, axis=0), z * in_sample)
        of = ("measured minus predicted torque on the held-out recording(s) (--holdout), never fitted: "
              "another trajectory calibrates the spread, processed as for prediction")
        samples = int(r.shape[0])
    elif oof is not None:
        r = np.concatenate(oof)
        oof_stats = _ResidualStats(model.dof)
        for piece in oof:
            oof_stats.add(piece)
        std = oof_stats.rms()
        half = np.maximum(np.quantile(np.abs(r), LEVEL, axis=0), z * in_sample)
        of = (f"measured minus predicted torque on the identification data, out of fold: {OUT_OF_FOLD_FOLDS} "
              "contiguous blocks, each predicted by a fit on the others, processed as for prediction")
        samples = int(oof_stats.count)
    else:
        std, half = in_sample, z * in_sample
        of = ("measured minus predicted torque on the identification data (in sample: the method cannot be "
              "refitted per block, or the data are too short for the blocks), processed as for prediction")
        samples = int(stats.count)
    return {"level": LEVEL, "joints": list(model.joint_names),
            "residual_std": std.tolist(), "residual_half_width": half.tolist(),
            "in_sample_residual_std": in_sample.tolist(), "residual_mean": (stats.sum / stats.count).tolist(),
            "lag1_autocorrelation": rho.tolist(),
            "parameter_inflation": ((1 + clipped) / (1 - clipped)).tolist(),
            "samples": samples, "out_of_fold": oof is not None, "calibrated_on_held_out": bool(calibrating),
            "of": of,
            "half_width": f"the empirical {LEVEL:.0%} quantile of the absolute residual per joint"
                          + (" (held out)" if calibrating else " (out of fold)" if oof is not None else
                             " (Gaussian: 1.96 std)"),
            "autocorrelation": "accounted for in the parameter term by the AR(1) factor (1+rho)/(1-rho) of "
                               "each joint's lag-1 in-sample residual autocorrelation; the residual term is per "
                               "sample"}


def _residual_half_width(rm: dict) -> np.ndarray:
    """The residual part of the half width: stored (empirical quantile), or z * std for results
    made before it was stored."""
    if "residual_half_width" in rm:
        return np.asarray(rm["residual_half_width"], float)
    return Z[rm.get("level", LEVEL)] * np.asarray(rm["residual_std"], float)


def bounds(result: dict, predicted: np.ndarray, parameter_variance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bound of the nominal interval around ``predicted`` (N, n)."""
    rm = result["residual_model"]
    z = Z[rm.get("level", LEVEL)]
    phi = np.asarray(rm["parameter_inflation"], float)
    half = np.sqrt(z * z * parameter_variance * phi + _residual_half_width(rm) ** 2)
    return predicted - half, predicted + half


def predict_with_interval(model: RobotModel, result: dict, raw: SampledData):
    """(t, measured, predicted, lower, upper) at the measured samples of ``raw``."""
    parts = [(t, m, p, *bounds(result, p, v)) for t, m, p, v in predicted_pieces(model, result, raw)]
    if not parts:
        raise ValueError("recording: no samples left to predict after processing")
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(5))


def calibration(model: RobotModel, result: dict, datasets: Sequence[SampledData]) -> dict | None:
    """Per joint: the fraction of measured samples inside the nominal interval, the mean half width,
    the evaluated residual RMS over the identification residual std (above 1: the model errs more
    here) and the evaluated residual's lag-1 autocorrelation. None for a result without a residual
    model (made before intervals were stored)."""
    if "residual_model" not in result:
        return None
    n = model.dof
    inside = np.zeros(n)
    half_sum = np.zeros(n)
    param_share = np.zeros(n)
    stats = _ResidualStats(n)
    s2 = np.asarray(result["residual_model"]["residual_std"], float) ** 2
    z = Z[result["residual_model"].get("level", LEVEL)]
    h2 = (_residual_half_width(result["residual_model"]) / z) ** 2
    for raw in datasets:
        for _, measured, pred, var in predicted_pieces(model, result, raw):
            lower, upper = bounds(result, pred, var)
            inside += ((measured >= lower) & (measured <= upper)).sum(0)
            half_sum += ((upper - lower) / 2).sum(0)
            total = var * np.asarray(result["residual_model"]["parameter_inflation"], float)
            param_share += (total / (total + h2 + 1e-300)).sum(0)
            stats.add(measured - pred)
    N = max(stats.count, 1)
    std = np.sqrt(s2)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(std > 0, stats.rms() / std, np.nan)
    level = result["residual_model"].get("level", LEVEL)
    return {"level": level, "joints": list(model.joint_names), "samples": int(stats.count),
            "inside_fraction": (inside / N).tolist(), "mean_half_width": (half_sum / N).tolist(),
            "parameter_share_of_variance": (param_share / N).tolist(),
            "rms_over_identification_std": [None if not np.isfinite(x) else float(x) for x in ratio],
            "lag1_autocorrelation": stats.lag1().tolist()}


def calibration_lines(cal: dict | None) -> list[str]:
    if cal is None:
        return ["note: the result stores no residual model (made before intervals were stored): no interval"]
    lines = [f"{cal['level'] * 100:g} % prediction interval: measured samples inside, per joint "
             "(RMS residual / identification residual std; lag-1 autocorrelation)"]
    for j, name in enumerate(cal["joints"]):
        ratio = cal["rms_over_identification_std"][j]
        lines.append(f"  {name:<12} {cal['inside_fraction'][j] * 100:6.1f} %   +- {cal['mean_half_width'][j]:.4g} N.m"
                     f"   ({'n/a' if ratio is None else f'{ratio:.2f}'}; {cal['lag1_autocorrelation'][j]:.2f})")
    return lines
