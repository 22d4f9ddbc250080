"""The Li et al. 2023 experiment replayed on the simulated UR5, end to end, in one call.

The simulated robot carries Li et al.'s own identified deviations (Table 3, combined row) and joint
stiffness; a simulated AT960 measures it. The run plans 50 poses in the largest test cube, measures
them unloaded and a D-optimal 20 of them with the paper's payload, identifies the geometry by the
three methods of Table 4, evaluates them on the identification poses (as the paper does) and on
200 held-out poses, and compensates the five ISO 9283 points (Table 5). Held-out errors are given
against the true positions (what the robot really does) and against simulated tracker readings
(what a user would see, which includes the tracker's own noise).
"""

from __future__ import annotations

import numpy as np

from robodyn.robot.kinematics import trans

from .compensation import compensate
from .identifiability import analyse_identifiability, generic_configurations
from .li2023 import (LOAD_COM, LOAD_MASS, LOADED_POSES, NOLOAD_POSES, TABLE3_STIFFNESS, TABLE4, TABLE5,
                     TABLE5_MAX_REDUCTION)
from .methods import MeasurementSet, calibrate, error_stats, nominal_result
from .parameters import preset_free_names
from .planning import CellSetup, flange_targets, plan_measurements, sample_poses
from .result_file import result_to_dict, stiffness_text
from .simulation import (DEFAULT_TOOL_OFFSET, DEFAULT_TRACKER_POSITION, TrackerNoise, measure_poses,
                         ur5_li2023_cell)
from .stiffness import Load, loaded_subset

TABLE4_METHODS = ("nominal", "geometric", "geometric-stiffness", "combined")
UR5_LI2023_FLOOR_Z = -0.089159  # the UR5 mounting plane in Li et al.'s frame 0 (UR d1)


def iso_targets(setup: CellSetup, points: np.ndarray) -> np.ndarray:
    """Tool-point poses at the ISO points: ball position, ball facing the tracker."""
    T = flange_targets(setup, points, np.zeros(len(points)), np.zeros(len(points)), np.zeros(len(points)))
    return T @ trans(*setup.tool_offset)


def _rows(results: dict, sets) -> dict:
    return {m: error_stats(r.errors(sets)) for m, r in results.items()}


def replay_on_cell(gm, cell, setup: CellSetup, plan, held_q: np.ndarray, load: Load, loaded_poses: int,
                   free: list[str], methods=TABLE4_METHODS[1:]) -> dict:
    """The paper's procedure on one cell (``cell``: ``measure(q, load)``, ``true_positions(q, load)`` and its
    ``tracker``): the plan's poses measured unloaded and the D-optimal ``loaded_poses`` of them loaded, each
    method fitted, Table 4 on the identification and held-out poses, Table 5 (compensation with the
    combined model at the five ISO 9283 points). Returns the fits and the tables (errors in mm)."""
    sub = loaded_subset(gm, plan.q, load, loaded_poses)
    # measuring, pose by pose like the real cell; the loaded run repeats the chosen poses
    noload = measure_poses(cell, plan.q, None, plan.ids)
    loaded = measure_poses(cell, plan.q[sub], load, [plan.ids[i] for i in sub])
    truth = {"no_load": MeasurementSet(held_q, cell.true_positions(held_q)),
             "loaded": MeasurementSet(held_q, cell.true_positions(held_q, load), load=load)}
    tracked = {k: MeasurementSet(v.q, cell.tracker.measure(v.p), load=v.load) for k, v in truth.items()}
    results = {"nominal": nominal_result(gm)}
    for method in methods:
        results[method] = calibrate(gm, noload, loaded, method=method, free_names=free)
    fit_sets = {"no_load": noload, "loaded": loaded}
    table4 = {
        cond: {"identification_poses_measured": _rows(results, fit_sets[cond]),
               "held_out_true": _rows(results, truth[cond]),
               "held_out_measured": _rows(results, tracked[cond])}
        for cond in ("no_load", "loaded")
    }
    table5 = compensation_table(results["combined"], cell, iso_targets(setup, plan.iso_points), plan.q_ref, load)
    return {"results": results, "loaded_subset": sub, "truth": truth, "table4": table4, "table5": table5}


def compensation_table(result, cell, targets: np.ndarray, q_ref: np.ndarray, load: Load) -> dict:
    """Table 5: the tool point commanded to each target by the nominal inverse kinematics (before) and
    by the compensation of ``result`` (after), unloaded and loaded; the errors of where the cell's arm
    really goes (true) and of what its tracker reads (measured), and 1 - max after / max before."""
    table5 = {}
    for cond, lo in (("no_load", None), ("loaded", load)):
        before_true, after_true, before_meas, after_meas = [], [], [], []
        for T in targets:
            comp = compensate(result, T, q_ref, lo)
            p_before = cell.true_positions(comp.q_nominal[None], lo)[0]
            p_after = cell.true_positions(comp.q_compensated[None], lo)[0]
            before_true.append(np.linalg.norm(p_before - T[:3, 3]))
            after_true.append(np.linalg.norm(p_after - T[:3, 3]))
            before_meas.append(np.linalg.norm(cell.tracker.measure(p_before)[0] - T[:3, 3]))
            after_meas.append(np.linalg.norm(cell.tracker.measure(p_after)[0] - T[:3, 3]))
        table5[cond] = {
            "true": {"before": error_stats(before_true), "after": error_stats(after_true),
                     "max_reduction": 1.0 - max(after_true) / max(before_true)},
            "measured": {"before": error_stats(before_meas), "after": error_stats(after_meas),
                         "max_reduction": 1.0 - max(after_meas) / max(before_meas)},
        }
    return table5


