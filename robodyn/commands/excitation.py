"""`robodyn excitation design|check|sample|plot`."""

from __future__ import annotations

import sys

import numpy as np

from robodyn.errors import UserError
from robodyn.papers import paper

from . import progress as bars
from .common import (PERIOD_WORDS, RATE_WORDS, LegacyFrictionColumns, add_friction, add_json, add_out,
                     add_rotor_inertia, needs_a_command, nonnegative_float, positive_float, positive_int, print_json)

DESIGN_LAWS = ("none", "coulomb-viscous")
DESIGN_FRICTION = ("a design takes none or coulomb-viscous (three columns per joint: viscous, Coulomb, offset); "
                   "stribeck and sigmoid shapes are fitted from data")


def register(sub) -> None:
    p = sub.add_parser("excitation", help="design, check, sample and plot excitation trajectories")
    esub = p.add_subparsers(dest="excitation_command", metavar="SUBCOMMAND")
    p.set_defaults(handler=needs_a_command(p, esub))

    d = esub.add_parser("design", help="optimise an excitation trajectory for a robot")
    d.add_argument("--robot", required=True, metavar="NAME|FILE", help="built-in robot name or model file")
    d.add_argument("--family", default="fourier", choices=["fourier", "fourier-poly", "poly"],
                   help="trajectory shape: fourier = sum of sines and cosines (default), fourier-poly = the same "
                        "plus a fifth-order polynomial that fixes the start and end, poly = periodic polynomial")
    d.add_argument("--harmonics", type=positive_int, default=5, help="Fourier harmonics (default 5)")
    d.add_argument("--wf", type=positive_float, default=None,
                   help="fundamental frequency in rad/s (default 2 pi / 10 = 0.628, a 10 s period: the top harmonic "
                        "can then reach the acceleration limits of the built-in arms: see DEFAULT_WF in "
                        "identification/excitation/designer.py)")
    d.add_argument("--period", type=positive_float, default=None, metavar="S",
                   help=f"{PERIOD_WORDS}; poly family only (default 2 pi / wf; the fourier families take --wf)")
    d.add_argument("--order", type=positive_int, default=8, help="poly family: polynomial order (default 8)")
    d.add_argument("--optimizer", default="slsqp", choices=["slsqp", "ga", "pso", "icpso", "apso", "lpso", "grid"],
                   help="the search method: slsqp = gradient-based local search from one start point (default); "
                        "ga = genetic algorithm; pso = particle swarm; icpso = particle swarm whose inertia and "
                        "learning factors adapt to each particle's fitness, with a chaotic re-search of the worst "
                        f"particles when the swarm converges early ({paper('icpso').short}); apso = the same adaptive "
                        "swarm without the chaotic re-search; lpso = particle swarm whose inertia and learning "
                        "factors change linearly from the first iteration to the last; grid = exhaustive search, "
                        "for at most 3 free coordinates (e.g. --family poly --order 8 with --start: one amplitude "
                        "per moving joint)")
    d.add_argument("--objective", default="cond", choices=["cond", "cond-scaled", "logdet"],
                   help="what makes a trajectory good: cond = condition number of the regressor (default), "
                        "cond-scaled = the same with columns scaled to unit length, logdet = log-determinant of "
                        "the information matrix (D-optimal design)")
    add_friction(d, legacy_columns=True, extra=DESIGN_FRICTION)
    add_rotor_inertia(d, extra="the design excites the parameters `robodyn identify` fits with the same options")
    d.add_argument("--starts", type=positive_int, default=1, help="independent starts, best kept (default 1)")
    d.add_argument("--seed", type=int, default=0, help="random seed of the starting points (default 0); the "
                                                       "trajectory file records it")
    d.add_argument("--iterations", type=positive_int, default=None,
                   help="iterations/generations (default: the method's, e.g. GA 800, PSO 100)")
    d.add_argument("--population", type=positive_int, default=None, help="GA/PSO/ICPSO population size")
    d.add_argument("--grid", type=positive_int, default=200, help="samples per period for criterion and limits")
    d.add_argument("--margin", type=nonnegative_float, default=0.02,
                   help="stay this fraction inside every limit (0.02)")
    d.add_argument("--start", default=None, metavar="Q1,Q2,...", help="fixed start position, rad/m "
                   "(fourier-poly and poly)")
    d.add_argument("--floor", type=float, default=None, metavar="Z", help="tool z must stay >= Z (m, base frame)")
    d.add_argument("--box", default=None, metavar="X0,Y0,Z0,X1,Y1,Z1", help="tool must stay inside this box (m)")
    d.add_argument("--torque-limits", action="store_true", help="keep nominal joint torques within tau_max")
    d.add_argument("--time-limit", type=positive_float, default=None, metavar="S",
                   help="stop the search after this many seconds (wall time) and keep the best design so far; "
                        "before it, the first run after an install compiles numba kernels (said on stderr), and "
                        "after it the design is checked against every limit")
    d.add_argument("--moving", default=None, metavar="J1,J2,..",
                   help="a sub-experiment of a stepwise identification: only these joints (1-based) move, the "
                        "others hold --start, and the criterion covers that step's torques and parameters "
                        "(Chen et al. 2021, stepwise identification of flexible-joint robots, Table 3)")
    d.add_argument("--part", default="rigid", choices=["rigid", "friction"],
                   help="with --moving: rigid = inertial and gravity parameters of the first moving link and "
                        "the links it carries; friction = the friction columns of the moving joints alone")
    d.add_argument("--grid-endpoint", action="store_true",
                   help="design grid linspace(0, T, GRID) including t = T (Chen et al. 2021's sampling)")
    d.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                   help="override a joint limit for every joint, e.g. qddd_max=1e6 (repeatable)")
    add_out(d, "the trajectory JSON written", required=True)
    add_json(d)
    d.add_argument("--quiet", action="store_true",
                   help="no progress: neither the bar at a terminal nor the line every 5 s on stderr otherwise")
    d.set_defaults(handler=cmd_design)

    c = esub.add_parser("check", help="limits report for a trajectory file (the daemon's validator)")
    c.add_argument("trajectory", help="trajectory JSON (from `robodyn excitation design`)")
    c.add_argument("--robot", required=True, metavar="NAME|FILE", help="built-in robot name or model file")
    c.add_argument("--rate", type=positive_float, default=1000.0, metavar="HZ",
                   help=f"{RATE_WORDS}, at which the limits are checked (default 1000)")
    add_friction(c, legacy_columns=True, extra=DESIGN_FRICTION + "; for the reported cond")
    add_rotor_inertia(c, extra="for the reported cond")
    add_json(c)
    c.set_defaults(handler=cmd_check)

    s = esub.add_parser("sample", help="sample a trajectory to CSV: t, q1..qn, qd1..qdn, qdd1..qddn")
    s.add_argument("trajectory", help="trajectory JSON (from `robodyn excitation design`)")
    s.add_argument("--rate", type=positive_float, required=True, metavar="HZ", help=f"{RATE_WORDS}, of the CSV")
    add_out(s, "the CSV written", required=True, metavar="CSV")
    add_json(s)
    s.set_defaults(handler=cmd_sample)

    pl = esub.add_parser("plot", help="plot q, qd, qdd (and jerk) of a trajectory to an image")
    pl.add_argument("trajectory", help="trajectory JSON (from `robodyn excitation design`)")
    add_out(pl, "the image written (PNG)", required=True, metavar="PNG")
    pl.add_argument("--robot", default=None, help="draw this robot's limits")
    pl.add_argument("--rate", type=positive_float, default=100.0, metavar="HZ",
                    help=f"{RATE_WORDS}, drawn (default 100)")
    add_json(pl)
    pl.set_defaults(handler=cmd_plot)


