"""`robodyn calibrate ...`: kinematic calibration (Li et al. 2023, UR5 kinematic calibration with
joint stiffness, extended to real arms).

    plan             poses in the largest ISO 9283 test cube, checked for reach, singularity,
                     self-collision and tracker line of sight; random or D-optimal (DetMax exchange)
    measure          visit the poses with a simulated robot and laser tracker
    collect          visit the poses with the real robot through the acquisition daemon and pair each
                     pose with a measurement from the tracker (a file it writes, a TCP hook)
    identify         geometric / geometric-stiffness / combined / combined-gravity identification
    evaluate         position errors before and after calibration, with warnings
    compensate       joint-space compensation of a target pose, in controller joint angles
    export-urdf      the calibrated joint origins as URDF
    identifiability  rank, singular values, condition number, redundant parameters
    replay           the paper's experiment on the simulated UR5, Table 4/5 style

Units on the command line are SI (m, rad, kg) unless an option says otherwise. Joint values in
files and on the command line are the controller's; the robot's joint map (its model file's
[joint_map]) converts them to model variables and back.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

from robodyn.cli import UserError, print_json
from robodyn.papers import cite

from . import progress as bars
from .common import add_json

PAPER = cite("calibration")
METHOD_CHOICES = ("geometric", "geometric-stiffness", "combined", "combined-gravity")


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
    from robodyn.calibration.stiffness import Load

    if not text:
        return None
    v = _floats(text, 4, "--load")
    return Load(float(v[0]), tuple(v[1:]))


def register(sub) -> None:
    p = sub.add_parser("calibrate", help="kinematic calibration: plan, measure, collect, identify, evaluate, "
                                         f"compensate, export-urdf, identifiability, replay ({PAPER})",
                       description=f"Kinematic calibration after {PAPER}. Units are SI (m, rad, kg) unless an "
                                   "option says otherwise; joint values are the controller's. See docs/calibration.md.")
    act = p.add_subparsers(dest="action", metavar="ACTION")
    p.set_defaults(handler=lambda args: _help(p))

    def add(name, handler, **kw):
        a = act.add_parser(name, **kw)
        a.set_defaults(handler=handler)
        return a

    a = add("plan", cmd_plan, help="plan measurement poses in the largest test cube")
    a.add_argument("--robot", required=True, help="ur5_li2023 (the paper's frames), a built-in model or a model file")
    a.add_argument("--poses", type=int, default=50)
    a.add_argument("--loaded", type=int, default=0, metavar="N",
                   help="also choose N of the poses for the loaded measurement (D-optimal for joint stiffness)")
    a.add_argument("--load", default="4.678,0,-0.03686,0.02985", metavar="KG,CX,CY,CZ",
                   help="payload the loaded subset is chosen for (default: the paper's 4.678 kg)")
    a.add_argument("--optimal", type=int, default=0, metavar="POOL",
                   help="choose the poses D-optimally (greedy, then DetMax exchange) from POOL random candidates")
    a.add_argument("--joint-space", action="store_true",
                   help="draw the poses uniformly in joint space instead of in the ISO 9283 cube (fast for arms "
                        "without a closed-form inverse kinematics)")
    a.add_argument("--joint-range", action="append", default=[], metavar="J:LOW:HIGH",
                   help="with --joint-space: a controller joint's range in degrees, e.g. 2:-30:50 (repeatable)")
    a.add_argument("--tracker", default="2.0,0.0,0.2", help="tracker position in the robot base frame, m")
    a.add_argument("--tool", default="0.04,0.04,0.03", help="target ball in the flange frame, m")
    a.add_argument("--smr-axis", default="0,0,1", help="the ball's opening direction in the flange frame")
    a.add_argument("--floor-z", type=float, default=None, help="mounting plane height in the base frame, m")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--out", required=True, help="plan file (JSON)")
    add_json(a, "print the plan summary as JSON")

    a = add("measure", cmd_measure, help="measure the planned poses with a simulated robot and tracker")
    a.add_argument("plan", help="plan file from 'calibrate plan'")
    a.add_argument("--robot", default=None, help="defaults to the plan's robot")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ", help="payload mass (kg) and centre of mass in the flange frame (m)")
    a.add_argument("--subset", choices=("all", "loaded"), default=None,
                   help="which poses: all, or the plan's loaded subset (default: loaded when --load is given and the plan has one)")
    a.add_argument("--sim", action="store_true", default=True,
                   help="measure a simulated robot with a simulated laser tracker (the only choice here)")
    a.add_argument("--daemon", default=None, metavar="ADDRESS",
                   help="not here: the real robot is measured with 'robodyn calibrate collect PLAN --daemon ADDRESS'")
    a.add_argument("--truth-seed", type=int, default=0, help="seed of the simulated robot's true deviations (robots other than ur5_li2023)")
    a.add_argument("--seed", type=int, default=0, help="seed of the tracker noise")
    a.add_argument("--noise-um", type=float, default=15.0, help="tracker noise per axis, um (AT960: 15)")
    a.add_argument("--noise-um-per-m", type=float, default=6.0, help="range-dependent tracker noise, um/m (AT960: 6)")
    a.add_argument("--units", choices=("m", "mm"), default="m", help="position unit written to the CSV")
    a.add_argument("--out", required=True, help="measurement CSV")
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
    a.add_argument("--params", choices=("li2023", "all"), type=_old_preset_name, default=None,
                   help="parameter set: li2023 (the paper's rows 2..n) or all DH values (default: the model's "
                        "list, else all)")
    a.add_argument("--free", default=None, help="explicit comma list of parameters to identify")
    a.add_argument("--identify-base", action="store_true", help="also identify the base pose (6 parameters)")
    a.add_argument("--identify-tool", action="store_true", help="also identify the target offsets (3 per target, "
                                                                 "6 for an oriented one)")
    a.add_argument("--hayati", action="store_true", help="add a Hayati tilt beta for each pair of parallel axes")
    a.add_argument("--tool", default=None, help="nominal target ball in the flange frame, m (one target; else CSV metadata)")
    a.add_argument("--targets", default=None, metavar="NAME:X,Y,Z;...",
                   help="several targets (e.g. three SMRs on a nest), in the flange frame, m; else CSV metadata")
    a.add_argument("--oriented", default=None, metavar="NAME[,NAME]",
                   help="targets whose orientation is measured too (6-DOF probe, camera, mocap marker set)")
    a.add_argument("--backlash", default=None, metavar="J[,J]|auto",
                   help="combined-gravity: also fit gear play of these joints (1-based) where the data support it")
    a.add_argument("--joint-values", choices=("controller", "model"), default=None,
                   help="what the q columns hold (default: the CSV's joint_values metadata, else controller)")
    a.add_argument("--loss", choices=("linear", "huber", "soft_l1", "cauchy", "arctan"), default="linear",
                   help="robust losses down-weight residuals beyond 3 stated noise levels")
    a.add_argument("--stiffness", default=None, metavar="K1,..,Kn", help="known joint stiffness, N·m/rad (skips its identification)")
    a.add_argument("--prior-stiffness", type=float, default=50000.0, help="stiffness kept for unexcited joints, N·m/rad")
    a.add_argument("--units", choices=("m", "mm"), default=None, help="position unit of the CSVs (default: detect)")
    a.add_argument("--angles", choices=("rad", "deg"), default=None, help="joint-angle unit of the CSVs (default: detect)")
    a.add_argument("--out", required=True, help="calibration result (JSON)")
    a.add_argument("--plot", default=None, help="PNG of the error per pose before and after")
    add_json(a)

    a = add("evaluate", cmd_evaluate, help="position errors before and after calibration")
    a.add_argument("calibration", help="result of 'calibrate identify'")
    a.add_argument("measurements", help="measurement CSV")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ")
    a.add_argument("--joint-values", choices=("controller", "model"), default=None)
    a.add_argument("--units", choices=("m", "mm"), default=None)
    a.add_argument("--angles", choices=("rad", "deg"), default=None)
    a.add_argument("--plot", default=None, help="PNG of the error per pose before and after")
    a.add_argument("--per-pose", action="store_true", help="include every point's error in --json output")
    add_json(a)

    a = add("compensate", cmd_compensate, help="compensated controller joint angles for a target pose")
    a.add_argument("calibration")
    a.add_argument("--target", required=True, metavar="X,Y,Z[,RX,RY,RZ]",
                   help="tool-point target in the measurement frame, m; optional orientation as a rotation vector, rad (UR pose format)")
    a.add_argument("--point", default=None, help="which target is the tool point (default: the first)")
    a.add_argument("--q0", default=None, help="controller joint angles (rad) near the wanted solution (required for a position-only target)")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ")
    add_json(a)

    a = add("export-urdf", cmd_export_urdf, help="the calibrated joint origins as URDF")
    a.add_argument("calibration")
    a.add_argument("--out", default=None, help="URDF file (default: print)")
    a.add_argument("--name", default=None)
    add_json(a, "print {out, urdf, joint_map_file} as JSON (the URDF text inside when there is no --out)")

    a = add("identifiability", cmd_identifiability, help="rank, singular values and redundant parameters of the model")
    a.add_argument("plan", nargs="?", default=None, help="plan file (default: generic random poses)")
    a.add_argument("--robot", default=None, help="required without a plan (a plan names its robot)")
    a.add_argument("--params", choices=("li2023", "all"), type=_old_preset_name, default=None)
    a.add_argument("--identify-base", action="store_true")
    a.add_argument("--identify-tool", action="store_true")
    a.add_argument("--hayati", action="store_true")
    a.add_argument("--tool", default="0.04,0.04,0.03")
    a.add_argument("--at", choices=("nominal", "li2023-truth"), default="nominal", type=_old_preset_name,
                   help="geometry to analyse at (li2023-truth: the paper's Table 3 deviations, ur5_li2023 only)")
    a.add_argument("--poses", type=int, default=50, help="generic poses when no plan is given")
    a.add_argument("--noise-um", type=float, default=27.0, help="measurement noise per axis for the standard deviations, um")
    add_json(a)

    a = add("replay", cmd_replay, help=f"the experiment of {PAPER} on the simulated UR5 (Table 4 and 5 rows)")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--poses", type=int, default=50)
    a.add_argument("--loaded", type=int, default=20)
    a.add_argument("--holdout", type=int, default=200)
    a.add_argument("--noise-um", type=float, default=15.0)
    a.add_argument("--noise-um-per-m", type=float, default=6.0)
    a.add_argument("--identify-tool", action="store_true")
    a.add_argument("--identify-base", action="store_true")
    a.add_argument("--plot", default=None, help="PNG prefix: writes PREFIX_no_load.png and PREFIX_loaded.png")
    add_json(a)


def _old_preset_name(text: str) -> str:
    """The old names of the paper's parameter set and truth (seed004...) are still accepted."""
    return {"seed004": "li2023", "seed004-truth": "li2023-truth"}.get(text, text)


