"""Pure pieces of the Franka driver that do not touch pylibfranka: option parsing, the signal
layout, collision thresholds, the real-time host check and the torque-mode control law.

Kept apart from ``franka.py`` so they can be tested (and reasoned about) without a robot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robodyn.robot.model import RobotModel

from .base import NUMBER, DriverOptions, Signal, option

# Signals streamed every cycle, in order: (name, RobotState attribute, width, unit, description).
# Width 7 means one value per joint. Scalars are appended by the driver itself (see SCALARS).
FRANKA_FIELDS = (
    ("q", "q", "rad", "measured joint position"),
    ("qd", "dq", "rad/s", "measured joint velocity"),
    ("tau", "tau_J", "N.m", "measured link-side joint torque (tau_J)"),
    ("tau_d", "tau_J_d", "N.m", "desired joint torque without gravity (tau_J_d)"),
    ("dtau", "dtau_J", "N.m/s", "derivative of measured joint torque (dtau_J)"),
    ("tau_ext", "tau_ext_hat_filtered", "N.m", "filtered external torque estimate"),
    ("q_d", "q_d", "rad", "desired joint position"),
    ("qd_d", "dq_d", "rad/s", "desired joint velocity"),
    ("theta", "theta", "rad", "motor position (link side)"),
    ("dtheta", "dtheta", "rad/s", "motor velocity (link side)"),
)
SCALARS = (
    Signal("success_rate", 1, "1", "control_command_success_rate over the last 100 commands"),
    Signal("robot_mode", 1, "enum", "libfranka RobotMode: 0 other, 1 idle, 2 move, 3 guiding, 4 reflex, "
                                    "5 user stopped, 6 automatic error recovery"),
    Signal("errors", 1, "bitmask", "current_errors as a bitmask, bit i = info['error_names'][i]"),
    Signal("lost_cycles", 1, "1", "robot cycles missed before this sample (robot time step - 1 ms)"),
)
ROBOT_MODE_REFLEX = 4

# Collision thresholds for excitation: a reflex only when the external torque estimate reaches
# 90 % of the joint's torque limit (contact flagged from 60 %). Excitation moves fast and the
# controller's own model error shows up as "external" torque, so Franka's example values
# (~20 N.m) stop identification runs for nothing; a real collision still triggers well below
# the drive limit. Forces: 60 N contact, 100 N collision.
CONTACT_FRACTION = 0.6
COLLISION_FRACTION = 0.9
FORCE_CONTACT_N = 60.0
FORCE_COLLISION_N = 100.0


def collision_thresholds(tau_max: np.ndarray) -> dict:
    tau_max = np.asarray(tau_max, float)
    return {"lower_torque": (CONTACT_FRACTION * tau_max).tolist(),
            "upper_torque": (COLLISION_FRACTION * tau_max).tolist(),
            "lower_force": [FORCE_CONTACT_N] * 6, "upper_force": [FORCE_COLLISION_N] * 6}


def host_is_realtime() -> bool:
    """A PREEMPT_RT kernel exposes /sys/kernel/realtime = 1 (what libfranka itself checks)."""
    try:
        with open("/sys/kernel/realtime") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


@dataclass
class FrankaConfig(DriverOptions):
    driver = "franka"

    ip: str = option("172.16.0.2", "robot (or franky-sim) address", types=(str,))
    robot: str = option("fr3", "model name for limits, joint names and the torque-mode feedforward", types=(str,))
    realtime: str = option("enforce", "enforce: needs a PREEMPT_RT kernel; ignore: a simulator only (warned loudly)",
                           choices=("enforce", "ignore"))
    # torque mode: the project's joint impedance; default libfranka's example gains
    stiffness: list = option(help="torque-mode joint stiffness, 7 values, N.m/rad", low=0.0, types=(list, tuple),
                             factory=lambda: [600.0, 600.0, 600.0, 600.0, 250.0, 150.0, 50.0])
    damping: list = option(help="torque-mode joint damping, 7 values, N.m.s/rad", low=0.0, types=(list, tuple),
                           factory=lambda: [50.0, 50.0, 50.0, 50.0, 30.0, 25.0, 15.0])
    feedforward: bool = option(True, "torque mode adds RNEA M(q) qdd_d + C(q, qd) qd (the robot compensates gravity)",
                               types=(bool,))
    collision: dict | None = option(None, "override of the collision thresholds {lower_torque, upper_torque, "
                                          "lower_force, upper_force}", types=(dict,))
    error_recovery: bool = option(False, "run automatic_error_recovery at connect/start if the robot needs it",
                                  types=(bool,))
    connect_attempts: int = option(1, "> 1: retry a refused connection (robot rebooting), 1 s apart", low=1,
                                   types=(int,))
    cycle_s: float = option(0.001, "the robot's cycle, s, for counting lost cycles from its clock", low=0.0,
                            low_open=True, types=NUMBER)

    def check(self) -> None:
        if len(self.stiffness) != 7 or len(self.damping) != 7:
            raise ValueError("driver.stiffness / driver.damping: expected 7 values each")


class ImpedanceLaw:
    """tau = K (q_d - q) + D (qd_d - qd) + [M(q) qdd_d + C(q, qd) qd] with preallocated buffers.

    The bracket is the project's RNEA (numba kernel, called directly on (1, n) views so the
    wrapper's validation and allocations stay out of the loop) on a gravity-free copy of the model,
    because Franka's torque interface adds gravity compensation itself. The velocity used in C is
    the measured one.
    """

    def __init__(self, model: RobotModel, stiffness, damping, feedforward: bool = True):
        from robodyn.robot import dynamics as D

        n = model.dof
        self.K = np.asarray(stiffness, float)
        self.D = np.asarray(damping, float)
        self.feedforward = feedforward
        m = model.with_gravity([0.0, 0.0, 0.0])
        mass, com, I_c = D._link_com_arrays(m.inertial)
        z = np.zeros(n)
        rotor = np.asarray(model.rotor_inertia, float).reshape(n)
        # the serial build: one pose per cycle, a thread pool would cost more than the RNEA itself
        self._kernel = getattr(D, "_rnea_serial", None) or getattr(D, "_rnea_kernel")
        self._args = (np.ascontiguousarray(m.fixed[:, :3, :3]), np.ascontiguousarray(m.fixed[:, :3, 3]),
                      m.joint_types.astype(np.int64), np.asarray(m.gravity, float), mass, com, I_c, rotor, z, z, z)
        self._q = np.zeros((1, n))
        self._qd = np.zeros((1, n))
        self._qdd = np.zeros((1, n))
        self._ff = np.zeros((1, n))
        self.tau = np.zeros(n)
        self._err = np.zeros(n)

    def compute(self, q, qd, q_d, qd_d, qdd_d) -> np.ndarray:
        tau, err = self.tau, self._err
        np.subtract(q_d, q, out=err)
        np.multiply(self.K, err, out=tau)
        np.subtract(qd_d, qd, out=err)
        err *= self.D
        tau += err
        if self.feedforward:
            self._q[0] = q
            self._qd[0] = qd
            self._qdd[0] = qdd_d
            self._kernel(*self._args, self._q, self._qd, self._qdd, self._ff)
            tau += self._ff[0]
        return tau


def error_names(errors) -> list[str]:
    """Names of the flags of a libfranka ``Errors`` object, in a fixed (sorted) order."""
    return sorted(a for a in dir(errors) if not a.startswith("_") and isinstance(getattr(errors, a), bool))


def error_bitmask(errors, names: list[str]) -> int:
    mask = 0
    for i, name in enumerate(names):
        if getattr(errors, name):
            mask |= 1 << i
    return mask


def active_errors(errors, names: list[str]) -> list[str]:
    return [n for n in names if getattr(errors, n)]
