"""The steps of a calibration as ``robodyn calibrate`` runs them, one function per step, each from
files and option values to files and a report: plan the poses, measure them on the simulated cell,
identify the model from a measured set (targets, base frame, planes, free parameters, evaluation,
outliers and warnings), evaluate a calibration on another set, and analyse identifiability.

Compensation and URDF export of a result are in :mod:`.result_use`; collecting on the real robot in
:mod:`.collect`. Option values keep the command line's field names in their errors (``--tool: ...``)
because that is where a user sets them; the scale-out calibration jobs pass the same values.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

from .checks import (find_outliers, joint_ranges, outlier_warning, poorly_identifiable_warning, range_warnings,
                     worse_than_nominal_warnings)
from .extrapolation import extrapolation_check, geometric_refit
from .identifiability import analyse_identifiability, generic_configurations, metric_columns
from .li2023 import TABLE3_STIFFNESS
from .measurement_csv import (_unit_choice, detect_units, joint_values_kind, load_measurements, measurement_frame,
                              read_measurements_csv, read_metadata, targets_from_metadata, write_measurements_csv)
from .measurements import Residual, plane_from_points
from .methods import calibrate, error_stats, nominal_result, usable_free_names
from .geometric import ROBUST_SCALE, fit_geometry
from .parameters import (BASE_NAMES, all_target_positions, geometric_model, parallel_axis_rows, parameter_jacobian,
                         preset_free_names)
from .planning import CellSetup, Plan, plan_measurements
from .result_file import load_json, load_result, result_to_dict, save_json
from .robots import calibration_metadata, load_robot, robot_reference, same_robot
from .subset_advice import advice_text, subset_advice
from .simulation import SimulatedCell, SimulatedRobot, SimulatedTracker, TrackerNoise, measure_poses, ur5_li2023_truth
from .stiffness import PRIOR_STIFFNESS, Load, loaded_subset

PLAN_NOISE_SIGMA = 27e-6  # m: the noise a plan's identifiability is judged against


def parse_numbers(text, count: int | None, field: str) -> np.ndarray:
    """Comma-separated numbers (an option's or a file's text) as an array, ``count`` of them if given."""
    try:
        vals = np.array([float(v) for v in str(text).replace(" ", "").split(",") if v != ""])
    except ValueError:
        raise ValueError(f"{field}: expected comma-separated numbers, got {text!r}") from None
    if count is not None and vals.size != count:
        raise ValueError(f"{field}: expected {count} numbers, got {vals.size} ({text!r})")
    if not np.all(np.isfinite(vals)):
        raise ValueError(f"{field}: non-finite number in {text!r}")
    return vals


def parse_load(text: str | None, field: str = "--load") -> Load | None:
    """A payload given as 'KG,CX,CY,CZ' (mass in kg, centre of mass in the flange frame in m)."""
    if not text:
        return None
    v = parse_numbers(text, 4, field)
    return Load(float(v[0]), tuple(v[1:]))


def free_parameter_names(gm, robot_ref: str, params: str | None, free: str | None, base: bool, tool: bool) -> list[str]:
    """The parameters to identify: an explicit list, else the model file's [calibration] list, else a preset."""
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


def floor_height(robot_ref: str, given: float | None) -> float:
    if given is not None:
        return float(given)
    return float(calibration_metadata(robot_ref).get("floor_z", 0.0))


def _gm_for(robot, targets, *, hayati: bool, base=None, planes=None):
    gm = geometric_model(robot, targets=targets, base=base, planes=planes)
    if hayati:
        gm = geometric_model(robot, targets=targets, base=base, planes=planes, hayati_rows=parallel_axis_rows(gm))
    return gm


def read_identification_set(path, robot, *, tool=None, targets_text=None, oriented=None, hayati=False,
                            identify_base=False, units=None, angles=None, joint_values=None):
    """The model and the unloaded set of an identification: targets from the options or the CSV,
    the base frame (nominal, or fitted when the data are in tracker coordinates), the planes of any
    planar contacts. Returns (gm, measurements, info)."""
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


def check_robot(robot_ref: str, meta: dict, measurements) -> str:
    """The robot given for a measurement file, refused when the file names another one."""
    stated = meta.get("robot")
    if stated and not same_robot(stated, robot_ref):
        raise ValueError(f"--robot: {robot_ref!r} was given but {Path(measurements).name} was measured on "
                         f"{stated!r}")
    return robot_ref


