"""`robodyn calibrate ...`: kinematic calibration (Li et al. 2023, UR5 kinematic calibration with
joint stiffness, extended to real arms).

    plan             poses in the largest ISO 9283 test cube, checked for reach, singularity,
                     self-collision and tracker line of sight; random or D-optimal (DetMax exchange)
    measure          visit the poses with a simulated robot and laser tracker
    collect          visit the poses with the real robot through the acquisition daemon and pair each
                     pose with a measurement from the tracker (a file it writes, a TCP hook)
    advise           which model the data support (geometric, gravity sag without masses, joint
                     stiffness with them), by cross-validation over the poses
    identify         geometric / geometric-stiffness / combined / combined-gravity identification
    evaluate         position errors before and after calibration, with warnings
    compensate       joint-space compensation of a target pose, in controller joint angles
    identifiability  rank, singular values, condition number, redundant parameters

The calibrated joint origins as URDF: `robodyn export-urdf CALIBRATION`; the paper's experiment on
the simulated UR5: `robodyn reproduce calibration`. `calibrate export-urdf` and `calibrate replay`
are the old names (not listed; one deprecation line, removed in the next release).

Units on the command line are SI (m, rad, kg) unless an option says otherwise. Joint values in
files and on the command line are the controller's; the robot's joint map (its model file's
[joint_map]) converts them to model variables and back.

Each action parses its options, calls one function of robodyn.calibration (workflow, result_use,
collect, paper_replay) and prints what it returns.

Exit codes: 0 done; 2 a user-fixable error (one line on stderr); 3 (identify) the fit failed (did
not converge, or ended worse than it started): the first line of the output says so, the result
file is written with "status": "failed" and evaluate, compensate and export-urdf refuse it unless
given --accept-failed.
"""

from __future__ import annotations

import argparse

import numpy as np

from robodyn.errors import UserError
from robodyn.papers import cite

from . import progress as bars
from .common import add_json, add_out, deprecated, needs_a_command, nonnegative_float, positive_int, print_json

PAPER = cite("calibration")
LOAD_HELP = "payload mass (kg) and centre of mass in the flange frame (m)"
PARAMS_HELP = (f"which geometric parameters to identify: li2023 = the set of {PAPER} (every DH value but the "
               "first joint's), all = every DH value (default: the model's list, else all)")
HAYATI_HELP = ("for each pair of parallel joint axes, add a small tilt angle, which plain DH values cannot "
               "express (the Hayati parallel-axis parameters: Hayati 1983, robot arm geometric link parameter "
               "estimation)")
TARGETS_HELP = ("several targets (e.g. three retro-reflector balls, SMRs, on a nest), in the flange frame, m; "
                "else CSV metadata")
METHOD_CHOICES = ("geometric", "geometric-stiffness", "combined", "combined-gravity")
EXIT_FIT_FAILED = 3  # identify: the fit is not a result (the file is written, marked failed)
ACCEPT_FAILED_HELP = "use the calibration even if its fit failed (the file's status is 'failed')"


def add_accept_failed(a) -> None:
    a.add_argument("--accept-failed", action="store_true", help=ACCEPT_FAILED_HELP)
    # the old spelling: --force means "overwrite the default output file" everywhere else
    a.add_argument("--force", dest="accept_failed", action="store_true", help=argparse.SUPPRESS)


def parse_numbers(text, count, field):
    from robodyn.calibration.workflow import parse_numbers as parse  # imported when used: fast start-up

    return parse(text, count, field)