def _columns(model, friction, rotor_inertia: bool, command: str):
    """The regressor columns `robodyn identify --friction LAW [--no-rotor-inertia]` fits for ``model``."""
    from robodyn.identification.config import IdentificationConfig
    from robodyn.identification.regressor import ColumnSpec

    if isinstance(friction, LegacyFrictionColumns):  # the old spelling: a comma list of columns
        print(f"robodyn excitation {command} --friction {','.join(friction)}: deprecated, use --friction LAW (none or "
              "coulomb-viscous; the old spelling goes in the next release)", file=sys.stderr)
        return ColumnSpec(rotor_inertia, tuple(friction))
    if friction not in DESIGN_LAWS:
        raise UserError(f"--friction: {friction} has no fixed regressor columns to design for (its shape is fitted "
                        f"from data); use one of {', '.join(DESIGN_LAWS)}")
    return IdentificationConfig(friction=friction, rotor_inertia=rotor_inertia,
                                motor_couplings=model.motor_couplings).spec


def _floats(text: str | None, count: int | None, name: str):
    if text is None:
        return None
    try:
        values = np.array([float(v) for v in text.split(",") if v.strip()])
    except ValueError as exc:
        raise UserError(f"{name}: expected comma-separated numbers, got {text!r}") from exc
    if count is not None and values.size != count:
        raise UserError(f"{name}: expected {count} numbers, got {values.size}")
    return values


