"""Joint trajectories: one representation shared by the excitation designer, the daemon's
validator and the drivers. Every family evaluates q, qd, qdd and jerk at any time.

Families (serialised as documented JSON, see ``to_dict`` / ``trajectory_from_dict``):

- ``fourier``        finite Fourier series, Ni et al. 2024 eq. 7
                     q_i(t) = q0_i + sum_l a_il/(wf l) sin(wf l t) - b_il/(wf l) cos(wf l t)
- ``fourier_poly``   modified Fourier plus a 5th-order polynomial per period, Zhong et al. 2023 eqs. 6-7:
                     the polynomial makes q = q_start and qd = qdd = 0 at both ends of each period
- ``periodic_poly``  periodic polynomial, Chen et al. 2021 eqs. 17-18: theta = sum_k a_k (t mod T)^k with
                     theta(0) = theta(T) = a_0 and zero 1st..3rd derivatives at both ends
- ``point_to_point`` quintic rest-to-rest move (used for the move to the start)
- ``sweep``          constant-velocity forward/backward sweep of one joint (Ni et al. 2024 friction experiment)
- ``sampled``        arrays t, q (optional qd, qdd) interpolated by a quintic spline
- ``sequence``       several of the above back to back, each starting where the previous ended

JSON document::

    {"format": "robodyn.trajectory", "version": 1, "family": "...", "dof": n,
     "params": {...family parameters...}, "robot": "panda" (optional), "meta": {...}}
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

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
    k = np.arange(K)
    powers = lambda d: np.where(k >= d, tau[:, None] ** np.clip(k - d, 0, None), 0.0)  # noqa: E731
    fall = lambda d: np.array([math.perm(int(j), d) if j >= d else 0 for j in k], float)  # noqa: E731
    return tuple((powers(d) * fall(d)) @ c for d in range(4))


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


# --------------------------------------------------------------------------- (de)serialisation

FAMILIES = ("fourier", "fourier_poly", "periodic_poly", "point_to_point", "sweep", "sampled", "sequence")


def trajectory_from_dict(doc: dict) -> Trajectory:
    """Parse a trajectory JSON document, raising ValueError naming the bad field."""
    if not isinstance(doc, dict):
        raise ValueError("trajectory: expected a JSON object")
    if doc.get("format", FORMAT) != FORMAT:
        raise ValueError(f"format: expected {FORMAT!r}, got {doc.get('format')!r}")
    version = doc.get("version", VERSION)
    if version != VERSION:
        raise ValueError(f"version: unsupported trajectory version {version!r}; this software reads {VERSION}")
    family = doc.get("family")
    if family not in FAMILIES:
        raise ValueError(f"family: unknown trajectory family {family!r}; expected one of {list(FAMILIES)}")
    p = doc.get("params")
    if not isinstance(p, dict):
        raise ValueError("params: expected an object with the family's parameters")

    def need(key):
        if key not in p:
            raise ValueError(f"params.{key}: missing for family {family!r}")
        return p[key]

    def number(key, default=None):
        v = p.get(key, default) if default is not None else need(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"params.{key}: expected a number, got {v!r}")
        return v

    try:
        if family == "fourier":
            traj = FourierTrajectory(number("wf"), need("q0"), need("a"), need("b"), number("periods", 1.0))
        elif family == "fourier_poly":
            traj = FourierPolyTrajectory(number("wf"), need("q_start"), need("a"), need("b"), number("periods", 1))
        elif family == "periodic_poly":
            traj = PeriodicPolyTrajectory(number("period"), need("coefficients"), number("periods", 1))
        elif family == "point_to_point":
            traj = PointToPointTrajectory(need("q_start"), need("q_end"), number("duration"))
        elif family == "sweep":
            joint = need("joint")
            if isinstance(joint, bool) or not isinstance(joint, int):
                raise ValueError(f"joint: expected an integer joint index, got {joint!r}")
            traj = SweepTrajectory(need("q_hold"), joint, number("low"), number("high"), number("speed"),
                                   number("ramp"), number("dwell", 0.2), number("settle", 0.0))
        elif family == "sequence":
            parts = need("parts")
            if not isinstance(parts, list):
                raise ValueError("parts: expected a list of trajectory documents")
            if len(parts) > 10000:
                raise ValueError(f"parts: at most 10000 parts, got {len(parts)}")
            traj = SequenceTrajectory([trajectory_from_dict(d) for d in parts])
        else:
            traj = SampledTrajectory(need("t"), need("q"), p.get("qd"), p.get("qdd"))
    except ValueError as exc:
        text = str(exc)
        raise ValueError(text if text.startswith("params.") else f"params.{text}") from None
    dof = doc.get("dof")
    if dof is not None and dof != traj.dof:
        raise ValueError(f"dof: document says {dof} joints but the parameters describe {traj.dof}")
    return traj


def load_trajectory(path) -> Trajectory:
    import json
    from pathlib import Path

    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON: {exc}") from exc
    return trajectory_from_dict(doc)


def save_trajectory(traj: Trajectory, path, robot: str | None = None, meta: dict | None = None) -> None:
    import json
    from pathlib import Path

    Path(path).write_text(json.dumps(traj.to_dict(robot, meta), indent=1))
