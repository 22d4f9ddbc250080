"""Realistic simulated logs: a plant that differs from the identifier's model, seen through sensor
models taken from real arms. Accuracy claims made on these logs are not an inverse crime.

The plant is the project's MuJoCo simulator (``robodyn.simulation.mujoco_plant``, the same
plant the simulated driver runs), configured with what the identifier does not assume:

- inertial parameters perturbed away from the nominal model (15 % per link by default);
- Stribeck friction (not the identifier's default Coulomb-viscous law) whose level ripples with
  position and whose Coulomb part grows with the transmitted torque;
- one elastic joint, whose encoder and position loop sit on the motor side of a torsional spring.

Two sensor models turn the plant's signals into a log as a real arm's controller would write it:

- ``franka``: 1 kHz joint torque sensors; sampling instants jittered by 19 % of the period and
  dropped packets, single ones and bursts up to 9 ms (as in a public 1 kHz Panda log); noisy
  measured velocity; torque sensor noise and slowly drifting offsets.
- ``ur``: 500 Hz motor currents through drive gains that differ from the nominal ones the user
  converts with (unknown drive gains), quantised and noisy, one sample late relative to the joint
  positions (time delay); a quiet motor-side velocity.

Every log carries its noise floor: the RMS difference between the measured torque and what a
perfect model could predict from the same samples (the plant's own torque, in the measurement's
units and timing). Held-out errors are judged against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .signals import SampledData

FRANKA_SENSOR = {"rate_hz": 1000.0, "jitter": 0.19, "drop_rate": 0.01, "bursts_per_minute": 10.0,
                 "burst_max_s": 0.009, "qd_noise": 0.02, "tau_noise": 0.05, "tau_offset_drift": 0.02,
                 "position_resolution": 2 * np.pi / 2**20}
UR_SENSOR = {"rate_hz": 500.0, "gain_error": 0.07, "current_noise": 0.01, "current_resolution": 0.005,
             "delay_samples": 1, "qd_noise": 1e-4, "position_resolution": 2 * np.pi / 2**24}
SENSORS = {"franka": FRANKA_SENSOR, "ur": UR_SENSOR}
ROBOT_FOR_SENSOR = {"franka": "panda", "ur": "ur5e"}


def default_plant(robot: str) -> dict:
    """Plant options (robodyn.simulation.mujoco_plant.PlantOptions) that the identifier's model lacks."""
    from robodyn.robot.loader import load_model

    n = load_model(robot).dof
    stribeck = {"fc": [0.4] * n, "fs": [0.6] * n, "vs": [0.05] * n, "fv": [0.2] * n}
    return {"perturbation": 0.15, "friction": stribeck, "friction_ripple": 0.25, "friction_ripple_cycles": 2.0,
            "friction_load": 0.03, "joint_stiffness": {1: 20000.0}}


@dataclass
class RealisticLog:
    data: SampledData  # what the identifier gets: the sensor's view
    ideal_tau: np.ndarray  # what a perfect model predicts at those samples, in the measurement's units
    sensor: str
    sensor_options: dict
    plant_options: dict
    notes: dict = field(default_factory=dict)

    @property
    def noise_floor(self) -> np.ndarray:
        """Per-joint RMS of measured - ideal torque: the best any model can do on this log."""
        return np.sqrt(np.mean(np.square(self.data.tau - self.ideal_tau), axis=0))


def excitation(robot: str, seed: int, duration: float = 20.0, harmonics: int = 4, q0=None):
    """A random Fourier-plus-quintic excitation that starts at rest at ``q0`` (default the
    simulator's start pose) and passes the project's one limit validator at 1 kHz."""
    from robodyn.simulation.plant import default_initial_q
    from robodyn.limits import check_trajectory
    from robodyn.robot.loader import load_model
    from robodyn.trajectory import FourierPolyTrajectory

    model = load_model(robot)
    q0 = default_initial_q(model) if q0 is None else np.asarray(q0, float)
    span = np.minimum(model.q_max - q0, q0 - model.q_min)
    rng = np.random.default_rng(seed)
    for shrink in (0.35, 0.25, 0.18, 0.12, 0.08):
        for _ in range(8):
            amp = shrink * np.minimum(span, 1.2)[:, None]
            a = rng.normal(0, 1, (model.dof, harmonics)) * amp
            b = rng.normal(0, 1, (model.dof, harmonics)) * amp
            traj = FourierPolyTrajectory(2 * np.pi / duration * 2, q0, a, b, periods=2)
            if check_trajectory(model, traj, rate_hz=1000).ok:
                return traj
    raise ValueError(f"excitation: no random excitation within {robot}'s limits for seed {seed}")


def run_plant(robot: str, trajectory, rate_hz: float, seed: int, plant: dict | None = None) -> dict:
    """Drive the simulated plant along ``trajectory`` in position mode; the plant's own signals,
    noise-free (the sensor models add noise): t, q (what the joint encoder sees), qd, tau."""
    from robodyn.simulation.mujoco_plant import POSITION, MujocoPlant, PlantOptions

    plant = default_plant(robot) if plant is None else plant
    q_start = trajectory.evaluate(0.0)[0][0]
    sim = MujocoPlant(PlantOptions(**{"robot": robot, "rate_hz": rate_hz, "seed": seed, "torque_noise_std": 0.0,
                                      "velocity_noise_std": 0.0, "encoder_counts": 2**30, "initial_q": list(q_start),
                                      **plant}))
    sim.build()
    sim.release(POSITION)
    t = np.arange(0.0, trajectory.duration, 1.0 / rate_hz)
    q_ref, qd_ref, qdd_ref = trajectory.evaluate(t)[:3]
    n = q_ref.shape[1]
    out = {k: np.empty((t.size, n)) for k in ("q", "qd", "tau")}
    # the start state, read and dropped, as a driver's first read after start (with sensor noise
    # in ``plant``, it takes its draws from the noise stream)
    sim.step()
    sim.sense(np.empty(n), np.empty(n), np.empty(n))
    for k in range(t.size):
        sim.command_position(q_ref[k], qd_ref[k], qdd_ref[k])
        sim.step()
        sim.sense(out["q"][k], out["qd"][k], out["tau"][k])
    sim.close()
    out["t"] = t
    return out