def parse_load(text):
    from robodyn.calibration.workflow import parse_load as parse

    return parse(text)


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="kinematic calibration: plan, measure, collect, identify, evaluate, "
                                         f"compensate, identifiability ({PAPER})",
                       description=f"Kinematic calibration after {PAPER}. Units are SI (m, rad, kg) unless an "
                                   "option says otherwise; joint values are the controller's. See docs/calibration.md.")
    act = p.add_subparsers(dest="action", metavar="ACTION")
    p.set_defaults(handler=needs_a_command(p, act))

    def add(name, handler, **kw):
        a = act.add_parser(name, **kw)
        a.set_defaults(handler=handler)
        return a

    a = add("plan", cmd_plan, help="plan measurement poses in the largest test cube")
    a.add_argument("--robot", required=True, help="ur5_li2023 (the paper's frames), a built-in model or a model file")
    a.add_argument("--poses", type=positive_int, default=50, help="number of poses (default 50)")
    a.add_argument("--loaded", type=int, default=0, metavar="N",
                   help="also choose N of the poses for the loaded measurement: those that best determine the joint "
                        "stiffness (D-optimal: the largest determinant of the information matrix)")
    a.add_argument("--load", default="4.678,0,-0.03686,0.02985", metavar="KG,CX,CY,CZ",
                   help="payload the loaded subset is chosen for (default: the paper's 4.678 kg)")
    a.add_argument("--optimal", type=int, default=0, metavar="POOL",
                   help="choose the poses that best determine the parameters from POOL random candidates (D-optimal: the "
                        "largest det(JᵀJ); greedy, then improved by exchanging poses, DetMax)")
    a.add_argument("--joint-space", action="store_true",
                   help="draw the poses uniformly in joint space instead of in the ISO 9283 cube (fast for arms "
                        "without a closed-form inverse kinematics)")
    a.add_argument("--joint-range", action="append", default=[], metavar="J:LOW:HIGH",
                   help="with --joint-space: a controller joint's range in degrees, e.g. 2:-30:50 (repeatable)")
    a.add_argument("--tracker", default="2.0,0.0,0.2", help="tracker position in the robot base frame, m")
    a.add_argument("--tool", default="0.04,0.04,0.03", help="target ball in the flange frame, m")
    a.add_argument("--smr-axis", default="0,0,1", help="the target ball's (retro-reflector, SMR) opening direction "
                                                        "in the flange frame")
    a.add_argument("--floor", type=float, default=None, metavar="Z",
                   help="height of the mounting plane in the base frame, m: poses keep the arm above it "
                        "(default: the model's floor_z, else 0)")
    a.add_argument("--floor-z", dest="floor", type=float, help=argparse.SUPPRESS)  # the old spelling
    a.add_argument("--seed", type=int, default=0, help="random seed of the pose draw (default 0)")
    add_out(a, "plan file (JSON)", required=True, metavar="JSON")
    add_json(a, "print the plan summary as JSON")

    a = add("measure", cmd_measure, help="measure the planned poses with a simulated robot and tracker")
    a.add_argument("plan", help="plan file from 'calibrate plan'")
    a.add_argument("--robot", default=None, help="defaults to the plan's robot")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ", help="payload mass (kg) and centre of mass in the flange frame (m)")
    a.add_argument("--subset", choices=("all", "loaded"), default=None,
                   help="which poses: all, or the plan's loaded subset (default: loaded when --load is given and the plan has one)")
    a.add_argument("--sim", action="store_true", default=True,
                   help="measure a simulated robot with a simulated laser tracker (the only choice here)")
    # not here (the real robot is measured with `calibrate collect`): accepted only to say so
    a.add_argument("--endpoint", "--daemon", dest="daemon", default=None, help=argparse.SUPPRESS)
    a.add_argument("--truth-seed", type=int, default=0, help="seed of the simulated robot's true deviations (robots other than ur5_li2023)")
    a.add_argument("--seed", type=int, default=0, help="seed of the tracker noise")
    a.add_argument("--noise-um", type=nonnegative_float, default=15.0, help="tracker noise per axis, um (AT960: 15)")
    a.add_argument("--noise-um-per-m", type=nonnegative_float, default=6.0,
                   help="range-dependent tracker noise, um/m (AT960: 6)")
    a.add_argument("--units", choices=("m", "mm"), default="m", help="position unit written to the CSV")
    add_out(a, "measurement CSV", required=True, metavar="CSV")
    add_json(a)

    a = add("collect", cmd_collect, help="move the robot through the plan with the daemon and record a measurement "
                                         "per pose from the tracker")
    add_collect_arguments(a)

    a = add("identify", cmd_identify, help="identify the geometry (and joint stiffness)")
    a.add_argument("measurements", help="unloaded measurement CSV")
    a.add_argument("--robot", required=True,
                   help="the robot model: ur5_li2023, a built-in model or a model file (with its [joint_map])")
    a.add_argument("--loaded", default=None, help="loaded measurement CSV at joint angles of the unloaded set")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ", help="payload of the loaded set (else from its metadata)")
    a.add_argument("--method", choices=METHOD_CHOICES, default=None,
                   help="default: what the data support: combined with a loaded set, geometric without one "
                        "(combined-gravity fits joint stiffness from the links' own weight and needs no payload)")
    a.add_argument("--params", choices=("li2023", "all"), default=None, metavar="SET", help=PARAMS_HELP)
    a.add_argument("--free", default=None, help="explicit comma list of parameters to identify")
    a.add_argument("--identify-base", action="store_true", help="also identify the base pose (6 parameters)")
    a.add_argument("--identify-tool", action="store_true", help="also identify the target offsets (3 per target, "
                                                                 "6 for an oriented one)")
    a.add_argument("--hayati", action="store_true", help=HAYATI_HELP)
    a.add_argument("--tool", default=None, help="nominal target ball in the flange frame, m (one target; else CSV metadata)")
    a.add_argument("--targets", default=None, metavar="NAME:X,Y,Z;...", help=TARGETS_HELP)
    a.add_argument("--oriented", default=None, metavar="NAME[,NAME]",
                   help="targets whose orientation is measured too (6-DOF probe, camera, mocap marker set)")
    a.add_argument("--backlash", default=None, metavar="J[,J]|auto",
                   help="combined-gravity: also fit gear play of these joints (1-based) where the data support it")
    a.add_argument("--joint-values", choices=("controller", "model"), default=None,
                   help="what the q columns hold (default: the CSV's joint_values metadata, else controller)")
    a.add_argument("--loss", choices=("linear", "huber", "soft_l1", "cauchy", "arctan"), default="linear",
                   help="robust losses down-weight residuals beyond 3 robust standard deviations of the "
                        "least-squares fit's residuals (or 3 x --noise-um)")
    a.add_argument("--noise-um", type=float, default=None,
                   help="measurement noise per axis, um: a robust loss's scale is 3 times this instead of the "
                        "spread of the least-squares residuals")
    a.add_argument("--stiffness", default=None, metavar="K1,..,Kn", help="known joint stiffness, N·m/rad (skips its identification)")
    a.add_argument("--prior-stiffness", type=float, default=50000.0, help="stiffness kept for unexcited joints, N·m/rad")
    a.add_argument("--units", choices=("m", "mm"), default=None, help="position unit of the CSVs (default: detect)")
    a.add_argument("--angles", choices=("rad", "deg"), default=None, help="joint-angle unit of the CSVs (default: detect)")
    add_out(a, "calibration result (JSON)", required=True, metavar="JSON")
    a.add_argument("--plot", default=None, help="PNG of the error per pose before and after")
    add_json(a)

    a = add("advise", cmd_advise, help="which model the data support: geometric, gravity sag without link masses, "
                                       "or joint stiffness with them, compared by cross-validation over the poses")
    a.add_argument("measurements", help="unloaded measurement CSV")
    a.add_argument("--robot", required=True,
                   help="the robot model: ur5_li2023, a built-in model or a model file (with its [joint_map])")
    a.add_argument("--folds", type=positive_int, default=4,
                   help="groups of poses each left out of a fit in turn (pose k in group k mod FOLDS; default 4)")
    a.add_argument("--params", choices=("li2023", "all"), default=None, metavar="SET", help=PARAMS_HELP)
    a.add_argument("--free", default=None, help="explicit comma list of parameters to identify")
    a.add_argument("--identify-base", action="store_true", help="also identify the base pose (6 parameters)")
    a.add_argument("--identify-tool", action="store_true", help="also identify the target offsets")
    a.add_argument("--hayati", action="store_true", help=HAYATI_HELP)
    a.add_argument("--tool", default=None, help="nominal target ball in the flange frame, m (one target; else CSV metadata)")
    a.add_argument("--targets", default=None, metavar="NAME:X,Y,Z;...", help=TARGETS_HELP)
    a.add_argument("--joint-values", choices=("controller", "model"), default=None,
                   help="what the q columns hold (default: the CSV's joint_values metadata, else controller)")
    a.add_argument("--units", choices=("m", "mm"), default=None, help="position unit of the CSV (default: detect)")
    a.add_argument("--angles", choices=("rad", "deg"), default=None, help="joint-angle unit of the CSV (default: detect)")
    add_json(a)

    a = add("evaluate", cmd_evaluate, help="position errors before and after calibration")
    a.add_argument("calibration", help="result of 'calibrate identify'")
    a.add_argument("measurements", help="measurement CSV")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ", help=LOAD_HELP)
    a.add_argument("--joint-values", choices=("controller", "model"), default=None,
                   help="what the q columns hold (default: the CSV's joint_values metadata, else controller)")
    a.add_argument("--units", choices=("m", "mm"), default=None, help="position unit of the CSV (default: detect)")
    a.add_argument("--angles", choices=("rad", "deg"), default=None,
                   help="joint-angle unit of the CSV (default: detect)")
    a.add_argument("--plot", default=None, help="PNG of the error per pose before and after")
    a.add_argument("--per-pose", action="store_true", help="include every point's error in --json output")
    add_accept_failed(a)
    add_json(a)

    a = add("compensate", cmd_compensate, help="compensated controller joint angles for a target pose")
    a.add_argument("calibration", help="result of 'calibrate identify'")
    a.add_argument("--target", required=True, metavar="X,Y,Z[,RX,RY,RZ]",
                   help="tool-point target in the measurement frame, m; optional orientation as a rotation vector, rad (UR pose format)")
    a.add_argument("--point", default=None, help="which target is the tool point (default: the first)")
    a.add_argument("--q0", default=None, help="controller joint angles (rad) near the wanted solution (required for a position-only target)")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ", help=LOAD_HELP)
    add_accept_failed(a)
    add_json(a)

    a = act.add_parser("export-urdf")  # deprecated: not listed
    a.set_defaults(handler=deprecated(cmd_export_urdf, "calibrate export-urdf", "export-urdf CALIBRATION"))
    a.add_argument("calibration", help="result of 'calibrate identify'")
    add_out(a, "URDF file (default: print)", metavar="URDF")
    a.add_argument("--name", default=None, help="the robot name written in the URDF")
    add_accept_failed(a)
    add_json(a, "print {out, urdf, joint_map_file} as JSON (the URDF text inside when there is no --out)")

    a = add("identifiability", cmd_identifiability, help="rank, singular values and redundant parameters of the model")
    a.add_argument("plan", nargs="?", default=None, help="plan file (default: generic random poses)")
    a.add_argument("--robot", default=None, help="required without a plan (a plan names its robot)")
    a.add_argument("--params", choices=("li2023", "all"), default=None, metavar="SET", help=PARAMS_HELP)
    a.add_argument("--identify-base", action="store_true", help="also analyse the base pose (6 parameters)")
    a.add_argument("--identify-tool", action="store_true", help="also analyse the target offsets")
    a.add_argument("--hayati", action="store_true", help=HAYATI_HELP)
    a.add_argument("--tool", default="0.04,0.04,0.03", help="target ball in the flange frame, m")
    a.add_argument("--at", choices=("nominal", "li2023-truth"), default="nominal",
                   help="geometry to analyse at (li2023-truth: the paper's Table 3 deviations, ur5_li2023 only)")
    a.add_argument("--poses", type=positive_int, default=50, help="generic poses when no plan is given")
    a.add_argument("--noise-um", type=float, default=27.0, help="measurement noise per axis for the standard deviations, um")
    add_json(a)

    a = act.add_parser("replay")  # deprecated: not listed
    a.set_defaults(handler=deprecated(cmd_replay, "calibrate replay", "reproduce calibration"))
    a.add_argument("--seed", type=int, default=0, help="random seed of the simulated robot and tracker (default 0)")
    a.add_argument("--poses", type=positive_int, default=50, help="unloaded poses identified on (default 50)")
    a.add_argument("--loaded", type=positive_int, default=20, help="loaded poses identified on (default 20)")
    a.add_argument("--check-poses", type=positive_int, default=200,
                   help="poses measured only to check the calibration (default 200)")
    a.add_argument("--holdout", dest="check_poses", type=positive_int, help=argparse.SUPPRESS)  # the old spelling
    a.add_argument("--noise-um", type=nonnegative_float, default=15.0, help="tracker noise per axis, um (default 15)")
    a.add_argument("--noise-um-per-m", type=nonnegative_float, default=6.0,
                   help="range-dependent tracker noise, um/m (default 6)")
    a.add_argument("--identify-tool", action="store_true", help="also identify the target offsets")
    a.add_argument("--identify-base", action="store_true", help="also identify the base pose")
    a.add_argument("--plot", default=None, help="PNG prefix: writes PREFIX_no_load.png and PREFIX_loaded.png")
    add_json(a)


