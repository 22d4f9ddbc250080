"""The trajectory JSON document: parsing with errors that name the field, loading and saving."""

from __future__ import annotations

from .base import FORMAT, VERSION, Trajectory
from .moves import PointToPointTrajectory, SweepTrajectory
from .periodic import FourierPolyTrajectory, FourierTrajectory, PeriodicPolyTrajectory
from .sampled import SampledTrajectory, SequenceTrajectory

FAMILIES = ("fourier", "fourier_poly", "periodic_poly", "point_to_point", "sweep", "sampled", "sequence")


def trajectory_from_dict(doc: dict) -> Trajectory:
    """Parse a trajectory JSON document, raising ValueError naming the bad field."""
    if not isinstance(doc, dict):
        raise ValueError("trajectory: expected a JSON object")
    if doc.get("format", FORMAT) != FORMAT:
        raise ValueError(f"format: expected {FORMAT!r}, got {doc.get('format')!r}")
    version = doc.get("version", VERSION)
    if version != VERSION:
        raise ValueError(f"version: unsupported trajectory version {version!r}; this software reads {VERSION}")
    family = doc.get("family")
    if family not in FAMILIES:
        raise ValueError(f"family: unknown trajectory family {family!r}; expected one of {list(FAMILIES)}")
    p = doc.get("params")
    if not isinstance(p, dict):
        raise ValueError("params: expected an object with the family's parameters")

    def need(key):
        if key not in p:
            raise ValueError(f"params.{key}: missing for family {family!r}")
        return p[key]

    def number(key, default=None):
        v = p.get(key, default) if default is not None else need(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"params.{key}: expected a number, got {v!r}")
        return v

    try:
        if family == "fourier":
            traj = FourierTrajectory(number("wf"), need("q0"), need("a"), need("b"), number("periods", 1.0))
        elif family == "fourier_poly":
            traj = FourierPolyTrajectory(number("wf"), need("q_start"), need("a"), need("b"), number("periods", 1))
        elif family == "periodic_poly":
            traj = PeriodicPolyTrajectory(number("period"), need("coefficients"), number("periods", 1))
        elif family == "point_to_point":
            traj = PointToPointTrajectory(need("q_start"), need("q_end"), number("duration"))
        elif family == "sweep":
            joint = need("joint")
            if isinstance(joint, bool) or not isinstance(joint, int):
                raise ValueError(f"joint: expected an integer joint index, got {joint!r}")
            traj = SweepTrajectory(need("q_hold"), joint, number("low"), number("high"), number("speed"),
                                   number("ramp"), number("dwell", 0.2), number("settle", 0.0))
        elif family == "sequence":
            parts = need("parts")
            if not isinstance(parts, list):
                raise ValueError("parts: expected a list of trajectory documents")
            if len(parts) > 10000:
                raise ValueError(f"parts: at most 10000 parts, got {len(parts)}")
            traj = SequenceTrajectory([trajectory_from_dict(d) for d in parts])
        else:
            traj = SampledTrajectory(need("t"), need("q"), p.get("qd"), p.get("qdd"))
    except ValueError as exc:
        text = str(exc)
        raise ValueError(text if text.startswith("params.") else f"params.{text}") from None
    dof = doc.get("dof")
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
