"""Simulated robot driver: the MuJoCo plant (robodyn.simulation.mujoco_plant, which says what the
plant is made of) behind the driver interface.

The driver adds what a robot's controller adds around its arm: the lifecycle (without an active
mode the brakes are closed: the plant does not move, the state still streams), the command limits,
the pacing and the telemetry (the state, the description, the command log).

Timing: ``read()`` advances the plant by one control period and, in real-time mode, returns at the
cycle's deadline. ``speed = 0`` runs as fast as possible on simulated time (tests); ``speed = 1`` is
real time. Everything random comes from one seed, so a run is reproducible bit for bit.

The command log (``diagnostics()["commands"]``) counts every write and the commanded path length:
a trajectory the daemon rejected must leave both at zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from robodyn.robot.model import LIMIT_FIELDS
from robodyn.simulation.mujoco_plant import MujocoPlant, PlantOptionError, PlantOptions
from robodyn.simulation.plant_kernels import load_kernels

from .base import (NUMBER, NUMBERS, ControlMode, Driver, DriverDescription, DriverOptions, JointCommand, JointState,
                   LifecycleError, LimitViolation, Signal, option)
from .pacing import Pacer

# commands closer than this to a limit are accepted: round-off, not a real violation
COMMAND_LIMIT_TOL = 1e-6

_PLANT = PlantOptions()  # the plant's defaults, which the options below publish


@dataclass
class SimConfig(DriverOptions):
    """The plant's options (robodyn.simulation.mujoco_plant.PlantOptions, same names) and the
    driver's own pacing (``speed``)."""

    driver = "sim"

    robot: str = option(_PLANT.robot, "model: built-in name or a .toml / .urdf file", types=(str,))
    rate_hz: float = option(_PLANT.rate_hz, "control rate, Hz: 1000 (Franka-like) or 500 (UR-like)",
                            choices=(1000, 500), types=NUMBER)
    physics_dt: float = option(_PLANT.physics_dt, "physics step, s; divides the control period", low=0.0,
                               low_open=True, types=NUMBER)
    speed: float = option(0.0, "0: as fast as possible; 1: real time; 2: twice real time ...", low=0.0,
                          types=NUMBER)
    seed: int = option(_PLANT.seed, "seed of everything random (plant perturbation, sensor noise)", low=0,
                       types=(int,))
    perturbation: float = option(_PLANT.perturbation, "relative std of each link's mass, COM offset and inertia",
                                 low=0.0, high=0.5, types=NUMBER)
    rotor_inertia: list | None = option(_PLANT.rotor_inertia, "kg.m^2 per joint (armature); unset: the model's",
                                        low=0.0, types=NUMBERS)
    friction: dict | None = option(_PLANT.friction, "{fc, fs, vs, fv, qd0}; unset: Ni et al. 2024 Table 2 for Franka",
                                   types=(dict,))
    viscous: float | list = option(_PLANT.viscous, "N.m.s/rad, added to the friction's fv", low=0.0, types=NUMBERS)
    torque_noise_std: float = option(_PLANT.torque_noise_std, "joint-torque sensor noise, N.m", low=0.0,
                                     types=NUMBER)
    velocity_noise_std: float = option(_PLANT.velocity_noise_std, "joint-velocity noise, rad/s", low=0.0,
                                       types=NUMBER)
    encoder_counts: int = option(_PLANT.encoder_counts, "encoder counts per revolution (quantization step of q)",
                                 low=1, types=(int,))
    stiffness: list | None = option(_PLANT.stiffness, "position-mode impedance, N.m/rad; unset: Franka's", low=0.0,
                                    types=NUMBERS)
    damping: list | None = option(_PLANT.damping, "position-mode impedance damping, N.m.s/rad", low=0.0,
                                  types=NUMBERS)
    initial_q: list | None = option(_PLANT.initial_q, "start pose, rad; unset: Franka's ready pose, or mid-range",
                                    types=(list, tuple))
    # effects a rigid model with textbook friction lacks (0 / None: off)
    friction_ripple: float | list = option(_PLANT.friction_ripple,
                                           "relative amplitude of a position-dependent friction ripple", low=0.0,
                                           types=NUMBERS)
    friction_ripple_cycles: float = option(_PLANT.friction_ripple_cycles, "ripple cycles per radian", low=0.0,
                                           low_open=True, types=NUMBER)
    friction_load: float | list = option(_PLANT.friction_load, "Coulomb friction per N.m of transmitted torque",
                                         low=0.0, types=NUMBERS)
    joint_stiffness: dict | None = option(_PLANT.joint_stiffness, "{joint index (0-based): N.m/rad}: elastic joints",
                                          low=0.0, low_open=True, types=(dict,))

    def plant_options(self) -> PlantOptions:
        return PlantOptions(**{f.name: getattr(self, f.name) for f in fields(PlantOptions)})

    def check(self) -> None:
        try:
            self.plant_options().check()
        except PlantOptionError as exc:
            raise ValueError(f"driver.{exc}") from None


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


