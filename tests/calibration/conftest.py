"""Shared fixtures: the Li et al. 2023 UR5 model, its test cube and one full replay (computed once)."""

import numpy as np
import pytest

from robodyn.calibration.planning import CellSetup, largest_test_cube, reference_configuration
from robodyn.calibration.paper_replay import UR5_LI2023_FLOOR_Z, run_paper_replay
from robodyn.calibration.simulation import DEFAULT_TOOL_OFFSET, DEFAULT_TRACKER_POSITION, load_ur5_li2023


@pytest.fixture(scope="session")
def ur5_robot():
    return load_ur5_li2023()


@pytest.fixture(scope="session")
def ur5_setup():
    return CellSetup(tracker_position=DEFAULT_TRACKER_POSITION, tool_offset=DEFAULT_TOOL_OFFSET,
                     floor_z=UR5_LI2023_FLOOR_Z)


@pytest.fixture(scope="session")
def ur5_cube(ur5_robot, ur5_setup):
    """(cube, q_ref) of the simulated cell, searched once for the whole session."""
    probe = np.array([0.5, 0.0, 0.0])
    q0 = reference_configuration(ur5_robot, ur5_setup, probe)
    cube = largest_test_cube(ur5_robot, ur5_setup, q0)
    return cube, reference_configuration(ur5_robot, ur5_setup, cube.center, q0)


@pytest.fixture(scope="session")
def replay_report(ur5_cube):
    """The acceptance scenario: 50 + 20 poses, 200 held out, AT960 noise, seed 0."""
    return run_paper_replay(seed=0, cube=ur5_cube[0])