# --------------------------------------------------------------------------- text output


def _stats_text(label: str, s: dict) -> str:
    if not s.get("poses"):
        return f"{label:<56} (no points)"
    return (f"{label:<56} mean {s['mean_mm']:.4f}  max {s['max_mm']:.4f}  min {s['min_mm']:.4f}  "
            f"rms {s['rms_mm']:.4f} mm  ({s['poses']} points)")


def _evaluation_lines(ev: dict, method: str, base_source: str, prefix: str = "") -> list[str]:
    lines = [_stats_text(f"{prefix}before: nominal model ({base_source})", ev["before"])]
    if ev.get("before_base_fitted"):
        lines.append(_stats_text(f"{prefix}before: nominal model + base fitted to this set", ev["before_base_fitted"]))
    lines.append(_stats_text(f"{prefix}after ({method})", ev["after"]))
    return lines


def _short_base(text: str) -> str:
    return "base fitted to the identification set" if text.startswith("fitted") else "base frame as measured"


# --------------------------------------------------------------------------- commands


def cmd_plan(args) -> int:
    from robodyn.calibration.workflow import plan_calibration

    with bars.bar(args, total=100, desc="plan", unit="%") as b:
        outcome = plan_calibration(args.robot, args.out, poses=args.poses, loaded=args.loaded,
                                   load=parse_load(args.load), optimal=args.optimal, joint_space=args.joint_space,
                                   joint_range=args.joint_range, tracker=parse_numbers(args.tracker, 3, "--tracker"),
                                   tool=parse_numbers(args.tool, 3, "--tool"),
                                   smr_axis=parse_numbers(args.smr_axis, 3, "--smr-axis"), floor_z=args.floor,
                                   seed=args.seed, progress=bars.stages(b))
    summary, plan, ident = outcome.summary, outcome.plan, outcome.identifiability
    if args.json:
        print_json(summary)
        return 0
    c = plan.cube
    where = "spread over joint space, inside a box" if args.joint_space else "in the ISO 9283 test cube"
    print(f"{args.poses} poses ({plan.selection}) {where} centred at {np.round(c.center, 4).tolist()} m, "
          f"edge {c.edge:.4f} m -> {args.out}")
    obs = ident.observability
    print(f"identification Jacobian at these poses: rank {ident.rank}/{outcome.parameter_count}, condition number "
          f"{ident.condition_number:.3g}; observability O1 {obs['O1']:.3g}, O2 {obs['O2']:.3g}, O3 {obs['O3']:.3g}, "
          f"O4 {obs['O4']:.3g}")
    if plan.info.get("log_det"):
        ld = plan.info["log_det"]
        print(f"log det(JᵀJ): first {args.poses} drawn {ld['first_drawn']:.2f}, greedy {ld['greedy']:.2f}, "
              f"after DetMax exchange {ld['exchange']:.2f}")
    if ident.poorly_identifiable:
        print(f"warning: poorly identifiable with this plan: {', '.join(ident.poorly_identifiable)}")
    if args.loaded:
        print(f"loaded subset ({args.loaded}): {' '.join(summary['loaded_pose_ids'])}")
    return 0


