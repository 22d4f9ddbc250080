"""The simulated plant's per-physics-step arithmetic (:class:`robodyn.simulation.mujoco_plant.MujocoPlant`),
compiled by numba.

The plant takes 8 physics steps per 500 Hz control period (4 at 1 kHz), each a handful of 6- or
7-element vector operations around MuJoCo's ``mj_step`` and ``mj_inverse``. As separate numpy
calls they cost about 1 us each, more than the two MuJoCo calls together; the simulated UR
controller runs this at SCHED_FIFO for a whole test, so its cost is taken from everything else on
the host. Each kernel here is one pass per joint and computes exactly what the numpy expressions
it replaced computed (the same operations in the same order). Friction is Ni et al. 2024 eq. 2 from
:mod:`robodyn.robot.friction`, evaluated by its one scalar implementation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from robodyn.robot.friction import stribeck_magnitude_value, stribeck_value


@njit(cache=True)
def drive_and_friction(tau, explicit, friction_damping, position, cmd_q, cmd_qd, hold_s, qpos, qvel,
                       elastic, compliance, tau_last, stiffness, damping, ff, tau_max,
                       fc, fs, vs, fv, qd0, slope):
    """The drive torque (joint impedance to the command held first-order ``hold_s`` into the
    period, plus feed-forward ``ff``; in torque mode ``ff`` alone), saturated at ``tau_max``; and
    friction at ``qvel`` split into an explicit torque and a damping coefficient, with
    friction = explicit + friction_damping * qvel."""
    for j in range(tau.shape[0]):
        if position:
            t = cmd_qd[j] * hold_s + cmd_q[j] - qpos[j]
            if elastic:  # the loop sees the motor side: link + spring deflection
                t -= compliance[j] * tau_last[j]
            t *= stiffness[j]
            t += damping[j] * (cmd_qd[j] - qvel[j])
            t += ff[j]
        else:
            t = ff[j]
        tau[j] = max(min(t, tau_max[j]), -tau_max[j])
        v = qvel[j]
        if abs(v) < qd0[j]:  # eq. 2's linear zone: all of it is damping
            explicit[j] = 0.0
            friction_damping[j] = slope[j] + fv[j]
        else:
            m = stribeck_magnitude_value(abs(v), fc[j], fs[j], vs[j])
            explicit[j] = m if v > 0.0 else -m
            friction_damping[j] = fv[j]


@njit(cache=True)
def applied_forces(applied, dof_damping, position, tau, explicit, friction_damping, qvel, damping, tau_max):
    """What MuJoCo is given: the explicit force (drive minus explicit friction) and the implicit
    joint damping. In position mode an unsaturated joint's -D qd term goes implicit too."""
    for j in range(tau.shape[0]):
        a = tau[j] - explicit[j]
        if position and abs(tau[j]) < tau_max[j]:
            a += damping[j] * qvel[j]
            dof_damping[j] = friction_damping[j] + damping[j]
        else:
            dof_damping[j] = friction_damping[j]
        applied[j] = a


@njit(cache=True)
def inverse_input(sensor_qpos, sensor_qvel, sensor_qacc, qpos, qvel, qvel_before, dt):
    """The sensor model's state: the plant's position and velocity, and the acceleration the
    integrator really applied over the step."""
    for j in range(qpos.shape[0]):
        sensor_qpos[j] = qpos[j]
        sensor_qvel[j] = qvel[j]
        sensor_qacc[j] = (qvel[j] - qvel_before[j]) / dt


@njit(cache=True)
def add_sensed_torque(tau_act, first, qfrc_inverse, qvel, extra, fc, fs, vs, fv, qd0):
    """Accumulate the transmitted torque of one physics step: inverse dynamics plus friction at the
    step's end velocity, plus the friction effects the base law lacks (``extra``)."""
    for j in range(tau_act.shape[0]):
        t = qfrc_inverse[j] if first else tau_act[j] + qfrc_inverse[j]
        t += stribeck_value(qvel[j], fc[j], fs[j], vs[j], fv[j], qd0[j])
        tau_act[j] = t + extra[j]


def load_kernels(n: int) -> None:
    """Call each kernel once on scratch values, so numba compiles them (or loads them from its
    cache) when the robot connects, not at the first physics step of the first run: inside the
    control loop a compile would stall it for seconds."""
    z = np.zeros(n)
    one = np.ones(n)
    drive_and_friction(z.copy(), z.copy(), z.copy(), True, z, z, 0.0, z, z, True, z, z, one, one, z, one,
                       z, z, one, z, one, z)
    applied_forces(z.copy(), z.copy(), True, z, z, z, z, one, one)
    inverse_input(z.copy(), z.copy(), z.copy(), z, z, z, 1.0)
    add_sensed_torque(z.copy(), True, z, z, z, z, z, one, z, one)
