"""The measurement CSV of a calibration: reading it (units checked or detected against the nominal
robot), writing it, and the frame the measurements are in. Robots: robots.py; results: result_file.py.

Measurement CSV (what ``robodyn calibrate measure`` and ``collect`` write and ``identify`` /
``evaluate`` read; a Spatial Analyzer export joined with the robot's joint log fits it):

* Lines starting with ``#`` are comments; ``# key = value`` comments are metadata: ``robot``,
  ``position_unit``, ``angle_unit``, ``load_mass_kg``, ``load_com_m``, the targets
  (``tool_offset_m = x, y, z`` for one, ``targets = SMR1: x, y, z; SMR2: x, y, z`` for several, in m
  in the flange frame; ``oriented_targets = NAME`` for those whose orientation is measured),
  stated noise (``position_sigma_m``, ``rotation_sigma_rad``) and ``joint_values`` (``controller``,
  the default, or ``model``).
* One header row, then one row per pose; comma, semicolon or tab separated.
* Columns, matched case-insensitively, a unit in brackets or parentheses allowed (``X [mm]``):
  - ``q1``..``qn`` (or ``j1``.. / ``joint1``..): the joint values as the controller reports them;
    the robot's joint map (``[joint_map]`` in its model file) turns them into model variables;
  - ``x``, ``y``, ``z``: the measured target position, or ``x1 y1 z1``, ``x2 y2 z2`` .. for several
    targets per pose (an empty cell: that target was not seen);
  - ``rx``, ``ry``, ``rz`` (or ``rx1``..): the measured orientation of an oriented target as a
    rotation vector, in the angle unit (a full pose: position plus orientation);
  - ``plane`` (or ``plane1``..): the label of a plane the target touches (a planar contact; its
    x, y, z stay empty);
  - ``sigma`` / ``sigma1``.. (position unit) and ``sigma_rot`` / ``sigma_rot1``.. (angle unit): the
    stated noise of the row, per coordinate;
  - optional ``pose_id`` (or ``id``, ``point``, ``name``): a label that pairs loaded and unloaded
    rows. Other columns are ignored.
* Units: positions in m or mm, angles in rad or deg. A unit given on the command line, in the header
  or in the metadata is checked against the data; otherwise it is detected: the measured point cloud
  is compared, after the best rigid alignment, with the nominal robot's points at the same joint
  angles, for each unit combination. A set that fits no combination is refused with the misfit,
  which also catches swapped columns, a wrong joint map and the wrong robot.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .measurements import DEFAULT_POSITION_SIGMA, MeasurementSet
from .parameters import GeometricModel, Target, all_target_positions
from .stiffness import Load

POSITION_UNITS = {"m": 1.0, "mm": 1e-3}
ANGLE_UNITS = {"rad": 1.0, "deg": np.pi / 180.0}
UNIT_FIT_LIMIT = 0.02  # m: after alignment a real robot is within a few mm of its nominal model
ID_COLUMNS = ("pose_id", "id", "point", "name", "label")



def _parse_header(cell: str) -> tuple[str, str | None]:
    m = re.match(r"^\s*([^\[\(]+?)\s*(?:[\[\(]\s*([^\]\)]*)\s*[\]\)])?\s*$", cell)
    name = (m.group(1) if m else cell).strip().lower().replace(" ", "_")
    unit = m.group(2).strip().lower() if m and m.group(2) else None
    return name, unit


def _joint_index(name: str) -> int | None:
    m = re.fullmatch(r"(?:q|j|joint|a)_?(\d+)", name)
    return int(m.group(1)) if m else None


# column kinds: (regex, kind); the optional number is the target (1-based)
COLUMN_PATTERNS = (
    (r"(x|y|z)_?(\d*)", "xyz"),
    (r"(rx|ry|rz)_?(\d*)", "rot"),
    (r"(sigma_rot|sigma_r)_?(\d*)", "sigma_rot"),
    (r"(sigma)_?(\d*)", "sigma"),
    (r"(plane)_?(\d*)", "plane"),
)


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
    """The ``# key = value`` metadata of a measurement CSV (robot, units, targets, payload)."""
    return _split_comments(Path(path).read_text(encoding="utf-8-sig"))[0]