def cmd_measure(args) -> int:
    from robodyn.calibration.workflow import measure_simulated

    if args.daemon:
        raise UserError("measure: measures the simulated cell only; to move the real robot through the acquisition "
                        f"daemon and record the tracker, run 'robodyn calibrate collect {args.plan} --endpoint "
                        f"{args.daemon} --source ...'")
    report = measure_simulated(args.plan, args.out, robot_ref=args.robot, load_text=args.load, subset=args.subset,
                               truth_seed=args.truth_seed, seed=args.seed, noise_um=args.noise_um,
                               noise_um_per_m=args.noise_um_per_m, units=args.units)
    if args.json:
        print_json(report)
        return 0
    load = report["load"]
    print(f"measured {report['poses']} poses{' with a ' + str(load['mass_kg']) + ' kg payload' if load else ''} "
          f"-> {args.out}")
    return 0


def _identify_options(args):
    from robodyn.calibration.workflow import IdentifyOptions

    backlash = ()
    if args.backlash:
        backlash = ("auto" if args.backlash.strip() == "auto"
                    else [int(v) - 1 for v in parse_numbers(args.backlash, None, "--backlash")])
    return IdentifyOptions(
        robot=args.robot, loaded=args.loaded, load=parse_load(args.load), method=args.method, params=args.params,
        free=args.free, identify_base=args.identify_base, identify_tool=args.identify_tool, hayati=args.hayati,
        tool=None if args.tool is None else tuple(parse_numbers(args.tool, 3, "--tool")), targets=args.targets,
        oriented=[n.strip() for n in args.oriented.split(",")] if args.oriented else None, backlash=backlash,
        joint_values=args.joint_values, loss=args.loss, noise_um=args.noise_um, stiffness=args.stiffness,
        prior_stiffness=args.prior_stiffness, units=args.units, angles=args.angles)


