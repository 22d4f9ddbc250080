"""`robodyn calibrate ...`: kinematic calibration (seed 004).

    plan             random poses in the largest ISO 9283 test cube, checked for reach, singularity,
                     self-collision and tracker line of sight
    measure          visit the poses and read the tracker (simulated cell: --sim, the default)
    identify         geometric / geometric-then-stiffness / combined identification
    evaluate         position errors before and after calibration
    compensate       joint-space compensation of a target pose
    export-urdf      the calibrated joint origins as URDF
    identifiability  rank, singular values, condition number, redundant parameters
    replay           the seed 004 experiment on the simulated UR5, Table 4/5 style

Units on the command line are SI (m, rad, kg) unless an option says otherwise.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

from robodyn.cli import UserError, print_json


def _floats(text: str, count: int | None, field: str) -> np.ndarray:
    try:
        vals = np.array([float(v) for v in str(text).replace(" ", "").split(",") if v != ""])
    except ValueError:
        raise ValueError(f"{field}: expected comma-separated numbers, got {text!r}") from None
    if count is not None and vals.size != count:
        raise ValueError(f"{field}: expected {count} numbers, got {vals.size} ({text!r})")
    if not np.all(np.isfinite(vals)):
        raise ValueError(f"{field}: non-finite number in {text!r}")
    return vals


def _load_arg(text: str | None):
    from .stiffness import Load

    if not text:
        return None
    v = _floats(text, 4, "--load")
    return Load(float(v[0]), tuple(v[1:]))


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="kinematic calibration: plan, measure, identify, evaluate, compensate, "
                                         "export-urdf, identifiability, replay (seed 004)",
                       description="Kinematic calibration (seed 004). Units are SI (m, rad, kg) unless an option "
                                   "says otherwise; see docs/calibration.md.")
    act = p.add_subparsers(dest="action", metavar="ACTION")
    p.set_defaults(handler=lambda args: _help(p))

    a = act.add_parser("plan", help="plan measurement poses in the largest test cube")
    a.add_argument("--robot", default="ur5_seed004", help="ur5_seed004 (seed 004 frames), a built-in model or a file")
    a.add_argument("--poses", type=int, default=50)
    a.add_argument("--loaded", type=int, default=0, metavar="N",
                   help="also choose N of the poses for the loaded measurement (D-optimal for joint stiffness)")
    a.add_argument("--load", default="4.678,0,-0.03686,0.02985", metavar="KG,CX,CY,CZ",
                   help="payload the loaded subset is chosen for (default: seed 004's 4.678 kg)")
    a.add_argument("--optimal", type=int, default=0, metavar="POOL",
                   help="choose the poses D-optimally from POOL random candidates instead of taking them as drawn")
    a.add_argument("--tracker", default="2.0,0.0,0.2", help="tracker position in the robot base frame, m")
    a.add_argument("--tool", default="0.04,0.04,0.03", help="target ball in the flange frame, m")
    a.add_argument("--smr-axis", default="0,0,1", help="the ball's opening direction in the flange frame")
    a.add_argument("--floor-z", type=float, default=None, help="mounting plane height in the base frame, m")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--out", required=True, help="plan file (JSON)")
    a.add_argument("--json", action="store_true", help="print the plan summary as JSON")
    a.set_defaults(handler=cmd_plan)

    a = act.add_parser("measure", help="measure the planned poses (simulated cell)")
    a.add_argument("plan", help="plan file from 'calibrate plan'")
    a.add_argument("--robot", default=None, help="defaults to the plan's robot")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ", help="payload mass (kg) and centre of mass in the flange frame (m)")
    a.add_argument("--subset", choices=("all", "loaded"), default=None,
                   help="which poses: all, or the plan's loaded subset (default: loaded when --load is given and the plan has one)")
    a.add_argument("--sim", action="store_true", default=True,
                   help="measure a simulated robot with a simulated laser tracker (default)")
    a.add_argument("--daemon", default=None, metavar="ADDRESS",
                   help="move the real robot through the acquisition daemon and read its tracker (not available yet: issue 3)")
    a.add_argument("--truth-seed", type=int, default=0, help="seed of the simulated robot's true deviations (non-seed-004 robots)")
    a.add_argument("--seed", type=int, default=0, help="seed of the tracker noise")
    a.add_argument("--noise-um", type=float, default=15.0, help="tracker noise per axis, um (AT960: 15)")
    a.add_argument("--noise-um-per-m", type=float, default=6.0, help="range-dependent tracker noise, um/m (AT960: 6)")
    a.add_argument("--units", choices=("m", "mm"), default="m", help="position unit written to the CSV")
    a.add_argument("--out", required=True, help="measurement CSV")
    a.set_defaults(handler=cmd_measure)

    a = act.add_parser("identify", help="identify the geometry (and joint stiffness)")
    a.add_argument("measurements", help="unloaded measurement CSV")
    a.add_argument("--loaded", default=None, help="loaded measurement CSV at joint angles of the unloaded set")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ", help="payload of the loaded set (else from its metadata)")
    a.add_argument("--robot", default=None, help="defaults to the CSV metadata, else ur5_seed004")
    a.add_argument("--method", choices=("combined", "geometric", "geometric-stiffness"), default="combined")
    a.add_argument("--params", choices=("seed004", "all"), default=None,
                   help="parameter set: seed004 (rows 2..n) or all DH values (default: the model's list, else all)")
    a.add_argument("--free", default=None, help="explicit comma list of parameters to identify")
    a.add_argument("--identify-base", action="store_true", help="also identify the base pose (6 parameters)")
    a.add_argument("--identify-tool", action="store_true", help="also identify the target-ball offset (3 parameters)")
    a.add_argument("--hayati", action="store_true", help="add a Hayati tilt beta for each pair of parallel axes")
    a.add_argument("--tool", default=None, help="nominal target ball in the flange frame, m (else CSV metadata)")
    a.add_argument("--loss", choices=("linear", "huber", "soft_l1", "cauchy", "arctan"), default="linear")
    a.add_argument("--stiffness", default=None, metavar="K1,..,Kn", help="known joint stiffness, N·m/rad (skips its identification)")
    a.add_argument("--prior-stiffness", type=float, default=50000.0, help="stiffness kept for unexcited joints, N·m/rad")
    a.add_argument("--units", choices=("m", "mm"), default=None, help="position unit of the CSVs (default: detect)")
    a.add_argument("--angles", choices=("rad", "deg"), default=None, help="joint-angle unit of the CSVs (default: detect)")
    a.add_argument("--out", required=True, help="calibration result (JSON)")
    a.add_argument("--plot", default=None, help="PNG of the error per pose before and after")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_identify)

    a = act.add_parser("evaluate", help="position errors before and after calibration")
    a.add_argument("calibration", help="result of 'calibrate identify'")
    a.add_argument("measurements", help="measurement CSV")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ")
    a.add_argument("--units", choices=("m", "mm"), default=None)
    a.add_argument("--angles", choices=("rad", "deg"), default=None)
    a.add_argument("--plot", default=None, help="PNG of the error per pose before and after")
    a.add_argument("--per-pose", action="store_true", help="include every pose's error in --json output")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_evaluate)

    a = act.add_parser("compensate", help="compensated joint angles for a target pose")
    a.add_argument("calibration")
    a.add_argument("--target", required=True, metavar="X,Y,Z[,RX,RY,RZ]",
                   help="tool-point target in the measurement frame, m; optional orientation as a rotation vector, rad (UR pose format)")
    a.add_argument("--q0", default=None, help="joint angles (rad) near the wanted solution (required for a position-only target)")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_compensate)

    a = act.add_parser("export-urdf", help="the calibrated joint origins as URDF")
    a.add_argument("calibration")
    a.add_argument("--out", default=None, help="URDF file (default: print)")
    a.add_argument("--name", default=None)
    a.set_defaults(handler=cmd_export_urdf)

    a = act.add_parser("identifiability", help="rank, singular values and redundant parameters of the model")
    a.add_argument("plan", nargs="?", default=None, help="plan file (default: generic random poses)")
    a.add_argument("--robot", default=None)
    a.add_argument("--params", choices=("seed004", "all"), default=None)
    a.add_argument("--identify-base", action="store_true")
    a.add_argument("--identify-tool", action="store_true")
    a.add_argument("--hayati", action="store_true")
    a.add_argument("--tool", default="0.04,0.04,0.03")
    a.add_argument("--at", choices=("nominal", "seed004-truth"), default="nominal",
                   help="geometry to analyse at (seed004-truth: Table 3 deviations, ur5_seed004 only)")
    a.add_argument("--poses", type=int, default=50, help="generic poses when no plan is given")
    a.add_argument("--noise-um", type=float, default=27.0, help="measurement noise per axis for the standard deviations, um")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_identifiability)

    a = act.add_parser("replay", help="seed 004 experiment on the simulated UR5 (Table 4 and 5 rows)")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--poses", type=int, default=50)
    a.add_argument("--loaded", type=int, default=20)
    a.add_argument("--holdout", type=int, default=200)
    a.add_argument("--noise-um", type=float, default=15.0)
    a.add_argument("--noise-um-per-m", type=float, default=6.0)
    a.add_argument("--identify-tool", action="store_true")
    a.add_argument("--identify-base", action="store_true")
    a.add_argument("--plot", default=None, help="PNG prefix: writes PREFIX_no_load.png and PREFIX_loaded.png")
    a.add_argument("--json", action="store_true")
    a.set_defaults(handler=cmd_replay)


def _help(parser) -> int:
    parser.print_help()
    return 2


# --------------------------------------------------------------------------- helpers


def _geometric_model(robot_ref: str, tool, *, hayati: bool = False, base=None):
    from .files import load_robot
    from .parameters import geometric_model, parallel_axis_rows

    robot = load_robot(robot_ref)
    gm = geometric_model(robot, tool_offset=tool, base=base)
    if hayati:
        gm = geometric_model(robot, tool_offset=tool, base=base, hayati_rows=parallel_axis_rows(gm))
    return gm


def _free_names(gm, robot_ref: str, params: str | None, free: str | None, base: bool, tool: bool) -> list[str]:
    from .files import calibration_metadata
    from .parameters import BASE_NAMES, TOOL_NAMES, preset_free_names

    if free:
        names = [n.strip() for n in free.split(",") if n.strip()]
        gm.indices(names)  # validates
    elif params is None and calibration_metadata(robot_ref).get("free_parameters"):
        names = list(calibration_metadata(robot_ref)["free_parameters"])
        gm.indices(names)
        names += [f"beta{r + 1}" for r in gm.hayati_rows]
    else:
        return preset_free_names(gm, params or "all", identify_base=base, identify_tool=tool)
    names += list(BASE_NAMES) * base + list(TOOL_NAMES) * tool
    order = {n: k for k, n in enumerate(gm.names)}
    return sorted(dict.fromkeys(names), key=order.__getitem__)


def _floor(robot_ref: str, given: float | None) -> float:
    from .files import calibration_metadata

    if given is not None:
        return float(given)
    return float(calibration_metadata(robot_ref).get("floor_z", 0.0))


def _stats_text(label: str, s: dict) -> str:
    return (f"{label:<26} mean {s['mean_mm']:.4f}  max {s['max_mm']:.4f}  min {s['min_mm']:.4f}  "
            f"rms {s['rms_mm']:.4f} mm  ({s['poses']} poses)")


# --------------------------------------------------------------------------- commands


def cmd_plan(args) -> int:
    from .files import load_robot, robot_reference, save_json
    from .combined import usable_free_names
    from .identifiability import analyse_identifiability, metric_columns
    from .parameters import geometric_model, parameter_jacobian
    from .planning import CellSetup, plan_measurements
    from .replay import loaded_subset

    robot = load_robot(args.robot)
    setup = CellSetup(tracker_position=tuple(_floats(args.tracker, 3, "--tracker")),
                      tool_offset=tuple(_floats(args.tool, 3, "--tool")),
                      smr_axis=tuple(_floats(args.smr_axis, 3, "--smr-axis")),
                      floor_z=_floor(args.robot, args.floor_z))
    if args.poses < 1:
        raise ValueError(f"--poses: expected a positive number, got {args.poses}")
    gm = geometric_model(robot, tool_offset=setup.tool_offset)
    free = _free_names(gm, args.robot, None, None, False, False)
    usable, _, _ = usable_free_names(gm, free)
    idx = gm.indices(usable)

    def blocks(q):
        return metric_columns(parameter_jacobian(gm, gm.nominal, q)[:, :, idx], gm.angle_mask[idx])

    plan = plan_measurements(robot, setup, args.poses, seed=args.seed, optimal_from=args.optimal,
                             jacobian_blocks=blocks)
    plan.robot_name = robot_reference(args.robot)
    report = plan.to_dict()
    if args.loaded:
        if not 0 < args.loaded <= args.poses:
            raise ValueError(f"--loaded: expected 1..{args.poses} poses, got {args.loaded}")
        sub = loaded_subset(gm, plan.q, _load_arg(args.load), args.loaded)
        report["loaded_pose_ids"] = [plan.ids[i] for i in sub]
    ident = analyse_identifiability(gm, gm.nominal, plan.q, usable, 27e-6)
    report["info"]["identifiability"] = {k: ident.to_dict()[k] for k in ("rank", "parameter_count",
                                                                           "condition_number", "observability")}
    save_json(args.out, report)
    summary = {"out": args.out, "poses": args.poses, "cube": plan.cube.to_dict(), "selection": plan.selection,
               "iso9283_points": plan.iso_points.tolist(), "loaded_pose_ids": report.get("loaded_pose_ids", []),
               "identifiability": report["info"]["identifiability"]}
    if args.json:
        print_json(summary)
    else:
        c = plan.cube
        print(f"{args.poses} poses ({plan.selection}) in the test cube centred at {np.round(c.center, 4).tolist()} m, "
              f"edge {c.edge:.4f} m -> {args.out}")
        print(f"identification Jacobian at these poses: rank {ident.rank}/{len(usable)}, condition number "
              f"{ident.condition_number:.3g}, observability O1 {ident.observability['O1']:.3g}")
        if args.loaded:
            print(f"loaded subset ({args.loaded}): {' '.join(report['loaded_pose_ids'])}")
    return 0


def _sim_cell(robot_ref: str, setup_tool, tracker, noise, truth_seed: int, noise_seed: int):
    """The simulated cell for a robot: seed 004's Table 3 UR5, or seeded random deviations."""
    from .files import load_robot
    from .parameters import geometric_model
    from .simulation import (SimulatedCell, SimulatedRobot, SimulatedTracker, seed004_true_parameters)
    from .seed004 import TABLE3_STIFFNESS

    robot = load_robot(robot_ref)
    gm = geometric_model(robot, tool_offset=setup_tool)
    if robot.name == "ur5_seed004":
        truth = seed004_true_parameters(gm)
        compliance = 1.0 / TABLE3_STIFFNESS
    else:
        rng = np.random.default_rng(truth_seed)
        truth = gm.nominal.copy()
        for f, size in (("alpha", np.deg2rad(0.05)), ("a", 3e-4), ("d", 3e-4), ("theta", np.deg2rad(0.05))):
            truth[gm.row_index(f)] += rng.normal(scale=size, size=gm.dof)
        compliance = np.full(gm.dof, 1.0 / 50000.0)
    return gm, SimulatedCell(SimulatedRobot(gm, truth, compliance), SimulatedTracker(tracker, noise, noise_seed))


