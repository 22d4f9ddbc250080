"""Recordings in, a dynamic model out: processing, friction handling, estimation, validation.

Data flow. Each raw dataset (t, q, [qd], tau) is processed (processing.process) into uniform q, qd,
qdd, tau. The regressor is evaluated chunk by chunk (``chunk_samples`` rows at a time, into one
reused buffer) and reduced to the base columns, and only per-joint normal equations survive a
chunk (estimators.NormalEquations). The result is an :class:`.result.IdentificationResult`, JSON
only at the edge, that :func:`predict` turns back into torques.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np
from numba import njit

from robodyn import __version__
from robodyn.robot.friction import FrictionModel
from robodyn.robot.model import RobotModel

from .base_params import BaseParameters, base_parameters
from .config import IdentificationConfig  # noqa: F401  (re-exported)
from .estimators import Estimate, estimate, torque_metrics_from_sums
from .friction import FrictionColumns, choose_friction_scales
from .names import LEAST_SQUARES
from .processing import ProcessingConfig, process_windows, resolve_processing
from .recording_weights import StackedChunks
from .regressor import ColumnSpec, regressor
from .result import RESULT_FORMAT, RESULT_VERSION, read_document  # noqa: F401  (re-exported)
from .result import IdentificationResult, as_result
from .signals import SampledData
from .streaming import RegressorChunks, coulomb_signal
from .processed_cache import ProcessedCache  # noqa: F401  (re-exported)

def load_result(path) -> dict:
    """The JSON document of a result file (format and version checked), for callers that keep the
    document; validate and predict take it or the typed result (result.read_result) alike."""
    return read_document(path)


# --------------------------------------------------------------------------- chunked regressor


def base_rows(model: RobotModel, d: SampledData, spec: ColumnSpec, out: np.ndarray | None = None) -> np.ndarray:
    """Sample-major regressor rows (N*n, P) of processed data. When the data carry a filtered
    sgn(qd) (parallel filtering), it replaces the Coulomb columns, so the model's friction step
    went through the same filter as the measured torque."""
    return regressor(model, d.q, d.qd, d.qdd, spec, out=out, coulomb=coulomb_signal(d, spec))


def _chunks(model: RobotModel, source: Callable[[], Iterator[SampledData]], spec: ColumnSpec,
            base: BaseParameters, chunk: int, extra: int = 0) -> RegressorChunks:
    """A re-iterable source of (joint-major base regressor rows, torque) chunks that also reduces
    itself to normal equations in one fused, multi-threaded pass (streaming.RegressorChunks); any
    friction model was already subtracted from the torque in processing, before filtering. Pieces
    that carry Stribeck excess columns get them appended (one per joint)."""
    return RegressorChunks(model, source, spec, base, chunk, extra=extra)


def predict_processed(model: RobotModel, base: BaseParameters, theta: np.ndarray, d: SampledData,
                      chunk: int = 20000) -> np.ndarray:
    """W_b theta (N, n) for processed data (using its Coulomb signal and Stribeck excess columns, if
    any); add ``d.tau_friction`` for the full torque when a friction model was subtracted. ``theta``
    holds the base parameters, then one Stribeck excess per joint when the data carry that column."""
    full = np.zeros(len(base.standard_names))  # theta on the standard columns: no column copy
    full[base.independent] = theta[: base.count]
    out = np.empty((d.count, model.dof))
    for s in range(0, d.count, chunk):
        e = min(d.count, s + chunk)
        out[s:e] = (base_rows(model, d.select(slice(s, e)), base.spec) @ full).reshape(e - s, model.dof)
    if theta.shape[0] > base.count:
        if d.friction_extra is None:
            raise ValueError("prediction: the result has Stribeck friction columns but the data carry none")
        out += d.friction_extra * theta[base.count:]
    return out


def predict_base(model: RobotModel, base: BaseParameters, theta: np.ndarray, q, qd, qdd,
                 friction: FrictionModel | None = None, chunk: int = 20000) -> np.ndarray:
    """Torques (N, n) from states by identified base parameters, plus a friction model if given."""
    q, qd, qdd = (np.asarray(a, float) for a in (q, qd, qdd))
    states = SampledData(np.arange(q.shape[0], dtype=float), q, np.zeros_like(q), qd, qdd)
    out = predict_processed(model, base, theta, states, chunk)
    return out if friction is None else out + friction.torque(qd)


@njit(cache=True, nogil=True)
def _add_metric_sums(measured, predicted, sums):
    """Per joint, into ``sums`` rows: sum of m, of p, of m^2, of p^2, of m p, of (m - p)^2, in one
    pass (model selection adds every candidate's prediction of every held-out fold; six numpy
    reductions with their temporaries took eight times as long). Row by row, as numpy's axis-0 sum
    adds them: the same sums to the bit."""
    for i in range(measured.shape[0]):
        for j in range(measured.shape[1]):
            m, p = measured[i, j], predicted[i, j]
            e = m - p
            sums[0, j] += m
            sums[1, j] += p
            sums[2, j] += m * m
            sums[3, j] += p * p
            sums[4, j] += m * p
            sums[5, j] += e * e


class TorqueMetrics:
    """Streaming per-joint RMSE and their sum (Ni et al. 2024 Table 4), relative error and correlation
    coefficient (Zhong et al. 2023 eqs. 20-21): only running sums are kept, chunk after chunk."""

    KEYS = ("m", "p", "mm", "pp", "mp", "ee")

    def __init__(self, dof: int):
        self.count = 0
        self._sums = np.zeros((len(self.KEYS), dof))

    @property
    def sums(self) -> dict:
        return dict(zip(self.KEYS, self._sums))

    def add(self, measured: np.ndarray, predicted: np.ndarray) -> None:
        measured = np.ascontiguousarray(measured, dtype=np.float64)
        predicted = np.ascontiguousarray(predicted, dtype=np.float64)
        if measured.shape != predicted.shape or measured.shape[1:] != self._sums.shape[1:]:
            raise ValueError(f"torque metrics: measured {measured.shape} and predicted {predicted.shape} must both "
                             f"be (samples, {self._sums.shape[1]})")
        _add_metric_sums(measured, predicted, self._sums)
        self.count += measured.shape[0]

    def result(self, joint_names: Sequence[str]) -> dict:
        s = self.sums
        return torque_metrics_from_sums(joint_names, max(self.count, 1), self.count, measured=s["m"],
                                        predicted=s["p"], measured_squared=s["mm"], predicted_squared=s["pp"],
                                        product=s["mp"], residual_squared=s["ee"])


def torque_metrics(measured: np.ndarray, predicted: np.ndarray, joint_names: Sequence[str]) -> dict:
    acc = TorqueMetrics(measured.shape[1])
    acc.add(measured, predicted)
    return acc.result(joint_names)


SCALE_SAMPLES = 200_000  # processed samples used to choose friction scales
def _pieces(raw: SampledData, processing: ProcessingConfig, friction, columns, purpose: str = "fit",
            processed: ProcessedCache | None = None):
    if processed is not None and friction is None:
        return processed.pieces(raw, processing, purpose=purpose, columns=columns)
    return process_windows(raw, processing, friction=friction, purpose=purpose, columns=columns)



def friction_residual(model: RobotModel, datasets: Sequence[SampledData], config: IdentificationConfig,
                      preprocessed: bool = False, *, processed: ProcessedCache | None = None,
                      fitted: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(qd, residual) on up to SCALE_SAMPLES processed samples: what an ordinary least-squares
    Coulomb-viscous fit with ``config``'s processing and columns leaves unexplained, the data the
    sigmoid and Stribeck velocity scales are chosen from. It does not depend on ``config``'s friction
    model or estimator, so candidates differing only in those share it (model selection), and
    ``fitted`` (base parameters, theta) may give that fit when it was already made."""
    plain = dataclasses.replace(config, friction="coulomb-viscous", method="ols", friction_scales=None)
    if fitted is None:
        first = identify(model, datasets, plain, preprocessed=preprocessed, processed=processed)
        fitted = (first.base, first.estimate.theta)
    base, theta = fitted
    qd_parts, r_parts, kept = [], [], 0
    for raw in datasets:
        pieces = [raw] if preprocessed else (p.data for p in _pieces(raw, plain.processing, None, FrictionColumns(),
                                                                     processed=processed))
        for d in pieces:
            take = min(d.count, SCALE_SAMPLES - kept)
            if take <= 0:
                break
            d = d.select(slice(0, take))
            qd_parts.append(d.qd)
            r_parts.append(d.tau - predict_processed(model, base, theta, d))
            kept += take
    return np.concatenate(qd_parts), np.concatenate(r_parts)