def _help(parser) -> int:
    parser.print_help()
    return 2


# --------------------------------------------------------------------------- helpers


def _free_names(gm, robot_ref: str, params: str | None, free: str | None, base: bool, tool: bool) -> list[str]:
    from robodyn.calibration.robots import calibration_metadata
    from robodyn.calibration.parameters import BASE_NAMES, preset_free_names

    if free:
        names = [n.strip() for n in free.split(",") if n.strip()]
        gm.indices(names)  # validates
    elif params is None and calibration_metadata(robot_ref).get("free_parameters"):
        names = list(calibration_metadata(robot_ref)["free_parameters"])
        gm.indices(names)
        names += [f"beta{r + 1}" for r in gm.hayati_rows]
    else:
        return preset_free_names(gm, params or "all", identify_base=base, identify_tool=tool)
    names += list(BASE_NAMES) * base + gm.all_tool_names() * tool + gm.all_plane_names()
    order = {n: k for k, n in enumerate(gm.names)}
    return sorted(dict.fromkeys(names), key=order.__getitem__)


def _floor(robot_ref: str, given: float | None) -> float:
    from robodyn.calibration.robots import calibration_metadata

    if given is not None:
        return float(given)
    return float(calibration_metadata(robot_ref).get("floor_z", 0.0))


