"""Stepwise identification (Chen et al. 2021): rank and condition analysis of sub-systems, then the order.

Chen et al. 2021 stack each sub-system's observation matrix over samples (eq. 12) and asks two questions:
is it full rank (can the group be identified on its own?) and is it well conditioned (cond2(Y^T Y) =
cond2(Y)^2, so cond(Y) itself is minimised; rule of thumb cond < 10 after scaling)? Groups that
are rank deficient alone must be identified after (or with) another; groups whose union is badly
conditioned, like the motor and stiffness systems (eqs. 13-16), are identified separately.

Here the groups are columns of a base regressor, classified by what drives them:

- friction : FV, FC columns (velocity-only terms);
- gravity  : base columns that do not vanish at rest (the static regressor W(q, 0, 0));
- inertia  : the remaining inertial columns (zero at rest);
- offset   : FO columns (constant; a torque-sensor zero M0 looks exactly like these).

The proposed order is Chen et al. 2021's: friction -> gravity -> inertia -> offsets, each group estimated on
the data its own experiment isolates, with the groups already known subtracted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from robodyn.robot.model import RobotModel

from .base_params import BaseParameters
from .regressor import gather_joint_major, regressor
from .signals import ProcessingConfig, SampledData, process, process_windows, resolve_processing

ORDER = ("friction", "gravity", "inertia", "offset")
COND_RULE_OF_THUMB = 10.0


def column_groups(model: RobotModel, base: BaseParameters, samples: int = 64, seed: int = 7) -> dict[str, list[int]]:
    """Base-column indices per group (see module doc); gravity columns are found numerically."""
    from .regressor import sample_states

    q, _, _ = sample_states(model, samples, seed=seed)
    zeros = np.zeros_like(q)
    static = regressor(model, q, zeros, zeros, base.spec)[:, base.independent]
    static_norm = np.linalg.norm(static, axis=0)
    groups = {k: [] for k in ORDER}
    for k, name in enumerate(base.names):
        stem = name.rstrip("R").rstrip("0123456789")
        if stem in ("FV", "FC", "FVM", "FCM"):
            groups["friction"].append(k)
        elif stem == "FO":
            groups["offset"].append(k)
        elif static_norm[k] > 1e-9 * max(static_norm.max(), 1e-300):
            groups["gravity"].append(k)
        else:
            groups["inertia"].append(k)
    return {k: v for k, v in groups.items() if v}


def rank_and_cond(Y: np.ndarray, tol: float = 1e-10) -> dict:
    """Rank, cond2(Y) and cond2 after scaling every column to unit norm (unit-free)."""
    Y = np.asarray(Y, float)
    if Y.size == 0:
        return {"columns": 0, "rank": 0, "full_rank": True, "cond": 1.0, "cond_scaled": 1.0}
    s = np.linalg.svd(Y, compute_uv=False)
    rank = int(np.sum(s > tol * s[0])) if s[0] > 0 else 0
    norms = np.linalg.norm(Y, axis=0)
    scaled = Y / np.where(norms > 0, norms, 1.0)
    ss = np.linalg.svd(scaled, compute_uv=False)
    full = rank == Y.shape[1]
    return {"columns": int(Y.shape[1]), "rank": rank, "full_rank": full,
            "cond": float(s[0] / s[-1]) if full else float("inf"),
            "cond_scaled": float(ss[0] / ss[-1]) if full and ss[-1] > 0 else float("inf")}


def subsystem_analysis(Y: np.ndarray, groups: dict[str, Sequence[int]], order: Sequence[str] = ORDER) -> dict:
    """Rank/cond of each group alone, of the groups accumulated in ``order``, and of all together."""
    alone = {g: rank_and_cond(Y[:, cols]) for g, cols in groups.items()}
    cumulative, cols = [], []
    for g in order:
        if g in groups:
            cols = cols + list(groups[g])
            cumulative.append({"groups": [x for x in order if x in groups][:len(cumulative) + 1],
                               **rank_and_cond(Y[:, cols])})
    return {"alone": alone, "cumulative": cumulative}


def propose_order(analysis: dict, order: Sequence[str] = ORDER) -> list[dict]:
    """Chen et al. 2021's order, with each step's justification from the analysis: a group that is rank
    deficient on its own is merged into the next step (it cannot be identified before it)."""
    steps, pending = [], []
    for g in order:
        if g not in analysis["alone"]:
            continue
        info = analysis["alone"][g]
        pending.append(g)
        if info["full_rank"]:
            note = "full rank alone" + ("" if info["cond_scaled"] < COND_RULE_OF_THUMB else
                                         f"; cond {info['cond_scaled']:.3g} > {COND_RULE_OF_THUMB:g}: excite more")
            steps.append({"groups": pending, "reason": note})
            pending = []
    if pending:
        steps.append({"groups": pending, "reason": "rank deficient alone: identified together"})
    return steps


def joint_major_regressor(model: RobotModel, base: BaseParameters, q, qd, qdd) -> np.ndarray:
    """Stacked base regressor, joints as contiguous blocks (n*N, b)."""
    W = regressor(model, q, qd, qdd, base.spec)
    return gather_joint_major(W, model.dof, base.independent).reshape(-1, base.count)


def least_squares(Y: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Solution of min ||Y x - y|| with a rank check (stepwise steps must be identifiable)."""
    info = rank_and_cond(Y)
    if not info["full_rank"]:
        raise ValueError(f"stepwise: sub-system is rank deficient (rank {info['rank']} of {info['columns']})")
    x, *_ = np.linalg.lstsq(Y, y, rcond=None)
    return x


