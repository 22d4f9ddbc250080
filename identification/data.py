"""Loading identification data: CSV (documented convention), NPZ, and daemon recordings.

CSV convention (header row required, comma separated, SI units):

    t, q1..qn, [qd1..qdn], tau1..taun
    t, q1..qn, [qd1..qdn], current1..currentn      (with drive gains: tau_j = k_j * current_j)
    t, qm1..qmn, [qdm1..qdmn], taum1..taumn        (motor side: encoder angles and motor torques)

``t`` in seconds (any origin), ``q`` in rad (m for prismatic joints), ``qd`` in rad/s, ``tau`` in N.m
(N), ``current`` in A. Extra columns are ignored. NPZ files hold arrays with the same names
(``t``, ``q``, optional ``qd``, and ``tau`` or ``current``), each (N, n) except ``t``.

Joint values are the controller's. Given the robot model, they become the model's variables
through its joint map (robot/joint_map.py; torques by conservation of power), and motor-side
columns become joint values through its transmission (robot/transmission.py: q = R^-1 q_motor,
tau = R^T tau_motor, shared motors included).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .signals import SampledData


def _columns(header: list[str], prefix: str, n: int | None) -> list[int] | None:
    idx = {name.strip(): k for k, name in enumerate(header)}
    found = []
    j = 1
    while f"{prefix}{j}" in idx and (n is None or j <= n):
        found.append(idx[f"{prefix}{j}"])
        j += 1
    return found or None


def load_csv(path: str | Path, dof: int | None = None, drive_gains=None, transmission=None) -> SampledData:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ValueError(f"{path}: empty file") from None
    if "t" not in header:
        raise ValueError(f"{path}: missing column 't' (time in seconds); expected header t,q1..qn,tau1..taun")
    q_cols = _columns(header, "q", dof)
    motor_side = q_cols is None and _columns(header, "qm", dof) is not None
    if motor_side:
        return _load_motor_csv(path, header, dof, transmission)
    if q_cols is None:
        raise ValueError(f"{path}: missing joint position columns q1..qn (or motor-side qm1..qmn)")
    n = len(q_cols)
    if dof is not None and n != dof:
        raise ValueError(f"{path}: found {n} position columns q1..q{n} but the robot has {dof} joints")
    qd_cols = _columns(header, "qd", n)
    tau_cols = _columns(header, "tau", n)
    cur_cols = _columns(header, "current", n)
    for name, cols in (("qd", qd_cols), ("tau", tau_cols), ("current", cur_cols)):
        if cols is not None and len(cols) != n:
            raise ValueError(f"{path}: {len(cols)} {name} columns for {n} joints; need {name}1..{name}{n}")
    if tau_cols is None and cur_cols is None:
        raise ValueError(f"{path}: missing torque columns tau1..tau{n} (or current1..current{n} with --drive-gains)")
    if tau_cols is None and drive_gains is None:
        raise ValueError(f"{path}: has current columns but no torque; pass drive gains (N.m/A per joint) to convert")
    try:
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{path}: non-numeric value in the data rows ({exc})") from exc
    if data.shape[1] != len(header):
        raise ValueError(f"{path}: rows have {data.shape[1]} values but the header names {len(header)} columns")
    t = data[:, header.index("t")]
    q = data[:, q_cols]
    qd = data[:, qd_cols] if qd_cols else None
    if tau_cols is not None:
        tau = data[:, tau_cols]
    else:
        gains = np.asarray(drive_gains, float)
        if gains.shape != (n,):
            raise ValueError(f"drive_gains: expected {n} values (N.m/A per joint), got {gains.shape}")
        tau = data[:, cur_cols] * gains
    return SampledData(t, q, tau, qd)


def _load_motor_csv(path: Path, header: list[str], dof: int | None, transmission) -> SampledData:
    """t, qm1..qmn, [qdm1..qdmn], taum1..taumn: motor encoder angles and motor torques."""
    if transmission is None:
        raise ValueError(f"{path}: motor-side columns (qm, taum) need the robot model's transmission (--robot)")
    qm = _columns(header, "qm", dof)
    n = len(qm)
    tm = _columns(header, "taum", n)
    qdm = _columns(header, "qdm", n)
    if tm is None or len(tm) != n:
        raise ValueError(f"{path}: motor-side data need taum1..taum{n} beside qm1..qm{n}")
    if transmission.dof != n:
        raise ValueError(f"{path}: {n} motors but the robot's transmission drives {transmission.dof} joints")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    t = data[:, header.index("t")]
    q = transmission.joint_positions(data[:, qm])
    qd = transmission.joint_positions(data[:, qdm]) if qdm else None
    return SampledData(t, q, transmission.joint_torques(data[:, tm]), qd)


def to_model_variables(data: SampledData, model) -> SampledData:
    """Controller joint values (and their torques) as the model's variables, by its joint map."""
    jm = model.joint_map
    if jm.is_identity:
        return data
    return SampledData(data.t, jm.to_model(data.q), jm.torque_to_model(data.tau),
                       None if data.qd is None else jm.velocity_to_model(data.qd),
                       None if data.qdd is None else jm.velocity_to_model(data.qdd), trajectory=data.trajectory)


