"""Moves between rest states: the quintic point-to-point move and the constant-velocity sweep of
one joint (Ni et al. 2024 friction experiment)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .base import Trajectory, _array


# --------------------------------------------------------------------------- point to point


@dataclass
class PointToPointTrajectory(Trajectory):
    """Rest-to-rest quintic (zero velocity and acceleration at both ends)."""

    q_start: np.ndarray
    q_end: np.ndarray
    move_duration: float
    family: str = field(default="point_to_point", init=False)

    def __post_init__(self):
        self.q_start = _array("q_start", self.q_start, 1)
        self.q_end = _array("q_end", self.q_end, 1, self.q_start.shape)
        if not (math.isfinite(self.move_duration) and self.move_duration > 0):
            raise ValueError(f"duration: must be > 0 s, got {self.move_duration}")
        self.move_duration = float(self.move_duration)

    @property
    def dof(self) -> int:
        return int(self.q_start.shape[0])

    @property
    def duration(self) -> float:
        return self.move_duration

    def evaluate(self, t):
        t = np.clip(np.atleast_1d(np.asarray(t, float)), 0.0, self.move_duration)
        T = self.move_duration
        s = t / T
        h = self.q_end - self.q_start
        pos = 10 * s**3 - 15 * s**4 + 6 * s**5
        vel = (30 * s**2 - 60 * s**3 + 30 * s**4) / T
        acc = (60 * s - 180 * s**2 + 120 * s**3) / T**2
        jerk = (60 - 360 * s + 360 * s**2) / T**3
        return (self.q_start + np.outer(pos, h), np.outer(vel, h), np.outer(acc, h), np.outer(jerk, h))

    @classmethod
    def within_limits(cls, q_start, q_end, qd_max, qdd_max, qddd_max, scale: float = 0.5,
                      min_duration: float = 0.5) -> "PointToPointTrajectory":
        """The shortest quintic move whose peaks stay within ``scale`` times each limit.

        Peaks of the normalised quintic: velocity 15/8, acceleration 10/sqrt(3), jerk 60.
        """
        h = np.abs(np.asarray(q_end, float) - np.asarray(q_start, float))
        qd_max, qdd_max, qddd_max = (np.asarray(v, float) * scale for v in (qd_max, qdd_max, qddd_max))
        T = max(min_duration,
                float(np.max(1.875 * h / qd_max)),
                float(np.max(np.sqrt(5.7735026918962584 * h / qdd_max))),
                float(np.max(np.cbrt(60.0 * h / qddd_max))))
        return cls(q_start, q_end, T)

    def params(self) -> dict:
        return {"q_start": self.q_start.tolist(), "q_end": self.q_end.tolist(), "duration": self.move_duration}


# --------------------------------------------------------------------------- constant-velocity sweep


def _velocity_ramp(T: float, v_from: float, v_to: float, t: np.ndarray):
    """Quintic-smoothstep velocity ramp: position offset, velocity, acceleration, jerk."""
    tau = np.clip(t / T, 0.0, 1.0)
    dv = v_to - v_from
    s = 10 * tau**3 - 15 * tau**4 + 6 * tau**5
    ds = (30 * tau**2 - 60 * tau**3 + 30 * tau**4) / T
    dds = (60 * tau - 180 * tau**2 + 120 * tau**3) / T**2
    integral = (2.5 * tau**4 - 3 * tau**5 + tau**6) * T
    return v_from * t + dv * integral, v_from + dv * s, dv * ds, dv * dds


@dataclass
class SweepTrajectory(Trajectory):
    """One joint moves at constant ``speed`` forward over [low, high], then backward over the same
    range, while the others hold ``q_hold`` (Ni et al. 2024 §2.1). Speed ramps are quintic smoothsteps of
    ``ramp`` seconds, followed by ``settle`` seconds at constant speed before the window, so the
    window is crossed at constant speed both ways after the controller has settled from the ramp;
    the robot starts and ends at rest at :attr:`start_position`."""

    q_hold: np.ndarray
    joint: int
    low: float
    high: float
    speed: float
    ramp: float
    dwell: float = 0.2
    settle: float = 0.0
    family: str = field(default="sweep", init=False)

    def __post_init__(self):
        self.q_hold = _array("q_hold", self.q_hold, 1)
        if not (isinstance(self.joint, (int, np.integer)) and 0 <= int(self.joint) < self.q_hold.shape[0]):
            raise ValueError(f"joint: must index one of the {self.q_hold.shape[0]} joints, got {self.joint!r}")
        self.joint = int(self.joint)
        for name in ("low", "high", "speed", "ramp", "dwell", "settle"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not math.isfinite(v):
                raise ValueError(f"{name}: expected a finite number, got {v!r}")
            setattr(self, name, float(v))
        if not self.high > self.low:
            raise ValueError(f"high: {self.high} must exceed low {self.low}")
        if not self.speed > 0 or not self.ramp > 0 or self.dwell < 0 or self.settle < 0:
            raise ValueError("speed and ramp must be > 0, dwell and settle >= 0")
        cruise = (self.high - self.low) / self.speed + 2.0 * self.settle
        v = self.speed
        self._segments = [(self.ramp, 0.0, v), (cruise, v, v), (self.ramp, v, 0.0), (self.dwell, 0.0, 0.0),
                          (self.ramp, 0.0, -v), (cruise, -v, -v), (self.ramp, -v, 0.0), (self.dwell, 0.0, 0.0)]

    @property
    def dof(self) -> int:
        return int(self.q_hold.shape[0])

    @property
    def duration(self) -> float:
        return float(sum(s[0] for s in self._segments))

    @property
    def start_position(self) -> float:
        return self.low - self.speed * (self.ramp / 2.0 + self.settle)

    def evaluate(self, t):
        t = np.clip(np.atleast_1d(np.asarray(t, float)), 0.0, self.duration)
        out = [np.zeros_like(t) for _ in range(4)]
        start, offset = 0.0, self.start_position
        for T, v0, v1 in self._segments:
            inside = (t >= start) & (t <= start + T)
            local = t[inside] - start
            if v0 == v1:
                pieces = (v0 * local, np.full(local.shape, v0), np.zeros(local.shape), np.zeros(local.shape))
            else:
                pieces = _velocity_ramp(T, v0, v1, local)
            out[0][inside] = offset + pieces[0]
            for k in (1, 2, 3):
                out[k][inside] = pieces[k]
            offset += v0 * T if v0 == v1 else _velocity_ramp(T, v0, v1, np.array([T]))[0][0]
            start += T
        q = np.tile(self.q_hold, (t.shape[0], 1))
        q[:, self.joint] = out[0]
        rest = [np.zeros((t.shape[0], self.dof)) for _ in range(3)]
        for k in range(3):
            rest[k][:, self.joint] = out[k + 1]
        return (q, *rest)

    @classmethod
    def within_limits(cls, q_hold, joint: int, low: float, high: float, speed: float, qdd_max: float,
                      qddd_max: float, scale: float = 0.5, dwell: float = 0.2,
                      settle: float = 0.0) -> "SweepTrajectory":
        """The sweep whose ramps use ``scale`` of the joint's acceleration and jerk limits
        (peaks of the smoothstep ramp: acceleration 1.875 v/T, jerk 5.7735 v/T^2)."""
        ramp = max(0.05, 1.875 * speed / (scale * qdd_max), math.sqrt(5.7735 * speed / (scale * qddd_max)))
        return cls(q_hold, joint, low, high, speed, ramp, dwell, settle)

    def params(self) -> dict:
        return {"q_hold": self.q_hold.tolist(), "joint": self.joint, "low": self.low, "high": self.high,
                "speed": self.speed, "ramp": self.ramp, "dwell": self.dwell, "settle": self.settle}
