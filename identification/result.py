"""The identification result: what `robodyn identify`, the daemon's identification jobs and the
library's pipeline produce, and what validate, predict, the exports and the reports read.

It is a dataclass while it is built and used; it becomes JSON only at the edge
(:meth:`IdentificationResult.to_json_dict`, read back by :meth:`IdentificationResult.from_json_dict`).
The file's layout is versioned by its ``version`` field (with ``format`` naming the kind of file),
which every result robodyn ever wrote carries; a document without one is read as version 1, and a
newer version than this code knows is refused, not guessed at.

Its readers (validate and predict, the intervals, the coverage warnings, the HTML report, the URDF
and MJCF exports) take the typed result; a file is read by :func:`read_result`, and a caller that
holds the document (a daemon job's result.json) hands it over through :func:`as_result`, so this
module alone knows the JSON layout. A malformed document is refused in one line naming the field
and the part it is missing from.

JSON layout (version 1), in file order:

    format, version, robot,
    base              the base parameters' definition (base_params.BaseParameters)
    estimate          method, per-parameter name/expression/value/std, values, covariance, rank, cond,
                      rows, relative_residual, sigma_per_joint, weights, iterations, notes
    friction_model    a friction model subtracted before the fit, or null
    friction_columns  the friction columns identified with the dynamics, or null
    config            the identification config, its processing resolved (cut-off chosen, weights used)
    metrics           identification (fit on the processed torque); measured, per_recording, held_out
                      (command line) or holdout (daemon jobs) when computed
    processing_steps, provenance, [selection]
    [metaheuristic | consistent | neural_network]  the method's own section, when it has one
    [coverage], [residual_model], [robot_ref]
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from robodyn.json_values import document_text
from robodyn.robot.friction import FrictionModel

from .base_params import BaseParameters
from .estimators import Estimate

if TYPE_CHECKING:
    from .config import IdentificationConfig
    from .friction import FrictionColumns
    from .processing import ProcessingConfig

RESULT_FORMAT = "robodyn.identification"
RESULT_VERSION = 1
# the methods whose own findings form one section of the result (identification.methods)
METHOD_SECTIONS = ("metaheuristic", "consistent", "neural_network")
# the JSON keys the dataclass fields map to (the rest are METHOD_SECTIONS)
_TOP_KEYS = ("format", "version", "robot", "base", "estimate", "friction_model", "friction_columns", "config",
             "metrics", "processing_steps", "provenance", "selection", "coverage", "residual_model", "robot_ref")


@dataclass(frozen=True)
class ParameterRow:
    """One estimated parameter as the result file's ``estimate.parameters`` lists it."""

    name: str
    expression: str
    value: float
    std: float  # NaN for a method without a covariance
    relative_std_percent: float | None  # None where it is not finite