@dataclass
class PreparedData:
    """Everything an estimator needs, prepared once: the resolved config, the base parameters and a
    re-iterable source of regressor chunks (processed on each pass, or cached in memory)."""

    config: IdentificationConfig
    base: BaseParameters
    friction: FrictionModel | None
    extra_names: list
    steps: list
    chunks: Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]
    stacked: object = None  # recording_weights.StackedChunks when several recordings are weighted

    @property
    def params(self) -> int:
        return self.base.count + len(self.extra_names)

    @property
    def names(self) -> list[str]:
        return list(self.base.names) + list(self.extra_names)


def prepare(model: RobotModel, datasets: Sequence[SampledData], config: IdentificationConfig, *,
            preprocessed: bool = False, cache: bool = False,
            progress: Callable[[str, float], None] | None = None,
            processed: ProcessedCache | None = None) -> PreparedData:
    """Resolve the processing (one cut-off for all recordings), choose friction scales if needed and
    set up the chunked regressor. ``cache`` keeps the processed data in memory, for estimators that
    pass over the data many times (model selection); ``processed`` shares processed recordings
    between the candidates of a selection."""
    report = progress or (lambda stage, fraction: None)
    if not datasets:
        raise ValueError("recordings: need at least one dataset")
    for k, raw in enumerate(datasets):
        if raw.dof != model.dof:
            raise ValueError(f"recording {k}: has {raw.dof} joints but robot {model.name} has {model.dof}")
        if preprocessed and (raw.qd is None or raw.qdd is None):
            raise ValueError(f"recording {k}: preprocessed data must carry qd and qdd")
    if isinstance(config.recording_weights, list) and len(config.recording_weights) != len(datasets):
        raise ValueError(f"recording_weights: {len(config.recording_weights)} weights given for {len(datasets)} "
                         "recordings (one per recording, in the order the recordings are given)")
    steps: list = [None] * len(datasets)
    if not preprocessed:
        # one cut-off for every recording, chosen from all of them: the result stores the number
        config = dataclasses.replace(config, processing=resolve_processing(config.processing, datasets))
    friction = FrictionModel.from_dict(config.friction_model) if config.friction_model else None
    if friction is not None and preprocessed:
        raise ValueError("friction_model: preprocessed data cannot be friction-compensated here; subtract it first")
    if config.joint_friction and config.friction in ("sigmoid", "stribeck") and config.friction_scales is None:
        report("choosing friction scales", 0.05)
        config = dataclasses.replace(config, friction_scales=choose_friction_scales(
            config.friction, *friction_residual(model, datasets, config, preprocessed, processed=processed)).tolist())
    columns = config.columns

    def source_of(k: int) -> Callable[[], Iterator[SampledData]]:
        """Processed data of recording k, window by window: long recordings never sit in memory
        processed whole."""
        raw = datasets[k]

        def source() -> Iterator[SampledData]:
            if preprocessed:
                steps[k] = [{"step": "none", "reason": "preprocessed data"}]
                yield raw
                return
            for piece in _pieces(raw, config.processing, friction, columns, processed=processed):
                if steps[k] is None:
                    steps[k] = piece.steps
                yield piece.data

        return source

    def source() -> Iterator[SampledData]:
        for k in range(len(datasets)):
            yield from source_of(k)()

    spec = config.spec
    base = _base_parameters(model, spec)
    extra_names = columns.extra_names(model.dof) if columns is not None else []
    stacked = None
    if len(datasets) > 1 and config.recording_weights != "equal":
        # each recording's normal equations on their own, summed with its weights
        stacked = StackedChunks([_chunks(model, source_of(k), spec, base, config.chunk_samples,
                                         extra=len(extra_names)) for k in range(len(datasets))],
                                config.recording_weights, list(base.names) + list(extra_names))
        chunks = stacked
    else:
        chunks = _chunks(model, source, spec, base, config.chunk_samples, extra=len(extra_names))
    if cache:
        # estimators that pass over the data many times (IRLS, model selection) reuse the regressor
        # rows instead of reprocessing: the joint-major base rows of the whole data set, kept once
        kept = [(np.ascontiguousarray(W), tau) for W, tau in chunks()]
        chunks = lambda: iter(kept)  # noqa: E731
    return PreparedData(config, base, friction, extra_names, steps, chunks, stacked)


