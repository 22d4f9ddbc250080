"""Trajectories built from other data: sampled arrays under a quintic spline, and a sequence of
trajectories back to back."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .base import Trajectory, _array


# --------------------------------------------------------------------------- sampled


@dataclass
class SampledTrajectory(Trajectory):
    """Sampled positions (optionally velocities and accelerations) on strictly increasing times.

    Evaluated by a quintic interpolating spline, so velocity, acceleration and jerk are defined
    and continuous; given qd/qdd are checked against the spline's own derivatives by the validator.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray | None = None
    qdd: np.ndarray | None = None
    family: str = field(default="sampled", init=False)

    def __post_init__(self):
        from scipy.interpolate import make_interp_spline

        self.t = _array("t", self.t, 1)
        if self.t.shape[0] < 6:
            raise ValueError(f"t: need at least 6 samples for a quintic spline, got {self.t.shape[0]}")
        if np.any(np.diff(self.t) <= 0):
            k = int(np.argmax(np.diff(self.t) <= 0))
            raise ValueError(f"t: times must strictly increase (sample {k + 1} at {self.t[k + 1]} "
                             f"after {self.t[k]})")
        self.q = _array("q", self.q, 2)
        if self.q.shape[0] != self.t.shape[0]:
            raise ValueError(f"q: expected {self.t.shape[0]} rows to match t, got {self.q.shape[0]}")
        for name in ("qd", "qdd"):
            v = getattr(self, name)
            if v is not None:
                setattr(self, name, _array(name, v, 2, self.q.shape))
        self._t0 = float(self.t[0])
        self._spline = make_interp_spline(self.t - self._t0, self.q, k=5)

    @property
    def dof(self) -> int:
        return int(self.q.shape[1])

    @property
    def duration(self) -> float:
        return float(self.t[-1] - self.t[0])

    def evaluate(self, t):
        t = np.clip(np.atleast_1d(np.asarray(t, float)), 0.0, self.duration)
        s = self._spline
        return s(t), s(t, 1), s(t, 2), s(t, 3)

    def params(self) -> dict:
        d = {"t": self.t.tolist(), "q": self.q.tolist()}
        if self.qd is not None:
            d["qd"] = self.qd.tolist()
        if self.qdd is not None:
            d["qdd"] = self.qdd.tolist()
        return d


# --------------------------------------------------------------------------- sequence


@dataclass
class SequenceTrajectory(Trajectory):
    """Trajectories run back to back (e.g. the sweeps of a friction experiment with the moves
    between them). Every part must start where the previous one ends, and at rest."""

    parts: list
    family: str = field(default="sequence", init=False)

    def __post_init__(self):
        if not self.parts:
            raise ValueError("parts: a sequence needs at least one trajectory")
        for k, p in enumerate(self.parts):
            if not isinstance(p, Trajectory) or isinstance(p, SequenceTrajectory):
                raise ValueError(f"parts[{k}]: expected a (non-sequence) trajectory")
            if p.dof != self.parts[0].dof:
                raise ValueError(f"parts[{k}]: has {p.dof} joints, parts[0] has {self.parts[0].dof}")
        for k in range(1, len(self.parts)):
            end = self.parts[k - 1].evaluate(self.parts[k - 1].duration)
            start = self.parts[k].evaluate(0.0)
            gap = float(np.max(np.abs(end[0] - start[0])))
            if gap > 1e-9:
                raise ValueError(f"parts[{k}]: starts {gap:.3g} away from where parts[{k - 1}] ends")
            moving = float(max(np.max(np.abs(end[1])), np.max(np.abs(start[1]))))
            if moving > 1e-9:
                raise ValueError(f"parts[{k}]: the junction with parts[{k - 1}] is not at rest ({moving:.3g} rad/s)")
        self.starts = np.concatenate([[0.0], np.cumsum([p.duration for p in self.parts])])

    @property
    def dof(self) -> int:
        return self.parts[0].dof

    @property
    def duration(self) -> float:
        return float(self.starts[-1])

    def part_at(self, t) -> np.ndarray:
        """Index of the part that time(s) t belong to."""
        return np.clip(np.searchsorted(self.starts, np.atleast_1d(t), side="right") - 1, 0, len(self.parts) - 1)

    def evaluate(self, t):
        t = np.clip(np.atleast_1d(np.asarray(t, float)), 0.0, self.duration)
        which = self.part_at(t)
        out = [np.empty((t.shape[0], self.dof)) for _ in range(4)]
        for k in np.unique(which):
            sel = which == k
            values = self.parts[k].evaluate(t[sel] - self.starts[k])
            for arr, v in zip(out, values):
                arr[sel] = v
        return tuple(out)

    def params(self) -> dict:
        return {"parts": [p.to_dict() for p in self.parts]}
