"""Simulated robot driver: MuJoCo is the plant, the project's model only describes it.

The plant is built from the robot model through its URDF (``model_to_urdf``), so MuJoCo computes
every force itself; no dynamics pass through the project's regressor or RNEA. What it adds to the
rigid bodies:

- true inertial parameters: the model's, optionally perturbed per link with a seeded relative
  standard deviation (mass, centre of mass and inertia about the COM, kept physically valid);
- rotor inertia as MuJoCo joint armature;
- Ni et al. 2024 eq. 2 Stribeck friction (Table 2 values for the Franka) plus viscous friction, applied
  as a joint torque every physics step (see ``friction.py``); optionally what real joints add and
  identification does not model: a position-dependent ripple of the friction level and Coulomb
  friction growing with the transmitted torque (``friction_ripple``, ``friction_load``);
- optionally elastic joints (``joint_stiffness``): the encoder and the position loop sit on the
  motor side of a torsional spring, so the measured position is the link's plus its deflection
  tau / k, which a rigid model does not know;
- sensor effects: joint-torque noise (Gaussian), encoder quantization of q, velocity noise;
- a Franka-like internal joint-impedance controller in position mode,
  tau = K (q_d - q) + D (qd_d - qd) + ID_nominal(q, qd, qdd_d), and a torque mode in Franka's
  convention (the robot adds its own gravity compensation to the commanded torque).

The controller's feedforward uses a second MuJoCo model built from the *nominal* model (what a
robot's firmware knows), not the plant. (The project's RNEA would be allowed here but costs
~100 us per call from Python against ~3 us for ``mj_inverse``, too slow for a 1 kHz loop.)

Without an active mode the brakes are closed: the plant does not move, the state still streams.

Timing: ``read()`` advances the plant by one control period (several physics sub-steps, the
internal controller running at the physics rate) and, in real-time mode, returns at the cycle's
deadline. ``speed = 0`` runs as fast as possible on simulated time (tests); ``speed = 1`` is real
time. Everything random comes from one seed, so a run is reproducible bit for bit.

The command log (``diagnostics()["commands"]``) counts every write and the commanded path length:
a trajectory the daemon rejected must leave both at zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from robodyn.robot.loader import load_model
from robodyn.robot.model import LIMIT_FIELDS, RobotModel
from robodyn.robot.urdf import model_to_urdf
from robodyn.simulation.friction import FrictionEffects, StribeckFriction, linear_zone_slope
from robodyn.simulation.plant import FRANKA_MODELS, default_initial_q, perturb_inertial
from robodyn.simulation.plant_kernels import (add_sensed_torque, applied_forces, drive_and_friction, inverse_input,
                                              load_kernels)

from .base import (ControlMode, Driver, DriverDescription, JointCommand, JointState, LimitViolation,
                   LifecycleError, Signal)
from .pacing import Pacer

# Franka's default joint-impedance gains (libfranka examples' joint impedance controller)
FRANKA_STIFFNESS = (600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0)
FRANKA_DAMPING = (50.0, 50.0, 50.0, 50.0, 30.0, 25.0, 15.0)
# commands closer than this to a limit are accepted: round-off, not a real violation
COMMAND_LIMIT_TOL = 1e-6
MUJOCO_COMPILER = ('<mujoco><compiler discardvisual="true" balanceinertia="false" '
                   'fusestatic="false"/></mujoco>')


from .base import NUMBER, NUMBERS, DriverOptions, option  # noqa: E402  the options' schema


@dataclass
class SimConfig(DriverOptions):
    driver = "sim"

    robot: str = option("panda", "model: built-in name or a .toml / .urdf file", types=(str,))
    rate_hz: float = option(1000.0, "control rate, Hz: 1000 (Franka-like) or 500 (UR-like)", choices=(1000, 500),
                            types=NUMBER)
    # 4 sub-steps at 1 kHz keep the impedance and friction stable
    physics_dt: float = option(0.00025, "physics step, s; divides the control period", low=0.0, low_open=True,
                               types=NUMBER)
    speed: float = option(0.0, "0: as fast as possible; 1: real time; 2: twice real time ...", low=0.0,
                          types=NUMBER)
    seed: int = option(0, "seed of everything random (plant perturbation, sensor noise)", low=0, types=(int,))
    perturbation: float = option(0.0, "relative std of each link's mass, COM offset and inertia", low=0.0,
                                 high=0.5, types=NUMBER)
    rotor_inertia: list | None = option(None, "kg.m^2 per joint (armature); unset: the model's", low=0.0,
                                        types=NUMBERS)
    friction: dict | None = option(None, "{fc, fs, vs, fv, qd0}; unset: Ni et al. 2024 Table 2 for Franka",
                                   types=(dict,))
    viscous: float | list = option(0.0, "N.m.s/rad, added to the friction's fv", low=0.0, types=NUMBERS)
    torque_noise_std: float = option(0.05, "joint-torque sensor noise, N.m", low=0.0, types=NUMBER)
    velocity_noise_std: float = option(1e-4, "joint-velocity noise, rad/s", low=0.0, types=NUMBER)
    encoder_counts: int = option(2 ** 20, "encoder counts per revolution (quantization step of q)", low=1,
                                 types=(int,))
    stiffness: list | None = option(None, "position-mode impedance, N.m/rad; unset: Franka's", low=0.0,
                                    types=NUMBERS)
    damping: list | None = option(None, "position-mode impedance damping, N.m.s/rad", low=0.0, types=NUMBERS)
    initial_q: list | None = option(None, "start pose, rad; unset: Franka's ready pose, or mid-range",
                                    types=(list, tuple))
    # effects a rigid model with textbook friction lacks (0 / None: off)
    friction_ripple: float | list = option(0.0, "relative amplitude of a position-dependent friction ripple",
                                           low=0.0, types=NUMBERS)
    friction_ripple_cycles: float = option(2.0, "ripple cycles per radian", low=0.0, low_open=True, types=NUMBER)
    friction_load: float | list = option(0.0, "Coulomb friction per N.m of transmitted torque", low=0.0,
                                         types=NUMBERS)
    joint_stiffness: dict | None = option(None, "{joint index (0-based): N.m/rad}: elastic joints", low=0.0,
                                          low_open=True, types=(dict,))

    def check(self) -> None:
        steps = (1.0 / self.rate_hz) / self.physics_dt
        if abs(steps - round(steps)) > 1e-9 or round(steps) < 1:
            raise ValueError(f"driver.physics_dt: must divide the control period {1 / self.rate_hz} s, "
                             f"got {self.physics_dt}")


# --------------------------------------------------------------------------- plant construction


def mujoco_model(model: RobotModel, armature: np.ndarray, timestep: float):
    import mujoco

    urdf = model_to_urdf(model)
    urdf = urdf.replace("<link ", MUJOCO_COMPILER + "\n  <link ", 1)
    mj = mujoco.MjModel.from_xml_string(urdf)
    if mj.nv != model.dof:
        raise ValueError(f"simulator: MuJoCo built {mj.nv} joints for a {model.dof}-joint model")
    mj.opt.timestep = timestep
    # joint damping (friction's linear zone, the impedance's D) is integrated implicitly: stiff
    # dampers on light distal links would make an explicit step oscillate
    mj.opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    mj.dof_armature[:] = armature
    return mj


def default_gains(model: RobotModel) -> tuple[np.ndarray, np.ndarray]:
    if model.dof == 7:
        return np.array(FRANKA_STIFFNESS), np.array(FRANKA_DAMPING)
    # other arms: stiffness that reaches a tenth of the torque limit at ~0.015 rad of error,
    # damping in the same ratio as Franka's (D/K ~ 0.08 s)
    k = 7.0 * model.tau_max
    return k, 0.08 * k


def default_friction(model: RobotModel, cfg: SimConfig) -> StribeckFriction:
    viscous = np.broadcast_to(np.asarray(cfg.viscous, float), (model.dof,))
    if cfg.friction is not None:
        f = dict(cfg.friction)
        fv = np.asarray(f.pop("fv", 0.0), float) + viscous
        return StribeckFriction.create(model.dof, fv=fv, **f)
    if model.name in FRANKA_MODELS and model.dof == 7:
        return StribeckFriction.franka(fv=viscous)
    return StribeckFriction.create(model.dof, 0.0, 0.0, 1.0, viscous)


# --------------------------------------------------------------------------- driver


@dataclass
class CommandLog:
    """What was commanded: proof that a rejected trajectory never moved the robot."""

    starts: int = 0  # start(mode) calls (brakes released)
    writes: int = 0  # write() calls accepted
    refused: int = 0  # write() calls refused (LimitViolation)
    path_length: float = 0.0  # sum over writes of |q_cmd(k) - q_cmd(k-1)|_1, rad
    max_displacement: float = 0.0  # max |q - q_at_connect| over time, rad
    hard_brakes: int = 0  # stop() while moving faster than 0.05 rad/s
    last_mode: str | None = None
    history: list = field(default_factory=list)  # (event, robot_time) of start/stop, small

    def to_dict(self) -> dict:
        return {"starts": self.starts, "writes": self.writes, "refused": self.refused,
                "path_length": self.path_length, "max_displacement": self.max_displacement,
                "hard_brakes": self.hard_brakes, "last_mode": self.last_mode,
                "history": list(self.history[-20:])}


def _kernel_array(values, n: int) -> np.ndarray:
    return np.array(np.broadcast_to(np.asarray(values, float), (n,)), dtype=float, order="C")


class SimulatedRobot(Driver):
    kind = "sim"
    options_type = SimConfig

    def __init__(self, config: SimConfig | dict | None = None):
        super().__init__()
        self.cfg = config = self.parse_options(config)
        self.model = load_model(config.robot)
        n = self.model.dof
        self.period = 1.0 / config.rate_hz
        self.substeps = int(round(self.period / config.physics_dt))
        seeds = np.random.SeedSequence(config.seed).spawn(2)
        self._plant_rng = np.random.default_rng(seeds[0])
        self._noise_rng = np.random.default_rng(seeds[1])
        self.true_inertial = perturb_inertial(self.model, config.perturbation, self._plant_rng)
        rotor = self.model.rotor_inertia if config.rotor_inertia is None else config.rotor_inertia
        self.rotor_inertia = np.broadcast_to(np.asarray(rotor, float), (n,)).copy()
        self.friction = default_friction(self.model, config)
        self._zone_slope = linear_zone_slope(self.friction)
        self.friction_effects = FrictionEffects.create(n, config.friction_ripple, config.friction_ripple_cycles,
                                                       config.friction_load, config.seed)
        self.compliance = np.zeros(n)  # rad per N.m of each elastic joint
        for j, k in (config.joint_stiffness or {}).items():
            j = int(j)
            if not 0 <= j < n:
                raise ValueError(f"driver.joint_stiffness: joint index {j} outside 0..{n - 1}")
            self.compliance[j] = 1.0 / float(k)
        K, D = default_gains(self.model)
        self.stiffness = K if config.stiffness is None else np.asarray(config.stiffness, float)
        self.damping = D if config.damping is None else np.asarray(config.damping, float)
        q0 = default_initial_q(self.model) if config.initial_q is None else np.asarray(config.initial_q, float)
        if q0.shape != (n,) or np.any(q0 < self.model.q_min) or np.any(q0 > self.model.q_max):
            raise ValueError(f"driver.initial_q: expected {n} positions within the joint limits, got {q0.tolist()}")
        self.initial_q = q0
        self._q_step = 2 * math.pi / config.encoder_counts
        self._desc = self._build_description()
        self.state = JointState(self._desc)
        self._q_d = self.state.signal("q_d")
        self._qd_d = self.state.signal("qd_d")
        self._tau_d = self.state.signal("tau_d")
        self._cmd_q = np.zeros(n)
        self._cmd_qd = np.zeros(n)
        self._cmd_qdd = np.zeros(n)
        self._cmd_tau = np.zeros(n)
        self._ff = np.zeros(n)
        self._tau_act = np.zeros(n)  # what the torque sensor reads
        self._tau_cmd = np.zeros(n)  # what the drive was told (saturated)
        self._qvel_before = np.zeros(n)
        self._q_sampled = np.zeros(n)  # plant state at the sampling instant (mid-period)
        self._qd_sampled = np.zeros(n)
        self._held_tau = np.zeros(n)
        self._tau_last = np.zeros(n)  # drive torque of the previous physics step (the spring's load)
        self._extra_friction = np.zeros(n)  # friction effects beyond eq. 2 (stays zero without them)
        self._explicit_friction = np.zeros(n)
        self._friction_damping = np.zeros(n)
        self._applied = np.zeros(n)
        self._dof_damping = np.zeros(n)
        # the kernels' per-joint constants as contiguous, writable float64 arrays: the same array types
        # as the kernels were loaded for at connect (a broadcast or read-only array is another type,
        # and numba would compile for it at the first physics step, inside the control loop)
        self._stiffness = _kernel_array(self.stiffness, n)
        self._damping = _kernel_array(self.damping, n)
        self._tau_max = _kernel_array(self.model.tau_max, n)
        f = self.friction
        self._friction_law = tuple(_kernel_array(a, n) for a in (f.fc, f.fs, f.vs, f.fv, f.qd0, self._zone_slope))
        self._effects = self.friction_effects.active
        self._elastic = bool(np.any(self.compliance))
        self._tick = 0
        self._pacer = Pacer(self.period / config.speed) if config.speed > 0 else None
        # braked and as-fast-as-possible: nothing to simulate, so idle in real time instead of
        # flooding the stream and burning a core between test runs
        self._idle_pacer = self._pacer or Pacer(self.period)
        self.log = CommandLog()
        self._plant = self._plant_data = self._nominal = self._nominal_data = None

    # ----------------------------------------------------------------- description

    def _build_description(self) -> DriverDescription:
        n = self.model.dof
        sig = (
            Signal("q", n, "rad", "measured joint position (encoder-quantized)"),
            Signal("qd", n, "rad/s", "measured joint velocity"),
            Signal("tau", n, "N.m", "measured joint torque (actuator output, incl. friction, noisy)"),
            Signal("q_d", n, "rad", "commanded joint position being tracked"),
            Signal("qd_d", n, "rad/s", "commanded joint velocity"),
            Signal("tau_d", n, "N.m", "actuator torque the internal controller applied (noise-free)"),
        )
        limits = {f: getattr(self.model, f).tolist() for f in LIMIT_FIELDS}
        info = {"engine": "mujoco", "seed": self.cfg.seed, "perturbation": self.cfg.perturbation,
                "speed": self.cfg.speed, "physics_dt": self.cfg.physics_dt,
                "friction": {"model": "stribeck (Ni et al. 2024 eq. 2) + viscous", **self.friction.to_dict(),
                             "effects": self.friction_effects.to_dict()},
                "joint_stiffness": {str(j): 1.0 / c for j, c in enumerate(self.compliance) if c > 0},
                "rotor_inertia": self.rotor_inertia.tolist(),
                "stiffness": np.asarray(self.stiffness).tolist(), "damping": np.asarray(self.damping).tolist(),
                "torque_noise_std": self.cfg.torque_noise_std, "velocity_noise_std": self.cfg.velocity_noise_std,
                "encoder_counts": self.cfg.encoder_counts, "true_inertial": self.true_inertial.tolist(),
                "initial_q": self.initial_q.tolist(), "torque_mode": "gravity-compensated (Franka convention)"}
        try:
            import mujoco

            info["mujoco_version"] = mujoco.__version__
        except ImportError:  # pragma: no cover - reported at connect
            pass
        return DriverDescription(driver=self.kind, robot=self.model.name, joint_names=self.model.joint_names,
                                 limits=limits, rate_hz=float(self.cfg.rate_hz),
                                 control_modes=(ControlMode.POSITION.value, ControlMode.TORQUE.value),
                                 signals=sig, info=info)

    def describe(self) -> DriverDescription:
        return self._desc

    # ----------------------------------------------------------------- lifecycle hooks

    def connect_step(self) -> str:
        return "while building the simulated robot and compiling its numba kernels"

    def _do_connect(self) -> None:
        try:
            import mujoco
        except ImportError as exc:
            raise LifecycleError("the simulated robot needs MuJoCo: pip install 'robodyn[sim]'") from exc
        self._mujoco = mujoco
        plant_model = self.model.with_inertial(self.true_inertial)
        self._plant = mujoco_model(plant_model, self.rotor_inertia, self.cfg.physics_dt)
        self._plant_data = mujoco.MjData(self._plant)
        # the sensor's model: the plant without the integrator's damping (friction is added exactly)
        self._sensor = mujoco_model(plant_model, self.rotor_inertia, self.cfg.physics_dt)
        self._sensor.dof_damping[:] = 0.0
        self._sensor_data = mujoco.MjData(self._sensor)
        self._nominal = mujoco_model(self.model, self.model.rotor_inertia, self.cfg.physics_dt)
        self._nominal_data = mujoco.MjData(self._nominal)
        load_kernels(self.model.dof)
        self._plant_data.qpos[:] = self.initial_q
        self._brake()
        self._tick = 0
        self.state.robot_time = 0.0
        self._fill_state()
        self._idle_pacer.reset()
        if self._pacer is not None:
            self._pacer.reset()

    def _do_start(self, mode: ControlMode) -> None:
        d = self._plant_data
        # bumpless transfer: the impedance starts at the present position, at rest
        self._cmd_q[:] = d.qpos
        self._cmd_qd[:] = 0.0
        self._cmd_qdd[:] = 0.0
        self._cmd_tau[:] = 0.0
        self.log.starts += 1
        self.log.last_mode = mode.value
        self.log.history.append(("start:" + mode.value, self.state.robot_time))

    def _do_stop(self) -> None:
        if np.max(np.abs(self._plant_data.qvel)) > 0.05:
            self.log.hard_brakes += 1
        self.log.history.append(("stop", self.state.robot_time))
        self._brake()
        if self._pacer is None:
            self._idle_pacer.reset()  # idle pacing resumes from now, not from before the run

    def _do_close(self) -> None:
        self._plant = self._plant_data = self._nominal = self._nominal_data = None

    def _brake(self) -> None:
        """Close the brakes: zero velocity; the sensors then read the static load (gravity)."""
        d = self._plant_data
        d.qvel[:] = 0.0
        d.qacc[:] = 0.0
        self._mujoco.mj_forward(self._plant, d)
        self._held_tau[:] = d.qfrc_bias
        self._tau_act[:] = d.qfrc_bias
        self._tau_cmd[:] = d.qfrc_bias
        self._cmd_q[:] = d.qpos
        self._cmd_qd[:] = 0.0

    # ----------------------------------------------------------------- cycle

    def _refused_by_guard(self) -> None:
        self.log.refused += 1

    def _do_write(self, command: JointCommand) -> None:
        m = self.model
        if self._mode is ControlMode.POSITION:
            q = command.q
            if not (np.all(np.isfinite(q)) and np.all(np.isfinite(command.qd)) and np.all(np.isfinite(command.qdd))):
                self.log.refused += 1
                raise LimitViolation("position command: non-finite value")
            low = q < m.q_min - COMMAND_LIMIT_TOL
            high = q > m.q_max + COMMAND_LIMIT_TOL
            if low.any() or high.any():
                j = int(np.argmax(low | high))
                self.log.refused += 1
                raise LimitViolation(f"position command {q[j]:.6g} rad outside [{m.q_min[j]:.6g}, "
                                     f"{m.q_max[j]:.6g}] on {m.joint_names[j]}")
            self.log.path_length += float(np.sum(np.abs(q - self._cmd_q)))
            np.copyto(self._cmd_q, q)
            np.copyto(self._cmd_qd, command.qd)
            np.copyto(self._cmd_qdd, command.qdd)
        else:
            tau = command.tau
            if not np.all(np.isfinite(tau)):
                self.log.refused += 1
                raise LimitViolation("torque command: non-finite value")
            over = np.abs(tau) > m.tau_max + COMMAND_LIMIT_TOL
            if over.any():
                j = int(np.argmax(over))
                self.log.refused += 1
                raise LimitViolation(f"torque command {tau[j]:.6g} N.m beyond +-{m.tau_max[j]:.6g} "
                                     f"on {m.joint_names[j]}")
            np.copyto(self._cmd_tau, tau)
        self.log.writes += 1

    def _feedforward(self) -> None:
        """Nominal-model torque held over the cycle: ID(q, qd, qdd_d) in position mode (computed
        torque), gravity compensation plus the user's torque in torque mode."""
        d, nd = self._plant_data, self._nominal_data
        nd.qpos[:] = d.qpos
        if self._mode is ControlMode.POSITION:
            nd.qvel[:] = d.qvel
            nd.qacc[:] = self._cmd_qdd
        else:
            nd.qvel[:] = 0.0
            nd.qacc[:] = 0.0
        self._mujoco.mj_inverse(self._nominal, nd)
        np.copyto(self._ff, nd.qfrc_inverse)
        if self._mode is ControlMode.TORQUE:
            self._ff += self._cmd_tau

    def _advance_plant(self) -> None:
        """One control period of physics. The internal controller runs at the physics rate.

        The actuator torque is tau = K (q_d + qd_d s - q) + D (qd_d - qd) + ff, saturated at
        tau_max; that is what the torque sensor sees. For integration, its -D qd part and friction's
        linear zone go to MuJoCo as implicit joint damping, the rest is applied explicitly; both
        add up to the same force (unless the drive saturates, then all of it is explicit).
        """
        d = self._plant_data
        mj, plant = self._mujoco, self._plant
        dt = self.cfg.physics_dt
        law = self._friction_law
        self._feedforward()
        position = self._mode is ControlMode.POSITION
        tau = self._tau_cmd
        explicit, friction_damping = self._explicit_friction, self._friction_damping
        applied, dof_damping = self._applied, self._dof_damping
        sample_at = max(self.substeps // 2 - 1, 0)
        for s in range(self.substeps):
            qvel = d.qvel
            # the drive (first-order hold of the command inside the cycle: the target keeps moving),
            # saturated, and friction split into its explicit and implicit (damping) parts
            drive_and_friction(tau, explicit, friction_damping, position, self._cmd_q, self._cmd_qd, s * dt,
                               d.qpos, qvel, self._elastic, self.compliance, self._tau_last, self._stiffness,
                               self._damping, self._ff, self._tau_max, *law)
            if self._effects:
                self._extra_friction[:] = self.friction_effects.explicit(d.qpos, qvel, explicit,
                                                                         friction_damping * qvel, tau)
                explicit += self._extra_friction
            applied_forces(applied, dof_damping, position, tau, explicit, friction_damping, qvel, self._damping,
                           self._tau_max)
            plant.dof_damping[:] = dof_damping
            d.qfrc_applied[:] = applied
            np.copyto(self._qvel_before, d.qvel)
            np.copyto(self._tau_last, tau)
            mj.mj_step(plant, d)
            self._sense_torque(first=s == 0)
            if s == sample_at:
                # the state is sampled mid-period, where the period-averaged torque is centred
                np.copyto(self._q_sampled, d.qpos)
                np.copyto(self._qd_sampled, d.qvel)
        self._tau_act /= self.substeps

    def _sense_torque(self, first: bool) -> None:
        """The joint torque sensor: the torque the drive transmitted, M(q) qdd + c(q, qd) + g(q) +
        friction from the plant's own (true) model, averaged over the control period like a sensor
        with an anti-aliasing filter.

        The acceleration is the one the integrator really applied, (qd(t+h) - qd(t)) / h. MuJoCo's
        ``qacc`` is the explicit one, M^-1 f, but with implicit damping the velocity moves by
        (M + h D)^-1 f h; reporting the drive command or using ``qacc`` would show identification
        a spurious rotor inertia of about -/+ h D (0.006 to 0.018 kg.m^2 on joints 1-4).
        """
        d, sd = self._plant_data, self._sensor_data
        inverse_input(sd.qpos, sd.qvel, sd.qacc, d.qpos, d.qvel, self._qvel_before, self.cfg.physics_dt)
        self._mujoco.mj_inverse(self._sensor, sd)
        fc, fs, vs, fv, qd0, _ = self._friction_law
        add_sensed_torque(self._tau_act, first, sd.qfrc_inverse, d.qvel, self._extra_friction, fc, fs, vs, fv, qd0)

    def _fill_state(self) -> None:
        d = self._plant_data
        st = self.state
        rng = self._noise_rng
        if self._mode is None:  # braked: nothing moves, the sample is the plant's present state
            np.copyto(self._q_sampled, d.qpos)
            np.copyto(self._qd_sampled, d.qvel)
        if self._elastic:  # the encoder is on the motor side of the spring
            self._q_sampled += self.compliance * self._tau_act
        np.round(self._q_sampled / self._q_step, out=st.q)
        st.q *= self._q_step
        st.qd[:] = self._qd_sampled
        if self.cfg.velocity_noise_std > 0:
            st.qd += self.cfg.velocity_noise_std * rng.standard_normal(st.qd.shape[0])
        st.tau[:] = self._tau_act
        if self.cfg.torque_noise_std > 0:
            st.tau += self.cfg.torque_noise_std * rng.standard_normal(st.tau.shape[0])
        self._q_d[:] = self._cmd_q
        self._qd_d[:] = self._cmd_qd
        self._tau_d[:] = self._tau_cmd

    def _do_read(self) -> JointState:
        if self._mode is not None:
            self._advance_plant()
            disp = float(np.max(np.abs(self._plant_data.qpos - self.initial_q)))
            if disp > self.log.max_displacement:
                self.log.max_displacement = disp
        else:
            self._tau_act[:] = self._held_tau
        self._tick += 1
        self.state.robot_time = self._tick * self.period
        self._fill_state()
        pacer = self._pacer if self._mode is not None else self._idle_pacer
        if pacer is not None:
            pacer.wait()
        return self.state

    # ----------------------------------------------------------------- introspection

    def true_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Noise-free plant position and velocity (tests only)."""
        return self._plant_data.qpos.copy(), self._plant_data.qvel.copy()

    def diagnostics(self) -> dict:
        return {"commands": self.log.to_dict(), "ticks": self._tick,
                "overruns": self._pacer.overruns if self._pacer else self._idle_pacer.overruns}
