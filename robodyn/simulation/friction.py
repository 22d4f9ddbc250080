"""Joint friction of the simulated plant: the Ni et al. 2024 eq. 2 Stribeck model of
:mod:`robodyn.robot.friction` (one implementation, shared with identification) plus
viscous friction, arranged for the simulator's integrator.

The paper's Table 2 unit row is garbled by OCR; fc and fs are read as N.m and vs as rad/s. The
linear zone qd0 (0.01 rad/s, not in the paper) keeps the explicit part stable at the simulator's
0.25 ms physics step; identification uses the same default.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robodyn.robot.friction import DEFAULT_LINEAR_ZONE as DEFAULT_QD0
from robodyn.robot.friction import FRANKA_STRIBECK, stribeck, stribeck_magnitude


@dataclass(frozen=True)
class StribeckFriction:
    fc: np.ndarray  # Coulomb level, N.m
    fs: np.ndarray  # static (breakaway) level, N.m
    vs: np.ndarray  # Stribeck velocity, rad/s (> 0)
    fv: np.ndarray  # viscous coefficient, N.m.s/rad
    qd0: np.ndarray  # half-width of the linear zone, rad/s (> 0)

    def __post_init__(self):
        # the linear zone's slope, once: the plant uses it at every physics step
        object.__setattr__(self, "_slope", stribeck_magnitude(self.qd0, self.fc, self.fs, self.vs) / self.qd0)

    @classmethod
    def create(cls, dof: int, fc, fs, vs, fv=0.0, qd0=DEFAULT_QD0) -> "StribeckFriction":
        arrays = {}
        for name, v in (("fc", fc), ("fs", fs), ("vs", vs), ("fv", fv), ("qd0", qd0)):
            a = np.asarray(v, dtype=float)
            a = np.full(dof, float(a)) if a.ndim == 0 else a
            if a.shape != (dof,) or not np.all(np.isfinite(a)):
                raise ValueError(f"friction.{name}: expected {dof} finite values, got {v!r}")
            arrays[name] = a
        arrays["vs"] = np.abs(arrays["vs"])
        if np.any(arrays["vs"] <= 0) or np.any(arrays["qd0"] <= 0):
            raise ValueError("friction: vs and qd0 must be non-zero")
        if np.any(arrays["fc"] < 0) or np.any(arrays["fs"] < 0) or np.any(arrays["fv"] < 0):
            raise ValueError("friction: fc, fs and fv must be >= 0")
        return cls(**arrays)

    @classmethod
    def franka(cls, fv=0.0, qd0=DEFAULT_QD0) -> "StribeckFriction":
        """The Franka's friction of Ni et al. 2024 Table 2 (robot.friction.FRANKA_STRIBECK)."""
        t = FRANKA_STRIBECK
        return cls.create(7, t["fc"], t["fs"], t["vs"], fv, qd0)

    @classmethod
    def none(cls, dof: int) -> "StribeckFriction":
        return cls.create(dof, 0.0, 0.0, 1.0, 0.0)

    def to_dict(self) -> dict:
        return {k: getattr(self, k).tolist() for k in ("fc", "fs", "vs", "fv", "qd0")}


def friction_torque(qd: np.ndarray, f: StribeckFriction) -> np.ndarray:
    """tau_f(qd): the torque friction opposes motion with (same sign as qd), shape of qd."""
    return stribeck(qd, f.fc, f.fs, f.vs, f.fv, f.qd0)


def linear_zone_slope(f: StribeckFriction) -> np.ndarray:
    """F(qd0)/qd0 per joint: the damping coefficient of eq. 2's linear zone."""
    return f._slope


@dataclass(frozen=True)
class FrictionEffects:
    """What real joints add to a textbook friction law, and identification does not model:

    - position-dependent ripple: the friction level scales by 1 + ripple sin(cycles q + phase_j)
      (eccentric bearings, gear meshing at the link);
    - load-dependent Coulomb friction: + load |tau_drive| opposing the motion (tooth friction grows
      with the torque the gear transmits; smoothed over 0.01 rad/s through zero speed).
    """

    ripple: np.ndarray  # relative amplitude per joint
    cycles: float  # ripple cycles per radian of joint motion
    phase: np.ndarray  # rad, per joint
    load: np.ndarray  # N.m of friction per N.m transmitted, per joint

    @classmethod
    def create(cls, dof: int, ripple=0.0, cycles: float = 2.0, load=0.0, seed: int = 0) -> "FrictionEffects":
        r = np.broadcast_to(np.asarray(ripple, float), (dof,)).copy()
        ld = np.broadcast_to(np.asarray(load, float), (dof,)).copy()
        if np.any(r < 0) or np.any(r >= 1) or np.any(ld < 0) or np.any(ld >= 0.5) or not cycles > 0:
            raise ValueError(f"friction effects: ripple must be in [0, 1), load in [0, 0.5) and cycles > 0; got "
                             f"ripple {ripple}, load {load}, cycles {cycles}")
        phase = np.random.default_rng(np.random.SeedSequence([seed, 11])).uniform(0, 2 * np.pi, dof)
        return cls(r, float(cycles), phase, ld)

    @property
    def active(self) -> bool:
        return bool(np.any(self.ripple) or np.any(self.load))

    def explicit(self, q: np.ndarray, qd: np.ndarray, base_explicit: np.ndarray, base_linear: np.ndarray,
                 tau_drive: np.ndarray) -> np.ndarray:
        """Extra explicit torque on top of the base law (whose explicit part and linear-zone part
        are given), opposing motion like the friction it modifies."""
        scale = self.ripple * np.sin(self.cycles * q + self.phase)
        return scale * (base_explicit + base_linear) + self.load * np.abs(tau_drive) * np.tanh(qd / 0.01)

    def to_dict(self) -> dict:
        return {"ripple": self.ripple.tolist(), "cycles_per_rad": self.cycles, "phase": self.phase.tolist(),
                "load": self.load.tolist()}
