"""Periodic excitation families: finite Fourier series (Ni et al. 2024 eq. 7), Fourier plus a
quintic per period (Zhong et al. 2023 eqs. 6-7) and the periodic polynomial (Chen et al. 2021
eqs. 17-18)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .base import Trajectory, _array


# --------------------------------------------------------------------------- Fourier


def _fourier_terms(t: np.ndarray, wf: float, a: np.ndarray, b: np.ndarray):
    """Zero-offset Fourier part (Ni et al. 2024 eq. 7) and its first three derivatives, (N, n) each."""
    L = a.shape[1]
    l = np.arange(1, L + 1)
    w = wf * l  # (L,)
    wt = np.multiply.outer(t, w)  # (N, L)
    s, c = np.sin(wt), np.cos(wt)
    q = s @ (a / w).T - c @ (b / w).T
    qd = c @ a.T + s @ b.T
    qdd = -s @ (a * w).T + c @ (b * w).T
    jerk = -c @ (a * w * w).T - s @ (b * w * w).T
    return q, qd, qdd, jerk


def _fourier_coefficients(wf, a, b, n: int):
    """Validated (wf, a, b) for n joints: wf > 0, a and b of shape (n, L) with L >= 1."""
    if isinstance(wf, bool) or not (isinstance(wf, (int, float)) and math.isfinite(wf) and wf > 0):
        raise ValueError(f"wf: fundamental frequency must be > 0 rad/s, got {wf!r}")
    a = _array("a", a, 2)
    if a.shape[0] != n:
        raise ValueError(f"a: expected {n} rows (one per joint), got {a.shape[0]}")
    if a.shape[1] < 1:
        raise ValueError("harmonics: need at least one harmonic")
    return float(wf), a, _array("b", b, 2, a.shape)


class _FourierTiming:
    """Harmonics, period and duration shared by the two Fourier families (fields wf, a, periods)."""

    @property
    def harmonics(self) -> int:
        return int(self.a.shape[1])

    @property
    def period(self) -> float:
        return 2.0 * math.pi / self.wf

    @property
    def duration(self) -> float:
        return self.period * self.periods


@dataclass
class FourierTrajectory(_FourierTiming, Trajectory):
    wf: float
    q0: np.ndarray
    a: np.ndarray  # (n, L)
    b: np.ndarray  # (n, L)
    periods: float = 1.0
    family: str = field(default="fourier", init=False)

    def __post_init__(self):
        self.q0 = _array("q0", self.q0, 1)
        self.wf, self.a, self.b = _fourier_coefficients(self.wf, self.a, self.b, self.q0.shape[0])
        if not (self.periods > 0 and math.isfinite(self.periods)):
            raise ValueError(f"periods: must be > 0, got {self.periods}")

    @property
    def dof(self) -> int:
        return int(self.q0.shape[0])

    def evaluate(self, t):
        t = np.atleast_1d(np.asarray(t, float))
        q, qd, qdd, jerk = _fourier_terms(t, self.wf, self.a, self.b)
        return q + self.q0, qd, qdd, jerk

    def params(self) -> dict:
        return {"wf": self.wf, "q0": self.q0.tolist(), "a": self.a.tolist(), "b": self.b.tolist(),
                "periods": self.periods}


# --------------------------------------------------------------------------- Fourier + quintic


def _quintic_coefficients(T: float, p0, v0, a0, p1, v1, a1) -> np.ndarray:
    """Coefficients c (6, n) of sum c_k t^k meeting position, velocity, acceleration at 0 and T."""
    A = np.array([
        [1, 0, 0, 0, 0, 0],
        [0, 1, 0, 0, 0, 0],
        [0, 0, 2, 0, 0, 0],
        [1, T, T**2, T**3, T**4, T**5],
        [0, 1, 2 * T, 3 * T**2, 4 * T**3, 5 * T**4],
        [0, 0, 2, 6 * T, 12 * T**2, 20 * T**3],
    ], dtype=float)
    rhs = np.vstack([p0, v0, a0, p1, v1, a1])
    return np.linalg.solve(A, rhs)


def _poly_eval(c: np.ndarray, tau: np.ndarray):
    """Polynomial sum c_k tau^k (c: (K, n)) and its first three derivatives at tau (N,)."""
    K = c.shape[0]
    powers = np.empty((tau.shape[0], K))  # tau^0 .. tau^(K-1), by products (a float power per entry cost more than the rest)
    powers[:, 0] = 1.0
    for j in range(1, K):
        powers[:, j] = powers[:, j - 1] * tau
    # d-th derivative: sum over k >= d of c_k k!/(k-d)! tau^(k-d)
    return tuple((powers[:, :K - d] * np.array([math.perm(k, d) for k in range(d, K)], float)) @ c[d:]
                 if d < K else np.zeros((tau.shape[0], c.shape[1])) for d in range(4))


@dataclass
class FourierPolyTrajectory(_FourierTiming, Trajectory):
    """Zhong et al. 2023 eqs. 6-7: Fourier terms plus a quintic that pins both ends of every period."""

    wf: float
    q_start: np.ndarray
    a: np.ndarray
    b: np.ndarray
    periods: int = 1
    family: str = field(default="fourier_poly", init=False)

    def __post_init__(self):
        self.q_start = _array("q_start", self.q_start, 1)
        self.wf, self.a, self.b = _fourier_coefficients(self.wf, self.a, self.b, self.q_start.shape[0])
        if int(self.periods) != self.periods or self.periods < 1:
            raise ValueError(f"periods: must be a positive integer, got {self.periods}")
        self.periods = int(self.periods)
        T = self.period
        F0, Fd0, Fdd0, _ = _fourier_terms(np.zeros(1), self.wf, self.a, self.b)
        # the Fourier part is T-periodic, so the same correction holds at both ends
        target = self.q_start - F0[0]
        self._c = _quintic_coefficients(T, target, -Fd0[0], -Fdd0[0], target, -Fd0[0], -Fdd0[0])

    @property
    def dof(self) -> int:
        return int(self.q_start.shape[0])

    @property
    def polynomial(self) -> np.ndarray:
        """The quintic's coefficients (6, n), Zhong et al. 2023 eq. 7."""
        return self._c.copy()

    def evaluate(self, t):
        t = np.atleast_1d(np.asarray(t, float))
        T = self.period
        # each period restarts the polynomial (Zhong et al. 2023: t - (j-1) t_f); the end belongs to the last one
        tau = np.where(t >= self.duration, T, np.mod(t, T))
        F = _fourier_terms(t, self.wf, self.a, self.b)
        P = _poly_eval(self._c, tau)
        return tuple(f + p for f, p in zip(F, P))

    def params(self) -> dict:
        return {"wf": self.wf, "q_start": self.q_start.tolist(), "a": self.a.tolist(),
                "b": self.b.tolist(), "periods": self.periods}


