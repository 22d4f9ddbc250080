"""Identified, physically consistent parameters into a URDF, and the check that it reproduces them.

The URDF carries what the format can express:

- each link's ``<inertial>`` (mass, COM, inertia about the COM) from the full standard parameters;
- each joint's ``<dynamics damping=FV friction=FC>``.

URDF has no rotor (armature) inertia and no constant torque offset; both are written to a
``<robodyn_identified>`` element that URDF parsers ignore (pinocchio and MuJoCo do) and that
:func:`joint_extras` reads back. Shared-motor (coupled wrist) parameters have no URDF form at all and
are listed in that element only.

:func:`verify_urdf` loads the file in pinocchio and MuJoCo and compares their inverse dynamics (plus
the joint terms the engines do not model from URDF) with the identified model's torques.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace

import numpy as np

from robodyn.robot.model import RobotModel
from robodyn.robot.urdf import model_to_urdf

from .base_params import BaseParameters

EXTRA_TAG = "robodyn_identified"


def joint_columns(standard: np.ndarray, base: BaseParameters, dof: int) -> dict:
    """Per-joint IA, FV, FC, FO from a full standard vector (zeros where the column is absent)."""
    spec = base.spec
    per = spec.per_joint
    names = spec.joint_names()
    out = {}
    for key in ("IA", "FV", "FC", "FO"):
        k = names.index(key) if key in names else None
        out[key] = np.array([standard[i * per + k] if k is not None else 0.0 for i in range(dof)])
    return out


def identified_model(model: RobotModel, standard: np.ndarray, base: BaseParameters) -> RobotModel:
    """The model with the identified inertial parameters and rotor inertias."""
    per = base.spec.per_joint
    inertial = np.array([standard[i * per:i * per + 10] for i in range(model.dof)])
    cols = joint_columns(standard, base, model.dof)
    return replace(model.with_inertial(inertial), rotor_inertia=np.maximum(cols["IA"], 0.0))


def export_urdf(model: RobotModel, consistent: dict, base: BaseParameters, name: str | None = None) -> str:
    """URDF text of a physically consistent result (``consistent``: ConsistentResult.to_dict())."""
    if not consistent.get("feasibility", {}).get("feasible", False):
        raise ValueError("export-urdf: the parameters are not physically consistent; a URDF needs positive masses "
                         "and realisable inertias (run the consistent identification)")
    standard = np.asarray(consistent["standard"], float)
    fitted = identified_model(model, standard, base)
    cols = joint_columns(standard, base, model.dof)
    text = model_to_urdf(fitted, name=name or f"{model.name}_identified",
                         joint_dynamics={"damping": cols["FV"], "friction": cols["FC"]})
    extras = [f'  <{EXTRA_TAG} joint="{j}" rotor_inertia="{float(cols["IA"][i])!r}" '
              f'viscous="{float(cols["FV"][i])!r}" coulomb="{float(cols["FC"][i])!r}" '
              f'offset="{float(cols["FO"][i])!r}"/>' for i, j in enumerate(model.joint_names)]
    start = base.spec.per_joint * model.dof
    for k, c in enumerate(base.spec.motor_couplings):
        vals = standard[start + 3 * k:start + 3 * k + 3]
        extras.append(f'  <{EXTRA_TAG} shared_motor="{k + 1}" coupling="{" ".join(repr(float(x)) for x in c)}" '
                      f'rotor_inertia="{float(vals[0])!r}" viscous="{float(vals[1])!r}" '
                      f'coulomb="{float(vals[2])!r}"/>')
    return text.replace("</robot>", "\n".join(extras) + "\n</robot>")


def joint_extras(urdf_text: str) -> dict:
    """The per-joint rotor inertia and friction written by :func:`export_urdf` (joint order)."""
    root = ET.fromstring(urdf_text)
    rows = [e for e in root.findall(EXTRA_TAG) if e.get("joint") is not None]
    return {key: np.array([float(e.get(attr)) for e in rows])
            for key, attr in (("IA", "rotor_inertia"), ("FV", "viscous"), ("FC", "coulomb"), ("FO", "offset"))}


def _joint_terms(extras: dict, qd: np.ndarray, qdd: np.ndarray, rotor: bool, damping: bool) -> np.ndarray:
    """Joint-space terms an engine does not produce from the URDF (Coulomb with sgn(0) = 0, offset)."""
    tau = extras["FC"] * np.sign(qd) + extras["FO"]
    if rotor:
        tau = tau + extras["IA"] * qdd
    if damping:
        tau = tau + extras["FV"] * qd
    return tau


def pinocchio_torques(urdf_text: str, gravity, q, qd, qdd) -> np.ndarray:
    """RNEA of pinocchio on the URDF with its armature set from the extras, plus damping, Coulomb, offset."""
    import pinocchio as pin

    pm = pin.buildModelFromXML(urdf_text)
    pm.gravity.linear[:] = gravity
    extras = joint_extras(urdf_text)
    pm.armature[:] = extras["IA"]  # rnea adds armature * qdd
    pd = pm.createData()
    rigid = np.array([pin.rnea(pm, pd, q[k], qd[k], qdd[k]) for k in range(q.shape[0])])
    # damping read from <dynamics>: pinocchio keeps it in model.damping but RNEA does not apply it
    return rigid + pm.damping[None, :] * qd + _joint_terms(extras, qd, qdd, rotor=False, damping=False)


def mujoco_torques(urdf_text: str, gravity, q, qd, qdd) -> np.ndarray:
    """MuJoCo inverse dynamics of the URDF: armature from the extras, damping from <dynamics> (MuJoCo
    applies it as a passive force, so mj_inverse includes it); Coulomb and offset added here because
    MuJoCo turns <dynamics friction> into a soft frictionloss constraint, not sgn(qd) FC."""
    import mujoco

    head, rest = urdf_text.split("<robot", 1)
    tag_end = rest.index(">") + 1
    xml = (head + "<robot" + rest[:tag_end]
           + '<mujoco><compiler discardvisual="true" balanceinertia="false" fusestatic="false"/></mujoco>'
           + rest[tag_end:])
    m = mujoco.MjModel.from_xml_string(xml)
    m.opt.gravity[:] = gravity
    extras = joint_extras(urdf_text)
    m.dof_armature[:] = extras["IA"]
    m.dof_frictionloss[:] = 0.0
    d = mujoco.MjData(m)
    out = np.empty_like(q)
    for k in range(q.shape[0]):
        d.qpos[:], d.qvel[:], d.qacc[:] = q[k], qd[k], qdd[k]
        mujoco.mj_inverse(m, d)
        out[k] = d.qfrc_inverse
    return out + _joint_terms(extras, qd, qdd, rotor=False, damping=False)


def verify_urdf(urdf_text: str, model: RobotModel, base: BaseParameters, standard: np.ndarray, q, qd, qdd) -> dict:
    """Largest torque difference (N.m) between each engine on the URDF and the identified model.

    The identified torque is the base model W_b (P pi). Shared-motor columns have no URDF form: with
    motor couplings the engines are compared with the model without them, and the size of the
    left-out shared-motor torque is reported."""
    from .pipeline import predict_base
    from .regressor import regressor

    standard = np.asarray(standard, float)
    W = regressor(model, q, qd, qdd, base.spec)
    start = base.spec.per_joint * model.dof
    identified = predict_base(model, base, base.projection @ standard, q, qd, qdd)
    shared = (W[:, start:] @ standard[start:]).reshape(q.shape) if W.shape[1] > start else np.zeros_like(q)
    expected = identified - shared
    scale = max(float(np.abs(expected).max()), 1e-12)
    out = {"samples": int(q.shape[0]), "torque_scale": scale,
           "shared_motor_torque_max": float(np.abs(shared).max())}
    for engine, fn in (("pinocchio", pinocchio_torques), ("mujoco", mujoco_torques)):
        tau = fn(urdf_text, model.gravity, q, qd, qdd)
        out[engine] = {"max_abs_error": float(np.abs(tau - expected).max()),
                       "max_relative_error": float(np.abs(tau - expected).max() / scale)}
    return out
