"""The identification result: what `robodyn identify`, the daemon's identification jobs and the
library's pipeline produce, and what validate, predict, the exports and the reports read.

It is a dataclass while it is built and used; it becomes JSON only at the edge
(:meth:`IdentificationResult.to_json_dict`, read back by :meth:`IdentificationResult.from_json_dict`).
The file's layout is versioned by its ``version`` field (with ``format`` naming the kind of file),
which every result robodyn ever wrote carries; a document without one is read as version 1, and a
newer version than this code knows is refused, not guessed at.

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

from robodyn.robot.friction import FrictionModel

from .base_params import BaseParameters
from .estimators import Estimate

if TYPE_CHECKING:
    from .config import IdentificationConfig

RESULT_FORMAT = "robodyn.identification"
RESULT_VERSION = 1
# the methods whose own findings form one section of the result (identification.methods)
METHOD_SECTIONS = ("metaheuristic", "consistent", "neural_network")
# the JSON keys the dataclass fields map to (the rest are METHOD_SECTIONS)
_TOP_KEYS = ("format", "version", "robot", "base", "estimate", "friction_model", "friction_columns", "config",
             "metrics", "processing_steps", "provenance", "selection", "coverage", "residual_model", "robot_ref")


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

    def to_json_dict(self) -> dict:
        """The JSON document (plain lists and numbers; non-finite numbers stay floats for the writer
        to turn into null, as robodyn.commands.common.strict_json does)."""
        est = self.estimate
        columns = self.config.columns
        dof = self.dof
        extra = columns.extra_names(dof) if columns is not None else []
        names = list(self.base.names) + extra
        expressions = list(self.base.expressions()) + (columns.extra_expressions(dof) if extra else [])
        doc = {
            "format": RESULT_FORMAT, "version": self.version,
            "robot": self.robot,
            "base": self.base.to_dict(),
            "estimate": {
                "method": est.method,
                "parameters": [{"name": n, "expression": e, "value": float(v), "std": float(s),
                                "relative_std_percent": float(r) if np.isfinite(r) else None}
                               for n, e, v, s, r in zip(names, expressions, est.theta, est.std,
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
        try:
            e = doc["estimate"]
            theta = np.asarray(e["values"], float)
            estimate = Estimate(
                e["method"], theta, _floats(e["covariance"]).reshape(theta.size, theta.size),
                _floats(e["sigma_per_joint"]), int(e["rank"]), _float(e["cond"]), int(e["rows"]),
                _float(e["relative_residual"]), int(e.get("iterations", 1)),
                None if e.get("weights") is None else _floats(e["weights"]), list(e.get("notes", [])))
            c = dict(doc["config"])
            config = IdentificationConfig(
                method=c["method"], friction=c["friction"], rotor_inertia=c["rotor_inertia"],
                friction_model=c.get("friction_model"), processing=ProcessingConfig(**c["processing"]),
                chunk_samples=c.get("chunk_samples", 20000),
                motor_couplings=tuple(tuple(x) for x in c.get("motor_couplings", ())),
                friction_scales=c.get("friction_scales"), recording_weights=c.get("recording_weights", "equal"))
            friction = FrictionModel.from_dict(doc["friction_model"]) if doc.get("friction_model") else None
            base = BaseParameters.from_dict(doc["base"])
        except KeyError as exc:
            raise ValueError(f"result: field {exc.args[0]!r} is missing") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"result: not an identification result of version {version} ({exc})") from None
        return cls(doc["robot"], base, estimate, friction, config, doc["metrics"], doc.get("processing_steps", []),
                   doc.get("provenance", {}), doc.get("selection"),
                   {k: v for k, v in doc.items() if k not in _TOP_KEYS}, doc.get("coverage"),
                   doc.get("residual_model"), doc.get("robot_ref"), version)

    def save(self, path) -> None:
        Path(path).write_text(json.dumps(self.to_json_dict(), indent=1))


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
