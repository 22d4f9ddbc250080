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


def residual_model(model: RobotModel, result: dict, datasets: Sequence[SampledData]) -> dict:
    """The residual model the intervals use, estimated on the identification data ``datasets``."""
    stats = _ResidualStats(model.dof)
    for raw in datasets:
        for _, measured, pred, _ in predicted_pieces(model, result, raw, variance=False):
            stats.add(measured - pred)
    if stats.count == 0:
        raise ValueError("residual model: no samples left after processing")
    rho = stats.lag1()
    clipped = np.clip(rho, 0.0, MAX_RHO)
    return {"level": LEVEL, "joints": list(model.joint_names),
            "residual_std": stats.rms().tolist(), "residual_mean": (stats.sum / stats.count).tolist(),
            "lag1_autocorrelation": rho.tolist(),
            "parameter_inflation": ((1 + clipped) / (1 - clipped)).tolist(),
            "samples": int(stats.count),
            "of": "measured minus predicted torque on the identification data, processed as for prediction",
            "autocorrelation": "accounted for in the parameter term by the AR(1) factor (1+rho)/(1-rho) of "
                               "each joint's lag-1 residual autocorrelation; the residual term is per sample"}


def bounds(result: dict, predicted: np.ndarray, parameter_variance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bound of the nominal interval around ``predicted`` (N, n)."""
    rm = result["residual_model"]
    s2 = np.asarray(rm["residual_std"], float) ** 2
    phi = np.asarray(rm["parameter_inflation"], float)
    half = Z[rm.get("level", LEVEL)] * np.sqrt(parameter_variance * phi + s2)
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
    for raw in datasets:
        for _, measured, pred, var in predicted_pieces(model, result, raw):
            lower, upper = bounds(result, pred, var)
            inside += ((measured >= lower) & (measured <= upper)).sum(0)
            half_sum += ((upper - lower) / 2).sum(0)
            total = var * np.asarray(result["residual_model"]["parameter_inflation"], float)
            param_share += (total / (total + s2 + 1e-300)).sum(0)
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
