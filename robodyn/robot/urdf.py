"""URDF import and export for serial chains.

Import: the chain of movable joints from the root link to ``tip_link`` (or to the single leaf
reachable through movable joints). Fixed joints are merged into their parent body; each joint
frame is rotated so its z axis is the URDF joint axis (the model's convention), and link inertia
(URDF: about the COM, in the inertial frame) is converted to standard parameters about that
joint frame. A vendor's URDF often holds more than the arm (a head, a torso's other side, a
gripper whose fingers mimic one joint, wheels): a movable joint off the chain is locked, at 0 or
at the position given in ``locked``, and its subtree merged into the body it hangs from like a
fixed joint's; the model's ``sources["locked_joints"]`` lists them. A mimic joint on the chain, or
off it but following a joint on it (it would move with the arm), and floating and planar joints
on the chain are refused with one line.

Export: writes a model (for example identified parameters) as URDF with one link per joint
frame, so pinocchio and MuJoCo load the exact same kinematics and inertia.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from xml.sax.saxutils import quoteattr
from pathlib import Path

import numpy as np

from .model import (PRISMATIC, LIMIT_FIELDS, RobotModel, build_model, com_inertia,
                    inertia_matrix, standard_parameters, transform_standard_parameters)

SUPPORTED_JOINTS = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic"}


def _floats(text: str | None, count: int, field: str, default: float = 0.0) -> np.ndarray:
    if text is None:
        return np.full(count, default)
    try:
        vals = np.array([float(v) for v in text.split()])
    except ValueError as exc:
        raise ValueError(f"{field}: expected {count} numbers, got {text!r}") from exc
    if vals.shape != (count,) or not np.all(np.isfinite(vals)):
        raise ValueError(f"{field}: expected {count} finite numbers, got {text!r}")
    return vals


def rpy_matrix(r: float, p: float, y: float) -> np.ndarray:
    """URDF rpy: fixed-axis roll about x, then pitch about y, then yaw about z."""
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def matrix_rpy(R: np.ndarray) -> tuple[float, float, float]:
    sp = -float(R[2, 0])
    sp = max(-1.0, min(1.0, sp))
    p = math.asin(sp)
    if abs(sp) < 1.0 - 1e-12:
        r = math.atan2(R[2, 1], R[2, 2])
        y = math.atan2(R[1, 0], R[0, 0])
    else:  # gimbal lock: put everything in yaw
        r = 0.0
        y = math.atan2(-R[0, 1], R[1, 1])
    return r, p, y


def _origin(elem: ET.Element | None, field: str) -> np.ndarray:
    T = np.eye(4)
    if elem is None:
        return T
    xyz = _floats(elem.get("xyz"), 3, f"{field}.origin.xyz")
    rpy = _floats(elem.get("rpy"), 3, f"{field}.origin.rpy")
    T[:3, :3] = rpy_matrix(*rpy)
    T[:3, 3] = xyz
    return T


def _align_z(axis: np.ndarray) -> np.ndarray:
    """A rotation whose third column is the unit joint axis (identity when the axis is +z)."""
    z = np.array([0.0, 0.0, 1.0])
    c = float(axis @ z)
    if c > 1.0 - 1e-12:
        return np.eye(3)
    if c < -1.0 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    v = np.cross(z, axis)
    s = np.linalg.norm(v)
    k = v / s
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    angle = math.atan2(s, c)
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def _link_params(link: ET.Element, name: str) -> np.ndarray:
    inertial = link.find("inertial")
    if inertial is None:
        return np.zeros(10)
    mass_el = inertial.find("mass")
    mass = 0.0 if mass_el is None else float(_floats(mass_el.get("value"), 1, f"link[{name}].mass")[0])
    if mass < 0:
        raise ValueError(f"link[{name}].inertial.mass: must be >= 0, got {mass}")
    T = _origin(inertial.find("origin"), f"link[{name}].inertial")
    I_el = inertial.find("inertia")
    comps = {}
    for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
        v = None if I_el is None else I_el.get(k)
        comps[k] = 0.0 if v is None else float(_floats(v, 1, f"link[{name}].inertia.{k}")[0])
    I_c = inertia_matrix(comps["ixx"], comps["ixy"], comps["ixz"], comps["iyy"], comps["iyz"], comps["izz"])
    # inertia is about the COM with axes of the inertial frame; express it in the link frame
    return standard_parameters(mass, T[:3, 3], T[:3, :3] @ I_c @ T[:3, :3].T)


def model_from_urdf(path_or_text: str | Path, *, tip_link: str | None = None, name: str | None = None,
                    gravity=(0.0, 0.0, -9.81), limits_override: dict | None = None,
                    locked: dict[str, float] | None = None) -> RobotModel:
    """Parse a URDF file (or its XML text) into a :class:`RobotModel`.

    ``locked``: positions (rad or m) at which joints off the chain are held (default 0).

    URDF has no acceleration or jerk limits: pass them in ``limits_override`` (per-joint lists),
    otherwise they are left infinite and the model cannot be used to move a robot until set.
    """
    text = str(path_or_text)
    if text.lstrip().startswith("<"):
        root = ET.fromstring(text)
        origin_name = "urdf"
    else:
        try:
            root = ET.parse(text).getroot()
        except ET.ParseError as exc:
            raise ValueError(f"{text}: not valid URDF XML: {exc}") from exc
        origin_name = Path(text).stem
    if root.tag != "robot":
        raise ValueError(f"urdf: root element must be <robot>, got <{root.tag}>")
    links = {l.get("name"): l for l in root.findall("link")}
    joints = root.findall("joint")
    children: dict[str, list[ET.Element]] = {}
    parent_of: dict[str, str] = {}
    mimics: dict[str, str] = {}  # mimic joint -> the joint it follows
    for j in joints:
        jname = j.get("name")
        if j.find("mimic") is not None:
            mimics[jname] = j.find("mimic").get("joint", "")
        p = j.find("parent").get("link")
        c = j.find("child").get("link")
        if c in parent_of:
            raise ValueError(f"link[{c}]: has more than one parent joint")
        parent_of[c] = p
        children.setdefault(p, []).append(j)
    roots = [l for l in links if l not in parent_of]
    if len(roots) != 1:
        raise ValueError(f"urdf: expected one root link, found {roots}")
    root_link = roots[0]

    # choose the path of movable joints to the tip
    if tip_link is None:
        leaves_with_motion = []

        def walk(link, movable_count):
            kids = children.get(link, [])
            if not kids:
                leaves_with_motion.append((movable_count, link))
            for j in kids:
                walk(j.find("child").get("link"), movable_count + (j.get("type") != "fixed"))

        walk(root_link, 0)
        best = max(c for c, _ in leaves_with_motion)
        candidates = [l for c, l in leaves_with_motion if c == best]
        tip_link = candidates[0]
    if tip_link not in links:
        raise ValueError(f"tip_link: no link named {tip_link!r}")
    path = []
    link = tip_link
    while link != root_link:
        pj = next(j for j in joints if j.find("child").get("link") == link)
        path.append(pj)
        link = pj.find("parent").get("link")
    path.reverse()
    on_chain = {j.get("name") for j in path}
    for j in path:
        jname, jtype = j.get("name"), j.get("type")
        if jname in mimics:
            raise ValueError(f"joint[{jname}]: a mimic joint on the chain to {tip_link!r} is not supported "
                             f"(it follows {mimics[jname]!r}: a coupled chain)")
        if jtype not in SUPPORTED_JOINTS and jtype != "fixed":
            raise ValueError(f"joint[{jname}].type: {jtype!r} joints are not supported on the chain; "
                             "only revolute, continuous, prismatic and fixed")
    for jname, master in mimics.items():
        if jname not in on_chain and master in on_chain:
            before = next(j.find("parent").get("link") for j in path if j.get("name") == master)
            raise ValueError(f"joint[{jname}]: a mimic joint off the chain that follows {master!r} on it moves "
                             f"with the arm and cannot be locked; end the chain before it (tip_link={before!r}: "
                             "the gripper is then held still)")
    locked = dict(locked or {})
    unknown = sorted(set(locked) - {j.get("name") for j in joints})
    if unknown:
        raise ValueError(f"locked: no joint named {unknown[0]!r} in the URDF")
    held: dict[str, float] = {}

    def lock_transform(j: ET.Element) -> np.ndarray:
        """The pose of a locked joint's child link in its parent's frame: the origin, then the
        joint's motion at its locked position."""
        jname, jtype = j.get("name"), j.get("type")
        if jtype not in SUPPORTED_JOINTS:
            raise ValueError(f"joint[{jname}].type: a {jtype!r} joint off the chain cannot be locked; "
                             "choose tip_link or remove it")
        value = float(locked.get(jname, 0.0))
        held[jname] = value
        axis = _joint_axis(j)
        motion = np.eye(4)
        if jtype == "prismatic":
            motion[:3, 3] = axis * value
        else:  # Rodrigues' formula
            K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
            motion[:3, :3] = np.eye(3) + math.sin(value) * K + (1.0 - math.cos(value)) * (K @ K)
        return _origin(j.find("origin"), f"joint[{jname}]") @ motion

    def subtree_params(link_name: str, T_link_in_body: np.ndarray, excluded_child: str | None) -> np.ndarray:
        """Params of a link plus everything rigidly attached below it (fixed joints), in the body frame."""
        total = transform_standard_parameters(_link_params(links[link_name], link_name),
                                              T_link_in_body[:3, :3], T_link_in_body[:3, 3])
        for j in children.get(link_name, []):
            child = j.find("child").get("link")
            if child == excluded_child:
                continue
            if j.get("type") != "fixed":  # off the chain: held still, a rigid part of this body
                T_child = T_link_in_body @ lock_transform(j)
                total = total + subtree_params(child, T_child, None)
                continue
            T_child = T_link_in_body @ _origin(j.find("origin"), f"joint[{j.get('name')}]")
            total = total + subtree_params(child, T_child, None)
        return total

    fixed_list, types, names, params = [], [], [], []
    lim = {f: [] for f in LIMIT_FIELDS}
    next_on_path = {j.find("parent").get("link"): j for j in path}
    carry = np.eye(4)  # pose of the current URDF link frame in the current body frame (base at first)
    link = root_link
    while True:
        joint = next_on_path.get(link)
        if params:  # links before the first movable joint belong to the fixed base
            params[-1] = params[-1] + subtree_params(
                link, carry, None if joint is None else joint.find("child").get("link"))
        if joint is None:
            break
        jname = joint.get("name")
        T_origin = _origin(joint.find("origin"), f"joint[{jname}]")
        if joint.get("type") == "fixed":
            carry = carry @ T_origin
        else:
            A = np.eye(4)
            A[:3, :3] = _align_z(_joint_axis(joint))
            fixed_list.append(carry @ T_origin @ A)
            types.append(SUPPORTED_JOINTS[joint.get("type")])
            names.append(jname)
            params.append(np.zeros(10))
            _append_limits(lim, joint)
            carry = A.T.copy()  # the URDF child link frame seen from the z-aligned joint frame
            carry[3, :3] = 0.0
        link = joint.find("child").get("link")
    if not fixed_list:
        raise ValueError("urdf: the chain has no movable joint")
    stray = sorted(set(locked) - set(held))
    if stray:
        raise ValueError(f"locked: joint {stray[0]!r} is not off the chain to {tip_link!r} (only such joints are held)")
    tool = carry
    if limits_override:
        for f, v in limits_override.items():
            if f not in lim:
                raise ValueError(f"limits_override: unknown limit {f!r}")
            lim[f] = list(np.asarray(v, float))
    return build_model(
        name=name or root.get("name") or origin_name, joint_names=names, joint_types=types,
        fixed=np.array(fixed_list), tool=tool, inertial=np.array(params), gravity=gravity,
        limits={f: np.asarray(v, float) for f, v in lim.items()}, allow_infinite_limits=True,
        description=f"loaded from URDF ({origin_name})" + (f"; {len(held)} joints off the chain locked"
                                                             if held else ""),
        sources={"model": f"URDF {origin_name}",
                 **({"locked_joints": ", ".join(f"{k}={v:g}" for k, v in held.items())} if held else {})},
    )