_BASE_CACHE: dict = {}


def _base_parameters(model: RobotModel, spec: ColumnSpec) -> BaseParameters:
    """base_parameters, computed once per model object and column set (model selection prepares
    the same model many times; the QR of the random regressor is the costly part)."""
    key = (id(model), spec)
    hit = _BASE_CACHE.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    base = base_parameters(model, spec)
    if len(_BASE_CACHE) > 32:
        _BASE_CACHE.clear()
    _BASE_CACHE[key] = (model, base)
    return base


def identify(model: RobotModel, datasets: Sequence[SampledData], config: IdentificationConfig = None, *,
             sources: Sequence[str] = (), progress: Callable[[str, float], None] | None = None,
             preprocessed: bool = False, processed: ProcessedCache | None = None) -> IdentificationResult:
    """Identify base parameters of ``model`` from one or more datasets.

    ``preprocessed`` skips signal processing (the datasets already carry exact qd and qdd).
    """
    report = progress or (lambda stage, fraction: None)
    prep = prepare(model, datasets, config or IdentificationConfig(), preprocessed=preprocessed, progress=report,
                   processed=processed)
    report("estimating", 0.1)
    est, statistics = estimate(prep.config.method, prep.chunks, model.dof, prep.params, prep.names)
    report("done", 1.0)
    return result_from(model, prep, est, statistics, sources)