@dataclass
class RawMeasurements:
    """A measurement CSV's content in file units, before the joint map and unit conversion."""

    meta: dict
    ids: list[str]
    q: np.ndarray  # (N, n) joint values as written
    points: np.ndarray  # (N, K, 3), NaN where not measured
    rotvec: np.ndarray | None  # (N, K, 3) or None
    plane: np.ndarray | None  # (N, K) plane labels ('' none) or None
    sigma: np.ndarray  # (N, K), NaN where not stated
    sigma_rot: np.ndarray  # (N, K)
    hints: dict

    @property
    def target_count(self) -> int:
        return int(self.points.shape[1])

    @property
    def plane_labels(self) -> list[str]:
        if self.plane is None:
            return []
        return sorted({str(v) for v in self.plane.reshape(-1) if v})


def _cell_float(row, k, name, line_no, path) -> float:
    v = row[k].strip()
    if v == "":
        return np.nan
    try:
        return float(v)
    except ValueError:
        raise ValueError(f"{name}: not a number ({row[k]!r}) in {path.name} data row {line_no - 1}") from None


def read_measurements_csv(path, dof: int) -> RawMeasurements:
    """Raw content of a measurement CSV; every error names the column and the row."""
    path = Path(path)
    meta, body = _split_comments(path.read_text(encoding="utf-8-sig"))
    if len(body) < 2:
        raise ValueError(f"{path.name}: expected a header row and at least one data row")
    dialect_delim = max((",", ";", "\t"), key=lambda d: body[0].count(d))
    rows = list(csv.reader(io.StringIO("\n".join(body)), delimiter=dialect_delim))
    header = [_parse_header(c) for c in rows[0]]
    names = [h[0] for h in header]
    col: dict = {}
    hints = {"position": set(), "angle": set()}
    targets = set()
    for k, (name, unit) in enumerate(header):
        if _joint_index(name) is not None:
            col[f"q{_joint_index(name)}"] = k
            if unit:
                hints["angle"].add(unit)
            continue
        if name in ID_COLUMNS:
            col.setdefault("id", k)
            continue
        for pattern, kind in COLUMN_PATTERNS:
            m = re.fullmatch(pattern, name)
            if m:
                t = int(m.group(2)) if m.group(2) else 0  # 0: the unnumbered single target
                key = (kind, m.group(1), t)
                if key in col:
                    raise ValueError(f"{name}: column appears twice in {path.name}")
                col[key] = k
                targets.add(t)
                if unit and kind in ("xyz", "sigma"):
                    hints["position"].add(unit)
                if unit and kind in ("rot", "sigma_rot"):
                    hints["angle"].add(unit)
                break
    numbered = sorted(t for t in targets if t > 0)
    if 0 in targets and numbered:
        raise ValueError(f"x: {path.name} mixes unnumbered (x, y, z) and numbered (x1, y1, z1) target columns")
    tlist = numbered if numbered else [0]
    if numbered and numbered != list(range(1, len(numbered) + 1)):
        raise ValueError(f"x{numbered[0]}: target columns must be numbered 1..K without gaps, got {numbered}")
    K = len(tlist)
    suffix = (lambda t: "" if t == 0 else str(t))
    have_xyz = have_rot = False
    for t in tlist:
        present = [a for a in ("x", "y", "z") if ("xyz", a, t) in col]
        if present and len(present) < 3:
            missing = next(a for a in ("x", "y", "z") if a not in present)
            raise ValueError(f"{missing}{suffix(t)}: column missing in {path.name} (found columns {names})")
        have_xyz |= bool(present)
        rot = [a for a in ("rx", "ry", "rz") if ("rot", a, t) in col]
        if rot and len(rot) < 3:
            missing = next(a for a in ("rx", "ry", "rz") if a not in rot)
            raise ValueError(f"{missing}{suffix(t)}: column missing in {path.name} (found columns {names})")
        have_rot |= bool(rot)
    have_plane = any(("plane", "plane", t) in col for t in tlist)
    if not have_xyz and not have_plane:
        raise ValueError(f"z: column missing in {path.name} (found columns {names}); expected x, y, z "
                         f"(or x1, y1, z1 .. for several targets, or plane for planar contacts) and q1..q{dof}")
    joints = sorted(int(c[1:]) for c in col if isinstance(c, str) and c.startswith("q"))
    for j in range(1, dof + 1):
        if j not in joints:
            raise ValueError(f"q{j}: column missing in {path.name} (found columns {names}); "
                             f"the robot has {dof} joints")
    extra = [j for j in joints if j > dof]
    if extra:
        raise ValueError(f"q{extra[0]}: {path.name} has joint columns up to q{max(joints)} but the robot has "
                         f"{dof} joints (wrong --robot?)")
    N = len(rows) - 1
    ids, q = [], np.zeros((N, dof))
    points = np.full((N, K, 3), np.nan)
    rotvec = np.full((N, K, 3), np.nan) if have_rot else None
    plane = np.full((N, K), "", dtype=object) if have_plane else None
    sigma = np.full((N, K), np.nan)
    sigma_rot = np.full((N, K), np.nan)
    width = len(rows[0])
    for r, row in enumerate(rows[1:]):
        line_no = r + 2
        if len(row) != width:
            raise ValueError(f"{path.name} data row {line_no - 1}: expected {width} fields like the header, "
                             f"got {len(row)}")
        for j in range(1, dof + 1):
            q[r, j - 1] = _cell_float(row, col[f"q{j}"], f"q{j}", line_no, path)
            if np.isnan(q[r, j - 1]):
                raise ValueError(f"q{j}: empty cell in {path.name} data row {line_no - 1}")
        for slot, t in enumerate(tlist):
            if ("xyz", "x", t) in col:
                for a, axis in enumerate(("x", "y", "z")):
                    points[r, slot, a] = _cell_float(row, col[("xyz", axis, t)], f"{axis}{suffix(t)}", line_no, path)
                if np.isnan(points[r, slot]).any() and not np.isnan(points[r, slot]).all():
                    raise ValueError(f"x{suffix(t)}: row {line_no - 1} of {path.name} has some of x, y, z but not all")
            if rotvec is not None and ("rot", "rx", t) in col:
                for a, axis in enumerate(("rx", "ry", "rz")):
                    rotvec[r, slot, a] = _cell_float(row, col[("rot", axis, t)], f"{axis}{suffix(t)}", line_no, path)
            if plane is not None and ("plane", "plane", t) in col:
                plane[r, slot] = row[col[("plane", "plane", t)]].strip()
            if ("sigma", "sigma", t) in col:
                sigma[r, slot] = _cell_float(row, col[("sigma", "sigma", t)], f"sigma{suffix(t)}", line_no, path)
            key = next((k for k in (("sigma_rot", "sigma_rot", t), ("sigma_rot", "sigma_r", t)) if k in col), None)
            if key is not None:
                sigma_rot[r, slot] = _cell_float(row, col[key], f"sigma_rot{suffix(t)}", line_no, path)
        ids.append(row[col["id"]].strip() if "id" in col else f"P{line_no - 1:03d}")
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"pose_id: {dup!r} appears twice in {path.name}")
    return RawMeasurements(meta, ids, q, points, rotvec, plane, sigma, sigma_rot, hints)


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