def cmd_measure(args) -> int:
    from .files import load_json, write_measurements_csv
    from .planning import Plan
    from .simulation import TrackerNoise, measure_poses

    doc = load_json(args.plan, "plan")
    plan = Plan.from_dict(doc)
    robot_ref = args.robot or plan.robot_name
    load = _load_arg(args.load)
    subset = args.subset or ("loaded" if load is not None and doc.get("loaded_pose_ids") else "all")
    ids = plan.ids
    index = np.arange(len(ids))
    if subset == "loaded":
        chosen = doc.get("loaded_pose_ids")
        if not chosen:
            raise ValueError("--subset: the plan has no loaded subset (plan with --loaded N)")
        index = np.array([ids.index(i) for i in chosen])
    if args.daemon:
        raise UserError("measure: --daemon is not available yet; the daemon-backed mover (issue 3) will implement "
                        "robodyn.calibration.simulation.PoseMeasurer. Use the simulated cell (--sim)")
    noise = TrackerNoise(args.noise_um * 1e-6, args.noise_um_per_m * 1e-6)
    # a different noise stream for every run: a loaded run must not repeat the unloaded noise
    noise_seed = zlib.crc32(f"{args.seed}|{args.load}|{subset}".encode())
    gm, cell = _sim_cell(robot_ref, plan.setup.tool_offset, np.array(plan.setup.tracker_position), noise,
                         args.truth_seed, noise_seed)
    if plan.q.shape[1] != gm.dof:
        raise ValueError(f"plan.poses: {plan.q.shape[1]} joint angles per pose but robot {robot_ref!r} has {gm.dof} joints")
    meas = measure_poses(cell, plan.q[index], load, [ids[i] for i in index])
    write_measurements_csv(args.out, meas, robot=robot_ref, tool=np.array(plan.setup.tool_offset), unit=args.units,
                           note=f"simulated cell, {subset} poses of {Path(args.plan).name}")
    print(f"measured {len(meas)} poses{' with a ' + str(load.mass) + ' kg payload' if load else ''} -> {args.out}")
    return 0