def add_checks(model: RobotModel, datasets: Sequence[SampledData], result: IdentificationResult,
               preprocessed: bool = False) -> None:
    """What a reader of a real arm's result should be told besides the fit, added to the
    estimate's notes (printed as warnings): repeated samples in a recording (signals.repeated_samples),
    estimates no robot can have (plausibility.py), a base that is not level (gravity_check.py) and a
    joint whose torque sign disagrees with the model (torque_sign.py).
    Called where a result is given to a user (methods.identification_result, the daemon's jobs),
    not on the refits of cross-validation and intervals."""
    from .gravity_check import check_gravity
    from .plausibility import implausible, warning_line
    from .signals import repeated_samples
    from .torque_sign import check_torque_signs

    notes = result.estimate.notes
    for k, raw in enumerate(datasets):
        line = repeated_samples(raw)["warning"]
        if line:
            notes.append(line if len(datasets) == 1 else f"recording {k + 1}: {line}")
    if result.method in LEAST_SQUARES:
        line = warning_line(implausible(result.parameter_names(), result.estimate.theta, result.estimate.std, model))
        if line:
            notes.append(line)
    first = datasets[0]
    if not preprocessed:
        first = next(iter(process_windows(first, result.config.processing, friction=result.friction_model,
                                          columns=result.config.columns))).data
    if first.qd is not None and first.qdd is not None and first.tau is not None and first.count >= 100:
        line = check_gravity(model, first.q, first.qd, first.qdd, first.tau, result.config.spec)["warning"]
        if line:
            notes.append(line)
        line = check_torque_signs(model, first.q, first.qd, first.qdd, first.tau, result.config.spec)["warning"]
        if line:
            notes.append(line)