# --------------------------------------------------------------------------- periodic polynomial


def periodic_poly_basis(order: int) -> np.ndarray:
    """Null-space basis (order+1, order-7) of the Chen et al. 2021 eq. 18 boundary conditions in
    normalised time tau = (t mod T)/T: coefficients with c_0..c_3 = 0 and zero value,
    1st, 2nd and 3rd derivative at tau = 1. Any coefficient vector a_init e_0 + B x is admissible."""
    if order < 8:
        raise ValueError(f"order: the periodic polynomial needs order >= 8 (Chen et al. 2021 eq. 18), got {order}")
    k = np.arange(order + 1)
    rows = [np.eye(order + 1)[d] for d in range(4)]  # c_0..c_3 = 0 (c_0 carries a_init separately)
    for d in range(4):
        rows.append(np.array([math.perm(int(j), d) if j >= d else 0 for j in k], float))
    A = np.array(rows)
    _, s, vt = np.linalg.svd(A)
    rank = int(np.sum(s > 1e-10 * s[0]))
    return vt[rank:].T


@dataclass
class PeriodicPolyTrajectory(Trajectory):
    """Chen et al. 2021 eq. 17: theta(t) = sum_k a_k (t mod T)^k, coefficients per joint in SI units."""

    period: float
    coefficients: np.ndarray  # (n, order+1): a_0 .. a_order
    periods: int = 1
    family: str = field(default="periodic_poly", init=False)

    def __post_init__(self):
        if not (isinstance(self.period, (int, float)) and math.isfinite(self.period) and self.period > 0):
            raise ValueError(f"period: must be > 0 s, got {self.period!r}")
        self.period = float(self.period)
        self.coefficients = _array("coefficients", self.coefficients, 2)
        if self.coefficients.shape[1] < 9:
            raise ValueError(f"coefficients: order must be >= 8 (Chen et al. 2021), got {self.coefficients.shape[1] - 1}")
        if int(self.periods) != self.periods or self.periods < 1:
            raise ValueError(f"periods: must be a positive integer, got {self.periods}")
        self.periods = int(self.periods)
        # eq. 18 boundary conditions must hold, or the periodic repetition would jump
        q0 = _poly_eval(self.coefficients.T, np.zeros(1))
        q1 = _poly_eval(self.coefficients.T, np.array([self.period]))
        scale = np.maximum(1.0, np.abs(self.coefficients[:, 0]))
        for d, name in enumerate(("position", "velocity", "acceleration", "jerk")):
            gap = np.abs(q1[d][0] - (q0[d][0] if d == 0 else 0.0)) + (0 if d == 0 else np.abs(q0[d][0]))
            if np.any(gap > 1e-6 * scale * max(1.0, self.period ** -d)):
                j = int(np.argmax(gap))
                raise ValueError(f"coefficients: joint {j + 1} violates the periodic boundary condition on "
                                 f"{name} (Chen et al. 2021 eq. 18), mismatch {gap[j]:.3g}")

    @classmethod
    def from_free(cls, period: float, a_init, free: np.ndarray, periods: int = 1) -> "PeriodicPolyTrajectory":
        """Build from the start angles and free coordinates (n, order-7) in normalised time."""
        a_init = _array("a_init", a_init, 1)
        free = _array("free", free, 2)
        order = free.shape[1] + 7
        B = periodic_poly_basis(order)
        c_norm = free @ B.T  # (n, order+1) in tau units
        c_norm[:, 0] += a_init
        k = np.arange(order + 1)
        return cls(period, c_norm / float(period) ** k, periods)

    @property
    def dof(self) -> int:
        return int(self.coefficients.shape[0])

    @property
    def order(self) -> int:
        return int(self.coefficients.shape[1] - 1)

    @property
    def duration(self) -> float:
        return self.period * self.periods

    def evaluate(self, t):
        t = np.atleast_1d(np.asarray(t, float))
        tau = np.where(t >= self.duration, self.period, np.mod(t, self.period))
        return _poly_eval(self.coefficients.T, tau)

    def params(self) -> dict:
        return {"period": self.period, "coefficients": self.coefficients.tolist(), "periods": self.periods}
