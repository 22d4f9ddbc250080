"""The real Franka Emika Panda excitation log of Gaz, Cognetti, Oliva, Robuffo Giordano and De Luca,
"Dynamic Identification of the Franka Emika Panda Robot With Retrieval of Feasible Parameters Using
Penalty-Based Optimization", IEEE Robotics and Automation Letters 4(4), 2019.

Published in https://github.com/marcocognetti/FrankaEmikaPandaDynModel (GPL-3.0), so it is never
shipped with robodyn: :func:`load` reads a directory the user gives, holding the four files of
``matlab/data/Exciting_Traj/Trajectory_1/rbt_log/``: ``exciting_traj_{time,positions,velocity,torques}.txt``
(whitespace-separated numbers; time in s, then 7 columns each of q in rad, qd in rad/s and the joint
torque sensors' tau in N.m, one row per 1 kHz sample). One trajectory only: a held-out part must
come from the same run, split by time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from robodyn.errors import UserError
from robodyn.identification.signals import SampledData

FILES = ("time", "positions", "velocity", "torques")
LOG_FOLDER = "matlab/data/Exciting_Traj/Trajectory_1/rbt_log"  # inside a checkout of the repository
CLONE_URL = "https://github.com/marcocognetti/FrankaEmikaPandaDynModel"


def locate(directory: str | Path) -> Path:
    """The folder of the log: ``directory`` itself, or its LOG_FOLDER when it is a checkout of the
    repository."""
    directory = Path(directory)
    inside = directory / LOG_FOLDER
    return inside if (inside / "exciting_traj_time.txt").exists() else directory


def check(directory: str | Path) -> dict[str, Path]:
    """The log's four files in ``directory`` (the rbt_log folder or a checkout, :func:`locate`);
    UserError naming the missing ones."""
    directory = locate(directory)
    paths = {name: directory / f"exciting_traj_{name}.txt" for name in FILES}
    missing = [p.name for p in paths.values() if not p.exists()]
    if missing:
        raise UserError(f"panda log: {directory} lacks {', '.join(missing)} (the rbt_log folder of "
                        "FrankaEmikaPandaDynModel's Exciting_Traj/Trajectory_1)")
    return paths


def load(directory: str | Path) -> SampledData:
    """The log of ``directory`` (the rbt_log folder or a checkout, :func:`locate`)."""
    paths = check(directory)
    t = np.loadtxt(paths["time"])
    shape = (t.size, -1)
    return SampledData(t, np.loadtxt(paths["positions"]).reshape(shape), np.loadtxt(paths["torques"]).reshape(shape),
                       np.loadtxt(paths["velocity"]).reshape(shape))
