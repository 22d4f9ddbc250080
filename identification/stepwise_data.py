"""The recordings of a flexible-joint arm cut into what stepwise identification reads: the options
(:class:`StepwiseConfig`), the processed link and drive channels side by side, constant-speed
sweeps, friction points, static poses and the transmission; plus the per-sub-system least squares
with its flags (significance, physical sign)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from robodyn.robot.model import RobotModel

from .signals import SampledData
from .processing import ProcessingConfig
from .stepwise import COND_RULE_OF_THUMB, rank_and_cond

RESULT_FORMAT = "robodyn.stepwise"
RESULT_VERSION = 1


@dataclass
class StepwiseConfig:
    """Options of :func:`identify_recorded` (a dict with these keys is accepted too)."""

    processing: ProcessingConfig = field(default_factory=ProcessingConfig)
    # N.m/A at the motor shaft, per motor; None: identified with the motor sub-system (needs the
    # joint torque sensor, which fixes the scale)
    torque_constant: list | None = None
    reduction: list | None = None  # per joint; None: the model's transmission (gear ratios, shared motors)
    identify: int = 1  # the first `identify` recordings identify; the others are held out
    encoder_offset: bool = True  # stiffness: also fit c in tau = K d + c (motor and link encoder zeros differ)
    rest_velocity: float = 0.005  # rad/s (link): slower is at rest; no Coulomb friction is assumed there
    sweep_min_velocity: float = 0.02  # rad/s: slower stretches are not friction sweeps
    sweep_tolerance: float = 0.1  # a sweep's speed stays within this fraction of its median
    sweep_min_duration: float = 0.5  # s of constant speed
    rest_min_duration: float = 0.5  # s: a static pose (its second half is used)
    motor_min_velocity: float | None = None  # rad/s at the motor; default rest_velocity x the reduction

    def __post_init__(self):
        if isinstance(self.processing, dict):
            self.processing = ProcessingConfig(**self.processing)
        if self.processing.min_velocity:
            raise ValueError("processing.min_velocity: not used by stepwise identification (each sub-system "
                             "chooses its own samples: sweeps, rests, moving motors); leave it unset")
        if int(self.identify) != self.identify or self.identify < 1:
            raise ValueError(f"identify: the number of identification recordings must be >= 1, got {self.identify}")
        self.identify = int(self.identify)
        for name in ("rest_velocity", "sweep_min_velocity", "sweep_tolerance", "sweep_min_duration",
                     "rest_min_duration"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
                raise ValueError(f"{name}: must be a number > 0, got {v!r}")
        if self.sweep_tolerance >= 0.5:
            raise ValueError(f"sweep_tolerance: must be below 0.5 (a fraction of the speed), got {self.sweep_tolerance}")
        for name in ("torque_constant", "reduction"):
            v = getattr(self, name)
            if v is not None:
                arr = np.asarray(v, float).ravel()
                if not np.all(np.isfinite(arr)) or np.any(arr == 0):
                    raise ValueError(f"{name}: expected finite non-zero numbers per joint, got {v!r}")
                setattr(self, name, arr.tolist())

    @classmethod
    def from_any(cls, config) -> "StepwiseConfig":
        if config is None:
            return cls()
        if isinstance(config, cls):
            return config
        if isinstance(config, dict):
            unknown = sorted(set(config) - {f for f in cls.__dataclass_fields__})
            if unknown:
                raise ValueError(f"config.{unknown[0]}: unknown option; expected any of "
                                 f"{sorted(cls.__dataclass_fields__)}")
            return cls(**config)
        raise ValueError(f"config: expected a StepwiseConfig, a dict or None, got {type(config).__name__}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["processing"] = self.processing.to_dict()
        return d


def finite_or_none(x):
    x = float(x)
    return x if np.isfinite(x) else None


def runs_of(mask: np.ndarray, t: np.ndarray) -> list[tuple[int, int]]:
    """[start, stop) of the contiguous True stretches of ``mask``, also cut where t has a gap."""
    if mask.size == 0:
        return []
    dt = np.diff(t)
    gap = dt > 1.5 * np.median(dt) if dt.size else np.zeros(0, bool)
    new = np.concatenate([[True], gap | (mask[1:] != mask[:-1])])
    starts = np.flatnonzero(new)
    stops = np.concatenate([starts[1:], [mask.size]])
    return [(int(a), int(b)) for a, b in zip(starts, stops) if mask[a]]


# parameters that are physically positive: an estimate <= 0 says the data do not determine them
POSITIVE = ("FV", "FC", "B", "FVm", "FCm", "KT", "K")
SIGNIFICANCE = 3.0  # |value| / std below this: not distinguishable from zero on these data


def parameter_flags(name: str, value: float, std: float | None) -> dict:
    stem = name.rstrip("0123456789")
    out = {}
    if std is not None and std > 0:
        out["significant"] = bool(abs(value) >= SIGNIFICANCE * std)
    if stem in POSITIVE:
        out["physical"] = bool(value > 0)
    return out


def fit_subsystem(Y: np.ndarray, y: np.ndarray, names: list[str], units: list[str], dof: int = 1) -> dict:
    """Rank and condition of an observation matrix, then its least-squares solution with standard
    deviations (estimators.ols on the per-joint normal equations). ``Y`` is joint-major (dof, N, p)
    or (N, p); ``y`` (N, dof) or (N,).

    The standard deviations treat the residuals as independent. After low-pass filtering they are
    not, and unmodelled effects (friction ripple, a stiffening spring) leave structured residuals,
    so they are lower bounds; each parameter also says whether it is ``significant`` (|value| >=
    3 std) and, for physically positive ones, ``physical`` (> 0)."""
    from .estimators import NormalEquations, ols

    Y = np.asarray(Y, float)
    y = np.asarray(y, float)
    if Y.ndim == 2:
        Y, y = Y[None], y.reshape(-1, 1)
    info = rank_and_cond(Y.reshape(-1, Y.shape[-1]))
    out = {"rows": int(Y.shape[0] * Y.shape[1]), **{k: (finite_or_none(v) if isinstance(v, float) else v) for k, v in info.items()},
           "rule_of_thumb": {"cond_below": COND_RULE_OF_THUMB, "on": "column-scaled cond2 of the observation matrix",
                             "met": bool(info["full_rank"] and info["cond_scaled"] < COND_RULE_OF_THUMB)}}
    if not info["full_rank"]:
        return {**out, "parameters": [], "values": None}
    ne = NormalEquations(Y.shape[0], Y.shape[2])
    ne.add(Y, y)
    est = ols(ne, names)
    enough = out["rows"] > Y.shape[2]
    rms = np.sqrt(ne.joint_rss(est.theta) / np.maximum(ne.rows, 1))
    out.update(parameters=[{"name": nm, "value": float(v), "std": float(s) if enough else None, "unit": u,
                            **parameter_flags(nm, float(v), float(s) if enough else None)}
                           for nm, v, s, u in zip(names, est.theta, est.std, units)],
               values=est.theta, covariance=est.covariance, residual_rms=rms.tolist())
    return out


def public_subsystem(sub: dict) -> dict:
    return {k: v for k, v in sub.items() if k not in ("values", "covariance")}


def as_sampled(log, n: int) -> SampledData:
    """Link and motor channels side by side, so that one processing treats them alike: q = [q, qm],
    tau = [joint torque sensor, drive (current or motor torque)], qd = [qd, qdm] when both were
    measured. Without motor encoder or drive the missing blocks are left out."""
    q, tau = [log.q], [log.tau]
    if log.qm is not None:
        q.append(log.qm)
    drive = log.current if log.current is not None else log.taum
    if drive is not None:
        tau.append(drive)
    elif log.qm is not None:  # SampledData pairs every position with a torque: a placeholder, never read
        tau.append(np.zeros_like(log.qm))
    qd = None
    if log.qd is not None and (log.qm is None or log.qdm is not None):
        qd = np.hstack([log.qd] + ([log.qdm] if log.qm is not None else []))
    return SampledData(log.t, np.hstack(q), np.hstack(tau), qd)


@dataclass
class Channels:
    """Processed signals of one recording, split back into link and motor sides (controller joints)."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    qm: np.ndarray | None  # None: no motor encoder
    qdm: np.ndarray | None
    qddm: np.ndarray | None
    tau: np.ndarray  # joint torque sensor
    drive: np.ndarray | None  # current (A) or motor torque (N.m); None: not recorded
    coulomb: np.ndarray  # sgn(qd) filtered like tau (fit) or sharp (prediction); 0 at rest
    coulomb_m: np.ndarray | None
    theta: np.ndarray | None  # motor position referred to the link side, R^-1 qm

    @classmethod
    def split(cls, d: SampledData, n: int, R: np.ndarray, rest_velocity: float, motor_rest: np.ndarray,
              has_drive: bool = True):
        # Coulomb friction sgn(qd), filtered like the torques (fit) or sharp (prediction), falls
        # linearly to zero below the rest velocity: at rest the model carries no friction (stiction
        # is anywhere in [-Fs, Fs], not modelled), and a resting joint's velocity noise must not
        # flip a full Coulomb torque back and forth
        c = d.coulomb if d.coulomb is not None else np.sign(d.qd)
        link_c = c[:, :n] * np.minimum(1.0, np.abs(d.qd[:, :n]) / rest_velocity)
        motor = d.q.shape[1] > n
        drive = d.tau[:, n:] if has_drive and d.tau.shape[1] > n else None
        if not motor:
            return cls(d.t, d.q, d.qd, d.qdd, None, None, None, d.tau[:, :n], drive, link_c, None, None)
        motor_c = c[:, n:] * np.minimum(1.0, np.abs(d.qd[:, n:]) / motor_rest)
        theta = np.linalg.solve(R, d.q[:, n:].T).T
        return cls(d.t, d.q[:, :n], d.qd[:, :n], d.qdd[:, :n], d.q[:, n:], d.qd[:, n:], d.qdd[:, n:],
                   d.tau[:, :n], drive, link_c, motor_c, theta)

    @property
    def deflection(self) -> np.ndarray:
        return self.theta - self.q


