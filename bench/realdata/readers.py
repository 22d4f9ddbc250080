"""Readers of the corpus's file formats, one per format, each returning robodyn's SampledData.

A run of corpus.py names its reader and gives it a ``source`` mapping:

``csv_columns``: one or several comma-separated files read row by row in step (row k of every file
is sample k). ``files`` maps a short name to a path; ``time``, ``q``, ``qd`` (optional) and ``tau``
say which file and which columns (header names, or 0-based indices with ``header: False``), each
with an optional ``scale`` (one number or one per joint: unit conversions and drive gains).
Without a time column, ``rate_hz`` gives the sample period. ``skip_rows`` drops leading data rows;
``rows: shortest`` keeps the rows all files have (inputs held over each interval have one row fewer).

``mat_struct``: a MATLAB v5 file whose struct ``struct`` holds the time vector ``time`` and one
field per signal, ``layout: joints_by_samples`` when a field is (joints, samples).

Paths are relative to a folder (the cache of fetch.py, ``CACHE/<arm>``). Bad input gets a
ValueError naming the file and the field.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from robodyn.identification.signals import SampledData

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402


def _scaled(values: np.ndarray, scale, where: str) -> np.ndarray:
    if scale is None:
        return values
    s = np.asarray(scale, float)
    if s.ndim and s.shape != (values.shape[1],):
        raise ValueError(f"{where}: scale has {s.size} values for {values.shape[1]} columns")
    return values * s


def _read_table(path: Path, header: bool, skip_rows: int) -> tuple[list[str] | None, np.ndarray]:
    if not path.exists():
        raise ValueError(f"{path}: no such file (run bench/realdata/fetch.py first)")
    names = None
    if header:
        with open(path, newline="") as fh:
            first = next(csv.reader(fh), None)
        if first is None:
            raise ValueError(f"{path}: empty file")
        names = [h.strip() for h in first]
    try:
        table = np.loadtxt(path, delimiter=",", skiprows=int(header) + skip_rows, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{path}: not a numeric table after the header: {exc}") from None
    return names, table


def _column_index(names: list[str] | None, column, path: Path) -> int:
    if isinstance(column, int):
        return column
    if names is None:
        raise ValueError(f"{path}: column {column!r} named but the file has no header (give indices)")
    if column not in names:
        raise ValueError(f"{path}: no column {column!r}; it has {len(names)} columns starting {names[:4]}")
    return names.index(column)


def read_csv_columns(folder: str | Path, source: dict) -> SampledData:
    folder = Path(folder)
    header = bool(source.get("header", True))
    skip = int(source.get("skip_rows", 0))
    tables = {key: (folder / rel, *_read_table(folder / rel, header, skip)) for key, rel in source["files"].items()}
    counts = {key: t.shape[0] for key, (_, _, t) in tables.items()}
    if source.get("rows") == "shortest":  # a file of inputs held over each interval has one row fewer
        n = min(counts.values())
        tables = {key: (path, names, t[:n]) for key, (path, names, t) in tables.items()}
        counts = {key: n for key in counts}
    if len(set(counts.values())) != 1:
        raise ValueError(f"files: rows must pair up one to one, got {counts}")

    def columns(role: str) -> np.ndarray:
        spec = source[role]
        if spec.get("file") not in tables:
            raise ValueError(f"{role}.file: {spec.get('file')!r} is not one of files {list(tables)}")
        path, names, table = tables[spec["file"]]
        idx = [_column_index(names, c, path) for c in spec["columns"]]
        if max(idx) >= table.shape[1]:
            raise ValueError(f"{path}: {role} column {max(idx)} beyond its {table.shape[1]} columns")
        return _scaled(table[:, idx], spec.get("scale"), f"{role}.scale")

    n = next(iter(counts.values()))
    if "time" in source:
        spec = source["time"]
        path, names, table = tables[spec["file"]]
        t = table[:, _column_index(names, spec["column"], path)] * float(spec.get("scale", 1.0))
    elif "rate_hz" in source:
        rate = float(source["rate_hz"])
        if not rate > 0:
            raise ValueError(f"rate_hz: must be > 0, got {rate}")
        t = np.arange(n) / rate
    else:
        raise ValueError("time: give a time column or rate_hz")
    q, tau = columns("q"), columns("tau")
    qd = columns("qd") if "qd" in source else None
    if q.shape != tau.shape or (qd is not None and qd.shape != q.shape):
        raise ValueError(f"q {q.shape}, qd {None if qd is None else qd.shape} and tau {tau.shape} must match")
    return SampledData(t, q, tau, qd)


def read_mat_struct(folder: str | Path, source: dict) -> SampledData:
    import scipy.io

    path = Path(folder) / source["file"]
    if not path.exists():
        raise ValueError(f"{path}: no such file (run bench/realdata/fetch.py first)")
    mat = scipy.io.loadmat(path, squeeze_me=True, struct_as_record=False)
    if source["struct"] not in mat:
        raise ValueError(f"{path}: no variable {source['struct']!r}")
    rec = mat[source["struct"]]

    def field(name: str) -> np.ndarray:
        if name not in getattr(rec, "_fieldnames", ()):
            raise ValueError(f"{path}: struct {source['struct']} has no field {name!r}")
        return np.asarray(getattr(rec, name), float)

    def signal(role: str) -> np.ndarray:
        a = field(source[role]["field"])
        a = a.T if source.get("layout") == "joints_by_samples" else a
        return _scaled(a, source[role].get("scale"), f"{role}.scale")

    t = field(source["time"]).ravel()
    return SampledData(t, signal("q"), signal("tau"), signal("qd") if "qd" in source else None)


READERS = {"csv_columns": read_csv_columns, "mat_struct": read_mat_struct}


def read_run(arm: corpus.Arm, run_name: str, cache: str | Path) -> SampledData:
    """The run ``run_name`` of ``arm`` from ``cache`` (fetch.py's folder; the arm's files under CACHE/<arm>)."""
    run = arm.run(run_name)
    if run.reader not in READERS:
        raise ValueError(f"{arm.name}.{run.name}.reader: unknown {run.reader!r}; readers are {list(READERS)}")
    data = READERS[run.reader](Path(cache) / arm.name, run.source)
    if data.dof != arm.dof:
        raise ValueError(f"{arm.name}.{run.name}: {data.dof} joints read, the arm has {arm.dof}")
    return data


def load_robot(arm: corpus.Arm, cache: str | Path):
    """robodyn's model of ``arm`` from its URDF as published; ValueError with the loader's own message."""
    from robodyn.robot.urdf import model_from_urdf

    if arm.robot_file is None:
        raise ValueError(f"{arm.name}: no URDF ({arm.robot_note})")
    path = Path(cache) / arm.name / arm.robot_file
    if not path.exists():
        raise ValueError(f"{path}: no such file (run bench/realdata/fetch.py first)")
    model = model_from_urdf(path, tip_link=arm.tip_link)
    if model.dof != arm.dof:
        raise ValueError(f"{arm.name}: the URDF's chain has {model.dof} movable joints, the logs {arm.dof}")
    return model
