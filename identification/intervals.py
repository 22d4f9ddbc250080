"""Prediction intervals for the identified torque, and how well they are calibrated.

The interval of joint j at a sample is  prediction +- sqrt(z^2 * (phi_j w_j' C w_j + max(0, w_j' F w_j - m_j)) + h_j^2):

- ``w_j`` is the sample's base-regressor row of joint j (the columns the prediction multiplies), ``C``
  the estimator's parameter covariance (``estimate.covariance`` of the result);
- ``phi_j = (1 + rho_j) / (1 - rho_j)`` accounts for residual autocorrelation in that term: ``C``
  assumes independent residuals, and a lag-1 autocorrelation ``rho_j`` of joint j's in-sample
  residual (AR(1) model) leaves fewer independent samples (``rho`` clipped at 0.999);
- ``h_j`` is the residual half width: the empirical 95 % quantile of joint j's absolute out-of-fold
  residual (each block of the identification data predicted by the fit on the others), never
  below 1.96 times the in-sample residual std;
- ``F`` is the fold covariance: the delete-a-block jackknife covariance of the parameters refitted
  with each block left out, (K-1)/K sum_k (theta_k - mean)(...)'. It holds what ``C`` cannot: how
  far the estimate moves when the fit sees other motion, which model error (an effect the model
  lacks, absorbed differently by different motion) and autocorrelation decide. ``m_j`` is the mean
  of ``w_j' F w_j`` over the identification samples: that much is already in the out-of-fold
  residuals, so only the excess counts. The excess grows where new motion leans on the parameter
  directions the data determined least: extrapolation.

The blocks are motion the fit never saw: a periodic excitation run for several periods is cut by
phase (block k is the k-th stretch of every period, :func:`.folds.repeat_folds`), since a
contiguous block of it is seen again one period later, and its "out-of-fold" residual is then an
in-sample residual in disguise (measured on the UR-like plant with contiguous blocks: residuals
of the identification data 0.83-0.98 times the out-of-fold spread, of another trajectory 1.1-2.6
times it). A recording that does not repeat is cut into
contiguous blocks. Each block is predicted inside its recording, processed whole, and each refit
sees its training recordings with the block as a gap (model selection's folds, one code path:
:func:`out_of_fold_refits`): a block cut out of its recording had filter edges of its own, and
their transients would count as model error.

An out-of-fold residual holds the error of a fit that saw less than the whole data, so on the
identification data itself the interval is conservative (bench/realdata/interval_coverage.py
measures both). Residuals with heavier tails, or a trajectory where the model errs
more than on any block of the identification data, are still covered less than nominal: that part
of the model error shows only on data of other motion, and ``identify --holdout`` calibrates on it
(split-conformal: the held-out recording's residuals set the quantile, and the fold term is left
out). The calibration (:func:`calibration`) reports the fraction of measured samples inside the
nominal 95 % interval per joint, with the ratio of the evaluated residual RMS to the residual
model's std and the evaluated residual's lag-1 autocorrelation, so a miss can be traced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from robodyn.robot.model import RobotModel

from .config import IdentificationConfig
from .pipeline import base_rows
from .processing import process_windows
from .result import IdentificationResult, as_result
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


def _covariance(result: IdentificationResult, params: int) -> np.ndarray | None:
    cov = result.estimate.covariance
    if cov.shape != (params, params) or not np.all(np.isfinite(cov)):
        return None  # metaheuristics, the consistent fit and the network report none
    return cov


def _fold_covariance(result: IdentificationResult, params: int) -> np.ndarray | None:
    """The residual model's fold (jackknife) covariance, None when it has none (held-out
    calibration, a method that cannot be refitted, a result made before it was stored)."""
    cov = np.asarray((result.residual_model or {}).get("fold_covariance") or [], float)
    if cov.shape != (params, params) or not np.all(np.isfinite(cov)):
        return None
    return cov


def predicted_pieces(model: RobotModel, result: IdentificationResult | dict, raw: SampledData, *,
                     variance: bool = True,
                     folds: np.ndarray | None = None, chunk: int = 20000) -> Iterator[tuple]:
    """(t, measured, predicted, parameter variance phi w' C w, fold variance w' F w) at the measured
    samples of each processed piece of ``raw``, processed as :func:`.pipeline.predict` does (the same
    prediction); torques and variances in the controller's joints. ``variance`` False skips both
    variances (zeros). ``phi`` and the fold covariance ``F`` come from the result's residual model
    when it has them (the module doc); ``folds`` overrides ``F`` and leaves the ``C`` term out."""
    result = as_result(result)
    base, theta = result.base, result.values
    cov = _covariance(result, theta.size) if variance and folds is None else None
    if variance and folds is None:
        folds = _fold_covariance(result, theta.size)
    phi = np.asarray((result.residual_model or {}).get("parameter_inflation") or np.ones(model.dof), float)
    n = model.dof
    jm = model.joint_map
    for piece in process_windows(raw, result.processing, friction=result.friction_model, purpose="predict",
                                 columns=result.friction_columns):
        d = piece.data
        pred = np.empty((d.count, n))
        var = np.zeros((d.count, n))
        fold_var = np.zeros((d.count, n))
        for s in range(0, d.count, chunk):
            e = min(d.count, s + chunk)
            W = _rows(model, base, d.select(slice(s, e)))
            pred[s:e] = (W @ theta).reshape(e - s, n)
            if cov is not None:
                var[s:e] = np.einsum("ip,ip->i", W @ cov, W).reshape(e - s, n) * phi
            if folds is not None:
                fold_var[s:e] = np.einsum("ip,ip->i", W @ folds, W).reshape(e - s, n)
        if d.tau_friction is not None:
            pred = pred + d.tau_friction
        lo = int(np.searchsorted(raw.t, d.t[0] - 1e-9, side="left"))
        hi = int(np.searchsorted(raw.t, d.t[-1] + 1e-9, side="right"))
        t = raw.t[lo:hi]
        if not (t.shape[0] == d.count and np.array_equal(t, d.t)):
            pred = np.stack([np.interp(t, d.t, pred[:, j]) for j in range(n)], axis=1)
            var = np.stack([np.interp(t, d.t, var[:, j]) for j in range(n)], axis=1)
            fold_var = np.stack([np.interp(t, d.t, fold_var[:, j]) for j in range(n)], axis=1)
        measured = raw.tau[lo:hi]
        if not jm.is_identity:  # tau_c = tau_m M: the variance of a sum, cross terms left out
            measured, pred = jm.torque_to_controller(measured), jm.torque_to_controller(pred)
            var = var @ (np.asarray(jm.matrix, float) ** 2)
            fold_var = fold_var @ (np.asarray(jm.matrix, float) ** 2)
        yield t, measured, pred, var, fold_var


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


def _config_of(method: str, config: IdentificationConfig, recordings: int) -> IdentificationConfig | None:
    """The least-squares configuration a result of ``method`` was identified with (``config``: its
    resolved cut-off, friction scales and weights), to refit it on part of its ``recordings``
    recordings; None for a method that is not refitted."""
    import dataclasses

    from .names import ESTIMATORS

    spec = ESTIMATORS.get(method)
    if spec is None or not spec.refit_for_intervals or config.method != method:
        return None
    weights = config.recording_weights
    if isinstance(weights, list) and len(weights) != recordings:
        weights = "equal"
    return dataclasses.replace(config, recording_weights=weights)


@dataclass
class OutOfFold:
    residuals: list  # measured minus predicted torque, per held-out piece
    covariance: np.ndarray | None  # the fold (jackknife) covariance of the parameters
    blocks: str  # how the blocks were cut


def _fittable(piece: SampledData, processing) -> bool:
    """Whether processing keeps anything of ``piece``: a short piece, or one broken by gaps into
    stretches too short to filter, keeps nothing (its first window is processed to know)."""
    try:
        next(process_windows(piece, processing))
    except (ValueError, StopIteration):
        return False
    return True


def out_of_fold_refits(model: RobotModel, result: IdentificationResult | dict, datasets: Sequence[SampledData],
                folds: int = OUT_OF_FOLD_FOLDS) -> OutOfFold | None:
    """Blocked cross-validation of the result's configuration on its identification data: each
    block (by phase of the period for a periodic excitation, else contiguous, see the module doc)
    predicted by the configuration refitted on the rest; the residuals, and the jackknife
    covariance of the refitted parameters. None when the method cannot be refitted (not least
    squares) or the data are too short for the blocks.

    The folds are model selection's (:mod:`.selection`): each refit fits every training recording as
    one recording with the block as a gap whose edges processing drops, and the block is predicted
    inside its recording, processed whole (:func:`.pipeline.compare_many` with a ``keep`` mask), as
    a prediction of the whole recording is. Cut out, each piece of a block had two zero-phase filter
    edges of its own, whose transients counted as model error and widened the interval
    (tests/identification/test_prediction_intervals.py measures it on own-model data)."""
    import dataclasses

    from .pipeline import compare_many, identify
    from .folds import cross_validation_folds, fit_recordings, held_out_masks

    result = as_result(result)
    config = _config_of(result.method, result.config, len(datasets))
    if config is None:
        return None
    try:
        plan, blocks = cross_validation_folds(datasets, folds)
    except ValueError:
        return None
    weights = config.recording_weights
    base, theta = result.base, result.values
    out, thetas = [], []
    for fold in plan:
        fitted, fit = fit_recordings(datasets, fold.fit)
        usable = [k for k, d in enumerate(fit) if _fittable(d, config.processing)]
        fitted, fit = [fitted[k] for k in usable], [fit[k] for k in usable]
        trial = config if not isinstance(weights, list) else dataclasses.replace(
            config, recording_weights=[weights[r] for r in fitted])
        if len(fit) < 2 and isinstance(weights, list):
            trial = dataclasses.replace(config, recording_weights="equal")
        try:
            part = identify(model, fit, trial)
        except ValueError:
            return None  # a block's complement too poor to fit (rank): no out-of-fold estimate
        if part.values.shape == theta.shape and np.array_equal(part.base.independent, base.independent):
            thetas.append(part.values)
        held, keep = held_out_masks(datasets, fold.held_out)
        for d, mask in zip(held, keep):
            try:
                for piece, (pred,), _ in compare_many(model, part.base, [part.values], part.friction_model,
                                                      part.processing, d, columns=part.friction_columns, keep=mask):
                    out.append(piece.measured - pred)
            except ValueError:
                continue  # a recording that processing cannot keep (gaps): not scored
    if not out:
        return None
    covariance = None
    if len(thetas) >= 2:
        dev = np.asarray(thetas) - np.mean(thetas, axis=0)
        covariance = (len(thetas) - 1) / len(thetas) * dev.T @ dev
    return OutOfFold(out, covariance, blocks)


def residual_model(model: RobotModel, result: IdentificationResult | dict, datasets: Sequence[SampledData],
                   out_of_fold: bool = True, held_out: Sequence[SampledData] = ()) -> dict:
    """The residual model the intervals use, estimated on the identification data ``datasets``.

    Its spread is that of out-of-fold residuals (blocked cross-validation, see
    :func:`out_of_fold_refits`) when the method can be refitted: a residual of a sample the fit
    did not see holds the model error a new stretch of motion brings, which the in-sample residual
    (the fit's own samples, which it was tuned to) understates. The half width is the empirical
    95 % quantile of the absolute out-of-fold residual per joint (heavier tails than a Gaussian
    are common: friction transitions, an elastic joint), never below 1.96 times the in-sample
    residual std; the refits' jackknife covariance is stored as ``fold_covariance`` for the
    parameter term. The lag-1 autocorrelation, for the estimator covariance's inflation, is the
    in-sample residual's (the fit that covariance belongs to).

    Blocks of one excitation still share its kind of motion, so the interval can understate the
    error on a different trajectory (measured: bench/realdata/interval_coverage.py). Recordings
    of other motion given as ``held_out`` (``identify --holdout``) calibrate the spread instead:
    their residuals, never fitted, set the std and the quantile (split-conformal calibration), and
    no fold covariance is added."""
    result = as_result(result)
    stats = _ResidualStats(model.dof)
    for raw in datasets:
        for _, measured, pred, _, _ in predicted_pieces(model, result, raw, variance=False):
            stats.add(measured - pred)
    if stats.count == 0:
        raise ValueError("residual model: no samples left after processing")
    rho = stats.lag1()
    clipped = np.clip(rho, 0.0, MAX_RHO)
    in_sample = stats.rms()
    z = Z[LEVEL]
    calibrating = []
    for raw in held_out:
        calibrating += [m - p for _, m, p, _, _ in predicted_pieces(model, result, raw, variance=False)]
    oof = None if calibrating or not out_of_fold else out_of_fold_refits(model, result, datasets)
    if calibrating:
        r = np.concatenate(calibrating)
        std = np.sqrt(np.mean(r * r, axis=0))
        half = np.maximum(np.quantile(np.abs(r), LEVEL, axis=0), z * in_sample)
        of = ("measured minus predicted torque on the held-out recording(s) (--holdout), never fitted: "
              "another trajectory calibrates the spread, processed as for prediction")
        samples = int(r.shape[0])
    elif oof is not None:
        r = np.concatenate(oof.residuals)
        oof_stats = _ResidualStats(model.dof)
        for piece in oof.residuals:
            oof_stats.add(piece)
        std = oof_stats.rms()
        half = np.maximum(np.quantile(np.abs(r), LEVEL, axis=0), z * in_sample)
        of = (f"measured minus predicted torque on the identification data, out of fold: {oof.blocks}, "
              "each predicted by a fit on the others, processed as for prediction")
        samples = int(oof_stats.count)
    else:
        std, half = in_sample, z * in_sample
        of = ("measured minus predicted torque on the identification data (in sample: the method cannot be "
              "refitted per block, or the data are too short for the blocks), processed as for prediction")
        samples = int(stats.count)
    fold_covariance = None if oof is None else oof.covariance
    fold_mean = None
    if fold_covariance is not None:  # the fold variance's mean over the identification samples
        total, count = np.zeros(model.dof), 0
        for raw in datasets:
            for _, _, _, _, v in predicted_pieces(model, result, raw, folds=fold_covariance):
                total, count = total + v.sum(0), count + v.shape[0]
        fold_mean = total / max(count, 1)
        if not np.all(fold_mean > 0):
            fold_covariance = fold_mean = None
    return {"level": LEVEL, "joints": list(model.joint_names),
            "residual_std": std.tolist(), "residual_half_width": half.tolist(),
            "in_sample_residual_std": in_sample.tolist(), "residual_mean": (stats.sum / stats.count).tolist(),
            "lag1_autocorrelation": rho.tolist(),
            "parameter_inflation": ((1 + clipped) / (1 - clipped)).tolist(),
            "samples": samples, "out_of_fold": oof is not None, "calibrated_on_held_out": bool(calibrating),
            "of": of,
            "fold_covariance": None if fold_covariance is None else fold_covariance.tolist(),
            "fold_variance_mean": None if fold_mean is None else fold_mean.tolist(),
            "half_width": f"the empirical {LEVEL:.0%} quantile of the absolute residual per joint"
                          + (" (held out)" if calibrating else " (out of fold)" if oof is not None else
                             " (Gaussian: 1.96 std)"),
            "autocorrelation": "accounted for in the estimator covariance's term by the AR(1) factor "
                               "(1+rho)/(1-rho) of each joint's lag-1 in-sample residual autocorrelation; the fold "
                               "covariance and the residual term need none"}


def calibration_note(result: IdentificationResult | dict) -> str | None:
    """One line when the interval was calibrated only on the identification data (no held-out
    recording of other motion), None when ``identify --holdout`` calibrated it."""
    rm = as_result(result).residual_model
    if not rm or rm.get("calibrated_on_held_out"):
        return None
    how = "out-of-fold blocks" if rm.get("out_of_fold") else "its in-sample residuals"
    return (f"note: the interval was calibrated only on {how} of the identification data, no other trajectory "
            "(identify --holdout RECORDING calibrates it on one): on motion unlike it, fewer samples may fall inside")


def _residual_half_width(rm: dict) -> np.ndarray:
    """The residual part of the half width: stored (empirical quantile), or z * std for results
    made before it was stored."""
    if "residual_half_width" in rm:
        return np.asarray(rm["residual_half_width"], float)
    return Z[rm.get("level", LEVEL)] * np.asarray(rm["residual_std"], float)


def bounds(result: IdentificationResult | dict, predicted: np.ndarray, parameter_variance: np.ndarray,
           fold_variance: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bound of the nominal interval around ``predicted`` (N, n) from the two
    variances of :func:`predicted_pieces` (the module doc's formula)."""
    rm = as_result(result).residual_model
    if rm is None:
        raise ValueError("result: field 'residual_model' is missing (made before intervals were stored): no interval")
    z = Z[rm.get("level", LEVEL)]
    h2 = _residual_half_width(rm) ** 2
    mean = rm.get("fold_variance_mean")
    excess = 0.0 if mean is None or fold_variance is None else np.maximum(0.0, fold_variance - np.asarray(mean, float))
    half = np.sqrt(z * z * (parameter_variance + excess) + h2)
    return predicted - half, predicted + half


def predict_with_interval(model: RobotModel, result: IdentificationResult | dict, raw: SampledData):
    """(t, measured, predicted, lower, upper) at the measured samples of ``raw``."""
    result = as_result(result)
    parts = [(t, m, p, *bounds(result, p, v, f)) for t, m, p, v, f in predicted_pieces(model, result, raw)]
    if not parts:
        raise ValueError("recording: no samples left to predict after processing")
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(5))


