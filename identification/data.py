"""Loading identification data: CSV (documented convention), NPZ, and daemon recordings.

CSV convention (header row required, comma separated, SI units):

    t, q1..qn, [qd1..qdn], tau1..taun
    t, q1..qn, [qd1..qdn], current1..currentn      (with drive gains: tau_j = k_j * current_j)
    t, qm1..qmn, [qdm1..qdmn], taum1..taumn        (motor side: encoder angles and motor torques)

``t`` in seconds (any origin), ``q`` in rad (m for prismatic joints), ``qd`` in rad/s, ``tau`` in N.m
(N), ``current`` in A. An optional ``phase`` column (a daemon recording's export: 2 = execute)
keeps only the execute phase, as the .mcap path does; without it every row is fitted, with a note.
Extra columns are ignored. NPZ files hold arrays with the same names
(``t``, ``q``, optional ``qd``, ``tau`` or ``current``, and ``phase``), each (N, n) except ``t``
and ``phase``.

Joint values are the controller's. Given the robot model, they become the model's variables
through its joint map (robot/joint_map.py; torques by conservation of power), and motor-side
columns become joint values through its transmission (robot/transmission.py: q = R^-1 q_motor,
tau = R^T tau_motor, shared motors included).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
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
    q_cols = _columns(header, "q", None)  # every q column: a CSV with more joints than the robot is refused
    motor_side = q_cols is None and _columns(header, "qm", dof) is not None
    if motor_side:
        return _load_motor_csv(path, header, dof, transmission)
    if q_cols is None:
        raise ValueError(f"{path}: missing joint position columns q1..qn (or motor-side qm1..qmn)")
    n = len(q_cols)
    if dof is not None and n != dof:
        raise ValueError(f"{path}: {n} joints (columns q1..q{n}) but the robot has {dof}; pass the matching --robot")
    qd_cols = _columns(header, "qd", n)
    tau_cols = _columns(header, "tau", n)
    cur_cols = _columns(header, "current", n)
    for name, cols in (("qd", qd_cols), ("tau", tau_cols), ("current", cur_cols)):
        if cols is not None and len(cols) != n:
            raise ValueError(f"{path}: {len(cols)} {name} columns for {n} joints; need {name}1..{name}{n}")
    if tau_cols is None and cur_cols is None:
        raise ValueError(f"{path}: missing torque columns tau1..tau{n} (or current1..current{n} with --drive-gains)")
    gains = None
    if tau_cols is None:  # checked before the rows are read: a wrong gain is said at once
        gains = checked_drive_gains(drive_gains, n, f"{path}: columns current1..current{n}")
    elif drive_gains is not None:
        _gains_ignored(path, f"torque columns tau1..tau{n}")
    data = _excitation_rows(path, header, _numeric_rows(path, header))
    t = data[:, header.index("t")]
    q = data[:, q_cols]
    qd = data[:, qd_cols] if qd_cols else None
    tau = data[:, tau_cols] if tau_cols is not None else data[:, cur_cols] * gains
    return SampledData(t, q, tau, qd)


def checked_drive_gains(drive_gains, n: int, currents: str) -> np.ndarray:
    """The current-to-torque gains (N.m/A, one per joint) that turn the motor currents named by
    ``currents`` into joint torques. A current log without them is refused: one run cannot fix their
    scale, which the inertias share (k i = W theta holds for c k and c theta alike), so they come
    from the drive's data sheet or from runs without and with a known payload (drive_gains.py)."""
    if drive_gains is None:
        raise ValueError(f"{currents} are motor currents (A) and there is no torque; give the drive gains, "
                         f"N.m/A for each of the {n} joints (--drive-gains K1,...,K{n}; `robodyn drive-gains` "
                         "estimates them from runs without and with a known payload)")
    gains = np.asarray(drive_gains, float).reshape(-1)
    if gains.size != n:
        raise ValueError(f"drive_gains: expected {n} values (N.m/A, one per joint), got {gains.size}")
    bad = np.flatnonzero(~np.isfinite(gains) | (gains == 0.0))
    if bad.size:
        raise ValueError(f"drive_gains: joint {bad[0] + 1}'s gain must be a finite, nonzero number of N.m/A, "
                         f"got {gains[bad[0]]:g}")
    return gains


