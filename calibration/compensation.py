"""Joint-space error compensation (Li et al. 2023 section 2.2).

1. Nominal inverse kinematics of the target (closed form for UR-type arms, numeric otherwise).
2. Predict where the real robot goes at those angles: the identified geometry at the joint angles
   deflected by gravity and the payload.
3. Map the pose error to joint corrections through the identified model's Jacobian J_o.
4. Subtract them from the commanded angles.
The paper does steps 2-4 once; here they repeat (a bounded Newton iteration) until the predicted
error stops mattering, because the error model is nonlinear and one step leaves a few micrometres.

The target is the pose of the tool point: the target ball position (or any point given as the tool
offset) with the flange orientation, in the measurement frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robodyn.robot.kinematics import geometric_jacobian, rotation_error, trans

from .methods import CalibrationResult
from .ik import nominal_ik
from .parameters import base_transform, flange_poses, robot_for, tool_offset
from .stiffness import Load

MAX_ITERATIONS = 10
TOLERANCE = 1e-9  # m and rad: stop when the predicted error is below this


@dataclass
class CompensationResult:
    target: np.ndarray  # (4, 4) or (3,)
    q_nominal: np.ndarray
    q_compensated: np.ndarray
    predicted_error_before: float  # m, position of the tool point
    predicted_error_after: float
    iterations: int

    def to_dict(self) -> dict:
        return {"q_nominal_rad": self.q_nominal.tolist(), "q_compensated_rad": self.q_compensated.tolist(),
                "q_nominal_deg": np.rad2deg(self.q_nominal).tolist(),
                "q_compensated_deg": np.rad2deg(self.q_compensated).tolist(),
                "correction_deg": np.rad2deg(self.q_compensated - self.q_nominal).tolist(),
                "predicted_error_before_mm": self.predicted_error_before * 1000.0,
                "predicted_error_after_mm": self.predicted_error_after * 1000.0,
                "iterations": self.iterations}


def tool_point_pose(result: CalibrationResult, q_link: np.ndarray, point: int = 0) -> np.ndarray:
    """Pose of the tool point (target ``point``, flange orientation) in the measurement frame, (4, 4)."""
    T = flange_poses(result.gm, result.params, q_link)[0]
    return T @ trans(*tool_offset(result.gm, result.params, point))


def _pose_error(current: np.ndarray, target: np.ndarray, position_only: bool) -> np.ndarray:
    if position_only:
        return current[:3, 3] - target
    return np.concatenate([current[:3, 3] - target[:3, 3], -rotation_error(target[:3, :3], current[:3, :3])])


def _jacobian(result: CalibrationResult, q_link: np.ndarray, position_only: bool, point: int = 0) -> np.ndarray:
    gm, params = result.gm, result.params
    J = geometric_jacobian(robot_for(gm, params), q_link, point_in_tool=tool_offset(gm, params, point))
    R = base_transform(gm, params)[:3, :3]
    J = np.vstack([R @ J[:3], R @ J[3:]])
    return J[:3] if position_only else J


def nominal_joint_angles(result: CalibrationResult, target: np.ndarray, q_ref: np.ndarray, point: int = 0) -> np.ndarray:
    """Step 1: the angles the nominal robot would use for the target."""
    gm = result.gm
    B = base_transform(gm, gm.nominal)
    t_nom = tool_offset(gm, gm.nominal, point)
    if target.shape == (3,):
        p_base = (np.linalg.inv(B) @ np.append(target, 1.0))[:3]
        return nominal_ik(gm.robot, p_base, q_ref, position_only=True, point_in_tool=t_nom)
    flange_target = np.linalg.inv(B) @ target @ np.linalg.inv(trans(*t_nom))
    return nominal_ik(gm.robot, flange_target, q_ref)


def compensate(result: CalibrationResult, target, q_ref, load: Load | None = None, *,
               max_iterations: int = MAX_ITERATIONS, point: int = 0) -> CompensationResult:
    """Compensated joint angles that bring the calibrated robot's tool point onto ``target``.

    ``target`` is a (4, 4) pose or a (3,) position (position-only: the minimum-norm correction).
    """
    target = np.asarray(target, dtype=float)
    if target.shape not in ((3,), (4, 4)) or not np.all(np.isfinite(target)):
        raise ValueError(f"target: expected a position (3,) or a pose (4, 4), got shape {target.shape}")
    position_only = target.shape == (3,)
    q_ref = np.asarray(q_ref, dtype=float)
    if q_ref.shape != (result.gm.dof,):
        raise ValueError(f"q0: expected {result.gm.dof} joint angles, got shape {q_ref.shape}")
    q_nom = nominal_joint_angles(result, target, q_ref, point)
    q = q_nom.copy()
    before = None
    iterations = 0
    for iterations in range(max_iterations + 1):
        q_link = result.link_angles(q, load)[0]  # step 2
        err = _pose_error(tool_point_pose(result, q_link[None], point), target, position_only)
        if before is None:
            before = float(np.linalg.norm(err[:3]))
        if np.max(np.abs(err)) < TOLERANCE or iterations == max_iterations:
            break
        dq, *_ = np.linalg.lstsq(_jacobian(result, q_link, position_only, point), err, rcond=None)  # step 3
        q = q - dq  # step 4
    q_link = result.link_angles(q, load)[0]
    after = float(np.linalg.norm(_pose_error(tool_point_pose(result, q_link[None], point), target, position_only)[:3]))
    return CompensationResult(target, q_nom, q, before, after, iterations)
