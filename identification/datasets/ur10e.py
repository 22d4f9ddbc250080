"""The UR10e logs of the public dynamic_calibration repository (Mamedov & Mikhel, "Practical Aspects
of Model-Based Collision Detection", Frontiers in Robotics and AI 7:571574, 2020).

The repository (https://github.com/shamilmamedov/dynamic_calibration) carries no licence file, so
none of its data ship with robodyn: :func:`locate` reads them from a directory the user gives, a
checkout, a bare clone (read through ``git``) or a plain folder holding the CSV files.

Log layout (the repository's ``utils/data_processing/parseURData.m``): comma-separated numbers, no
header, one row per RTDE sample at about 94 Hz (median period 10-11 ms, irregular):

=========  ===========================================================
column     quantity (1-based, as in parseURData.m)
=========  ===========================================================
1          controller time, s (parseURData subtracts the first kept row's)
2-7        joint positions q, rad
8-13       joint velocities qd, rad/s
14-19      motor currents i, A
20-25      target currents, A (logs from 2019-09-27 15:11 on; the two earlier logs stop at 19 columns)
26-31      target torques, N.m (same logs)
=========  ===========================================================

Torque = motor current x drive gain (the repository's ``buildObservationMatrices`` in
``estimate_dynamic_params.m`` and ``validate_dynamic_params.m``: ``diag(drvGains) * i``).
:data:`DRIVE_GAINS` are the gains the repository stores in ``UR10E_parameters.txt`` (``drvGains``),
the result of its ``estimate_drive_gains(baseQR, 'PC-OLS')`` (a loaded and an unloaded 50 s run,
payload 2.805 kg, with the constraint K1 > 10 that is active: K1 = 10.0000). ``main.m`` names an
alternative in a comment, gains "found in the paper by De Luca": :data:`DE_LUCA_GAINS`.

Trimming: the repository keeps rows ``idxs(1):idxs(2)`` (1-based, inclusive) of each log it uses;
:data:`TRIMMED_ROWS` holds those ``main.m`` and ``estimate_drive_gains.m`` give. The log
``ur-20_02_19_15harm50secLoad.csv`` is corrupt from its second row on (:func:`read_log` says so).
"""

from __future__ import annotations

import io
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robodyn.errors import UserError
from robodyn.identification.signals import SampledData

CLONE_URL = "https://github.com/shamilmamedov/dynamic_calibration"
DOF = 6

# UR10E_parameters.txt, drvGains: the repository's own PC-OLS estimate (estimate_drive_gains.m), A -> N.m
DRIVE_GAINS = np.array([10.0000, 10.6956, 8.4566, 9.0029, 9.4800, 10.1232])
# main.m, commented out: "Or use those found in the paper by De Luca"
DE_LUCA_GAINS = np.array([14.87, 13.26, 11.13, 10.62, 11.03, 11.47])

# Rows the repository keeps (1-based, inclusive): main.m (identification and validation) and
# estimate_drive_gains.m (the unloaded/loaded pair)
TRIMMED_ROWS = {
    "ur-20_02_10-30sec_12harm.csv": (635, 3510),  # main.m's identification log
    "ur-20_02_12-40sec_12harm.csv": (500, 4460),
    "ur-20_02_05-20sec_8harm.csv": (320, 2310),
    "ur-20_02_12-50sec_12harm.csv": (355, 5090),
    "ur-20_01_17-ptp_10_points.csv": (700, 4200),  # main.m's validation log
    "ur-20_02_19_14harm50sec.csv": (195, 4966),
    "ur-20_02_19_14harm50secLoad.csv": (308, 5071),
}
IDENTIFICATION_LOG = "ur-20_02_10-30sec_12harm.csv"
VALIDATION_LOG = "ur-20_01_17-ptp_10_points.csv"
POINT_TO_POINT_LOGS = tuple(f"ur-20_01_17-p{k}.csv" for k in range(1, 11))

# utils/data_processing/filterData.m: 5th-order Butterworth low-pass filters run forward and backward
# (filtfilt), cut-offs as fractions of the Nyquist frequency (MATLAB designfilt's 'HalfPowerFrequency'
# without a sample rate), applied along the sample index of the irregular log
FILTER_ORDER = 5
VELOCITY_CUTOFF = 0.15  # of Nyquist: about 7 Hz at the logs' 94 Hz
ACCELERATION_CUTOFF = 0.15
CURRENT_CUTOFF = 0.20