def run_paper_replay(*, seed: int = 0, noload_poses: int = NOLOAD_POSES, loaded_poses: int = LOADED_POSES,
                       holdout: int = 200, noise: TrackerNoise = TrackerNoise(), identify_tool: bool = False,
                       identify_base: bool = False, base_error=None, tool_error=None, cube=None,
                       extra_methods=()) -> dict:
    """Run the whole replay; returns a JSON-ready report (errors in mm)."""
    gm, cell = ur5_li2023_cell(seed=seed, noise=noise, base_error=base_error, tool_error=tool_error)
    robot = gm.robot
    load = Load(LOAD_MASS, LOAD_COM)
    setup = CellSetup(tracker_position=DEFAULT_TRACKER_POSITION, tool_offset=DEFAULT_TOOL_OFFSET,
                      floor_z=UR5_LI2023_FLOOR_Z)
    plan = plan_measurements(robot, setup, noload_poses, seed=seed, cube=cube)
    held = sample_poses(robot, setup, plan.cube, holdout, plan.q_ref, seed=seed + 7919)
    free = preset_free_names(gm, "li2023", identify_base=identify_base, identify_tool=identify_tool)
    core = replay_on_cell(gm, cell, setup, plan, held.q, load, loaded_poses, free,
                          TABLE4_METHODS[1:] + tuple(extra_methods))
    results, sub, truth = core["results"], core["loaded_subset"], core["truth"]
    combined = results["combined"]
    table4, table5 = core["table4"], core["table5"]
    # Table 3: identified against true values
    truth_params = cell.robot.params
    table3 = {}
    for method in TABLE4_METHODS[1:]:
        r = results[method]
        table3[method] = {
            "parameters": {n: {"true": float(truth_params[i]), "identified": float(r.params[i]),
                               "error": float(r.params[i] - truth_params[i]),
                               "std": None if not np.isfinite(r.std[i]) else float(r.std[i])}
                           for i, n in enumerate(gm.names) if n in free},
            "stiffness_true_Nm_per_rad": TABLE3_STIFFNESS.tolist(),
            "joint_stiffness": result_to_dict(r, robot.name)["joint_stiffness"],
            "dropped": [d.describe() for d in r.dropped], "notes": r.notes,
            "iterations": r.iterations,
        }
    generic = generic_configurations(gm, noload_poses, seed=seed)
    sigma = float(noise.sigma(2.0))
    identifiability = {
        "paper_parameters": free,
        "at_nominal_geometry": analyse_identifiability(gm, gm.nominal, plan.q, free, sigma).to_dict(),
        "at_true_geometry": analyse_identifiability(gm, truth_params, plan.q, free, sigma).to_dict(),
        "at_true_geometry_without_dropped": analyse_identifiability(
            gm, truth_params, plan.q, combined.free_names, sigma).to_dict(),
        "generic_poses_at_true_geometry": analyse_identifiability(gm, truth_params, generic, free, sigma).to_dict(),
    }
    return {
        "scenario": {
            "seed": seed, "robot": robot.name, "noload_poses": noload_poses, "loaded_poses": loaded_poses,
            "held_out_poses": holdout, "load": load.to_dict(), "tool_offset_m": list(DEFAULT_TOOL_OFFSET),
            "tracker_position_m": list(DEFAULT_TRACKER_POSITION),
            "tracker_noise": {"sigma_um": noise.sigma_m * 1e6, "sigma_um_per_m": noise.sigma_per_m * 1e6,
                              "meaning": "per-axis standard deviation = sigma_um + sigma_um_per_m * range"},
            "true_geometry": "Li et al. 2023 Table 3 (combined identification)",
            "true_stiffness_Nm_per_rad": TABLE3_STIFFNESS.tolist(),
            "cube": plan.cube.to_dict(), "loaded_pose_ids": [plan.ids[i] for i in sub],
            "identified_parameters": free, "identify_base": identify_base, "identify_tool": identify_tool,
        },
        "table4_mm": table4,
        "table5_mm": table5,
        "table3": table3,
        "identifiability": identifiability,
        "paper": {"table4_mm_mean_max_min": TABLE4, "table5_mm_mean_max_min": TABLE5,
                  "table5_max_reduction": TABLE5_MAX_REDUCTION},
        "_per_pose_mm": {  # for plots; dropped from --json output by the CLI unless asked
            cond: {m: (results[m].errors(truth[cond]) * 1000).tolist() for m in results}
            for cond in ("no_load", "loaded")},
    }


