"""Recordings in, a dynamic model out: processing, friction handling, estimation, validation.

Data flow. Each raw dataset (t, q, [qd], tau) is processed (signals.process) into uniform q, qd,
qdd, tau. The regressor is evaluated chunk by chunk (``chunk_samples`` rows at a time, into one
reused buffer) and reduced to the base columns, and only per-joint normal equations survive a
chunk (estimators.NormalEquations). The result is a JSON-ready :class:`IdentificationResult` that
:func:`predict` turns back into torques.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from robodyn import __version__
from robodyn.robot.model import RobotModel

from .base_params import BaseParameters, base_parameters
from .estimators import Estimate, estimate
from .friction import MODELS as FRICTION_MODELS
from .friction import FrictionModel
from .regressor import ColumnSpec, regressor
from .signals import ProcessingConfig, SampledData, process_windows
from .streaming import RegressorChunks, coulomb_signal

RESULT_FORMAT = "robodyn.identification"
RESULT_VERSION = 1
FRICTION_CHOICES = ("none",) + FRICTION_MODELS


@dataclass
class IdentificationConfig:
    method: str = "wls"
    friction: str = "coulomb-viscous"  # none | coulomb-viscous | stribeck | sigmoid
    rotor_inertia: bool = True
    friction_model: dict | None = None  # a fitted FrictionModel (dict) to subtract, seed 000 eq. 9
    processing: ProcessingConfig = field(default_factory=ProcessingConfig)
    chunk_samples: int = 20000
    motor_couplings: tuple = ()  # shared motors (coupled wrists), see regressor.ColumnSpec

    def __post_init__(self):
        if self.friction not in FRICTION_CHOICES:
            raise ValueError(f"friction: expected one of {list(FRICTION_CHOICES)}, got {self.friction!r}")
        if self.friction in ("stribeck", "sigmoid") and self.friction_model is None:
            raise ValueError(f"friction: the {self.friction} model is nonlinear; identify it first from the friction "
                             "experiment (robodyn friction) and pass its result, or use coulomb-viscous to identify "
                             "linear friction together with the inertial parameters")
        if self.chunk_samples < 100:
            raise ValueError(f"chunk_samples: must be >= 100, got {self.chunk_samples}")

    @property
    def spec(self) -> ColumnSpec:
        friction = ("viscous", "coulomb", "offset") if self.friction == "coulomb-viscous" else ()
        return ColumnSpec(self.rotor_inertia, friction, tuple(tuple(c) for c in self.motor_couplings))

    def to_dict(self) -> dict:
        return {"method": self.method, "friction": self.friction, "rotor_inertia": self.rotor_inertia,
                "friction_model": self.friction_model, "processing": self.processing.to_dict(),
                "chunk_samples": self.chunk_samples,
                "motor_couplings": [list(c) for c in self.motor_couplings]}


@dataclass
class IdentificationResult:
    robot: str
    base: BaseParameters
    estimate: Estimate
    friction_model: FrictionModel | None
    config: IdentificationConfig
    metrics: dict
    steps: list
    provenance: dict

    @property
    def values(self) -> np.ndarray:
        return self.estimate.theta

    def to_dict(self) -> dict:
        est = self.estimate
        names = self.base.names
        return {
            "format": RESULT_FORMAT, "version": RESULT_VERSION,
            "robot": self.robot,
            "base": self.base.to_dict(),
            "estimate": {
                "method": est.method,
                "parameters": [{"name": n, "expression": e, "value": float(v), "std": float(s),
                                "relative_std_percent": float(r) if np.isfinite(r) else None}
                               for n, e, v, s, r in zip(names, self.base.expressions(), est.theta, est.std,
                                                        est.relative_std_percent)],
                "values": est.theta.tolist(),
                "covariance": est.covariance.tolist(),
                "rank": est.rank, "cond": est.cond, "rows": est.rows,
                "relative_residual": est.relative_residual,
                "sigma_per_joint": est.sigma.tolist(),
                "weights": None if est.weights is None else est.weights.tolist(),
                "iterations": est.iterations, "notes": est.notes,
            },
            "friction_model": None if self.friction_model is None else self.friction_model.to_dict(),
            "config": self.config.to_dict(),
            "metrics": self.metrics,
            "processing_steps": self.steps,
            "provenance": self.provenance,
        }

    def save(self, path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))


def load_result(path) -> dict:
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such result file") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a JSON identification result ({exc})") from exc
    if doc.get("format") != RESULT_FORMAT:
        raise ValueError(f"{path}: format is {doc.get('format')!r}, expected {RESULT_FORMAT!r}")
    if doc.get("version") != RESULT_VERSION:
        raise ValueError(f"{path}: result version {doc.get('version')!r} is not supported (expected {RESULT_VERSION})")
    return doc


# --------------------------------------------------------------------------- chunked regressor


def base_rows(model: RobotModel, d: SampledData, spec: ColumnSpec, out: np.ndarray | None = None) -> np.ndarray:
    """Sample-major regressor rows (N*n, P) of processed data. When the data carry a filtered
    sgn(qd) (parallel filtering), it replaces the Coulomb columns, so the model's friction step
    went through the same filter as the measured torque."""
    return regressor(model, d.q, d.qd, d.qdd, spec, out=out, coulomb=coulomb_signal(d, spec))


def _chunks(model: RobotModel, source: Callable[[], Iterator[SampledData]], spec: ColumnSpec,
            base: BaseParameters, chunk: int) -> RegressorChunks:
    """A re-iterable source of (joint-major base regressor rows, torque) chunks that also reduces
    itself to normal equations in one fused, multi-threaded pass (streaming.RegressorChunks); any
    friction model was already subtracted from the torque in processing, before filtering."""
    return RegressorChunks(model, source, spec, base, chunk)


def predict_processed(model: RobotModel, base: BaseParameters, theta: np.ndarray, d: SampledData,
                      chunk: int = 20000) -> np.ndarray:
    """W_b theta (N, n) for processed data (using its parallel-filtered Coulomb signal, if any);
    add ``d.tau_friction`` for the full torque when a friction model was subtracted."""
    full = np.zeros(len(base.standard_names))  # theta on the standard columns: no column copy
    full[base.independent] = theta
    out = np.empty((d.count, model.dof))
    for s in range(0, d.count, chunk):
        e = min(d.count, s + chunk)
        out[s:e] = (base_rows(model, d.select(slice(s, e)), base.spec) @ full).reshape(e - s, model.dof)
    return out


def predict_base(model: RobotModel, base: BaseParameters, theta: np.ndarray, q, qd, qdd,
                 friction: FrictionModel | None = None, chunk: int = 20000) -> np.ndarray:
    """Torques (N, n) from states by identified base parameters, plus a friction model if given."""
    q, qd, qdd = (np.asarray(a, float) for a in (q, qd, qdd))
    states = SampledData(np.arange(q.shape[0], dtype=float), q, np.zeros_like(q), qd, qdd)
    out = predict_processed(model, base, theta, states, chunk)
    return out if friction is None else out + friction.torque(qd)


class TorqueMetrics:
    """Streaming per-joint RMSE and their sum (seed 000 Table 4), relative error and correlation
    coefficient (seed 002 eqs. 20-21): only running sums are kept, chunk after chunk."""

    def __init__(self, dof: int):
        self.count = 0
        self.sums = {k: np.zeros(dof) for k in ("m", "p", "mm", "pp", "mp", "ee")}

    def add(self, measured: np.ndarray, predicted: np.ndarray) -> None:
        e = measured - predicted
        s = self.sums
        s["m"] += measured.sum(0)
        s["p"] += predicted.sum(0)
        s["mm"] += (measured * measured).sum(0)
        s["pp"] += (predicted * predicted).sum(0)
        s["mp"] += (measured * predicted).sum(0)
        s["ee"] += (e * e).sum(0)
        self.count += measured.shape[0]

    def result(self, joint_names: Sequence[str]) -> dict:
        s, N = self.sums, max(self.count, 1)
        rmse = np.sqrt(s["ee"] / N)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.sqrt(s["ee"] / s["mm"])
            cov = s["mp"] - s["m"] * s["p"] / N
            var_m = s["mm"] - s["m"] ** 2 / N
            var_p = s["pp"] - s["p"] ** 2 / N
            corr = cov / np.sqrt(var_m * var_p)
        return {
            "joints": list(joint_names),
            "rmse": rmse.tolist(),
            "rmse_sum": float(rmse.sum()),
            "relative_error": [None if not np.isfinite(x) else float(x) for x in rel],
            "relative_error_total": float(np.sqrt(s["ee"].sum() / max(s["mm"].sum(), 1e-300))),
            "correlation": [None if not np.isfinite(x) else float(x) for x in corr],
            "samples": int(self.count),
        }


def torque_metrics(measured: np.ndarray, predicted: np.ndarray, joint_names: Sequence[str]) -> dict:
    acc = TorqueMetrics(measured.shape[1])
    acc.add(measured, predicted)
    return acc.result(joint_names)


def identify(model: RobotModel, datasets: Sequence[SampledData], config: IdentificationConfig = None, *,
             sources: Sequence[str] = (), progress: Callable[[str, float], None] | None = None,
             preprocessed: bool = False) -> IdentificationResult:
    """Identify base parameters of ``model`` from one or more datasets.

    ``preprocessed`` skips signal processing (the datasets already carry exact qd and qdd).
    """
    config = config or IdentificationConfig()
    report = progress or (lambda stage, fraction: None)
    if not datasets:
        raise ValueError("recordings: need at least one dataset")
    for k, raw in enumerate(datasets):
        if raw.dof != model.dof:
            raise ValueError(f"recording {k}: has {raw.dof} joints but robot {model.name} has {model.dof}")
        if preprocessed and (raw.qd is None or raw.qdd is None):
            raise ValueError(f"recording {k}: preprocessed data must carry qd and qdd")
    steps: list = [None] * len(datasets)

    def source() -> Iterator[SampledData]:
        """Processed data, window by window: long recordings never sit in memory processed whole."""
        for k, raw in enumerate(datasets):
            if preprocessed:
                steps[k] = [{"step": "none", "reason": "preprocessed data"}]
                yield raw
                continue
            for piece in process_windows(raw, config.processing, friction=friction):
                if steps[k] is None:
                    steps[k] = piece.steps
                yield piece.data

    spec = config.spec
    base = base_parameters(model, spec)
    friction = FrictionModel.from_dict(config.friction_model) if config.friction_model else None
    if friction is not None and preprocessed:
        raise ValueError("friction_model: preprocessed data cannot be friction-compensated here; subtract it first")
    report("estimating", 0.1)
    chunks = _chunks(model, source, spec, base, config.chunk_samples)
    est, statistics = estimate(config.method, chunks, model.dof, base.count, base.names)
    report("validating", 0.8)
    # the statistics already hold everything the metrics need (on the friction-compensated torque
    # when a friction model was subtracted: the errors are the same, the torque scale is smaller)
    metrics = {"identification": statistics.metrics(est.theta, model.joint_names)}
    provenance = {
        "recordings": list(sources), "software": f"robodyn {__version__}",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "model": model.summary(),
    }
    report("done", 1.0)
    return IdentificationResult(model.name, base, est, friction, config, metrics, steps, provenance)


def _stream_metrics(model, base, theta, source, chunk) -> dict:
    """Metrics on the full torque: a subtracted friction torque is added back to both sides."""
    acc = TorqueMetrics(model.dof)
    for d in source():
        predicted = predict_processed(model, base, theta, d, chunk)
        if d.tau_friction is not None:
            acc.add(d.tau + d.tau_friction, predicted + d.tau_friction)
        else:
            acc.add(d.tau, predicted)
    return acc.result(model.joint_names)


def validate(model: RobotModel, result: dict, datasets: Sequence[SampledData],
             processing: ProcessingConfig | None = None) -> dict:
    """Metrics of a saved result on other recordings (a held-out trajectory), processed the same way
    as at identification unless ``processing`` overrides it."""
    base = BaseParameters.from_dict(result["base"])
    theta = np.asarray(result["estimate"]["values"], float)
    friction = FrictionModel.from_dict(result["friction_model"]) if result.get("friction_model") else None
    if processing is None:
        processing = ProcessingConfig(**result["config"]["processing"])
    if any(d.dof != model.dof for d in datasets):
        raise ValueError(f"recordings: joint count does not match robot {model.name} ({model.dof} joints)")

    def source():
        for d in datasets:
            for piece in process_windows(d, processing, friction=friction):
                yield piece.data

    return _stream_metrics(model, base, theta, source, 20000)