# --------------------------------------------------------------------------- recorded flexible-joint data
#
# identify_recorded runs Chen et al. 2021's order (section 2) on recordings of a flexible-joint arm
# (identification.flexible.FlexibleLog: link and motor encoders, joint torque sensor, motor current):
#
#   1. friction    link side, from constant-speed sweeps found in the recording: at equal positions
#                  forward and backward, half the torque difference cancels gravity, inertia and the
#                  sensor zero (eq. 1's friction terms alone); fitted per joint, [v, 1] [Fv, Fc];
#   2. link        eq. 8 with step 1's friction subtracted: gravity and inertia base parameters
#                  (robodyn's one regressor), each joint's mean removed so the zero M0 does not enter;
#   3. offset      M0 = each joint's mean residual of step 2 (eqs. 6, 11);
#   4. motor       eq. 9 per motor: [qdd_m, qd_m, sgn qd_m] [B, Fv_m, Fc_m] = tau_m - R^-T (tau_s - M0),
#                  with tau_m = k_t i; an unknown k_t joins as a column (-i), the torque sensor fixing
#                  the scale;
#   5. stiffness   eq. 10 per joint: [R^-1 qm - q, 1] [K, c] = tau_s - M0 (c = -K x the encoders' zero
#                  difference).
#
# Motor and stiffness are never stacked (eqs. 13-16); the stacked matrix's condition is reported.
# Every signal goes through the project's one processing (signals.process: one zero-phase low-pass
# for positions and torques alike, gaps never interpolated) with the link and motor channels side by
# side, so the link and drive signals see the same filter.


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


def _num(x):
    x = float(x)
    return x if np.isfinite(x) else None


def _runs(mask: np.ndarray, t: np.ndarray) -> list[tuple[int, int]]:
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


def _flags(name: str, value: float, std: float | None) -> dict:
    stem = name.rstrip("0123456789")
    out = {}
    if std is not None and std > 0:
        out["significant"] = bool(abs(value) >= SIGNIFICANCE * std)
    if stem in POSITIVE:
        out["physical"] = bool(value > 0)
    return out


def _subsystem(Y: np.ndarray, y: np.ndarray, names: list[str], units: list[str], dof: int = 1) -> dict:
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
    out = {"rows": int(Y.shape[0] * Y.shape[1]), **{k: (_num(v) if isinstance(v, float) else v) for k, v in info.items()},
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
                            **_flags(nm, float(v), float(s) if enough else None)}
                           for nm, v, s, u in zip(names, est.theta, est.std, units)],
               values=est.theta, covariance=est.covariance, residual_rms=rms.tolist())
    return out


def _public(sub: dict) -> dict:
    return {k: v for k, v in sub.items() if k not in ("values", "covariance")}


def _as_sampled(log, n: int) -> SampledData:
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
class _Channels:
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