def _stats_text(label: str, s: dict) -> str:
    if not s.get("poses"):
        return f"{label:<56} (no points)"
    return (f"{label:<56} mean {s['mean_mm']:.4f}  max {s['max_mm']:.4f}  min {s['min_mm']:.4f}  "
            f"rms {s['rms_mm']:.4f} mm  ({s['poses']} points)")


def _gm_for(robot, targets, *, hayati: bool, base=None, planes=None):
    from robodyn.calibration.parameters import geometric_model, parallel_axis_rows

    gm = geometric_model(robot, targets=targets, base=base, planes=planes)
    if hayati:
        gm = geometric_model(robot, targets=targets, base=base, planes=planes, hayati_rows=parallel_axis_rows(gm))
    return gm


def read_identification_set(path, robot, *, tool=None, targets_text=None, oriented=None, hayati=False,
                            identify_base=False, units=None, angles=None, joint_values=None):
    """The model and the unloaded set of an identification: targets from the options or the CSV,
    the base frame (nominal, or fitted when the data are in tracker coordinates), the planes of any
    planar contacts. Returns (gm, measurements, info)."""
    from robodyn.calibration.measurement_csv import (_unit_choice, detect_units, joint_values_kind, load_measurements, measurement_frame, read_measurements_csv, targets_from_metadata)
    from robodyn.calibration.measurements import plane_from_points
    from robodyn.calibration.parameters import all_target_positions

    raw = read_measurements_csv(path, robot.dof)
    meta = dict(raw.meta)
    if targets_text:
        meta["targets"] = targets_text
        meta.pop("tool_offset_m", None)
    targets = targets_from_metadata(meta, tool=tool, oriented=oriented)
    if targets is None:
        raise ValueError("--tool: the target offsets are needed (not in the CSV metadata): --tool X,Y,Z for one "
                         "target or --targets NAME:X,Y,Z;... for several")
    gm = _gm_for(robot, targets, hayati=hayati)
    labels = raw.plane_labels
    if labels:
        # planes: nominal frames from the nominal robot's contact points, after the units are known
        pu = _unit_choice("position", units, raw.hints["position"], meta.get("position_unit"))
        au = _unit_choice("angle", angles, raw.hints["angle"], meta.get("angle_unit"))
        pu, au, _ = detect_units(gm, raw, pu, au, Path(path).name, joint_values_kind(meta, joint_values))
        units, angles = pu, au
    meas, info = load_measurements(path, gm if not labels else _gm_for(robot, targets, hayati=hayati,
                                                                       planes=[(lb, np.eye(4)) for lb in labels]),
                                   units=units, angles=angles, joint_values=joint_values, raw=raw)
    if meas.load is not None:
        raise ValueError(f"{Path(path).name}: the first CSV must be unloaded but its metadata has a payload")
    base_T, rms_aligned, rms_nominal = measurement_frame(gm, meas)
    base = None
    info["base_frame"] = "as measured (the data are in the robot base frame)"
    if rms_nominal > 10 * rms_aligned and rms_nominal > 0.02:
        if not identify_base:
            raise ValueError(f"x/y/z: the positions are not in the robot base frame (the nominal model misses them by "
                             f"{rms_nominal * 1000:.1f} mm RMS, a rigid transform fits to {rms_aligned * 1000:.2f} mm); "
                             "pass --identify-base to identify the robot's pose in the measurement frame")
        base = base_T
        info["base_frame"] = "fitted to the identification set (the data are in tracker coordinates)"
    planes = None
    if labels:
        gm_b = _gm_for(robot, targets, hayati=hayati, base=base)
        nominal = all_target_positions(gm_b, gm_b.nominal, meas.q)
        planes = []
        for j, lb in enumerate(labels):
            rows = np.argwhere(meas.plane == j)
            if len(rows) < 3:
                raise ValueError(f"plane: plane {lb!r} has {len(rows)} contacts; at least 3 are needed")
            planes.append((lb, plane_from_points(nominal[rows[:, 0], rows[:, 1]])))
    gm = _gm_for(robot, targets, hayati=hayati, base=base, planes=planes)
    info["targets"] = [t.to_dict() for t in gm.targets]
    return gm, meas, info


def _require_robot(args, meta: dict) -> str:
    from robodyn.calibration.robots import robot_reference

    stated = meta.get("robot")
    if stated and robot_reference(stated) != robot_reference(args.robot) and Path(stated).name != Path(args.robot).name:
        raise ValueError(f"--robot: {args.robot!r} was given but {Path(args.measurements).name} was measured on "
                         f"{stated!r}")
    return args.robot


def _fit_base_only(gm, meas):
    """The nominal model with only its base frame fitted to these measurements (paper-style 'before')."""
    from robodyn.calibration.methods import nominal_result
    from robodyn.calibration.geometric import fit_geometry
    from robodyn.calibration.parameters import BASE_NAMES

    if meas.point_mask.sum() * 3 < 12:
        return None
    fit = fit_geometry(gm, meas.q, meas, list(BASE_NAMES))
    return nominal_result(gm, params=fit.params)


def _evaluation(gm, result, meas) -> dict:
    from robodyn.calibration.methods import error_stats, nominal_result

    out = {"before": error_stats(nominal_result(gm).errors(meas))}
    based = _fit_base_only(gm, meas)
    out["before_base_fitted"] = None if based is None else error_stats(based.errors(meas))
    out["after"] = error_stats(result.errors(meas))
    return out


def _evaluation_lines(ev: dict, method: str, base_source: str, prefix: str = "") -> list[str]:
    lines = [_stats_text(f"{prefix}before: nominal model ({base_source})", ev["before"])]
    if ev.get("before_base_fitted"):
        lines.append(_stats_text(f"{prefix}before: nominal model + base fitted to this set", ev["before_base_fitted"]))
    lines.append(_stats_text(f"{prefix}after ({method})", ev["after"]))
    return lines