class SimulatedRobot(Driver):
    kind = "sim"
    options_type = SimConfig

    def __init__(self, config: SimConfig | dict | None = None):
        super().__init__()
        self.cfg = config = self.parse_options(config)
        try:
            self.plant = MujocoPlant(config.plant_options())
        except PlantOptionError as exc:
            raise ValueError(f"driver.{exc}") from None
        self.model = self.plant.model
        self.period = self.plant.period
        self.initial_q = self.plant.initial_q
        self._desc = self._build_description()
        self.state = JointState(self._desc)
        self._q_d = self.state.signal("q_d")
        self._qd_d = self.state.signal("qd_d")
        self._tau_d = self.state.signal("tau_d")
        self._tick = 0
        self._pacer = Pacer(self.period / config.speed) if config.speed > 0 else None
        # braked and as-fast-as-possible: nothing to simulate, so idle in real time instead of
        # flooding the stream and burning a core between test runs
        self._idle_pacer = self._pacer or Pacer(self.period)
        self.log = CommandLog()

    @property
    def substeps(self) -> int:
        """Physics steps per control period."""
        return self.plant.substeps

    @property
    def true_inertial(self) -> np.ndarray:
        """The plant's true inertial parameters; set before connect to change the plant (a payload)."""
        return self.plant.true_inertial

    @true_inertial.setter
    def true_inertial(self, value: np.ndarray) -> None:
        self.plant.true_inertial = value

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
        plant = self.plant.describe()
        # the driver's pacing sits beside the plant's seed and perturbation
        info = {k: plant.pop(k) for k in ("engine", "seed", "perturbation")}
        info["speed"] = self.cfg.speed
        info.update(plant)
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
            self.plant.build()
        except ImportError as exc:
            raise LifecycleError("the simulated robot needs MuJoCo: pip install 'robodyn[sim]'") from exc
        # compiled (or loaded from numba's cache) now, not at the first physics step of the first
        # run: inside the control loop a compile would stall it for seconds
        load_kernels(self.model.dof)
        self._tick = 0
        self.state.robot_time = 0.0
        self._fill_state()
        self._idle_pacer.reset()
        if self._pacer is not None:
            self._pacer.reset()

    def _do_start(self, mode: ControlMode) -> None:
        self.plant.release(mode.value)
        self.log.starts += 1
        self.log.last_mode = mode.value
        self.log.history.append(("start:" + mode.value, self.state.robot_time))

    def _do_stop(self) -> None:
        if np.max(np.abs(self.plant.data.qvel)) > 0.05:
            self.log.hard_brakes += 1
        self.log.history.append(("stop", self.state.robot_time))
        self.plant.brake()
        if self._pacer is None:
            self._idle_pacer.reset()  # idle pacing resumes from now, not from before the run

    def _do_close(self) -> None:
        self.plant.close()

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
            self.log.path_length += float(np.sum(np.abs(q - self.plant.cmd_q)))
            self.plant.command_position(q, command.qd, command.qdd)
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
            self.plant.command_torque(tau)
        self.log.writes += 1

    def _fill_state(self) -> None:
        st = self.state
        self.plant.sense(st.q, st.qd, st.tau)
        self._q_d[:] = self.plant.cmd_q
        self._qd_d[:] = self.plant.cmd_qd
        self._tau_d[:] = self.plant.tau_cmd

    def _do_read(self) -> JointState:
        self.plant.step()
        if self._mode is not None:
            disp = float(np.max(np.abs(self.plant.data.qpos - self.initial_q)))
            if disp > self.log.max_displacement:
                self.log.max_displacement = disp
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
        return self.plant.true_state()

    def diagnostics(self) -> dict:
        return {"commands": self.log.to_dict(), "ticks": self._tick,
                "overruns": self._pacer.overruns if self._pacer else self._idle_pacer.overruns}
