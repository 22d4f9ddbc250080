"""Using a calibration result: compensated controller joint angles for a target pose, and the
calibrated joint origins as URDF (with a model file beside it when the joint map cannot be written
into URDF joints). ``robodyn calibrate compensate`` and ``export-urdf`` print what these return."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from robodyn.robot.absorb import absorb_joint_map
from robodyn.robot.urdf import model_to_urdf

from .compensation import compensate
from .parameters import robot_for
from .result_file import load_result
from .stiffness import Load
from .workflow import parse_numbers


def compensate_target(calibration, target, *, point: str | None = None, q0=None,
                      load: Load | None = None, force: bool = False) -> tuple[dict, bool]:
    """Compensated controller joint angles that put the tool point on ``target`` (X,Y,Z in m, or
    X,Y,Z,RX,RY,RZ with a rotation vector in rad; numbers or their comma text). ``q0``: controller
    joint angles near the wanted solution (required for a position-only target). Returns the report
    and whether the robot's joint map is the identity. A failed calibration is refused unless ``force``."""
    from scipy.spatial.transform import Rotation

    _, result = load_result(calibration, force=force)
    jm = result.gm.robot.joint_map
    v = parse_numbers(target, None, "--target") if isinstance(target, str) else np.asarray(target, float)
    if v.size == 3:
        goal = v
        if q0 is None:
            raise ValueError("--q0: a position-only target needs joint angles near the wanted solution")
    elif v.size == 6:
        goal = np.eye(4)
        goal[:3, :3] = Rotation.from_rotvec(v[3:]).as_matrix()
        goal[:3, 3] = v[:3]
    else:
        raise ValueError(f"--target: expected X,Y,Z or X,Y,Z,RX,RY,RZ, got {v.size} numbers")
    index = 0
    if point is not None:
        names = result.gm.target_names
        if point not in names:
            raise ValueError(f"--point: no target named {point!r} (targets: {names})")
        index = names.index(point)
    if q0 is None:
        q0_model = jm.to_model(np.zeros(result.gm.dof))
    else:
        q0_c = parse_numbers(q0, result.gm.dof, "--q0") if isinstance(q0, str) else np.asarray(q0, float)
        q0_model = jm.to_model(q0_c)
    comp = compensate(result, goal, q0_model, load, point=index)
    q_nom_c, q_comp_c = jm.to_controller(comp.q_nominal), jm.to_controller(comp.q_compensated)
    report = {"target": v.tolist(), "joint_values": "controller",
              "q_nominal_rad": q_nom_c.tolist(), "q_compensated_rad": q_comp_c.tolist(),
              "q_nominal_deg": np.rad2deg(q_nom_c).tolist(), "q_compensated_deg": np.rad2deg(q_comp_c).tolist(),
              "correction_deg": np.rad2deg(q_comp_c - q_nom_c).tolist(),
              "q_model_nominal_rad": comp.q_nominal.tolist(), "q_model_compensated_rad": comp.q_compensated.tolist(),
              "predicted_error_before_mm": comp.predicted_error_before * 1000.0,
              "predicted_error_after_mm": comp.predicted_error_after * 1000.0, "iterations": comp.iterations}
    return report, bool(jm.is_identity)


def export_calibrated_urdf(calibration, out=None, *, name: str | None = None, force: bool = False) -> dict:
    """The calibrated model as URDF, written to ``out`` (with ``out``.toml holding the joint map
    when the map has a coupling or a scale). Returns {out, urdf, joint_map_file, joints}: the URDF
    text when there is no ``out``, and what the joint values of the URDF mean. A failed calibration
    is refused unless ``force``."""
    _, result = load_result(calibration, force=force)
    model = robot_for(result.gm, result.params)
    jm = model.joint_map
    name = name or f"{model.name}_calibrated"
    sidecar = None
    if jm.is_identity:
        joints = "Its joint values are the controller's."
    else:
        try:
            model = absorb_joint_map(model)
            joints = ("Its joint values are the controller's: the model's joint map (sign and offset per joint) is "
                      "written into the joint origins and axes.")
        except ValueError:
            if not out:
                raise ValueError("--out: this robot's joint map has a coupling or a scale, which a URDF joint cannot "
                                 "hold; give --out FILE.urdf and robodyn also writes FILE.toml, a model file that "
                                 "adds the joint map to the URDF") from None
            sidecar = Path(out).with_suffix(".toml")
            joints = (f"Its joints are the model's variables: the joint map (a coupling or a scale) cannot be written "
                      f"into URDF joints; {sidecar.name} adds it, and robodyn commands given that file take "
                      "controller values.")
    text = model_to_urdf(model, name=name)
    note = ("<!-- robodyn calibrate export-urdf: joint origins from the identified "
            f"{result.gm.convention.upper()} parameters ({result.method} method). The tool link is the flange. "
            f"{joints} URDF cannot hold joint stiffness: use 'robodyn calibrate compensate' for load and gravity "
            "deflection. -->\n")
    text = text.replace("?>\n", "?>\n" + note, 1)
    if out:
        Path(out).write_text(text, encoding="utf-8")
        if sidecar is not None:
            rows = "\n".join(f"  {list(map(float, r))}," for r in jm.matrix)
            sidecar.write_text(
                f"# robodyn calibrate export-urdf: {Path(out).name} with the controller's joint map\n"
                f'urdf = "{Path(out).name}"\nname = "{name}"\n'
                f"gravity = {[float(g) for g in model.gravity]}\n"
                f"[limits]\nqdd_max = {[float(v) for v in model.qdd_max]}\nqddd_max = {[float(v) for v in model.qddd_max]}\n"
                f"[joint_map]\nmatrix = [\n{rows}\n]\noffset = {[float(v) for v in jm.offset]}\n", encoding="utf-8")
    return {"out": out, "urdf": None if out else text, "joint_map_file": None if sidecar is None else str(sidecar),
            "joints": joints}