def _sweep_segments(ch: _Channels, cfg: StepwiseConfig) -> list[dict]:
    """Stretches where one joint moves at constant speed and the others rest."""
    n = ch.q.shape[1]
    rest = np.abs(ch.qd) < cfg.rest_velocity
    found = []
    for j in range(n):
        others = np.all(np.delete(rest, j, axis=1), axis=1) if n > 1 else np.ones(ch.t.size, bool)
        moving = (np.abs(ch.qd[:, j]) > cfg.sweep_min_velocity) & others
        for a, b in _runs(moving, ch.t):
            v = ch.qd[a:b, j]
            med = float(np.median(v))
            cruise = np.abs(v - med) < cfg.sweep_tolerance * abs(med)
            stretches = _runs(cruise, ch.t[a:b])
            if not stretches:
                continue
            s0, s1 = max(stretches, key=lambda r: r[1] - r[0])
            if ch.t[a + s1 - 1] - ch.t[a + s0] >= cfg.sweep_min_duration:
                idx = np.arange(a + s0, a + s1)
                found.append({"joint": j, "speed": float(np.median(ch.qd[idx, j])), "index": idx,
                              "low": float(ch.q[idx, j].min()), "high": float(ch.q[idx, j].max()),
                              "t": float(ch.t[idx[0]])})
    return found


def _friction_points(ch: _Channels, cfg: StepwiseConfig, source: str) -> list[dict]:
    """Pair forward and backward sweeps of equal speed and take half differences at equal positions
    (friction.extract_friction, the constant-velocity experiment's one implementation)."""
    from .friction import extract_friction

    segments = _sweep_segments(ch, cfg)
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


