"""The identification's configuration: what to fit (estimator, friction, rotor inertia) and how to
process the data first; kept apart from the pipeline that runs it, so that the result
(result.py) can be read back without the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from robodyn.robot.friction import MODELS as FRICTION_MODELS

from .friction import FrictionColumns
from .processing import ProcessingConfig
from .recording_weights import check_spec
from .regressor import ColumnSpec

FRICTION_CHOICES = ("none",) + FRICTION_MODELS


@dataclass
class IdentificationConfig:
    method: str = "wls"
    friction: str = "coulomb-viscous"  # none | coulomb-viscous | stribeck | sigmoid
    rotor_inertia: bool = True
    # a fitted FrictionModel (dict) to subtract before filtering (Ni et al. 2024 eq. 9), e.g. from the
    # friction experiment; without it the friction is identified with the dynamics
    friction_model: dict | None = None
    processing: ProcessingConfig = field(default_factory=ProcessingConfig)
    chunk_samples: int = 20000
    motor_couplings: tuple = ()  # shared motors (coupled wrists), see regressor.ColumnSpec
    # per-joint velocity scale of sigmoid / Stribeck friction identified with the dynamics (rad/s);
    # None: chosen from the data (friction.choose_friction_scales)
    friction_scales: list | None = None
    # several recordings: "inverse-variance" (default), "equal", or numbers per recording; the
    # result stores the weights used, per recording and joint (recording_weights.py says why)
    recording_weights: str | list = "inverse-variance"

    def __post_init__(self):
        if self.friction not in FRICTION_CHOICES:
            raise ValueError(f"friction: expected one of {list(FRICTION_CHOICES)}, got {self.friction!r}")
        if self.chunk_samples < 100:
            raise ValueError(f"chunk_samples: must be >= 100, got {self.chunk_samples}")
        if self.friction_scales is not None:
            self.friction_scales = [float(x) for x in np.asarray(self.friction_scales, float).ravel()]
        self.recording_weights = check_spec(self.recording_weights)

    @property
    def joint_friction(self) -> bool:
        """Friction columns in the regressor (identified with the dynamics), not a model subtracted."""
        return self.friction != "none" and self.friction_model is None

    @property
    def spec(self) -> ColumnSpec:
        friction = ("viscous", "coulomb", "offset") if self.joint_friction else ()
        return ColumnSpec(self.rotor_inertia, friction, tuple(tuple(c) for c in self.motor_couplings))

    @property
    def columns(self) -> FrictionColumns | None:
        if not self.joint_friction:
            return None
        if self.friction == "coulomb-viscous":
            return FrictionColumns()
        if self.friction_scales is None:
            raise ValueError(f"friction_scales: the {self.friction} columns need their velocity scales chosen first")
        return FrictionColumns(self.friction, self.friction_scales)

    def to_dict(self) -> dict:
        return {"method": self.method, "friction": self.friction, "rotor_inertia": self.rotor_inertia,
                "friction_model": self.friction_model, "processing": self.processing.to_dict(),
                "chunk_samples": self.chunk_samples,
                "motor_couplings": [list(c) for c in self.motor_couplings],
                "friction_scales": self.friction_scales, "recording_weights": self.recording_weights}