def load_npz(path: str | Path, drive_gains=None) -> SampledData:
    with np.load(path) as z:
        missing = [k for k in ("t", "q") if k not in z]
        if missing:
            raise ValueError(f"{path}: missing array(s) {missing}")
        if "tau" in z:
            tau = z["tau"]
        elif "current" in z and drive_gains is not None:
            tau = z["current"] * np.asarray(drive_gains, float)
        else:
            raise ValueError(f"{path}: missing array 'tau' (or 'current' with drive gains)")
        return SampledData(z["t"], z["q"], tau, z["qd"] if "qd" in z else None)


def recording_dataset(rec, phase: str = "execute") -> SampledData:
    """The samples of one phase of a daemon recording (default: the trajectory itself, without the
    move to the start and the settling), with robot time, measured q, qd and joint torque."""
    mask = rec.phase_mask(phase)
    if not mask.any():
        raise ValueError(f"recording {rec.path}: no samples in phase {phase!r}"
                         + (" (the file was cut short)" if rec.truncated else ""))
    missing = [s for s in ("q", "qd", "tau") if s not in rec.signals]
    if missing:
        raise ValueError(f"recording {rec.path}: missing signal(s) {missing}; it has {list(rec.signals)}")
    lost = rec.lost
    if lost:
        import warnings

        warnings.warn(f"recording {rec.path}: {lost} samples were lost; timestamps keep the gaps visible",
                      stacklevel=2)
    return SampledData(rec.robot_time[mask], rec.signal("q")[mask], rec.signal("tau")[mask], rec.signal("qd")[mask],
                       trajectory=rec.meta.get("trajectory"))


def load_dataset(ref: str | Path, dof: int | None = None, drive_gains=None, model=None) -> SampledData:
    """A CSV, NPZ or daemon recording (.mcap) as :class:`SampledData`; with ``model``, in its
    joint variables (controller values through its joint map, motor-side CSVs through its
    transmission)."""
    path = Path(ref)
    suffix = path.suffix.lower()
    if model is not None:
        dof = model.dof
    if suffix == ".csv":
        data = load_csv(path, dof, drive_gains, None if model is None else model.transmission)
    elif suffix == ".npz":
        data = load_npz(path, drive_gains)
    elif suffix == ".mcap":
        from robodyn.daemon.recording import load_recording  # the daemon's loader is the one reader

        data = recording_dataset(load_recording(path))
    elif not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    else:
        raise ValueError(f"{path}: unknown data format {suffix!r}; expected .csv, .npz or .mcap")
    if dof is not None and data.dof != dof:
        raise ValueError(f"{path}: {data.dof} joints but the robot has {dof}")
    return data if model is None else to_model_variables(data, model)