def joint_values_kind(meta: dict, given: str | None = None) -> str:
    kind = (given or meta.get("joint_values", "controller")).strip().lower()
    if kind not in ("controller", "model"):
        raise ValueError(f"joint_values: expected 'controller' or 'model', got {kind!r}")
    return kind


def model_joints(gm: GeometricModel, q_file: np.ndarray, angle_scale: float, kind: str) -> np.ndarray:
    """Model joint variables for joint values read from a file (controller values by default)."""
    q = _scale_joints(gm, q_file, angle_scale)
    return gm.robot.joint_map.to_model(q) if kind == "controller" else q


def _scale_joints(gm: GeometricModel, q_file: np.ndarray, angle_scale: float) -> np.ndarray:
    """Angles of revolute joints in rad; prismatic joints stay in their (SI) unit."""
    revolute = gm.robot.joint_types == 0
    return np.where(revolute, q_file * angle_scale, q_file)


def detect_units(gm: GeometricModel, raw: RawMeasurements, position_unit: str | None, angle_unit: str | None,
                 label: str, kind: str = "controller") -> tuple[str, str, dict]:
    """Units that make the data fit the nominal robot; errors name the column group at fault."""
    mask = np.isfinite(raw.points).all(-1)
    if raw.q.shape[0] < 4 or mask.sum() < 4:
        if position_unit is None or angle_unit is None:
            raise ValueError(f"units: {label} has only {int(mask.sum())} measured points, too few to detect units; "
                             "state them (--units m|mm, --angles rad|deg)")
        return position_unit, angle_unit, {}
    fits = {}
    for pu in ([position_unit] if position_unit else list(POSITION_UNITS)):
        for au in ([angle_unit] if angle_unit else list(ANGLE_UNITS)):
            q = model_joints(gm, raw.q, ANGLE_UNITS[au], kind)
            nominal = all_target_positions(gm, gm.nominal, q)[:, :raw.target_count]
            _, rms = rigid_alignment(nominal[mask], raw.points[mask] * POSITION_UNITS[pu])
            fits[(pu, au)] = rms
    (pu, au), best = min(fits.items(), key=lambda kv: kv[1])
    report = {f"{k[0]}/{k[1]}": v for k, v in fits.items()}
    if best > UNIT_FIT_LIMIT:
        tried = ", ".join(f"{k[0]} & {k[1]}: {v * 1000:.1f} mm" for k, v in fits.items())
        raise ValueError(f"x/y/z: the measured positions of {label} do not match the nominal robot under any unit "
                         f"choice even after the best rigid alignment (RMS misfit {tried}); check the column "
                         "order, the joint-angle units, the joint map, the robot model and the target offsets")
    # a clear winner is required when units were detected rather than stated
    others = [v for k, v in fits.items() if k != (pu, au)]
    if others and min(others) < 3 * best and min(others) < UNIT_FIT_LIMIT:
        raise ValueError(f"units: cannot tell the units of {label} apart (fits {report}); state --units and --angles")
    return pu, au, report