def _gains_ignored(where, torque: str) -> None:
    import warnings

    warnings.warn(f"{where}: drive gains not used: it has {torque}, which are used as they are", stacklevel=3)


def _excitation_rows(path: Path, header: list[str], data: np.ndarray) -> np.ndarray:
    """The rows a daemon recording's identification uses: its execute phase. A recording exported
    as CSV (``robodyn export``) carries the phase code of every sample (0 idle,
    1 move_to_start, 2 execute, 3 settle, 4 stopping); the move to the start and the settle are
    not excitation, and the .mcap path leaves them out too. A CSV without a phase column is used
    whole, and says so once."""
    from robodyn.recording.samples import PHASE_EXECUTE  # the recording's own phase codes

    if "phase" not in header:
        import warnings

        warnings.warn(f"{path}: no 'phase' column, so every row is used (a daemon recording's CSV export "
                      "carries one and only its execute phase is used)", stacklevel=3)
        return data
    keep = data[:, header.index("phase")] == PHASE_EXECUTE
    if not keep.any():
        raise ValueError(f"{path}: column 'phase' has no row in the execute phase (code {PHASE_EXECUTE}); "
                         "nothing to identify")
    return data[keep]


def _load_motor_csv(path: Path, header: list[str], dof: int | None, transmission) -> SampledData:
    """t, qm1..qmn, [qdm1..qdmn], taum1..taumn: motor encoder angles and motor torques."""
    if transmission is None:
        raise ValueError(f"{path}: motor-side columns (qm, taum) need the robot model's transmission (--robot)")
    qm = _columns(header, "qm", None)
    n = len(qm)
    tm = _columns(header, "taum", n)
    qdm = _columns(header, "qdm", n)
    if tm is None or len(tm) != n:
        raise ValueError(f"{path}: motor-side data need taum1..taum{n} beside qm1..qm{n}")
    if transmission.dof != n:
        raise ValueError(f"{path}: {n} motors but the robot's transmission drives {transmission.dof} joints")
    data = _excitation_rows(path, header, np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2))
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
            if drive_gains is not None:
                _gains_ignored(path, "an array 'tau'")
        elif "current" in z:
            current = np.asarray(z["current"], float)
            n = current.shape[1] if current.ndim == 2 else 1
            tau = current * checked_drive_gains(drive_gains, n, f"{path}: array 'current'")
        else:
            raise ValueError(f"{path}: missing array 'tau' (or 'current' with drive gains)")
        data = SampledData(z["t"], z["q"], tau, z["qd"] if "qd" in z else None)
        if "phase" in z:  # a daemon recording's NPZ export: its execute phase, as for .mcap and CSV
            from robodyn.recording.samples import PHASE_EXECUTE

            keep = np.asarray(z["phase"]) == PHASE_EXECUTE
            if not keep.any():
                raise ValueError(f"{path}: array 'phase' has no sample in the execute phase (code {PHASE_EXECUTE})")
            data = data.select(keep)
        return data


IDENTIFICATION_SIGNALS = ("q", "qd", "tau")  # what recording_dataset reads of a daemon recording


def recording_dataset(rec, phase: str = "execute") -> SampledData:
    """The samples of one phase of a daemon recording (default: the trajectory itself, without the
    move to the start and the settling), with robot time, measured q, qd and joint torque."""
    first, stop, count = rec.phase_span(phase)
    if not count:
        raise ValueError(f"recording {rec.path}: no samples in phase {phase!r}"
                         + (" (the file was cut short)" if rec.truncated else ""))
    missing = [s for s in IDENTIFICATION_SIGNALS if s not in rec.signals]
    if missing:
        raise ValueError(f"recording {rec.path}: missing signal(s) {missing}; it has {list(rec.signals)}")
    lost = rec.lost
    if lost:
        import warnings

        warnings.warn(f"recording {rec.path}: {lost} samples were lost; timestamps keep the gaps visible",
                      stacklevel=2)
    # the phase is one stretch (as the daemon records it): views, no copies (of a mapped file: its pages)
    pick = slice(first, stop) if stop - first == count else rec.phase_mask(phase)
    return SampledData(rec.robot_time[pick], rec.signal("q")[pick], rec.signal("tau")[pick], rec.signal("qd")[pick],
                       trajectory=rec.meta.get("trajectory"))


