"""The trajectory JSON document: strict parsing (every field checked by :mod:`.schema` before
any arithmetic, errors that name the field), loading and saving."""

from __future__ import annotations

import difflib
from collections.abc import Callable

from . import schema as S
from .base import FORMAT, VERSION, Trajectory
from .moves import PointToPointTrajectory, SweepTrajectory
from .periodic import FourierPolyTrajectory, FourierTrajectory, PeriodicPolyTrajectory
from .sampled import SampledTrajectory, SequenceTrajectory

FAMILIES = tuple(S.FAMILY_PARAMS)


def _periodic_poly(p: dict) -> PeriodicPolyTrajectory:
    S.check_poly_coefficients("params.coefficients", p["coefficients"], p["period"])
    return PeriodicPolyTrajectory(p["period"], p["coefficients"], p["periods"])


def _sweep(p: dict) -> SweepTrajectory:
    joint = S.check_joint("params.joint", p["joint"], p["q_hold"].shape[0])
    return SweepTrajectory(p["q_hold"], joint, p["low"], p["high"], p["speed"], p["ramp"], p["dwell"], p["settle"])


def _sampled(p: dict) -> SampledTrajectory:
    S.check_sample_spacing("params.t", p["t"])
    return SampledTrajectory(p["t"], p["q"], p["qd"], p["qdd"])


def _sequence(p: dict) -> SequenceTrajectory:
    parts = p["parts"]
    if not isinstance(parts, list):
        raise ValueError(f"params.parts: expected a list of trajectory documents, got {type(parts).__name__}")
    if not 1 <= len(parts) <= S.MAX_PARTS:
        raise ValueError(f"params.parts: {len(parts)} parts is outside [1, {S.MAX_PARTS}]")
    parsed = []
    for k, doc in enumerate(parts):
        try:
            parsed.append(_parse(doc, part=True))
        except ValueError as exc:
            raise ValueError(f"params.parts[{k}]{_continuation(str(exc))}") from None
    return SequenceTrajectory(parsed)


def _continuation(message: str) -> str:
    """A part's message under its path: "params.wf: ..." -> ".params.wf: ..."; ": ..." stays."""
    return message if message.startswith((":", "[")) else "." + message


# The constructor of each family from its checked parameters; every family of the schema has one.
BUILDERS: dict[str, Callable[[dict], Trajectory]] = {
    "fourier": lambda p: FourierTrajectory(p["wf"], p["q0"], p["a"], p["b"], p["periods"]),
    "fourier_poly": lambda p: FourierPolyTrajectory(p["wf"], p["q_start"], p["a"], p["b"], p["periods"]),
    "periodic_poly": _periodic_poly,
    "point_to_point": lambda p: PointToPointTrajectory(p["q_start"], p["q_end"], p["duration"]),
    "sweep": _sweep,
    "sampled": _sampled,
    "sequence": _sequence,
}
assert set(BUILDERS) == set(FAMILIES), "every family of the schema needs a builder"


def trajectory_from_dict(doc: dict) -> Trajectory:
    """Parse a trajectory JSON document, raising ValueError (one line) naming the bad field."""
    return _parse(doc, part=False)


def _parse(doc, part: bool) -> Trajectory:
    if not isinstance(doc, dict):
        where = "" if part else "trajectory"
        raise ValueError(f"{where}: expected a trajectory document (a JSON object), got {type(doc).__name__}")
    S.refuse_unknown(doc, S.DOCUMENT_FIELDS, "", "a trajectory document")
    if "format" in doc and not (isinstance(doc["format"], str) and doc["format"] == FORMAT):
        raise ValueError(f"format: expected {FORMAT!r}, got {S.short_repr(doc['format'])}")
    if "version" in doc:
        version = doc["version"]
        if type(version) is not int or version != VERSION:
            raise ValueError(f"version: unsupported trajectory version {S.short_repr(version)}; "
                             f"this software reads {VERSION}")
    family = doc.get("family")
    if not isinstance(family, str) or family not in FAMILIES:
        close = difflib.get_close_matches(family, FAMILIES, n=1) if isinstance(family, str) else []
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"family: unknown trajectory family {S.short_repr(family)}; {hint}expected one of "
                         f"{', '.join(FAMILIES)}")
    if part and family == "sequence":
        raise ValueError("family: a part of a sequence cannot itself be a sequence")
    dof = doc.get("dof")
    if "dof" in doc:
        if isinstance(dof, bool) or not isinstance(dof, int) or not 1 <= dof <= S.MAX_DOF:
            raise ValueError(f"dof: expected a joint count in [1, {S.MAX_DOF}], got {S.short_repr(dof)}")
    if "robot" in doc and not (isinstance(doc["robot"], str) and 0 < len(doc["robot"]) <= S.MAX_ROBOT_NAME):
        raise ValueError(f"robot: expected a robot name of 1 to {S.MAX_ROBOT_NAME} characters")
    if "meta" in doc and not isinstance(doc["meta"], dict):
        raise ValueError(f"meta: expected an object (free-form notes), got {type(doc['meta']).__name__}")
    stated = None
    if "duration" in doc:
        stated = S.check_number("duration", doc["duration"], S.Number(0.0, S.MAX_DURATION_S, "s"))

    p = doc.get("params")
    if not isinstance(p, dict):
        raise ValueError(f"params: expected an object with the parameters of family {family!r}")
    specs = S.FAMILY_PARAMS[family]
    S.refuse_unknown(p, specs, "params", f"family {family!r}")
    for name, spec in specs.items():  # every missing field before any value: the document's shape first
        if spec.required and name not in p:
            raise ValueError(f"params.{name}: missing for family {family!r} (its fields: {', '.join(specs)})")
    values = {}
    for name, spec in specs.items():
        path = f"params.{name}"
        if name not in p or (isinstance(spec, S.Array) and not spec.required and p[name] is None):
            values[name] = getattr(spec, "default", None)  # an optional array may also be given as null
        elif isinstance(spec, S.Number):
            values[name] = S.check_number(path, p[name], spec)
        elif isinstance(spec, S.Array):
            values[name] = S.check_array(path, p[name], spec)
        else:  # joint index and parts: checked by the family's builder
            values[name] = p[name]

    try:
        traj = BUILDERS[family](values)
    except (ValueError, ArithmeticError) as exc:  # the constructors name the parameter without "params."
        text = str(exc)
        raise ValueError(text if text.startswith("params") else f"params.{text}") from None
    duration = traj.duration
    if not 0 < duration <= S.MAX_DURATION_S:
        raise ValueError(f"duration: the parameters describe {S.number_text(duration)} s, outside "
                         f"(0, {S.number_text(S.MAX_DURATION_S)}] s")
    if stated is not None and abs(stated - duration) > 1e-9 * max(1.0, duration):
        raise ValueError(f"duration: the document says {S.number_text(stated)} s but its parameters describe "
                         f"{S.number_text(duration)} s")
    if dof is not None and dof != traj.dof:
        raise ValueError(f"dof: document says {dof} joints but the parameters describe {traj.dof}")
    return traj


def load_trajectory(path) -> Trajectory:
    import json
    from pathlib import Path

    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON: {exc}") from exc
    return trajectory_from_dict(doc)


def save_trajectory(traj: Trajectory, path, robot: str | None = None, meta: dict | None = None) -> None:
    import json
    from pathlib import Path

    Path(path).write_text(json.dumps(traj.to_dict(robot, meta), indent=1))