def _read_set(path, gm, args, load=None):
    from .files import load_measurements

    return load_measurements(path, gm, units=args.units, angles=args.angles, load=load)


def cmd_identify(args) -> int:
    from .combined import calibrate, error_stats, nominal_result
    from .files import measurement_frame, read_metadata, result_to_dict, robot_reference, save_json, stiffness_text

    meta = read_metadata(args.measurements)
    robot_ref = args.robot or meta.get("robot") or "ur5_seed004"
    if args.tool is not None:
        tool = _floats(args.tool, 3, "--tool")
    elif "tool_offset_m" in meta:
        tool = _floats(meta["tool_offset_m"], 3, "tool_offset_m")
    else:
        raise ValueError("--tool: the nominal target-ball offset is needed (not in the CSV metadata)")
    gm = _geometric_model(robot_ref, tool, hayati=args.hayati)
    noload, info = _read_set(args.measurements, gm, args)
    if noload.load is not None:
        raise ValueError(f"{Path(args.measurements).name}: the first CSV must be unloaded but its metadata has a payload")
    base_T, rms_aligned, rms_nominal = measurement_frame(gm, noload)
    if rms_nominal > 10 * rms_aligned and rms_nominal > 0.02:
        if not args.identify_base:
            raise ValueError(f"x/y/z: the positions are not in the robot base frame (the nominal model misses them by "
                             f"{rms_nominal * 1000:.1f} mm RMS, a rigid transform fits to {rms_aligned * 1000:.2f} mm); "
                             "pass --identify-base to identify the robot's pose in the measurement frame")
        gm = _geometric_model(robot_ref, tool, hayati=args.hayati, base=base_T)
    loaded = None
    if args.loaded:
        loaded, _ = _read_set(args.loaded, gm, args, load=_load_arg(args.load))
        if loaded.load is None:
            raise ValueError("--load: the loaded CSV has no payload in its metadata; give --load KG,CX,CY,CZ")
    free = _free_names(gm, robot_ref, args.params, args.free, args.identify_base, args.identify_tool)
    prior = np.full(gm.dof, 1.0 / args.prior_stiffness)
    known = None
    if args.stiffness:
        known = 1.0 / _floats(args.stiffness, gm.dof, "--stiffness")
    result = calibrate(gm, noload, loaded, method=args.method, free_names=free, prior_compliance=prior,
                       known_compliance=known, loss=args.loss)
    doc = result_to_dict(result, robot_reference(robot_ref))
    sets = {"no_load": noload} | ({"loaded": loaded} if loaded is not None else {})
    nominal = nominal_result(gm)
    doc["evaluation"] = {k: {"before": error_stats(nominal.errors(m)), "after": error_stats(result.errors(m))}
                         for k, m in sets.items()}
    doc["units"] = {"position": info["position_unit"], "angle": info["angle_unit"]}
    save_json(args.out, doc)
    if args.plot:
        from .plots import plot_errors_per_pose

        series = {}
        for k, m in sets.items():
            series[f"{k} before"] = nominal.errors(m) * 1000
            series[f"{k} after ({args.method})"] = result.errors(m) * 1000
        plot_errors_per_pose(args.plot, series, title=f"{Path(args.measurements).name}: error per pose")
    if args.json:
        print_json({k: doc[k] for k in ("method", "free_parameters", "dropped", "joint_stiffness", "iterations",
                                        "converged", "notes", "evaluation", "units")}
                   | {"parameters": {n: doc["parameters"][n] for n in result.free_names}, "out": args.out})
        return 0
    print(f"{args.method} identification of {len(result.free_names)} parameters from {len(noload)} poses"
          + (f" + {len(loaded)} loaded" if loaded is not None else "") + f" -> {args.out}")
    for k, ev in doc["evaluation"].items():
        print(_stats_text(f"{k} before", ev["before"]))
        print(_stats_text(f"{k} after", ev["after"]))
    print(f"{'parameter':<10}{'nominal':>14}{'identified':>14}{'std':>12}")
    for n in result.free_names:
        par = doc["parameters"][n]
        ang = gm.angle_mask[gm.index(n)]
        f = np.rad2deg if ang else (lambda v: v * 1000.0)
        unit = "deg" if ang else "mm"
        std = "" if par["std"] is None else f"{f(par['std']):.4g}"
        print(f"{n:<10}{f(par['nominal']):>14.5f}{f(par['identified']):>14.5f}{std:>12} {unit}")
    if args.method != "geometric":
        print("joint stiffness (N·m/rad): " + ", ".join(stiffness_text(k) for k in doc["joint_stiffness"]))
    for note in result.notes:
        print(f"note: {note}")
    return 0


