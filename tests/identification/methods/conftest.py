import numpy as np
import pytest

from robodyn.identification.metaheuristic import normal_equations_of
from robodyn.identification.comparison_data import ASSUMED_PANDA_ROTOR_INERTIA, simulated_recording
from robodyn.identification.pipeline import IdentificationConfig
from robodyn.robot.loader import load_model

# the Ni et al. 2024 columns: inertial + rotor inertia, no friction (48 base parameters on the Panda)
NI2024_CONFIG = IdentificationConfig(method="ols", friction="none", rotor_inertia=True)


@pytest.fixture(scope="session")
def panda():
    return load_model("panda")


@pytest.fixture(scope="session")
def panda_recording(panda):
    """20 s at 100 Hz, RNEA torques with the assumed rotor inertias and 0.5 N.m noise."""
    return simulated_recording(panda, seed=0, seconds=20.0, rate_hz=100.0, noise=0.5,
                               rotor_inertia=np.array(ASSUMED_PANDA_ROTOR_INERTIA))


@pytest.fixture(scope="session")
def panda_statistics(panda, panda_recording):
    return normal_equations_of(panda, [panda_recording], NI2024_CONFIG, preprocessed=True)
