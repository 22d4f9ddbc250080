"""Excitation trajectory design: choose a family's coefficients to minimise a regressor criterion
subject to joint, boundary, Cartesian and torque constraints, then prove the result with the
daemon's validator (robodyn.limits.check_trajectory).

Speed (why a 7-DOF design takes seconds, not hours):
- the criterion uses the base regressor on a coarse grid (default 200 samples per period),
  computed for a whole population (or a whole finite-difference stencil) in one Numba call;
- boundary conditions are in the parametrisation and joint limits are linear constraints with
  exact Jacobians (SLSQP) or an exact repair (GA/PSO/ICPSO), so no penalty tuning is needed;
- SLSQP optimises log(cond), which is smoother than cond, from feasible random starts.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from robodyn.limits import check_trajectory
from robodyn.robot.model import RobotModel
from robodyn.trajectory import Trajectory

from .. import optimizers as opt
from ..regressor import ColumnSpec
from .constraints import (CartesianLimits, InfeasibleDesign, JointLimits, cartesian_constraint, check_fixed_start,
                          joint_limit_constraint, nonlinear_report, repair_population, shape_bounds,
                          states_on_grid, torque_constraint)
from .families import Family, make_family
from .objectives import OBJECTIVES, RANK_DEFICIENT, RegressorGrid, excitation_metrics
from .subsystems import SubExperiment

# "grid" is the exhaustive search for families with few free coordinates (the order-8 periodic
# polynomial with a fixed start leaves one per joint)
DESIGN_OPTIMIZERS = opt.METHODS + ("apso", "lpso", "grid")

# After optimisation the trajectory is checked at the validator's full rate; if sampling between
# grid points hides a tiny excess, shapes shrink by this factor until the check passes.
SHRINK_STEP = 0.995
MAX_SHRINK_STEPS = 60


# The default fundamental frequency, rad/s: a 10 s period. A harmonic of frequency w that sweeps a
# joint's whole range dq reaches the joint's acceleration limit when w = sqrt(2 qdd_max / dq); for
# the vendors' built-in models (panda, fr3, ur5, ur5e, ur10e) that is 0.98 to 3.26 rad/s. With 5
# harmonics the top one is 5 wf: at wf = 2 pi / 10 it is 3.14 rad/s, enough for every joint of
# those models but the Panda's joint 6 (3.26 rad/s, so 93 % of its limit), while at the old 0.1
# rad/s (a 63 s period) it was 0.5 rad/s, 2 to 26 % of each joint's acceleration limit, leaving the
# inertial parameters barely excited. Measured on the models (own-model design criteria, not
# accuracy): `robodyn excitation design --robot R --wf W --time-limit 30` then `excitation check`,
# 2026-12-07, load ~18 on 2 cores: peak |qdd| / qdd_max 2-5 % (panda, fr3) and 6-19 % (ur5) at 0.1
# rad/s, 13-52 % and 50-90 % at 2 pi / 10; raw cond(W_base) 146 -> 48 (panda), 43 -> 38 (ur5),
# 202 -> 40 (fr3).
DEFAULT_WF = 2 * math.pi / 10.0


def identification_columns(model: RobotModel) -> ColumnSpec:
    """The columns `robodyn identify` fits by default for ``model`` (rotor inertia, the
    coulomb-viscous friction columns and any shared motor's): what a default design excites."""
    from ..config import IdentificationConfig

    return IdentificationConfig(motor_couplings=model.motor_couplings).spec


@dataclass
class DesignRequest:
    family: str = "fourier"
    harmonics: int = 5
    wf: float | None = DEFAULT_WF
    period: float | None = None  # poly family (s); default 2 pi / wf
    order: int = 8
    objective: str = "cond"
    # None: the columns `robodyn identify` fits by default for the model (identification_columns)
    columns: ColumnSpec | None = None
    optimizer: str = "slsqp"
    options: object | None = None  # the optimizer's options dataclass
    starts: int = 1
    seed: int | None = 0
    grid: int = 200  # samples per period for the criterion and the constraints
    margin: float = 0.02
    limit_overrides: dict | None = None
    start: np.ndarray | None = None  # fixed start position (fourier-poly, poly)
    cartesian: CartesianLimits | None = None
    torque_limits: bool = False
    check_rate: float = 1000.0  # Hz, the validator's rate for the final proof
    report_rate: float = 100.0  # Hz, for the reported criteria on the recorded data (Ni et al. 2024: 100 Hz)
    time_limit: float | None = None
    # A step of a stepwise identification (Chen et al. 2021 Table 3): only some joints move (the others
    # hold the fixed start) and the criterion covers only that step's rows and base parameters.
    sub_experiment: SubExperiment | None = None
    # Design grid t = linspace(0, period, grid) (both ends, as Chen et al. 2021 sample) instead of
    # k period / grid, k = 0 .. grid - 1.
    grid_endpoint: bool = False
    # A criterion of one's own: f(q, qd, qdd) -> (pop,) values to minimise on the design grid, used
    # instead of ``objective`` (e.g. a paper's printed regressor). In-process designs only.
    criterion: object | None = None

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective: unknown {self.objective!r}; expected one of {list(OBJECTIVES)}")
        if self.optimizer not in DESIGN_OPTIMIZERS:
            raise ValueError(f"optimizer: unknown {self.optimizer!r}; expected one of {list(DESIGN_OPTIMIZERS)}")
        if isinstance(self.grid, bool) or int(self.grid) != self.grid or self.grid < 8:
            raise ValueError(f"grid: need at least 8 samples per period, got {self.grid!r}")
        if int(self.starts) != self.starts or self.starts < 1:
            raise ValueError(f"starts: must be a positive integer, got {self.starts!r}")


@dataclass
class DesignResult:
    trajectory: Trajectory
    family: Family
    metrics: dict  # criteria at report_rate over one period
    grid_metrics: dict  # criteria on the design grid
    limit_report: dict  # robodyn.limits.check_trajectory(...).to_dict()
    optimizer: dict
    objective: str
    elapsed: float
    shrink_steps: int
    request: dict

    def meta(self) -> dict:
        return {"designer": "robodyn.identification.excitation", "objective_optimised": self.objective,
                "criteria": self.metrics, "criteria_design_grid": self.grid_metrics,
                "limits_ok": self.limit_report["ok"], "optimizer": self.optimizer,
                "design_seconds": self.elapsed, "shrink_steps": self.shrink_steps, "request": self.request}

    def to_dict(self) -> dict:
        return {"ok": True, "trajectory": self.trajectory.to_dict(), **self.meta(),
                "limit_report": self.limit_report}


@dataclass
class _Problem:
    """What the optimizer needs, built from (model, request) alone so that any process can rebuild it."""

    family: Family
    limits: JointLimits
    start: np.ndarray | None
    basis: np.ndarray
    crit: RegressorGrid
    criterion: object
    bounds: opt.Bounds
    nonlinear: list
    repair: object
    selection: tuple | None = None  # (rows, cols) of a sub-experiment


def with_columns(model: RobotModel, req: DesignRequest) -> DesignRequest:
    """``req`` with its columns stated (the identification's default when None)."""
    return req if req.columns is not None else replace(req, columns=identification_columns(model))


def _problem(model: RobotModel, req: DesignRequest) -> _Problem:
    family = make_family(req.family, model.dof, harmonics=req.harmonics, wf=req.wf, period=req.period,
                         order=req.order)
    limits = JointLimits.from_model(model, req.margin, req.limit_overrides)
    start = None
    if req.start is not None:
        if family.name == "fourier":
            raise ValueError("start: a fixed start position needs the fourier-poly or poly family (in Ni et al. 2024's "
                             "fourier series q(0) depends on every coefficient)")
        start = np.asarray(req.start, float)
        if start.shape != (model.dof,):
            raise ValueError(f"start: expected {model.dof} joint positions, got shape {start.shape}")
        check_fixed_start(limits, start)

    t_grid = design_times(family, req)
    basis = family.basis(t_grid)
    crit = RegressorGrid.build(model, req.columns)
    sub = req.sub_experiment
    selection = None if sub is None else sub.selection(crit.base.names, model.dof)
    locked = [] if sub is None else [j for j in range(model.dof) if j not in sub.moving_joints(model.dof)]
    if locked and start is None:
        raise ValueError("start: joints that do not move hold the fixed start; give --start")

    def criterion(Z):
        q, qd, qdd, _ = states_on_grid(Z, family, basis)
        if req.criterion is not None:
            return np.asarray(req.criterion(q, qd, qdd), float)
        return crit.criterion(q, qd, qdd, req.objective, selection)

    lo, hi = shape_bounds(family, limits, basis)
    if start is not None:
        lo[: model.dof], hi[: model.dof] = start - 1e-9, start + 1e-9
    m = family.shape_count
    for j in locked:  # a locked joint keeps zero shape: the search box leaves it a sliver
        lo[model.dof + j * m: model.dof + (j + 1) * m] = -1e-300
        hi[model.dof + j * m: model.dof + (j + 1) * m] = 1e-300
    bounds = opt.Bounds(lo, hi)
    nonlinear = []
    if req.cartesian is not None and req.cartesian.active:
        nonlinear.append(cartesian_constraint(model, family, basis, req.cartesian))
    if req.torque_limits:
        nonlinear.append(torque_constraint(model, family, basis, req.margin))

    def repair(Z):
        Z = repair_population(Z, family, limits, basis, start)
        for j in locked:
            Z[:, model.dof + j * m: model.dof + (j + 1) * m] = 0.0
        return Z

    return _Problem(family, limits, start, basis, crit, criterion, bounds, nonlinear, repair, selection)


# What an optimizer's closing message means for the design (said with it, in the same line)
ENDINGS = {
    "Inequality constraints incompatible": "SLSQP's linearised joint limits had no common solution at its last "
                                           "point, so it stopped there; the best design within the limits found "
                                           "before is kept",
    "Iteration limit reached": "the iteration limit (--iterations) ended the search; the best design so far is kept",
}

# Rows of a population evaluated between two looks at the deadline. The optimizers look before
# each evaluation, and one evaluation may be a whole population: SLSQP's finite-difference gradient
# is dim + 1 rows (78 for a 7-joint, 5-harmonic design), which took 9 s of 0.12 s rows on a busy
# 2-core host and, under more load, ran a 40 s budget to 81 s. Eight rows keep the overshoot to
# about a second there. Each row's criterion is its own, so chunks change no value.
CHUNK_ROWS = 8


def interruptible(criterion, deadline: float, clock, chunk: int = CHUNK_ROWS):
    """``criterion`` evaluated ``chunk`` rows at a time, stopping the optimisation (as its own
    deadline check does) between two chunks once ``deadline`` has passed on ``clock``. The first
    chunk of every call runs: the optimizer itself refuses to start a call after the deadline, and
    a run's first point is always evaluated."""

    def evaluate(Z):
        Z = np.atleast_2d(Z)
        if Z.shape[0] <= chunk:
            return criterion(Z)
        parts = []
        for start in range(0, Z.shape[0], chunk):
            if parts and clock() > deadline:
                raise opt.OutOfTime  # the optimizers' own stop at the deadline (caught by minimize)
            parts.append(np.asarray(criterion(Z[start:start + chunk]), float))
        return np.concatenate(parts)

    return evaluate


def design_times(family: Family, req: DesignRequest) -> np.ndarray:
    """The design grid over one period (see DesignRequest.grid_endpoint)."""
    if req.grid_endpoint:
        return np.linspace(0.0, family.period, req.grid)
    return np.arange(req.grid) * family.period / req.grid


def _optimize(p: _Problem, req: DesignRequest, callback=None, runs=None, **timing) -> opt.OptimizeResult:
    """``timing``: minimize's ``deadline``, ``clock`` and ``heartbeat``, when the caller keeps the time."""
    options = req.options
    if req.optimizer == "slsqp":
        # log(cond) is far better scaled for a quasi-Newton method than cond itself
        criterion = p.criterion
        fitness = (lambda Z: np.log(criterion(Z))) if req.objective != "logdet" else criterion
        constraints = [joint_limit_constraint(p.family, p.limits, p.basis, p.start), *p.nonlinear]
        x0 = p.repair(p.bounds.sample(np.random.default_rng(req.seed), 1))[0]
        if options is None:
            # the linear joint-limit rows already bound every variable (offsets by the range, shapes by
            # the derivative limits); repeating the box confuses SLSQP's subproblem
            options = opt.SLSQPOptions(box_constraints=False)
        return opt.minimize(fitness, p.bounds, "slsqp", seed=req.seed, x0=x0, options=options,
                            constraints=constraints, callback=callback, restarts=req.starts,
                            time_limit=req.time_limit, repair=p.repair, runs=runs, **timing)
    if req.optimizer == "icpso" and options is None and req.objective != "logdet":
        # cond >= 1: eq. 15's f_d = 1. The benchmark's delta = 1 would stop the chaotic search as soon as
        # cond < 2 (measured on the SCARA design: it ran in 0 of 100 iterations), so delta is 1e-3 here.
        options = opt.ICPSOOptions(target=1.0, delta=1e-3)
    return opt.minimize(p.criterion, p.bounds, req.optimizer, seed=req.seed, options=options,
                        constraints=p.nonlinear, repair=p.repair, callback=callback, restarts=req.starts,
                        time_limit=req.time_limit, runs=runs, **timing)


def _prime(p: _Problem, req: DesignRequest) -> None:
    """Evaluate the criterion and the nonlinear constraints once, on a point of their own (the
    optimizers' random streams are untouched): numba compiles or loads every kernel here, before
    the time limit starts."""
    x = p.repair(p.bounds.sample(np.random.default_rng(0), 1))
    p.criterion(x)
    for c in p.nonlinear:
        c.fun(x)


def optimize_starts(model: RobotModel, request: DesignRequest, runs) -> opt.OptimizeResult:
    """Only the starts ``runs`` (indices into ``request.starts``) of the design's optimisation, each
    with the seed it has in the full run: what one worker of a distributed multi-start executes.
    :func:`robodyn.identification.optimizers.best_of` combines the pieces into the full run's result."""
    request = with_columns(model, request)
    return _optimize(_problem(model, request), request, None, runs)


def criterion_label(req: DesignRequest) -> str:
    if req.criterion is not None:
        return "the given criterion"
    return {"cond": "cond(W_base)", "cond_scaled": "column-scaled cond(W_base)", "logdet": "log det"}[req.objective]


def progress_line(req: DesignRequest, p: opt.Progress) -> str:
    """One line on an optimisation under way: what is optimised, the best value so far (as the
    criterion, not the optimizer's internal fitness) and the time left."""
    what = criterion_label(req)
    head = f"optimising {what} with {req.optimizer}"
    if req.starts > 1:
        head += f" (start {p.run + 1} of {req.starts})"
    left = "" if p.time_left is None else f", {p.time_left:.0f} s left"
    if p.nfev == 0:
        return f"{head}: starting{left} (the first evaluation compiles numba kernels unless they are cached)"
    f = p.best_fitness
    if not np.isfinite(f) or f >= opt.INFEASIBLE_OFFSET:
        best = "no design within the limits yet"
    else:
        if req.optimizer == "slsqp" and req.objective != "logdet" and req.criterion is None:
            f = math.exp(f)  # SLSQP minimises log(cond)
        if req.objective == "logdet" and req.criterion is None:
            f = -f  # minimised as -log det
        best = f"best {what} {f:.6g}"
    return f"{head}: {p.nfev} evaluations in {p.elapsed:.0f} s, {best}{left}"


def design_excitation(model: RobotModel, request: DesignRequest | None = None, *, callback=None,
                      run_starts=None, progress=None, clock=time.monotonic,
                      progress_every_s: float = 5.0) -> DesignResult:
    """Design an excitation trajectory for ``model``. Raises InfeasibleDesign naming every
    constraint that cannot be met, ValueError for malformed requests.

    ``run_starts(model, request)`` runs the ``starts`` elsewhere and returns their combined
    OptimizeResult (the scale-out layer binds it to an executor: one task per start, each with
    :func:`optimize_starts`); the result equals the in-process one for the same seed (except under
    ``time_limit``, which then bounds each start instead of all of them together). The scale-out
    layer sits above this one, so it is passed in, never imported.

    In process, ``time_limit`` bounds the search, on ``clock`` (wall time): the optimisation stops at
    the first evaluation after it with the best design so far, which is then proved within limits.
    It starts once the criterion has been evaluated once (:func:`_prime`): on the first run after
    an install that evaluation compiles the numba kernels, which cannot be interrupted and took
    longer than a 40 s budget on a busy host (bench note in docs/excitation.md); counted inside the
    limit it left a search of one evaluation. ``progress(text)`` hears a line before that, from
    inside the evaluations at least every ``progress_every_s`` of ``clock`` (:func:`progress_line`),
    and when the optimisation ends."""
    req = with_columns(model, request or DesignRequest())
    t0 = clock()
    if progress is not None:
        progress(f"preparing {criterion_label(req)} for {model.name}: numba kernels are compiled on the first run "
                 "after an install (minutes on a busy host, not part of the time limit), then loaded from the cache")
    p = _problem(model, req)
    family, basis, crit, start = p.family, p.basis, p.crit, p.start
    prepared_s = 0.0
    if run_starts is None:
        _prime(p, req)
        prepared = clock()
        prepared_s = prepared - t0
        deadline = None if req.time_limit is None else prepared + float(req.time_limit)
        beat = None if progress is None else opt.Heartbeat(lambda pr: progress(progress_line(req, pr)),
                                                          progress_every_s)
        if deadline is not None:
            p = replace(p, criterion=interruptible(p.criterion, deadline, clock))
        result = _optimize(p, req, callback, deadline=deadline, clock=clock, heartbeat=beat)
    else:
        if callback is not None or progress is not None:
            raise ValueError("callback, progress: progress reports run in-process only; pass them or run_starts")
        result = run_starts(model, req)
    if progress is not None:
        why = ENDINGS.get(result.message, "")
        progress(f"optimisation ended ({result.message}{': ' + why if why else ''}) after {result.nfev} evaluations "
                 f"in {clock() - t0:.0f} s; checking the design at {req.check_rate:g} Hz against every limit")
    z = result.x
    if not result.feasible:
        report = nonlinear_report(model, family, basis, z, req.cartesian, req.torque_limits, req.margin)
        if not report:
            report = [{"constraint": "joint_limits", "joint": None,
                       "detail": "no start met the joint limits on the design grid"}]
        raise InfeasibleDesign(report)

    traj, limit_report, shrinks = _prove_within_limits(model, family, z, req)
    if not limit_report.ok:
        raise InfeasibleDesign([{"constraint": v.limit, "joint": v.joint, "detail": v.message()}
                                for v in limit_report.violations] +
                               ([{"constraint": "tau_max", "joint": None,
                                  "detail": "enable torque limits in the design (--torque-limits)"}]
                                if any(v.limit == "tau_max" for v in limit_report.violations)
                                and not req.torque_limits else []))
    q, qd, qdd, _ = states_on_grid(family.join(*_split_traj(family, z, shrinks))[None], family, basis)
    grid_metrics = excitation_metrics(model, req.columns, q[0], qd[0], qdd[0], crit.base, p.selection)
    if req.criterion is not None:
        grid_metrics["criterion_optimised"] = float(p.criterion(family.join(*_split_traj(family, z, shrinks))[None])[0])
    _, qr, qdr, qddr, _ = _one_period(traj, family, req.report_rate)
    metrics = excitation_metrics(model, req.columns, qr, qdr, qddr, crit.base, p.selection)
    if metrics["rank"] < metrics["base_parameters"] or grid_metrics["cond_raw"] >= RANK_DEFICIENT:
        raise InfeasibleDesign([{"constraint": "excitation", "joint": None,
                                 "detail": f"the best trajectory excites only {metrics['rank']} of "
                                           f"{metrics['base_parameters']} base parameters; loosen the limits "
                                           "or add harmonics"}])
    request_doc = {"family": family.name, **family.describe(), "objective": req.objective,
                   "columns": {"rotor_inertia": req.columns.rotor_inertia, "friction": list(req.columns.friction)},
                   "optimizer": req.optimizer, "starts": req.starts, "seed": req.seed, "grid": req.grid,
                   "margin": req.margin, "torque_limits": req.torque_limits,
                   "start": None if start is None else start.tolist(),
                   "sub_experiment": None if req.sub_experiment is None else req.sub_experiment.to_dict(),
                   "grid_endpoint": req.grid_endpoint, "custom_criterion": req.criterion is not None}
    if req.cartesian is not None and req.cartesian.active:
        c = req.cartesian
        request_doc["cartesian"] = {"floor_z": c.floor_z,
                                    "box_min": None if c.box_min is None else c.box_min.tolist(),
                                    "box_max": None if c.box_max is None else c.box_max.tolist()}
    optimizer_doc = {k: v for k, v in result.to_dict().items() if k != "x"} | {"preparation_s": prepared_s}
    if p.selection is not None:
        optimizer_doc["sub_experiment"] = req.sub_experiment.label(model.dof)
    return DesignResult(traj, family, metrics, grid_metrics, limit_report.to_dict(), optimizer_doc, req.objective,
                        clock() - t0, shrinks, request_doc)


def _split_traj(family: Family, z: np.ndarray, shrinks: int):
    offsets, shapes = family.split(z)
    return offsets, shapes * SHRINK_STEP ** shrinks


def _one_period(traj: Trajectory, family: Family, rate: float):
    count = max(8, int(math.floor(family.period * rate + 1e-9)))
    t = np.arange(count) / rate
    return (t, *traj.evaluate(t))


def _prove_within_limits(model: RobotModel, family: Family, z: np.ndarray, req: DesignRequest):
    """Build the trajectory and run the daemon's validator on it; shrink shapes toward the
    offsets in small steps only if a between-grid excess shows up."""
    report = None
    for k in range(MAX_SHRINK_STEPS + 1):
        offsets, shapes = _split_traj(family, z, k)
        traj = family.build(offsets, shapes)
        report = check_trajectory(model, traj, rate_hz=req.check_rate, check_torque=True)
        kinematic = [v for v in report.violations if v.limit in ("q_min", "q_max", "qd_max", "qdd_max", "qddd_max")]
        if report.ok or not kinematic or len(kinematic) < len(report.violations):
            return traj, report, k
    return traj, report, MAX_SHRINK_STEPS
