"""Joint friction of the simulated plant: seed 000 eq. 2 (Stribeck with a linear zone) + viscous.

    |qd| >= qd0:  F(qd) = (fc + (fs - fc) exp(-(qd/vs)^2)) sgn(qd)
    |qd| <  qd0:  F(qd) = F(qd0)/qd0 * qd          (the line through the origin and F(qd0))
    tau_f = F(qd) + fv * qd

The paper's Table 2 (Franka, per joint) gives fc, fs, vs. Its unit row is garbled by OCR; we read
fc and fs as N.m and vs as rad/s. vs enters squared, so the negative vs of joints 1 and 6 are
used by magnitude. The paper gives no qd0 and neglects viscous friction for the Franka (fv = 0).

qd0 is ours (0.01 rad/s). Inside the linear zone friction is a stiff damper (slope F(qd0)/qd0, up to
60 N.m.s/rad against ~0.005 kg.m^2 on the Panda's last joint), which an explicit step would make
oscillate; :func:`friction_split` therefore hands the linear part to the integrator as implicit
joint damping and only the rest is applied as an explicit torque.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# seed 000 (WSO identification of a Franka arm), Table 2: fc, fs, vs per joint 1..7
FRANKA_TABLE2_FC = (0.2153, 0.1691, 0.2195, 0.1056, 0.6047, 0.2996, 0.1883)
FRANKA_TABLE2_FS = (0.3834, 0.2567, 0.3760, 0.0790, 0.3062, 0.3823, 0.3854)
FRANKA_TABLE2_VS = (-0.0729, 0.0603, 0.0474, 0.0892, 6.0463e-4, -0.0510, 0.0938)
DEFAULT_QD0 = 0.01  # rad/s


@dataclass(frozen=True)
class StribeckFriction:
    fc: np.ndarray  # Coulomb level, N.m
    fs: np.ndarray  # static (breakaway) level, N.m
    vs: np.ndarray  # Stribeck velocity, rad/s (> 0)
    fv: np.ndarray  # viscous coefficient, N.m.s/rad
    qd0: np.ndarray  # half-width of the linear zone, rad/s (> 0)

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
    def franka_seed000(cls, fv=0.0, qd0=DEFAULT_QD0) -> "StribeckFriction":
        return cls.create(7, FRANKA_TABLE2_FC, FRANKA_TABLE2_FS, FRANKA_TABLE2_VS, fv, qd0)

    @classmethod
    def none(cls, dof: int) -> "StribeckFriction":
        return cls.create(dof, 0.0, 0.0, 1.0, 0.0)

    def to_dict(self) -> dict:
        return {k: getattr(self, k).tolist() for k in ("fc", "fs", "vs", "fv", "qd0")}


def stribeck_level(speed: np.ndarray, f: StribeckFriction) -> np.ndarray:
    """Magnitude of eq. 2 outside the linear zone, for speeds >= 0."""
    return f.fc + (f.fs - f.fc) * np.exp(-np.square(speed / f.vs))


def friction_torque(qd: np.ndarray, f: StribeckFriction) -> np.ndarray:
    """tau_f(qd): the torque friction opposes motion with (same sign as qd), shape of qd."""
    speed = np.abs(qd)
    outside = stribeck_level(speed, f) * np.sign(qd)
    inside = stribeck_level(f.qd0, f) / f.qd0 * qd
    return np.where(speed < f.qd0, inside, outside) + f.fv * qd


def linear_zone_slope(f: StribeckFriction) -> np.ndarray:
    """F(qd0)/qd0 per joint: the damping coefficient of eq. 2's linear zone."""
    return stribeck_level(f.qd0, f) / f.qd0


def friction_split(qd: np.ndarray, f: StribeckFriction, slope: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split tau_f(qd) into (explicit torque, damping coefficient) with
    tau_f(qd) = explicit + damping * qd exactly, the damping part suited to implicit integration."""
    inside = np.abs(qd) < f.qd0
    damping = np.where(inside, slope, 0.0) + f.fv
    explicit = np.where(inside, 0.0, stribeck_level(np.abs(qd), f) * np.sign(qd))
    return explicit, damping