# --------------------------------------------------------------------------- commands


def cmd_plan(args) -> int:
    from robodyn.calibration.methods import usable_free_names
    from robodyn.calibration.result_file import save_json
    from robodyn.calibration.robots import load_robot, robot_reference
    from robodyn.calibration.identifiability import analyse_identifiability, metric_columns
    from robodyn.calibration.parameters import geometric_model, parameter_jacobian
    from robodyn.calibration.planning import CellSetup, plan_measurements
    from robodyn.calibration.paper_replay import loaded_subset

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

    low = high = None
    if args.joint_range:
        if not args.joint_space:
            raise ValueError("--joint-range: only with --joint-space")
        low, high = _joint_ranges(robot, setup, args.joint_range)
    with bars.bar(args, total=100, desc="plan", unit="%") as b:
        plan = plan_measurements(robot, setup, args.poses, seed=args.seed, optimal_from=args.optimal,
                                 jacobian_blocks=blocks, joint_space=args.joint_space, joint_low=low, joint_high=high,
                                 progress=bars.stages(b))
    plan.robot_name = robot_reference(args.robot)
    report = plan.to_dict()
    if args.loaded:
        if not 0 < args.loaded <= args.poses:
            raise ValueError(f"--loaded: expected 1..{args.poses} poses, got {args.loaded}")
        sub = loaded_subset(gm, plan.q, _load_arg(args.load), args.loaded)
        report["loaded_pose_ids"] = [plan.ids[i] for i in sub]
    ident = analyse_identifiability(gm, gm.nominal, plan.q, usable, 27e-6)
    report["info"]["identifiability"] = {k: ident.to_dict()[k] for k in ("rank", "parameter_count",
                                                                           "condition_number", "observability",
                                                                           "poorly_identifiable")}
    save_json(args.out, report)
    summary = {"out": args.out, "poses": args.poses, "cube": plan.cube.to_dict(), "selection": plan.selection,
               "iso9283_points": plan.iso_points.tolist(), "loaded_pose_ids": report.get("loaded_pose_ids", []),
               "identifiability": report["info"]["identifiability"], "log_det": plan.info.get("log_det")}
    if args.json:
        print_json(summary)
        return 0
    c = plan.cube
    where = "spread over joint space, inside a box" if args.joint_space else "in the ISO 9283 test cube"
    print(f"{args.poses} poses ({plan.selection}) {where} centred at {np.round(c.center, 4).tolist()} m, "
          f"edge {c.edge:.4f} m -> {args.out}")
    obs = ident.observability
    print(f"identification Jacobian at these poses: rank {ident.rank}/{len(usable)}, condition number "
          f"{ident.condition_number:.3g}; observability O1 {obs['O1']:.3g}, O2 {obs['O2']:.3g}, O3 {obs['O3']:.3g}, "
          f"O4 {obs['O4']:.3g}")
    if plan.info.get("log_det"):
        ld = plan.info["log_det"]
        print(f"log det(JᵀJ): first {args.poses} drawn {ld['first_drawn']:.2f}, greedy {ld['greedy']:.2f}, "
              f"after DetMax exchange {ld['exchange']:.2f}")
    if ident.poorly_identifiable:
        print(f"warning: poorly identifiable with this plan: {', '.join(ident.poorly_identifiable)}")
    if args.loaded:
        print(f"loaded subset ({args.loaded}): {' '.join(report['loaded_pose_ids'])}")
    return 0


def _joint_ranges(robot, setup, specs) -> tuple[np.ndarray, np.ndarray]:
    """Controller-value bounds for joint-space sampling: every joint over the controller image of
    the model's limits where the map is diagonal (else +-pi), overridden by 'J:LOW:HIGH' (deg)."""
    jm = robot.joint_map
    lo_m = np.maximum(robot.q_min + setup.joint_margin, -np.pi)
    hi_m = np.minimum(robot.q_max - setup.joint_margin, np.pi)
    if jm.is_diagonal:
        lo, hi = jm.limits_to_controller(lo_m, hi_m)
    else:
        lo, hi = np.full(robot.dof, -np.pi), np.full(robot.dof, np.pi)  # the model's limits reject the rest
    for spec in specs:
        try:
            j, low, high = spec.split(":")
            j = int(j) - 1
            low, high = np.deg2rad(float(low)), np.deg2rad(float(high))
        except ValueError:
            raise ValueError(f"--joint-range: expected J:LOW:HIGH in degrees, got {spec!r}") from None
        if not 0 <= j < robot.dof:
            raise ValueError(f"--joint-range: joint {j + 1} is outside 1..{robot.dof}")
        if not low < high:
            raise ValueError(f"--joint-range: joint {j + 1}: LOW must be below HIGH, got {spec!r}")
        lo[j], hi[j] = low, high
    return lo, hi


def _sim_cell(robot_ref: str, setup_tool, tracker, noise, truth_seed: int, noise_seed: int):
    """The simulated cell for a robot: the paper's Table 3 UR5, or seeded random deviations."""
    from robodyn.calibration.robots import load_robot
    from robodyn.calibration.parameters import geometric_model
    from robodyn.calibration.li2023 import TABLE3_STIFFNESS
    from robodyn.calibration.simulation import SimulatedCell, SimulatedRobot, SimulatedTracker, ur5_li2023_truth

    robot = load_robot(robot_ref)
    gm = geometric_model(robot, tool_offset=setup_tool)
    if robot.name == "ur5_li2023":
        truth = ur5_li2023_truth(gm)
        compliance = 1.0 / TABLE3_STIFFNESS
    else:
        rng = np.random.default_rng(truth_seed)
        truth = gm.nominal.copy()
        for f, size in (("alpha", np.deg2rad(0.05)), ("a", 3e-4), ("d", 3e-4), ("theta", np.deg2rad(0.05))):
            truth[gm.row_index(f)] += rng.normal(scale=size, size=gm.dof)
        compliance = np.full(gm.dof, 1.0 / 50000.0)
    return gm, SimulatedCell(SimulatedRobot(gm, truth, compliance), SimulatedTracker(tracker, noise, noise_seed))