def fit_base_only(gm, meas):
    """The nominal model with only its base frame fitted to these measurements (paper-style 'before')."""
    if meas.point_mask.sum() * 3 < 12:
        return None
    fit = fit_geometry(gm, meas.q, meas, list(BASE_NAMES))
    return nominal_result(gm, params=fit.params)


def evaluation(gm, result, meas) -> dict:
    """Error statistics before (nominal; nominal with its base fitted) and after calibration."""
    out = {"before": error_stats(nominal_result(gm).errors(meas))}
    based = fit_base_only(gm, meas)
    out["before_base_fitted"] = None if based is None else error_stats(based.errors(meas))
    out["after"] = error_stats(result.errors(meas))
    return out


# --------------------------------------------------------------------------- plan


def joint_space_bounds(robot, setup, specs) -> tuple[np.ndarray, np.ndarray]:
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


@dataclass
class PlanOutcome:
    plan: Plan
    summary: dict  # what --json prints
    identifiability: object  # IdentifiabilityReport at the planned poses
    parameter_count: int


def plan_calibration(robot_ref: str, out, *, poses: int = 50, loaded: int = 0, load: Load | None = None,
                     optimal: int = 0, joint_space: bool = False, joint_range=(), tracker=(2.0, 0.0, 0.2),
                     tool=(0.04, 0.04, 0.03), smr_axis=(0.0, 0.0, 1.0), floor_z: float | None = None, seed: int = 0,
                     progress=None) -> PlanOutcome:
    """Plan measurement poses (and a loaded subset) for a robot and write the plan file ``out``."""
    robot = load_robot(robot_ref)
    setup = CellSetup(tracker_position=tuple(tracker), tool_offset=tuple(tool), smr_axis=tuple(smr_axis),
                      floor_z=floor_height(robot_ref, floor_z))
    if poses < 1:
        raise ValueError(f"--poses: expected a positive number, got {poses}")
    gm = geometric_model(robot, tool_offset=setup.tool_offset)
    free = free_parameter_names(gm, robot_ref, None, None, False, False)
    usable, _, _ = usable_free_names(gm, free)
    idx = gm.indices(usable)

    def blocks(q):
        return metric_columns(parameter_jacobian(gm, gm.nominal, q)[:, :, idx], gm.angle_mask[idx])

    low = high = None
    if joint_range:
        if not joint_space:
            raise ValueError("--joint-range: only with --joint-space")
        low, high = joint_space_bounds(robot, setup, joint_range)
    plan = plan_measurements(robot, setup, poses, seed=seed, optimal_from=optimal, jacobian_blocks=blocks,
                             joint_space=joint_space, joint_low=low, joint_high=high, progress=progress)
    plan.robot_name = robot_reference(robot_ref)
    report = plan.to_dict()
    if loaded:
        if not 0 < loaded <= poses:
            raise ValueError(f"--loaded: expected 1..{poses} poses, got {loaded}")
        sub = loaded_subset(gm, plan.q, load, loaded)
        report["loaded_pose_ids"] = [plan.ids[i] for i in sub]
    ident = analyse_identifiability(gm, gm.nominal, plan.q, usable, PLAN_NOISE_SIGMA)
    report["info"]["identifiability"] = {k: ident.to_dict()[k] for k in ("rank", "parameter_count",
                                                                           "condition_number", "observability",
                                                                           "poorly_identifiable")}
    save_json(out, report)
    summary = {"out": out, "poses": poses, "cube": plan.cube.to_dict(), "selection": plan.selection,
               "iso9283_points": plan.iso_points.tolist(), "loaded_pose_ids": report.get("loaded_pose_ids", []),
               "identifiability": report["info"]["identifiability"], "log_det": plan.info.get("log_det")}
    return PlanOutcome(plan, summary, ident, len(usable))


def plan_subset(doc: dict, plan: Plan, load, subset: str | None):
    """Which of a plan's poses to visit: all, or its loaded subset (the default with a payload)."""
    subset = subset or ("loaded" if load is not None and doc.get("loaded_pose_ids") else "all")
    ids = plan.ids
    index = np.arange(len(ids))
    if subset == "loaded":
        chosen = doc.get("loaded_pose_ids")
        if not chosen:
            raise ValueError("--subset: the plan has no loaded subset (plan with --loaded N)")
        index = np.array([ids.index(i) for i in chosen])
    return subset, index