def load_dataset(ref: str | Path, dof: int | None = None, drive_gains=None, model=None,
                 topic: str | None = None) -> SampledData:
    """A CSV, NPZ, daemon recording (.mcap) or ROS 2 bag (a rosbag2 directory, its .mcap or .db3
    file; identification/rosbag.py) as :class:`SampledData`; with ``model``, in its joint variables
    (controller values through its joint map, motor-side CSVs through its transmission). ``topic``
    names a bag's JointState topic (default: its only one); on a daemon recording it reads that
    ROS 2 channel instead of the lossless one."""
    from .rosbag import is_bag, load_bag

    path = Path(ref)
    suffix = path.suffix.lower()
    if model is not None:
        dof = model.dof
    if is_bag(path, topic):
        data = (load_bag(path, None, topic) if model is None
                else load_bag(path, model.log_names, topic, model_names=model.joint_names))
    elif topic is not None:
        raise ValueError(f"{path}: --topic applies to ROS 2 bags and .mcap recordings, not to {suffix or 'this'} files")
    elif suffix == ".csv":
        data = load_csv(path, dof, drive_gains, None if model is None else model.transmission)
    elif suffix == ".npz":
        data = load_npz(path, drive_gains)
    elif suffix == ".mcap":
        from robodyn.recording import load_recording  # the daemon's loader is the one reader

        # decoded to unnamed temporary files and mapped: identification streams them page by page,
        # so memory does not grow with the recording's length
        data = recording_dataset(load_recording(path, signals=IDENTIFICATION_SIGNALS, on_disk=True))
        if drive_gains is not None:
            _gains_ignored(path, "the torque the daemon recorded (a UR driver's: its drive_gains times the current)")
    elif not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    else:
        raise ValueError(f"{path}: unknown data format {suffix!r}; expected .csv, .npz, .mcap or a ROS 2 bag "
                         "(a rosbag2 directory or its .db3 file)")
    if dof is not None and data.dof != dof:
        raise ValueError(f"{path}: {data.dof} joints but the robot has {dof}")
    return data if model is None else to_model_variables(data, model)


def save_dataset(data: SampledData, path: str | Path) -> Path:
    """Write samples in the documented convention: .csv (header t, q1..qn, [qd1..qdn], tau1..taun)
    or .npz (arrays t, q, [qd], tau); :func:`load_dataset` reads them back unchanged."""
    path = Path(path)
    arrays = {"t": data.t, "q": data.q, **({"qd": data.qd} if data.qd is not None else {}), "tau": data.tau}
    if path.suffix.lower() == ".npz":
        np.savez_compressed(path, **arrays)
        return path
    names = ["t"] + [f"{stem}{j + 1}" for stem in arrays if stem != "t" for j in range(data.dof)]
    table = np.column_stack([arrays["t"]] + [arrays[k] for k in arrays if k != "t"])
    np.savetxt(path, table, delimiter=",", header=",".join(names), comments="", fmt="%.17g")
    return path


# --------------------------------------------------------------------------- flexible-joint recordings
#
# Chen et al. 2021's stepwise identification (identification.stepwise_recorded.identify_recorded) needs more
# than one torque per joint: the link encoder, the joint torque sensor and, where the arm has them,
# the motor encoder and the motor current. The same three containers carry them:
#
#   CSV  t, q1..qn, tau1..taun, [qm1..qmn | theta1..thetan], [current1..currentn | taum1..taumn],
#        [qd1..qdn], [qdm1..qdmn]
#   NPZ  arrays with the same stems (t (N,), the others (N, n))
#   MCAP a daemon recording with signals q, tau and, where the driver streams them, theta (Franka:
#        motor position referred to the link side), dtheta, current, qd
#
# ``qm`` is the motor encoder at the motor shaft (a rigid joint reads qm = R q with the model's
# transmission R); ``theta`` is the same angle referred to the link side (theta = R^-1 qm), as
# Franka reports it; one of the two at most. The drive side is the motor current (A) or the motor
# torque at the shaft (N.m). Without motor positions the stiffness and motor sub-systems are not
# identified; without the drive side the motor sub-system is not.