def cmd_evaluate(args) -> int:
    from .combined import error_stats, nominal_result
    from .files import load_json, result_from_dict

    result = result_from_dict(load_json(args.calibration, "calibration"))
    gm = result.gm
    meas, info = _read_set(args.measurements, gm, args, load=_load_arg(args.load))
    before = nominal_result(gm).errors(meas)
    after = result.errors(meas)
    sb, sa = error_stats(before), error_stats(after)
    report = {"measurements": args.measurements, "method": result.method,
              "load": None if meas.load is None else meas.load.to_dict(),
              "before": sb, "after": sa,
              "max_reduction": 1.0 - sa["max_mm"] / sb["max_mm"] if sb["max_mm"] > 0 else None,
              "mean_reduction": 1.0 - sa["mean_mm"] / sb["mean_mm"] if sb["mean_mm"] > 0 else None,
              "units": {"position": info["position_unit"], "angle": info["angle_unit"]}}
    if args.per_pose:
        report["per_pose_mm"] = {"ids": meas.ids, "before": (before * 1000).tolist(), "after": (after * 1000).tolist()}
    if args.plot:
        from .plots import plot_errors_per_pose

        plot_errors_per_pose(args.plot, {"before (nominal)": before * 1000, f"after ({result.method})": after * 1000},
                             title=f"{Path(args.measurements).name}: error per pose")
    if args.json:
        print_json(report)
        return 0
    print(_stats_text("before (nominal)", sb))
    print(_stats_text(f"after ({result.method})", sa))
    print(f"max error reduced by {100 * report['max_reduction']:.1f} %, mean by {100 * report['mean_reduction']:.1f} %")
    return 0