def calibration(model: RobotModel, result: IdentificationResult | dict,
                datasets: Sequence[SampledData]) -> dict | None:
    """Per joint: the fraction of measured samples inside the nominal interval, the mean half width,
    the evaluated residual RMS over the identification residual std (above 1: the model errs more
    here) and the evaluated residual's lag-1 autocorrelation. None for a result without a residual
    model (made before intervals were stored)."""
    result = as_result(result)
    rm = result.residual_model
    if rm is None:
        return None
    n = model.dof
    inside = np.zeros(n)
    half_sum = np.zeros(n)
    param_share = np.zeros(n)
    stats = _ResidualStats(n)
    s2 = np.asarray(rm["residual_std"], float) ** 2
    z = Z[rm.get("level", LEVEL)]
    h2 = (_residual_half_width(rm) / z) ** 2
    for raw in datasets:
        for _, measured, pred, var, fold_var in predicted_pieces(model, result, raw):
            lower, upper = bounds(result, pred, var, fold_var)
            inside += ((measured >= lower) & (measured <= upper)).sum(0)
            half_sum += ((upper - lower) / 2).sum(0)
            param_share += (var / (var + h2 + 1e-300)).sum(0)
            stats.add(measured - pred)
    N = max(stats.count, 1)
    std = np.sqrt(s2)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(std > 0, stats.rms() / std, np.nan)
    level = rm.get("level", LEVEL)
    return {"level": level, "joints": list(model.joint_names), "samples": int(stats.count),
            "inside_fraction": (inside / N).tolist(), "mean_half_width": (half_sum / N).tolist(),
            "parameter_share_of_variance": (param_share / N).tolist(),
            "rms_over_identification_std": [None if not np.isfinite(x) else float(x) for x in ratio],
            "lag1_autocorrelation": stats.lag1().tolist(), "note": calibration_note(result)}


def calibration_lines(cal: dict | None) -> list[str]:
    if cal is None:
        return ["note: the result stores no residual model (made before intervals were stored): no interval"]
    lines = [f"{cal['level'] * 100:g} % prediction interval: measured samples inside, per joint "
             "(RMS residual / identification residual std; lag-1 autocorrelation)"]
    for j, name in enumerate(cal["joints"]):
        ratio = cal["rms_over_identification_std"][j]
        lines.append(f"  {name:<12} {cal['inside_fraction'][j] * 100:6.1f} %   +- {cal['mean_half_width'][j]:.4g} N.m"
                     f"   ({'n/a' if ratio is None else f'{ratio:.2f}'}; {cal['lag1_autocorrelation'][j]:.2f})")
    if cal.get("note"):
        lines.append(cal["note"])
    return lines