def _plan_subset(doc: dict, plan, load, subset: str | None):
    subset = subset or ("loaded" if load is not None and doc.get("loaded_pose_ids") else "all")
    ids = plan.ids
    index = np.arange(len(ids))
    if subset == "loaded":
        chosen = doc.get("loaded_pose_ids")
        if not chosen:
            raise ValueError("--subset: the plan has no loaded subset (plan with --loaded N)")
        index = np.array([ids.index(i) for i in chosen])
    return subset, index


def cmd_measure(args) -> int:
    from robodyn.calibration.measurement_csv import write_measurements_csv
    from robodyn.calibration.result_file import load_json
    from robodyn.calibration.planning import Plan
    from robodyn.calibration.simulation import TrackerNoise, measure_poses

    if args.daemon:
        raise UserError("measure: measures the simulated cell only; to move the real robot through the acquisition "
                        f"daemon and record the tracker, run 'robodyn calibrate collect {args.plan} --daemon "
                        f"{args.daemon} --source ...'")
    doc = load_json(args.plan, "plan")
    plan = Plan.from_dict(doc)
    robot_ref = args.robot or plan.robot_name
    load = _load_arg(args.load)
    subset, index = _plan_subset(doc, plan, load, args.subset)
    ids = plan.ids
    noise = TrackerNoise(args.noise_um * 1e-6, args.noise_um_per_m * 1e-6)
    # a different noise stream for every run: a loaded run must not repeat the unloaded noise
    noise_seed = zlib.crc32(f"{args.seed}|{args.load}|{subset}".encode())
    gm, cell = _sim_cell(robot_ref, plan.setup.tool_offset, np.array(plan.setup.tracker_position), noise,
                         args.truth_seed, noise_seed)
    if plan.q.shape[1] != gm.dof:
        raise ValueError(f"plan.poses: {plan.q.shape[1]} joint angles per pose but robot {robot_ref!r} has {gm.dof} joints")
    meas = measure_poses(cell, plan.q[index], load, [ids[i] for i in index])
    write_measurements_csv(args.out, meas, robot=robot_ref, tool=np.array(plan.setup.tool_offset), unit=args.units,
                           note=f"measure (simulated cell), {subset} poses of {Path(args.plan).name}",
                           joint_map=gm.robot.joint_map)
    if args.json:
        print_json({"out": args.out, "poses": len(meas), "subset": subset,
                    "load": None if load is None else load.to_dict()})
        return 0
    print(f"measured {len(meas)} poses{' with a ' + str(load.mass) + ' kg payload' if load else ''} -> {args.out}")
    return 0


def cmd_identify(args) -> int:
    from robodyn.calibration.checks import find_outliers, joint_ranges, outlier_warning, poorly_identifiable_warning
    from robodyn.calibration.methods import calibrate
    from robodyn.calibration.measurement_csv import load_measurements, read_metadata
    from robodyn.calibration.result_file import result_to_dict, save_json, stiffness_text
    from robodyn.calibration.robots import load_robot, robot_reference

    meta = read_metadata(args.measurements)
    robot_ref = _require_robot(args, meta)
    robot = load_robot(robot_ref)
    tool = _floats(args.tool, 3, "--tool") if args.tool is not None else None
    oriented = [n.strip() for n in args.oriented.split(",")] if args.oriented else None
    gm, noload, info = read_identification_set(args.measurements, robot, tool=tool, targets_text=args.targets,
                                               oriented=oriented, hayati=args.hayati,
                                               identify_base=args.identify_base, units=args.units,
                                               angles=args.angles, joint_values=args.joint_values)
    loaded = None
    if args.loaded:
        loaded, _ = load_measurements(args.loaded, gm, units=args.units, angles=args.angles,
                                      load=_load_arg(args.load), joint_values=args.joint_values)
        if loaded.load is None:
            raise ValueError("--load: the loaded CSV has no payload in its metadata; give --load KG,CX,CY,CZ")
    method = args.method or ("combined" if loaded is not None else "geometric")
    free = _free_names(gm, robot_ref, args.params, args.free, args.identify_base, args.identify_tool)
    prior = np.full(gm.dof, 1.0 / args.prior_stiffness)
    known = None
    if args.stiffness:
        known = 1.0 / _floats(args.stiffness, gm.dof, "--stiffness")
    backlash = ()
    if args.backlash:
        backlash = "auto" if args.backlash.strip() == "auto" else [int(v) - 1 for v in _floats(args.backlash, None, "--backlash")]
    with bars.bar(args, total=100, desc=f"calibrate ({method})", unit="%") as b:
        result = calibrate(gm, noload, loaded, method=method, free_names=free, prior_compliance=prior,
                           known_compliance=known, loss=args.loss, backlash=backlash, progress=bars.stages(b))
    doc = result_to_dict(result, robot_reference(robot_ref))
    sets = {"no_load": noload} | ({"loaded": loaded} if loaded is not None else {})
    doc["evaluation"] = {k: _evaluation(gm, result, m) for k, m in sets.items()}
    doc["identification_joint_ranges"] = joint_ranges(sets.values())
    doc["base_frame"] = info["base_frame"]
    doc["units"] = {"position": info["position_unit"], "angle": info["angle_unit"], "joint_values": info["joint_values"]}
    doc["data"] = {k: m.describe(gm) for k, m in sets.items()}
    warnings = []
    poor = poorly_identifiable_warning(result)
    if poor:
        warnings.append(poor)
    outliers = {}
    for k, m in sets.items():
        found, _ = find_outliers(result, m)
        outliers[k] = [{"point": o.label, "error_mm": o.error_m * 1000, "sigmas": o.sigmas} for o in found]
        w = outlier_warning(found, args.loss, int(m.point_mask.sum()))
        if w:
            warnings.append(w.replace("warning: ", f"warning: {k.replace('_', ' ')} set: ", 1))
    doc["outliers"] = outliers
    doc["warnings"] = warnings
    save_json(args.out, doc)
    if args.plot:
        from robodyn.calibration.methods import nominal_result
        from robodyn.calibration.plots import plot_errors_per_pose

        series = {}
        for k, m in sets.items():
            series[f"{k} before"] = nominal_result(gm).errors(m) * 1000
            series[f"{k} after ({method})"] = result.errors(m) * 1000
        plot_errors_per_pose(args.plot, series, title=f"{Path(args.measurements).name}: error per point")
    if args.json:
        print_json({k: doc[k] for k in ("method", "free_parameters", "dropped", "joint_stiffness", "iterations",
                                        "converged", "notes", "evaluation", "units", "warnings", "outliers",
                                        "backlash", "chi2", "data", "base_frame")}
                   | {"parameters": {n: doc["parameters"][n] for n in result.free_names}, "out": args.out})
        return 0
    print(f"{method} identification of {len(result.free_names)} parameters from {doc['data']['no_load']}"
          + (f"; loaded: {doc['data']['loaded']}" if loaded is not None else "") + f" -> {args.out}")
    for k, ev in doc["evaluation"].items():
        for line in _evaluation_lines(ev, method, _short_base(info["base_frame"]), f"{k.replace('_', '-')} "):
            print(line)
    print(f"{'parameter':<14}{'nominal':>14}{'identified':>14}{'std':>12}")
    for n in result.free_names:
        par = doc["parameters"][n]
        ang = gm.angle_mask[gm.index(n)]
        f = np.rad2deg if ang else (lambda v: v * 1000.0)
        unit = "deg" if ang else "mm"
        std = "" if par["std"] is None else f"{f(par['std']):.4g}"
        print(f"{n:<14}{f(par['nominal']):>14.5f}{f(par['identified']):>14.5f}{std:>12} {unit}")
    if method != "geometric":
        print("joint stiffness (N·m/rad): " + ", ".join(stiffness_text(k) for k in doc["joint_stiffness"]))
    for note in result.notes:
        print(f"note: {note}")
    for w in warnings:
        print(w)
    return 0


