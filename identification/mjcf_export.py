"""Identified, physically consistent parameters as a MuJoCo model (MJCF).

What the file holds, per joint of the robot model (body i is joint frame i, as in the URDF export):

- the kinematics of the robot model: each body's ``pos`` and ``xyaxes`` are the fixed transform
  from the previous joint frame, the joint turns (or slides) about the frame's z axis, with the
  model's position limits as ``range``; a ``tool`` site carries the flange frame;
- each body's ``<inertial>`` (mass, centre of mass, full inertia about it) from the identified
  standard parameters;
- the rotor inertia IA as ``armature`` (MuJoCo adds armature * qacc at the joint, as the model does),
  the viscous friction FV as ``damping`` (a passive force -FV qvel, so ``mj_inverse`` includes
  +FV qvel) and the Coulomb friction FC as ``frictionloss``;
- the joint map: a ``<motor>`` per joint in model order, gear 1, torque limits as ``ctrlrange``,
  and ``<custom>`` entries: the joint order (``robodyn_joints``), the controller-to-model map
  q_model = M q_controller + offset when the model has one (``robodyn_joint_map_matrix``,
  ``robodyn_joint_map_offset``), and the identified friction values, offsets included.

What MuJoCo's joint friction cannot express, and is therefore left out of the dynamics (kept in
``<custom>`` where it is a number):

- ``frictionloss`` is dry friction enforced as a soft constraint, not the torque FC sgn(qd) the
  identification fits: near zero velocity MuJoCo holds the joint with up to FC (static friction),
  and in ``mj_inverse`` the constraint force only equals -FC sgn(qd) once |qd| is large enough
  for the constraint to saturate (docs/identification.md gives the measured threshold);
- a constant torque offset FO per joint (no joint attribute; ``robodyn_offset``);
- asymmetric Coulomb friction (one ``frictionloss`` for both directions), Stribeck or other
  velocity-dependent friction curves, smooth (tanh) Coulomb laws, and a friction model subtracted
  before the identification (``--friction-model``): none has an MJCF form;
- shared-motor (coupled wrist) rotor inertia and friction (``robodyn_shared_motors`` lists them).
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

import numpy as np

from robodyn.robot.model import PRISMATIC, RobotModel, com_inertia

from .result import IdentificationResult, as_result
from .urdf_export import (joint_columns, joint_friction_torque, relative_error, rigid_body_torque,
                          unrepresented_terms)


def _f(x: float) -> str:
    return repr(float(x))


def _v(xs) -> str:
    return " ".join(_f(x) for x in np.ravel(xs))


def export_mjcf(model: RobotModel, result: IdentificationResult | dict,
                name: str | None = None) -> tuple[str, list[str]]:
    """MJCF text of a result of ``robodyn identify --method consistent`` and notes on what it could
    not carry. Raises ValueError (one line) for a result without feasible standard parameters."""
    result = as_result(result)
    if result.consistent is None:
        raise ValueError("export-mjcf: the result holds base parameters only, which fix no masses or inertias; "
                         "run `robodyn identify --method consistent` for physically consistent parameters")
    if not result.consistent_feasible:
        raise ValueError("export-mjcf: the parameters are not physically consistent (a link has no positive mass "
                         "or realisable inertia); run `robodyn identify --method consistent` again")
    base, standard = result.base, result.standard
    per = base.spec.per_joint
    cols = joint_columns(standard, base, model.dof)
    notes = []
    if np.any(cols["FO"] != 0):
        notes.append("torque offsets FO have no MJCF form; kept in <custom> as robodyn_offset")
    if result.friction_model is not None:
        notes.append("the friction model subtracted before identification (--friction-model) has no MJCF form; "
                     "the file holds the identified Coulomb and viscous columns only")
    lines = ['<mujoco model=' + quoteattr(name or f"{model.name}_identified") + '>',
             '  <!-- written by robodyn export-mjcf: identified inertials, rotor inertia as armature, viscous '
             'friction as damping, Coulomb friction as frictionloss -->',
             '  <compiler angle="radian" autolimits="true" inertiafromgeom="false" balanceinertia="false"/>',
             f'  <option gravity="{_v(model.gravity)}"/>',
             '  <worldbody>']
    indent = "    "
    for i in range(model.dof):
        F = model.fixed[i]
        mass, com, I_c = com_inertia(standard[i * per:i * per + 10])
        jtype = "slide" if model.joint_types[i] == PRISMATIC else "hinge"
        lo, hi = model.q_min[i], model.q_max[i]
        limits = f' range="{_f(lo)} {_f(hi)}"' if np.isfinite(lo) and np.isfinite(hi) else ""
        fullinertia = [I_c[0, 0], I_c[1, 1], I_c[2, 2], I_c[0, 1], I_c[0, 2], I_c[1, 2]]
        lines += [f'{indent}<body name="link{i + 1}" pos="{_v(F[:3, 3])}" xyaxes="{_v(F[:3, 0])} {_v(F[:3, 1])}">',
                  f'{indent}  <inertial pos="{_v(com)}" mass="{_f(mass)}" fullinertia="{_v(fullinertia)}"/>',
                  f'{indent}  <joint name={quoteattr(model.joint_names[i])} type="{jtype}" axis="0 0 1"{limits} '
                  f'armature="{_f(max(cols["IA"][i], 0.0))}" damping="{_f(max(cols["FV"][i], 0.0))}" '
                  f'frictionloss="{_f(max(cols["FC"][i], 0.0))}"/>']
        indent += "  "
    T = model.tool
    lines.append(f'{indent}<site name="tool" pos="{_v(T[:3, 3])}" xyaxes="{_v(T[:3, 0])} {_v(T[:3, 1])}"/>')
    for i in reversed(range(model.dof)):
        indent = indent[:-2]
        lines.append(f"{indent}</body>")
    lines += ['  </worldbody>', '  <actuator>']
    for i, joint in enumerate(model.joint_names):
        limit = model.tau_max[i]
        ctrl = f' ctrlrange="{_f(-limit)} {_f(limit)}"' if np.isfinite(limit) else ""
        lines.append(f'    <motor name={quoteattr(joint)} joint={quoteattr(joint)} gear="1"{ctrl}/>')
    lines += ['  </actuator>', '  <custom>',
              f'    <text name="robodyn_joints" data={quoteattr(" ".join(model.joint_names))}/>']
    for key, label in (("IA", "rotor_inertia"), ("FV", "viscous"), ("FC", "coulomb"), ("FO", "offset")):
        lines.append(f'    <numeric name="robodyn_{label}" size="{model.dof}" data="{_v(cols[key])}"/>')
    jm = model.joint_map
    if not jm.is_identity:
        lines += [f'    <numeric name="robodyn_joint_map_matrix" size="{model.dof ** 2}" data="{_v(jm.matrix)}"/>',
                  f'    <numeric name="robodyn_joint_map_offset" size="{model.dof}" data="{_v(jm.offset)}"/>']
        notes.append("the model's joint map (controller to model values) is in <custom>: MJCF joints take "
                     "model values")
    if base.spec.motor_couplings:
        start = per * model.dof
        shared = [f"{' '.join(str(j) for j in c)}: {_v(standard[start + 3 * k:start + 3 * k + 3])}"
                  for k, c in enumerate(base.spec.motor_couplings)]
        lines.append(f'    <text name="robodyn_shared_motors" data={quoteattr("; ".join(shared))}/>')
        notes.append("shared-motor rotor inertia and friction have no MJCF form; listed in <custom>")
    lines += ['  </custom>', '</mujoco>']
    return "\n".join(lines) + "\n", notes


def mujoco_inverse(mjcf_text: str, q, qd, qdd, frictionloss: bool = True,
                   damping: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's inverse dynamics (qfrc_inverse) of the MJCF text at each state, and where each
    joint's dry-friction force is -frictionloss sgn(qd): its constraint saturated against the motion.
    In inverse dynamics the soft constraint's force is -D (qacc + b qd) clipped to +-frictionloss
    (b from solref), so a large acceleration against the motion can saturate it the other way.
    ``frictionloss`` False zeroes the constraint (then add FC sgn(qd) to compare with the model);
    ``damping`` False zeroes the joints' damping (then qfrc_inverse is the rigid body with armature)."""
    import mujoco

    m = mujoco.MjModel.from_xml_string(mjcf_text)
    if not frictionloss:
        m.dof_frictionloss[:] = 0.0
    if not damping:
        m.dof_damping[:] = 0.0
    d = mujoco.MjData(m)
    out = np.empty_like(np.asarray(q, float))
    saturated = np.zeros(out.shape, bool)
    limits = (int(mujoco.mjtConstraintState.mjCNSTRSTATE_LINEARNEG), int(mujoco.mjtConstraintState.mjCNSTRSTATE_LINEARPOS))
    for k in range(out.shape[0]):
        d.qpos[:], d.qvel[:], d.qacc[:] = q[k], qd[k], qdd[k]
        mujoco.mj_inverse(m, d)
        out[k] = d.qfrc_inverse
        for row in range(d.nefc):
            if d.efc_type[row] == mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF and d.efc_state[row] in limits:
                dof = d.efc_id[row]
                saturated[k, dof] = d.efc_force[row] * qd[k][dof] < 0
    return out, saturated