@dataclass
class IdentificationResult:
    robot: str
    base: BaseParameters
    estimate: Estimate
    friction_model: FrictionModel | None
    config: IdentificationConfig
    # "identification": the fit on the processed torque (estimators.torque_metrics_from_sums); the
    # command line adds "measured", "per_recording" and "held_out", a daemon job "holdout"
    metrics: dict
    steps: list  # the processing steps applied, per recording
    provenance: dict  # recordings, software, created, model (a daemon job adds holdout)
    selection: dict | None = None  # model selection by held-out error (selection.select), when run
    sections: dict = field(default_factory=dict)  # the method's own section (METHOD_SECTIONS), by name
    coverage: dict | None = None  # what the fit saw, per joint (coverage.identification_coverage)
    residual_model: dict | None = None  # the prediction intervals' residual model (intervals.residual_model)
    robot_ref: str | None = None  # the model file or built-in name validate and predict load again
    version: int = RESULT_VERSION

    @property
    def values(self) -> np.ndarray:
        return self.estimate.theta

    @property
    def method(self) -> str:
        return self.estimate.method

    @property
    def dof(self) -> int:
        return len(self.metrics["identification"]["joints"])

    def parameter_names(self) -> list[str]:
        columns = self.config.columns
        extra = columns.extra_names(self.dof) if columns is not None else []
        return list(self.base.names) + extra

    def parameters(self) -> list[ParameterRow]:
        """One row per estimated parameter: the base parameters, then any Stribeck excess columns."""
        est = self.estimate
        columns = self.config.columns
        extra = columns.extra_expressions(self.dof) if columns is not None and columns.extra_names(self.dof) else []
        expressions = list(self.base.expressions()) + extra
        return [ParameterRow(n, e, float(v), float(s), float(r) if np.isfinite(r) else None)
                for n, e, v, s, r in zip(self.parameter_names(), expressions, est.theta, est.std,
                                         est.relative_std_percent)]

    @property
    def processing(self) -> ProcessingConfig:
        """The processing the fit used (its cut-off resolved): what predict and validate apply again."""
        return self.config.processing

    @property
    def friction_columns(self) -> FrictionColumns | None:
        """The friction columns identified with the dynamics (None when none, or a model was subtracted)."""
        return self.config.columns

    @property
    def consistent(self) -> dict | None:
        """The physically consistent fit's own section (consistent.ConsistentResult.to_dict()), or None."""
        return self.sections.get("consistent")

    @property
    def consistent_feasible(self) -> bool:
        """Whether the result holds full standard parameters that are physically consistent."""
        return bool(self.consistent and self.consistent.get("feasibility", {}).get("feasible", False))

    @property
    def standard(self) -> np.ndarray:
        """The consistent fit's full standard parameters; ValueError (one line) for a result without them."""
        if self.consistent is None:
            raise ValueError("result: holds base parameters only, no standard parameters (run `robodyn identify "
                             "--method consistent`)")
        return np.asarray(self.consistent["standard"], float)

    def to_json_dict(self) -> dict:
        """The JSON document (plain lists and numbers; non-finite numbers stay floats for the writer
        to turn into null, as robodyn.commands.common.strict_json does)."""
        est = self.estimate
        columns = self.config.columns
        doc = {
            "format": RESULT_FORMAT, "version": self.version,
            "robot": self.robot,
            "base": self.base.to_dict(),
            "estimate": {
                "method": est.method,
                "parameters": [dataclasses.asdict(row) for row in self.parameters()],
                "values": est.theta.tolist(),
                "covariance": est.covariance.tolist(),
                "rank": est.rank, "cond": est.cond, "rows": est.rows,
                "relative_residual": est.relative_residual,
                "sigma_per_joint": est.sigma.tolist(),
                "weights": None if est.weights is None else est.weights.tolist(),
                "iterations": est.iterations, "notes": est.notes,
            },
            "friction_model": None if self.friction_model is None else self.friction_model.to_dict(),
            "friction_columns": None if columns is None else columns.to_dict(),
            "config": self.config.to_dict(),
            "metrics": self.metrics,
            "processing_steps": self.steps,
            "provenance": self.provenance,
        }
        if self.selection is not None:
            doc["selection"] = self.selection
        doc.update(self.sections)
        for key in ("coverage", "residual_model", "robot_ref"):
            if getattr(self, key) is not None:
                doc[key] = getattr(self, key)
        return doc

    def to_dict(self) -> dict:
        """The JSON document (the name callers used before :meth:`to_json_dict`)."""
        return self.to_json_dict()

    @classmethod
    def from_json_dict(cls, doc: dict) -> "IdentificationResult":
        """The result a JSON document holds; ValueError naming the field when it is not one."""
        from .config import IdentificationConfig
        from .processing import ProcessingConfig

        version = check_document(doc)
        where = "the document"  # the part being read, named in the error
        try:
            e = doc["estimate"]
            where = "estimate"
            theta = np.asarray(e["values"], float)
            estimate = Estimate(
                e["method"], theta, _floats(e["covariance"]).reshape(theta.size, theta.size),
                _floats(e["sigma_per_joint"]), int(e["rank"]), _float(e["cond"]), int(e["rows"]),
                _float(e["relative_residual"]), int(e.get("iterations", 1)),
                None if e.get("weights") is None else _floats(e["weights"]), list(e.get("notes", [])))
            where = "the document"
            c = dict(doc["config"])
            where = "config"
            config = IdentificationConfig(
                method=c["method"], friction=c["friction"], rotor_inertia=c["rotor_inertia"],
                friction_model=c.get("friction_model"), processing=ProcessingConfig(**c["processing"]),
                chunk_samples=c.get("chunk_samples", 20000),
                motor_couplings=tuple(tuple(x) for x in c.get("motor_couplings", ())),
                friction_scales=c.get("friction_scales"), recording_weights=c.get("recording_weights", "equal"))
            where = "friction_model"
            friction = FrictionModel.from_dict(doc["friction_model"]) if doc.get("friction_model") else None
            where = "base"
            base = BaseParameters.from_dict(doc["base"])
            where = "the document"
            robot, metrics = doc["robot"], doc["metrics"]
            where = "metrics"
            metrics["identification"]["joints"]  # noqa: B018  (the joint count every reader takes from here)
        except KeyError as exc:
            raise ValueError(f"result: field {exc.args[0]!r} is missing (in {where})") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"result: not an identification result of version {version} ({where}: {exc})") from None
        return cls(robot, base, estimate, friction, config, metrics, doc.get("processing_steps", []),
                   doc.get("provenance", {}), doc.get("selection"),
                   {k: v for k, v in doc.items() if k not in _TOP_KEYS}, doc.get("coverage"),
                   doc.get("residual_model"), doc.get("robot_ref"), version)

    def save(self, path) -> None:
        Path(path).write_text(document_text(self.to_json_dict()))