# --------------------------------------------------------------------------- measure (simulated cell)


def simulated_cell(robot_ref: str, setup_tool, tracker, noise, truth_seed: int, noise_seed: int):
    """The simulated cell for a robot: the paper's Table 3 UR5, or seeded random deviations."""
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
        compliance = np.full(gm.dof, 1.0 / PRIOR_STIFFNESS)
    return gm, SimulatedCell(SimulatedRobot(gm, truth, compliance), SimulatedTracker(tracker, noise, noise_seed))


def measure_simulated(plan_path, out, *, robot_ref: str | None = None, load_text: str | None = None,
                      subset: str | None = None, truth_seed: int = 0, seed: int = 0, noise_um: float = 15.0,
                      noise_um_per_m: float = 6.0, units: str = "m") -> dict:
    """Measure a plan's poses on the simulated cell and write the measurement CSV ``out``.

    ``load_text`` is the payload as given ('KG,CX,CY,CZ'); with the seed and the subset it keys the
    tracker's noise stream, so a loaded run never repeats the unloaded run's noise."""
    doc = load_json(plan_path, "plan")
    plan = Plan.from_dict(doc)
    robot_ref = robot_ref or plan.robot_name
    load = parse_load(load_text)
    subset, index = plan_subset(doc, plan, load, subset)
    ids = plan.ids
    noise = TrackerNoise(noise_um * 1e-6, noise_um_per_m * 1e-6)
    noise_seed = zlib.crc32(f"{seed}|{load_text}|{subset}".encode())
    gm, cell = simulated_cell(robot_ref, plan.setup.tool_offset, np.array(plan.setup.tracker_position), noise,
                              truth_seed, noise_seed)
    if plan.q.shape[1] != gm.dof:
        raise ValueError(f"plan.poses: {plan.q.shape[1]} joint angles per pose but robot {robot_ref!r} has {gm.dof} joints")
    meas = measure_poses(cell, plan.q[index], load, [ids[i] for i in index])
    write_measurements_csv(out, meas, robot=robot_ref, tool=np.array(plan.setup.tool_offset), unit=units,
                           note=f"measure (simulated cell), {subset} poses of {Path(plan_path).name}",
                           joint_map=gm.robot.joint_map)
    return {"out": out, "poses": len(meas), "subset": subset, "load": None if load is None else load.to_dict()}


# --------------------------------------------------------------------------- identify


