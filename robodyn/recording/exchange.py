"""Recordings to and from other tools: CSV and NPZ export, and the import of an external CSV log
as a :class:`~robodyn.recording.reader.Recording`."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np

from . import samples as P
from .reader import Recording


def export_csv(rec: Recording, path: str | Path) -> Path:
    """CSV with header ``t,seq,phase,<columns>``; t is robot time from the first sample, SI units."""
    path = Path(path)
    cols = rec.columns()
    data = np.column_stack([rec.t] + [rec.signals[n] for n in rec.signals]) if rec.samples else np.zeros((0, 1 + len(cols)))
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t", "seq", "phase"] + cols)
        for i in range(rec.samples):
            row = data[i]
            w.writerow([repr(float(row[0])), int(rec.seq[i]), int(rec.phase[i])] + [repr(float(v)) for v in row[1:]])
    return path


def export_npz(rec: Recording, path: str | Path) -> Path:
    """NPZ with arrays t, seq, robot_time, host_time_ns, phase, one (N, width) array per signal,
    ``units_json`` and ``meta_json`` (the recording's self-description)."""
    path = Path(path)
    arrays = {"t": rec.t, "seq": rec.seq, "robot_time": rec.robot_time, "host_time_ns": rec.host_time_ns,
              "phase": rec.phase}
    for name, arr in rec.signals.items():
        arrays[name] = np.ascontiguousarray(arr)
    arrays["units_json"] = np.array(json.dumps(rec.units))
    arrays["meta_json"] = np.array(json.dumps(rec.meta))
    np.savez_compressed(path, **arrays)
    return path


CSV_UNITS = {"q": "rad", "qd": "rad/s", "tau": "N.m"}


def import_csv(path: str | Path) -> Recording:
    """Read an external log. Column convention (header row required, SI units, '#' lines skipped):

    ``t`` (s, strictly increasing), ``q1..qn`` (rad), optional ``qd1..qdn`` (rad/s), ``tau1..taun``
    (N.m). n is the number of q columns; qd is all-or-nothing; other columns are ignored.
    """
    path = Path(path)
    text = "\n".join(line for line in path.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#"))
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise ValueError(f"{path}: empty CSV file") from None
    index = {h: i for i, h in enumerate(header)}
    if "t" not in index:
        raise ValueError(f"{path}: no 't' column; expected columns t, q1..qn, [qd1..qdn], tau1..taun")
    n = 0
    while f"q{n + 1}" in index:
        n += 1
    if n == 0:
        raise ValueError(f"{path}: no q1 column; expected columns t, q1..qn, [qd1..qdn], tau1..taun")
    for name in ("tau",):
        missing = [f"{name}{i + 1}" for i in range(n) if f"{name}{i + 1}" not in index]
        if missing:
            raise ValueError(f"{path}: {n} joints (q1..q{n}) but column(s) {missing} missing")
    has_qd = [f"qd{i + 1}" in index for i in range(n)]
    if any(has_qd) and not all(has_qd):
        raise ValueError(f"{path}: qd columns must be all of qd1..qd{n} or none")
    rows = []
    for lineno, row in enumerate(reader, start=2):
        if len(row) != len(header):
            raise ValueError(f"{path}: row {lineno} has {len(row)} fields, header has {len(header)}")
        try:
            rows.append([float(v) for v in row])
        except ValueError:
            raise ValueError(f"{path}: row {lineno} has a non-numeric value") from None
    data = np.array(rows, dtype=float).reshape(-1, len(header))
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{path}: NaN or infinite values")
    t = data[:, index["t"]]
    if np.any(np.diff(t) <= 0):
        k = int(np.argmax(np.diff(t) <= 0)) + 2
        raise ValueError(f"{path}: t must strictly increase (row {k + 1})")
    signals = {"q": data[:, [index[f"q{i + 1}"] for i in range(n)]]}
    if all(has_qd):
        signals["qd"] = data[:, [index[f"qd{i + 1}"] for i in range(n)]]
    signals["tau"] = data[:, [index[f"tau{i + 1}"] for i in range(n)]]
    units = {k: CSV_UNITS[k] for k in signals}
    ignored = [h for h in header if h != "t" and not any(h == f"{s}{i + 1}" for s in signals for i in range(n))]
    meta = {"format": "robodyn.csv-import", "source": str(path), "ignored_columns": ignored,
            "driver": {"signals": [{"name": k, "width": n, "unit": units[k]} for k in signals]}}
    N = t.shape[0]
    return Recording(str(path), meta, np.arange(N, dtype=np.uint64), t, np.zeros(N, np.int64),
                     np.full(N, P.PHASE_EXECUTE, np.uint8), signals, units)
