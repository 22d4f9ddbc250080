"""What the simulated plant is made of beyond the rigid bodies of the model: its true (perturbed)
inertial parameters and its start pose. Shared by the MuJoCo plant (:mod:`.mujoco_plant`) and the
simulated-data generators of identification that build their own plants."""

from __future__ import annotations

import math

import numpy as np

from robodyn.robot.model import RobotModel, com_inertia, standard_parameters

FRANKA_MODELS = ("panda", "fr3")
FRANKA_READY_POSE = (0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4)


def perturb_inertial(model: RobotModel, rel_std: float, rng: np.random.Generator) -> np.ndarray:
    """Standard parameters with each link's mass, COM and COM inertia perturbed, still physical.

    Mass and inertia are scaled by (1 + rel_std * N(0,1)) clipped to [0.5, 1.5] (a scalar factor
    keeps the inertia tensor valid); the COM moves by rel_std * 0.05 m * N(0,1) per axis.
    """
    out = model.inertial.copy()
    if rel_std == 0:
        return out
    for i in range(model.dof):
        mass, com, I_c = com_inertia(model.inertial[i])
        if mass <= 0:
            continue
        k_mass, k_inertia = np.clip(1 + rel_std * rng.standard_normal(2), 0.5, 1.5)
        com = com + rel_std * 0.05 * rng.standard_normal(3)
        out[i] = standard_parameters(mass * k_mass, com, I_c * k_inertia)
    return out


def default_initial_q(model: RobotModel) -> np.ndarray:
    if model.name in FRANKA_MODELS and model.dof == 7:
        return np.array(FRANKA_READY_POSE)
    mid = 0.5 * (model.q_min + model.q_max)
    return np.where((model.q_min < 0) & (model.q_max > 0), 0.0, mid)
