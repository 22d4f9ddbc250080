"""The calibration result file (JSON, format ``robodyn-calibration/1``): what ``calibrate identify``
writes and ``evaluate``, ``compensate`` and ``export-urdf`` read; the JSON helpers the calibration
files share; the joint stiffness as text."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .identifiability import Redundancy
from .lumped_gravity import LumpedGravity
from .methods import CalibrationResult
from .parameters import Target, geometric_model
from .robots import load_robot

RESULT_FORMAT = "robodyn-calibration/1"


def _num(x):
    x = float(x)
    return x if np.isfinite(x) else None


def result_to_dict(result: CalibrationResult, robot_ref: str) -> dict:
    gm = result.gm
    names = list(gm.names)
    n = gm.dof
    return {
        "format": RESULT_FORMAT,
        "robot": robot_ref,
        "convention": gm.convention,
        "method": result.method,
        # a failed fit (not converged, or worse than its start) is written so that it can be examined,
        # but evaluate, compensate and export-urdf refuse it unless forced
        "status": "failed" if result.failed else "ok",
        "failure": result.failure,
        "parameter_count": result.parameter_count,
        "hayati_rows": [r + 1 for r in gm.hayati_rows],
        "base_nominal": gm.base_nominal.tolist(),
        "targets": [t.to_dict() for t in gm.targets],
        "planes": [{"name": name, "nominal_frame": gm.plane_nominal[j].tolist()} for j, name in enumerate(gm.planes)],
        "joint_map": gm.robot.joint_map.to_dict(),
        "parameters": {n: {"nominal": float(gm.nominal[i]), "identified": float(result.params[i]),
                           "std": _num(result.std[i]), "free": n in result.free_names}
                       for i, n in enumerate(names)},
        "free_parameters": list(result.free_names),
        "dropped": [{"name": r.name, "combination": r.combination, "text": r.describe()} for r in result.dropped],
        "joint_stiffness": [{"joint": j + 1, "compliance_rad_per_Nm": float(result.compliance[j]),
                             "compliance_std": _num(result.compliance_std[j]),
                             "stiffness_Nm_per_rad": _num(result.stiffness[j]),
                             "identified": bool(result.compliance_identified[j])} for j in range(gm.dof)],
        "iterations": result.iterations,
        "converged": result.converged,
        "history": result.history,
        "notes": list(result.notes),
        "fit_sigma_m": _num(result.fit_sigma),
        "identifiability": result.identifiability,
        "chi2": _num(result.chi2),
        "backlash": [{"joint": j + 1, "backlash_rad": float(result.backlash[j]),
                      "backlash_std": _num(result.backlash_std[j]),
                      "smoothing_Nm": float(result.backlash_scale[j])} for j in range(n)
                     if result.backlash[j] or np.isfinite(result.backlash_std[j])],
        # combined-gravity on a massless model: the gravity deflection as compliance x mass-moment terms
        "lumped_gravity": None if result.lumped is None else result.lumped.to_dict(),
        # a robust loss: how many poses it down-weighted or set aside, and their weights
        "robust_loss": result.robust,
    }


def result_from_dict(d: dict) -> CalibrationResult:
    if d.get("format") != RESULT_FORMAT:
        raise ValueError(f"calibration: not a robodyn calibration file (format {d.get('format')!r})")
    robot = load_robot(d["robot"])
    params = d["parameters"]
    hayati = [int(r) - 1 for r in d.get("hayati_rows", [])]
    if "joint_map" in d:
        stored = np.array(d["joint_map"]["matrix"], float), np.array(d["joint_map"]["offset"], float)
        if not (np.allclose(stored[0], robot.joint_map.matrix, atol=1e-12)
                and np.allclose(stored[1], robot.joint_map.offset, atol=1e-12)):
            raise ValueError(f"calibration.joint_map: the robot {d['robot']!r} now has another joint map than the one "
                             "the calibration was made with; was the model file changed after calibrating?")
    if "targets" in d:
        targets = [Target.from_dict(t) for t in d["targets"]]
    else:
        try:
            targets = [Target("ball", tuple(params[k]["nominal"] for k in ("tool_x", "tool_y", "tool_z")))]
        except KeyError as exc:
            raise ValueError(f"calibration.parameters: missing {exc.args[0]}") from None
    planes = [(p["name"], np.array(p["nominal_frame"], float)) for p in d.get("planes", [])]
    gm = geometric_model(robot, base=np.array(d["base_nominal"], float), hayati_rows=hayati, targets=targets,
                         planes=planes)
    if set(params) != set(gm.names):
        raise ValueError(f"calibration.parameters: the file's parameters do not match robot {d['robot']!r} "
                         f"(missing {sorted(set(gm.names) - set(params))}, unexpected {sorted(set(params) - set(gm.names))})")
    nominal = np.array([params[n]["nominal"] for n in gm.names])
    if not np.allclose(nominal, gm.nominal, atol=1e-12):
        bad = [n for n, a, b in zip(gm.names, nominal, gm.nominal) if abs(a - b) > 1e-12]
        raise ValueError(f"calibration.parameters: nominal values differ from robot {d['robot']!r} ({', '.join(bad)}); "
                         "was the model file changed after calibrating?")
    values = np.array([params[n]["identified"] for n in gm.names])
    std = np.array([np.nan if params[n]["std"] is None else params[n]["std"] for n in gm.names])
    ks = d["joint_stiffness"]
    compliance = np.array([k["compliance_rad_per_Nm"] for k in ks], float)
    c_ident = np.array([k["identified"] for k in ks], bool)
    c_std = np.array([np.nan if k["compliance_std"] is None else k["compliance_std"] for k in ks], float)
    dropped = [Redundancy(r["name"], r["combination"], 0.0) for r in d.get("dropped", [])]
    n = gm.dof
    backlash, b_std, b_scale = np.zeros(n), np.full(n, np.nan), np.ones(n)
    for b in d.get("backlash", []):
        j = int(b["joint"]) - 1
        backlash[j] = float(b["backlash_rad"])
        b_std[j] = np.nan if b.get("backlash_std") is None else float(b["backlash_std"])
        b_scale[j] = float(b["smoothing_Nm"])
    return CalibrationResult(gm, d["method"], values, std, list(d["free_parameters"]), dropped, compliance,
                             c_ident, c_std, int(d.get("iterations", 0)), bool(d.get("converged", True)),
                             list(d.get("history", [])), list(d.get("notes", [])),
                             float(d["fit_sigma_m"]) if d.get("fit_sigma_m") is not None else float("nan"),
                             dict(d.get("identifiability", {})), backlash, b_std, b_scale,
                             float(d["chi2"]) if d.get("chi2") is not None else float("nan"),
                             failure=_failure(d), lumped=LumpedGravity.from_dict(d.get("lumped_gravity")))


def _failure(d: dict) -> str | None:
    if d.get("status", "ok") == "ok":
        return None
    return str(d.get("failure") or f"status {d.get('status')!r}")


def load_result(path, *, force: bool = False) -> tuple[dict, CalibrationResult]:
    """A calibration file and its result, refused when the fit failed (unless ``force``)."""
    doc = load_json(path, "calibration")
    if _failure(doc) is not None and not force:
        raise ValueError(f"calibration: {path} is a failed calibration ({_failure(doc)}); it is not a result "
                         "(pass --accept-failed to use it anyway)")
    return doc, result_from_dict(doc)


def save_json(path, obj) -> None:
    Path(path).write_text(json.dumps(obj, indent=2, default=_json_default) + "\n", encoding="utf-8")


def json_ready(obj):
    """``obj`` as :func:`save_json` writes it and :func:`load_json` reads it back (plain lists and numbers)."""
    return json.loads(json.dumps(obj, default=_json_default))


def load_json(path, what: str) -> dict:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what}: {path} is not valid JSON ({exc})") from None


def _json_default(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer, np.bool_)):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def stiffness_text(k: dict) -> str:
    """K with its meaning: a compliance within two standard deviations of zero is not resolved."""
    c, sd = k["compliance_rad_per_Nm"], k["compliance_std"]
    if not k["identified"]:
        return f"K{k['joint']} {1.0 / c:.0f} (prior)" if c > 0 else f"K{k['joint']} rigid (prior)"
    if sd is not None and c <= 2 * sd:
        return f"K{k['joint']} > {1.0 / (c + 2 * sd):.0f} (not resolved)"
    return f"K{k['joint']} {1.0 / c:.0f}" + (f" (±2σ {1.0 / (c + 2 * sd):.0f}..{1.0 / (c - 2 * sd):.0f})" if sd else "")