def _meta_float(meta: dict, key: str) -> float | None:
    if key not in meta:
        return None
    try:
        v = float(meta[key])
    except ValueError:
        raise ValueError(f"{key}: expected a number, got {meta[key]!r}") from None
    if not v > 0:
        raise ValueError(f"{key}: expected a noise > 0, got {v}")
    return v


def load_measurements(path, gm: GeometricModel, *, units: str | None = None, angles: str | None = None,
                      load: Load | None = None, joint_values: str | None = None,
                      raw: RawMeasurements | None = None) -> tuple[MeasurementSet, dict]:
    """A measurement CSV as SI data in model joint variables, with the units used and the metadata.

    Planar contacts are returned with plane indices in the order of ``gm.planes`` (labels the model
    does not know are refused); ``info["plane_labels"]`` lists the labels found.
    """
    raw = raw if raw is not None else read_measurements_csv(path, gm.dof)
    meta = raw.meta
    label = Path(path).name
    if raw.target_count > len(gm.targets):
        raise ValueError(f"targets: {label} has {raw.target_count} targets per pose but {len(gm.targets)} are "
                         "described (give their offsets: '# targets = NAME: x, y, z; ...' or --targets)")
    pu = _unit_choice("position", units, raw.hints["position"], meta.get("position_unit"))
    au = _unit_choice("angle", angles, raw.hints["angle"], meta.get("angle_unit"))
    kind = joint_values_kind(meta, joint_values)
    pu, au, fits = detect_units(gm, raw, pu, au, label, kind)
    ps, ascale = POSITION_UNITS[pu], ANGLE_UNITS[au]
    q_c = _scale_joints(gm, raw.q, ascale)
    q = gm.robot.joint_map.to_model(q_c) if kind == "controller" else q_c
    if load is None and "load_mass_kg" in meta:
        mass = float(meta["load_mass_kg"])
        if mass > 0:
            com = [float(v) for v in meta.get("load_com_m", "0,0,0").split(",")]
            load = Load(mass, tuple(com))
    sigma = raw.sigma * ps
    default_sigma = _meta_float(meta, "position_sigma_m")
    if default_sigma is not None:
        sigma = np.where(np.isnan(sigma), default_sigma, sigma)
    rotation = None
    sigma_rot = None
    if raw.rotvec is not None:
        from scipy.spatial.transform import Rotation

        rv = raw.rotvec * ascale
        ok = np.isfinite(rv).all(-1)
        for n, k in np.argwhere(ok):
            if not gm.targets[k].oriented:
                raise ValueError(f"rx{'' if raw.target_count == 1 else k + 1}: {label} measures the orientation of "
                                 f"target {gm.targets[k].name!r}, which is not declared oriented "
                                 "('# oriented_targets = NAME' or --oriented)")
        rotation = np.full(rv.shape[:2] + (3, 3), np.nan)
        rotation[ok] = Rotation.from_rotvec(rv[ok]).as_matrix()
        sigma_rot = raw.sigma_rot * ascale
        stated = _meta_float(meta, "rotation_sigma_rad")
        if stated is not None:
            sigma_rot = np.where(np.isnan(sigma_rot), stated, sigma_rot)
        if np.isnan(sigma_rot[ok]).any():
            raise ValueError(f"sigma_rot: {label} has orientations without a stated noise; add a sigma_rot column "
                             "or '# rotation_sigma_rad = ...'")
    plane = None
    if raw.plane is not None:
        plane = np.full(raw.plane.shape, -1, dtype=int)
        for n, k in np.argwhere(raw.plane != ""):
            name = str(raw.plane[n, k])
            if name not in gm.planes:
                raise ValueError(f"plane: {label} row {n + 1} names plane {name!r}, unknown to the model "
                                 f"(known: {list(gm.planes)})")
            plane[n, k] = gm.planes.index(name)
    meas = MeasurementSet(q, raw.points * ps, raw.ids, load, sigma, rotation, sigma_rot, plane, None, q_c)
    info = {"file": str(path), "position_unit": pu, "angle_unit": au, "unit_fits_m": fits, "metadata": meta,
            "joint_values": kind, "plane_labels": raw.plane_labels}
    return meas, info