@dataclass
class IdentifyOptions:
    """The options of an identification, named as ``robodyn calibrate identify``'s (see its --help)."""

    robot: str
    loaded: str | None = None  # loaded measurement CSV
    load: Load | None = None
    method: str | None = None
    params: str | None = None
    free: str | None = None  # comma list
    identify_base: bool = False
    identify_tool: bool = False
    hayati: bool = False
    tool: tuple | None = None
    targets: str | None = None  # NAME:X,Y,Z;...
    oriented: list | None = None
    backlash: object = ()  # "auto" or 0-based joints
    joint_values: str | None = None
    loss: str = "linear"
    noise_um: float | None = None  # stated measurement noise a robust loss's scale is taken from (3x)
    stiffness: str | None = None  # known joint stiffness K1,..,Kn, N·m/rad
    prior_stiffness: float = PRIOR_STIFFNESS
    units: str | None = None
    angles: str | None = None

    @classmethod
    def from_dict(cls, d: dict) -> "IdentifyOptions":
        """Options from a JSON object (a scale-out job): unknown names are refused; a payload may be
        'KG,CX,CY,CZ' text or a list of four numbers."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"options: unknown calibration option(s) {unknown}; expected some of {sorted(known)}")
        d = dict(d)
        if isinstance(d.get("load"), (list, tuple)):
            d["load"] = ",".join(str(v) for v in d["load"])
        if isinstance(d.get("load"), str):
            d["load"] = parse_load(d["load"], "options.load")
        if isinstance(d.get("tool"), str):
            d["tool"] = tuple(parse_numbers(d["tool"], 3, "options.tool"))
        if isinstance(d.get("stiffness"), (list, tuple)):
            d["stiffness"] = ",".join(str(v) for v in d["stiffness"])
        if "robot" not in d:
            raise ValueError("options.robot: required (the robot the measurements were taken on)")
        return cls(**d)


@dataclass
class Identification:
    doc: dict  # the result file's document
    result: object  # CalibrationResult
    gm: object
    info: dict  # units, base frame, targets of the identification set
    method: str
    warnings: list


def identify_calibration(measurements, opts: IdentifyOptions, out=None, *, plot=None, progress=None) -> Identification:
    """Identify the model from an unloaded (and optionally a loaded) measurement CSV: the result with
    its evaluation, joint ranges, outliers and warnings; written to ``out`` when given."""
    meta = read_metadata(measurements)
    robot = load_robot(opts.robot)  # an unknown name is reported as such, before any comparison with the file
    robot_ref = check_robot(opts.robot, meta, measurements)
    tool = None if opts.tool is None else np.asarray(opts.tool, float)
    gm, noload, info = read_identification_set(measurements, robot, tool=tool, targets_text=opts.targets,
                                               oriented=opts.oriented, hayati=opts.hayati,
                                               identify_base=opts.identify_base, units=opts.units,
                                               angles=opts.angles, joint_values=opts.joint_values)
    loaded = None
    if opts.loaded:
        loaded, _ = load_measurements(opts.loaded, gm, units=opts.units, angles=opts.angles, load=opts.load,
                                      joint_values=opts.joint_values)
        if loaded.load is None:
            raise ValueError("--load: the loaded CSV has no payload in its metadata; give --load KG,CX,CY,CZ")
    method = opts.method or ("combined" if loaded is not None else "geometric")
    f_scale = None
    if opts.noise_um is not None:
        if not opts.noise_um > 0:
            raise ValueError(f"--noise-um: expected a noise > 0 um, got {opts.noise_um}")
        stated = float(np.median(noload.sigma[noload.point_mask])) if noload.point_mask.any() else 15e-6
        f_scale = ROBUST_SCALE * opts.noise_um * 1e-6 / stated  # in the stated-noise units of the residual
    free = free_parameter_names(gm, robot_ref, opts.params, opts.free, opts.identify_base, opts.identify_tool)
    prior = np.full(gm.dof, 1.0 / opts.prior_stiffness)
    known = None
    if opts.stiffness:
        known = 1.0 / parse_numbers(opts.stiffness, gm.dof, "--stiffness")
    result = calibrate(gm, noload, loaded, method=method, free_names=free, prior_compliance=prior,
                       known_compliance=known, loss=opts.loss, backlash=opts.backlash or (), f_scale=f_scale,
                       progress=progress)
    doc = result_to_dict(result, robot_reference(robot_ref))
    sets = {"no_load": noload} | ({"loaded": loaded} if loaded is not None else {})
    doc["evaluation"] = {k: evaluation(gm, result, m) for k, m in sets.items()}
    doc["identification_joint_ranges"] = joint_ranges(sets.values())
    doc["base_frame"] = info["base_frame"]
    doc["units"] = {"position": info["position_unit"], "angle": info["angle_unit"], "joint_values": info["joint_values"]}
    doc["data"] = {k: m.describe(gm) for k, m in sets.items()}
    warnings = []
    advice = subset_advice(result, noload)
    doc["identifiability_advice"] = advice
    poor = poorly_identifiable_warning(result, advice_text(advice))
    if poor:
        warnings.append(poor)
    outliers = {}
    for k, m in sets.items():
        found, _ = find_outliers(result, m)
        outliers[k] = [{"point": o.label, "error_mm": o.error_m * 1000, "sigmas": o.sigmas} for o in found]
        w = outlier_warning(found, opts.loss, int(m.point_mask.sum()))
        if w:
            warnings.append(w.replace("warning: ", f"warning: {k.replace('_', ' ')} set: ", 1))
    doc["outliers"] = outliers
    if method == "geometric":
        doc["extrapolation"], lines = extrapolation_check(result, noload, geometric_refit(result))
        warnings += lines
    else:  # a refit per left-out pose: affordable for the geometric fit only
        doc["extrapolation"] = {"checked": False, "why": "checked for the geometric method only (one refit per pose)"}
    doc["warnings"] = warnings
    if out is not None:
        save_json(out, doc)
    if plot:
        from .plots import plot_errors_per_pose

        series = {}
        for k, m in sets.items():
            series[f"{k} before"] = nominal_result(gm).errors(m) * 1000
            series[f"{k} after ({method})"] = result.errors(m) * 1000
        plot_errors_per_pose(plot, series, title=f"{Path(measurements).name}: error per point")
    return Identification(doc, result, gm, info, method, warnings)


# --------------------------------------------------------------------------- advise


def advise_calibration(measurements, opts: IdentifyOptions, *, folds: int = 4, progress=None) -> dict:
    """Which model the unloaded measurements support, by cross-validation over poses (advice.py):
    geometric, lumped gravity, and joint stiffness with the model's masses when it has them."""
    from .advice import advise

    meta = read_metadata(measurements)
    robot = load_robot(opts.robot)
    check_robot(opts.robot, meta, measurements)
    tool = None if opts.tool is None else np.asarray(opts.tool, float)
    gm, noload, info = read_identification_set(measurements, robot, tool=tool, targets_text=opts.targets,
                                               oriented=opts.oriented, hayati=opts.hayati,
                                               identify_base=opts.identify_base, units=opts.units,
                                               angles=opts.angles, joint_values=opts.joint_values)
    if folds < 2:
        raise ValueError(f"--folds: expected at least 2 folds, got {folds}")
    free = free_parameter_names(gm, opts.robot, opts.params, opts.free, opts.identify_base, opts.identify_tool)
    report = advise(gm, noload, free, folds=folds, progress=progress)
    report["measurements"] = str(measurements)
    report["base_frame"] = info["base_frame"]
    return report