def sweep_segments(ch: Channels, cfg: StepwiseConfig) -> list[dict]:
    """Stretches where one joint moves at constant speed and the others rest."""
    n = ch.q.shape[1]
    rest = np.abs(ch.qd) < cfg.rest_velocity
    found = []
    for j in range(n):
        others = np.all(np.delete(rest, j, axis=1), axis=1) if n > 1 else np.ones(ch.t.size, bool)
        moving = (np.abs(ch.qd[:, j]) > cfg.sweep_min_velocity) & others
        for a, b in runs_of(moving, ch.t):
            v = ch.qd[a:b, j]
            med = float(np.median(v))
            cruise = np.abs(v - med) < cfg.sweep_tolerance * abs(med)
            stretches = runs_of(cruise, ch.t[a:b])
            if not stretches:
                continue
            s0, s1 = max(stretches, key=lambda r: r[1] - r[0])
            if ch.t[a + s1 - 1] - ch.t[a + s0] >= cfg.sweep_min_duration:
                idx = np.arange(a + s0, a + s1)
                found.append({"joint": j, "speed": float(np.median(ch.qd[idx, j])), "index": idx,
                              "low": float(ch.q[idx, j].min()), "high": float(ch.q[idx, j].max()),
                              "t": float(ch.t[idx[0]])})
    return found