def _static_poses(ch: _Channels, cfg: StepwiseConfig) -> list[np.ndarray]:
    """Indices of the settled half of every stretch where all joints rest long enough."""
    rest = np.all(np.abs(ch.qd) < cfg.rest_velocity, axis=1)
    poses = []
    for a, b in _runs(rest, ch.t):
        if ch.t[b - 1] - ch.t[a] >= cfg.rest_min_duration:
            poses.append(np.arange((a + b) // 2, b))
    return poses


def _transmission(model: RobotModel, cfg: StepwiseConfig) -> np.ndarray:
    if cfg.reduction is not None:
        if len(cfg.reduction) != model.dof:
            raise ValueError(f"reduction: expected {model.dof} values (one per joint), got {len(cfg.reduction)}")
        return np.diag(np.asarray(cfg.reduction, float))
    return np.asarray(model.transmission.matrix, float)


def identify_recorded(model: RobotModel, recordings, config=None) -> dict:
    """Chen et al. 2021's stepwise identification on recordings of a flexible-joint arm.

    ``recordings``: paths (.csv, .npz, .mcap; the format is identification.data.FLEXIBLE_COLUMNS)
    or :class:`.data.FlexibleLog` objects. The first ``config.identify`` (default 1) identify; any others are held out and the
    identified model is validated on them against what the sensors measured (joint torque sensor,
    motor current). ``config``: a :class:`StepwiseConfig` or a dict of its fields.

    Returns a JSON-ready document: the order, each sub-system's rank, condition number (the paper's
    rule of thumb cond < 10 is reported, not enforced), parameters with standard deviations and
    residuals, and the held-out validation.
    """
    from robodyn.papers import cite

    from .data import load_flexible

    cfg = StepwiseConfig.from_any(config)
    n = model.dof
    if isinstance(recordings, (str, bytes)) or not hasattr(recordings, "__len__"):
        recordings = [recordings]
    if not recordings:
        raise ValueError("recordings: need at least one flexible-joint recording")
    logs = [load_flexible(r, model) for r in recordings]
    if cfg.identify > len(logs):
        raise ValueError(f"identify: {cfg.identify} identification recordings requested, {len(logs)} given")
    kinds = {log.drive for log in logs}
    if len(kinds) > 1:
        raise ValueError(f"recordings: the drive side differs between recordings ({sorted(map(str, kinds))}: "
                         "motor current, motor torque or none); use one kind for all")
    drive = kinds.pop()
    encoders = {log.qm is not None for log in logs}
    if len(encoders) > 1:
        raise ValueError("recordings: some have motor positions (qm or theta columns) and others not; use one kind "
                         "for all")
    has_motor = encoders.pop()
    if drive is not None and not has_motor:
        raise ValueError(f"{logs[0].source}: a drive signal ({drive}) but no motor positions: the motor sub-system "
                         "(eq. 9) needs the motor encoder (columns qm1.. or theta1..)")
    kt = None if cfg.torque_constant is None else np.asarray(cfg.torque_constant, float)
    if kt is not None and kt.size != n:
        raise ValueError(f"torque_constant: expected {n} values (N.m/A per motor), got {kt.size}")
    R = _transmission(model, cfg)
    Rinv = np.linalg.inv(R)
    # the motors' rest velocity (their Coulomb term's linear zone) is the link's through the reduction;
    # the motor fit may ask for faster samples (motor_min_velocity), away from the Stribeck region
    motor_rest = cfg.rest_velocity * np.abs(np.diag(R))
    motor_fit_min = motor_rest if cfg.motor_min_velocity is None else np.full(n, float(cfg.motor_min_velocity))
    jm = model.joint_map
    ident, held = logs[:cfg.identify], logs[cfg.identify:]

    raw = [_as_sampled(log, n) for log in ident]
    # an automatic cut-off is chosen on the link channels: the motor encoder, N times finer per link
    # radian, meets its noise far higher and would set a cut-off where the link acceleration is noise
    processing = resolve_processing(cfg.processing, [SampledData(log.t, log.q, log.tau, log.qd) for log in ident])
    channels, steps = [], None
    for log, r in zip(ident, raw):
        p = process(r, processing)
        steps = steps or p.steps
        channels.append((log.source, _Channels.split(p.data, n, R, cfg.rest_velocity, motor_rest,
                                                        drive is not None)))
    cat = lambda name: np.concatenate([getattr(c, name) for _, c in channels])  # noqa: E731
    q, qd, qdd, tau, coul = cat("q"), cat("qd"), cat("qdd"), cat("tau"), cat("coulomb")
    names_j = list(model.joint_names)
    notes = []

    # ---- 1. friction (link side) from constant-speed sweeps
    points = [p for src, ch in channels for p in _friction_points(ch, cfg, src)]
    friction = {"source": "constant-speed sweeps found in the recording(s): half differences of the joint torque "
                          "sensor at equal positions", "points": points, "per_joint": []}
    fv, fc = np.zeros(n), np.zeros(n)
    merged = []
    for j in range(n):
        pts = [p for p in points if p["joint"] == j]
        speeds = np.array([p["speed"] for p in pts])
        if len(pts) < 2 or np.ptp(speeds) < 0.2 * speeds.max():
            merged.append(j)
            friction["per_joint"].append({"joint": names_j[j], "identified": False,
                                          "reason": f"{len(pts)} sweep speed(s) found; at least 2 distinct speeds "
                                                    "are needed to separate viscous from Coulomb friction, so this "
                                                    "joint's friction is identified with the link (step 2)"})
            continue
        sub = _subsystem(np.column_stack([speeds, np.ones_like(speeds)]), np.array([p["torque"] for p in pts]),
                         [f"FV{j + 1}", f"FC{j + 1}"], ["N.m.s/rad", "N.m"])
        fv[j], fc[j] = sub["values"]
        friction["per_joint"].append({"joint": names_j[j], "identified": True, "columns": ["qd", "sgn(qd)"],
                                      **_public(sub)})
    if merged:
        notes.append(f"friction of joint(s) {[names_j[j] for j in merged]} identified with the link sub-system: "
                     "too few constant-speed sweeps (Chen et al. 2021 identify friction first, alone)")

    # ---- 2. link: gravity and inertia (eq. 8), friction subtracted, the sensor zero projected out
    from .base_params import base_parameters
    from .regressor import ColumnSpec

    base = base_parameters(model, ColumnSpec())
    groups = column_groups(model, base)
    qm_, qdm_, qddm_ = jm.to_model(q), jm.velocity_to_model(qd), jm.velocity_to_model(qdd)
    target = jm.torque_to_model(tau - (fv * qd + fc * coul))  # controller joints' friction, in model torques
    N = q.shape[0]
    W = joint_major_regressor(model, base, qm_, qdm_, qddm_).reshape(n, N, base.count)
    cols, names, units = [W], list(base.names), ["SI"] * base.count
    inv_map = jm.inverse_matrix
    for j in merged:  # friction of controller joint j acts on model torques through the joint map
        cols.append(np.stack([np.outer(inv_map[j], qd[:, j]), np.outer(inv_map[j], coul[:, j])], axis=-1))
        names += [f"FV{j + 1}", f"FC{j + 1}"]
        units += ["N.m.s/rad", "N.m"]
    Y = np.concatenate(cols, axis=-1)
    Y_mean, y_mean = Y.mean(axis=1, keepdims=True), target.mean(axis=0)
    Yc, yc = Y - Y_mean, target - y_mean
    link = _subsystem(Yc, yc, names, units, dof=n)
    if not link["full_rank"]:
        raise ValueError(f"stepwise: the link sub-system (eq. 8) is rank deficient on these recordings (rank "
                         f"{link['rank']} of {link['columns']}); the excitation does not move the arm enough to "
                         "separate its gravity and inertia parameters")
    p_link = link["values"]
    for j, k in zip(merged, range(base.count, len(names), 2)):
        fv[j], fc[j] = p_link[k], p_link[k + 1]
    link["groups"] = {g: _public({k: (_num(v) if isinstance(v, float) else v)
                                  for k, v in rank_and_cond(Yc.reshape(-1, Y.shape[-1])[:, idx]).items()})
                      for g, idx in groups.items() if g in ("gravity", "inertia")}
    link["expressions"] = dict(zip(base.names, base.expressions()))
    E = np.zeros((n, N, n))
    for j in range(n):
        E[:, :, j] = inv_map[j][:, None]
    with_offset = rank_and_cond(np.concatenate([Y, E], axis=-1).reshape(-1, Y.shape[-1] + n))
    link["with_offset_columns"] = {k: (_num(v) if isinstance(v, float) else v) for k, v in with_offset.items()}

    # ---- 3. offset: M0 = the mean residual (in the sensor's joints)
    resid_mean = y_mean - (Y_mean[:, 0, :] * p_link).sum(axis=1)  # model torques
    M0 = jm.torque_to_controller(resid_mean)
    w_bar = Y_mean[:, 0, :]
    sigma = np.sqrt(np.asarray(link["residual_rms"]) ** 2 * N / max(N - 1, 1))
    var_model = sigma**2 / N + np.einsum("ip,pq,iq->i", w_bar, link["covariance"], w_bar)
    std_M0 = np.sqrt(np.abs(jm.matrix.T) ** 2 @ var_model)
    offset = {"equation": "eqs. 6 and 11: the joint torque sensor's zero", "parameters": [
        {"name": f"M0_{j + 1}", "value": float(M0[j]), "std": float(std_M0[j]), "unit": "N.m"} for j in range(n)]}
    poses = [ch.q[idx].mean(axis=0) for _, ch in channels for idx in _static_poses(ch, cfg)]
    if poses:  # eq. 11 at rest: [Y_g, E] on the static poses (Chen et al. 2021 analyse its rank)
        qs = np.array(poses)
        Yg = joint_major_regressor(model, base, jm.to_model(qs), np.zeros_like(qs), np.zeros_like(qs))
        Yg = Yg.reshape(n, len(poses), base.count)[:, :, groups.get("gravity", [])]
        Eg = np.zeros((n, len(poses), n))
        for j in range(n):
            Eg[:, :, j] = inv_map[j][:, None]
        info = rank_and_cond(np.concatenate([Yg, Eg], axis=-1).reshape(n * len(poses), -1))
        offset["static_poses"] = {"poses": len(poses), "gravity_and_offset": {
            k: (_num(v) if isinstance(v, float) else v) for k, v in info.items()}}
    else:
        offset["static_poses"] = {"poses": 0}

    # ---- 4. motor (eq. 9) and 5. stiffness (eq. 10), per motor / joint, never stacked
    motor_parts, stiff_parts, stacked = [], [], []
    joint_tau = tau - M0
    load = joint_tau @ Rinv  # R^-T tau, per motor
    if has_motor:
        qdmot, qddmot, coul_m, defl = cat("qdm"), cat("qddm"), cat("coulomb_m"), cat("theta") - q
    dr = cat("drive") if drive is not None else None
    motor_values = np.full((n, 4), np.nan)
    for k in range(n if drive is not None else 0):
        moving = np.abs(qdmot[:, k]) >= motor_fit_min[k]
        if moving.sum() < 10:
            raise ValueError(f"stepwise: motor {k + 1} hardly moves (|qdm| >= {motor_fit_min[k]:.3g} rad/s in "
                             f"{int(moving.sum())} samples); its sub-system (eq. 9) cannot be identified")
        cols_m = [qddmot[moving, k], qdmot[moving, k], coul_m[moving, k]]
        nm = [f"B{k + 1}", f"FVm{k + 1}", f"FCm{k + 1}"]
        un = ["kg.m^2", "N.m.s/rad", "N.m"]
        if drive == "taum":
            y = dr[moving, k] - load[moving, k]
        elif kt is not None:
            y = kt[k] * dr[moving, k] - load[moving, k]
        else:
            cols_m.append(-dr[moving, k])
            nm.append(f"KT{k + 1}")
            un.append("N.m/A")
            y = -load[moving, k]
        sub = _subsystem(np.column_stack(cols_m), y, nm, un)
        if not sub["full_rank"]:
            raise ValueError(f"stepwise: the motor sub-system (eq. 9) of motor {k + 1} is rank deficient (rank "
                             f"{sub['rank']} of {sub['columns']})")
        motor_values[k, :len(nm)] = sub["values"]
        if not (drive == "current" and kt is None):
            motor_values[k, 3] = np.nan if drive == "taum" else kt[k]
        motor_parts.append({"motor": k + 1, "columns": ["qdd_m", "qd_m", "sgn(qd_m)"] + (["-current"] if len(nm) == 4
                                                                                          else []),
                            "samples_moving": int(moving.sum()), **_public(sub)})
        # eq. 14: [Y_m, R^-T Y_k] [p_m, p_k] = tau_m -- reported, never solved (eqs. 13-16)
        # (the spring torque of every joint this motor drives: K_j (R^-T)_kj d_j)
        springs = [defl[moving, j] * Rinv[j, k] for j in range(n) if Rinv[j, k] != 0]
        info = rank_and_cond(np.column_stack(cols_m[:3] + springs))
        stacked.append({"motor": k + 1, **{key: (_num(v) if isinstance(v, float) else v) for key, v in info.items()}})
    for j in range(n if has_motor else 0):
        cols_k = [defl[:, j]] + ([np.ones(N)] if cfg.encoder_offset else [])
        sub = _subsystem(np.column_stack(cols_k), joint_tau[:, j], [f"K{j + 1}"] + (["c%d" % (j + 1)] if
                                                                                   cfg.encoder_offset else []),
                         ["N.m/rad", "N.m"][:len(cols_k)])
        if not sub["full_rank"]:
            raise ValueError(f"stepwise: the stiffness sub-system (eq. 10) of joint {j + 1} is rank deficient")
        K, c = sub["values"][0], (sub["values"][1] if cfg.encoder_offset else 0.0)
        part = {"joint": names_j[j], "columns": ["R^-1 qm - q"] + (["1"] if cfg.encoder_offset else []),
                **_public(sub)}
        if cfg.encoder_offset:
            part["encoder_offset"] = {"value": float(-c / K), "unit": "rad",
                                      "meaning": "motor encoder zero (referred to the link) minus link encoder zero"}
        part["deflection_range"] = [float(defl[:, j].min() - (-c / K)), float(defl[:, j].max() - (-c / K))]
        stiff_parts.append(part)

    listed = lambda v: [_num(x) for x in v]  # noqa: E731  (NaN: not identified -> null)
    model_doc = {
        "link_friction": {"viscous": fv.tolist(), "coulomb": fc.tolist()},
        "base_parameters": dict(zip(base.names, (float(v) for v in p_link[:base.count]))),
        "sensor_offset": M0.tolist(),
        "motor_inertia": listed(motor_values[:, 0]) if motor_parts else None,
        "motor_viscous": listed(motor_values[:, 1]) if motor_parts else None,
        "motor_coulomb": listed(motor_values[:, 2]) if motor_parts else None,
        "torque_constant": listed(motor_values[:, 3]) if drive == "current" else None,
        "stiffness": [p["parameters"][0]["value"] for p in stiff_parts] if stiff_parts else None,
        "encoder_offset": [p.get("encoder_offset", {}).get("value", 0.0) for p in stiff_parts] if stiff_parts else None,
    }
    skipped_motor = (None if motor_parts else "no drive signal (current1.. or taum1..) in the recordings" if has_motor
                     else "no motor encoder (qm1.. or theta1..) in the recordings")
    skipped_stiffness = None if stiff_parts else "no motor encoder (qm1.. or theta1..) in the recordings"
    order = [
        {"step": 1, "subsystem": "friction", "what": "link friction, alone, from forward/backward sweeps",
         "merged_into_link": [names_j[j] for j in merged]},
        {"step": 2, "subsystem": "link", "what": "gravity and inertia (eq. 8), friction subtracted, each joint's "
                                                 "mean removed so the sensor zero does not enter"},
        {"step": 3, "subsystem": "offset", "what": "sensor zero M0 = mean residual of step 2"},
        {"step": 4, "subsystem": "motor", "what": "eq. 9 per motor with tau = tau_sensor - M0",
         **({"skipped": skipped_motor} if skipped_motor else {})},
        {"step": 5, "subsystem": "stiffness", "what": "eq. 10 per joint with tau = tau_sensor - M0, separately "
                                                      "from the motor (eqs. 13-16)",
         **({"skipped": skipped_stiffness} if skipped_stiffness else {})},
    ]
    table = [{"step": 1, "subsystem": "friction", "unit": pj["joint"],
              **{k: pj.get(k) for k in ("rows", "columns", "rank", "cond", "cond_scaled")}}
             for pj in friction["per_joint"] if pj["identified"]]
    table.append({"step": 2, "subsystem": "link", "unit": "all joints",
                  **{k: link.get(k) for k in ("rows", "columns", "rank", "cond", "cond_scaled")}})
    table.append({"step": 3, "subsystem": "offset (static poses: [Y_g, E])", "unit": "all joints",
                  **{k: offset["static_poses"].get("gravity_and_offset", {}).get(k)
                     for k in ("columns", "rank", "cond", "cond_scaled")}})
    table += [{"step": 4, "subsystem": "motor", "unit": f"motor {pm['motor']}",
               **{k: pm.get(k) for k in ("rows", "columns", "rank", "cond", "cond_scaled")}} for pm in motor_parts]
    table += [{"step": 5, "subsystem": "stiffness", "unit": ps["joint"],
               **{k: ps.get(k) for k in ("rows", "columns", "rank", "cond", "cond_scaled")}} for ps in stiff_parts]
    table += [{"step": "-", "subsystem": "motor + stiffness stacked (eq. 14, not solved)", "unit": f"motor {st['motor']}",
               **{k: st.get(k) for k in ("columns", "rank", "cond", "cond_scaled")}} for st in stacked]
    parameters = [dict(p, subsystem=sub) for sub, parts in
                  (("friction", [pj for pj in friction["per_joint"] if pj["identified"]]), ("link", [link]),
                   ("offset", [offset]), ("motor", motor_parts), ("stiffness", stiff_parts))
                  for part in parts for p in part.get("parameters", [])]
    doc = {
        "format": RESULT_FORMAT, "version": RESULT_VERSION, "method": "stepwise", "reference": cite("stepwise"),
        "robot": model.name, "joints": names_j,
        "recordings": {"identification": [log.source for log in ident], "held_out": [log.source for log in held]},
        "drive": drive, "motor_encoder": has_motor,
        "torque_constant_source": ("given" if kt is not None else
                                   ("identified (motor sub-system)" if drive == "current" else None)),
        "transmission": R.tolist(), "config": cfg.to_dict(), "processing": processing.to_dict(),
        "processing_steps": steps,
        "segments": {"sweep_pairs": len(points), "static_poses": len(poses), "samples": int(N)},
        "order": order, "subsystem_table": table, "parameters": parameters,
        "subsystems": {"friction": friction, "link": _public(link), "offset": offset,
                       "motor": {"equation": "eq. 9", "per_motor": motor_parts},
                       "stiffness": {"equation": "eq. 10", "per_joint": stiff_parts},
                       "motor_and_stiffness_stacked": {"equation": "eq. 14 (reported, never solved)",
                                                       "per_motor": stacked}},
        "model": model_doc, "notes": notes,
    }
    fitted = _FlexibleModel(model, base, p_link[:base.count], fv, fc, M0, motor_values if motor_parts else None, R,
                            drive, np.array(model_doc["stiffness"]) if stiff_parts else None,
                            np.array(model_doc["encoder_offset"]) if stiff_parts else None)
    doc["validation"] = [fitted.validate(log, processing, cfg, motor_rest) for log in held]
    return doc


@dataclass
class _FlexibleModel:
    """The identified flexible-joint model, as predictions of what the sensors measure."""

    model: RobotModel
    base: BaseParameters
    theta: np.ndarray
    fv: np.ndarray
    fc: np.ndarray
    M0: np.ndarray
    motor: np.ndarray | None  # (n, 4): B, Fv_m, Fc_m, k_t per motor; None: motor not identified
    R: np.ndarray
    drive: str | None
    K: np.ndarray | None  # None: stiffness not identified (no motor encoder)
    encoder_offset: np.ndarray | None

    def sensor_from_link(self, ch: _Channels) -> np.ndarray:
        """Joint torque sensor predicted by the link model (eq. 8 + friction + M0)."""
        jm, n, N = self.model.joint_map, self.model.dof, ch.t.size
        W = joint_major_regressor(self.model, self.base, jm.to_model(ch.q), jm.velocity_to_model(ch.qd),
                                  jm.velocity_to_model(ch.qdd))
        tau = jm.torque_to_controller((W @ self.theta).reshape(n, N).T)
        return tau + self.fv * ch.qd + self.fc * ch.coulomb + self.M0

    def sensor_from_spring(self, ch: _Channels) -> np.ndarray:
        """Joint torque sensor predicted by the spring (eq. 10) from the two encoders."""
        return self.K * (ch.deflection - self.encoder_offset) + self.M0

    def drive_from(self, ch: _Channels, joint_tau: np.ndarray) -> np.ndarray:
        """Motor current (or motor torque) by eq. 9 for a given joint (spring) torque."""
        B, fv, fc, kt = self.motor.T
        taum = B * ch.qddm + fv * ch.qdm + fc * ch.coulomb_m + joint_tau @ np.linalg.inv(self.R)
        return taum if self.drive == "taum" else taum / kt

    def validate(self, log, processing: ProcessingConfig, cfg: StepwiseConfig, motor_rest: np.ndarray) -> dict:
        """Predictions on a held-out recording against what its sensors measured, at the measured
        samples (samples in gaps or dropped edges have no prediction and are left out)."""
        from .pipeline import TorqueMetrics

        n = self.model.dof
        raw = _as_sampled(log, n)
        measured_drive = log.current if self.drive == "current" else log.taum
        keys = ["sensor_link"] + (["sensor_spring"] if self.K is not None else []) + (
            ["drive_sensor", "drive_link"] if self.motor is not None else [])
        acc = {k: TorqueMetrics(n) for k in keys}
        samples = 0
        for piece in process_windows(raw, processing, purpose="predict"):
            d = piece.data
            lo = int(np.searchsorted(raw.t, d.t[0] - 1e-9, side="left"))
            hi = int(np.searchsorted(raw.t, d.t[-1] + 1e-9, side="right"))
            t = raw.t[lo:hi]
            same_grid = t.shape[0] == d.count and np.array_equal(t, d.t)
            ch = _Channels.split(d, n, self.R, cfg.rest_velocity, motor_rest, self.drive is not None)
            link = self.sensor_from_link(ch)
            preds = {"sensor_link": link}
            if self.K is not None:
                preds["sensor_spring"] = self.sensor_from_spring(ch)
            if self.motor is not None:
                preds["drive_sensor"] = self.drive_from(ch, ch.tau - self.M0)
                preds["drive_link"] = self.drive_from(ch, link - self.M0)
            for key, pred in preds.items():
                if not same_grid:
                    pred = np.stack([np.interp(t, d.t, pred[:, j]) for j in range(n)], axis=1)
                acc[key].add(log.tau[lo:hi] if key.startswith("sensor") else measured_drive[lo:hi], pred)
            samples += t.size
        names = list(self.model.joint_names)
        unit = "A" if self.drive == "current" else "N.m"
        what = "motor current" if self.drive == "current" else "motor torque"
        out = {"recording": log.source, "samples": samples, "against": "the measured signals, at the measured samples",
               "joint_torque_sensor": {"unit": "N.m", "from_link_model": {
                   "predicted_by": "eq. 8 link model + friction + M0 (steps 1-3)", **acc["sensor_link"].result(names)}}}
        if "sensor_spring" in acc:
            out["joint_torque_sensor"]["from_spring"] = {
                "predicted_by": "eq. 10 spring from the motor and link encoders + M0 (step 5)",
                **acc["sensor_spring"].result(names)}
        if "drive_sensor" in acc:
            out["motor"] = {
                "signal": what, "unit": unit,
                "from_measured_joint_torque": {"predicted_by": "eq. 9 motor model driven by the measured joint "
                                                               "torque - M0 (step 4)",
                                               **acc["drive_sensor"].result(names)},
                "from_link_model": {"predicted_by": "eq. 9 driven by the link model's torque (steps 1-4 chained)",
                                    **acc["drive_link"].result(names)}}
        return out
