"""Load robot models: built-in TOML data files, user TOML files (see data/FORMAT.md), URDF."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

from .joint_map import JointMap
from .log_names import with_aliases
from .transmission import Transmission
from .kinematics import chain_from_dh
from .model import (LIMIT_FIELDS, DHTable, RobotModel, build_model, check_inertia_com,
                    inertia_matrix, standard_parameters)

DATA_DIR = Path(__file__).parent / "data"


def builtin_model_names() -> list[str]:
    return sorted(p.stem for p in DATA_DIR.glob("*.toml"))


def load_model(name_or_path: str | Path) -> RobotModel:
    """A built-in model by name (``panda``, ``ur5``, ...) or a model file (.toml or .urdf)."""
    text = str(name_or_path)
    path = Path(text)
    if path.suffix.lower() in (".toml", ".urdf", ".xml") and path.exists():
        if path.suffix.lower() == ".toml":
            return model_from_toml(path)
        from .urdf import model_from_urdf

        return model_from_urdf(path)
    builtin = DATA_DIR / f"{text.lower()}.toml"
    if builtin.exists():
        return model_from_toml(builtin)
    if path.suffix:
        raise ValueError(f"robot: {text}: no such file (give a built-in model name or a model file)")
    raise ValueError(f"robot: unknown model {text!r}; built-in models are {builtin_model_names()}, "
                     "or pass a .toml/.urdf file")


def _number(field: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{field}: expected a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{field}: must be finite, got {value!r}")
    return v


def model_from_toml(path: str | Path) -> RobotModel:
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from exc
    return model_from_dict(doc, origin=str(path))


def model_from_dict(doc: dict, origin: str = "<dict>") -> RobotModel:
    """Build a model from the parsed TOML document (schema in data/FORMAT.md)."""
    if "urdf" in doc:
        return _model_from_urdf_reference(doc, origin)
    convention = doc.get("convention")
    if convention not in ("mdh", "dh"):
        raise ValueError(f"convention: expected 'mdh' or 'dh', got {convention!r} ({origin})")
    joints = doc.get("joints")
    if not isinstance(joints, list) or not joints:
        raise ValueError(f"joints: expected a non-empty list of [[joints]] tables ({origin})")
    n = len(joints)
    names, types = [], []
    geo = {k: np.zeros(n) for k in ("alpha", "a", "d", "theta")}
    limits = {f: np.zeros(n) for f in LIMIT_FIELDS}
    gear = np.ones(n)
    rotor = np.zeros(n)
    links = []
    aliases = []
    for i, j in enumerate(joints):
        if not isinstance(j, dict):
            raise ValueError(f"joints[{i}]: expected a table")
        names.append(str(j.get("name", f"joint{i + 1}")))
        jt = j.get("type")
        if jt not in ("revolute", "prismatic"):
            raise ValueError(f"joints[{i}].type: unknown joint type {jt!r}; expected 'revolute' or 'prismatic'")
        types.append(jt)
        for k in geo:
            if k not in j:
                raise ValueError(f"joints[{i}].{k}: missing DH value")
            geo[k][i] = _number(f"joints[{i}].{k}", j[k])
        for f in LIMIT_FIELDS:
            if f not in j:
                raise ValueError(f"joints[{i}].{f}: missing joint limit")
            limits[f][i] = _number(f"joints[{i}].{f}", j[f])
        gear[i] = _number(f"joints[{i}].gear_ratio", j.get("gear_ratio", 1.0))
        rotor[i] = _number(f"joints[{i}].rotor_inertia", j.get("rotor_inertia", 0.0))
        links.append(j.get("link"))
        aliases.append(_names(f"joints[{i}].aliases", j.get("aliases", [])))
    tool_doc = doc.get("tool")
    tool_row = None
    if tool_doc is not None:
        tool_row = tuple(_number(f"tool.{k}", tool_doc.get(k, 0.0)) for k in ("alpha", "a", "d", "theta"))
    fixed, tool, offsets = chain_from_dh(convention, geo["alpha"], geo["a"], geo["d"], geo["theta"],
                                         types, tool_row)
    inertial = np.zeros((n, 10))
    for i, link in enumerate(links):
        if link is None:
            continue
        if not isinstance(link, dict):
            raise ValueError(f"joints[{i}].link: expected a table")
        mass = _number(f"joints[{i}].link.mass", link.get("mass", 0.0))
        if mass < 0:
            raise ValueError(f"joints[{i}].link.mass: must be >= 0, got {mass}")
        com = link.get("com", [0.0, 0.0, 0.0])
        if not isinstance(com, list) or len(com) != 3:
            raise ValueError(f"joints[{i}].link.com: expected 3 numbers, got {com!r}")
        com = np.array([_number(f"joints[{i}].link.com[{k}]", c) for k, c in enumerate(com)])
        inert = link.get("inertia", {})
        if not isinstance(inert, dict):
            raise ValueError(f"joints[{i}].link.inertia: expected a table with xx, xy, xz, yy, yz, zz")
        comps = [_number(f"joints[{i}].link.inertia.{k}", inert.get(k, 0.0))
                 for k in ("xx", "xy", "xz", "yy", "yz", "zz")]
        I_c = inertia_matrix(*comps)
        check_inertia_com(f"joints[{i}].link.inertia", I_c)
        # com and inertia are given in the convention's link frame; move them to joint frame i
        inertial[i] = standard_parameters(mass, com, I_c, offsets[i][:3, :3], offsets[i][:3, 3])
    gravity = doc.get("gravity", [0.0, 0.0, -9.81])
    if not isinstance(gravity, list) or len(gravity) != 3:
        raise ValueError(f"gravity: expected 3 numbers, got {gravity!r}")
    gravity = [_number(f"gravity[{k}]", g) for k, g in enumerate(gravity)]
    sources = doc.get("sources", {})
    dh = DHTable(convention, geo["alpha"].copy(), geo["a"].copy(), geo["d"].copy(), geo["theta"].copy(),
                 tool_row)
    return build_model(
        name=str(doc.get("name", Path(origin).stem if origin != "<dict>" else "robot")), joint_names=names, joint_types=types,
        fixed=fixed, tool=tool, inertial=inertial, gravity=gravity, limits=limits,
        gear_ratio=gear, rotor_inertia=rotor, dh=dh, description=str(doc.get("description", "")),
        sources={str(k): str(v) for k, v in sources.items()} if isinstance(sources, dict) else {},
        joint_map=_joint_map(doc, n), transmission=_transmission(doc, gear), joint_aliases=aliases,
    )


def _names(field: str, value) -> list[str]:
    """A list of names (the aliases of a joint)."""
    if not isinstance(value, list) or not all(isinstance(s, str) and s for s in value):
        raise ValueError(f"{field}: expected a list of non-empty names, got {value!r}")
    return value


def _urdf_aliases(doc: dict, model: RobotModel) -> tuple[tuple[str, ...], ...]:
    """The optional [aliases] table beside a URDF: joint name = [other names a log gives it]."""
    table = doc.get("aliases", {})
    if not isinstance(table, dict):
        raise ValueError("aliases: expected a table of joint = [names a log may give it]")
    stray = sorted(set(table) - set(model.joint_names))
    if stray:
        raise ValueError(f"aliases.{stray[0]}: not a joint of the chain; its joints are {list(model.joint_names)}")
    return with_aliases(model.joint_names, [_names(f"aliases.{name}", table.get(name, []))
                                            for name in model.joint_names])


def _joint_map(doc: dict, n: int) -> JointMap | None:
    """The optional [joint_map] table: controller joint values -> the model's joint variables."""
    table = doc.get("joint_map")
    return None if table is None else JointMap.from_dict(table, n)


