"""Measure a calibration plan on the real robot: the measurement sources and what a collection
holds. Driving the robot through the daemon is robodyn/calibration_collect.py (`robodyn calibrate
collect`: :func:`robodyn.calibration_collect.collect_to_csv`), above both this package and the daemon.

For every planned pose the robot is moved there through the acquisition daemon, with the same
validation as every run (the daemon checks the trajectory and the move to its start against every
limit before anything moves); a short hold trajectory lets it settle. The joint angles are then
read at rest over a window (the mean of several fresh samples, refused when they spread), and a
measurement is asked from a pluggable source:

* ``file:RESULTS`` - the tracker software (or its operator) appends ``pose_id,x,y,z[,x2,y2,z2..]``
  lines to a file; with ``--request-file`` robodyn appends ``pose_id,q1..qn`` there when the arm
  is at rest, for a measurement script to pick up;
* ``tcp:HOST:PORT`` - a line protocol: robodyn sends ``MEASURE pose_id q1 .. qn``; the hook
  answers ``pose_id x y z [x2 y2 z2 ..]`` or ``pose_id NONE reason``.

Coordinates are in ``--source-units`` (m or mm), one triple per target in the order of the
targets. A pose whose measurement does not arrive within ``--measure-timeout`` is skipped and reported,
never guessed; the poses collected are written as a measurement CSV for ``calibrate identify``,
with the joint values the controller reported at rest.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from robodyn.errors import UserError

POSITION_SCALE = {"m": 1.0, "mm": 1e-3}
REST_SPREAD = 2e-4  # rad: joint values that move more than this over the window are not at rest
REACH_TOLERANCE = 2e-3  # rad: the arm must stop this close to the planned controller angles


@dataclass
class Reading:
    """What a source measured at one pose: target positions (K, 3) in m (NaN: not seen)."""

    points: np.ndarray
    note: str = ""


class MeasurementSource(Protocol):
    def request(self, pose_id: str, q_controller: np.ndarray, timeout: float) -> Reading | None:
        """The measurement of a pose, or None with ``last_reason`` set when none arrives in time."""

    def close(self) -> None: ...


def _parse_numbers(fields: list[str], targets: int, scale: float, where: str) -> np.ndarray:
    if len(fields) != 3 * targets:
        raise ValueError(f"{where}: expected {3 * targets} coordinates ({targets} targets), got {len(fields)}")
    vals = np.array([np.nan if f.strip().lower() in ("", "nan") else float(f) for f in fields], dtype=float)
    vals = vals.reshape(targets, 3)
    partial = np.isnan(vals).any(1) & ~np.isnan(vals).all(1)
    if partial.any():
        raise ValueError(f"{where}: target {int(np.flatnonzero(partial)[0]) + 1} has some coordinates but not all")
    return vals * scale


class FileSource:
    """Measurements appended to a file by the tracker software: ``pose_id,x,y,z[,...]`` per line."""

    def __init__(self, path, targets: int = 1, units: str = "m", request_file=None, poll_s: float = 0.05):
        self.path = Path(path)
        self.targets = targets
        self.scale = POSITION_SCALE[units]
        self.request_file = Path(request_file) if request_file else None
        self.poll_s = poll_s
        self.last_reason = ""

    def _lookup(self, pose_id: str) -> Reading | None:
        if not self.path.exists():
            return None
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = [p.strip() for p in line.replace(";", ",").replace("\t", ",").split(",")]
            if not parts or parts[0] != pose_id:
                continue
            try:
                return Reading(_parse_numbers(parts[1:], self.targets, self.scale, f"{self.path.name} {pose_id}"))
            except ValueError as exc:
                self.last_reason = str(exc)
                return None
        return None

    def request(self, pose_id: str, q_controller: np.ndarray, timeout: float) -> Reading | None:
        if self.request_file is not None:
            with open(self.request_file, "a", encoding="utf-8") as fh:
                fh.write(",".join([pose_id] + [repr(float(v)) for v in q_controller]) + "\n")
        self.last_reason = ""
        deadline = time.monotonic() + timeout
        while True:
            found = self._lookup(pose_id)
            if found is not None:
                return found
            if self.last_reason:
                return None
            if time.monotonic() > deadline:
                self.last_reason = f"no line for {pose_id} in {self.path.name} within {timeout:g} s"
                return None
            time.sleep(self.poll_s)

    def close(self) -> None:
        pass


class TcpSource:
    """A TCP line hook: ``MEASURE pose_id q1 .. qn`` -> ``pose_id x y z [..]`` or ``pose_id NONE reason``."""

    def __init__(self, host: str, port: int, targets: int = 1, units: str = "m", connect_timeout: float = 5.0):
        self.targets = targets
        self.scale = POSITION_SCALE[units]
        self.last_reason = ""
        try:
            self.sock = socket.create_connection((host, port), timeout=connect_timeout)
        except OSError as exc:
            raise UserError(f"--source: cannot connect to the measurement hook at {host}:{port} ({exc})") from None
        self.buffer = b""

    def _readline(self, deadline: float) -> str | None:
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(4096)
            except socket.timeout:
                return None
            if not chunk:
                raise UserError("--source: the measurement hook closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode("utf-8", errors="replace").strip()

    def request(self, pose_id: str, q_controller: np.ndarray, timeout: float) -> Reading | None:
        self.last_reason = ""
        self.sock.sendall(("MEASURE " + " ".join([pose_id] + [repr(float(v)) for v in q_controller]) + "\n").encode())
        deadline = time.monotonic() + timeout
        while True:  # bounded by the deadline; replies to earlier, timed-out poses are skipped
            line = self._readline(deadline)
            if line is None:
                self.last_reason = f"no reply for {pose_id} within {timeout:g} s"
                return None
            parts = line.split()
            if not parts or parts[0] != pose_id:
                continue
            if len(parts) > 1 and parts[1].upper() == "NONE":
                self.last_reason = "the hook has no measurement: " + (" ".join(parts[2:]) or "no reason given")
                return None
            try:
                return Reading(_parse_numbers(parts[1:], self.targets, self.scale, f"hook reply for {pose_id}"))
            except ValueError as exc:
                self.last_reason = str(exc)
                return None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def open_source(spec: str, targets: int, units: str, request_file=None) -> MeasurementSource:
    kind, _, rest = spec.partition(":")
    if kind == "file" and rest:
        return FileSource(rest, targets, units, request_file)
    if kind == "tcp" and rest:
        host, _, port = rest.rpartition(":")
        try:
            return TcpSource(host or "127.0.0.1", int(port), targets, units)
        except ValueError:
            raise ValueError(f"--source: expected tcp:HOST:PORT, got {spec!r}") from None
    raise ValueError(f"--source: expected file:PATH or tcp:HOST:PORT, got {spec!r}")


# --------------------------------------------------------------------------- the collection


@dataclass
class CollectedPose:
    pose_id: str
    q_planned: np.ndarray  # controller values
    q_rest: np.ndarray | None = None
    points: np.ndarray | None = None
    skipped: str = ""
    run_id: str = ""
    spread: float = float("nan")


@dataclass
class Collection:
    poses: list[CollectedPose] = field(default_factory=list)
    stopped: str = ""

    @property
    def collected(self) -> list[CollectedPose]:
        return [p for p in self.poses if not p.skipped]

    @property
    def skipped(self) -> list[CollectedPose]:
        return [p for p in self.poses if p.skipped]