def field_names() -> list[str]:
    """The result's fields, in order (tests/identification/test_result_schema.py holds them fixed)."""
    return [f.name for f in dataclasses.fields(IdentificationResult)]


def check_document(doc) -> int:
    """The version of an identification result document; ValueError when it is none or newer."""
    if not isinstance(doc, dict) or doc.get("format") != RESULT_FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(f"format is {got!r}, expected {RESULT_FORMAT!r}")
    version = doc.get("version", 1)  # every result robodyn wrote has one; version 1 is the first layout
    if version != RESULT_VERSION:
        raise ValueError(f"result version {version!r} is not supported (expected {RESULT_VERSION})")
    return version


def read_document(path) -> dict:
    """The JSON document of a result file, its format and version checked."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a JSON identification result ({exc})") from exc
    try:
        check_document(doc)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return doc


def as_result(result: IdentificationResult | dict) -> IdentificationResult:
    """The typed result of ``result``: itself, or the result its JSON document holds (format and
    version checked; ValueError naming the field when it is not one). The consumers (validate,
    predict, the exports, the intervals, the reports) call this once at their entry, so a caller
    holding the document (a daemon job's result.json, a test) can still hand it over."""
    if isinstance(result, IdentificationResult):
        return result
    return IdentificationResult.from_json_dict(result)


def read_result(path) -> IdentificationResult:
    """The typed result of a result file."""
    try:
        return IdentificationResult.from_json_dict(read_document(path))
    except ValueError as exc:
        raise ValueError(exc if str(exc).startswith(str(path)) else f"{path}: {exc}") from None


def _float(x) -> float:
    return float("nan") if x is None else float(x)


def _floats(x) -> np.ndarray:
    """Numbers of a JSON array, null (a non-finite number written strictly) read as NaN."""
    return np.asarray(x if x is not None else [], dtype=float) if not _has_none(x) else \
        np.asarray(_none_to_nan(x), dtype=float)


def _has_none(x) -> bool:
    return x is None or (isinstance(x, list) and any(_has_none(v) if isinstance(v, list) else v is None for v in x))


def _none_to_nan(x):
    if isinstance(x, list):
        return [_none_to_nan(v) for v in x]
    return float("nan") if x is None else x