def _short_base(text: str) -> str:
    return "base fitted to the identification set" if text.startswith("fitted") else "base frame as measured"


def cmd_evaluate(args) -> int:
    from robodyn.calibration.checks import find_outliers, outlier_warning, range_warnings
    from robodyn.calibration.measurement_csv import load_measurements
    from robodyn.calibration.result_file import load_json, result_from_dict

    doc = load_json(args.calibration, "calibration")
    result = result_from_dict(doc)
    gm = result.gm
    meas, info = load_measurements(args.measurements, gm, units=args.units, angles=args.angles,
                                   load=_load_arg(args.load), joint_values=args.joint_values)
    ev = _evaluation(gm, result, meas)
    sb, sa = ev["before"], ev["after"]
    findings, warnings = range_warnings(doc.get("identification_joint_ranges"), meas, gm.robot.joint_types)
    found, _ = find_outliers(result, meas)
    w = outlier_warning(found, "linear", int(meas.point_mask.sum()))
    if w:
        warnings.append(w.replace("; refit with a robust loss (--loss huber or soft_l1) or check those measurements",
                                  "; check those measurements"))
    base_source = doc.get("base_frame", "as measured (the data are in the robot base frame)")
    report = {"measurements": args.measurements, "method": result.method,
              "load": None if meas.load is None else meas.load.to_dict(),
              "before": sb, "before_base_fitted": ev["before_base_fitted"], "after": sa,
              "before_base": base_source,
              "max_reduction": 1.0 - sa["max_mm"] / sb["max_mm"] if sb["max_mm"] else None,
              "mean_reduction": 1.0 - sa["mean_mm"] / sb["mean_mm"] if sb["mean_mm"] else None,
              "outside_identification_ranges": findings, "warnings": warnings,
              "units": {"position": info["position_unit"], "angle": info["angle_unit"],
                        "joint_values": info["joint_values"]}}
    if args.per_pose:
        from robodyn.calibration.methods import nominal_result
        from robodyn.calibration.measurements import Residual

        report["per_point_mm"] = {"points": Residual(gm, meas).point_labels(),
                                  "before": (nominal_result(gm).errors(meas) * 1000).tolist(),
                                  "after": (result.errors(meas) * 1000).tolist()}
    if args.plot:
        from robodyn.calibration.methods import nominal_result
        from robodyn.calibration.plots import plot_errors_per_pose

        plot_errors_per_pose(args.plot, {"before (nominal)": nominal_result(gm).errors(meas) * 1000,
                                         f"after ({result.method})": result.errors(meas) * 1000},
                             title=f"{Path(args.measurements).name}: error per point")
    if args.json:
        print_json(report)
        return 0
    for line in _evaluation_lines(ev, result.method, _short_base(base_source)):
        print(line)
    if report["max_reduction"] is not None:
        print(f"max error reduced by {100 * report['max_reduction']:.1f} %, mean by {100 * report['mean_reduction']:.1f} % "
              "(against the first 'before')")
    for w in warnings:
        print(w)
    return 0


