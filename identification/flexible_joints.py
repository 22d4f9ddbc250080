"""Flexible-joint robots (Chen et al. 2021 eqs. 1-11): recordings, simulation and stepwise identification.

Model, per joint j with reduction N_j (tau_ext = 0):

    link   (eq. 1):  M(ql) qdd_l + C qd_l + g + M_lf qd_l + B_lf sgn(qd_l) = tau
    motor  (eq. 2):  B qdd_m + tau / N + M_mf qd_m + B_mf sgn(qd_m) = tau_m
    spring (eq. 3):  tau = K (qm / N - ql)
    sensor (eq. 6):  tau_s = tau + M0                       (joint torque sensor with a zero offset)

The simulation is inverse: a smooth link trajectory fixes tau through the rigid link dynamics
(robodyn's RNEA on the link model), the spring gives the motor angle qm = N (ql + tau / K), and the
motor equation gives tau_m. qm's derivatives come from differentiating the sampled qm (as a real
pipeline differentiates encoders), so eqs. 1-3 hold to the differencing error at 1 kHz.

Stepwise identification of the simulated arm, in Chen et al. 2021's order (section 2); recorded data go
through :func:`.stepwise_recorded.identify_recorded` (the recording format is :class:`.data.FlexibleLog`):

1. friction: constant-speed sweeps; the half difference at equal positions cancels gravity, inertia
   and the sensor offset, leaving M_lf v + B_lf (link) and, from tau_m, the motor friction plus the
   link friction seen through 1/N;
2. gravity: static poses; differences between poses cancel M0 ([Y_g, E] analysed for rank);
3. inertia: the excitation, with friction and the gravity columns subtracted and M0 removed by
   taking out each joint's mean;
4. offsets: M0 = the mean remaining torque;
5. motor (eq. 9) and stiffness (eq. 10) separately, never stacked (eqs. 13-16; the stacked
   condition number is reported to show why).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.model import RobotModel

from .base_params import base_parameters
from .data import FlexibleLog
from .friction import extract_friction
from .regressor import ColumnSpec
from .stepwise import column_groups, joint_major_regressor, least_squares, propose_order, rank_and_cond, subsystem_analysis


@dataclass(frozen=True)
class FlexibleJointArm:
    """Link model plus the drive-side parameters of eqs. 1-3 and 6 (all per joint)."""

    link: RobotModel  # rigid link dynamics; its rotor_inertia is ignored (the rotor is on the motor side)
    reduction: np.ndarray  # N
    stiffness: np.ndarray  # K, N.m/rad
    motor_inertia: np.ndarray  # B, kg.m^2 (motor side)
    motor_viscous: np.ndarray  # M_mf, N.m.s/rad (motor side)
    motor_coulomb: np.ndarray  # B_mf, N.m (motor side)
    link_viscous: np.ndarray  # M_lf
    link_coulomb: np.ndarray  # B_lf
    sensor_offset: np.ndarray  # M0

    def as_dict(self) -> dict:
        return {k: np.asarray(getattr(self, k)).tolist() for k in
                ("reduction", "stiffness", "motor_inertia", "motor_viscous", "motor_coulomb", "link_viscous",
                 "link_coulomb", "sensor_offset")}


def chen2021_arm(model: RobotModel) -> FlexibleJointArm:
    """The 2-DOF arm of Chen et al. 2021 (the built-in ``twolink``: Table 1 reduction 101, lengths, limits).
    The paper gives no drive parameters; these are ASSUMED, plausible for a 100-200 W servo with a
    harmonic drive: K 3000 / 2000 N.m/rad, rotor 5e-6 kg.m^2 (the twolink model's assumption), and
    small motor and link friction, sensor offsets of a few tenths of a N.m."""
    n = model.dof
    return FlexibleJointArm(replace(model, rotor_inertia=np.zeros(n)), np.asarray(model.gear_ratio, float),
                            np.array([3000.0, 2000.0]), np.full(n, 5.0e-6), np.array([2.0e-5, 1.5e-5]),
                            np.array([0.012, 0.008]), np.array([0.8, 0.5]), np.array([0.6, 0.4]),
                            np.array([0.35, -0.2]))


@dataclass
class FlexibleRecording:
    t: np.ndarray
    ql: np.ndarray
    qdl: np.ndarray
    qddl: np.ndarray
    qm: np.ndarray
    qdm: np.ndarray
    qddm: np.ndarray
    tau_sensor: np.ndarray
    tau_motor: np.ndarray


def simulate(arm: FlexibleJointArm, t, ql, qdl, qddl, *, sensor_noise: float = 0.0, motor_noise: float = 0.0,
             seed: int = 0) -> FlexibleRecording:
    """Signals of the flexible arm along a link trajectory (uniform t), see the module doc."""
    rng = np.random.default_rng(seed)
    tau = inverse_dynamics(arm.link, ql, qdl, qddl) + arm.link_viscous * qdl + arm.link_coulomb * np.sign(qdl)
    qm = arm.reduction * (ql + tau / arm.stiffness)  # eq. 3
    dt = float(t[1] - t[0])
    qdm = np.gradient(qm, dt, axis=0)
    qddm = np.gradient(qdm, dt, axis=0)
    tau_m = (arm.motor_inertia * qddm + tau / arm.reduction + arm.motor_viscous * qdm
             + arm.motor_coulomb * np.sign(qdm))  # eq. 2
    return FlexibleRecording(t, ql, qdl, qddl, qm, qdm, qddm,
                             tau + arm.sensor_offset + sensor_noise * rng.normal(size=tau.shape),
                             tau_m + motor_noise * rng.normal(size=tau.shape))


# --------------------------------------------------------------------------- experiments


def excitation_trajectory(model: RobotModel, seed: int = 0, period: float = 5.0, order: int = 12, periods: int = 2,
                          fill: float = 0.9):
    """Chen et al. 2021 eqs. 17-18 periodic polynomial (T = 5 s), scaled into Table 1's range, speed and
    acceleration limits. Order 12 rather than 8: with eq. 18's eight boundary conditions an
    order-8 polynomial leaves a single shape per joint, too little to separate inertia from gravity."""
    from robodyn.trajectory import PeriodicPolyTrajectory

    rng = np.random.default_rng(seed)
    n = model.dof
    mid = (model.q_min + model.q_max) / 2
    free = rng.normal(size=(n, order - 7))
    shape = PeriodicPolyTrajectory.from_free(period, np.zeros(n), free)
    t = np.linspace(0, period, 2001)
    q, qd, qdd, _ = shape.evaluate(t)
    half_range = (model.q_max - model.q_min) / 2
    scale = fill * np.min([half_range / np.abs(q).max(0), model.qd_max / np.abs(qd).max(0),
                           model.qdd_max / np.abs(qdd).max(0)], axis=0)
    return PeriodicPolyTrajectory.from_free(period, mid, free * scale[:, None], periods=periods)


def static_poses(model: RobotModel, count: int = 100, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(model.q_min, model.q_max, size=(count, model.dof))


SWEEP_SPEEDS = (0.05, 0.1, 0.2, 0.3, 0.45)


def friction_sweeps(arm: FlexibleJointArm, speeds=SWEEP_SPEEDS, rate_hz: float = 1000.0, **noise):
    """One forward/backward sweep per joint and speed, the other joints held mid-range."""
    from robodyn.trajectory import SweepTrajectory

    model = arm.link
    home = (model.q_min + model.q_max) / 2
    out = []
    for j in range(model.dof):
        for v in speeds:
            probe = SweepTrajectory.within_limits(home, j, 0.0, 1.0, v, model.qdd_max[j], model.qddd_max[j])
            ramp = v * probe.ramp / 2  # distance covered by one ramp, kept inside the joint range
            low, high = model.q_min[j] + ramp + 0.05, model.q_max[j] - ramp - 0.05
            sw = SweepTrajectory.within_limits(home, j, low, high, v, model.qdd_max[j], model.qddd_max[j])
            t, q, qd, qdd, _ = sw.sample(rate_hz)
            rec = simulate(arm, t, q, qd, qdd, seed=len(out), **noise)
            out.append((j, v, low, high, rec))
    return out


# --------------------------------------------------------------------------- identification


@dataclass
class FlexibleIdentification:
    link_friction: dict
    motor_friction_from_sweeps: dict
    gravity: dict
    inertia: dict
    sensor_offset: list
    motor: dict
    stiffness: list
    analysis: dict
    order: list
    truth: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("order", "analysis", "link_friction", "motor_friction_from_sweeps",
                                                 "gravity", "inertia", "sensor_offset", "motor", "stiffness",
                                                 "truth", "errors")}


def _per_joint_fit(columns, target):
    return least_squares(np.column_stack(columns), target)


def identify_flexible(arm: FlexibleJointArm, sweeps, poses_rec: FlexibleRecording, excitation: FlexibleRecording,
                      truth: dict | None = None) -> FlexibleIdentification:
    """Stepwise identification of a flexible-joint arm from the three experiments (module doc)."""
    model, n, Nred = arm.link, arm.link.dof, arm.reduction
    base = base_parameters(model, ColumnSpec())
    groups = column_groups(model, base)
    ex = excitation

    # rank / cond analysis of the link sub-system (eq. 8) on the excitation, with friction and offset columns
    Y_link = joint_major_regressor(model, base, ex.ql, ex.qdl, ex.qddl)
    N = ex.t.size
    extra = np.zeros((n * N, 3 * n))
    for j in range(n):
        rows = slice(j * N, (j + 1) * N)
        extra[rows, 3 * j] = ex.qdl[:, j]
        extra[rows, 3 * j + 1] = np.sign(ex.qdl[:, j])
        extra[rows, 3 * j + 2] = 1.0
    Y_full = np.hstack([Y_link, extra])
    b = base.count
    all_groups = dict(groups)
    all_groups["friction"] = [b + 3 * j + k for j in range(n) for k in (0, 1)]
    all_groups["offset"] = [b + 3 * j + 2 for j in range(n)]
    analysis = subsystem_analysis(Y_full, all_groups)
    Yg_static = joint_major_regressor(model, base, poses_rec.ql, 0 * poses_rec.ql, 0 * poses_rec.ql)[:, groups["gravity"]]
    E_static = np.kron(np.eye(n), np.ones((poses_rec.t.size, 1)))
    analysis["gravity_and_offset_static"] = rank_and_cond(np.hstack([Yg_static, E_static]))

    # 1. friction from sweeps: half differences at equal positions
    link_fr, motor_fr = {}, {}
    for j in range(n):
        pts = [(v, extract_friction(r.ql, r.qdl, r.tau_sensor, jj, v, lo, hi).torque,
                extract_friction(r.ql, r.qdl, r.tau_motor, jj, v, lo, hi).torque)
               for jj, v, lo, hi, r in sweeps if jj == j]
        v, fl, fm = (np.array(c) for c in zip(*pts))
        M_lf, B_lf = _per_joint_fit([v, np.ones_like(v)], fl)
        # motor half difference = motor friction at N v + link friction / N
        M_mf, B_mf = _per_joint_fit([Nred[j] * v, np.ones_like(v)], fm - (M_lf * v + B_lf) / Nred[j])
        link_fr[j] = (M_lf, B_lf)
        motor_fr[j] = (M_mf, B_mf)
    lv = np.array([link_fr[j][0] for j in range(n)])
    lc = np.array([link_fr[j][1] for j in range(n)])

    # 2. gravity from static poses, offset cancelled by removing each joint's mean over the poses
    P = poses_rec.t.size
    tau_static = poses_rec.tau_sensor
    Yg = Yg_static.reshape(n, P, -1)
    Yg_d = (Yg - Yg.mean(axis=1, keepdims=True)).reshape(n * P, -1)
    t_d = (tau_static - tau_static.mean(axis=0)).T.reshape(-1)
    p_g = least_squares(Yg_d, t_d)

    # 3. inertia on the excitation: subtract friction and the gravity columns, remove means (offset)
    residual = ex.tau_sensor - lv * ex.qdl - lc * np.sign(ex.qdl)
    residual = residual - (Y_link[:, groups["gravity"]] @ p_g).reshape(n, N).T
    Yi = Y_link[:, groups["inertia"]].reshape(n, N, -1)
    Yi_d = (Yi - Yi.mean(axis=1, keepdims=True)).reshape(n * N, -1)
    p_i = least_squares(Yi_d, (residual - residual.mean(axis=0)).T.reshape(-1))

    # 4. offsets
    M0 = (residual - (Y_link[:, groups["inertia"]] @ p_i).reshape(n, N).T).mean(axis=0)

    # 5. motor (eq. 9) and stiffness (eq. 10), each joint separately
    tau = ex.tau_sensor - M0
    motor, stiffness, stacked = {}, [], []
    for j in range(n):
        Ym = np.column_stack([ex.qddm[:, j], ex.qdm[:, j], np.sign(ex.qdm[:, j])])
        motor[j] = least_squares(Ym, ex.tau_motor[:, j] - tau[:, j] / Nred[j])
        deflection = ex.qm[:, j] / Nred[j] - ex.ql[:, j]
        stiffness.append(float(least_squares(deflection[:, None], tau[:, j])[0]))
        # eq. 14: [Y_m, N^-1 Y_k] [p_m, p_k] = tau_m, what Chen et al. 2021 warn against
        stacked.append(rank_and_cond(np.column_stack([Ym, deflection / Nred[j]])))
    analysis["motor"] = [rank_and_cond(np.column_stack([ex.qddm[:, j], ex.qdm[:, j], np.sign(ex.qdm[:, j])]))
                         for j in range(n)]
    analysis["stiffness"] = [rank_and_cond((ex.qm[:, j] / Nred[j] - ex.ql[:, j])[:, None]) for j in range(n)]
    analysis["motor_and_stiffness_stacked"] = stacked

    names = base.names
    result = FlexibleIdentification(
        link_friction={"viscous": lv.tolist(), "coulomb": lc.tolist()},
        motor_friction_from_sweeps={"viscous": [motor_fr[j][0] for j in range(n)],
                                    "coulomb": [motor_fr[j][1] for j in range(n)]},
        gravity={names[k]: float(v) for k, v in zip(groups["gravity"], p_g)},
        inertia={names[k]: float(v) for k, v in zip(groups["inertia"], p_i)},
        sensor_offset=M0.tolist(),
        motor={"inertia": [float(motor[j][0]) for j in range(n)], "viscous": [float(motor[j][1]) for j in range(n)],
               "coulomb": [float(motor[j][2]) for j in range(n)]},
        stiffness=stiffness, analysis=analysis, order=propose_order(analysis))
    if truth is not None:
        result.truth = truth
        result.errors = relative_errors(result, truth)
    return result


def true_values(arm: FlexibleJointArm) -> dict:
    """The simulated arm's parameters in the identification's terms (base parameters of the link)."""
    base = base_parameters(arm.link, ColumnSpec())
    from .regressor import standard_parameter_vector

    theta = base.projection @ standard_parameter_vector(arm.link, ColumnSpec())
    return {"base": dict(zip(base.names, theta.tolist())), **arm.as_dict()}


def relative_errors(res: FlexibleIdentification, truth: dict) -> dict:
    def rel(est, true):
        est, true = np.asarray(est, float), np.asarray(true, float)
        return (np.abs(est - true) / np.maximum(np.abs(true), 1e-12)).tolist()

    base_est = {**res.gravity, **res.inertia}
    return {"stiffness": rel(res.stiffness, truth["stiffness"]),
            "motor_inertia": rel(res.motor["inertia"], truth["motor_inertia"]),
            "motor_viscous": rel(res.motor["viscous"], truth["motor_viscous"]),
            "motor_coulomb": rel(res.motor["coulomb"], truth["motor_coulomb"]),
            "link_viscous": rel(res.link_friction["viscous"], truth["link_viscous"]),
            "link_coulomb": rel(res.link_friction["coulomb"], truth["link_coulomb"]),
            "sensor_offset_abs": (np.abs(np.asarray(res.sensor_offset) - truth["sensor_offset"])).tolist(),
            # absolute (kg.m, kg.m^2): some true base parameters are exactly zero
            "base_abs": {k: abs(v - truth["base"][k]) for k, v in base_est.items()}}


def demonstrate(model: RobotModel, *, seed: int = 0, sensor_noise: float = 0.02, motor_noise: float = 1e-4,
                rate_hz: float = 1000.0) -> FlexibleIdentification:
    """Chen et al. 2021's 2-DOF demonstration: simulate the three experiments and identify stepwise."""
    arm = chen2021_arm(model)
    noise = {"sensor_noise": sensor_noise, "motor_noise": motor_noise}
    sweeps = friction_sweeps(arm, rate_hz=rate_hz, **noise)
    poses = static_poses(model, seed=seed + 1)
    zeros = np.zeros_like(poses)
    static = simulate(arm, np.arange(poses.shape[0], dtype=float), poses, zeros, zeros, seed=seed + 2, **noise)
    traj = excitation_trajectory(model, seed)
    t, q, qd, qdd, _ = traj.sample(rate_hz)
    ex = simulate(arm, t, q, qd, qdd, seed=seed + 3, **noise)
    return identify_flexible(arm, sweeps, static, ex, true_values(arm))


# --------------------------------------------------------------------------- a plant unlike the identifier


@dataclass(frozen=True)
class FlexiblePlant:
    """A flexible-joint arm with what :func:`.stepwise_recorded.identify_recorded` does NOT assume, so that
    accuracy measured on its recordings is not an inverse crime:

    - a hardening spring, tau = k1 d + k3 d^3 (harmonic drives stiffen with load), against the
      identifier's linear K;
    - Stribeck friction (:func:`.friction.stribeck`, with its linear zone through zero) on the link
      and on the motor side, against Coulomb + viscous; on top, the simulator's unmodelled friction
      effects (simulation.friction.FrictionEffects): a level that ripples with position and, on the
      link, Coulomb friction that grows with the transmitted torque;
    - a joint torque sensor with noise and a zero offset that drifts (random walk), against a
      constant M0;
    - quantised encoders whose zeros differ (the motor encoder reads N (q + d + encoder_offset));
    - a motor current with noise and quantisation, the torque constant being the plant's.

    The rigid link dynamics are robodyn's RNEA (independent of the regressor) on ``link``'s
    inertial parameters, which a caller perturbs away from the nominal model."""

    link: RobotModel
    reduction: np.ndarray  # N
    stiffness: np.ndarray  # k1, N.m/rad
    hardening: np.ndarray  # k3, N.m/rad^3
    motor_inertia: np.ndarray  # B, kg.m^2 at the motor shaft
    motor_friction: dict  # Stribeck fc, fs, vs, fv, qd0 at the motor shaft (N.m, rad/s, N.m.s/rad)
    link_friction: dict  # the same, link side
    motor_effects: object  # simulation.friction.FrictionEffects in motor angles (cogging-like ripple)
    link_effects: object  # simulation.friction.FrictionEffects in link angles
    torque_constant: np.ndarray  # N.m/A at the motor shaft
    sensor_offset: np.ndarray  # M0 at t = 0, N.m
    sensor_noise: float = 0.03  # N.m
    sensor_drift: float = 0.003  # N.m / sqrt(s), random walk of the zero
    current_noise: float = 0.005  # A
    current_resolution: float = 0.001  # A
    link_resolution: float = 2 * np.pi / 2**20  # rad (link encoder)
    motor_resolution: float = 2 * np.pi / 2**16  # rad at the motor shaft
    encoder_offset: np.ndarray | None = None  # rad, link side: motor zero minus link zero

    def spring_torque(self, d: np.ndarray) -> np.ndarray:
        return self.stiffness * d + self.hardening * d**3

    def deflection(self, tau: np.ndarray) -> np.ndarray:
        """d with spring_torque(d) = tau (Newton; the cubic is monotone)."""
        d = tau / self.stiffness
        for _ in range(50):
            step = (self.spring_torque(d) - tau) / (self.stiffness + 3 * self.hardening * d**2)
            d = d - step
            if np.max(np.abs(step)) < 1e-15:
                break
        return d

    def tangent_stiffness(self, d: np.ndarray) -> np.ndarray:
        return self.stiffness + 3 * self.hardening * d**2

    def friction(self, side: str, qd: np.ndarray, q: np.ndarray, transmitted: np.ndarray) -> np.ndarray:
        """The plant's friction torque on the ``side`` ('link' or 'motor')."""
        from robodyn.robot.friction import stribeck

        p, effects = (self.link_friction, self.link_effects) if side == "link" else (self.motor_friction,
                                                                                     self.motor_effects)
        base = stribeck(qd, p["fc"], p["fs"], p["vs"], p["fv"], p["qd0"])
        return base if effects is None else base + effects.explicit(q, qd, base, 0.0, transmitted)


def chen2021_plant(model: RobotModel, seed: int = 0, perturbation: float = 0.15) -> FlexiblePlant:
    """The test plant on Chen et al. 2021's 2-DOF arm (built-in ``twolink``; Table 1 reduction 101).
    The paper gives no drive values; these are ASSUMED for a 100-200 W servo with a harmonic drive:
    k1 3000 / 2000 N.m/rad stiffening by k3 (tangent stiffness +30 % at 4 / 2 mrad), rotor 5e-6 kg.m^2,
    torque constant 0.11 / 0.09 N.m/A, Stribeck friction on both sides with the realistic
    simulator's effects (realistic.default_plant: 25 % ripple at 2 cycles per radian and 3 % load
    friction on the link; 20 % ripple at 2 cycles per motor radian on the motor), sensor zeros
    0.35 / -0.2 N.m drifting 0.003 N.m/sqrt(s). Link inertial parameters perturbed by
    ``perturbation`` (simulation.plant.perturb_inertial)."""
    from robodyn.simulation.friction import FrictionEffects
    from robodyn.simulation.plant import perturb_inertial

    n = model.dof
    if n != 2:
        raise ValueError(f"chen2021_plant: built for the 2-DOF arm of Chen et al. 2021, got {n} joints")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2021]))
    link = model.with_inertial(perturb_inertial(model, perturbation, rng))
    k1 = np.array([3000.0, 2000.0])
    d_ref = np.array([4e-3, 2e-3])
    return FlexiblePlant(
        link=replace(link, rotor_inertia=np.zeros(n)), reduction=np.asarray(model.gear_ratio, float), stiffness=k1,
        hardening=0.3 * k1 / (3 * d_ref**2), motor_inertia=np.full(n, 5.0e-6),
        motor_friction={"fc": np.array([0.010, 0.007]), "fs": np.array([0.016, 0.011]), "vs": np.array([3.0, 3.0]),
                        "fv": np.array([4e-5, 3e-5]), "qd0": 0.3},
        link_friction={"fc": np.array([0.6, 0.4]), "fs": np.array([0.9, 0.6]), "vs": np.array([0.03, 0.03]),
                       "fv": np.array([0.8, 0.5]), "qd0": 0.002},
        motor_effects=FrictionEffects.create(n, ripple=0.2, cycles=2.0, seed=seed + 1),
        link_effects=FrictionEffects.create(n, ripple=0.25, cycles=2.0, load=0.03, seed=seed),
        torque_constant=np.array([0.11, 0.09]), sensor_offset=np.array([0.35, -0.2]),
        encoder_offset=np.array([1.5e-3, -1.0e-3]))