def result_from(model: RobotModel, prep: PreparedData, est: Estimate, statistics, sources: Sequence[str] = (),
                method: str | None = None) -> IdentificationResult:
    # the statistics already hold everything the metrics need (on the friction-compensated torque
    # when a friction model was subtracted: the errors are the same, the torque scale is smaller).
    # They are the fit against the processed (filtered) torque; figures against the measured torque
    # come from `validate`, which the command line runs on the identification data too.
    config = prep.config if method is None else dataclasses.replace(prep.config, method=method)
    if prep.stacked is not None:
        # weighted recordings: the metrics count every sample once (torque units), the weights are stored
        statistics = prep.stacked.unweighted_statistics()
        config = dataclasses.replace(config, recording_weights=prep.stacked.weights.tolist())
    metrics = {"identification": {"against": "processed torque",
                                  **statistics.metrics(est.theta, model.joint_names)}}
    provenance = {
        "recordings": list(sources), "software": f"robodyn {__version__}",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "model": model.summary(),
    }
    return IdentificationResult(model.name, prep.base, est, prep.friction, config, metrics, prep.steps, provenance)


@dataclass
class ComparedPiece:
    """One processed piece beside the measurement: at the measured samples (raw timestamps, raw
    torque) and on the processing grid (filtered torque)."""

    t: np.ndarray  # measured sample times inside the piece
    measured: np.ndarray  # the sensor's torque there, untouched
    predicted: np.ndarray  # the model's torque interpolated to those times
    t_grid: np.ndarray
    filtered: np.ndarray  # the measured torque after the processing's low-pass, on the grid
    predicted_grid: np.ndarray


def compare_with_measured(model: RobotModel, base: BaseParameters, theta: np.ndarray,
                          friction: FrictionModel | None, processing: ProcessingConfig, raw: SampledData,
                          chunk: int = 20000, columns: FrictionColumns | None = None) -> Iterator[ComparedPiece]:
    """Predict the torque of a recording with the processing an identification used, and line it up
    with what the sensor measured. The states are processed exactly as for the fit (same filters,
    same differentiation, one code path); the model's friction stays sharp, as the measured torque's
    does. Predictions on a resampled grid are interpolated to the measured samples' own times;
    samples in gaps or trimmed edges have no prediction and are left out."""
    for piece, (pred_raw,), (pred_grid,) in compare_many(model, base, [theta], friction, processing, raw, chunk,
                                                         columns):
        yield dataclasses.replace(piece, predicted=pred_raw, predicted_grid=pred_grid)


def compare_many(model: RobotModel, base: BaseParameters, thetas: Sequence[np.ndarray],
                 friction: FrictionModel | None, processing: ProcessingConfig, raw: SampledData,
                 chunk: int = 20000, columns: FrictionColumns | None = None, keep: np.ndarray | None = None,
                 processed: ProcessedCache | None = None, bases: Sequence[BaseParameters] | None = None):
    """:func:`compare_with_measured` for several parameter vectors of the same base (model
    selection): processing and regressor rows once per piece, one product per vector. Yields
    (piece without predictions, predictions at the measured samples, predictions on the grid).
    Torques are the controller's (through the model's joint map), as the sensor reported them.
    ``keep`` (a boolean mask over ``raw``'s samples) compares only those samples: the recording is
    processed whole (their filters see their neighbours), the regressor evaluated only where needed.
    ``bases``: per vector, its own base parameters when not ``base`` (see :func:`_predict_many`)."""
    for piece in _pieces(raw, processing, friction, columns, purpose="predict", processed=processed):
        d = piece.data
        lo = int(np.searchsorted(raw.t, d.t[0] - 1e-9, side="left"))
        hi = int(np.searchsorted(raw.t, d.t[-1] + 1e-9, side="right"))
        t = raw.t[lo:hi]
        same_grid = t.shape[0] == d.count and np.array_equal(t, d.t)
        measured = raw.tau[lo:hi]
        if keep is not None:
            wanted = np.asarray(keep[lo:hi], bool)
            if not wanted.any():
                continue
            t, measured = t[wanted], measured[wanted]
            if same_grid:
                d = d.select(wanted)
            else:  # the grid samples around each wanted one, for the interpolation below
                i = np.clip(np.searchsorted(d.t, t), 1, d.count - 1)
                grid = np.zeros(d.count, bool)
                grid[i - 1] = grid[i] = True
                d = d.select(grid)
        at_raw, on_grid = [], []
        for theta, pred in zip(thetas, _predict_many(model, base, thetas, d, chunk, bases, processed)):
            if d.tau_friction is not None:
                pred = pred + d.tau_friction
            on_grid.append(pred)
            at_raw.append(pred if same_grid else
                          np.stack([np.interp(t, d.t, pred[:, j]) for j in range(pred.shape[1])], axis=1))
        filtered = d.tau
        jm = model.joint_map
        if not jm.is_identity:  # torques as the controller reports them (data were mapped to the model's)
            measured, filtered = jm.torque_to_controller(measured), jm.torque_to_controller(filtered)
            at_raw = [jm.torque_to_controller(p) for p in at_raw]
            on_grid = [jm.torque_to_controller(p) for p in on_grid]
        yield ComparedPiece(t, measured, None, d.t, filtered, None), at_raw, on_grid