# --------------------------------------------------------------------------- evaluate


TARGET_OFFSET_TOLERANCE = 5e-4  # m: a CSV's stated target and the calibration's are the same one within this


def _target_columns(raw, gm, label: str):
    """The CSV's target columns moved to the calibration's targets they state (by name, else by offset):
    the CSV's '# targets' / '# tool_offset_m' decide which target each column measured. A stated offset
    that no calibration target has within TARGET_OFFSET_TOLERANCE is refused."""
    stated = targets_from_metadata(raw.meta)
    if stated is None:
        if len(gm.targets) > 1:
            own = "; ".join(f"{t.name}: {', '.join(f'{v:.4f}' for v in t.offset)}" for t in gm.targets)
            raise ValueError(f"targets: {label} does not say which target its columns measured and the calibration "
                             f"has {len(gm.targets)}; add a '# targets = NAME: x, y, z' line naming them "
                             f"(calibration: {own})")
        return raw
    own = gm.targets
    where = []
    for k, t in enumerate(stated[:raw.target_count]):
        named = [m for m, o in enumerate(own) if o.name == t.name]
        near = sorted(range(len(own)), key=lambda m: np.linalg.norm(np.subtract(own[m].offset, t.offset)))
        m = named[0] if named else near[0]
        miss = float(np.linalg.norm(np.subtract(own[m].offset, t.offset)))
        if miss > TARGET_OFFSET_TOLERANCE:
            listed = "; ".join(f"{o.name}: {', '.join(f'{v:.4f}' for v in o.offset)}" for o in own)
            raise ValueError(f"targets: {label} states target {t.name!r} at {', '.join(f'{v:.4f}' for v in t.offset)} m "
                             f"in the flange frame, {miss * 1000:.1f} mm from the calibration's "
                             f"(limit {TARGET_OFFSET_TOLERANCE * 1000:g} mm; calibration: {listed})")
        where.append(m)
    if where == list(range(len(where))):
        return raw
    if len(set(where)) < len(where):
        raise ValueError(f"targets: {label} states {len(where)} targets but they match only {len(set(where))} of the "
                         "calibration's")
    K, N = len(own), raw.points.shape[0]

    def move(a, fill):
        if a is None:
            return None
        out = np.full((N, K) + a.shape[2:], fill, dtype=a.dtype)
        out[:, where] = a[:, :len(where)]
        return out

    return replace(raw, points=move(raw.points, np.nan), rotvec=move(raw.rotvec, np.nan),
                               plane=move(raw.plane, ""), sigma=move(raw.sigma, np.nan),
                               sigma_rot=move(raw.sigma_rot, np.nan))