# where the repository keeps each kind of file; a plain folder may hold any of them at its top
_FOLDERS = ("dataset_ur10e/identification_data", "dataset_ur10e/validation_data", "dataset_ur10e/jointwise_motion",
            "dataset_ur10e/collision", "URe/urdf")
URDF = "ur10e.urdf"


@dataclass
class URLog:
    """One RTDE log as the repository's parseURData.m splits it (arrays (N, 6); the target columns
    are None in the 19-column logs)."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    current: np.ndarray
    target_current: np.ndarray | None
    target_torque: np.ndarray | None
    source: str

    @property
    def count(self) -> int:
        return int(self.t.shape[0])

    def torque(self, gains=DRIVE_GAINS) -> np.ndarray:
        """Motor current x drive gain, per joint (the repository's diag(drvGains) * i)."""
        return self.current * _gains(gains)

    def rows(self, first: int, last: int) -> "URLog":
        """Rows first..last, 1-based and inclusive like the repository's idxs; time restarts at 0."""
        if not 1 <= first < last <= self.count:
            raise UserError(f"rows: {first}..{last} outside the {self.count} rows of {self.source}")
        k = slice(first - 1, last)
        pick = lambda a: None if a is None else a[k]  # noqa: E731
        return URLog(self.t[k] - self.t[first - 1], self.q[k], self.qd[k], self.current[k], pick(self.target_current),
                     pick(self.target_torque), self.source)

    def sampled(self, gains=DRIVE_GAINS) -> SampledData:
        """robodyn's SampledData: t, q, tau = current x gain, and the logged qd."""
        return SampledData(self.t, self.q, self.torque(gains), qd=self.qd)


def _gains(gains) -> np.ndarray:
    g = np.asarray(gains, float)
    if g.shape != (DOF,) or not np.all(np.isfinite(g)):
        raise UserError(f"drive gains: expected {DOF} finite numbers (A -> N.m), got {np.asarray(gains).tolist()}")
    return g


def parse_log(text: str | bytes, source: str = "<log>") -> URLog:
    """Split a log's text into a URLog (column layout in the module docstring)."""
    if isinstance(text, bytes):
        text = text.decode("ascii", errors="replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise UserError(f"{source}: empty log")
    width = len(lines[0].split(","))
    if width not in (19, 31):
        raise UserError(f"{source}: row 1 has {width} columns; a UR10e log of dynamic_calibration has 19 or 31")
    for k, ln in enumerate(lines):
        if ln.count(",") != width - 1:
            raise UserError(f"{source}: row {k + 1} has {ln.count(',') + 1} columns, row 1 has {width}: the file is "
                            "corrupt from there on")
    try:
        data = np.loadtxt(io.StringIO("\n".join(lines)), delimiter=",", ndmin=2)
    except ValueError as exc:
        raise UserError(f"{source}: not a table of numbers ({exc})") from None
    if not np.all(np.isfinite(data)):
        row = int(np.argwhere(~np.isfinite(data))[0][0])
        raise UserError(f"{source}: non-finite value in row {row + 1}")
    t = data[:, 0]
    bad = np.flatnonzero(np.diff(t) <= 0)
    if bad.size:
        raise UserError(f"{source}: time does not increase at row {bad[0] + 2} ({t[bad[0] + 1]} after {t[bad[0]]})")
    has_targets = width == 31
    return URLog(t - t[0], data[:, 1:7], data[:, 7:13], data[:, 13:19], data[:, 19:25] if has_targets else None,
                 data[:, 25:31] if has_targets else None, source)


def read_log(path: str | Path) -> URLog:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such UR10e log")
    return parse_log(path.read_bytes(), path.name)


def load(path: str | Path, gains=DRIVE_GAINS, rows: tuple[int, int] | None = None) -> SampledData:
    """One log file as SampledData (tau = current x ``gains``); ``rows`` keeps rows first..last
    (1-based, inclusive, as the repository's idxs; :data:`TRIMMED_ROWS` has the repository's own)."""
    log = read_log(path)
    if rows is not None:
        log = log.rows(*rows)
    return log.sampled(gains)


@dataclass
class FilteredLog:
    """A log processed as the repository's filterData.m does: positions as logged, velocities and
    currents zero-phase filtered, accelerations by the three-point central difference of the
    filtered velocities over the measured time step, then filtered too (zero at the two end rows
    before filtering, as there). ``raw`` keeps the unfiltered log (its current is what the
    repository's validation compares with)."""

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    current: np.ndarray
    raw: URLog


def _zero_phase(x: np.ndarray, cutoff: float) -> np.ndarray:
    import scipy.signal

    sos = scipy.signal.butter(FILTER_ORDER, cutoff, output="sos")
    return scipy.signal.sosfiltfilt(sos, x, axis=0)


def filter_log(log: URLog) -> FilteredLog:
    """Velocity, acceleration and current as the repository's filterData.m makes them."""
    if log.count < 40:
        raise UserError(f"{log.source}: {log.count} rows; filtering needs at least 40")
    qd = _zero_phase(log.qd, VELOCITY_CUTOFF)
    qdd = np.zeros_like(qd)
    qdd[1:-1] = (qd[2:] - qd[:-2]) / (log.t[2:] - log.t[:-2])[:, None]
    qdd = _zero_phase(qdd, ACCELERATION_CUTOFF)
    return FilteredLog(log.t, log.q, qd, qdd, _zero_phase(log.current, CURRENT_CUTOFF), log)


class RepositoryFiles:
    """The dynamic_calibration files under one directory: a checkout, a bare clone (read through
    ``git show HEAD:path``) or a plain folder of CSV logs (and, optionally, ur10e.urdf)."""

    def __init__(self, root: Path, git_dir: Path | None):
        self.root = root
        self.git_dir = git_dir

    @property
    def kind(self) -> str:
        if self.git_dir is not None:
            return "git"
        return "checkout" if (self.root / "dataset_ur10e").is_dir() else "folder"

    def _candidates(self, name: str) -> list[str]:
        return [name] if "/" in name else [f"{d}/{name}" for d in _FOLDERS] + [name]

    def _git_names(self) -> set[str]:
        if not hasattr(self, "_names"):
            out = self._git("ls-tree", "-r", "--name-only", "HEAD")
            self._names = set(out.decode().splitlines())
        return self._names

    def _git(self, *args: str) -> bytes:
        try:
            return subprocess.run(["git", f"--git-dir={self.git_dir}", *args], check=True, capture_output=True).stdout
        except FileNotFoundError:
            raise UserError(f"{self.git_dir}: a bare git repository, but git is not installed; give a checkout or "
                            "a folder of the CSV files") from None
        except subprocess.CalledProcessError as exc:
            raise UserError(f"{self.git_dir}: git {' '.join(args[:1])} failed: "
                            f"{exc.stderr.decode(errors='replace').strip().splitlines()[-1:]}") from None

    def find(self, name: str) -> str | None:
        """The relative path of ``name`` (a log or ur10e.urdf, or a repository path), or None."""
        for rel in self._candidates(name):
            if self.git_dir is not None:
                if rel in self._git_names():
                    return rel
            elif (self.root / rel).is_file():
                return rel
        return None

    def has(self, name: str) -> bool:
        return self.find(name) is not None

    def read(self, name: str) -> bytes:
        rel = self.find(name)
        if rel is None:
            raise UserError(f"{name}: not found in {self.root} (looked in {', '.join(self._candidates(name))}); "
                            f"the UR10e data are in {CLONE_URL}")
        if self.git_dir is not None:
            return self._git("show", f"HEAD:{rel}")
        return (self.root / rel).read_bytes()

    def log(self, name: str) -> URLog:
        """One log, whole (trim with URLog.rows)."""
        return parse_log(self.read(name), name)

    def logs(self, kind: str) -> list[str]:
        """The CSV names under dataset_ur10e/<kind> (identification_data, validation_data, ...) or,
        in a plain folder, all CSV names at its top."""
        if self.git_dir is not None:
            return sorted(n.rsplit("/", 1)[1] for n in self._git_names()
                          if n.startswith(f"dataset_ur10e/{kind}/") and n.endswith(".csv"))
        folder = self.root / "dataset_ur10e" / kind
        if not folder.is_dir():
            folder = self.root
        return sorted(p.name for p in folder.glob("*.csv"))

    def urdf_text(self) -> str:
        return self.read(URDF).decode()


def locate(directory: str | Path) -> RepositoryFiles:
    """The repository's files under ``directory`` (a checkout, a bare clone such as a mirror's
    ``repo`` git directory, or a plain folder of the CSV files)."""
    root = Path(directory).expanduser()
    if not root.is_dir():
        raise UserError(f"{root}: no such directory (clone the UR10e data with: git clone {CLONE_URL})")
    git_dir = None
    if (root / "HEAD").is_file() and (root / "objects").is_dir():
        git_dir = root
    elif not (root / "dataset_ur10e").is_dir() and (root / "repo" / "HEAD").is_file():
        git_dir = root / "repo"
    return RepositoryFiles(root, git_dir)