def _predict_many(model: RobotModel, base: BaseParameters, thetas: Sequence[np.ndarray], d: SampledData,
                  chunk: int, bases: Sequence[BaseParameters] | None = None,
                  processed: ProcessedCache | None = None) -> list[np.ndarray]:
    """predict_processed for several parameter vectors, the regressor evaluated once. ``bases``
    (one per vector, default ``base``) may be base parameters of fewer standard columns than
    ``base``'s (rotor inertia off): each vector is placed in ``base``'s columns by name. With
    ``processed``, the rows come from its store (shared with other candidates predicting the same
    samples) with sgn(qd) in the Coulomb columns, and the data's own Coulomb signal is applied as
    the difference it makes: joint j's Coulomb column is non-zero in joint j's rows only."""
    full = np.zeros((len(base.standard_names), len(thetas)))
    index = {name: k for k, name in enumerate(base.standard_names)}
    for k, (theta, own) in enumerate(zip(thetas, bases or [base] * len(thetas))):
        at = base.independent if own is base else [index[own.standard_names[i]] for i in own.independent]
        full[at, k] = theta[: own.count]
    out = np.empty((len(thetas), d.count, model.dof))
    fc = coulomb_signal(d, base.spec)
    names = list(base.standard_names)
    coulomb_at = [(j, names.index(f"FC{j + 1}")) for j in range(model.dof) if f"FC{j + 1}" in names]
    for s in range(0, d.count, chunk):
        e = min(d.count, s + chunk)
        if processed is None:
            rows = base_rows(model, d.select(slice(s, e)), base.spec) @ full  # (N*n, k)
            out[:, s:e] = rows.T.reshape(len(thetas), e - s, model.dof)
            continue
        W = processed.rows(model, d, base.spec, s, e)
        out[:, s:e] = (W @ full).T.reshape(len(thetas), e - s, model.dof)
        if fc is not None:
            W3 = W.reshape(e - s, model.dof, -1)
            for j, at in coulomb_at:
                out[:, s:e, j] += np.outer(full[at], fc[s:e, j] - W3[:, j, at])
    for k, (theta, own) in enumerate(zip(thetas, bases or [base] * len(thetas))):
        if theta.shape[0] > own.count:
            if d.friction_extra is None:
                raise ValueError("prediction: the result has Stribeck friction columns but the data carry none")
            out[k] += d.friction_extra * theta[own.count:]
    return list(out)


