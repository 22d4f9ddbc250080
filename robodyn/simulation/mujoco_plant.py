"""The simulated arm: MuJoCo is the plant, the project's model only describes it.

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

Braked (no mode released) the plant does not move; its sensors still read the static load.
:meth:`MujocoPlant.step` advances the plant by one control period (several physics sub-steps, the
internal controller running at the physics rate). Everything random comes from one seed, so a run
is reproducible bit for bit.

This is the plant only: no lifecycle, no command limits, no pacing. The simulated driver
(robodyn.drivers.sim) runs it behind the driver interface; identification's realistic logs
(robodyn.identification.realistic_logs) drive it directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robodyn.robot.loader import load_model
from robodyn.robot.model import RobotModel
from robodyn.robot.urdf import model_to_urdf

from .friction import FrictionEffects, StribeckFriction, linear_zone_slope
from .plant import FRANKA_MODELS, default_initial_q, perturb_inertial
from .plant_kernels import add_sensed_torque, applied_forces, drive_and_friction, inverse_input

# Franka's default joint-impedance gains (libfranka examples' joint impedance controller)
FRANKA_STIFFNESS = (600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0)
FRANKA_DAMPING = (50.0, 50.0, 50.0, 50.0, 30.0, 25.0, 15.0)
MUJOCO_COMPILER = ('<mujoco><compiler discardvisual="true" balanceinertia="false" '
                   'fusestatic="false"/></mujoco>')
POSITION, TORQUE = "position", "torque"  # the drive's modes (the driver's ControlMode values)


class PlantOptionError(ValueError):
    """An option of the plant out of range; the message starts with the option's name."""


@dataclass
class PlantOptions:
    """What the simulated arm is. The simulated driver's options (drivers.sim.SimConfig) carry
    these same fields under the same names, with their help, types and ranges."""

    robot: str = "panda"  # built-in name or a .toml / .urdf file
    rate_hz: float = 1000.0  # control rate: one step() is one period
    physics_dt: float = 0.00025  # s; divides the control period (4 sub-steps at 1 kHz keep the impedance stable)
    seed: int = 0  # of everything random: the inertial perturbation and the sensor noise
    perturbation: float = 0.0  # relative std of each link's mass, COM offset and inertia
    rotor_inertia: list | None = None  # kg.m^2 per joint; None: the model's
    friction: dict | None = None  # {fc, fs, vs, fv, qd0}; None: Ni et al. 2024 Table 2 for a Franka
    viscous: float | list = 0.0  # N.m.s/rad, added to the friction's fv
    torque_noise_std: float = 0.05  # N.m
    velocity_noise_std: float = 1e-4  # rad/s
    encoder_counts: int = 2 ** 20  # per revolution
    stiffness: list | None = None  # position-mode impedance, N.m/rad; None: default_gains
    damping: list | None = None  # N.m.s/rad
    initial_q: list | None = None  # rad; None: default_initial_q
    friction_ripple: float | list = 0.0  # relative amplitude of a position-dependent friction ripple
    friction_ripple_cycles: float = 2.0  # per radian
    friction_load: float | list = 0.0  # Coulomb friction per N.m of transmitted torque
    joint_stiffness: dict | None = None  # {joint index (0-based): N.m/rad}: elastic joints

    def check(self) -> None:
        steps = (1.0 / self.rate_hz) / self.physics_dt
        if abs(steps - round(steps)) > 1e-9 or round(steps) < 1:
            raise PlantOptionError(f"physics_dt: must divide the control period {1 / self.rate_hz} s, "
                                   f"got {self.physics_dt}")


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


def default_friction(model: RobotModel, options: PlantOptions) -> StribeckFriction:
    viscous = np.broadcast_to(np.asarray(options.viscous, float), (model.dof,))
    if options.friction is not None:
        f = dict(options.friction)
        fv = np.asarray(f.pop("fv", 0.0), float) + viscous
        return StribeckFriction.create(model.dof, fv=fv, **f)
    if model.name in FRANKA_MODELS and model.dof == 7:
        return StribeckFriction.franka(fv=viscous)
    return StribeckFriction.create(model.dof, 0.0, 0.0, 1.0, viscous)


