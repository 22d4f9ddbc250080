"""Joint friction identified: friction columns with the dynamics, the Ni et al. 2024 constant-velocity
experiment, extraction and fitting. The laws themselves (evaluation, :class:`FrictionModel`) live in
the core, :mod:`robodyn.robot.friction`, shared with the simulated plant.

The experiment (Ni et al. 2024 §2.1): one joint at a time moves at constant speed forward, then
backward over the same angle range; at an equal position gravity and inertia are equal in both
directions, so tau_f(v) = (tau(q, +v) - tau(q, -v)) / 2. The (v, tau_f) points are fitted by
Nelder-Mead on J = sum (tau_f - F(v))^2 (Ni et al. 2024 eq. 6).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np
import scipy.optimize

from robodyn.robot.friction import DEFAULT_LINEAR_ZONE, DEFAULT_SIGMOID_VELOCITY, MODELS, FrictionModel, sigmoid, stribeck

from .names import EXPERIMENT_HALF_WIDTH, EXPERIMENT_SPEEDS  # noqa: F401  (re-exported)

# Nelder-Mead of the Stribeck fit starts from this many values of vs spread over the measured speeds
# (the paper states no start; the valley is narrow in vs), the best kept
STRIBECK_STARTS = 8
# Ni et al. 2024 §4.1: 37 speeds, rad/s
FRICTION_SWEEP_SPEEDS = (0.001, 0.005, 0.01, 0.012, 0.014, 0.016, 0.018, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07,
                         0.08, 0.09, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.23, 0.26, 0.29, 0.32, 0.36, 0.4, 0.45, 0.5, 0.56,
                         0.62, 0.7, 0.8, 1.0, 1.2, 1.5, 1.8)




# --------------------------------------------------------------------------- identified with the dynamics

SCALE_GRID = (0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)  # rad/s, velocity scales tried per joint


@dataclass
class FrictionColumns:
    """Friction identified together with the inertial parameters, linear in its coefficients once
    each joint's velocity scale is fixed:

    - ``coulomb-viscous``: fc sgn(qd) + fv qd + fo
    - ``sigmoid``: fc tanh(qd / vt_j) + fv qd + fo
    - ``stribeck``: fc sgn(qd) + (fs - fc) sgn(qd) exp(-(qd / vs_j)^2) + fv qd + fo

    ``coulomb`` is the signal of the regressor's Coulomb column; ``extra`` the Stribeck excess
    column (one per joint, nonzero in its own joint's row only). The scales (vt or vs per joint)
    are chosen from the data by :func:`choose_friction_scales` unless given.
    """

    kind: str = "coulomb-viscous"
    scale: np.ndarray | None = None

    def __post_init__(self):
        if self.kind not in MODELS:
            raise ValueError(f"friction: unknown model {self.kind!r}; expected one of {list(MODELS)}")
        if self.kind != "coulomb-viscous":
            if self.scale is None:
                raise ValueError(f"friction: the {self.kind} columns need a velocity scale per joint")
            self.scale = np.asarray(self.scale, float)
            if not np.all(self.scale > 0):
                raise ValueError(f"friction scale: every joint's velocity scale must be > 0 rad/s, got {self.scale}")

    def coulomb(self, qd: np.ndarray) -> np.ndarray:
        if self.kind == "sigmoid":
            return np.tanh(qd / self.scale)
        return np.sign(qd)

    def extra(self, qd: np.ndarray) -> np.ndarray | None:
        if self.kind != "stribeck":
            return None
        return np.sign(qd) * np.exp(-np.square(qd / self.scale))

    def extra_names(self, dof: int) -> list[str]:
        return [f"FSX{j + 1}" for j in range(dof)] if self.kind == "stribeck" else []

    def extra_expressions(self, dof: int) -> list[str]:
        return [f"fs{j + 1} - fc{j + 1} (Stribeck excess, vs = {self.scale[j]:.4g} rad/s)"
                for j in range(dof)] if self.kind == "stribeck" else []

    def to_dict(self) -> dict:
        return {"kind": self.kind, "scale": None if self.scale is None else self.scale.tolist(),
                "scale_meaning": {"sigmoid": "vt of tanh(qd / vt), rad/s", "stribeck": "vs of exp(-(qd / vs)^2), rad/s",
                                  "coulomb-viscous": None}[self.kind]}

    @classmethod
    def from_dict(cls, d: dict | None) -> "FrictionColumns":
        if not d:
            return cls()
        return cls(d["kind"], d.get("scale"))


def choose_friction_scales(kind: str, qd: np.ndarray, residual: np.ndarray, grid=SCALE_GRID,
                           shapes: dict | None = None) -> np.ndarray:
    """Per joint, the velocity scale from ``grid`` whose friction shape best explains what a
    Coulomb-viscous fit left unexplained (``residual``, the same samples as ``qd``): for each
    candidate, that joint's friction columns are refitted to residual + its Coulomb-viscous part by
    least squares, and the scale with the smallest residual wins. Cheap and only a choice of shape:
    the final coefficients come from the full identification with the chosen scales. ``shapes``, a
    dict the caller keeps while it asks again for the same velocities (model selection, for both
    rotor-inertia settings of a fold), keeps what depends on the velocities alone."""
    if kind not in ("sigmoid", "stribeck"):
        raise ValueError(f"friction scales: only sigmoid and stribeck have one, not {kind!r}")
    scales = np.empty(qd.shape[1])
    grid = np.asarray(grid, float)
    for j in range(qd.shape[1]):
        U, h_off, norms, adds = _shape_basis(kind, qd[:, j], grid, {} if shapes is None else shapes)
        r = residual[:, j]
        r_off = r - U @ (U.T @ r)
        explained = np.square(h_off.T @ r_off)
        with np.errstate(divide="ignore", invalid="ignore"):
            rss = float(r_off @ r_off) - np.where(adds, explained / norms, 0.0)
        scales[j] = grid[int(np.argmin(rss))]  # the first of equals, as the loop over the grid kept
    return scales


def _shape_basis(kind: str, v: np.ndarray, grid: np.ndarray, kept: dict) -> tuple:
    """What the scale search needs of one joint's velocity alone (not of the residual), kept in
    ``kept`` by content: model selection asks it for both rotor-inertia settings of a fold, whose
    residuals differ and whose velocities do not. The Coulomb-viscous columns may readjust; the candidate column carries the
    shape. Every candidate shares them, so they are projected out once (an orthonormal basis U of
    their span, rank-truncated as lstsq truncates: a joint moving one way only makes sgn(qd) the
    ones column) and each candidate's least squares is the one column left: its residual sum of
    squares |r'|^2 - (h'.r')^2 / |h'|^2, with r' and h' the residual and the shape off that span.
    Returns U, the shapes off the span h', their squared norms and which of them add anything. The
    span depends on the velocity alone, so the sigmoid and Stribeck searches of one velocity share it."""
    v = np.ascontiguousarray(v, dtype=float)
    content = (hashlib.blake2b(v.tobytes(), digest_size=16).digest(), v.shape[0])
    key = (kind, *content, grid.tobytes())
    hit = kept.get(key)
    if hit is not None:
        return hit
    span = kept.get(("span", *content))
    if span is None:
        refit = np.column_stack([np.sign(v), v, np.ones_like(v)])
        U, sv, _ = np.linalg.svd(refit, full_matrices=False)
        U = U[:, sv > sv[0] * np.finfo(float).eps * max(refit.shape)] if sv[0] > 0 else U[:, :0]
        span = kept[("span", *content)] = (U, sv, refit.shape)
    U, sv, refit_shape = span
    # tanh(v / vt) or sgn(v) exp(-(v / vs)^2), computed in place: each (samples, grid) temporary of
    # a long fold is fresh memory whose first touch cost more than the arithmetic
    shapes = np.divide(v[:, None], grid)
    if kind == "sigmoid":
        np.tanh(shapes, out=shapes)
    else:
        np.square(shapes, out=shapes)
        np.negative(shapes, out=shapes)
        np.exp(shapes, out=shapes)
        np.multiply(np.sign(v)[:, None], shapes, out=shapes)
    h_off = U @ (U.T @ shapes)
    np.subtract(shapes, h_off, out=h_off)
    norms = np.einsum("ng,ng->g", h_off, h_off)
    # a shape within rounding of that span (tanh(qd / vt) = sgn(qd) to the last bit on a joint that
    # is always fast) adds nothing, as lstsq's cut-off of its singular values decides: what is left
    # of it is rounding, and projecting on it would fit noise
    largest = np.maximum(sv[0], np.sqrt(np.einsum("ng,ng->g", shapes, shapes)))
    adds = norms > np.square(np.finfo(float).eps * max(refit_shape[0], 4) * largest)
    kept[key] = (U, h_off, norms, adds)
    return kept[key]


# --------------------------------------------------------------------------- experiment


def sweep_plan(model, q_hold, joint: int, low: float, high: float, speeds=FRICTION_SWEEP_SPEEDS, scale: float = 0.5,
               settle: float = 0.3):
    """The Ni et al. 2024 experiment for one joint: one :class:`SweepTrajectory` per speed, all over the
    same angle window [low, high], ramps within ``scale`` of the joint's acceleration/jerk limits,
    and ``settle`` seconds at constant speed before the window (the joint impedance needs about
    0.2 s to settle from a ramp; inside that transient the torque is not yet friction alone)."""
    from robodyn.trajectory import SweepTrajectory

    if not 0 <= joint < model.dof:
        raise ValueError(f"joint: must be 0..{model.dof - 1}, got {joint}")
    speeds = [float(v) for v in speeds]
    too_fast = [v for v in speeds if v > model.qd_max[joint]]
    if too_fast:
        raise ValueError(f"speeds: {too_fast} exceed joint {joint + 1}'s velocity limit {model.qd_max[joint]} rad/s")
    sweeps = [SweepTrajectory.within_limits(q_hold, joint, low, high, v, model.qdd_max[joint], model.qddd_max[joint],
                                            scale, settle=settle) for v in speeds]
    lo_limit, hi_limit = float(model.q_min[joint]), float(model.q_max[joint])
    for sw in sweeps:
        first, last = sweep_extent(sw)
        if first < lo_limit or last > hi_limit:
            raise ValueError(f"speeds: {sw.speed} rad/s over [{low:.4f}, {high:.4f}] rad runs joint {joint + 1} over "
                             f"[{first:.4f}, {last:.4f}] rad (run-up and run-out), outside its limits "
                             f"[{lo_limit:.4f}, {hi_limit:.4f}]; move the window (window_within_limits) or drop the speed")
    return sweeps


def sweep_extent(sweep) -> tuple[float, float]:
    """The lowest and highest position a sweep reaches: its window widened on each side by the
    run-up (the ramp to speed and the settling time at speed) and, symmetrically, the run-out."""
    run = sweep.low - sweep.start_position
    return sweep.start_position, sweep.high + run


def window_within_limits(model, q_hold, joint: int, half_width: float, speeds=FRICTION_SWEEP_SPEEDS,
                         scale: float = 0.5, settle: float = 0.3, margin: float = 0.01) -> tuple[float, float]:
    """[low, high], 2 ``half_width`` wide, centred at ``q_hold[joint]`` or, where the fastest sweep's
    run-up or run-out would come within ``margin`` rad of the joint's limit there, as near it as the
    limits allow (Ni et al. 2024 state no window; at 1.8 rad/s a Franka joint 2's run-up alone is over
    1 rad, so around the ready pose it passes the limit)."""
    fastest = max(float(v) for v in speeds)
    centre = float(q_hold[joint])
    from robodyn.trajectory import SweepTrajectory

    # the reach does not depend on where the window is: measured on one centred at q_hold
    probe = SweepTrajectory.within_limits(q_hold, joint, centre - half_width, centre + half_width, fastest,
                                          model.qdd_max[joint], model.qddd_max[joint], scale, settle=settle)
    reach = probe.low - probe.start_position + half_width + margin  # from the centre to either extreme
    lowest, highest = float(model.q_min[joint]) + reach, float(model.q_max[joint]) - reach
    if lowest > highest:
        raise ValueError(f"speeds: {fastest} rad/s needs {2 * reach:.3f} rad of joint {joint + 1}'s travel, more than "
                         f"its range [{model.q_min[joint]:.4f}, {model.q_max[joint]:.4f}] rad")
    centre = min(max(centre, lowest), highest)
    return centre - half_width, centre + half_width



def experiment_trajectory(model, q_hold, joint: int, low: float, high: float, speeds=FRICTION_SWEEP_SPEEDS,
                          scale: float = 0.5, settle: float = 0.3):
    """One run for one joint: every sweep of :func:`sweep_plan`, joined by rest-to-rest moves, as a
    single SequenceTrajectory (one validation, one move to the start, one recording). Returns the
    trajectory and, per sweep, (speed, start time, end time) within it."""
    from robodyn.trajectory import PointToPointTrajectory, SequenceTrajectory

    sweeps = sweep_plan(model, q_hold, joint, low, high, speeds, scale, settle)
    parts, spans, t = [], [], 0.0
    for k, sw in enumerate(sweeps):
        if k:
            prev_end = parts[-1].evaluate(parts[-1].duration)[0][0]
            start = sw.evaluate(0.0)[0][0]
            move = PointToPointTrajectory.within_limits(prev_end, start, model.qd_max, model.qdd_max,
                                                        model.qddd_max, scale)
            parts.append(move)
            t += move.duration
        parts.append(sw)
        spans.append((sw.speed, t, t + sw.duration))
        t += sw.duration
    return SequenceTrajectory(parts), spans


def design_experiment(model, q_hold, joints, half_width: float = EXPERIMENT_HALF_WIDTH,
                      speeds=EXPERIMENT_SPEEDS, scale: float = 0.5, settle: float = 0.3):
    """The friction experiment of several joints as ONE run: for each joint (0-based, in the order
    given) every sweep of :func:`experiment_trajectory` over [hold - half_width, hold + half_width]
    while the other joints hold ``q_hold``, joined by rest-to-rest moves. The whole trajectory is
    checked by the daemon's own validator (:func:`robodyn.limits.check_trajectory`); a violation is
    refused here, naming the limit, the joint and the time. Returns the trajectory and the limit report."""
    from robodyn.errors import UserError
    from robodyn.limits import check_trajectory
    from robodyn.trajectory import PointToPointTrajectory, SequenceTrajectory

    q_hold = np.asarray(q_hold, float)
    if q_hold.shape != (model.dof,) or not np.all(np.isfinite(q_hold)):
        raise UserError(f"hold: expected {model.dof} finite joint positions for {model.name}, got {q_hold.tolist()}")
    outside = [j + 1 for j in range(model.dof) if not model.q_min[j] <= q_hold[j] <= model.q_max[j]]
    if outside:
        raise UserError(f"hold: joint(s) {outside} outside {model.name}'s position limits")
    joints = [int(j) for j in joints]
    if not joints:
        raise UserError("joints: name at least one joint to sweep")
    bad = [j + 1 for j in joints if not 0 <= j < model.dof]
    if bad or len(set(joints)) != len(joints):
        raise UserError(f"joints: expected distinct joints 1..{model.dof}, got {[j + 1 for j in joints]}")
    if not (math.isfinite(half_width) and half_width > 0):
        raise UserError(f"half-width: must be > 0 rad, got {half_width}")
    speeds = [float(v) for v in speeds]
    if len(speeds) < 3 or not all(math.isfinite(v) and v > 0 for v in speeds):
        raise UserError(f"speeds: need at least 3 speeds > 0 rad/s (a friction curve is fitted to them), got {speeds}")
    parts = []
    for j in joints:
        low, high = q_hold[j] - half_width, q_hold[j] + half_width
        if low < model.q_min[j] or high > model.q_max[j]:
            raise UserError(f"half-width: joint {j + 1}'s window [{low:.3f}, {high:.3f}] rad leaves its position "
                            f"limits [{model.q_min[j]:.3f}, {model.q_max[j]:.3f}]")
        try:
            seq, _ = experiment_trajectory(model, q_hold, j, low, high, speeds, scale, settle)
        except ValueError as exc:  # a speed above the joint's velocity limit
            raise UserError(str(exc)) from None
        if parts:
            prev_end = parts[-1].evaluate(parts[-1].duration)[0][0]
            start = seq.parts[0].evaluate(0.0)[0][0]
            parts.append(PointToPointTrajectory.within_limits(prev_end, start, model.qd_max, model.qdd_max,
                                                              model.qddd_max, scale))
        parts.extend(seq.parts)
    traj = SequenceTrajectory(parts)
    report = check_trajectory(model, traj)
    if not report.ok:
        raise UserError(f"friction experiment refused: {report.summary()}")
    return traj, report


def points_from_recording(path) -> list["FrictionPoint"]:
    """Friction points of a recorded friction experiment: the daemon's recording carries the
    trajectory it ran, which says where each sweep is; the samples are its execute phase."""
    from pathlib import Path

    from robodyn.recording import load_recording
    from robodyn.trajectory import trajectory_from_dict

    path = Path(path)
    if path.suffix.lower() != ".mcap":
        raise ValueError(f"{path}: expected a daemon recording (.mcap) of a friction experiment")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    rec = load_recording(path)
    doc = rec.meta.get("trajectory")
    if not doc:
        raise ValueError(f"{path}: the recording carries no trajectory")
    traj = trajectory_from_dict(doc)
    if not sweep_spans(traj):
        raise ValueError(f"{path}: not a friction experiment (its {traj.family} trajectory has no "
                         "constant-velocity sweep; design one with `robodyn friction design`)")
    mask = rec.phase_mask("execute")
    if not mask.any():
        raise ValueError(f"{path}: no samples of the trajectory itself" + (" (cut short)" if rec.truncated else ""))
    t = rec.robot_time[mask]
    return points_from_run(traj, t - t[0], rec.signal("q")[mask], rec.signal("qd")[mask], rec.signal("tau")[mask])


def fit_experiment(points: list["FrictionPoint"], kind: str, dof: int, viscous: bool = False,
                   qd0: float = DEFAULT_LINEAR_ZONE) -> tuple[FrictionModel, list["FrictionFit"]]:
    """Per swept joint, :func:`fit_friction` to its (measured speed, friction torque) points, and
    the fits as one FrictionModel (joints without points get zero friction). The pairing of equal
    positions cancels any torque offset, so the points are odd in the speed: each is also given at
    -v with -torque, which pins the coulomb-viscous offset at zero (the folded fits are unchanged)."""
    by_joint: dict[int, list] = {}
    for p in points:
        by_joint.setdefault(p.joint, []).append(p)
    if not by_joint:
        raise ValueError("recordings: no friction points")
    fits = []
    for joint in sorted(by_joint):
        v = np.array([p.measured_speed for p in by_joint[joint]], float)
        f = np.array([p.torque for p in by_joint[joint]], float)
        if kind == "coulomb-viscous":
            v, f = np.concatenate([v, -v]), np.concatenate([f, -f])
        fits.append(fit_friction(v, f, kind, joint=joint, qd0=qd0, viscous=viscous))
    return model_from_fits(fits, dof), fits


def sweep_spans(traj) -> list[tuple[int, float, float, float, float, float]]:
    """(joint, speed, low, high, start, end) of every sweep inside a sweep or sequence trajectory."""
    from robodyn.trajectory import SequenceTrajectory, SweepTrajectory

    parts = traj.parts if isinstance(traj, SequenceTrajectory) else [traj]
    starts = traj.starts if isinstance(traj, SequenceTrajectory) else [0.0]
    return [(p.joint, p.speed, p.low, p.high, float(s), float(s + p.duration))
            for p, s in zip(parts, starts) if isinstance(p, SweepTrajectory)]


def points_from_run(traj, t: np.ndarray, q: np.ndarray, qd: np.ndarray, tau: np.ndarray,
                    bins: int = 20) -> list["FrictionPoint"]:
    """Friction points of every sweep in a recorded experiment run (t from the trajectory's start)."""
    points = []
    for joint, speed, low, high, start, end in sweep_spans(traj):
        sel = (t >= start) & (t <= end)
        points.append(extract_friction(q[sel], qd[sel], tau[sel], joint, speed, low, high, bins))
    if not points:
        raise ValueError("trajectory: contains no constant-velocity sweep")
    return points


@dataclass
class FrictionPoint:
    joint: int
    speed: float
    torque: float  # (tau(+v) - tau(-v)) / 2, averaged over the paired positions
    std: float
    pairs: int
    measured_speed: float = float("nan")  # mean |qd| over the paired samples


def extract_friction(q: np.ndarray, qd: np.ndarray, tau: np.ndarray, joint: int, speed: float, low: float,
                     high: float, bins: int = 20, speed_tolerance: float = 0.1) -> FrictionPoint:
    """Pair forward and backward samples at equal positions of ``joint`` within [low, high].

    Samples count as cruising when |qd - (+/-)speed| < speed_tolerance * speed. Positions are binned
    so that each forward bin meets the backward samples of the same angle."""
    qj, vj, tj = q[:, joint], qd[:, joint], tau[:, joint]
    window = (qj >= low) & (qj <= high)
    fwd = window & (np.abs(vj - speed) < speed_tolerance * speed)
    bwd = window & (np.abs(vj + speed) < speed_tolerance * speed)
    if fwd.sum() < 2 or bwd.sum() < 2:
        raise ValueError(f"sweep joint {joint + 1} at {speed} rad/s: too few constant-speed samples "
                         f"({int(fwd.sum())} forward, {int(bwd.sum())} backward) in [{low:.3f}, {high:.3f}]")
    # pair each forward sample with the backward torque interpolated at exactly its position,
    # so gravity (which varies with q) cancels sample by sample
    qb, tb = qj[bwd], tj[bwd]
    order = np.argsort(qb)
    qb, tb = qb[order], tb[order]
    qf, tf = qj[fwd], tj[fwd]
    inside = (qf >= qb[0]) & (qf <= qb[-1])
    if inside.sum() < 2:
        raise ValueError(f"sweep joint {joint + 1} at {speed} rad/s: forward and backward passes do not overlap")
    pair_values = (tf[inside] - np.interp(qf[inside], qb, tb)) / 2.0
    # the robot's real speed, not the commanded one: an impedance-controlled joint under a varying
    # gravity load lags by a position-dependent amount, and friction depends on what it really did
    measured = float((np.abs(vj[fwd][inside]).mean() + np.abs(vj[bwd]).mean()) / 2.0)
    # the spread is reported over position bins (neighbouring samples are correlated)
    edges = np.linspace(low, high, bins + 1)
    idx = np.digitize(qf[inside], edges) - 1
    values = np.array([pair_values[idx == k].mean() for k in range(bins) if np.any(idx == k)])
    return FrictionPoint(joint, speed, float(pair_values.mean()), float(values.std()), int(values.size), measured)


@dataclass
class FrictionFit:
    joint: int
    kind: str
    params: dict[str, float]
    rmse: float
    r2: float
    iterations: int
    converged: bool
    points: int
    message: str = ""
    extra: dict = field(default_factory=dict)


def fit_friction(speeds: np.ndarray, torques: np.ndarray, kind: str = "stribeck", joint: int = 0,
                 qd0: float = DEFAULT_LINEAR_ZONE, vt: float = DEFAULT_SIGMOID_VELOCITY,
                 viscous: bool = False, max_iterations: int = 20000) -> FrictionFit:
    """Nelder-Mead fit of one joint's friction curve to (speed, torque) points (Ni et al. 2024 eq. 6).

    Points may have both signs of speed; an odd model is assumed, so they are folded onto v > 0
    for the Stribeck and sigmoid models (the offset of coulomb-viscous is kept).
    """
    v = np.asarray(speeds, float)
    f = np.asarray(torques, float)
    if v.shape != f.shape or v.ndim != 1:
        raise ValueError(f"speeds/torques: expected two equal 1-D arrays, got {v.shape} and {f.shape}")
    if v.size < 3:
        raise ValueError(f"speeds: need at least 3 friction points to fit, got {v.size}")
    if kind not in MODELS:
        raise ValueError(f"friction: unknown model {kind!r}; expected one of {list(MODELS)}")
    if kind == "coulomb-viscous":
        A = np.column_stack([np.sign(v), v, np.ones_like(v)])
        coef, *_ = np.linalg.lstsq(A, f, rcond=None)
        params = {"fc": coef[0], "fv": coef[1], "fo": coef[2]}
        pred = A @ coef
        it, ok, msg = 0, True, "linear least squares"
    else:
        a = np.abs(v)
        s = np.sign(v)
        y = f * np.where(s == 0, 1, s)
        fc0 = float(np.median(y[a >= np.median(a)]))
        if kind == "stribeck":
            names = ["fc", "fs", "vs"] + (["fv"] if viscous else [])
            outside = a >= qd0
            fs0 = float(y[outside].max()) if np.any(outside) else fc0
            # Nelder-Mead is local and the Stribeck valley is narrow in vs: start from several
            # Stribeck velocities spread over the measured speeds and keep the best
            starts = [[fc0, fs0, vs0] + ([0.0] if viscous else [])
                      for vs0 in np.geomspace(max(a[a > 0].min(), 1e-4), max(a.max(), 1e-3), STRIBECK_STARTS)]

            def model(x, vv):
                return stribeck(vv, x[0], x[1], x[2], x[3] if viscous else 0.0, qd0)
        else:  # folded onto v > 0 the offset cancels, so only fc and fv remain
            names = ["fc", "fv"]
            starts = [[fc0, 0.0]]

            def model(x, vv):
                return sigmoid(vv, x[0], x[1], 0.0, vt)

        def cost(x):
            return float(np.sum((y - model(x, a)) ** 2))

        res = min((scipy.optimize.minimize(cost, x0, method="Nelder-Mead",
                                           options={"maxiter": max_iterations, "xatol": 1e-10, "fatol": 1e-14})
                   for x0 in starts), key=lambda r: r.fun)
        params = dict(zip(names, res.x))
        if "vs" in params:
            params["vs"] = abs(params["vs"])
        pred = model(res.x, a) * np.where(s == 0, 1, s)
        it, ok, msg = int(res.nit), bool(res.success), str(res.message)
    resid = f - pred
    rmse = float(np.sqrt(np.mean(resid**2)))
    ss = float(np.sum((f - f.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / ss if ss > 0 else 1.0
    return FrictionFit(joint, kind, {k: float(val) for k, val in params.items()}, rmse, r2, it, ok, int(v.size), msg,
                       {"qd0": qd0} if kind == "stribeck" else ({"vt": vt} if kind == "sigmoid" else {}))


def model_from_fits(fits: list[FrictionFit], dof: int) -> FrictionModel:
    """Assemble per-joint fits (one per joint, same kind) into a FrictionModel."""
    kinds = {f.kind for f in fits}
    if len(kinds) != 1:
        raise ValueError(f"fits: mixed friction models {sorted(kinds)}")
    kind = kinds.pop()
    names = sorted({k for f in fits for k in f.params})
    params = {k: np.zeros(dof) for k in names}
    for fit in fits:
        for k, val in fit.params.items():
            params[k][fit.joint] = val
    extra = fits[0].extra
    return FrictionModel(kind, params, qd0=extra.get("qd0", DEFAULT_LINEAR_ZONE),
                         vt=extra.get("vt", DEFAULT_SIGMOID_VELOCITY))
