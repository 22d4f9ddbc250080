import numpy as np
import pytest

from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.loader import load_model
from robodyn.trajectory import FourierTrajectory

FRICTION = {"viscous": np.full(7, 0.3), "coulomb": np.full(7, 0.5), "offset": np.full(7, 0.05)}


def rest_to_rest_fourier(model, seed, wf=0.6, harmonics=5, amplitude=0.12, periods=2):
    """A random Fourier excitation that starts and ends at rest (sum a = 0, sum l b = 0)."""
    r = np.random.default_rng(seed)
    n = model.dof
    a = r.normal(size=(n, harmonics)) * amplitude
    b = r.normal(size=(n, harmonics)) * amplitude
    a[:, -1] = -a[:, :-1].sum(1)
    l = np.arange(1, harmonics + 1)
    b[:, -1] = -(b[:, :-1] * l[:-1]).sum(1) / harmonics
    return FourierTrajectory(wf, (model.q_min + model.q_max) / 2, a, b, periods=periods)


@pytest.fixture(scope="session")
def panda_with_rotors():
    m = load_model("panda")
    return m.__class__(**{**m.__dict__, "rotor_inertia": np.full(7, 0.1)})


def simulate(model, traj, rate=500, noise=0.0, seed=0, friction=FRICTION):
    """Torques from the independent RNEA (not the regressor) along a trajectory."""
    from robodyn.identification.signals import SampledData

    t, q, qd, qdd, _ = traj.sample(rate)
    tau = inverse_dynamics(model, q, qd, qdd, rotor_inertia=model.rotor_inertia, friction=friction)
    tau = tau + noise * np.random.default_rng(seed).normal(size=tau.shape)
    return SampledData(t, q, tau, qd, qdd)


# the known-answer set-up both held-out-in-context tests use: noise std in N·m, friction per joint
TWOLINK_SINES = {"rate": 500.0, "period": 4.0, "periods": 3, "noise": 0.02,
                 "friction": {"coulomb": [0.5, 0.3], "viscous": [0.3, 0.2], "offset": [0.05, -0.03]}}


def twolink_sines(model, rate, period, periods, noise, friction, seed=3):
    """A periodic excitation of the twolink arm, its model class exactly (RNEA torques with rotor
    inertia and the given friction) plus Gaussian torque noise of std ``noise`` N·m; a recording
    (positions and torques, no velocities). Sines are odd about the recording's start and end, so the
    filters' odd extension there is the motion itself and the recording's own edges have no
    transient; a block edge inside it is no such point. Half a sample off the grid, so no sample
    sits on a friction step."""
    from robodyn.identification.signals import SampledData

    t = (np.arange(int(periods * period * rate)) + 0.5) / rate
    w = 2 * np.pi / period
    centre = np.array([1.57, 0.0])
    terms = [[(1, 0.25), (2, 0.04)], [(1, 0.3), (3, 0.12), (5, 0.05)]]
    q = centre + np.column_stack([sum(a * np.sin(k * w * t) for k, a in j) for j in terms])
    qd = np.column_stack([sum(a * k * w * np.cos(k * w * t) for k, a in j) for j in terms])
    qdd = np.column_stack([sum(-a * (k * w) ** 2 * np.sin(k * w * t) for k, a in j) for j in terms])
    tau = inverse_dynamics(model, q, qd, qdd, rotor_inertia=model.rotor_inertia, friction=friction)
    return SampledData(t, q, tau + np.random.default_rng(seed).normal(0.0, noise, tau.shape))