def friction_points(ch: Channels, cfg: StepwiseConfig, source: str) -> list[dict]:
    """Pair forward and backward sweeps of equal speed and take half differences at equal positions
    (friction.extract_friction, the constant-velocity experiment's one implementation)."""
    from .friction import extract_friction

    segments = sweep_segments(ch, cfg)
    used, points = set(), []
    for k, f in enumerate(segments):
        if f["speed"] <= 0 or k in used:
            continue
        best = None
        for m, b in enumerate(segments):
            if m in used or b["joint"] != f["joint"] or b["speed"] >= 0:
                continue
            if abs(-b["speed"] - f["speed"]) > cfg.sweep_tolerance * f["speed"]:
                continue
            low, high = max(f["low"], b["low"]), min(f["high"], b["high"])
            if high - low <= 0:
                continue
            if best is None or abs(b["t"] - f["t"]) < abs(segments[best]["t"] - f["t"]):
                best = m
        if best is None:
            continue
        b = segments[best]
        used.update((k, best))
        idx = np.concatenate([f["index"], b["index"]])
        speed = (f["speed"] - b["speed"]) / 2
        low, high = max(f["low"], b["low"]), min(f["high"], b["high"])
        try:
            p = extract_friction(ch.q[idx], ch.qd[idx], ch.tau[idx], f["joint"], speed, low, high,
                                 speed_tolerance=2 * cfg.sweep_tolerance)
        except ValueError:
            continue
        points.append({"joint": f["joint"], "speed": p.measured_speed, "torque": p.torque, "std": p.std,
                       "pairs": p.pairs, "window": [low, high], "t": [f["t"], b["t"]], "recording": source})
    return points


def static_poses(ch: Channels, cfg: StepwiseConfig) -> list[np.ndarray]:
    """Indices of the settled half of every stretch where all joints rest long enough."""
    rest = np.all(np.abs(ch.qd) < cfg.rest_velocity, axis=1)
    poses = []
    for a, b in runs_of(rest, ch.t):
        if ch.t[b - 1] - ch.t[a] >= cfg.rest_min_duration:
            poses.append(np.arange((a + b) // 2, b))
    return poses


def transmission(model: RobotModel, cfg: StepwiseConfig) -> np.ndarray:
    if cfg.reduction is not None:
        if len(cfg.reduction) != model.dof:
            raise ValueError(f"reduction: expected {model.dof} values (one per joint), got {len(cfg.reduction)}")
        return np.diag(np.asarray(cfg.reduction, float))
    return np.asarray(model.transmission.matrix, float)