def chen2021_experiment(model: RobotModel, seed: int = 0, speeds=(0.1, 0.18, 0.3, 0.45), poses: int = 6,
                        hold: float = 1.2, periods: int = 4, sweep_half_width: float = 0.2):
    """Chen et al. 2021's experiments as one trajectory (one recording): per joint, forward and
    backward constant-speed sweeps at ``speeds`` (friction), ``poses`` static poses held ``hold`` s
    (gravity and the sensor zero at rest), then the periodic-polynomial excitation (eqs. 17-18,
    :func:`excitation_trajectory`), all within the model's limits and joined by rest-to-rest moves."""
    from robodyn.trajectory import PointToPointTrajectory, SequenceTrajectory, SweepTrajectory

    mid = (model.q_min + model.q_max) / 2
    parts = []

    def move_to(q_next):
        here = parts[-1].evaluate(parts[-1].duration)[0][0] if parts else mid
        if np.max(np.abs(q_next - here)) > 1e-12:
            parts.append(PointToPointTrajectory.within_limits(here, q_next, model.qd_max, model.qdd_max,
                                                              model.qddd_max, 0.8))

    for j in range(model.dof):
        for v in speeds:
            sw = SweepTrajectory.within_limits(mid, j, mid[j] - sweep_half_width, mid[j] + sweep_half_width, v,
                                               model.qdd_max[j], model.qddd_max[j], 0.9, dwell=0.3, settle=0.2)
            start = mid.copy()
            start[j] = sw.start_position
            if start[j] < model.q_min[j] or start[j] > model.q_max[j]:
                raise ValueError(f"sweep of joint {j + 1} at {v} rad/s starts outside its range; narrow the window")
            move_to(start)
            parts.append(sw)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 11]))
    span = model.q_max - model.q_min
    for _ in range(poses):
        pose = model.q_min + span * rng.uniform(0.1, 0.9, model.dof)
        move_to(pose)
        parts.append(PointToPointTrajectory(pose, pose, hold))
    ex = excitation_trajectory(model, seed, periods=periods)
    move_to(ex.evaluate(0.0)[0][0])
    parts.append(ex)
    return SequenceTrajectory(parts)


