"""A model rewritten so that its joint variables are the controller values: the joint map (sign and
offset per joint) absorbed into the joint frames, for exports such as URDF that hold no map."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .joint_map import JointMap
from .kinematics import joint_motion, rot_x
from .model import RobotModel, transform_standard_parameters


def absorb_joint_map(model: RobotModel) -> RobotModel:
    """An equivalent model whose joint variables are the controller values (identity map).

    Possible when every model joint is one controller joint with a sign and an offset
    (q_model_i = +-q_controller_i + offset_i): the offset becomes a turn (or shift) of the joint
    frame and a reversed joint a half turn about its x axis, carried into the next fixed transform
    and into the link's inertial parameters. Forward kinematics, Jacobians and dynamics of the
    result at controller values equal the original's at model values.
    """
    jm = model.joint_map
    if jm.is_identity:
        return model
    d = np.diag(jm.matrix)
    if not jm.is_diagonal or not np.all(np.isin(d, (-1.0, 1.0))):
        raise ValueError("joint_map: only a sign and an offset per joint can be written into the model's joints; "
                         "this map has a coupling or a scale (keep the map beside the model instead)")
    n = model.dof
    fixed = model.fixed.copy()
    tool = model.tool.copy()
    inertial = model.inertial.copy()
    flip = rot_x(np.pi)
    for i in range(n):
        # F Z(s q + o) = F Z(o) [Rx(pi)] Z(q) [Rx(pi)]: Rx(pi) Z(q) Rx(pi) = Z(-q) for both joint types
        fixed[i] = fixed[i] @ joint_motion(int(model.joint_types[i]), jm.offset[i])
        if d[i] < 0:
            fixed[i] = fixed[i] @ flip
            if i + 1 < n:
                fixed[i + 1] = flip @ fixed[i + 1]
            else:
                tool = flip @ tool
            # link i's parameters were about the old joint frame, which is the new one turned by Rx(pi)
            inertial[i] = transform_standard_parameters(inertial[i], flip[:3, :3], np.zeros(3))
    q_min, q_max = jm.limits_to_controller(model.q_min, model.q_max)
    return replace(model, fixed=fixed, tool=tool, inertial=inertial, q_min=q_min, q_max=q_max, dh=None,
                   joint_map=JointMap.identity(n))
