"""Li et al. 2023's calibration procedure replayed on the heavy-arm plant (no inverse crime).

The UR5 replay (paper_replay.run_paper_replay) simulates an arm whose errors are exactly of the
form the calibration model identifies, so its residuals fall to the tracker's noise. Here the same
procedure, through the same code (paper_replay.replay_on_cell: plan, measurement, the three methods,
Table 4, the Table 5 compensation), measures the heavy-arm plant of heavy_arm.py, which the model
does not describe: its upper arm and forearm bend under their own weight and what they carry, its
link masses are up to 15 % off the model's with shifted centres of mass (the joint springs are
loaded by the true weights, the model computes them from the nominal ones), and joint 3 leans out of
the arm plane in a direction no DH parameter has.

Set-up as the paper states it, as far as it carries over to this arm: one target ball (the nest's
first SMR) read by an AT960-class tracker in the arm's base frame, 50 poses drawn in an ISO 9283
test cube, the D-optimal 20 of them repeated with a test weight (100 kg at 0.25 m: the paper's
4.678 kg is 94 % of its UR5's rating and would barely load this 165 kg-class arm), the methods
geometric, geometric-then-stiffness and combined, and the combined model's compensation at the five
ISO 9283 points. Held-out poses (drawn in the same cube, never fitted) give the accuracy.

Why the headline is or is not reached is measured, not argued: the plant's gravity sag is split
into its joint-spring and link-bending parts at the held-out poses, and the combined fit and the
compensation are rerun on the plant with its unmodelled effects switched off one after another
(same poses, same tracker noise).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .heavy_arm import HEAVY_ARM, HEAVY_LOAD, NEST, HeavyArmCell, HeavyArmPlant, HeavyArmTruth
from .methods import error_stats
from .parameters import geometric_model, preset_free_names
from .paper_replay import replay_on_cell
from .planning import CellSetup, TestCube, plan_measurements, sample_poses
from .result_file import result_to_dict
from .stiffness import Load

# The ISO 9283 test cube of the heavy-arm cell, as heavy_arm_test_cube() finds it. largest_test_cube's
# full search needs tens of thousands of numeric inverse kinematics on this arm (no closed form: hours
# on the shared 2-core host), so the edge is bisected at that search's starting point only
# (planning._default_probe: towards the tracker at half reach), with the same 27-point check; stored
# because even that takes minutes. tests/calibration/test_heavy_arm_replay.py checks its ISO points.
HEAVY_ARM_CUBE = TestCube(np.array([1.38350947, 0.96963074, 0.33789242]), 0.575)
CUBE_SEARCH = (1.6, 7)  # m, bisections: the edge is searched in 0..1.6 m to 1.6 / 2^7 = 12.5 mm
HELD_OUT_POSES = 100
# The plant with its unmodelled effects switched off one after another (HeavyArmTruth fields): the
# last one has only errors of the model's own form, the inverse crime the UR5 replay commits.
ABLATIONS = (
    ("plant", {}),
    ("no link bending", {"bending_EI": ()}),
    ("no link bending, true masses = the model's", {"bending_EI": (), "mass_error": 0.0, "com_shift": 0.0}),
    ("no link bending, true masses = the model's, no joint-3 lean",
     {"bending_EI": (), "mass_error": 0.0, "com_shift": 0.0, "joint3_lean": 0.0}),
)
PLANT_DIFFERENCES = ("the plant's upper arm and forearm bend under their own weight and what they carry (EI 2e7 "
                     "and 1e7 N.m^2), its link masses are up to 15 % off the model's with centres of mass shifted "
                     "by 5 cm (1 sigma), joint 3 leans 0.015 deg out of the arm plane (no DH parameter expresses "
                     "it); every DH value deviates (0.3 mm, 0.03 deg, 1 sigma), the SMR sits 0.15 mm off its "
                     "drawing, AT960-class tracker noise")


def heavy_arm_cell(seed: int, **effects) -> tuple:
    """(identifier's model, cell, truth): heavy6's nominal geometry with one target at the first SMR's
    drawing position, and the plant (``effects`` override HeavyArmTruth fields) as a single-ball cell."""
    from .robots import load_robot

    robot = load_robot(HEAVY_ARM)
    truth = replace(HeavyArmTruth(seed=seed), **effects)
    cell = HeavyArmCell(HeavyArmPlant(robot, truth))
    return geometric_model(robot, tool_offset=NEST[0][1]), cell, truth


def heavy_arm_setup(cell: HeavyArmCell) -> CellSetup:
    return CellSetup(tracker_position=tuple(float(x) for x in cell.tracker.position), tool_offset=NEST[0][1],
                     floor_z=0.0)


def heavy_arm_test_cube(seed: int = 0) -> TestCube:
    """The test cube of HEAVY_ARM_CUBE, searched again (minutes: about 800 numeric inverse kinematics)."""
    from .planning import _default_probe, cube_edge_at, reference_configuration

    gm, cell, _ = heavy_arm_cell(seed)
    setup = heavy_arm_setup(cell)
    centre = _default_probe(gm.robot, setup)
    q0 = reference_configuration(gm.robot, setup, centre)
    return TestCube(centre, cube_edge_at(gm.robot, setup, centre, q0, 0.0, *CUBE_SEARCH))


def _sag_components(cell: HeavyArmCell, q: np.ndarray, load: Load | None) -> dict:
    """How far gravity moves the ball at poses ``q`` (mm): in total, by the joint springs alone
    (true masses) and by the links' bending on top of them."""
    full = cell.true_positions(q, load)
    no_bend = cell.true_positions(q, load, bending=False)
    rigid = cell.true_positions(q, load, bending=False, joint_springs=False)
    return {name: error_stats(np.linalg.norm(a - b, axis=1))
            for name, (a, b) in {"total": (full, rigid), "joint_springs": (no_bend, rigid),
                                 "bending": (full, no_bend)}.items()}


def run_heavy_arm_replay(*, seed: int = 0, noload_poses: int = 50, loaded_poses: int = 20,
                         holdout: int = HELD_OUT_POSES, ablation: bool = True, cube: TestCube | None = None) -> dict:
    """Li et al. 2023's procedure on the heavy-arm plant; JSON-ready (errors in mm)."""
    gm, cell, truth = heavy_arm_cell(seed)
    robot = gm.robot
    load = Load(HEAVY_LOAD[0], HEAVY_LOAD[1])
    setup = heavy_arm_setup(cell)
    plan = plan_measurements(robot, setup, noload_poses, seed=seed, cube=cube or HEAVY_ARM_CUBE)
    held = sample_poses(robot, setup, plan.cube, holdout, plan.q_ref, seed=seed + 7919)
    # the paper's rule (every DH value the frame construction does not fix) on this cell: the base frame
    # is known, so every DH value is free, and the ball's offset (the nest is off its drawing)
    free = preset_free_names(gm, "all", identify_tool=True)
    core = replay_on_cell(gm, cell, setup, plan, held.q, load, loaded_poses, free)
    results = core["results"]
    combined = results["combined"]
    errors = {cond: {m: (r.errors(core["truth"][cond]) * 1000) for m, r in results.items()}
              for cond in ("no_load", "loaded")}
    sag = {"no_load": _sag_components(cell, held.q, None), "loaded": _sag_components(cell, held.q, load)}
    report = {
        "scenario": {
            "seed": seed, "robot": robot.name, "data": "plant: calibration/heavy_arm.py HeavyArmPlant; "
                                                       + PLANT_DIFFERENCES,
            "noload_poses": noload_poses, "loaded_poses": loaded_poses, "held_out_poses": holdout,
            "load": load.to_dict(), "tool_offset_m": list(NEST[0][1]),
            "tracker_position_m": [float(x) for x in cell.tracker.position], "cube": plan.cube.to_dict(),
            "loaded_pose_ids": [plan.ids[i] for i in core["loaded_subset"]], "identified_parameters": free,
            "true_stiffness_Nm_per_rad": list(truth.stiffness),
        },
        "table4_mm": core["table4"],
        "table5_mm": core["table5"],
        "joint_stiffness": result_to_dict(combined, robot.name)["joint_stiffness"],
        "gravity_sag_held_out_mm": sag,
        # the combined fit's held-out residual beside the part of the sag that is bending, pose by pose
        "combined_residual_vs_bending": {
            cond: {"residual_rms_mm": float(np.sqrt(np.mean(errors[cond]["combined"] ** 2))),
                   "bending_rms_mm": sag[cond]["bending"]["rms_mm"],
                   "correlation": float(np.corrcoef(errors[cond]["combined"],
                                                    _bending_mm(cell, held.q, load if cond == "loaded" else None))[0, 1])}
            for cond in ("no_load", "loaded")},
        "notes": combined.notes,
    }
    if ablation:
        report["ablation"] = {}
        for name, effects in ABLATIONS:
            if not effects:
                t4, t5 = core["table4"], core["table5"]
            else:
                gm_a, cell_a, _ = heavy_arm_cell(seed, **effects)
                part = replay_on_cell(gm_a, cell_a, setup, plan, held.q, load, loaded_poses, free, ("combined",))
                t4, t5 = part["table4"], part["table5"]
            report["ablation"][name] = {
                "effects_off": sorted(effects),
                "combined_held_out_true": {c: t4[c]["held_out_true"]["combined"] for c in ("no_load", "loaded")},
                "table5_true": {c: t5[c]["true"] for c in ("no_load", "loaded")}}
    return report


def _bending_mm(cell: HeavyArmCell, q: np.ndarray, load: Load | None) -> np.ndarray:
    return 1000 * np.linalg.norm(cell.true_positions(q, load) - cell.true_positions(q, load, bending=False), axis=1)

