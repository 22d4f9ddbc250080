"""Files of a calibration: robot models, measurement CSV, calibration results (JSON).

Measurement CSV (what ``robodyn calibrate measure`` writes and ``identify``/``evaluate`` read;
a Spatial Analyzer export joined with the robot's joint log fits it):

* Lines starting with ``#`` are comments; ``# key = value`` comments are metadata
  (``robot``, ``load_mass_kg``, ``load_com_m``, ``tool_offset_m``, ``position_unit``, ``angle_unit``).
* One header row, then one row per pose; comma, semicolon or tab separated.
* Columns, matched case-insensitively, a unit in brackets or parentheses allowed (``X [mm]``):
  ``x``, ``y``, ``z``: measured target position; ``q1``..``qn`` (or ``j1``.. / ``joint1``..): joint
  angles; optional ``pose_id`` (or ``id``, ``point``, ``name``): a label that pairs loaded and
  unloaded rows. Other columns are ignored.
* Units: positions in m or mm, angles in rad or deg. A unit given on the command line, in the header
  or in the metadata is checked against the data; otherwise it is detected: the measured point cloud
  is compared, after the best rigid alignment, with the nominal robot's points at the same joint
  angles, for each unit combination. A set that fits no combination is refused with the misfit,
  which also catches swapped columns and the wrong robot.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

from robodyn.robot.loader import load_model, model_from_toml
from robodyn.robot.model import RobotModel

from .combined import CalibrationResult, MeasurementSet
from .identifiability import Redundancy
from .parameters import GeometricModel, geometric_model, target_positions
from .seed004 import DATA_DIR
from .stiffness import Load

RESULT_FORMAT = "robodyn-calibration/1"
POSITION_UNITS = {"m": 1.0, "mm": 1e-3}
ANGLE_UNITS = {"rad": 1.0, "deg": np.pi / 180.0}
UNIT_FIT_LIMIT = 0.02  # m: after alignment a real robot is within a few mm of its nominal model
ID_COLUMNS = ("pose_id", "id", "point", "name", "label")


# --------------------------------------------------------------------------- robots


def robot_path(ref: str) -> Path | None:
    local = DATA_DIR / f"{str(ref).lower()}.toml"
    if local.exists():
        return local
    p = Path(ref)
    return p if p.suffix.lower() == ".toml" and p.exists() else None


def load_robot(ref: str) -> RobotModel:
    """A calibration model shipped here (``ur5_seed004``), a built-in robot or a model file."""
    local = DATA_DIR / f"{str(ref).lower()}.toml"
    return model_from_toml(local) if local.exists() else load_model(ref)


def robot_reference(ref: str) -> str:
    """What to store in result files: a name stays a name, a file becomes an absolute path."""
    p = Path(ref)
    if (DATA_DIR / f"{str(ref).lower()}.toml").exists() or not p.suffix:
        return str(ref)
    return str(p.resolve())


def calibration_metadata(ref: str) -> dict:
    """The optional [calibration] table of a TOML model (free_parameters, floor_z)."""
    path = robot_path(ref)
    if path is None:
        return {}
    with open(path, "rb") as fh:
        meta = tomllib.load(fh).get("calibration", {})
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: [calibration] must be a table")
    return meta


# --------------------------------------------------------------------------- CSV


def _parse_header(cell: str) -> tuple[str, str | None]:
    m = re.match(r"^\s*([^\[\(]+?)\s*(?:[\[\(]\s*([^\]\)]*)\s*[\]\)])?\s*$", cell)
    name = (m.group(1) if m else cell).strip().lower().replace(" ", "_")
    unit = m.group(2).strip().lower() if m and m.group(2) else None
    return name, unit


def _joint_index(name: str) -> int | None:
    m = re.fullmatch(r"(?:q|j|joint|a)_?(\d+)", name)
    return int(m.group(1)) if m else None


def _split_comments(text: str) -> tuple[dict, list[str]]:
    """``# key = value`` metadata and the non-comment, non-empty lines."""
    meta, body = {}, []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            m = re.match(r"#\s*([A-Za-z_]\w*)\s*=\s*(.+)$", stripped)
            if m:
                meta[m.group(1).lower()] = m.group(2).strip()
            continue
        body.append(line)
    return meta, body