FLEXIBLE_COLUMNS = {
    "t": "time, s (strictly increasing; gaps are kept and never interpolated)",
    "q": "link position (link-side encoder, after the spring), rad",
    "tau": "joint torque sensor, N.m, as measured (its zero offset included)",
    "qm": "motor position at the motor shaft (before the reduction), rad",
    "theta": "motor position referred to the link side (R^-1 qm, Franka's theta), rad",
    "current": "motor current, A",
    "taum": "motor torque at the motor shaft, N.m (instead of current)",
    "qd": "measured link velocity, rad/s",
    "qdm": "measured motor velocity at the motor shaft, rad/s",
}
FLEXIBLE_REQUIRED = ("t", "q", "tau")


@dataclass
class FlexibleLog:
    """One recording of a flexible-joint arm as its sensors reported it (controller joint values;
    motor values at the motor shafts). Arrays are (N, n) except ``t`` (N,); ``qm``, the drive side
    (``current`` or ``taum``) and the velocities are optional."""

    t: np.ndarray
    q: np.ndarray
    tau: np.ndarray
    qm: np.ndarray | None = None
    current: np.ndarray | None = None
    taum: np.ndarray | None = None
    qd: np.ndarray | None = None
    qdm: np.ndarray | None = None
    source: str = "recording"

    def __post_init__(self):
        where = self.source
        self.t = np.asarray(self.t, float)
        if self.t.ndim != 1 or self.t.size < 2:
            raise ValueError(f"{where}: t must be a 1-D time vector of at least 2 samples, got shape {self.t.shape}")
        if not np.all(np.isfinite(self.t)):
            raise ValueError(f"{where}: t holds NaN or infinite timestamps")
        steps = np.diff(self.t)
        if np.any(steps <= 0):
            k = int(np.argmax(steps <= 0)) + 1
            raise ValueError(f"{where}: t must strictly increase (sample {k}: {self.t[k]} after {self.t[k - 1]})")
        N = self.t.size
        self.q = np.asarray(self.q, float)
        if self.q.ndim != 2 or self.q.shape[0] != N:
            raise ValueError(f"{where}: q must be (samples, joints) = ({N}, n), got {self.q.shape}")
        n = self.q.shape[1]
        if self.current is not None and self.taum is not None:
            raise ValueError(f"{where}: give current or taum, not both")
        if self.qdm is not None and self.qm is None:
            raise ValueError(f"{where}: qdm (motor velocity) without qm (motor position)")
        for name in ("q", "tau", "qm", "current", "taum", "qd", "qdm"):
            arr = getattr(self, name)
            if arr is None:
                continue
            arr = np.asarray(arr, float)
            if arr.shape != (N, n):
                raise ValueError(f"{where}: {name} must have shape ({N}, {n}) like q, got {arr.shape}")
            bad = ~np.isfinite(arr)
            if bad.any():
                row, col = (int(x) for x in np.argwhere(bad)[0])
                raise ValueError(f"{where}: {name}{col + 1} is NaN or infinite at sample {row} (t={self.t[row]:.6g} s)")
            setattr(self, name, arr)

    @property
    def dof(self) -> int:
        return int(self.q.shape[1])

    @property
    def count(self) -> int:
        return int(self.t.size)

    @property
    def drive(self) -> str | None:
        """'current', 'taum' or None (no drive-side signal)."""
        return "current" if self.current is not None else ("taum" if self.taum is not None else None)

    def arrays(self) -> dict:
        return {k: getattr(self, k) for k in ("t", "q", "tau", "qm", "current", "taum", "qd", "qdm")
                if getattr(self, k) is not None}


def _motor_from_link_side(theta: np.ndarray, transmission, where) -> np.ndarray:
    if transmission is None:
        raise ValueError(f"{where}: theta (motor position on the link side) needs the robot model's transmission "
                         "to become motor-shaft angles (--robot)")
    return np.asarray(theta, float) @ np.asarray(transmission.matrix, float).T


