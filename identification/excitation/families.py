"""Trajectory families as linear design spaces over the shared representation (robodyn.trajectory).

Every family used for excitation is affine in its parameters, joint by joint:

    q_j(t) = offset_j + B_0(t) x_j,   qd_j = B_1 x_j,   qdd_j = B_2 x_j,   jerk_j = B_3 x_j

with ``x_j`` the joint's m free *shape* coordinates and ``offset_j`` its start/centre position.
The boundary conditions live inside the basis (they are not penalties), so every design meets
them exactly:

- ``fourier``       Ni et al. 2024 eq. 7. Rest at both ends needs qd(0) = sum_l a_l = 0 and
                    qdd(0) = wf sum_l l b_l = 0; a_1 and b_1 are eliminated, leaving
                    m = 2(L - 1) free coefficients (a_2..a_L, b_2..b_L).
- ``fourier_poly``  Zhong et al. 2023 eqs. 6-7: all 2L coefficients are free, the quintic pins the ends.
- ``poly``          Chen et al. 2021 eqs. 17-18: order-8 (or higher) periodic polynomial, m = order - 7.

The basis matrices are obtained by evaluating the trajectory classes of robodyn.trajectory on
unit parameter vectors, so the formulas exist once, in that module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robodyn.trajectory import (FourierPolyTrajectory, FourierTrajectory, PeriodicPolyTrajectory, Trajectory,
                                periodic_poly_basis)

FAMILY_NAMES = ("fourier", "fourier-poly", "poly")


@dataclass(frozen=True)
class Family:
    """A linear design space: ``build(offsets, shapes)`` gives the trajectory, ``basis(t)`` its
    derivative responses to each shape coordinate."""

    name: str
    dof: int
    period: float
    shape_count: int  # m, free coordinates per joint
    wf: float | None = None
    harmonics: int | None = None
    order: int | None = None

    # -- construction
    def build(self, offsets: np.ndarray, shapes: np.ndarray) -> Trajectory:
        offsets = np.asarray(offsets, float).reshape(self.dof)
        shapes = np.asarray(shapes, float).reshape(self.dof, self.shape_count)
        if self.name == "fourier":
            a, b = fourier_rest_coefficients(shapes, self.harmonics)
            return FourierTrajectory(self.wf, offsets, a, b)
        if self.name == "fourier-poly":
            L = self.harmonics
            return FourierPolyTrajectory(self.wf, offsets, shapes[:, :L], shapes[:, L:])
        return PeriodicPolyTrajectory.from_free(self.period, offsets, shapes)

    def basis(self, t: np.ndarray) -> np.ndarray:
        """(4, len(t), m): q, qd, qdd, jerk of one joint per unit shape coordinate (zero offset)."""
        t = np.asarray(t, float)
        single = Family(self.name, 1, self.period, self.shape_count, self.wf, self.harmonics, self.order)
        out = np.empty((4, t.size, self.shape_count))
        for k in range(self.shape_count):
            unit = np.zeros((1, self.shape_count))
            unit[0, k] = 1.0
            for d, values in enumerate(single.build(np.zeros(1), unit).evaluate(t)):
                out[d, :, k] = values[:, 0]
        return out

    def split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Decision vectors (..., n + n m) -> offsets (..., n) and shapes (..., n, m)."""
        z = np.asarray(z, float)
        n, m = self.dof, self.shape_count
        return z[..., :n], z[..., n:].reshape(z.shape[:-1] + (n, m))

    def join(self, offsets: np.ndarray, shapes: np.ndarray) -> np.ndarray:
        offsets = np.asarray(offsets, float)
        shapes = np.asarray(shapes, float)
        return np.concatenate([offsets, shapes.reshape(shapes.shape[:-2] + (-1,))], axis=-1)

    @property
    def dim(self) -> int:
        return self.dof * (1 + self.shape_count)

    def describe(self) -> dict:
        d = {"family": self.name, "period": self.period, "free_per_joint": self.shape_count + 1}
        if self.wf is not None:
            d.update(wf=self.wf, harmonics=self.harmonics)
        if self.order is not None:
            d["order"] = self.order
        return d


def fourier_rest_coefficients(shapes: np.ndarray, harmonics: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, b), each (n, L), from the free coordinates [a_2..a_L, b_2..b_L] per joint, with
    a_1 = -sum_{l>=2} a_l (zero velocity at t = 0 and T) and b_1 = -sum_{l>=2} l b_l (zero
    acceleration there)."""
    L = harmonics
    shapes = np.atleast_2d(shapes)
    a_rest, b_rest = shapes[:, : L - 1], shapes[:, L - 1:]
    l = np.arange(2, L + 1)
    a = np.hstack([-a_rest.sum(axis=1, keepdims=True), a_rest])
    b = np.hstack([-(b_rest * l).sum(axis=1, keepdims=True), b_rest])
    return a, b


def make_family(name: str, dof: int, *, harmonics: int = 5, wf: float | None = None,
                period: float | None = None, order: int = 8) -> Family:
    """Validate the request and build the family. Raises ValueError naming the bad setting."""
    name = name.replace("_", "-").lower()
    if name == "periodic-poly":
        name = "poly"
    if name not in FAMILY_NAMES:
        raise ValueError(f"family: unknown trajectory family {name!r}; expected one of {list(FAMILY_NAMES)}")
    if dof < 1:
        raise ValueError(f"dof: need at least one joint, got {dof}")
    if name in ("fourier", "fourier-poly"):
        if isinstance(harmonics, bool) or int(harmonics) != harmonics or harmonics < 1:
            raise ValueError(f"harmonics: must be a positive integer, got {harmonics!r}")
        harmonics = int(harmonics)
        if name == "fourier" and harmonics < 2:
            raise ValueError("harmonics: the fourier family needs >= 2 harmonics; with one, zero velocity and "
                             "acceleration at both ends (Ni et al. 2024 eq. 8) force every coefficient to 0")
        if wf is None:
            wf = 2 * math.pi / period if period else None
        if wf is None or not (math.isfinite(wf) and wf > 0):
            raise ValueError(f"wf: fundamental frequency must be a positive number of rad/s, got {wf!r}")
        m = 2 * (harmonics - 1) if name == "fourier" else 2 * harmonics
        return Family(name, dof, 2 * math.pi / wf, m, float(wf), harmonics, None)
    if period is None:
        if wf is None or not (math.isfinite(wf) and wf > 0):
            raise ValueError("period: the poly family needs --period (s) or --wf (period = 2 pi / wf)")
        period = 2 * math.pi / wf
    if not (math.isfinite(period) and period > 0):
        raise ValueError(f"period: must be > 0 s, got {period!r}")
    if isinstance(order, bool) or int(order) != order or order < 8:
        raise ValueError(f"order: the periodic polynomial needs order >= 8 for its 8 boundary conditions "
                         f"(Chen et al. 2021 eq. 18), got {order!r}")
    periodic_poly_basis(int(order))  # validates
    return Family("poly", dof, float(period), int(order) - 7, None, None, int(order))
