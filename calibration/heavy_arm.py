"""A simulated heavy arm whose truth has effects the calibration model lacks (no inverse crime).

The calibration model of ``heavy6`` (calibration/data/heavy6.toml) is a DH chain with joint
springs loaded by the *nominal* link masses. The arm simulated here differs from it in ways a real
heavy arm does:

* **link bending**: the upper arm and the forearm are elastic beams; under their own weight and
  everything they carry they bend (tip deflection P L^3 / 3EI + W L^3 / 8EI, tip rotation
  P L^2 / 2EI + W L^2 / 6EI for the carried load P and the link's own weight W), a deflection
  that is not a joint rotation and that changes with the link's angle to gravity;
* **joint compliance** under the *true* link masses, which differ from the model's by up to
  ±15 % with shifted centres of mass;
* **non-parallel axes beyond the parameter set**: joint 3 leans out of the arm plane by a Hayati
  tilt (about y) that no DH parameter expresses;
* geometric deviations of every DH value, a misaligned base in the tracker's frame, SMR offsets
  that differ from their nominal nest positions, and tracker noise (AT960 class).

Everything is seeded. The effects' sizes are assumptions of the order found on 150-200 kg
payload arms (sag of one to a few millimetres at full reach); they are stated in
:class:`HeavyArmTruth` and printed by ``bench/calibration/run.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from robodyn.robot.dynamics import gravity_torques
from robodyn.robot.kinematics import chain_frames, rot_x, rot_y, rot_z, trans
from robodyn.robot.model import com_inertia, standard_parameters

from .parameters import Target, chain_for, geometric_model, parallel_axis_rows, tool_transform
from .simulation import SimulatedTracker, TrackerNoise
from .stiffness import Load

HEAVY_ARM = "heavy6"
# three SMRs on a nest on the flange, m (assumed: a 120 mm triangle 60 mm in front of the flange)
NEST = (("SMR1", (0.0693, 0.0, 0.060)), ("SMR2", (-0.0346, 0.060, 0.060)), ("SMR3", (-0.0346, -0.060, 0.060)))
TRACKER_BASE = (3.5, -1.2, -0.4, 0.0, 0.0, 2.2)  # robot base in the tracker frame: x y z m, rx ry rz rad (assumed)


@dataclass
class HeavyArmTruth:
    """The sizes of the effects (assumed, of the order found on 150-200 kg payload arms)."""

    seed: int = 0
    length_error: float = 3e-4  # m, 1 sigma per DH length
    angle_error: float = np.deg2rad(0.03)  # rad, 1 sigma per DH angle
    joint3_lean: float = np.deg2rad(0.015)  # rad: Hayati tilt of joint 3 about y (beyond MDH/DH)
    mass_error: float = 0.15  # relative, uniform +- per link
    com_shift: float = 0.05  # m, 1 sigma per axis
    stiffness: tuple = (8e6, 4e6, 3e6, 1.2e6, 6e5, 4e5)  # N·m/rad, joints 1..6
    bending_EI: tuple = ((2, 2.0e7), (4, 1.0e7))  # (link, EI N·m^2): upper arm (link 2) and forearm (link 4)
    nest_error: float = 1.5e-4  # m, 1 sigma per SMR coordinate
    noise: TrackerNoise = field(default_factory=TrackerNoise)


class HeavyArmPlant:
    """The 'real' heavy arm and the tracker that measures it: ``points(q_controller, load)``."""

    def __init__(self, model_robot, truth: HeavyArmTruth = HeavyArmTruth()):
        rng = np.random.default_rng(truth.seed)
        self.truth = truth
        self.model_robot = model_robot
        plain = geometric_model(model_robot, targets=[Target(n, o) for n, o in NEST])
        rows = parallel_axis_rows(plain)
        self.gm = geometric_model(model_robot, targets=[Target(n, o) for n, o in NEST], hayati_rows=rows)
        p = self.gm.nominal.copy()
        for f, size in (("alpha", truth.angle_error), ("a", truth.length_error), ("d", truth.length_error),
                        ("theta", truth.angle_error)):
            p[self.gm.row_index(f)] += rng.normal(scale=size, size=self.gm.dof)
        for r in rows:
            p[self.gm.index(f"beta{r + 1}")] = truth.joint3_lean if r in (1, 2) else 0.0
        for k in range(len(NEST)):
            p[self.gm.indices(self.gm.tool_names(k))] += rng.normal(scale=truth.nest_error, size=3)
        self.params = p
        x, y, z, rx, ry, rz = TRACKER_BASE
        self.base = trans(x, y, z) @ rot_z(rz) @ rot_y(ry) @ rot_x(rx)
        # true link masses and centres of mass
        inertial = model_robot.inertial.copy()
        for i in range(model_robot.dof):
            m, c, I_c = com_inertia(inertial[i])
            if m > 0:
                k = 1.0 + rng.uniform(-truth.mass_error, truth.mass_error)
                inertial[i] = standard_parameters(m * k, c + rng.normal(scale=truth.com_shift, size=3), I_c * k)
        fixed, flange = chain_for(self.gm, p)
        from dataclasses import replace

        self.robot = replace(model_robot, fixed=fixed, tool=flange, inertial=inertial)
        self.compliance = 1.0 / np.asarray(truth.stiffness, float)
        self.tracker = SimulatedTracker(np.zeros(3), truth.noise, seed=truth.seed + 1)  # the tracker at its own origin

    # ----------------------------------------------------------------- physics

    def link_angles(self, q_model: np.ndarray, load: Load | None) -> np.ndarray:
        """Joint angles after the joint springs settle under the true weights (fixed point)."""
        from .stiffness import holding_torques

        q = np.atleast_2d(q_model)
        d = np.zeros_like(q)
        for _ in range(50):
            tau = holding_torques(self.robot, q + d, load, links=True)
            new = -self.compliance * tau
            if np.max(np.abs(new - d)) < 1e-13:
                d = new
                break
            d = new
        return q + d

    def _bend(self, frames: np.ndarray, flange: np.ndarray, load: Load | None) -> tuple[np.ndarray, np.ndarray]:
        """Apply the beam bending of each elastic link to the frames beyond it (one configuration)."""
        robot = self.robot
        g = np.asarray(robot.gravity, float)
        n = robot.dof
        masses = np.array([com_inertia(robot.inertial[i])[0] for i in range(n)])
        payload = 0.0 if load is None else load.mass
        frames = frames.copy()
        flange = flange.copy()
        for link, EI in self.truth.bending_EI:
            i = link - 1  # 0-based joint index whose frame carries the link
            start = frames[i, :3, 3]
            end = frames[i + 1, :3, 3] if i + 1 < n else flange[:3, 3]
            span = end - start
            L = float(np.linalg.norm(span))
            if L < 1e-6:
                continue
            u = span / L
            carried = (masses[i + 1:].sum() + payload) * g  # N: what the link holds at its tip
            own = masses[i] * g
            P = carried - (carried @ u) * u
            W = own - (own @ u) * u
            deflection = P * L ** 3 / (3 * EI) + W * L ** 3 / (8 * EI)
            bend = (P * L ** 2 / (2 * EI) + W * L ** 2 / (6 * EI))  # tip rotation towards the load, vector
            axis = np.cross(u, bend)  # rotation axis: turns u towards the load
            angle = float(np.linalg.norm(bend))
            if angle < 1e-15:
                continue
            axis /= np.linalg.norm(axis)
            K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
            R = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K
            D = np.eye(4)
            D[:3, :3] = R
            D[:3, 3] = end + deflection - R @ end
            frames[i + 1:] = D @ frames[i + 1:]
            flange = D @ flange
        return frames, flange

    def model_points(self, q_model, load: Load | None = None, *, bending: bool = True,
                     joint_springs: bool = True) -> np.ndarray:
        """The true SMR positions (tracker frame, m, no noise) at the model's joint values: (N, 3, 3).
        ``bending`` / ``joint_springs`` False switch that effect off (to measure what it contributes)."""
        q = np.atleast_2d(np.asarray(q_model, float))
        q_link = self.link_angles(q, load) if joint_springs else q
        frames = chain_frames(self.robot.fixed, self.robot.joint_types, q_link)
        out = np.empty((q.shape[0], len(NEST), 3))
        tools = [tool_transform(self.gm, self.params, k) for k in range(len(NEST))]
        for m in range(q.shape[0]):
            flange = frames[m, -1] @ self.robot.tool
            if bending:
                _, flange = self._bend(frames[m], flange, load)
            T = self.base @ flange
            for k, Tk in enumerate(tools):
                out[m, k] = (T @ Tk)[:3, 3]
        return out

    def points(self, q_controller, load: Load | None = None, *, noise: bool = True) -> np.ndarray:
        """The SMRs as the tracker sees them (tracker frame, m): (N, 3, 3)."""
        q = self.model_robot.joint_map.to_model(np.atleast_2d(np.asarray(q_controller, float)))
        out = self.model_points(q, load)
        if noise:
            flat = out.reshape(-1, 3)
            out = self.tracker.measure(flat).reshape(out.shape)
        return out

    def sag_mm(self, q_controller) -> np.ndarray:
        """How far gravity moves the first SMR (joint springs + bending, no payload), mm per pose."""
        q = np.atleast_2d(q_controller)
        rigid = self._rigid_points(q)
        return np.linalg.norm(self.points(q, None, noise=False)[:, 0] - rigid, axis=1) * 1000

    def _rigid_points(self, q_controller) -> np.ndarray:
        q = self.model_robot.joint_map.to_model(np.atleast_2d(q_controller))
        frames = chain_frames(self.robot.fixed, self.robot.joint_types, q)
        T = self.base @ frames[:, -1] @ self.robot.tool
        return (T @ tool_transform(self.gm, self.params, 0))[:, :3, 3]


class HeavyArmCell:
    """The plant as a single-ball cell (Li et al. 2023's set-up): the tracker reads one SMR of the
    nest, in the arm's base frame (the frame the paper builds from the tracker before calibrating),
    at the model's joint values. The drop-in for simulation.SimulatedCell in paper_replay."""

    def __init__(self, plant: HeavyArmPlant, smr: int = 0):
        self.plant = plant
        self.smr = smr
        self.to_base = np.linalg.inv(plant.base)
        # the same AT960-class tracker, at its place seen from the arm's base
        self.tracker = SimulatedTracker(self.to_base[:3, 3].copy(), plant.truth.noise, seed=plant.truth.seed + 1)

    def true_positions(self, q_model, load: Load | None = None, **effects) -> np.ndarray:
        """The ball's true position in the base frame (N, 3); ``effects`` as in HeavyArmPlant.model_points."""
        p = self.plant.model_points(q_model, load, **effects)[:, self.smr]
        return p @ self.to_base[:3, :3].T + self.to_base[:3, 3]

    def measure(self, q: np.ndarray, load: Load | None) -> np.ndarray:
        return self.tracker.measure(self.true_positions(q, load))


def heavy_arm_poses(robot, count: int, seed: int, *, j2=(-30.0, 34.0), j3=(-35.0, 25.0)) -> np.ndarray:
    """Controller joint values spread over a working region (deg ranges for J2 and J3, the
    controller's coupled J3), the wrist turned so the SMR nest faces the tracker roughly."""
    rng = np.random.default_rng(seed)
    q = np.zeros((count, 6))
    q[:, 0] = np.deg2rad(rng.uniform(-40, 40, count))
    q[:, 1] = np.deg2rad(rng.uniform(*j2, count))
    q[:, 2] = np.deg2rad(rng.uniform(*j3, count))
    q[:, 3] = np.deg2rad(rng.uniform(-90, 90, count))
    q[:, 4] = np.deg2rad(rng.uniform(-80, 80, count))
    q[:, 5] = np.deg2rad(rng.uniform(-150, 150, count))
    return q


def gravity_torque_range(robot, q_controller) -> np.ndarray:
    return gravity_torques(robot, robot.joint_map.to_model(q_controller))


def single_axis_sweeps(home_deg, spans_deg, per_joint: int) -> np.ndarray:
    """Controller joint values that move one joint at a time from ``home`` (deg) over ``spans``
    (deg, (low, high) per joint): the 'single-axis sweep' protocol common for industrial arms."""
    home = np.deg2rad(np.asarray(home_deg, float))
    rows = [home.copy()]
    for j, (lo, hi) in enumerate(spans_deg):
        if lo == hi:
            continue
        for v in np.linspace(lo, hi, per_joint):
            q = home.copy()
            q[j] = np.deg2rad(v)
            rows.append(q)
    return np.array(rows)


# --------------------------------------------------------------------------- the comparison

SWEEP_HOME = (0.0, 0.0, 0.0, 0.0, -30.0, 0.0)  # controller deg
SWEEP_SPANS = ((-40, 40), (-30, 34), (-35, 25), (-90, 90), (-80, 40), (-150, 150))  # J2 -30..+34: the range the heavy-arm case was specified with
HELD_J2, HELD_J3 = (-35.0, 50.0), (-40.0, 30.0)  # held-out poses reach beyond the identification range
HEAVY_LOAD = (100.0, (0.0, 0.0, 0.25))  # kg, m in the flange frame (assumed test weight)
COMPARISON_METHODS = ("nominal", "geometric", "geometric-stiffness", "combined", "combined-gravity")


def heavy_arm_comparison(seed: int = 0, *, holdout: int = 80, per_joint: int = 6, truth: HeavyArmTruth | None = None
                         ) -> dict:
    """Identify the heavy arm by every method from single-axis sweeps (3 SMRs per pose, the data
    in the tracker's frame; a 100 kg test weight on every second pose) and compare them on held-out
    poses that reach beyond the identification range, against the arm's true (noise-free) SMR
    positions, unloaded and loaded. Also combined-gravity on the unloaded sweeps alone."""
    from .methods import calibrate, error_stats, nominal_result
    from .measurement_csv import measurement_frame
    from .robots import load_robot
    from .measurements import MeasurementSet
    from .parameters import preset_free_names

    robot = load_robot(HEAVY_ARM)
    truth = truth or HeavyArmTruth(seed=seed)
    plant = HeavyArmPlant(robot, truth)
    jm = robot.joint_map
    load = Load(HEAVY_LOAD[0], HEAVY_LOAD[1])
    q_id = single_axis_sweeps(SWEEP_HOME, SWEEP_SPANS, per_joint)
    q_held = heavy_arm_poses(robot, holdout, seed=1000 + seed, j2=HELD_J2, j3=HELD_J3)
    targets = [Target(n, o) for n, o in NEST]
    noload = MeasurementSet(jm.to_model(q_id), plant.points(q_id), q_controller=q_id)
    sub = np.arange(0, len(q_id), 2)
    loaded = MeasurementSet(jm.to_model(q_id[sub]), plant.points(q_id[sub], load), load=load, q_controller=q_id[sub])
    base, _, _ = measurement_frame(geometric_model(robot, targets=targets), noload)
    gm = geometric_model(robot, targets=targets, base=base)
    free = preset_free_names(gm, "all", identify_base=True, identify_tool=True)
    held = {"unloaded": MeasurementSet(jm.to_model(q_held), plant.points(q_held, noise=False), q_controller=q_held),
            "loaded": MeasurementSet(jm.to_model(q_held), plant.points(q_held, load, noise=False), load=load,
                                     q_controller=q_held)}
    results = {"nominal": nominal_result(gm)}
    for method in COMPARISON_METHODS[1:]:
        results[method] = calibrate(gm, noload, loaded, method=method, free_names=free)
    results["combined-gravity, unloaded data only"] = calibrate(gm, noload, None, method="combined-gravity",
                                                                free_names=free)
    rows = {}
    for name, r in results.items():
        rows[name] = {"models_link_gravity": r.models_link_gravity,
                      "identification": error_stats(r.errors(noload)),
                      **{k: error_stats(r.errors(m)) for k, m in held.items()},
                      "stiffness_Nm_per_rad": [None if not np.isfinite(k) else float(k) for k in r.stiffness]}
    lo, hi = q_id.min(0), q_id.max(0)
    outside = int(np.sum(np.any((q_held < lo - 1e-9) | (q_held > hi + 1e-9), axis=1)))
    ident = results["geometric"].identifiability["identified"]
    return {
        "scenario": {"robot": HEAVY_ARM, "seed": seed, "identification_poses": int(len(q_id)),
                     "loaded_poses": int(len(sub)), "load": load.to_dict(), "held_out_poses": int(holdout),
                     "held_out_outside_identification_ranges": outside, "smrs_per_pose": len(NEST),
                     "protocol": "single-axis sweeps from a home pose (controller degrees) "
                                 f"{[list(s) for s in SWEEP_SPANS]}; held-out J2 {list(HELD_J2)}, J3 {list(HELD_J3)}",
                     "gravity_sag_mm": {"identification_max": float(plant.sag_mm(q_id).max()),
                                        "held_out_max": float(plant.sag_mm(q_held).max())},
                     "truth": {"length_error_m": truth.length_error, "angle_error_deg": float(np.rad2deg(truth.angle_error)),
                               "joint3_lean_deg": float(np.rad2deg(truth.joint3_lean)),
                               "mass_error": truth.mass_error, "com_shift_m": truth.com_shift,
                               "stiffness_Nm_per_rad": list(truth.stiffness),
                               "bending_EI_Nm2": {f"link{l}": ei for l, ei in truth.bending_EI},
                               "nest_error_m": truth.nest_error},
                     "geometric_identifiability": {"parameters": ident["parameter_count"],
                                                   "poorly_identifiable": len(ident["poorly_identifiable"]),
                                                   "condition_number": ident["condition_number"]}},
        "methods": rows,
    }


def format_comparison(report: dict) -> str:
    sc = report["scenario"]
    lines = [f"heavy arm ({sc['robot']}, seed {sc['seed']}): {sc['identification_poses']} sweep poses x "
             f"{sc['smrs_per_pose']} SMRs, {sc['loaded_poses']} with {sc['load']['mass_kg']:g} kg; "
             f"{sc['held_out_poses']} held-out poses ({sc['held_out_outside_identification_ranges']} outside the "
             f"identification joint ranges); gravity sag up to {sc['gravity_sag_mm']['held_out_max']:.2f} mm",
             "held-out error against the true SMR positions, mm (mean / max / rms)",
             f"{'method':40}{'link gravity':>14}{'unloaded':>26}{'loaded':>26}"]
    for name, row in report["methods"].items():
        cells = [f"{row[k]['mean_mm']:.3f} / {row[k]['max_mm']:.3f} / {row[k]['rms_mm']:.3f}" for k in ("unloaded", "loaded")]
        lines.append(f"{name:40}{('yes' if row['models_link_gravity'] else 'no'):>14}{cells[0]:>26}{cells[1]:>26}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- masses hidden, a sweep plan

# 36 single-axis sweep poses, 6 per joint; J2 swept to +50 deg so that its end pose, held out, lies
# beyond the range the other J2 poses identify (-30..+34 deg)
SWEEP_PLAN_SPANS = ((-40, 40), (-30, 50), (-35, 25), (-90, 90), (-80, 40), (-150, 150))
SWEEP_PLAN_PER_JOINT = 6
SWEEP_PLAN_HOLDOUT_EVERY = 4


def sweep_plan(spans=SWEEP_PLAN_SPANS, per_joint: int = SWEEP_PLAN_PER_JOINT, every: int = SWEEP_PLAN_HOLDOUT_EVERY
               ) -> tuple[np.ndarray, np.ndarray]:
    """Controller joint values (identification, held out): the home pose and the sweep poses, every
    ``every``-th sweep pose held out."""
    q = single_axis_sweeps(SWEEP_HOME, spans, per_joint)
    sweep = q[1:]
    held = np.arange(every - 1, len(sweep), every)
    ident = np.setdiff1d(np.arange(len(sweep)), held)
    return np.vstack([q[:1], sweep[ident]]), sweep[held]


def massless(robot):
    """The model as a lab without mass data has it: the geometry, no link masses."""
    from dataclasses import replace

    return replace(robot, inertial=np.zeros_like(robot.inertial))


def hidden_mass_comparison(seed: int = 0) -> dict:
    """The heavy-arm plant (true masses, bending links, joint springs) measured on the single-axis
    sweep plan; identified with the masses known (the model's nominal masses, which differ from the
    plant's) and hidden (a geometry-only model): nominal, geometric, combined-gravity with known
    masses and its lumped form, held-out errors against the plant's true (noise-free) SMR
    positions, and the geometric fit's extrapolation check."""
    from .extrapolation import extrapolation_check, geometric_refit
    from .measurement_csv import measurement_frame
    from .measurements import MeasurementSet
    from .methods import calibrate, error_stats, nominal_result
    from .parameters import preset_free_names
    from .robots import load_robot

    robot = load_robot(HEAVY_ARM)
    plant = HeavyArmPlant(robot, HeavyArmTruth(seed=seed))
    jm = robot.joint_map
    q_id, q_held = sweep_plan()
    targets = [Target(n, o) for n, o in NEST]
    noload = MeasurementSet(jm.to_model(q_id), plant.points(q_id), q_controller=q_id)
    held = MeasurementSet(jm.to_model(q_held), plant.points(q_held, noise=False), q_controller=q_held)
    base, _, _ = measurement_frame(geometric_model(robot, targets=targets), noload)
    known = geometric_model(robot, targets=targets, base=base)
    hidden = geometric_model(massless(robot), targets=targets, base=base)
    free = preset_free_names(hidden, "all", identify_base=True, identify_tool=True)
    results = {"nominal": nominal_result(hidden),
               "geometric": calibrate(hidden, noload, None, method="geometric", free_names=free),
               "combined-gravity, masses known": calibrate(known, noload, None, method="combined-gravity",
                                                           free_names=free),
               "combined-gravity, lumped (masses hidden)": calibrate(hidden, noload, None, method="combined-gravity",
                                                                     free_names=free)}
    geo = results["geometric"]
    extrapolation, lines = extrapolation_check(geo, noload, geometric_refit(geo))
    lo, hi = q_id.min(0), q_id.max(0)
    outside = np.any((q_held < lo - 1e-9) | (q_held > hi + 1e-9), axis=1)
    rows = {name: {"held_out": error_stats(r.errors(held)), "identification": error_stats(r.errors(noload)),
                   "parameters": r.parameter_count, "failed": r.failed} for name, r in results.items()}
    lumped = results["combined-gravity, lumped (masses hidden)"]
    return {"scenario": {"data": "plant: calibration/heavy_arm.py HeavyArmPlant (true masses +-15 % off the model's "
                                 "with shifted centres of mass, bending upper arm and forearm, a joint-3 tilt no DH "
                                 "parameter expresses, tracker noise); the identifier's model is heavy6's geometry "
                                 "with no link masses, or heavy6 with its nominal masses where 'masses known'",
                         "seed": seed, "robot": HEAVY_ARM, "smrs_per_pose": len(NEST),
                         "identification_poses": int(len(q_id)), "held_out_poses": int(len(q_held)),
                         "plan": f"single-axis sweeps from {list(SWEEP_HOME)} deg, {SWEEP_PLAN_PER_JOINT} per joint over "
                                 f"{[list(s) for s in SWEEP_PLAN_SPANS]} deg, every {SWEEP_PLAN_HOLDOUT_EVERY}th held out",
                         "held_out_outside_identified_ranges": [
                             f"H{k + 1} " + " ".join(f"J{j + 1} {np.rad2deg(q_held[k, j]):.0f} deg" for j in
                                                     np.flatnonzero((q_held[k] < lo - 1e-9) | (q_held[k] > hi + 1e-9)))
                             for k in np.flatnonzero(outside)],
                         "identified_J2_deg": [float(np.rad2deg(lo[1])), float(np.rad2deg(hi[1]))]},
            "methods": rows,
            "lumped_terms": [] if lumped.lumped is None else list(lumped.lumped.names),
            "lumped_note": next((n for n in lumped.notes if "lumped form" in n), None),
            "geometric_extrapolation": extrapolation, "geometric_warnings": lines}


def format_hidden_mass(report: dict) -> str:
    sc = report["scenario"]
    lines = [f"heavy arm plant ({sc['robot']}, seed {sc['seed']}), masses hidden from the identifier: "
             f"{sc['identification_poses']} sweep poses x {sc['smrs_per_pose']} SMRs identify, "
             f"{sc['held_out_poses']} held out ({', '.join(sc['held_out_outside_identified_ranges'])} outside the "
             f"identified range)",
             f"{'method':44}{'params':>7}{'held-out mean / max mm':>26}"]
    for name, row in report["methods"].items():
        h = row["held_out"]
        lines.append(f"{name:44}{row['parameters']:>7}{h['mean_mm']:>13.4f} / {h['max_mm']:.4f}")
    lines += [f"lumped terms: {', '.join(report['lumped_terms'])}"] + report["geometric_warnings"]
    return "\n".join(lines)