def read_metadata(path) -> dict:
    """The ``# key = value`` metadata of a measurement CSV (robot, units, tool offset, payload)."""
    return _split_comments(Path(path).read_text(encoding="utf-8-sig"))[0]


def read_measurements_csv(path, dof: int) -> tuple[dict, list[str], np.ndarray, np.ndarray, dict]:
    """Raw content: metadata, ids, q (N, dof) and xyz (N, 3) in file units, and the unit hints."""
    path = Path(path)
    meta, body = _split_comments(path.read_text(encoding="utf-8-sig"))
    if len(body) < 2:
        raise ValueError(f"{path.name}: expected a header row and at least one data row")
    dialect_delim = max((",", ";", "\t"), key=lambda d: body[0].count(d))
    rows = list(csv.reader(io.StringIO("\n".join(body)), delimiter=dialect_delim))
    header = [_parse_header(c) for c in rows[0]]
    names = [h[0] for h in header]
    col = {}
    hints = {"position": set(), "angle": set()}
    for k, (name, unit) in enumerate(header):
        if name in ("x", "y", "z"):
            col[name] = k
            if unit:
                hints["position"].add(unit)
        elif _joint_index(name) is not None:
            col[f"q{_joint_index(name)}"] = k
            if unit:
                hints["angle"].add(unit)
        elif name in ID_COLUMNS and "id" not in col:
            col["id"] = k
    for axis in ("x", "y", "z"):
        if axis not in col:
            raise ValueError(f"{axis}: column missing in {path.name} (found columns {names}); "
                             "expected x, y, z and q1..q{dof}")
    joints = sorted(int(c[1:]) for c in col if c.startswith("q"))
    for j in range(1, dof + 1):
        if j not in joints:
            raise ValueError(f"q{j}: column missing in {path.name} (found columns {names}); "
                             f"the robot has {dof} joints")
    extra = [j for j in joints if j > dof]
    if extra:
        raise ValueError(f"q{extra[0]}: {path.name} has joint columns up to q{max(joints)} but the robot has "
                         f"{dof} joints (wrong --robot?)")
    ids, q, p = [], [], []
    width = len(rows[0])
    for line_no, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            raise ValueError(f"{path.name} data row {line_no - 1}: expected {width} fields like the header, "
                             f"got {len(row)}")
        try:
            q.append([float(row[col[f"q{j}"]]) for j in range(1, dof + 1)])
            p.append([float(row[col[a]]) for a in ("x", "y", "z")])
        except ValueError:
            bad = next(n for n in [f"q{j}" for j in range(1, dof + 1)] + ["x", "y", "z"]
                       if not _is_number(row[col[n]]))
            raise ValueError(f"{bad}: not a number ({row[col[bad]]!r}) in {path.name} data row {line_no - 1}") from None
        ids.append(row[col["id"]].strip() if "id" in col else f"P{line_no - 1:03d}")
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"pose_id: {dup!r} appears twice in {path.name}")
    return meta, ids, np.array(q), np.array(p), hints


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def rigid_alignment(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, float]:
    """Best rigid transform T (4, 4) with T·src ≈ dst (Kabsch) and the RMS misfit."""
    cs, cd = src.mean(0), dst.mean(0)
    H = (src - cs).T @ (dst - cd)
    U, _, Vt = np.linalg.svd(H)
    D = np.diag([1.0, 1.0, np.sign(np.linalg.det(Vt.T @ U.T))])
    R = Vt.T @ D @ U.T
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = cd - R @ cs
    rms = float(np.sqrt(np.mean(np.sum((src @ R.T + T[:3, 3] - dst) ** 2, axis=1))))
    return T, rms