def cmd_compensate(args) -> int:
    from scipy.spatial.transform import Rotation

    from .compensation import compensate
    from .files import load_json, result_from_dict

    result = result_from_dict(load_json(args.calibration, "calibration"))
    v = _floats(args.target, None, "--target")
    if v.size == 3:
        target = v
        if args.q0 is None:
            raise ValueError("--q0: a position-only target needs joint angles near the wanted solution")
    elif v.size == 6:
        target = np.eye(4)
        target[:3, :3] = Rotation.from_rotvec(v[3:]).as_matrix()
        target[:3, 3] = v[:3]
    else:
        raise ValueError(f"--target: expected X,Y,Z or X,Y,Z,RX,RY,RZ, got {v.size} numbers")
    q0 = np.zeros(result.gm.dof) if args.q0 is None else _floats(args.q0, result.gm.dof, "--q0")
    comp = compensate(result, target, q0, _load_arg(args.load))
    report = {"target": v.tolist()} | comp.to_dict()
    if args.json:
        print_json(report)
        return 0
    print("nominal joint angles (deg):     " + " ".join(f"{x:9.4f}" for x in report["q_nominal_deg"]))
    print("compensated joint angles (deg): " + " ".join(f"{x:9.4f}" for x in report["q_compensated_deg"]))
    print("compensated joint angles (rad): " + ",".join(f"{x:.9f}" for x in report["q_compensated_rad"]))
    print(f"predicted tool-point error: {report['predicted_error_before_mm']:.4f} mm at the nominal angles, "
          f"{report['predicted_error_after_mm']:.2e} mm after compensation")
    return 0