def _flexible_from(arrays: dict, where, n: int, transmission) -> FlexibleLog:
    """Checks common to every container, then the log (theta -> qm through the transmission)."""
    for key in FLEXIBLE_REQUIRED:
        if arrays.get(key) is None:
            stems = f"{key}1..{key}{n}" if key != "t" else "t"
            raise ValueError(f"{where}: missing column {key if key == 't' else key + '1'!r} "
                             f"({FLEXIBLE_COLUMNS[key]}); a flexible-joint recording needs t, q1..q{n}, "
                             f"tau1..tau{n} ({stems} absent)")
    if arrays.get("qm") is not None and arrays.get("theta") is not None:
        raise ValueError(f"{where}: both qm (motor shaft) and theta (link side) motor positions; keep one")
    if arrays.get("current") is not None and arrays.get("taum") is not None:
        raise ValueError(f"{where}: both current and taum columns; keep the measured one")
    qm = arrays.get("qm")
    qdm = arrays.get("qdm")
    if arrays.get("theta") is not None:
        qm = _motor_from_link_side(arrays["theta"], transmission, where)
        if arrays.get("dtheta") is not None:
            qdm = _motor_from_link_side(arrays["dtheta"], transmission, where)
    return FlexibleLog(arrays["t"], arrays["q"], arrays["tau"], qm, arrays.get("current"), arrays.get("taum"),
                       arrays.get("qd"), qdm, source=str(where))


def load_flexible_csv(path: str | Path, dof: int | None = None, transmission=None) -> FlexibleLog:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    with open(path, newline="") as fh:
        try:
            header = [h.strip() for h in next(csv.reader(fh))]
        except StopIteration:
            raise ValueError(f"{path}: empty file") from None
    if "t" not in header:
        raise ValueError(f"{path}: missing column 't' ({FLEXIBLE_COLUMNS['t']})")
    q_cols = _columns(header, "q", dof)
    if q_cols is None:
        raise ValueError(f"{path}: missing column 'q1' ({FLEXIBLE_COLUMNS['q']})")
    n = len(q_cols) if dof is None else dof
    cols = {}
    for stem in FLEXIBLE_COLUMNS:
        if stem == "t":
            continue
        found = _columns(header, stem, n)
        if found is not None and len(found) != n:
            raise ValueError(f"{path}: missing column '{stem}{len(found) + 1}' ({FLEXIBLE_COLUMNS[stem]}); "
                             f"{stem}1..{stem}{n} go together")
        cols[stem] = found
    data = _numeric_rows(path, header)
    arrays = {stem: None if c is None else data[:, c] for stem, c in cols.items()}
    arrays["t"] = data[:, header.index("t")]
    return _flexible_from(arrays, path, n, transmission)


def load_flexible_npz(path: str | Path, transmission=None) -> FlexibleLog:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    with np.load(path) as z:
        arrays = {k: np.array(z[k]) for k in list(FLEXIBLE_COLUMNS) + ["dtheta"] if k in z}
    n = arrays["q"].shape[1] if "q" in arrays and np.ndim(arrays["q"]) == 2 else 0
    return _flexible_from(arrays, path, n, transmission)


def flexible_recording(rec, transmission=None, phase: str = "execute") -> FlexibleLog:
    """The samples of one phase of a daemon recording as a flexible-joint log: q, tau (the joint
    torque sensor: Franka's tau_J) and, where streamed, theta / dtheta (Franka) or qm / qdm, current."""
    mask = rec.phase_mask(phase)
    if not mask.any():
        raise ValueError(f"recording {rec.path}: no samples in phase {phase!r}"
                         + (" (the file was cut short)" if rec.truncated else ""))
    missing = [s for s in FLEXIBLE_REQUIRED[1:] if s not in rec.signals]
    if missing:
        raise ValueError(f"recording {rec.path}: missing signal {missing[0]!r} ({FLEXIBLE_COLUMNS[missing[0]]}); "
                         f"it has {list(rec.signals)}")
    arrays = {k: rec.signal(k)[mask] for k in ("q", "tau", "qm", "theta", "dtheta", "current", "taum", "qd", "qdm")
              if k in rec.signals}
    arrays["t"] = rec.robot_time[mask]
    return _flexible_from(arrays, f"recording {rec.path}", arrays["q"].shape[1], transmission)