def _kernel_array(values, n: int) -> np.ndarray:
    return np.array(np.broadcast_to(np.asarray(values, float), (n,)), dtype=float, order="C")


class MujocoPlant:
    """The arm, its drive and its sensors. Construct (options checked, parameters drawn), then
    :meth:`build` (the MuJoCo models; braked at ``initial_q``), :meth:`release` a mode, and per
    control period command it (:meth:`command_position` / :meth:`command_torque`), :meth:`step`
    and :meth:`sense`. The numba kernels compile at their first call unless
    ``plant_kernels.load_kernels`` ran before (a real-time caller's business)."""

    def __init__(self, options: PlantOptions):
        options.check()
        self.options = options
        self.model = load_model(options.robot)
        n = self.model.dof
        self.period = 1.0 / options.rate_hz
        self.substeps = int(round(self.period / options.physics_dt))
        seeds = np.random.SeedSequence(options.seed).spawn(2)
        self._plant_rng = np.random.default_rng(seeds[0])
        self._noise_rng = np.random.default_rng(seeds[1])
        # the true parameters, read at build(): a caller may change them before (a payload)
        self.true_inertial = perturb_inertial(self.model, options.perturbation, self._plant_rng)
        rotor = self.model.rotor_inertia if options.rotor_inertia is None else options.rotor_inertia
        self.rotor_inertia = np.broadcast_to(np.asarray(rotor, float), (n,)).copy()
        self.friction = default_friction(self.model, options)
        self._zone_slope = linear_zone_slope(self.friction)
        self.friction_effects = FrictionEffects.create(n, options.friction_ripple, options.friction_ripple_cycles,
                                                       options.friction_load, options.seed)
        self.compliance = np.zeros(n)  # rad per N.m of each elastic joint
        for j, k in (options.joint_stiffness or {}).items():
            j = int(j)
            if not 0 <= j < n:
                raise PlantOptionError(f"joint_stiffness: joint index {j} outside 0..{n - 1}")
            self.compliance[j] = 1.0 / float(k)
        K, D = default_gains(self.model)
        self.stiffness = K if options.stiffness is None else np.asarray(options.stiffness, float)
        self.damping = D if options.damping is None else np.asarray(options.damping, float)
        q0 = default_initial_q(self.model) if options.initial_q is None else np.asarray(options.initial_q, float)
        if q0.shape != (n,) or np.any(q0 < self.model.q_min) or np.any(q0 > self.model.q_max):
            raise PlantOptionError(f"initial_q: expected {n} positions within the joint limits, got {q0.tolist()}")
        self.initial_q = q0
        self._q_step = 2 * math.pi / options.encoder_counts
        self.mode: str | None = None  # None: braked; POSITION or TORQUE: the drive runs
        # the drive's targets: position mode tracks q, qd with qdd as feedforward; torque mode adds tau
        self.cmd_q = np.zeros(n)
        self.cmd_qd = np.zeros(n)
        self.cmd_qdd = np.zeros(n)
        self.cmd_tau = np.zeros(n)
        self._ff = np.zeros(n)
        self.tau_act = np.zeros(n)  # what the torque sensor reads (noise-free)
        self.tau_cmd = np.zeros(n)  # what the drive was told (saturated)
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
        # as plant_kernels.load_kernels compiles for (a broadcast or read-only array is another type,
        # and numba would compile for it at the first physics step, inside a real-time loop)
        self._stiffness = _kernel_array(self.stiffness, n)
        self._damping = _kernel_array(self.damping, n)
        self._tau_max = _kernel_array(self.model.tau_max, n)
        f = self.friction
        self._friction_law = tuple(_kernel_array(a, n) for a in (f.fc, f.fs, f.vs, f.fv, f.qd0, self._zone_slope))
        self._effects = self.friction_effects.active
        self._elastic = bool(np.any(self.compliance))
        self.mujoco = self.mj = self.data = self.nominal = self.nominal_data = self.sensor = self.sensor_data = None

    def describe(self) -> dict:
        """The plant's parameters, for a description's ``info``."""
        o = self.options
        info = {"engine": "mujoco", "seed": o.seed, "perturbation": o.perturbation, "physics_dt": o.physics_dt,
                "friction": {"model": "stribeck (Ni et al. 2024 eq. 2) + viscous", **self.friction.to_dict(),
                             "effects": self.friction_effects.to_dict()},
                "joint_stiffness": {str(j): 1.0 / c for j, c in enumerate(self.compliance) if c > 0},
                "rotor_inertia": self.rotor_inertia.tolist(),
                "stiffness": np.asarray(self.stiffness).tolist(), "damping": np.asarray(self.damping).tolist(),
                "torque_noise_std": o.torque_noise_std, "velocity_noise_std": o.velocity_noise_std,
                "encoder_counts": o.encoder_counts, "true_inertial": self.true_inertial.tolist(),
                "initial_q": self.initial_q.tolist(), "torque_mode": "gravity-compensated (Franka convention)"}
        try:
            import mujoco

            info["mujoco_version"] = mujoco.__version__
        except ImportError:  # pragma: no cover - reported by build()
            pass
        return info

    # ----------------------------------------------------------------- construction and brakes

    def build(self) -> None:
        """The MuJoCo models of the plant (true parameters), its torque sensor and the controller's
        nominal model; the plant braked at ``initial_q``. Raises ImportError without MuJoCo."""
        import mujoco

        self.mujoco = mujoco
        dt = self.options.physics_dt
        plant_model = self.model.with_inertial(self.true_inertial)
        self.mj = mujoco_model(plant_model, self.rotor_inertia, dt)
        self.data = mujoco.MjData(self.mj)
        # the sensor's model: the plant without the integrator's damping (friction is added exactly)
        self.sensor = mujoco_model(plant_model, self.rotor_inertia, dt)
        self.sensor.dof_damping[:] = 0.0
        self.sensor_data = mujoco.MjData(self.sensor)
        self.nominal = mujoco_model(self.model, self.model.rotor_inertia, dt)
        self.nominal_data = mujoco.MjData(self.nominal)
        self.data.qpos[:] = self.initial_q
        self.brake()

    def release(self, mode: str) -> None:
        """Open the brakes and run the drive in ``mode`` (POSITION or TORQUE). Bumpless transfer:
        the impedance starts at the present position, at rest."""
        if mode not in (POSITION, TORQUE):
            raise ValueError(f"plant mode: expected {POSITION!r} or {TORQUE!r}, got {mode!r}")
        self.cmd_q[:] = self.data.qpos
        self.cmd_qd[:] = 0.0
        self.cmd_qdd[:] = 0.0
        self.cmd_tau[:] = 0.0
        self.mode = mode

    def brake(self) -> None:
        """Close the brakes: zero velocity; the sensors then read the static load (gravity)."""
        self.mode = None
        d = self.data
        d.qvel[:] = 0.0
        d.qacc[:] = 0.0
        self.mujoco.mj_forward(self.mj, d)
        self._held_tau[:] = d.qfrc_bias
        self.tau_act[:] = d.qfrc_bias
        self.tau_cmd[:] = d.qfrc_bias
        self.cmd_q[:] = d.qpos
        self.cmd_qd[:] = 0.0

    def close(self) -> None:
        self.mj = self.data = self.nominal = self.nominal_data = self.sensor = self.sensor_data = None

    # ----------------------------------------------------------------- commands

    def command_position(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> None:
        """The position loop's target for the coming periods (qdd: the feedforward's)."""
        np.copyto(self.cmd_q, q)
        np.copyto(self.cmd_qd, qd)
        np.copyto(self.cmd_qdd, qdd)

    def command_torque(self, tau: np.ndarray) -> None:
        """Torque on top of the robot's own gravity compensation (Franka's convention)."""
        np.copyto(self.cmd_tau, tau)

    # ----------------------------------------------------------------- one control period

    def step(self) -> None:
        """One control period: physics when released, the held static load when braked."""
        if self.mode is None:
            self.tau_act[:] = self._held_tau
        else:
            self._advance()

    def _feedforward(self) -> None:
        """Nominal-model torque held over the cycle: ID(q, qd, qdd_d) in position mode (computed
        torque), gravity compensation plus the user's torque in torque mode."""
        d, nd = self.data, self.nominal_data
        nd.qpos[:] = d.qpos
        if self.mode == POSITION:
            nd.qvel[:] = d.qvel
            nd.qacc[:] = self.cmd_qdd
        else:
            nd.qvel[:] = 0.0
            nd.qacc[:] = 0.0
        self.mujoco.mj_inverse(self.nominal, nd)
        np.copyto(self._ff, nd.qfrc_inverse)
        if self.mode == TORQUE:
            self._ff += self.cmd_tau

    def _advance(self) -> None:
        """One control period of physics. The internal controller runs at the physics rate.

        The actuator torque is tau = K (q_d + qd_d s - q) + D (qd_d - qd) + ff, saturated at
        tau_max; that is what the torque sensor sees. For integration, its -D qd part and friction's
        linear zone go to MuJoCo as implicit joint damping, the rest is applied explicitly; both
        add up to the same force (unless the drive saturates, then all of it is explicit).
        """
        d = self.data
        mj, plant = self.mujoco, self.mj
        dt = self.options.physics_dt
        law = self._friction_law
        self._feedforward()
        position = self.mode == POSITION
        tau = self.tau_cmd
        explicit, friction_damping = self._explicit_friction, self._friction_damping
        applied, dof_damping = self._applied, self._dof_damping
        sample_at = max(self.substeps // 2 - 1, 0)
        for s in range(self.substeps):
            qvel = d.qvel
            # the drive (first-order hold of the command inside the cycle: the target keeps moving),
            # saturated, and friction split into its explicit and implicit (damping) parts
            drive_and_friction(tau, explicit, friction_damping, position, self.cmd_q, self.cmd_qd, s * dt,
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
        self.tau_act /= self.substeps

    def _sense_torque(self, first: bool) -> None:
        """The joint torque sensor: the torque the drive transmitted, M(q) qdd + c(q, qd) + g(q) +
        friction from the plant's own (true) model, averaged over the control period like a sensor
        with an anti-aliasing filter.

        The acceleration is the one the integrator really applied, (qd(t+h) - qd(t)) / h. MuJoCo's
        ``qacc`` is the explicit one, M^-1 f, but with implicit damping the velocity moves by
        (M + h D)^-1 f h; reporting the drive command or using ``qacc`` would show identification
        a spurious rotor inertia of about -/+ h D (0.006 to 0.018 kg.m^2 on joints 1-4).
        """
        d, sd = self.data, self.sensor_data
        inverse_input(sd.qpos, sd.qvel, sd.qacc, d.qpos, d.qvel, self._qvel_before, self.options.physics_dt)
        self.mujoco.mj_inverse(self.sensor, sd)
        fc, fs, vs, fv, qd0, _ = self._friction_law
        add_sensed_torque(self.tau_act, first, sd.qfrc_inverse, d.qvel, self._extra_friction, fc, fs, vs, fv, qd0)

    def sense(self, q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> None:
        """The sensors' readings of the last period, written into ``q``, ``qd``, ``tau``: the
        encoder (motor side of an elastic joint, quantized), the noisy velocity and the noisy
        period-averaged joint torque. Braked, the sample is the plant's present state."""
        d = self.data
        rng = self._noise_rng
        o = self.options
        if self.mode is None:
            np.copyto(self._q_sampled, d.qpos)
            np.copyto(self._qd_sampled, d.qvel)
        if self._elastic:  # the encoder is on the motor side of the spring
            self._q_sampled += self.compliance * self.tau_act
        np.round(self._q_sampled / self._q_step, out=q)
        q *= self._q_step
        qd[:] = self._qd_sampled
        if o.velocity_noise_std > 0:
            qd += o.velocity_noise_std * rng.standard_normal(qd.shape[0])
        tau[:] = self.tau_act
        if o.torque_noise_std > 0:
            tau += o.torque_noise_std * rng.standard_normal(tau.shape[0])

    def true_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Noise-free link position and velocity."""
        return self.data.qpos.copy(), self.data.qvel.copy()