def cmd_compensate(args) -> int:
    from scipy.spatial.transform import Rotation

    from robodyn.calibration.compensation import compensate
    from robodyn.calibration.result_file import load_json, result_from_dict

    result = result_from_dict(load_json(args.calibration, "calibration"))
    jm = result.gm.robot.joint_map
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
    point = 0
    if args.point is not None:
        names = result.gm.target_names
        if args.point not in names:
            raise ValueError(f"--point: no target named {args.point!r} (targets: {names})")
        point = names.index(args.point)
    q0_model = jm.to_model(np.zeros(result.gm.dof)) if args.q0 is None else jm.to_model(
        _floats(args.q0, result.gm.dof, "--q0"))
    comp = compensate(result, target, q0_model, _load_arg(args.load), point=point)
    q_nom_c, q_comp_c = jm.to_controller(comp.q_nominal), jm.to_controller(comp.q_compensated)
    report = {"target": v.tolist(), "joint_values": "controller",
              "q_nominal_rad": q_nom_c.tolist(), "q_compensated_rad": q_comp_c.tolist(),
              "q_nominal_deg": np.rad2deg(q_nom_c).tolist(), "q_compensated_deg": np.rad2deg(q_comp_c).tolist(),
              "correction_deg": np.rad2deg(q_comp_c - q_nom_c).tolist(),
              "q_model_nominal_rad": comp.q_nominal.tolist(), "q_model_compensated_rad": comp.q_compensated.tolist(),
              "predicted_error_before_mm": comp.predicted_error_before * 1000.0,
              "predicted_error_after_mm": comp.predicted_error_after * 1000.0, "iterations": comp.iterations}
    if args.json:
        print_json(report)
        return 0
    mapped = "" if jm.is_identity else " (controller values, through the model's joint map)"
    print(f"nominal joint angles (deg){mapped}:     " + " ".join(f"{x:9.4f}" for x in report["q_nominal_deg"]))
    print(f"compensated joint angles (deg){mapped}: " + " ".join(f"{x:9.4f}" for x in report["q_compensated_deg"]))
    print("compensated joint angles (rad): " + ",".join(f"{x:.9f}" for x in report["q_compensated_rad"]))
    print(f"predicted tool-point error: {report['predicted_error_before_mm']:.4f} mm at the nominal angles, "
          f"{report['predicted_error_after_mm']:.2e} mm after compensation")
    return 0


def cmd_export_urdf(args) -> int:
    from robodyn.robot.absorb import absorb_joint_map
    from robodyn.robot.urdf import model_to_urdf

    from robodyn.calibration.result_file import load_json, result_from_dict
    from robodyn.calibration.parameters import robot_for

    result = result_from_dict(load_json(args.calibration, "calibration"))
    model = robot_for(result.gm, result.params)
    jm = model.joint_map
    name = args.name or f"{model.name}_calibrated"
    sidecar = None
    if jm.is_identity:
        joints = "Its joint values are the controller's."
    else:
        try:
            model = absorb_joint_map(model)
            joints = ("Its joint values are the controller's: the model's joint map (sign and offset per joint) is "
                      "written into the joint origins and axes.")
        except ValueError:
            if not args.out:
                raise ValueError("--out: this robot's joint map has a coupling or a scale, which a URDF joint cannot "
                                 "hold; give --out FILE.urdf and robodyn also writes FILE.toml, a model file that "
                                 "adds the joint map to the URDF") from None
            sidecar = Path(args.out).with_suffix(".toml")
            joints = (f"Its joints are the model's variables: the joint map (a coupling or a scale) cannot be written "
                      f"into URDF joints; {sidecar.name} adds it, and robodyn commands given that file take "
                      "controller values.")
    text = model_to_urdf(model, name=name)
    note = ("<!-- robodyn calibrate export-urdf: joint origins from the identified "
            f"{result.gm.convention.upper()} parameters ({result.method} method). The tool link is the flange. "
            f"{joints} URDF cannot hold joint stiffness: use 'robodyn calibrate compensate' for load and gravity "
            "deflection. -->\n")
    text = text.replace("?>\n", "?>\n" + note, 1)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        if not args.json:
            print(f"calibrated URDF -> {args.out}")
        if sidecar is not None:
            rows = "\n".join(f"  {list(map(float, r))}," for r in jm.matrix)
            sidecar.write_text(
                f"# robodyn calibrate export-urdf: {Path(args.out).name} with the controller's joint map\n"
                f'urdf = "{Path(args.out).name}"\nname = "{name}"\n'
                f"gravity = {[float(g) for g in model.gravity]}\n"
                f"[limits]\nqdd_max = {[float(v) for v in model.qdd_max]}\nqddd_max = {[float(v) for v in model.qddd_max]}\n"
                f"[joint_map]\nmatrix = [\n{rows}\n]\noffset = {[float(v) for v in jm.offset]}\n", encoding="utf-8")
            if not args.json:
                print(f"model file with the joint map -> {sidecar}")
    if args.json:
        print_json({"out": args.out, "urdf": None if args.out else text,
                    "joint_map_file": None if sidecar is None else str(sidecar), "joints": joints})
    elif not args.out:
        print(text, end="")
    return 0


def cmd_identifiability(args) -> int:
    from robodyn.calibration.methods import usable_free_names
    from robodyn.calibration.result_file import load_json
    from robodyn.calibration.robots import load_robot
    from robodyn.calibration.identifiability import analyse_identifiability, generic_configurations
    from robodyn.calibration.parameters import geometric_model, parallel_axis_rows
    from robodyn.calibration.planning import Plan
    from robodyn.calibration.simulation import ur5_li2023_truth

    plan = Plan.from_dict(load_json(args.plan, "plan")) if args.plan else None
    if args.robot is None and plan is None:
        raise ValueError("--robot: required (or a plan file, which names its robot)")
    robot_ref = args.robot or plan.robot_name
    robot = load_robot(robot_ref)
    tool = _floats(args.tool, 3, "--tool")
    gm = geometric_model(robot, tool_offset=tool)
    if args.hayati:
        gm = geometric_model(robot, tool_offset=tool, hayati_rows=parallel_axis_rows(gm))
    names = _free_names(gm, robot_ref, args.params, None, args.identify_base, args.identify_tool)
    if args.at == "li2023-truth":
        if gm.robot.name != "ur5_li2023":
            raise ValueError("--at: li2023-truth needs --robot ur5_li2023")
        params = ur5_li2023_truth(gm)
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
            print(f"  warning: poorly identifiable (uncertainty moves the points more than the {args.noise_um:g} um "
                  "noise): " + ", ".join(f"{n} (VIF {r['vif'][n]:.3g})" for n in r["poorly_identifiable"]))
        print("  singular values: " + " ".join("0" if s is None else f"{s:.3g}" for s in r["singular_values"]))
    return 0