def verify_mjcf(mjcf_text: str, model: RobotModel, result: IdentificationResult | dict, q, qd, qdd) -> dict:
    """MuJoCo's inverse dynamics of the exported file against robodyn's prediction of the same result
    (base parameters and friction columns) at the given states, in N.m (N):

    - ``without_frictionloss``: frictionloss zeroed, FC sgn(qd) added, at every state;
    - ``with_frictionloss``: the file as written, at the joint samples where MuJoCo's dry-friction
      force is -FC sgn(qd) (its constraint saturated against the motion); elsewhere it differs by
      up to 2 FC.

    Offsets FO, which MJCF cannot hold, are added to MuJoCo's torque in both."""
    from .pipeline import predict_base

    result = as_result(result)
    base, theta = result.base, result.values
    cols = joint_columns(result.standard, base, model.dof)
    q, qd, qdd = (np.asarray(a, float) for a in (q, qd, qdd))
    predicted = predict_base(model, base, theta, q, qd, qdd)
    bare = mujoco_inverse(mjcf_text, q, qd, qdd, frictionloss=False)[0] + cols["FC"] * np.sign(qd) + cols["FO"]
    full, saturated = mujoco_inverse(mjcf_text, q, qd, qdd)
    full = full + cols["FO"]
    error = np.abs(full - predicted)
    return {"samples": int(q.shape[0]), "torque_scale": float(np.abs(predicted).max()),
            "without_frictionloss": {"max_abs_error": float(np.abs(bare - predicted).max())},
            "with_frictionloss": {"max_abs_error": float(error[saturated].max()) if saturated.any() else None,
                                  "saturated_fraction": float(saturated.mean()),
                                  "unsaturated_max_abs_error": float(error[~saturated].max()) if (~saturated).any()
                                  else None,
                                  "slowest_saturated_speed": float(np.abs(qd)[saturated].min()) if saturated.any()
                                  else None,
                                  "fastest_unsaturated_speed": float(np.abs(qd)[~saturated].max())
                                  if (~saturated).any() else None}}


