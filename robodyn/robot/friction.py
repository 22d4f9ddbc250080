"""Joint friction laws: torque opposing motion as a function of joint velocity qd. One
implementation, evaluated by the simulated plant (drivers.sim) and by identification, which fits
them (identification.friction).

- ``coulomb-viscous``: fc sgn(qd) + fv qd + fo                         (linear in its parameters)
- ``stribeck`` (Ni et al. 2024 eq. 2): for |qd| >= qd0, (fc + (fs - fc) exp(-(qd/vs)^2)) sgn(qd) + fv qd;
  for |qd| < qd0 the straight line F(qd0)/qd0 * qd through zero, which keeps the model continuous
  (and a simulation stable) near standstill.
- ``sigmoid``: fc tanh(qd / vt) + fv qd + fo                            (smooth Coulomb)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numba import njit, vectorize

from .friction_names import MODELS  # noqa: F401  (re-exported)

# Ni et al. 2024 Table 2, Franka joints 1..7: fc, fs (N.m) and vs (rad/s; the sign is immaterial since vs
# enters squared, so magnitudes are kept). Viscous friction is neglected in the paper.
FRANKA_STRIBECK = {
    "fc": (0.2153, 0.1691, 0.2195, 0.1056, 0.6047, 0.2996, 0.1883),
    "fs": (0.3834, 0.2567, 0.3760, 0.0790, 0.3062, 0.3823, 0.3854),
    "vs": (0.0729, 0.0603, 0.0474, 0.0892, 6.0463e-4, 0.0510, 0.0938),
}

# qd0 of eq. 2 (the paper gives none): 0.01 rad/s. A simulator that applies friction explicitly sees
# the linear zone's slope F(qd0)/qd0 as a damper; at 0.01 rad/s it stays stable for the Panda's
# lightest joint at a 0.25 ms physics step, and identification must use the same zone as the plant.
DEFAULT_LINEAR_ZONE = 1e-2
DEFAULT_SIGMOID_VELOCITY = 0.01  # vt of the tanh model, rad/s


def _stribeck_level(speed, fc, fs, vs):
    r = speed / (abs(vs) if vs != 0.0 else 1e-12)
    return fc + (fs - fc) * math.exp(-r * r)


stribeck_magnitude_value = njit(cache=True)(_stribeck_level)


def _stribeck_value(qd, fc, fs, vs, fv, qd0):
    speed = abs(qd)
    if speed >= qd0:
        f = stribeck_magnitude_value(speed, fc, fs, vs)
        out = f if qd > 0.0 else -f
    else:
        out = stribeck_magnitude_value(qd0, fc, fs, vs) / qd0 * qd
    return out + fv * qd


# The law is written once, per velocity, above. numba builds from it the scalar function that
# kernels call (the plant's physics step, the Stribeck fitness) and the ufuncs below, which
# broadcast like numpy in one pass.
stribeck_value = njit(cache=True)(_stribeck_value)


@functools.cache
def _ufuncs():
    """Built on first use, not at import: even from numba's cache a ufunc costs about a second to
    build, and most processes that import this module never evaluate the law on arrays. (``.ufunc``
    is numpy's own ufunc inside numba's wrapper, whose Python-level call costs 3x the work.)"""
    f8 = "float64"
    return (vectorize([f"{f8}({', '.join([f8] * 4)})"], cache=True)(_stribeck_level).ufunc,
            vectorize([f"{f8}({', '.join([f8] * 6)})"], cache=True)(_stribeck_value).ufunc)


def stribeck_magnitude(speed, fc, fs, vs):
    """|F| of Ni et al. 2024 eq. 2 outside the linear zone, for speeds >= 0 (vs enters squared;
    0 counts as 1e-12)."""
    return _ufuncs()[0](speed, fc, fs, vs)


def stribeck(qd, fc, fs, vs, fv=0.0, qd0=DEFAULT_LINEAR_ZONE):
    """Ni et al. 2024 eq. 2 (plus optional viscous fv); parameters broadcast per joint, qd0 too."""
    return _ufuncs()[1](qd, fc, fs, vs, fv, qd0)


def coulomb_viscous(qd, fc, fv, fo=0.0):
    qd = np.asarray(qd, float)
    return fc * np.sign(qd) + fv * qd + fo


def sigmoid(qd, fc, fv=0.0, fo=0.0, vt=DEFAULT_SIGMOID_VELOCITY):
    qd = np.asarray(qd, float)
    return fc * np.tanh(qd / vt) + fv * qd + fo


@dataclass
class FrictionModel:
    """Per-joint friction of one model kind. ``params`` maps parameter name to (n,) arrays."""

    kind: str
    params: dict[str, np.ndarray]
    qd0: float = DEFAULT_LINEAR_ZONE
    vt: float = DEFAULT_SIGMOID_VELOCITY

    def __post_init__(self):
        if self.kind not in MODELS:
            raise ValueError(f"friction: unknown model {self.kind!r}; expected one of {list(MODELS)}")
        self.params = {k: np.asarray(v, float) for k, v in self.params.items()}
        need = {"coulomb-viscous": ("fc", "fv", "fo"), "stribeck": ("fc", "fs", "vs", "fv"),
                "sigmoid": ("fc", "fv", "fo")}[self.kind]
        n = None
        for k in need:
            if k not in self.params:
                self.params[k] = np.zeros(n or len(next(iter(self.params.values()))))
            arr = self.params[k]
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"friction.{k}: non-finite value")
            n = arr.shape[0] if n is None else n
            if arr.shape != (n,):
                raise ValueError(f"friction.{k}: expected {n} values, got shape {arr.shape}")

    @property
    def dof(self) -> int:
        return int(next(iter(self.params.values())).shape[0])

    def torque(self, qd: np.ndarray) -> np.ndarray:
        """Friction torque (N, n) for velocities (N, n)."""
        p = self.params
        if self.kind == "coulomb-viscous":
            return coulomb_viscous(qd, p["fc"], p["fv"], p["fo"])
        if self.kind == "stribeck":
            return stribeck(qd, p["fc"], p["fs"], p["vs"], p["fv"], self.qd0)
        return sigmoid(qd, p["fc"], p["fv"], p["fo"], self.vt)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "params": {k: v.tolist() for k, v in self.params.items()},
                "qd0": self.qd0, "vt": self.vt}

    @classmethod
    def from_dict(cls, d: dict) -> "FrictionModel":
        return cls(d["kind"], d["params"], d.get("qd0", DEFAULT_LINEAR_ZONE), d.get("vt", DEFAULT_SIGMOID_VELOCITY))

    @classmethod
    def franka_stribeck(cls, viscous=None) -> "FrictionModel":
        """The Franka's Stribeck friction as Ni et al. 2024 Table 2 gives it (plus optional viscous)."""
        p = {k: np.array(v) for k, v in FRANKA_STRIBECK.items()}
        p["fv"] = np.zeros(7) if viscous is None else np.asarray(viscous, float)
        return cls("stribeck", p)
