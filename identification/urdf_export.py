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
from .result import IdentificationResult, as_result

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
    rigid, damping = pinocchio_rnea(urdf_text, gravity, q, qd, qdd)
    # damping read from <dynamics>: pinocchio keeps it in model.damping but RNEA does not apply it
    return rigid + damping[None, :] * qd + _joint_terms(joint_extras(urdf_text), qd, qdd, rotor=False, damping=False)


def pinocchio_rnea(urdf_text: str, gravity, q, qd, qdd) -> tuple[np.ndarray, np.ndarray]:
    """pinocchio's RNEA on the URDF, its armature set from the extension (RNEA adds armature * qdd),
    and the <dynamics damping> it read (which RNEA does not apply)."""
    import pinocchio as pin

    pm = pin.buildModelFromXML(urdf_text)
    pm.gravity.linear[:] = gravity
    pm.armature[:] = joint_extras(urdf_text)["IA"]
    pd = pm.createData()
    rigid = np.array([pin.rnea(pm, pd, q[k], qd[k], qdd[k]) for k in range(q.shape[0])])
    return rigid, np.array(pm.damping)


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


# --------------------------------------------------------------------------- on the identification data

def identification_states(model: RobotModel, result: IdentificationResult | dict, raw) -> dict:
    """The states robodyn's ``predict`` evaluates a recording at, and its prediction there, in model
    values: the recording processed exactly as ``predict`` processes it (one code path,
    :func:`~robodyn.identification.processing.process_windows` with the result's processing).

    Returns q, qd, qdd, ``predicted`` (what ``predict`` reports at these states before the joint map
    to controller values), ``tau_friction`` (the subtracted friction model's torque, zeros without
    one) and ``stribeck`` (the Stribeck excess columns' torque, zeros without them)."""
    from .pipeline import predict_processed
    from .processing import process_windows

    result = as_result(result)
    base, theta = result.base, result.values
    pieces = [p.data for p in process_windows(raw, result.processing, friction=result.friction_model,
                                              purpose="predict", columns=result.friction_columns)]
    if not pieces:
        raise ValueError("recording: no samples left to evaluate after processing")
    out = {k: np.concatenate([getattr(d, k) for d in pieces]) for k in ("q", "qd", "qdd")}
    zeros = np.zeros_like(out["q"])
    out["tau_friction"] = np.concatenate([zeros[:0]] + [d.tau_friction if d.tau_friction is not None
                                                        else np.zeros_like(d.q) for d in pieces])
    extra = theta[base.count:]
    out["stribeck"] = np.concatenate([zeros[:0]] + [d.friction_extra * extra if extra.size else np.zeros_like(d.q)
                                                    for d in pieces])
    out["predicted"] = np.concatenate([predict_processed(model, base, theta, d) for d in pieces]) + out["tau_friction"]
    return out


def _size(torque: np.ndarray) -> dict:
    """Per-joint RMS and largest magnitude of a torque over samples (N.m, or N for prisms)."""
    torque = np.asarray(torque, float)
    return {"rms": np.sqrt(np.mean(torque ** 2, axis=0)), "max": np.abs(torque).max(axis=0)}