def franka_like(signals: dict, seed: int, options: dict | None = None) -> tuple[SampledData, np.ndarray, dict]:
    """Sample the plant's 1 kHz signals as a torque-sensing arm's log: jittered sampling instants,
    dropped packets, noisy velocity, torque noise and drifting offsets."""
    o = {**FRANKA_SENSOR, **(options or {})}
    rng = np.random.default_rng(np.random.SeedSequence([seed, 101]))
    from scipy.interpolate import CubicSpline

    t0, dt = signals["t"], 1.0 / o["rate_hz"]
    instants = t0 + np.clip(rng.normal(0.0, o["jitter"] * dt, t0.size), -0.45 * dt, 0.45 * dt)
    instants = instants[1:-1]
    keep = rng.random(instants.size) >= o["drop_rate"]
    duration = float(t0[-1] - t0[0])
    for _ in range(rng.poisson(o["bursts_per_minute"] * duration / 60.0)):
        start = rng.uniform(t0[0], t0[-1])
        keep &= ~((instants >= start) & (instants < start + rng.uniform(0.003, o["burst_max_s"])))
    t = instants[keep]
    q = CubicSpline(t0, signals["q"], axis=0)(t)
    qd = CubicSpline(t0, signals["qd"], axis=0)(t)
    ideal = np.stack([np.interp(t, t0, signals["tau"][:, j]) for j in range(q.shape[1])], axis=1)
    n = q.shape[1]
    drift = np.cumsum(rng.normal(0.0, o["tau_offset_drift"] * np.sqrt(dt), (t.size, n)), axis=0)
    tau = ideal + rng.normal(0.0, o["tau_noise"], ideal.shape) + drift + rng.normal(0.0, 0.1, n)
    q = np.round(q / o["position_resolution"]) * o["position_resolution"]
    qd = qd + rng.normal(0.0, o["qd_noise"], qd.shape)
    notes = {"samples": int(t.size), "of": int(instants.size), "gaps_over_3_periods": int(np.sum(np.diff(t) > 3 * dt))}
    return SampledData(t, q, tau, qd), ideal, notes


def ur_like(signals: dict, seed: int, robot: str, options: dict | None = None,
            gain_seed: int = 0) -> tuple[SampledData, np.ndarray, dict]:
    """The plant's 500 Hz signals as a UR controller reports them: motor currents through drive
    gains the user does not know (converted back with the nominal ones), quantised, noisy and one
    sample late. The true gains belong to the arm (``gain_seed``), the noise to the log (``seed``)."""
    from robodyn.simulation.ur_gains import NOMINAL_DRIVE_GAINS

    o = {**UR_SENSOR, **(options or {})}
    rng = np.random.default_rng(np.random.SeedSequence([seed, 202]))
    nominal = np.asarray(NOMINAL_DRIVE_GAINS.get(robot, (10.0,) * signals["q"].shape[1]), float)
    gain_rng = np.random.default_rng(np.random.SeedSequence([gain_seed, 203]))
    true_gains = nominal * (1.0 + o["gain_error"] * gain_rng.standard_normal(nominal.size))
    d = int(o["delay_samples"])
    current = signals["tau"] / true_gains
    current = np.vstack([np.repeat(current[:1], d, axis=0), current[: current.shape[0] - d]]) if d else current
    ideal = current * nominal  # what a perfect model in the user's (nominal-gain) units would predict
    measured = current + rng.normal(0.0, o["current_noise"], current.shape)
    measured = np.round(measured / o["current_resolution"]) * o["current_resolution"]
    q = np.round(signals["q"] / o["position_resolution"]) * o["position_resolution"]
    qd = signals["qd"] + rng.normal(0.0, o["qd_noise"], signals["qd"].shape)
    notes = {"true_drive_gains": true_gains.tolist(), "nominal_drive_gains": nominal.tolist(), "delay_samples": d}
    return SampledData(signals["t"], q, measured * nominal, qd), ideal, notes


def realistic_log(sensor: str, trajectory_seed: int, *, plant_seed: int = 7, sensor_seed: int | None = None,
                  duration: float = 20.0, robot: str | None = None, plant: dict | None = None,
                  sensor_options: dict | None = None) -> RealisticLog:
    """One log of one excitation: the same ``plant_seed`` gives the same arm (its parameters and
    drive gains), ``trajectory_seed`` another excitation, ``sensor_seed`` other sensor noise."""
    if sensor not in SENSORS:
        raise ValueError(f"sensor: expected one of {sorted(SENSORS)}, got {sensor!r}")
    robot = robot or ROBOT_FOR_SENSOR[sensor]
    plant = default_plant(robot) if plant is None else plant
    traj = excitation(robot, trajectory_seed, duration)
    signals = run_plant(robot, traj, SENSORS[sensor]["rate_hz"], plant_seed, plant)
    seed = trajectory_seed if sensor_seed is None else sensor_seed
    if sensor == "franka":
        data, ideal, notes = franka_like(signals, seed, sensor_options)
    else:
        data, ideal, notes = ur_like(signals, seed, robot, sensor_options, gain_seed=plant_seed)
    data.trajectory = traj.to_dict(robot=robot)
    return RealisticLog(data, ideal, sensor, {**SENSORS[sensor], **(sensor_options or {})}, plant, notes)