def cmd_identify(args) -> int:
    from robodyn.calibration.result_file import stiffness_text
    from robodyn.calibration.workflow import identify_calibration

    opts = _identify_options(args)
    label = args.method or ("combined" if args.loaded else "geometric")
    with bars.bar(args, total=100, desc=f"calibrate ({label})", unit="%") as b:
        ident = identify_calibration(args.measurements, opts, args.out, plot=args.plot, progress=bars.stages(b))
    doc, result, gm, method = ident.doc, ident.result, ident.gm, ident.method
    code = EXIT_FIT_FAILED if result.failed else 0
    if args.json:
        print_json({k: doc[k] for k in ("status", "failure", "parameter_count", "method", "free_parameters", "dropped", "joint_stiffness", "iterations",
                                        "converged", "notes", "evaluation", "units", "warnings", "outliers",
                                        "backlash", "chi2", "data", "base_frame", "robust_loss")}
                   | {"parameters": {n: doc["parameters"][n] for n in result.free_names}, "out": args.out})
        return code
    if result.failed:
        print(f"calibration FAILED: {result.failure}; {args.out} is marked failed and is not a result")
    print(f"{method} identification of {_parameter_count_text(result)} from {doc['data']['no_load']}"
          + (f"; loaded: {doc['data']['loaded']}" if "loaded" in doc["data"] else "") + f" -> {args.out}")
    for k, ev in doc["evaluation"].items():
        for line in _evaluation_lines(ev, method, _short_base(ident.info["base_frame"]), f"{k.replace('_', '-')} "):
            print(line)
    print(f"{'parameter':<14}{'nominal':>14}{'identified':>14}{'std':>12}")
    for n in result.free_names:
        par = doc["parameters"][n]
        ang = gm.angle_mask[gm.index(n)]
        f = np.rad2deg if ang else (lambda v: v * 1000.0)
        unit = "deg" if ang else "mm"
        std = "" if par["std"] is None else f"{f(par['std']):.4g}"
        print(f"{n:<14}{f(par['nominal']):>14.5f}{f(par['identified']):>14.5f}{std:>12} {unit}")
    shown = doc["joint_stiffness"]
    if result.lumped is not None:  # lumped terms, not a stiffness per joint: only a payload's compliances are
        shown = [k for k in shown if k["identified"]]
    if method != "geometric" and shown:
        print("joint stiffness (N·m/rad): " + ", ".join(stiffness_text(k) for k in shown))
    for note in result.notes:
        print(f"note: {note}")
    for w in ident.warnings:
        print(w)
    return code