def unrepresented_terms(model: RobotModel, result: IdentificationResult | dict, states: dict,
                        file_format: str) -> list[dict]:
    """What the exported file (``file_format`` "urdf" or "mjcf") cannot make an engine compute,
    per term and joint, with its torque's size (RMS and max) on ``states``
    (:func:`identification_states` of the identification recording).

    Both formats lack: the constant offsets FO, a friction model subtracted before identification
    (``--friction-model``, Stribeck curves among them), Stribeck excess columns and shared-motor
    (coupled wrist) terms. URDF also has no rotor inertia (kept in the ``robodyn_identified``
    extension, which pinocchio's armature can take); it holds viscous and Coulomb friction in
    ``<dynamics damping friction>``, which engines apply or not as they choose. The MuJoCo-specific gap of ``frictionloss`` (a soft constraint,
    not FC sgn(qd), where it is not saturated) is measured by the MJCF export itself."""
    if file_format not in ("urdf", "mjcf"):
        raise ValueError(f"format: expected urdf or mjcf, got {file_format!r}")
    from .regressor import regressor

    result = as_result(result)
    base, standard = result.base, result.standard
    cols = joint_columns(standard, base, model.dof)
    q, qd, qdd = states["q"], states["qd"], states["qdd"]
    terms = [("offset FO", np.broadcast_to(cols["FO"], q.shape)),
             ("friction model subtracted before identification", states["tau_friction"]),
             ("Stribeck excess", states["stribeck"])]
    start = base.spec.per_joint * model.dof
    if base.spec.motor_couplings:
        W = regressor(model, q, qd, qdd, base.spec)
        terms.append(("shared motors (coupled joints)", (W[:, start:] @ standard[start:]).reshape(q.shape)))
    if file_format == "urdf":
        terms.append(("rotor inertia IA qdd (no URDF element; robodyn_identified extension)", cols["IA"] * qdd))
    else:  # the MJCF writes max(x, 0): a negative identified value is clipped
        for key, signal, label in (("IA", qdd, "armature"), ("FV", qd, "damping"), ("FC", np.sign(qd), "frictionloss")):
            clipped = np.minimum(cols[key], 0.0)
            terms.append((f"negative {key} clipped to {label} 0", clipped * signal))
    out = []
    for name, torque in terms:
        size = _size(torque)
        if np.any(size["max"] > 0):
            out.append({"term": name, "joints": list(model.joint_names), "rms": size["rms"].tolist(),
                        "max": size["max"].tolist(), "samples": int(q.shape[0])})
    return out


def joint_friction_torque(model: RobotModel, result: IdentificationResult | dict, states: dict) -> np.ndarray:
    """The identified joint friction columns' torque FV qd + FC sgn(qd) at the states."""
    result = as_result(result)
    cols = joint_columns(result.standard, result.base, model.dof)
    return cols["FV"] * states["qd"] + cols["FC"] * np.sign(states["qd"])


def rigid_body_torque(model: RobotModel, result: IdentificationResult | dict, states: dict) -> np.ndarray:
    """robodyn's prediction at the states less everything that is not the links' and rotors' inertia
    and gravity: the joint friction columns, offsets FO, a subtracted friction model, Stribeck excess
    and shared-motor terms (:func:`unrepresented_terms` sizes the ones no format holds)."""
    from .regressor import regressor

    result = as_result(result)
    base, standard = result.base, result.standard
    cols = joint_columns(standard, base, model.dof)
    rest = joint_friction_torque(model, result, states) + cols["FO"] + states["tau_friction"] + states["stribeck"]
    start = base.spec.per_joint * model.dof
    if base.spec.motor_couplings:
        W = regressor(model, states["q"], states["qd"], states["qdd"], base.spec)
        rest = rest + (W[:, start:] @ standard[start:]).reshape(rest.shape)
    return states["predicted"] - rest


def relative_error(engine: np.ndarray, reference: np.ndarray) -> dict:
    """Largest |engine - reference| and that over the largest |reference| (the torque scale)."""
    scale = max(float(np.abs(reference).max()), 1e-12)
    err = float(np.abs(engine - reference).max())
    return {"max_abs_error": err, "torque_scale": scale, "max_relative_error": err / scale}


def check_urdf_on_states(urdf_text: str, model: RobotModel, result: IdentificationResult | dict,
                         states: dict) -> dict:
    """pinocchio's RNEA (with armature) on the exported URDF against robodyn's rigid-body prediction
    at the given states (:func:`identification_states`), and what URDF cannot hold, sized there."""
    result = as_result(result)
    rigid, damping = pinocchio_rnea(urdf_text, model.gravity, states["q"], states["qd"], states["qdd"])
    reference = rigid_body_torque(model, result, states)
    fv = joint_columns(result.standard, result.base, model.dof)["FV"]
    return {"samples": int(reference.shape[0]),
            "pinocchio_rnea": relative_error(rigid, reference),
            "damping_read_back_max_abs_error": float(np.abs(damping - fv).max()),
            "unrepresented": unrepresented_terms(model, result, states, "urdf")}


def unrepresented_lines(terms: list[dict], unit: str = "N.m") -> list[str]:
    """One line per term of :func:`unrepresented_terms`: each joint's RMS (max) on the data."""
    lines = []
    for t in terms:
        sizes = ", ".join(f"{j} {r:.3g} ({m:.3g})" for j, r, m in zip(t["joints"], t["rms"], t["max"]))
        lines.append(f"not in the file: {t['term']}; RMS (max) {unit} over {t['samples']} samples: {sizes}")
    return lines