def _unit_choice(kind: str, given: str | None, hints: set, meta_value: str | None) -> str | None:
    table = POSITION_UNITS if kind == "position" else ANGLE_UNITS
    field = "units" if kind == "position" else "angles"
    stated = {u for u in hints if u}
    if meta_value:
        stated.add(meta_value.strip().lower())
    for u in stated:
        if u not in table:
            raise ValueError(f"{field}: unknown {kind} unit {u!r} in the file; expected one of {sorted(table)}")
    if len(stated) > 1:
        raise ValueError(f"{field}: the file states different {kind} units {sorted(stated)}")
    if given is not None:
        if given not in table:
            raise ValueError(f"{field}: unknown unit {given!r}; expected one of {sorted(table)}")
        if stated and given not in stated:
            raise ValueError(f"{field}: {given} was given but the file says {stated.pop()}")
        return given
    return stated.pop() if stated else None


def detect_units(gm: GeometricModel, q_raw: np.ndarray, p_raw: np.ndarray, position_unit: str | None,
                 angle_unit: str | None, label: str) -> tuple[str, str, dict]:
    """Units that make the data fit the nominal robot; errors name the column group at fault."""
    if q_raw.shape[0] < 4:
        if position_unit is None or angle_unit is None:
            raise ValueError(f"units: {label} has only {q_raw.shape[0]} poses, too few to detect units; "
                             "state them (--units m|mm, --angles rad|deg)")
        return position_unit, angle_unit, {}
    fits = {}
    for pu in ([position_unit] if position_unit else list(POSITION_UNITS)):
        for au in ([angle_unit] if angle_unit else list(ANGLE_UNITS)):
            nominal = target_positions(gm, gm.nominal, q_raw * ANGLE_UNITS[au])
            _, rms = rigid_alignment(nominal, p_raw * POSITION_UNITS[pu])
            fits[(pu, au)] = rms
    (pu, au), best = min(fits.items(), key=lambda kv: kv[1])
    report = {f"{k[0]}/{k[1]}": v for k, v in fits.items()}
    if best > UNIT_FIT_LIMIT:
        tried = ", ".join(f"{k[0]} & {k[1]}: {v * 1000:.1f} mm" for k, v in fits.items())
        raise ValueError(f"x/y/z: the measured positions of {label} do not match the nominal robot under any unit "
                         f"choice even after the best rigid alignment (RMS misfit {tried}); check the column "
                         "order, the joint-angle units, the robot model and the tool offset")
    # a clear winner is required when units were detected rather than stated
    others = [v for k, v in fits.items() if k != (pu, au)]
    if others and min(others) < 3 * best and min(others) < UNIT_FIT_LIMIT:
        raise ValueError(f"units: cannot tell the units of {label} apart (fits {report}); state --units and --angles")
    return pu, au, report


def load_measurements(path, gm: GeometricModel, *, units: str | None = None, angles: str | None = None,
                      load: Load | None = None) -> tuple[MeasurementSet, dict]:
    """A measurement CSV as SI data, with the units used and the metadata found."""
    meta, ids, q_raw, p_raw, hints = read_measurements_csv(path, gm.dof)
    pu = _unit_choice("position", units, hints["position"], meta.get("position_unit"))
    au = _unit_choice("angle", angles, hints["angle"], meta.get("angle_unit"))
    label = Path(path).name
    pu, au, fits = detect_units(gm, q_raw, p_raw, pu, au, label)
    if load is None and "load_mass_kg" in meta:
        mass = float(meta["load_mass_kg"])
        if mass > 0:
            com = [float(v) for v in meta.get("load_com_m", "0,0,0").split(",")]
            load = Load(mass, tuple(com))
    info = {"file": str(path), "position_unit": pu, "angle_unit": au, "unit_fits_m": fits, "metadata": meta}
    return MeasurementSet(q_raw * ANGLE_UNITS[au], p_raw * POSITION_UNITS[pu], ids, load), info


