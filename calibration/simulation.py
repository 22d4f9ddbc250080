"""A simulated calibration cell: a robot with true geometric deviations and elastic joints, and a
laser tracker that measures its target ball with AT960-class noise.

Measuring goes through the small ``PoseMeasurer`` interface (move to q, read the tracker), so the
simulated cell and a real robot + tracker (through the acquisition daemon) are
interchangeable for ``robodyn calibrate measure``.

Noise model. Leica specifies the AT960 as U_xyz = +-(15 um + 6 um/m) maximum permissible error.
The simulator draws each coordinate from a normal distribution with standard deviation
``sigma_m + sigma_per_m * range``; with the defaults that treats the +- figure as one standard
deviation per axis, about twice as noisy as Leica's statement that typical errors are half the MPE
(a deliberately pessimistic reading; ``TrackerNoise(sigma_m=7.5e-6, sigma_per_m=3e-6)`` is the
typical one). Draws are deterministic for a given seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .methods import MeasurementSet
from .parameters import GeometricModel, geometric_model
from .li2023 import TABLE3_COMBINED, TABLE3_STIFFNESS, table_to_si
from .robots import UR5_LI2023_MODEL
from .parameters import all_target_positions, robot_for
from .stiffness import Load, deflected_positions, joint_deflection

DEFAULT_TOOL_OFFSET = (0.040, 0.040, 0.030)  # m: target ball on a bracket, off the joint-6 axis (assumed)
DEFAULT_TRACKER_POSITION = (2.0, 0.0, 0.2)  # m in the robot base frame: 2 m in front of the arm (assumed)


@dataclass(frozen=True)
class TrackerNoise:
    sigma_m: float = 15e-6
    sigma_per_m: float = 6e-6

    def sigma(self, range_m) -> np.ndarray:
        return self.sigma_m + self.sigma_per_m * np.asarray(range_m, dtype=float)


@dataclass
class SimulatedTracker:
    position: np.ndarray  # tracker head in the measurement frame, m
    noise: TrackerNoise = TrackerNoise()
    seed: int = 0
    _rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self):
        self.position = np.asarray(self.position, dtype=float)
        self._rng = np.random.default_rng(self.seed)

    def measure(self, points: np.ndarray) -> np.ndarray:
        points = np.atleast_2d(points)
        rng = np.linalg.norm(points - self.position, axis=1)
        return points + self._rng.normal(size=points.shape) * self.noise.sigma(rng)[:, None]


@dataclass
class SimulatedRobot:
    """The 'real' robot: true parameter vector of a geometric model and true joint compliances."""

    gm: GeometricModel
    params: np.ndarray
    compliance: np.ndarray

    def positions(self, q, load: Load | None = None) -> np.ndarray:
        return deflected_positions(self.gm, self.params, q, self.compliance, load, links=True)

    def points(self, q, load: Load | None = None) -> np.ndarray:
        """Every target's position, (N, K, 3), with the joints deflected by gravity and the payload."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        robot = robot_for(self.gm, self.params)
        return all_target_positions(self.gm, self.params, q + joint_deflection(robot, q, self.compliance, load))


class PoseMeasurer(Protocol):
    """Move the robot to joint angles q and return the tracker reading of the target ball."""

    def measure(self, q: np.ndarray, load: Load | None) -> np.ndarray: ...


@dataclass
class SimulatedCell:
    robot: SimulatedRobot
    tracker: SimulatedTracker

    def true_positions(self, q, load: Load | None = None) -> np.ndarray:
        """Where the ball really is (no tracker noise), (N, 3)."""
        return self.robot.positions(q, load)

    def measure(self, q: np.ndarray, load: Load | None) -> np.ndarray:
        q = np.atleast_2d(np.asarray(q, dtype=float))
        return self.tracker.measure(self.true_positions(q, load))


def measure_poses(measurer: PoseMeasurer, q: np.ndarray, load: Load | None = None, ids=None) -> MeasurementSet:
    """Visit every pose in order and read the tracker (one pose at a time, like a real cell)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    p = np.vstack([measurer.measure(q[k], load) for k in range(q.shape[0])])
    return MeasurementSet(q, p, list(ids) if ids is not None else [], load)


# --------------------------------------------------------------------------- the Li et al. 2023 UR5


def load_ur5_li2023():
    """The UR5 in Li et al. 2023's frames (Table 2), the nominal model of the paper's experiment."""
    from robodyn.robot.loader import model_from_toml

    return model_from_toml(UR5_LI2023_MODEL)


def ur5_li2023_truth(gm: GeometricModel) -> np.ndarray:
    """gm's nominal vector with the rows replaced by Li et al. 2023 Table 3 (combined identification).

    The deviations from Table 2 are the paper's own estimate of a real UR5: up to 0.53 mm and 0.34
    degree, with joints 3-4 tilted by 0.04 and -0.24 degree off parallel.
    """
    truth = gm.nominal.copy()
    si = table_to_si(TABLE3_COMBINED)
    for f, vals in si.items():
        truth[gm.row_index(f)] = vals
    return truth


def ur5_li2023_cell(*, seed: int = 0, tool_offset=DEFAULT_TOOL_OFFSET, tracker_position=DEFAULT_TRACKER_POSITION,
                    noise: TrackerNoise = TrackerNoise(), base_error=None, tool_error=None,
                    hayati_rows=()) -> tuple[GeometricModel, SimulatedCell]:
    """The nominal calibration model and a simulated cell whose UR5 is Li et al.'s Table 3 robot.

    ``base_error`` (6: x y z m, rx ry rz rad) misaligns the true base against the nominal one and
    ``tool_error`` (3, m) displaces the true ball from its nominal offset: the errors of a real set-up
    that the base and tool parameters absorb.
    """
    robot = load_ur5_li2023()
    gm = geometric_model(robot, tool_offset=tool_offset, hayati_rows=hayati_rows)
    truth = ur5_li2023_truth(gm)
    if base_error is not None:
        truth[gm.indices(("base_x", "base_y", "base_z", "base_rx", "base_ry", "base_rz"))] += np.asarray(base_error, float)
    if tool_error is not None:
        truth[gm.indices(("tool_x", "tool_y", "tool_z"))] += np.asarray(tool_error, float)
    sim_robot = SimulatedRobot(gm, truth, 1.0 / TABLE3_STIFFNESS)
    return gm, SimulatedCell(sim_robot, SimulatedTracker(np.asarray(tracker_position, float), noise, seed))