def _transmission(doc: dict, gear_ratio) -> Transmission | None:
    """The optional [transmission] table: motors shared by several joints."""
    table = doc.get("transmission")
    if table is None:
        return None
    ratio = np.where(np.asarray(gear_ratio, float) != 0, gear_ratio, 1.0)
    return Transmission.from_dict(table, ratio)


URDF_REFERENCE_KEYS = ("urdf", "name", "description", "gravity", "tip_link", "locked", "joint_map", "sources",
                       "calibration", "limits", "transmission", "gear_ratio", "aliases")


def _model_from_urdf_reference(doc: dict, origin: str) -> RobotModel:
    """A TOML file that names a URDF (relative to the TOML file) and adds what URDF cannot say:
    the joint map, the gravity vector, acceleration and jerk limits (FORMAT.md, "A URDF with a joint map")."""
    unknown = sorted(set(doc) - set(URDF_REFERENCE_KEYS))
    if unknown:
        raise ValueError(f"{unknown[0]}: not allowed beside 'urdf' ({origin}); a URDF reference takes "
                         f"{', '.join(URDF_REFERENCE_KEYS)}")
    ref = doc["urdf"]
    if not isinstance(ref, str) or not ref:
        raise ValueError(f"urdf: expected a file name, got {ref!r} ({origin})")
    base = Path(origin).parent if origin != "<dict>" else Path(".")
    path = (base / ref) if not Path(ref).is_absolute() else Path(ref)
    if not path.exists():
        raise ValueError(f"urdf: file {str(path)!r} does not exist ({origin})")
    gravity = doc.get("gravity", [0.0, 0.0, -9.81])
    if not isinstance(gravity, list) or len(gravity) != 3:
        raise ValueError(f"gravity: expected 3 numbers, got {gravity!r}")
    gravity = [_number(f"gravity[{k}]", g) for k, g in enumerate(gravity)]
    limits = doc.get("limits")
    if limits is not None and not isinstance(limits, dict):
        raise ValueError("limits: expected a table of per-joint lists (qdd_max, qddd_max, ...)")
    from dataclasses import replace

    from .urdf import model_from_urdf

    locked = doc.get("locked", {})
    if not isinstance(locked, dict):
        raise ValueError("locked: expected a table of joint = position (rad or m) for joints off the chain")
    locked = {str(k): _number(f"locked.{k}", v) for k, v in locked.items()}
    model = model_from_urdf(path, tip_link=doc.get("tip_link"), name=doc.get("name"), gravity=gravity,
                            limits_override=limits, locked=locked)
    extra = {}
    if "description" in doc:
        extra["description"] = str(doc["description"])
    if isinstance(doc.get("sources"), dict):
        extra["sources"] = {**model.sources, **{str(k): str(v) for k, v in doc["sources"].items()}}
    if "gear_ratio" in doc:
        ratio = doc["gear_ratio"]
        if not isinstance(ratio, list) or len(ratio) != model.dof:
            raise ValueError(f"gear_ratio: expected {model.dof} numbers (one per joint), got {ratio!r}")
        extra["gear_ratio"] = np.array([_number(f"gear_ratio[{k}]", g) for k, g in enumerate(ratio)])
    gear = extra.get("gear_ratio", model.gear_ratio)
    return replace(model, joint_map=_joint_map(doc, model.dof), transmission=_transmission(doc, gear),
                   log_names=_urdf_aliases(doc, model), **extra)