def targets_from_metadata(meta: dict, tool=None, oriented=None) -> list[Target] | None:
    """Targets from ``# targets = NAME: x, y, z; ...`` (or ``# tool_offset_m``), overridden by the
    command line's ``tool`` (one target) and ``oriented`` (names)."""
    targets = None
    if tool is not None:
        targets = [Target("ball", tuple(float(v) for v in tool))]
    elif "targets" in meta:
        targets = []
        for part in meta["targets"].split(";"):
            if not part.strip():
                continue
            if ":" not in part:
                raise ValueError(f"targets: expected 'NAME: x, y, z; NAME: x, y, z', got {meta['targets']!r}")
            name, xyz = part.split(":", 1)
            try:
                v = [float(x) for x in xyz.split(",")]
            except ValueError:
                raise ValueError(f"targets: {name.strip()}: expected 3 numbers in m, got {xyz.strip()!r}") from None
            if len(v) != 3:
                raise ValueError(f"targets: {name.strip()}: expected 3 numbers in m, got {xyz.strip()!r}")
            if max(abs(x) for x in v) > 2.0:
                raise ValueError(f"targets: {name.strip()} lies {max(abs(x) for x in v)} m from the flange; were "
                                 "the offsets given in millimetres?")
            targets.append(Target(name.strip(), tuple(v)))
    elif "tool_offset_m" in meta:
        v = [float(x) for x in meta["tool_offset_m"].split(",")]
        if len(v) != 3:
            raise ValueError(f"tool_offset_m: expected 3 numbers, got {meta['tool_offset_m']!r}")
        targets = [Target("ball", tuple(v))]
    names = oriented if oriented is not None else [n.strip() for n in meta.get("oriented_targets", "").split(",")
                                                     if n.strip()]
    if names and targets is None:
        raise ValueError("oriented_targets: no targets are described")
    for name in names:
        if name not in [t.name for t in targets]:
            raise ValueError(f"oriented_targets: no target named {name!r} (targets: {[t.name for t in targets]})")
    if targets is not None:
        targets = [Target(t.name, t.offset, t.name in names, t.rotation) for t in targets]
    return targets