def cmd_replay(args) -> int:
    from robodyn.calibration.paper_replay import format_replay, run_paper_replay
    from robodyn.calibration.simulation import TrackerNoise

    report = run_paper_replay(seed=args.seed, noload_poses=args.poses, loaded_poses=args.loaded,
                                holdout=args.holdout, noise=TrackerNoise(args.noise_um * 1e-6, args.noise_um_per_m * 1e-6),
                                identify_tool=args.identify_tool, identify_base=args.identify_base)
    per_pose = report.pop("_per_pose_mm")
    if args.plot:
        from robodyn.calibration.plots import plot_errors_per_pose

        for cond, series in per_pose.items():
            plot_errors_per_pose(f"{args.plot}_{cond}.png", series,
                                 title=f"{PAPER} replay, held-out poses, {cond.replace('_', ' ')} (true error)")
    if args.json:
        print_json(report)
    else:
        print(format_replay(report))
    return 0


# --------------------------------------------------------------------------- collect


def add_collect_arguments(a) -> None:
    a.add_argument("plan", help="plan file from 'calibrate plan'")
    a.add_argument("--daemon", required=True, metavar="ADDRESS", help="the acquisition daemon's control endpoint")
    a.add_argument("--source", required=True, metavar="file:PATH|tcp:HOST:PORT",
                   help="where the measurements come from: a file the tracker software appends to, or a TCP hook")
    a.add_argument("--request-file", default=None, help="file source: append 'pose_id,q1..qn' here when the arm is at rest")
    a.add_argument("--source-units", choices=("m", "mm"), default="m", help="unit of the coordinates the source sends")
    a.add_argument("--robot", default=None, help="the calibration model (default: the plan's robot)")
    a.add_argument("--targets", default=None, metavar="NAME:X,Y,Z;...",
                   help="several targets per pose in the flange frame, m (default: the plan's single ball)")
    a.add_argument("--load", default=None, metavar="KG,CX,CY,CZ", help="payload on the flange during this collection")
    a.add_argument("--subset", choices=("all", "loaded"), default=None)
    a.add_argument("--settle", type=float, default=0.5, help="hold at each pose before reading, s")
    a.add_argument("--window", type=float, default=0.5, help="window over which the joint values at rest are averaged, s")
    a.add_argument("--timeout", type=float, default=30.0, help="how long to wait for a measurement, s")
    a.add_argument("--units", choices=("m", "mm"), default="m", help="position unit written to the CSV")
    a.add_argument("--out", required=True, help="measurement CSV")
    add_json(a)


def cmd_collect(args) -> int:
    from robodyn.calibration.collect import collect_plan, open_source
    from robodyn.calibration.measurement_csv import targets_from_metadata, write_measurements_csv
    from robodyn.calibration.result_file import load_json
    from robodyn.calibration.robots import load_robot
    from robodyn.calibration.measurements import MeasurementSet
    from robodyn.calibration.planning import Plan
    from robodyn.tools.client import Client

    doc = load_json(args.plan, "plan")
    plan = Plan.from_dict(doc)
    robot_ref = args.robot or plan.robot_name
    robot = load_robot(robot_ref)
    if plan.q.shape[1] != robot.dof:
        raise ValueError(f"plan.poses: {plan.q.shape[1]} joint values per pose but robot {robot_ref!r} has {robot.dof} joints")
    load = _load_arg(args.load)
    subset, index = _plan_subset(doc, plan, load, args.subset)
    meta = {"targets": args.targets} if args.targets else {"tool_offset_m": ",".join(map(str, plan.setup.tool_offset))}
    targets = targets_from_metadata(meta)
    for name in ("settle", "window", "timeout"):
        if not getattr(args, name) > 0:
            raise ValueError(f"--{name}: must be > 0 s, got {getattr(args, name)}")
    q_controller = robot.joint_map.to_controller(plan.q[index])
    ids = [plan.ids[i] for i in index]
    client = Client(args.daemon, timeout=10.0)
    source = None
    try:
        status = client.status()
        daemon_robot = status["robot"]["name"]
        if int(status["robot"]["dof"]) != robot.dof:
            raise UserError(f"--daemon: the daemon drives {daemon_robot!r} with {status['robot']['dof']} joints, the "
                            f"plan's robot {robot_ref!r} has {robot.dof}")
        source = open_source(args.source, len(targets), args.source_units, args.request_file)

        with bars.bar(args, total=len(ids), desc="poses", unit="pose") as b:
            def progress(pose):
                b.set_postfix_str(f"{pose.pose_id}: {'skipped' if pose.skipped else 'measured'}", refresh=False)
                b.update(1)

            result = collect_plan(client, daemon_robot, q_controller, ids, source, settle=args.settle,
                                  window=args.window, timeout=args.timeout, progress=progress)
    finally:
        if source is not None:
            source.close()
        client.close()
    got = result.collected
    if got:
        q_rest = np.array([p.q_rest for p in got])
        meas = MeasurementSet(robot.joint_map.to_model(q_rest), np.array([p.points for p in got]),
                              [p.pose_id for p in got], load, q_controller=q_rest)
        write_measurements_csv(args.out, meas, robot=robot_ref, unit=args.units, targets=targets,
                               note=f"collect through the daemon at {args.daemon}, {subset} poses of "
                                    f"{Path(args.plan).name}; joint values at rest over {args.window:g} s")
    report = {"out": args.out if got else None, "planned": len(ids), "collected": len(got),
              "skipped": [{"pose": p.pose_id, "reason": p.skipped} for p in result.skipped],
              "stopped": result.stopped or None,
              "runs": {p.pose_id: p.run_id for p in result.poses if p.run_id}}
    if args.json:
        print_json(report)
    else:
        print(f"collected {len(got)} of {len(ids)} poses" + (f" -> {args.out}" if got else ""))
        for p in result.skipped:
            print(f"warning: pose {p.pose_id} skipped: {p.skipped}")
        if result.stopped:
            print(f"warning: collection stopped: {result.stopped}")
    if not got:
        raise UserError("collect: no pose was measured; nothing written")
    return 0 if not result.stopped else 1
