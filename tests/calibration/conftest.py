"""Shared fixtures: the seed-004 UR5 model, its test cube and one full replay (computed once)."""

import numpy as np
import pytest

from robodyn.calibration.planning import CellSetup, largest_test_cube, reference_configuration
from robodyn.calibration.replay import SEED004_FLOOR_Z, run_seed004_replay
from robodyn.calibration.simulation import DEFAULT_TOOL_OFFSET, DEFAULT_TRACKER_POSITION, load_seed004_robot


@pytest.fixture(scope="session")
def seed004_robot():
    return load_seed004_robot()


@pytest.fixture(scope="session")
def seed004_setup():
    return CellSetup(tracker_position=DEFAULT_TRACKER_POSITION, tool_offset=DEFAULT_TOOL_OFFSET,
                     floor_z=SEED004_FLOOR_Z)


@pytest.fixture(scope="session")
def seed004_cube(seed004_robot, seed004_setup):
    """(cube, q_ref) of the simulated cell, searched once for the whole session."""
    probe = np.array([0.5, 0.0, 0.0])
    q0 = reference_configuration(seed004_robot, seed004_setup, probe)
    cube = largest_test_cube(seed004_robot, seed004_setup, q0)
    return cube, reference_configuration(seed004_robot, seed004_setup, cube.center, q0)


@pytest.fixture(scope="session")
def replay_report(seed004_cube):
    """The issue's acceptance scenario: 50 + 20 poses, 200 held out, AT960 noise, seed 0."""
    return run_seed004_replay(seed=0, cube=seed004_cube[0])