def write_measurements_csv(path, meas: MeasurementSet, *, robot: str, tool=None, unit: str = "m",
                           note: str = "", targets: list[Target] | None = None, joint_map=None) -> None:
    """Measurements in the CSV above: controller joint values (through ``joint_map``, model
    variables -> controller), every target's position, orientations and stated noise."""
    if unit not in POSITION_UNITS:
        raise ValueError(f"units: expected m or mm, got {unit!r}")
    scale = 1.0 / POSITION_UNITS[unit]
    n = meas.q.shape[1]
    K = meas.target_count
    if targets is None:
        targets = [Target("ball", tuple(float(v) for v in (np.zeros(3) if tool is None else tool)))]
    q_out = meas.q_controller if meas.q_controller is not None else (
        meas.q if joint_map is None else joint_map.to_controller(meas.q))
    lines = ["# robodyn calibrate" + (f": {note}" if note else ""),
             f"# robot = {robot}", f"# position_unit = {unit}", "# angle_unit = rad", "# joint_values = controller"]
    if K == 1 and len(targets) == 1:
        lines.append(f"# tool_offset_m = {', '.join(repr(float(v)) for v in targets[0].offset)}")
    else:
        lines.append("# targets = " + "; ".join(f"{t.name}: {', '.join(repr(float(v)) for v in t.offset)}"
                                                for t in targets[:K]))
    oriented = [t.name for t in targets[:K] if t.oriented]
    if oriented:
        lines.append(f"# oriented_targets = {', '.join(oriented)}")
    if meas.load is not None and meas.load.mass > 0:
        lines += [f"# load_mass_kg = {meas.load.mass!r}",
                  f"# load_com_m = {', '.join(repr(float(v)) for v in meas.load.com)}"]
    suffix = (lambda k: "" if K == 1 else str(k + 1))
    cols = ["pose_id"] + [f"q{j + 1}" for j in range(n)]
    has_rot = meas.rotation_mask.any(0)
    stated = not np.allclose(meas.sigma[meas.point_mask], DEFAULT_POSITION_SIGMA, rtol=0, atol=0)
    for k in range(K):
        cols += [f"x{suffix(k)}", f"y{suffix(k)}", f"z{suffix(k)}"] + ([f"sigma{suffix(k)}"] if stated else [])
        if has_rot[k]:
            cols += [f"rx{suffix(k)}", f"ry{suffix(k)}", f"rz{suffix(k)}", f"sigma_rot{suffix(k)}"]
    lines.append(",".join(cols))
    from scipy.spatial.transform import Rotation

    fmt = (lambda v: "" if not np.isfinite(v) else repr(float(v)))
    for i in range(len(meas)):
        vals = [meas.ids[i]] + [repr(float(v)) for v in q_out[i]]
        for k in range(K):
            seen = np.isfinite(meas.points[i, k]).all()
            vals += [fmt(v * scale) for v in meas.points[i, k]]
            if stated:
                vals.append(fmt(meas.sigma[i, k] * scale) if seen else "")
            if has_rot[k]:
                if meas.rotation_mask[i, k]:
                    vals += [repr(float(v)) for v in Rotation.from_matrix(meas.rotation[i, k]).as_rotvec()]
                    vals.append(repr(float(meas.sigma_rotation[i, k])))
                else:
                    vals += ["", "", "", ""]
        lines.append(",".join(vals))
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


def measurement_frame(gm: GeometricModel, meas: MeasurementSet) -> tuple[np.ndarray, float, float]:
    """Best-fit base pose of the robot in the measurement frame, its RMS misfit, and the RMS misfit
    of the nominal base: tells data already in the robot base frame from raw tracker coordinates."""
    mask = meas.point_mask
    if mask.sum() < 3:
        return gm.base_nominal.copy(), 0.0, 0.0  # planar contacts or orientations only: nothing to align
    nominal = all_target_positions(gm, gm.nominal, meas.q)[:, :meas.target_count][mask]
    T, rms_aligned = rigid_alignment(nominal, meas.points[mask])
    rms_nominal = float(np.sqrt(np.mean(np.sum((nominal - meas.points[mask]) ** 2, axis=1))))
    return T @ gm.base_nominal, rms_aligned, rms_nominal