def _parameter_count_text(result) -> str:
    """'26 parameters (20 geometric, 6 joint compliances)': every number the fit identified."""
    geo, comp = len(result.free_names), int(np.sum(result.compliance_identified))
    lumped = 0 if result.lumped is None else result.lumped.count
    play = result.parameter_count - geo - comp - lumped
    parts = ([f"{geo} geometric"] + [f"{comp} joint compliances"] * (comp > 0)
             + [f"{lumped} lumped gravity terms (compliance x mass moment)"] * (lumped > 0) + [f"{play} backlash"] * (play > 0))
    return f"{result.parameter_count} parameters" + (f" ({', '.join(parts)})" if len(parts) > 1 else "")


def cmd_advise(args) -> int:
    from robodyn.calibration.workflow import IdentifyOptions, advise_calibration

    opts = IdentifyOptions(robot=args.robot, params=args.params, free=args.free, identify_base=args.identify_base,
                           identify_tool=args.identify_tool, hayati=args.hayati,
                           tool=None if args.tool is None else tuple(parse_numbers(args.tool, 3, "--tool")),
                           targets=args.targets, joint_values=args.joint_values, units=args.units, angles=args.angles)
    with bars.bar(args, total=100, desc="advise", unit="%") as b:
        report = advise_calibration(args.measurements, opts, folds=args.folds, progress=bars.stages(b))
    if args.json:
        print_json(report)
        return 0
    print(f"held-out error by cross-validation over {report['poses']} poses in {report['folds']} folds, mm rms:")
    for name, row in report["candidates"].items():
        if row["held_out_rms_mm"] is None:
            print(f"  {name:<46} not fitted: {row['why_not']}")
        else:
            print(f"  {name:<46} {row['held_out_rms_mm']:.4f}")
    print(report["sentence"])
    return 0


