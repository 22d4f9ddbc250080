"""The simulated UR's arm: the project's simulator (the MuJoCo plant of
robodyn/simulation/mujoco_plant.py through drivers/sim.py) at 500 Hz, plus what a UR controller
reports on top of joint torque: motor currents through per-joint drive gains, temperatures, and an
optional payload for load/unload experiments.

No second physics: ``SimulatedRobot`` is the plant, always in position mode (a UR's brakes are
released once the robot is RUNNING; a stop holds position). Its measured actuator torque (with
sensor noise and friction) becomes ``actual_current = tau / k``, the noise-free controller torque
``target_current`` / ``target_moment``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robodyn.drivers.base import JointCommand
from robodyn.drivers.sim import SimulatedRobot
from robodyn.simulation.ur_gains import NOMINAL_DRIVE_GAINS
from robodyn.robot.model import standard_parameters

def nominal_drive_gains(robot: str) -> np.ndarray:
    # each controller instance perturbs the nominal gains (seeded) so that the drivers' gain
    # identification has a truth to find
    return np.array(NOMINAL_DRIVE_GAINS.get(robot, (10.0,) * 6), float)


def payload_parameters(mass: float, com) -> np.ndarray:
    """Standard parameters of a point mass at ``com`` in the last link frame (additive to the link's)."""
    return standard_parameters(mass, np.asarray(com, float), np.zeros((3, 3)))


@dataclass
class PlantConfig:
    robot: str = "ur5e"
    rate_hz: float = 500.0
    seed: int = 0
    perturbation: float = 0.0
    gain_spread: float = 0.05  # relative std of the true drive gains around nominal
    current_noise_a: float = 0.005  # A, on top of the simulator's torque-sensor noise
    payload_kg: float = 0.0
    payload_com: tuple = (0.05, 0.0, 0.05)  # m, last link frame
    initial_q: list | None = None


class URPlant:
    def __init__(self, cfg: PlantConfig):
        self.cfg = cfg
        q0 = cfg.initial_q if cfg.initial_q is not None else [0.0, -1.57, 1.57, -1.57, -1.57, 0.0]
        self.sim = SimulatedRobot({"robot": cfg.robot, "rate_hz": cfg.rate_hz, "speed": 0.0, "seed": cfg.seed,
                                   "perturbation": cfg.perturbation, "initial_q": list(q0)})
        if cfg.payload_kg > 0:
            # the plant carries the payload; the nominal (controller) model does not, like a UR
            # whose payload setting was left at zero
            self.sim.true_inertial = self.sim.true_inertial.copy()
            self.sim.true_inertial[-1] += payload_parameters(cfg.payload_kg, cfg.payload_com)
        rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, 7]))
        n = self.sim.model.dof
        self.drive_gains = nominal_drive_gains(cfg.robot) * (1 + cfg.gain_spread * rng.standard_normal(n))
        self._rng = rng
        self.cmd = JointCommand(n)
        self.state = None
        self.temperatures = np.full(n, 30.0)

    def connect(self) -> None:
        self.sim.connect()
        self.sim.start("position")
        self.state = self.sim.read()
        self.cmd.q[:] = self.state.q

    @property
    def q_true(self) -> np.ndarray:
        return self.sim.true_state()[0]

    def step(self, q, qd, qdd) -> None:
        np.copyto(self.cmd.q, q)
        np.copyto(self.cmd.qd, qd)
        np.copyto(self.cmd.qdd, qdd)
        self.sim.write(self.cmd)
        self.state = self.sim.read()
        # joints warm with the square of their load, towards a 30 + 20 degC plateau
        load = np.square(self.state.tau / self.sim.model.tau_max)
        self.temperatures += (30.0 + 20.0 * load - self.temperatures) * (1.0 / (self.cfg.rate_hz * 600.0))

    def outputs(self) -> dict:
        """Joint-level RTDE outputs of the present tick."""
        st = self.state
        k = self.drive_gains
        tau_cmd = st.signal("tau_d")
        current = st.tau / k + self.cfg.current_noise_a * self._rng.standard_normal(k.shape[0])
        return {"actual_q": st.q.tolist(), "actual_qd": st.qd.tolist(), "actual_current": current.tolist(),
                "actual_current_as_torque": (current * k).tolist(), "target_current": (tau_cmd / k).tolist(),
                "target_moment": tau_cmd.tolist(), "joint_control_output": (tau_cmd / k).tolist(),
                "joint_temperatures": self.temperatures.tolist(), "actual_moment": st.tau.tolist()}