def evaluate_calibration(calibration, measurements, *, load: Load | None = None, joint_values=None, units=None,
                         angles=None, per_pose: bool = False, plot=None, force: bool = False) -> dict:
    """Errors of a calibration result on a measurement CSV, before and after, with the warnings:
    poses outside the identification's joint ranges and outliers. The CSV's stated targets pick the
    calibration's targets its columns measured; a failed calibration is refused unless ``force``."""
    doc, result = load_result(calibration, force=force)
    gm = result.gm
    raw = _target_columns(read_measurements_csv(measurements, gm.dof), gm, Path(measurements).name)
    meas, info = load_measurements(measurements, gm, units=units, angles=angles, load=load, joint_values=joint_values,
                                   raw=raw)
    ev = evaluation(gm, result, meas)
    sb, sa = ev["before"], ev["after"]
    findings, warnings = range_warnings(doc.get("identification_joint_ranges"), meas, gm.robot.joint_types)
    # a pose beyond the identified ranges errs by extrapolation, not by a bad measurement
    outside = {meas.ids.index(f["pose"]) for f in findings}
    found, _ = find_outliers(result, meas, exclude_poses=outside)
    w = outlier_warning(found, "linear", int(meas.point_mask.sum()))
    if w:
        warnings.append(w.replace("; refit with a robust loss (--loss huber or soft_l1) or check those measurements",
                                  "; check those measurements"))
    warnings += worse_than_nominal_warnings(sb, sa)
    base_source = doc.get("base_frame", "as measured (the data are in the robot base frame)")
    report = {"measurements": measurements, "method": result.method,
              "load": None if meas.load is None else meas.load.to_dict(),
              "before": sb, "before_base_fitted": ev["before_base_fitted"], "after": sa,
              "before_base": base_source,
              "max_reduction": 1.0 - sa["max_mm"] / sb["max_mm"] if sb["max_mm"] else None,
              "mean_reduction": 1.0 - sa["mean_mm"] / sb["mean_mm"] if sb["mean_mm"] else None,
              "outside_identification_ranges": findings, "warnings": warnings,
              "units": {"position": info["position_unit"], "angle": info["angle_unit"],
                        "joint_values": info["joint_values"]}}
    if per_pose:
        report["per_point_mm"] = {"points": Residual(gm, meas).point_labels(),
                                  "before": (nominal_result(gm).errors(meas) * 1000).tolist(),
                                  "after": (result.errors(meas) * 1000).tolist()}
    if plot:
        from .plots import plot_errors_per_pose

        plot_errors_per_pose(plot, {"before (nominal)": nominal_result(gm).errors(meas) * 1000,
                                    f"after ({result.method})": result.errors(meas) * 1000},
                             title=f"{Path(measurements).name}: error per point")
    return report


# --------------------------------------------------------------------------- identifiability


def identifiability_report(plan_path=None, *, robot_ref: str | None = None, params: str | None = None,
                           identify_base: bool = False, identify_tool: bool = False, hayati: bool = False,
                           tool=(0.04, 0.04, 0.03), at: str = "nominal", poses: int = 50,
                           noise_um: float = 27.0) -> dict:
    """Rank, singular values and redundant parameters of a robot's model at a plan's poses (or
    generic ones), for the requested parameters and after dropping the structural redundancies."""
    plan = Plan.from_dict(load_json(plan_path, "plan")) if plan_path else None
    if robot_ref is None and plan is None:
        raise ValueError("--robot: required (or a plan file, which names its robot)")
    robot_ref = robot_ref or plan.robot_name
    robot = load_robot(robot_ref)
    tool = np.asarray(tool, float)
    gm = geometric_model(robot, tool_offset=tool)
    if hayati:
        gm = geometric_model(robot, tool_offset=tool, hayati_rows=parallel_axis_rows(gm))
    names = free_parameter_names(gm, robot_ref, params, None, identify_base, identify_tool)
    if at == "li2023-truth":
        if gm.robot.name != "ur5_li2023":
            raise ValueError("--at: li2023-truth needs --robot ur5_li2023")
        geometry = ur5_li2023_truth(gm)
    else:
        geometry = gm.nominal
    q = plan.q if plan else generic_configurations(gm, poses)
    sigma = noise_um * 1e-6
    full = analyse_identifiability(gm, geometry, q, names, sigma).to_dict()
    usable, _, _ = usable_free_names(gm, names)
    reduced = analyse_identifiability(gm, geometry, q, usable, sigma).to_dict()
    return {"robot": robot_ref, "geometry": at, "poses": int(q.shape[0]), "requested": full,
            "after_dropping_structural_redundancies": reduced}