def load_flexible(ref, model=None) -> FlexibleLog:
    """A flexible-joint recording (.csv, .npz or a daemon's .mcap; a FlexibleLog is returned as is),
    checked against ``model``'s joint count; ``theta`` columns become motor-shaft angles through its
    transmission."""
    if isinstance(ref, FlexibleLog):
        log = ref
    else:
        path = Path(ref)
        transmission = None if model is None else model.transmission
        suffix = path.suffix.lower()
        if suffix == ".csv":
            log = load_flexible_csv(path, None if model is None else model.dof, transmission)
        elif suffix == ".npz":
            log = load_flexible_npz(path, transmission)
        elif suffix == ".mcap":
            from robodyn.recording import load_recording  # the daemon's loader is the one reader

            log = flexible_recording(load_recording(path), transmission)
        elif not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        else:
            raise ValueError(f"{path}: unknown data format {suffix!r}; expected .csv, .npz or .mcap")
    if model is not None and log.dof != model.dof:
        raise ValueError(f"{log.source}: {log.dof} joints but the robot has {model.dof}")
    return log


def save_flexible(log: FlexibleLog, path: str | Path) -> Path:
    """Write a flexible-joint log as .csv (header t, q.., tau.., [qm..], [current.. | taum..], [qd..],
    [qdm..]) or .npz (the same stems as arrays)."""
    path = Path(path)
    arrays = log.arrays()
    if path.suffix.lower() == ".npz":
        np.savez_compressed(path, **arrays)
        return path
    if path.suffix.lower() != ".csv":
        raise ValueError(f"{path}: expected a .csv or .npz file name")
    names, blocks = ["t"], [arrays.pop("t")[:, None]]
    for stem, arr in arrays.items():
        names += [f"{stem}{j + 1}" for j in range(arr.shape[1])]
        blocks.append(arr)
    np.savetxt(path, np.hstack(blocks), delimiter=",", header=",".join(names), comments="", fmt="%.12g")
    return path


def _numeric_rows(path, header: list) -> np.ndarray:
    """The CSV's data rows as a (rows, columns) array; one clear error for text or ragged rows."""
    try:
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{path}: non-numeric value in the data rows ({exc})") from exc
    if data.shape[1] != len(header):
        raise ValueError(f"{path}: rows have {data.shape[1]} values but the header names {len(header)} columns")
    return data


def drive_gain_run(path: str | Path, model, payload: dict | None = None) -> dict:
    """The trajectory phase of a daemon recording as a drive-gain run (needs the motor current):
    t, q, qd, qdd (by the timestamps), current, the payload it carried and the trajectory it ran."""
    from robodyn.recording import load_recording

    if not Path(path).is_file():
        raise FileNotFoundError(f"{'loaded' if payload else 'unloaded'} recording {path}: no such file")
    rec = load_recording(path)
    if "current" not in rec.signals:
        raise ValueError(f"{path}: no 'current' signal (it has {list(rec.signals)}); drive gains need motor "
                         f"currents, which the UR driver records")
    mask = rec.phase_mask("execute")
    if not mask.any():
        raise ValueError(f"{path}: no samples in the execute phase")
    qd = rec.signal("qd")[mask]
    run = {"t": rec.robot_time[mask], "q": rec.signal("q")[mask], "qd": qd, "current": rec.signal("current")[mask]}
    # the difference method takes accelerations as given; by the timestamps, so a lost sample
    # (a longer step) does not distort them
    run["qdd"] = np.gradient(qd, run["t"], axis=0)
    if rec.signal("q").shape[1] != model.dof:
        raise ValueError(f"{path}: {rec.signal('q').shape[1]} joints, but {model.name} has {model.dof}")
    if payload:
        run["payload"] = payload
    run["trajectory"] = rec.meta.get("trajectory")
    return run

