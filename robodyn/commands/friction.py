"""`robodyn friction design | fit`: the constant-velocity friction experiment (Ni et al. 2024,
"Dynamic parameter identification of a seven-degree-of-freedom manipulator based on the white shark
optimizer", §2.1) from the command line, the chain `robodyn demo` runs:

    robodyn friction design --robot panda --out friction_sweep.json
    robodyn run --robot panda --trajectory friction_sweep.json --wait     # the daemon runs and records it
    robodyn friction fit RUN.mcap --robot panda --friction stribeck --out friction.json
    robodyn identify EXCITATION.mcap --robot panda --friction-model friction.json --out result.json

The experiment runs through the daemon with the ordinary `robodyn run`; the math is
robodyn.identification.friction's, the one the demo uses.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .common import add_friction, add_json, add_out, floats, friction_law, needs_a_command, print_json, require_friction
from .daemon_client import add_endpoint_arguments, local_recording


def register(sub) -> None:
    from robodyn.identification.names import EXPERIMENT_HALF_WIDTH, EXPERIMENT_SPEEDS

    p = sub.add_parser("friction", help="the constant-velocity friction experiment: design the sweeps, fit the "
                                        "recorded runs (run them with `robodyn run`)",
                       description="Joint friction from constant-velocity sweeps (Ni et al. 2024, Dynamic "
                                   "parameter identification of a seven-degree-of-freedom manipulator based on the "
                                   "white shark optimizer): each joint moves at constant speed forward and back over the same "
                                   "angles; at equal angles gravity and inertia cancel, half the torque difference "
                                   "is friction. Design, run with `robodyn run`, fit, then subtract the fit in "
                                   "`robodyn identify --friction-model`.")
    fsub = p.add_subparsers(dest="friction_command", metavar="SUBCOMMAND")
    p.set_defaults(handler=needs_a_command(p, fsub))

    d = fsub.add_parser("design", help="write the sweeps of the friction experiment as one trajectory file for "
                                       "`robodyn run`, checked against the robot's limits")
    d.add_argument("--robot", required=True, metavar="NAME|FILE", help="built-in model name or model file")
    d.add_argument("--joints", default=None, metavar="J1,J2,..",
                   help="joints to sweep, 1-based, in this order (default: all); the others hold --hold")
    d.add_argument("--hold", default=None, metavar="Q1,..,QN",
                   help="joint positions (rad, m) every joint holds while another sweeps, and the centre of each "
                        "sweep (default: the simulated robot's start pose: Franka's ready pose for panda and fr3, "
                        "zero or mid-range for other arms; on a real robot give the pose to measure at)")
    d.add_argument("--half-width", type=float, default=EXPERIMENT_HALF_WIDTH, metavar="RAD",
                   help=f"each joint sweeps hold +- this angle (default {EXPERIMENT_HALF_WIDTH} rad); the speed ramps "
                        "and settling happen outside it")
    d.add_argument("--speeds", default=",".join(f"{v:g}" for v in EXPERIMENT_SPEEDS), metavar="V1,V2,..",
                   help="constant speeds in rad/s, at least 3 (default: ten from 0.015 to 0.6, dense around "
                        "the Franka's Stribeck velocities); every speed is run forward and back")
    d.add_argument("--scale", type=float, default=0.5, metavar="F",
                   help="speed ramps and moves use this fraction of the acceleration and jerk limits (default 0.5)")
    add_out(d, "trajectory JSON to write (for `robodyn run`)", required=True)
    add_json(d)
    d.set_defaults(handler=cmd_design)

    f = fsub.add_parser("fit", help="fit a friction model per joint to recorded friction experiments; writes "
                                    "the file `robodyn identify --friction-model` reads")
    f.add_argument("recordings", nargs="+", metavar="REC",
                   help="recordings of `robodyn friction design` trajectories: a daemon's recording id (the daemon "
                        "at --endpoint says where its file is; it must be readable on this host) or an .mcap file; "
                        "a joint swept in several recordings is fitted to all its points")
    add_endpoint_arguments(f)
    f.add_argument("--robot", required=True, metavar="NAME|FILE", help="built-in model name or model file")
    # the old spelling; no default of its own, which would hide --friction's
    f.add_argument("--model", dest="friction", type=friction_law(), default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    add_friction(f, default="stribeck", extra="the law fitted to each joint's friction points (stribeck: Ni et al. "
                                              "2024 eq. 2; none is refused: there is nothing to fit)")
    f.add_argument("--viscous", action="store_true", help="stribeck: also fit a viscous coefficient fv")
    add_out(f, "friction JSON to write", required=True)
    add_json(f)
    f.set_defaults(handler=cmd_fit)


def _load_model(name: str):
    from robodyn.robot.loader import load_model

    return load_model(name)


def cmd_design(args) -> int:
    import numpy as np

    from robodyn.errors import UserError
    from robodyn.identification.friction import design_experiment, sweep_spans
    from robodyn.trajectory import save_trajectory

    model = _load_model(args.robot)
    if args.joints is None:
        joints = list(range(model.dof))
    else:
        values = floats(args.joints, "--joints")
        if not values or any(v != int(v) or not 1 <= v <= model.dof for v in values) or len(set(values)) < len(values):
            raise UserError(f"--joints: expected distinct joint numbers 1..{model.dof}, got {args.joints!r}")
        joints = [int(v) - 1 for v in values]
    if args.hold is None:
        from robodyn.simulation.plant import default_initial_q

        hold = default_initial_q(model)
    else:
        hold = np.array(floats(args.hold, "--hold", model.dof))
    speeds = floats(args.speeds, "--speeds")
    if not 0 < args.scale <= 1:
        raise UserError(f"--scale: must be in (0, 1], got {args.scale}")
    traj, report = design_experiment(model, hold, joints, args.half_width, speeds, args.scale)
    meta = {"experiment": "friction", "joints": [j + 1 for j in joints], "speeds": speeds,
            "half_width": args.half_width, "hold": hold.tolist()}
    save_trajectory(traj, args.out, robot=args.robot, meta=meta)
    sweeps = len(sweep_spans(traj))
    if args.json:
        print_json({"out": args.out, "duration_s": traj.duration, "sweeps": sweeps, "limits": report.to_dict(),
                    **meta})
        return 0
    print(f"wrote {args.out}: {sweeps} sweeps ({len(speeds)} speeds x joint(s) {', '.join(str(j + 1) for j in joints)}"
          f" over +-{args.half_width:g} rad), {traj.duration:.1f} s of motion")
    print(f"limits: {report.summary()}")
    print(f"next: robodyn run --robot {args.robot} --trajectory {args.out} --wait")
    return 0


def cmd_fit(args) -> int:
    from robodyn.errors import UserError
    from robodyn.identification.friction import fit_experiment, points_from_recording

    from robodyn.robot.friction_names import MODELS

    require_friction(args, MODELS, "is no law to fit")
    model = _load_model(args.robot)
    if not model.joint_map.is_identity:
        raise UserError(f"--robot: {model.name} maps controller joints onto model joints (joint_map); the friction "
                        "experiment is fitted per controller joint, for models without a joint map only")
    if args.viscous and args.friction != "stribeck":
        raise UserError(f"--viscous: only for --friction stribeck ({args.friction} always has a viscous term)")
    points, paths = [], []
    for ref in args.recordings:
        path = local_recording(args, ref)
        paths.append(path)
        found = points_from_recording(path)
        if found and max(p.joint for p in found) >= model.dof:
            raise UserError(f"{path}: sweeps joint {max(p.joint for p in found) + 1}, robot {model.name} has "
                            f"{model.dof} joints")
        points += found
    friction, fits = fit_experiment(points, args.friction, model.dof, viscous=args.viscous)
    swept = [fit.joint + 1 for fit in fits]
    doc = {"format": "robodyn.friction", "version": 1, "robot": model.name,
           "origin": "constant-velocity friction experiment (Ni et al. 2024 §2.1), fitted by `robodyn friction fit`",
           "recordings": [str(p.resolve()) for p in paths], "joints": swept,
           "model": friction.to_dict(),
           "fits": [{"joint": fit.joint + 1, "kind": fit.kind, "params": fit.params, "rmse": fit.rmse, "r2": fit.r2,
                     "points": sum(p.joint == fit.joint for p in points), "converged": fit.converged, "iterations": fit.iterations} for fit in fits],
           "points": [{"joint": p.joint + 1, "speed": p.speed, "measured_speed": p.measured_speed,
                       "torque": p.torque, "std": p.std, "pairs": p.pairs} for p in points]}
    Path(args.out).write_text(json.dumps(doc, indent=1))
    unswept = [j + 1 for j in range(model.dof) if j + 1 not in swept]
    if args.json:
        print_json({"out": args.out, "joints": swept, "not_swept": unswept, "model": friction.to_dict(),
                    "fits": doc["fits"]})
        return 0
    names = sorted({k for fit in fits for k in fit.params})
    print(f"{args.friction} friction of {model.name} from {len(points)} friction points -> {args.out}")
    print(f"{'joint':<8}{'points':>7}" + "".join(f"{k:>11}" for k in names) + f"{'RMSE [N.m]':>12}{'R^2':>8}")
    for fit in fits:
        count = sum(p.joint == fit.joint for p in points)
        print(f"{model.joint_names[fit.joint]:<8}{count:>7}"
              + "".join(f"{fit.params.get(k, 0.0):>11.4f}" for k in names) + f"{fit.rmse:>12.4f}{fit.r2:>8.4f}")
    if unswept:
        print(f"note: joint(s) {', '.join(map(str, unswept))} were not swept: their friction is zero in {args.out}, "
              "so identification subtracts none there", file=sys.stderr)
    print(f"next: robodyn identify RECORDING --robot {args.robot} --friction-model {args.out} --out result.json")
    return 0