@dataclass
class PlantRecording:
    log: FlexibleLog  # what the sensors reported
    true_tau: np.ndarray  # the spring torque at the recorded samples
    true_current: np.ndarray  # tau_m / k_t, noise-free
    sensor_zero: np.ndarray  # the drifting zero at the recorded samples

    @property
    def sensor_noise_floor(self) -> np.ndarray:
        """Per-joint RMS of the measured joint torque minus what a perfect constant-zero model could
        predict (the plant's torque plus the zero's mean): noise and drift together."""
        return np.sqrt(np.mean((self.log.tau - self.true_tau - self.sensor_zero.mean(axis=0)) ** 2, axis=0))

    @property
    def current_noise_floor(self) -> np.ndarray:
        return np.sqrt(np.mean((self.log.current - self.true_current) ** 2, axis=0))


def record_plant(plant: FlexiblePlant, trajectory, rate_hz: float = 1000.0, seed: int = 0, jitter: float = 0.2,
                 dropped_bursts: int = 3) -> PlantRecording:
    """Signals of ``plant`` following ``trajectory`` with its links, as the sensors record them at
    ``rate_hz``: every sample is taken up to ``jitter`` periods early or late (and stamped with its
    true time, as a robot controller's clock does), and a few bursts of dropped samples leave gaps
    in t. At each instant: link torque by RNEA plus the plant's friction, the spring's deflection by
    inverting the hardening law, the motor angle from both, its derivatives from the trajectory's
    plus the differenced deflection (on the uneven instants), the motor torque by eq. 2 with the
    plant's own motor friction."""
    if not 0 <= jitter < 0.5:
        raise ValueError(f"jitter: a fraction of the sampling period in [0, 0.5), got {jitter}")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 17]))
    link, Nred = plant.link, plant.reduction
    period = 1.0 / rate_hz
    t = np.arange(0.0, trajectory.duration - period, period) 
    t = t + rng.uniform(-jitter, jitter, t.size) * period
    t[0] = max(t[0], 0.0)
    ql, qdl, qddl, _ = trajectory.evaluate(t)
    rigid = inverse_dynamics(link, ql, qdl, qddl)
    tau = rigid + plant.friction("link", qdl, ql, rigid)
    d = plant.deflection(tau)
    # the link's derivatives are the trajectory's own; only the small deflection is differenced
    dd = np.gradient(d, t, axis=0, edge_order=2)
    qm = Nred * (ql + d)
    qdm = Nred * (qdl + dd)
    qddm = Nred * (qddl + np.gradient(dd, t, axis=0, edge_order=2))
    taum = plant.motor_inertia * qddm + tau / Nred + plant.friction("motor", qdm, qm, tau / Nred)
    N, n = ql.shape
    zero = plant.sensor_offset + np.cumsum(rng.normal(0.0, plant.sensor_drift / np.sqrt(rate_hz), (N, n)), axis=0)
    tau_s = tau + zero + rng.normal(0.0, plant.sensor_noise, (N, n))
    ideal_current = taum / plant.torque_constant
    current = np.round((ideal_current + rng.normal(0.0, plant.current_noise, (N, n))) / plant.current_resolution)
    current *= plant.current_resolution
    offset = np.zeros(n) if plant.encoder_offset is None else plant.encoder_offset
    q_read = np.round(ql / plant.link_resolution) * plant.link_resolution
    qm_read = np.round((qm + Nred * offset) / plant.motor_resolution) * plant.motor_resolution
    keep = np.ones(N, bool)
    for _ in range(dropped_bursts):
        start = int(rng.integers(N // 10, N - N // 10))
        keep[start:start + int(rng.integers(5, 25))] = False
    log = FlexibleLog(t[keep], q_read[keep], tau_s[keep], qm_read[keep], current=current[keep],
                      source=f"simulated {link.name} flexible-joint plant (seed {seed})")
    return PlantRecording(log, tau[keep], ideal_current[keep], zero[keep])
