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


def identified_from_npz(folder, recording, method: str, name: str = "result.json", friction: bool = False):
    """``robodyn identify --method METHOD`` on ``recording`` saved as an .npz in ``folder`` (exact
    q, qd, tau: no filter, measured velocity; with ``friction``, viscous 0.3 and Coulomb 0.2 N.m
    added to every joint's torque); returns the result file's path."""
    from robodyn.cli import main

    d = recording
    rec = folder / "rec.npz"
    tau = d.tau + 0.3 * d.qd + 0.2 * np.sign(d.qd) if friction else d.tau
    np.savez(rec, t=d.t, q=d.q, qd=d.qd, tau=tau)
    result = folder / name
    assert main(["identify", str(rec), "--robot", "panda", "--method", method, "--cutoff", "0",
                 "--velocity", "measured", "--out", str(result)]) == 0
    return result