def check_result_model(model: RobotModel, result: IdentificationResult | dict, warn_name: bool = True) -> None:
    """Refuse, in one line, a model the result was not identified with: another joint count or
    another parameter layout (its base columns would not multiply). A model of another name but the
    same layout (a UR5 result on a UR5e model) is allowed with a warning."""
    from .regressor import parameter_names

    result = as_result(result)
    named = result.robot
    dof = (result.provenance.get("model") or {}).get("dof")
    if dof is None:
        dof = result.dof
    standard_names = list(result.base.standard_names)
    if dof != model.dof or list(parameter_names(model, result.base.spec)) != standard_names:
        raise ValueError(f"result: identified with robot {named} ({dof} joints, {len(standard_names)} "
                         f"standard parameters) but the model given is {model.name} ({model.dof} joints); pass "
                         f"--robot {named} or a result identified with {model.name}")
    if warn_name and named != model.name:
        import warnings

        warnings.warn(f"result: identified with robot {named}, evaluated with model {model.name} (same joints and "
                      "parameter layout; the kinematics may differ)", stacklevel=3)


def validate(model: RobotModel, result: IdentificationResult | dict, datasets: Sequence[SampledData],
             processing: ProcessingConfig | None = None) -> dict:
    """Metrics of a saved result on other recordings (a held-out trajectory), processed as at
    identification unless ``processing`` overrides it: per-joint RMSE, relative error and correlation
    against the measured torque at the measured samples, and (under "filtered") against the torque
    after the processing's low-pass."""
    result = as_result(result)
    check_result_model(model, result, warn_name=False)
    base, theta, friction, columns = result.base, result.values, result.friction_model, result.friction_columns
    processing = processing or result.processing
    if any(d.dof != model.dof for d in datasets):
        raise ValueError(f"recordings: joint count does not match robot {model.name} ({model.dof} joints)")
    measured, filtered = TorqueMetrics(model.dof), TorqueMetrics(model.dof)
    for d in datasets:
        for piece in compare_with_measured(model, base, theta, friction, processing, d, columns=columns):
            measured.add(piece.measured, piece.predicted)
            filtered.add(piece.filtered, piece.predicted_grid)
    out = {"against": "measured torque", **measured.result(model.joint_names)}
    out["filtered"] = {"against": "processed (low-passed) torque", **filtered.result(model.joint_names)}
    return out


def validate_many(model: RobotModel, prep: "PreparedData", thetas: Sequence[np.ndarray],
                  datasets: Sequence[SampledData], keep: Sequence[np.ndarray] | None = None,
                  processed: ProcessedCache | None = None,
                  bases: Sequence[BaseParameters] | None = None) -> list[dict]:
    """Held-out metrics against the measured torque for several estimates of one prepared fit.
    ``keep`` (per dataset, a boolean mask over its samples) scores only those samples, the recording
    processed whole: a held-out block is predicted in its recording's context, as a prediction of
    the whole recording would be (cut out, each of its pieces had filter edges of its own, whose
    transients were scored as model error). ``bases``: per estimate, its own base parameters when
    they are a column subset of ``prep``'s (rotor inertia off beside on): the held-out regressor is
    evaluated once, on ``prep``'s columns, for all of them."""
    accs = [TorqueMetrics(model.dof) for _ in thetas]
    columns = prep.config.columns
    for k, d in enumerate(datasets):
        for piece, preds, _ in compare_many(model, prep.base, thetas, prep.friction, prep.config.processing, d,
                                            columns=columns, keep=None if keep is None else keep[k],
                                            processed=processed, bases=bases):
            for acc, pred in zip(accs, preds):
                acc.add(piece.measured, pred)
    return [{"against": "measured torque", **acc.result(model.joint_names)} for acc in accs]


def predict(model: RobotModel, result: IdentificationResult | dict,
            raw: SampledData) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, measured torque, predicted torque) at the measured samples of ``raw``."""
    result = as_result(result)
    check_result_model(model, result, warn_name=False)
    parts = list(compare_with_measured(model, result.base, result.values, result.friction_model, result.processing,
                                       raw, columns=result.friction_columns))
    if not parts:
        raise ValueError("recording: no samples left to predict after processing")
    return (np.concatenate([p.t for p in parts]), np.concatenate([p.measured for p in parts]),
            np.concatenate([p.predicted for p in parts]))