def check_mjcf_on_states(mjcf_text: str, model: RobotModel, result: IdentificationResult | dict,
                         states: dict) -> dict:
    """MuJoCo's ``mj_inverse`` on the exported MJCF against robodyn's prediction at the given states
    (:func:`~robodyn.identification.urdf_export.identification_states`):

    - ``rigid_body``: damping and frictionloss zeroed (armature kept) against robodyn's rigid-body
      prediction;
    - ``with_joint_friction``: the file as written (armature, damping, frictionloss) against the
      rigid body plus FV qd + FC sgn(qd), at the joint samples where MuJoCo's dry-friction constraint
      is saturated against the motion (there it is FC sgn(qd));
    - ``unrepresented``: what MJCF cannot hold, sized on the states, with the frictionloss gap (the
      difference where the constraint is not saturated) as one more term."""
    result = as_result(result)
    q, qd, qdd = states["q"], states["qd"], states["qdd"]
    rigid_ref = rigid_body_torque(model, result, states)
    rigid, _ = mujoco_inverse(mjcf_text, q, qd, qdd, frictionloss=False, damping=False)
    full, saturated = mujoco_inverse(mjcf_text, q, qd, qdd)
    full_ref = rigid_ref + joint_friction_torque(model, result, states)
    gap = np.where(saturated, 0.0, full - full_ref)
    with_friction = relative_error(full[saturated], full_ref[saturated]) if saturated.any() else None
    terms = unrepresented_terms(model, result, states, "mjcf")
    if np.any(gap != 0):
        terms.append({"term": "Coulomb as frictionloss where its constraint is not saturated (near rest or "
                              "decelerating hard)", "joints": list(model.joint_names),
                      "rms": np.sqrt(np.mean(gap ** 2, axis=0)).tolist(), "max": np.abs(gap).max(axis=0).tolist(),
                      "samples": int(q.shape[0])})
    return {"samples": int(q.shape[0]), "rigid_body": relative_error(rigid, rigid_ref),
            "with_joint_friction": with_friction, "saturated_fraction": float(saturated.mean()),
            "unrepresented": terms}