def _sub_experiment(moving: str | None, part: str, dof: int):
    from robodyn.identification.excitation.subsystems import SubExperiment

    if moving is None:
        return None if part == "rigid" else SubExperiment(None, part)
    joints = _floats(moving, None, "moving")
    if any(j != int(j) or j < 1 or j > dof for j in joints):
        raise UserError(f"moving: expected joint numbers 1..{dof}, got {moving!r}")
    return SubExperiment(tuple(int(j) - 1 for j in joints), part)


def _limit_overrides(items: list[str]) -> dict | None:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise UserError(f"limit: expected NAME=VALUE such as qddd_max=1e6, got {item!r}") from None
    return out or None


def _options(method: str, iterations: int | None, population: int | None):
    from dataclasses import replace

    from robodyn.identification import optimizers as opt

    if iterations is None and population is None:
        return None
    o = opt.default_options(method)
    if method == "icpso":
        o = replace(o, target=1.0, delta=1e-3)  # cond >= 1 (see designer._optimize)
    changes = {}
    if iterations is not None:
        key = {"slsqp": "max_iter", "ga": "generations", "grid": "points"}.get(method, "iterations")
        changes[key] = iterations
    if population is not None:
        if method in ("slsqp", "grid"):
            raise UserError(f"population: {method} has no population")
        changes["population"] = population
    if method == "slsqp":
        changes["box_constraints"] = False
    return replace(o, **changes)


def _iteration_count(method: str, options) -> int | None:
    """Iterations per start of an optimizer (for the progress bar); None when not known ahead."""
    from robodyn.identification import optimizers as opt

    o = options if options is not None else opt.default_options(method)
    for key in ("iterations", "generations", "max_iter"):
        if hasattr(o, key):
            return int(getattr(o, key))
    return None


def cmd_design(args) -> int:
    from robodyn.identification.excitation import (CartesianLimits, DesignRequest, InfeasibleDesign,
                                                   design_excitation)
    from robodyn.robot.loader import load_model
    from robodyn.trajectory import save_trajectory

    model = load_model(args.robot)
    box = _floats(args.box, 6, "box")
    cart = CartesianLimits(args.floor, None if box is None else box[:3], None if box is None else box[3:])
    from robodyn.identification.excitation.designer import DEFAULT_WF

    req = DesignRequest(family=args.family, harmonics=args.harmonics, wf=DEFAULT_WF if args.wf is None else args.wf,
                        period=args.period, order=args.order, objective=args.objective.replace("-", "_"),
                        columns=_columns(model, args.friction, args.rotor_inertia, "design"), optimizer=args.optimizer,
                        options=_options(args.optimizer, args.iterations, args.population), starts=args.starts,
                        seed=args.seed, grid=args.grid, margin=args.margin,
                        start=_floats(args.start, model.dof, "start"), cartesian=cart,
                        torque_limits=args.torque_limits, time_limit=args.time_limit,
                        sub_experiment=_sub_experiment(args.moving, args.part, model.dof),
                        grid_endpoint=args.grid_endpoint, limit_overrides=_limit_overrides(args.limit))

    per_start = _iteration_count(args.optimizer, req.options)
    show = not args.quiet
    try:
        with (bars.bar(args, total=per_start * args.starts if per_start else None, desc=f"design ({args.optimizer})",
                       unit="it") if show else bars.none()) as b:
            result = design_excitation(model, req, callback=bars.iterations(b, per_start, "best"),
                                       progress=bars.lines(args, b, "robodyn excitation design") if show else None)
    except InfeasibleDesign as exc:
        if args.json:
            print_json({"ok": False, "infeasible": exc.report})
        else:
            print("robodyn excitation design: cannot meet the request:", file=sys.stderr)
            for r in exc.report:
                print(f"  {r['constraint']}" + (f" on {r['joint']}" if r.get("joint") else "") + f": {r['detail']}",
                      file=sys.stderr)
        return 1
    save_trajectory(result.trajectory, args.out, robot=args.robot, meta=result.meta())
    if args.json:
        print_json(result.to_dict() | {"out": args.out})
        return 0
    m = result.metrics
    print(f"wrote {args.out}: {result.family.name}, period {result.family.period:.4g} s, "
          f"{result.family.dim} design variables")
    print(f"optimised: {result.objective}" + (" (raw, SI units)" if result.objective == "cond" else ""))
    print(f"cond(W_base) raw {m['cond_raw']:.4g}, column-scaled {m['cond_scaled']:.4g}, log det {m['logdet']:.4g} "
          f"({m['base_parameters']} base parameters, {m['samples']} samples at {req.report_rate:g} Hz)")
    print(f"limits: {'ok' if result.limit_report['ok'] else 'VIOLATED'} "
          f"({result.limit_report['samples_checked']} samples checked); design took {result.elapsed:.1f} s")
    return 0