def _joint_axis(joint: ET.Element) -> np.ndarray:
    name = joint.get("name")
    axis_el = joint.find("axis")
    axis = _floats(axis_el.get("xyz") if axis_el is not None else "1 0 0", 3, f"joint[{name}].axis")
    norm = np.linalg.norm(axis)
    if norm < 1e-12:
        raise ValueError(f"joint[{name}].axis: zero vector")
    return axis / norm


def _append_limits(lim: dict, joint: ET.Element) -> None:
    limit = joint.find("limit")
    if joint.get("type") == "continuous" or limit is None:
        lo, hi = -math.inf, math.inf
    else:
        lo = float(limit.get("lower", "-inf"))
        hi = float(limit.get("upper", "inf"))
    vel = math.inf if limit is None or limit.get("velocity") is None else float(limit.get("velocity"))
    eff = math.inf if limit is None or limit.get("effort") is None else float(limit.get("effort"))
    lim["q_min"].append(lo)
    lim["q_max"].append(hi)
    lim["qd_max"].append(vel if vel > 0 else math.inf)
    lim["tau_max"].append(eff if eff > 0 else math.inf)
    # URDF carries no acceleration or jerk limits
    lim["qdd_max"].append(math.inf)
    lim["qddd_max"].append(math.inf)


def _fmt(v: float) -> str:
    return repr(float(v))