def cmd_export_urdf(args) -> int:
    from robodyn.robot.urdf import model_to_urdf

    from .files import load_json, result_from_dict
    from .parameters import robot_for

    result = result_from_dict(load_json(args.calibration, "calibration"))
    model = robot_for(result.gm, result.params)
    text = model_to_urdf(model, name=args.name or f"{model.name}_calibrated")
    note = ("<!-- robodyn calibrate export-urdf: joint origins from the identified "
            f"{result.gm.convention.upper()} parameters ({result.method} method). The tool link is the flange. "
            "URDF cannot hold joint stiffness: use 'robodyn calibrate compensate' for load and gravity deflection. -->\n")
    text = text.replace("?>\n", "?>\n" + note, 1)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"calibrated URDF -> {args.out}")
    else:
        print(text, end="")
    return 0


def cmd_identifiability(args) -> int:
    from .combined import usable_free_names
    from .files import load_json
    from .identifiability import analyse_identifiability, generic_configurations
    from .planning import Plan
    from .simulation import seed004_true_parameters

    plan = Plan.from_dict(load_json(args.plan, "plan")) if args.plan else None
    robot_ref = args.robot or (plan.robot_name if plan else "ur5_seed004")
    gm = _geometric_model(robot_ref, _floats(args.tool, 3, "--tool"), hayati=args.hayati)
    names = _free_names(gm, robot_ref, args.params, None, args.identify_base, args.identify_tool)
    if args.at == "seed004-truth":
        if gm.robot.name != "ur5_seed004":
            raise ValueError("--at: seed004-truth needs --robot ur5_seed004")
        params = seed004_true_parameters(gm)
    else:
        params = gm.nominal
    q = plan.q if plan else generic_configurations(gm, args.poses)
    sigma = args.noise_um * 1e-6
    full = analyse_identifiability(gm, params, q, names, sigma).to_dict()
    usable, _, _ = usable_free_names(gm, names)
    reduced = analyse_identifiability(gm, params, q, usable, sigma).to_dict()
    report = {"robot": robot_ref, "geometry": args.at, "poses": int(q.shape[0]), "requested": full,
              "after_dropping_structural_redundancies": reduced}
    if args.json:
        print_json(report)
        return 0
    for label, r in (("requested parameters", full), ("after dropping structural redundancies", reduced)):
        cond = r["condition_number"]
        print(f"{label}: {r['parameter_count']} parameters, rank {r['rank']}, condition number "
              f"{'inf' if cond is None else f'{cond:.3g}'} (unit-scaled columns, {r['poses']} poses)")
        for red in r["redundant"]:
            print(f"  redundant: {red['text']}")
        if r["poorly_identifiable"]:
            print(f"  poorly identifiable (uncertainty moves the points more than the {args.noise_um:g} um noise): "
                  + ", ".join(f"{n} (VIF {r['vif'][n]:.3g})" for n in r["poorly_identifiable"]))
        print("  singular values: " + " ".join("0" if s is None else f"{s:.3g}" for s in r["singular_values"]))
    return 0


def cmd_replay(args) -> int:
    from .replay import format_replay, run_seed004_replay
    from .simulation import TrackerNoise

    report = run_seed004_replay(seed=args.seed, noload_poses=args.poses, loaded_poses=args.loaded,
                                holdout=args.holdout, noise=TrackerNoise(args.noise_um * 1e-6, args.noise_um_per_m * 1e-6),
                                identify_tool=args.identify_tool, identify_base=args.identify_base)
    per_pose = report.pop("_per_pose_mm")
    if args.plot:
        from .plots import plot_errors_per_pose

        for cond, series in per_pose.items():
            plot_errors_per_pose(f"{args.plot}_{cond}.png", series,
                                 title=f"seed 004 replay, held-out poses, {cond.replace('_', ' ')} (true error)")
    if args.json:
        print_json(report)
    else:
        print(format_replay(report))
    return 0