def cmd_evaluate(args) -> int:
    from robodyn.calibration.workflow import evaluate_calibration

    report = evaluate_calibration(args.calibration, args.measurements, load=parse_load(args.load),
                                  joint_values=args.joint_values, units=args.units, angles=args.angles,
                                  per_pose=args.per_pose, plot=args.plot, force=args.accept_failed)
    if args.json:
        print_json(report)
        return 0
    for line in _evaluation_lines(report, report["method"], _short_base(report["before_base"])):
        print(line)
    if report["max_reduction"] is not None:
        from robodyn.calibration.checks import change_text

        print(f"{change_text(report['max_reduction'], 'max error')}, {change_text(report['mean_reduction'], 'mean error')} "
              "(against the first 'before': the nominal model)")
    for w in report["warnings"]:
        print(w)
    return 0


def cmd_compensate(args) -> int:
    from robodyn.calibration.result_use import compensate_target

    report, identity = compensate_target(args.calibration, args.target, point=args.point, q0=args.q0,
                                         load=parse_load(args.load), force=args.accept_failed)
    if args.json:
        print_json(report)
        return 0
    mapped = "" if identity else " (controller values, through the model's joint map)"
    print(f"nominal joint angles (deg){mapped}:     " + " ".join(f"{x:9.4f}" for x in report["q_nominal_deg"]))
    print(f"compensated joint angles (deg){mapped}: " + " ".join(f"{x:9.4f}" for x in report["q_compensated_deg"]))
    print("compensated joint angles (rad): " + ",".join(f"{x:.9f}" for x in report["q_compensated_rad"]))
    print(f"predicted tool-point error: {report['predicted_error_before_mm']:.4f} mm at the nominal angles, "
          f"{report['predicted_error_after_mm']:.2e} mm after compensation")
    return 0


def cmd_export_urdf(args) -> int:
    from robodyn.calibration.result_use import export_calibrated_urdf

    report = export_calibrated_urdf(args.calibration, args.out, name=args.name, force=args.accept_failed)
    if args.json:
        print_json(report)
    elif args.out:
        print(f"calibrated URDF -> {args.out}")
        if report["joint_map_file"]:
            print(f"model file with the joint map -> {report['joint_map_file']}")
    else:
        print(report["urdf"], end="")
    return 0


def cmd_identifiability(args) -> int:
    from robodyn.calibration.workflow import identifiability_report

    report = identifiability_report(args.plan, robot_ref=args.robot, params=args.params,
                                    identify_base=args.identify_base, identify_tool=args.identify_tool,
                                    hayati=args.hayati, tool=parse_numbers(args.tool, 3, "--tool"), at=args.at,
                                    poses=args.poses, noise_um=args.noise_um)
    if args.json:
        print_json(report)
        return 0
    for label, key in (("requested parameters", "requested"),
                       ("after dropping structural redundancies", "after_dropping_structural_redundancies")):
        r = report[key]
        cond = r["condition_number"]
        print(f"{label}: {r['parameter_count']} parameters, rank {r['rank']}, condition number "
              f"{'inf' if cond is None else f'{cond:.3g}'} (unit-scaled columns, {r['poses']} poses)")
        for red in r["redundant"]:
            print(f"  redundant: {red['text']}")
        if r["poorly_identifiable"]:
            print(f"  warning: poorly identifiable (uncertainty moves the points more than the {args.noise_um:g} um "
                  "noise): " + ", ".join(f"{n} (VIF {r['vif'][n]:.3g})" for n in r["poorly_identifiable"]))
        print("  singular values: " + " ".join("0" if s is None else f"{s:.3g}" for s in r["singular_values"]))
    return 0