def replay_with_plots(plot_prefix=None, **kwargs) -> dict:
    """:func:`run_paper_replay` without its per-pose series, which go to PREFIX_no_load.png and
    PREFIX_loaded.png (held-out poses, true error) when ``plot_prefix`` is given."""
    report = run_paper_replay(**kwargs)
    per_pose = report.pop("_per_pose_mm")
    if plot_prefix:
        from robodyn.papers import cite

        from .plots import plot_errors_per_pose

        for cond, series in per_pose.items():
            plot_errors_per_pose(f"{plot_prefix}_{cond}.png", series,
                                 title=f"{cite('calibration')} replay, held-out poses, {cond.replace('_', ' ')} (true error)")
    return report


def format_replay(report: dict) -> str:
    """Li et al. 2023 Table 4/5-style text."""
    lines = []
    sc = report["scenario"]
    lines.append(f"Li et al. 2023 replay (simulated {sc['robot']}, seed {sc['seed']}): {sc['noload_poses']} unloaded + "
                 f"{sc['loaded_poses']} loaded poses ({sc['load']['mass_kg']} kg), {sc['held_out_poses']} held-out poses, "
                 f"tracker noise {sc['tracker_noise']['sigma_um']:.0f} um + {sc['tracker_noise']['sigma_um_per_m']:.0f} um/m per axis")
    lines.append(f"test cube: centre {np.round(sc['cube']['center'], 3).tolist()} m, edge {sc['cube']['edge']:.3f} m")
    names = {"nominal": "nominal", "geometric": "geometric", "geometric-stiffness": "geometric then stiffness",
             "combined": "combined", "combined-gravity": "combined-gravity"}
    paper_key = {"nominal": "nominal", "geometric": "geometric", "geometric-stiffness": "geometric_then_stiffness",
                 "combined": "combined"}
    lines.append("")
    lines.append("Table 4: end position error, mm (mean / max / min)")
    header = f"{'':9}{'method':26}{'identification poses':>24}{'held-out, true':>24}{'held-out, tracker':>24}{'paper':>24}"
    lines.append(header)
    for cond in ("no_load", "loaded"):
        t = report["table4_mm"][cond]
        for m in t["held_out_true"]:
            paper = report["paper"]["table4_mm_mean_max_min"][cond].get(paper_key.get(m, ""))
            cells = [_fmt(t[k][m]) for k in ("identification_poses_measured", "held_out_true", "held_out_measured")]
            pp = "—" if paper is None else " / ".join(f"{v:.3f}" for v in paper)
            lines.append(f"{cond.replace('_', '-'):9}{names[m]:26}" + "".join(f"{c:>24}" for c in cells) + f"{pp:>24}")
    lines.append("")
    lines.append("Table 5: compensation at the five ISO 9283 points (combined model), mm (mean / max / min)")
    for cond in ("no_load", "loaded"):
        t = report["table5_mm"][cond]
        paper = report["paper"]["table5_mm_mean_max_min"][cond]
        lines.append(f"{cond.replace('_', '-'):9}true:    before {_fmt(t['true']['before'])}  after {_fmt(t['true']['after'])}  "
                     f"max reduced {100 * t['true']['max_reduction']:.1f} %")
        lines.append(f"{'':9}tracker: before {_fmt(t['measured']['before'])}  after {_fmt(t['measured']['after'])}  "
                     f"max reduced {100 * t['measured']['max_reduction']:.1f} %   "
                     f"(paper: {paper['before'][1]:.3f} -> {paper['after'][1]:.3f}, "
                     f"{100 * report['paper']['table5_max_reduction'][cond]:.1f} %)")
    lines.append("")
    c = report["table3"]["combined"]
    lines.append("joint stiffness, N·m/rad, true: " + ", ".join(
        f"K{j + 1} {k:.0f}" for j, k in enumerate(c["stiffness_true_Nm_per_rad"])))
    lines.append("joint stiffness, N·m/rad, combined: " + ", ".join(stiffness_text(k) for k in c["joint_stiffness"]))
    ident = report["identifiability"]
    for key, label in (("at_nominal_geometry", "paper's 18 at the nominal geometry"),
                       ("at_true_geometry", "paper's 18 at the true geometry"),
                       ("at_true_geometry_without_dropped", "after dropping the redundant ones")):
        r = ident[key]
        cond = r["condition_number"]
        lines.append(f"identifiability, {label}: rank {r['rank']}/{r['parameter_count']}, condition number "
                     f"{'inf' if cond is None else f'{cond:.3g}'}"
                     + (f", redundant: {'; '.join(x['text'] for x in r['redundant'])}" if r["redundant"] else "")
                     + (f", poorly identifiable: {', '.join(r['poorly_identifiable'])}" if r["poorly_identifiable"] else ""))
    for note in c["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _fmt(stats: dict) -> str:
    return f"{stats['mean_mm']:.3f} / {stats['max_mm']:.3f} / {stats['min_mm']:.3f}"
