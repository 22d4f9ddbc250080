"""The trajectory interface every family implements, its JSON envelope constants, and the array
check the families share."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

FORMAT = "robodyn.trajectory"
VERSION = 1


def _array(name: str, value, ndim: int, shape: tuple | None = None) -> np.ndarray:
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected numbers, got {type(value).__name__}") from exc
    if raw.dtype.kind not in "iuf":  # numeric strings, booleans, maps and ragged lists are not numbers
        raise ValueError(f"{name}: expected numbers, got {type(value).__name__} of {raw.dtype.name}")
    arr = raw.astype(float)
    if arr.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D array, got shape {arr.shape}")
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    return arr


class Trajectory(ABC):
    family: str = ""

    @property
    @abstractmethod
    def dof(self) -> int: ...

    @property
    @abstractmethod
    def duration(self) -> float: ...

    @abstractmethod
    def evaluate(self, t) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(q, qd, qdd, jerk), each of shape (len(t), dof), for times in [0, duration]."""

    @abstractmethod
    def params(self) -> dict: ...

    def sample(self, rate_hz: float):
        """Times on a grid at ``rate_hz`` from 0 to duration inclusive, and the states there."""
        if not rate_hz > 0:
            raise ValueError(f"rate: must be > 0 Hz, got {rate_hz}")
        count = int(math.floor(self.duration * rate_hz + 1e-9)) + 1
        t = np.arange(count) / rate_hz
        return (t, *self.evaluate(t))

    def to_dict(self, robot: str | None = None, meta: dict | None = None) -> dict:
        doc = {"format": FORMAT, "version": VERSION, "family": self.family, "dof": self.dof,
               "duration": self.duration, "params": self.params()}
        if robot:
            doc["robot"] = robot
        if meta:
            doc["meta"] = meta
        return doc