def cmd_replay(args) -> int:
    from robodyn.calibration.paper_replay import format_replay, replay_with_plots
    from robodyn.calibration.simulation import TrackerNoise

    report = replay_with_plots(args.plot, seed=args.seed, noload_poses=args.poses, loaded_poses=args.loaded,
                               holdout=args.check_poses,
                               noise=TrackerNoise(args.noise_um * 1e-6, args.noise_um_per_m * 1e-6),
                               identify_tool=args.identify_tool, identify_base=args.identify_base)
    if args.json:
        print_json(report)
    else:
        print(format_replay(report))
    return 0


# --------------------------------------------------------------------------- collect


def add_collect_arguments(a) -> None:
    a.add_argument("plan", help="plan file from 'calibrate plan'")
    from .daemon_client import add_endpoint_arguments

    add_endpoint_arguments(a)
    a.add_argument("--daemon", dest="endpoint", help=argparse.SUPPRESS)  # the old spelling
    a.add_argument("--source", required=True, metavar="file:PATH|tcp:HOST:PORT",
                   help="where the measurements come from: a file the tracker software appends to, or a TCP hook")
    a.add_argument("--request-file", default=None, help="file source: append 'pose_id,q1..qn' here when the arm is at rest")
    a.add_argument("--source-units", choices=("m", "mm"), default="m", help="unit of the coordinates the source sends")
    a.add_argument("--robot", default=None, help="the calibration model (default: the plan's robot)")
    a.add_argument("--targets", default=None, metavar="NAME:X,Y,Z;...",
                   help="several targets per pose in the flange frame, m (default: the plan's single ball)")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ", help="payload on the flange during this collection")
    a.add_argument("--subset", choices=("all", "loaded"), default=None,
                   help="which poses: all, or the plan's loaded subset (default: loaded when --load is given)")
    a.add_argument("--settle", type=float, default=0.5, help="hold at each pose before reading, s")
    a.add_argument("--window", type=float, default=0.5, help="window over which the joint values at rest are averaged, s")
    a.add_argument("--measure-timeout", type=float, default=30.0, metavar="S",
                   help="how long to wait for each pose's measurement from --source before skipping the pose "
                        "(default 30 s)")
    a.add_argument("--units", choices=("m", "mm"), default="m", help="position unit written to the CSV")
    add_out(a, "measurement CSV", required=True, metavar="CSV")
    add_json(a)



def cmd_collect(args) -> int:
    from robodyn.calibration_collect import collect_to_csv

    from .daemon_client import daemon_client

    client = daemon_client(args)
    with bars.bar(args, total=None, desc="poses", unit="pose") as b:
        def progress(pose, total):
            b.total = total
            b.set_postfix_str(f"{pose.pose_id}: {'skipped' if pose.skipped else 'measured'}", refresh=False)
            b.update(1)

        report, result = collect_to_csv(args.plan, args.out, client=client, source=args.source,
                                        request_file=args.request_file, source_units=args.source_units,
                                        robot_ref=args.robot, targets=args.targets, load=parse_load(args.load),
                                        subset=args.subset, settle=args.settle, window=args.window,
                                        timeout=args.measure_timeout, units=args.units, progress=progress)
    got = report["collected"]
    if args.json:
        print_json(report)
    else:
        print(f"collected {got} of {report['planned']} poses" + (f" -> {args.out}" if got else ""))
        for p in result.skipped:
            print(f"warning: pose {p.pose_id} skipped: {p.skipped}")
        if result.stopped:
            print(f"warning: collection stopped: {result.stopped}")
    if not got:
        raise UserError("collect: no pose was measured; nothing written")
    return 0 if not result.stopped else 1