def cmd_check(args) -> int:
    from robodyn.limits import check_trajectory
    from robodyn.robot.loader import load_model
    from robodyn.trajectory import load_trajectory

    from robodyn.identification.excitation.objectives import excitation_metrics

    model = load_model(args.robot)
    traj = load_trajectory(args.trajectory)
    if traj.dof != model.dof:
        raise UserError(f"--robot: {model.name} has {model.dof} joints, the trajectory {args.trajectory} has "
                        f"{traj.dof}; give the robot it was designed for")
    report = check_trajectory(model, traj, rate_hz=args.rate)
    doc = report.to_dict()
    if report.ok or traj.dof == model.dof:
        t, q, qd, qdd, _ = traj.sample(100.0)
        if traj.dof == model.dof:
            doc["excitation"] = excitation_metrics(model, _columns(model, args.friction, args.rotor_inertia, "check"),
                                                   q, qd, qdd)
    if args.json:
        print_json(doc)
    else:
        print(report.summary())
        for v in report.violations[1:]:
            print("  " + v.message())
        for limit, use in report.utilisation.items():
            print(f"  peak {limit:<9} " + " ".join(f"{u:6.1%}" for u in use))
        if "excitation" in doc:
            e = doc["excitation"]
            print(f"  cond(W_base) raw {e['cond_raw']:.4g}, column-scaled {e['cond_scaled']:.4g} at 100 Hz")
    return 0 if report.ok else 1


def cmd_sample(args) -> int:
    from robodyn.trajectory import load_trajectory

    traj = load_trajectory(args.trajectory)
    t, q, qd, qdd, _ = traj.sample(args.rate)
    n = traj.dof
    header = ["t"] + [f"{p}{i + 1}" for p in ("q", "qd", "qdd") for i in range(n)]
    np.savetxt(args.out, np.column_stack([t, q, qd, qdd]), delimiter=",", header=",".join(header), comments="",
               fmt="%.10g")
    if args.json:
        print_json({"out": args.out, "samples": int(t.size), "rate_hz": args.rate, "joints": n})
        return 0
    print(f"wrote {args.out}: {t.size} samples at {args.rate:g} Hz, {n} joints")
    return 0


def cmd_plot(args) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from robodyn.trajectory import load_trajectory

    traj = load_trajectory(args.trajectory)
    t, *values = traj.sample(args.rate)
    model = None
    if args.robot:
        from robodyn.robot.loader import load_model

        model = load_model(args.robot)
    labels = ("q", "qd", "qdd", "jerk")
    fig, axes = plt.subplots(4, 1, figsize=(10, 11), sharex=True)
    for ax, label, v in zip(axes, labels, values):
        for j in range(traj.dof):
            line, = ax.plot(t, v[:, j], lw=1, label=f"joint {j + 1}")
            if model is not None:
                lim = {"q": (model.q_min[j], model.q_max[j])}.get(label)
                if lim is None:
                    key = {"qd": "qd_max", "qdd": "qdd_max", "jerk": "qddd_max"}[label]
                    lim = (-getattr(model, key)[j], getattr(model, key)[j])
                if label != "jerk":
                    for b in lim:
                        ax.axhline(b, color=line.get_color(), lw=0.5, ls="--")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=min(traj.dof, 7), loc="upper right")
    axes[-1].set_xlabel("t [s]")
    fig.suptitle(f"{traj.family} trajectory, {traj.dof} joints, {traj.duration:.3g} s")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    if args.json:
        print_json({"out": args.out, "family": traj.family, "joints": traj.dof, "duration_s": traj.duration})
        return 0
    print(f"wrote {args.out}")
    return 0