def write_measurements_csv(path, meas: MeasurementSet, *, robot: str, tool: np.ndarray, unit: str = "m",
                           note: str = "") -> None:
    if unit not in POSITION_UNITS:
        raise ValueError(f"units: expected m or mm, got {unit!r}")
    scale = 1.0 / POSITION_UNITS[unit]
    n = meas.q.shape[1]
    lines = ["# robodyn calibrate measure" + (f": {note}" if note else ""),
             f"# robot = {robot}", f"# position_unit = {unit}", "# angle_unit = rad",
             f"# tool_offset_m = {', '.join(repr(float(v)) for v in tool)}"]
    if meas.load is not None and meas.load.mass > 0:
        lines += [f"# load_mass_kg = {meas.load.mass!r}",
                  f"# load_com_m = {', '.join(repr(float(v)) for v in meas.load.com)}"]
    lines.append(",".join(["pose_id"] + [f"q{j + 1}" for j in range(n)] + ["x", "y", "z"]))
    for k in range(len(meas)):
        vals = [meas.ids[k]] + [repr(float(v)) for v in meas.q[k]] + [repr(float(v * scale)) for v in meas.p[k]]
        lines.append(",".join(vals))
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- results


def _num(x):
    x = float(x)
    return x if np.isfinite(x) else None


def result_to_dict(result: CalibrationResult, robot_ref: str) -> dict:
    gm = result.gm
    names = list(gm.names)
    return {
        "format": RESULT_FORMAT,
        "robot": robot_ref,
        "convention": gm.convention,
        "method": result.method,
        "hayati_rows": [r + 1 for r in gm.hayati_rows],
        "base_nominal": gm.base_nominal.tolist(),
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
    }


def result_from_dict(d: dict) -> CalibrationResult:
    if d.get("format") != RESULT_FORMAT:
        raise ValueError(f"calibration: not a robodyn calibration file (format {d.get('format')!r})")
    robot = load_robot(d["robot"])
    params = d["parameters"]
    hayati = [int(r) - 1 for r in d.get("hayati_rows", [])]
    try:
        tool = [params[k]["nominal"] for k in ("tool_x", "tool_y", "tool_z")]
    except KeyError as exc:
        raise ValueError(f"calibration.parameters: missing {exc.args[0]}") from None
    gm = geometric_model(robot, tool_offset=tool, base=np.array(d["base_nominal"], float), hayati_rows=hayati)
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
    return CalibrationResult(gm, d["method"], values, std, list(d["free_parameters"]), dropped, compliance,
                             c_ident, c_std, int(d.get("iterations", 0)), bool(d.get("converged", True)),
                             list(d.get("history", [])), list(d.get("notes", [])),
                             float(d["fit_sigma_m"]) if d.get("fit_sigma_m") is not None else float("nan"),
                             dict(d.get("identifiability", {})))


def save_json(path, obj) -> None:
    Path(path).write_text(json.dumps(obj, indent=2, default=_json_default) + "\n", encoding="utf-8")


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


def measurement_frame(gm: GeometricModel, meas: MeasurementSet) -> tuple[np.ndarray, float, float]:
    """Best-fit base pose of the robot in the measurement frame, its RMS misfit, and the RMS misfit
    of the nominal base: tells data already in the robot base frame from raw tracker coordinates."""
    nominal = target_positions(gm, gm.nominal, meas.q)
    T, rms_aligned = rigid_alignment(nominal, meas.p)
    rms_nominal = float(np.sqrt(np.mean(np.sum((nominal - meas.p) ** 2, axis=1))))
    return T @ gm.base_nominal, rms_aligned, rms_nominal


def stiffness_text(k: dict) -> str:
    """K with its meaning: a compliance within two standard deviations of zero is not resolved."""
    c, sd = k["compliance_rad_per_Nm"], k["compliance_std"]
    if not k["identified"]:
        return f"K{k['joint']} {1.0 / c:.0f} (prior)" if c > 0 else f"K{k['joint']} rigid (prior)"
    if sd is not None and c <= 2 * sd:
        return f"K{k['joint']} > {1.0 / (c + 2 * sd):.0f} (not resolved)"
    return f"K{k['joint']} {1.0 / c:.0f}" + (f" (±2σ {1.0 / (c + 2 * sd):.0f}..{1.0 / (c - 2 * sd):.0f})" if sd else "")