def model_to_urdf(model: RobotModel, *, name: str | None = None, min_mass: float = 0.0,
                  joint_dynamics: dict | None = None) -> str:
    """URDF text for a model: link i is joint frame i, the tool is a fixed 'tool' link.

    ``joint_dynamics`` optionally maps 'damping' / 'friction' to per-joint arrays written in
    each joint's <dynamics> tag.
    """
    lines = ['<?xml version="1.0"?>', f'<robot name={quoteattr(name or model.name)}>', '  <link name="base_link"/>']
    parent = "base_link"
    for i in range(model.dof):
        F = model.fixed[i]
        r, p, y = matrix_rpy(F[:3, :3])
        jtype = "prismatic" if model.joint_types[i] == PRISMATIC else "revolute"
        link = f"link{i + 1}"
        mass, com, I_c = com_inertia(model.inertial[i])
        mass = max(mass, min_mass)
        lo, hi = model.q_min[i], model.q_max[i]
        lim = (f'    <limit lower="{_fmt(lo if np.isfinite(lo) else -1e9)}" upper="{_fmt(hi if np.isfinite(hi) else 1e9)}" '
               f'effort="{_fmt(model.tau_max[i] if np.isfinite(model.tau_max[i]) else 1e9)}" '
               f'velocity="{_fmt(model.qd_max[i] if np.isfinite(model.qd_max[i]) else 1e9)}"/>')
        dyn = ""
        if joint_dynamics:
            damping = float(np.asarray(joint_dynamics.get("damping", np.zeros(model.dof)))[i])
            friction = float(np.asarray(joint_dynamics.get("friction", np.zeros(model.dof)))[i])
            dyn = f'\n    <dynamics damping="{_fmt(damping)}" friction="{_fmt(friction)}"/>'
        lines += [
            f'  <link name="{link}">',
            '    <inertial>',
            f'      <origin xyz="{_fmt(com[0])} {_fmt(com[1])} {_fmt(com[2])}" rpy="0 0 0"/>',
            f'      <mass value="{_fmt(mass)}"/>',
            f'      <inertia ixx="{_fmt(I_c[0, 0])}" ixy="{_fmt(I_c[0, 1])}" ixz="{_fmt(I_c[0, 2])}" '
            f'iyy="{_fmt(I_c[1, 1])}" iyz="{_fmt(I_c[1, 2])}" izz="{_fmt(I_c[2, 2])}"/>',
            '    </inertial>',
            '  </link>',
            f'  <joint name={quoteattr(model.joint_names[i])} type="{jtype}">',
            f'    <parent link="{parent}"/>',
            f'    <child link="{link}"/>',
            f'    <origin xyz="{_fmt(F[0, 3])} {_fmt(F[1, 3])} {_fmt(F[2, 3])}" rpy="{_fmt(r)} {_fmt(p)} {_fmt(y)}"/>',
            '    <axis xyz="0 0 1"/>',
            lim + dyn,
            '  </joint>',
        ]
        parent = link
    T = model.tool
    r, p, y = matrix_rpy(T[:3, :3])
    lines += [
        '  <link name="tool"/>',
        '  <joint name="tool_fixed" type="fixed">',
        f'    <parent link="{parent}"/>',
        '    <child link="tool"/>',
        f'    <origin xyz="{_fmt(T[0, 3])} {_fmt(T[1, 3])} {_fmt(T[2, 3])}" rpy="{_fmt(r)} {_fmt(p)} {_fmt(y)}"/>',
        '  </joint>',
        '</robot>',
    ]
    return "\n".join(lines) + "\n"


def pinocchio_inverse_dynamics(urdf_text: str, gravity):
    """``torques(q, qd, qdd)`` (arrays of samples x joints) from pinocchio's RNEA on a URDF: the
    independent oracle the tests and ``robodyn reproduce`` compare robodyn's dynamics with. Raises
    ImportError when pinocchio (the 'test' extra) is not installed."""
    import pinocchio as pin

    pm = pin.buildModelFromXML(urdf_text)
    pm.gravity.linear[:] = gravity
    pd = pm.createData()

    def config(qk):  # pinocchio stores a continuous joint as (cos, sin)
        parts = []
        for joint in pm.joints[1:]:
            angle = qk[joint.idx_v]
            parts += [np.cos(angle), np.sin(angle)] if joint.nq == 2 else [angle]
        return np.array(parts)

    def torques(q, qd, qdd):
        return np.array([pin.rnea(pm, pd, config(q[k]), qd[k], qdd[k]) for k in range(q.shape[0])])

    return torques
