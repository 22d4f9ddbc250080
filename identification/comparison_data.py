"""The data a comparison of identification methods runs on: simulated recordings of the identifier's
own model (an inverse crime, labelled so), registered plants unlike the model (the realistic
MuJoCo logs of :mod:`.realistic_logs`), and the real Staubli TX40 set processed once and split."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from robodyn.robot.model import RobotModel

from .pipeline import IdentificationConfig
from .signals import SampledData
from .processing import process_windows

# --------------------------------------------------------------------------- simulated recordings


# Reflected rotor inertias (kg.m^2) assumed for simulations of the Panda: the built-in model carries
# none and the paper's Table 5 values are not physical (negative). Order of magnitude of a 7-DOF
# cobot's motor + harmonic drive referred to the joint.
ASSUMED_PANDA_ROTOR_INERTIA = (0.30, 0.30, 0.25, 0.25, 0.12, 0.12, 0.10)


def excitation(model: RobotModel, seed: int, seconds: float = 60.0, harmonics: int = 5, amplitude: float = 0.12,
               period: float = 12.0):
    """A random rest-to-rest finite Fourier series (Ni et al. 2024 eq. 7 form) around mid-range, repeated
    to fill ``seconds``: the harmonics of the last order cancel the start and end velocity."""
    from robodyn.trajectory import FourierTrajectory

    r = np.random.default_rng(seed)
    n = model.dof
    a = r.normal(size=(n, harmonics)) * amplitude
    b = r.normal(size=(n, harmonics)) * amplitude
    a[:, -1] = -a[:, :-1].sum(1)
    orders = np.arange(1, harmonics + 1)
    b[:, -1] = -(b[:, :-1] * orders[:-1]).sum(1) / harmonics
    wf = 2 * np.pi / period
    lo = np.where(np.isfinite(model.q_min), model.q_min, -np.pi)
    hi = np.where(np.isfinite(model.q_max), model.q_max, np.pi)
    return FourierTrajectory(wf, (lo + hi) / 2, a, b, periods=seconds / period)


def simulated_recording(model: RobotModel, *, seed: int = 0, seconds: float = 60.0, rate_hz: float = 1000.0,
                        noise: float = 0.5, rotor_inertia=None, friction: dict | None = None,
                        stribeck=None, amplitude: float = 0.12) -> SampledData:
    """Torques of the independent RNEA (not the regressor) along a random excitation, plus Gaussian
    noise (N.m, per sample); optional linear friction (``friction`` dict for RNEA) or a Stribeck
    :class:`~.friction.FrictionModel`. qd and qdd are exact (the recording is 'preprocessed')."""
    from robodyn.robot.dynamics import inverse_dynamics

    traj = excitation(model, seed, seconds, amplitude=amplitude)
    t, q, qd, qdd, _ = traj.sample(rate_hz)
    rotor = model.rotor_inertia if rotor_inertia is None else np.asarray(rotor_inertia, float)
    tau = inverse_dynamics(model, q, qd, qdd, rotor_inertia=rotor, friction=friction)
    if stribeck is not None:
        tau = tau + stribeck.torque(qd)
    tau = tau + noise * np.random.default_rng(seed + 10_000).normal(size=tau.shape)
    return SampledData(t, q, tau, qd, qdd)


# --------------------------------------------------------------------------- plants of a comparison


@dataclass(frozen=True)
class Plant:
    """What produces the torques a comparison identifies from.

    ``simulate(model, seed=, seconds=, rate_hz=, noise=, rotor_inertia=)`` returns a SampledData.
    ``differs_from_model`` says whether the plant contains effects the identifier's model lacks; a
    plant that does not is an inverse crime and every table it produces says so.
    ``exact_derivatives``: the data carry the exact qd and qdd (identified as 'preprocessed'); a
    plant without them returns a log as a sensor writes it, which goes through the one shared
    processing (pipeline.prepare) and is scored against its measured torque.
    ``sensor``: a sensor model (realistic_logs.SENSORS) that fixes the rate and the noise;
    ``record`` then returns the whole :class:`~.realistic_logs.RealisticLog` (data and noise floor)."""

    name: str
    simulate: Callable[..., SampledData]
    differs_from_model: bool
    description: str
    exact_derivatives: bool = True
    sensor: str | None = None
    record: Callable | None = None


def realistic_plant(name: str, sensor: str, plant_seed: int = 7) -> Plant:
    """A plant of :mod:`.realistic_logs`: the MuJoCo arm with what the identifier does not model
    (perturbed inertial parameters, rippling and load-dependent Stribeck friction, an elastic joint)
    seen through the ``sensor`` model of a real arm (noise, quantisation, jitter, gaps, delay,
    wrong drive gains). ``plant_seed`` fixes the arm, so every run of one comparison is the same
    arm; ``seed`` picks the excitation and the sensor noise of a run."""
    from . import realistic_logs as realistic

    if sensor not in realistic.SENSORS:
        raise ValueError(f"sensor: expected one of {sorted(realistic.SENSORS)}, got {sensor!r}")

    def record(model: RobotModel, *, seed: int, seconds: float, rate_hz=None, noise=None, rotor_inertia=None):
        # rate and noise belong to the sensor model; rotor inertia to the simulated arm
        return realistic.realistic_log(sensor, seed, plant_seed=plant_seed, duration=seconds, robot=model.name)

    def simulate(model: RobotModel, **kw) -> SampledData:
        return record(model, **kw).data

    rate = realistic.SENSORS[sensor]["rate_hz"]
    return Plant(name, simulate, True,
                 f"MuJoCo arm unlike the identifier's model (inertial parameters perturbed 15 %, Stribeck friction "
                 f"with position ripple and load dependence, one elastic joint) through a {sensor}-like sensor model "
                 f"({rate:g} Hz; noise, quantisation, " + ("jittered sampling, dropped packets, drifting torque "
                                                            "offsets" if sensor == "franka" else
                                                            "motor currents through unknown drive gains, one sample "
                                                            "of delay") + ")",
                 exact_derivatives=False, sensor=sensor, record=record)


PLANTS: dict[str, Plant] = {
    "rnea": Plant("rnea", simulated_recording, False,
                  "robodyn's rigid-body RNEA (the identifier's own model) + Gaussian torque noise"),
    "franka_like": realistic_plant("franka_like", "franka"),
    "ur_like": realistic_plant("ur_like", "ur"),
}


def register_plant(plant: Plant) -> None:
    """Hook for simulators whose plant differs from the identifier's model (unmodelled friction,
    joint elasticity, sensor dynamics ...): once registered, `robodyn compare --simulate ROBOT
    --plant NAME` runs the Table-4 comparison on it."""
    if not plant.name or plant.name in PLANTS:
        raise ValueError(f"plant: name {plant.name!r} is empty or already registered ({sorted(PLANTS)})")
    PLANTS[plant.name] = plant


# --------------------------------------------------------------------------- real data


def split_recording(data: SampledData, fraction: float) -> tuple[SampledData, SampledData]:
    """The first ``fraction`` of a recording (by samples) and the rest: identification and held-out
    parts of one real recording."""
    if not 0.1 <= fraction <= 0.9:
        raise ValueError(f"split: the identification fraction must be in [0.1, 0.9], got {fraction}")
    k = int(round(data.t.size * fraction))

    def part(sl):
        return SampledData(*(None if getattr(data, f) is None else getattr(data, f)[sl]
                             for f in ("t", "q", "tau", "qd", "qdd", "tau_friction", "coulomb")))

    return part(slice(0, k)), part(slice(k, None))


def concatenate_recordings(pieces: Sequence[SampledData]) -> SampledData:
    if len(pieces) == 1:
        return pieces[0]
    fields = ("t", "q", "tau", "qd", "qdd", "tau_friction", "coulomb")
    return SampledData(*(None if getattr(pieces[0], f) is None else np.concatenate([getattr(p, f) for p in pieces])
                         for f in fields))


TX40_PLANT = "real Staubli TX40 (LS2N data set, figaroh-plus, Apache-2.0)"


def tx40_split(directory, fraction: float = 0.5):
    """The real Staubli TX40 set of LS2N (package data of robodyn.identification.datasets) ready for a
    comparison: its model (motor-side torques, coupled wrist), the identification config with the authors' processing, and
    the run processed ONCE and then split, its first ``fraction`` identifying and the rest held out
    (processing each half alone would put filter and differentiation transients at the cut; measured:
    the held-out RMSE sum rose from 6.2 to 33 N.m). Returns (model, config, identification, held out)."""
    from pathlib import Path

    from robodyn.robot.urdf import model_from_urdf

    from .datasets import tx40

    directory = Path(directory)
    if not (directory / "tx40_mdh_modified.urdf").exists():
        raise FileNotFoundError(f"dataset: the Staubli TX40 data set is not in {directory}; pass --data-dir, or "
                                "leave it out for the copy robodyn ships")
    model = model_from_urdf(directory / "tx40_mdh_modified.urdf")
    config = IdentificationConfig(method="ols", friction="coulomb-viscous", processing=tx40.PROCESSING,
                                  motor_couplings=(tx40.WRIST_COUPLING,))
    pieces = [piece.data for piece in process_windows(tx40.load(directory), config.processing)]
    ident, held = split_recording(concatenate_recordings(pieces), fraction)
    return model, config, ident, held


def tx40_raw_after(directory, held: SampledData) -> SampledData:
    """The raw TX40 samples (measured torque, unfiltered) from the first instant of the processed
    held-out part on: what a held-out figure is judged against."""
    from pathlib import Path

    from .datasets import tx40

    raw = tx40.load(Path(directory))
    return raw.select(raw.t >= held.t[0] - 1e-9)
