"""Shared fixtures: one 2-worker process pool for the whole package (a spawned pool costs seconds
to start on this 2-core machine), small simulated recordings and a two-robot calibration fleet."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.identification.comparison_data import simulated_recording
from robodyn.scaleout import LocalExecutor
from robodyn.robot.loader import load_model

LOAD = "4.678,0,-0.03686,0.02985"


@pytest.fixture(scope="session")
def local():
    with LocalExecutor(2) as ex:
        yield ex


@pytest.fixture(scope="session")
def scara():
    return load_model("scara")


@pytest.fixture(scope="session")
def recordings(scara):
    # preprocessed (exact qd, qdd): the jobs exercise estimation, not filtering
    return [simulated_recording(scara, seed=s, seconds=4.0, rate_hz=250.0, noise=0.05) for s in (1, 2, 3)]


@pytest.fixture(scope="session")
def fleet(tmp_path_factory):
    """Measurement CSVs of two simulated UR5 cells (different poses and noise), as `robodyn
    calibrate plan/measure` writes them."""
    d = tmp_path_factory.mktemp("fleet")
    robots = []
    for k, seed in enumerate((2, 5)):
        plan, meas, loaded = d / f"plan{k}.json", d / f"meas{k}.csv", d / f"load{k}.csv"
        assert main(["calibrate", "plan", "--robot", "ur5_li2023", "--poses", "30", "--loaded", "12", "--seed", str(seed), "--out", str(plan)]) == 0
        assert main(["calibrate", "measure", str(plan), "--seed", str(seed), "--out", str(meas)]) == 0
        assert main(["calibrate", "measure", str(plan), "--seed", str(seed), "--load", LOAD, "--out", str(loaded)]) == 0
        robots.append((meas, loaded))
    return robots


def without_volatile(doc):
    """A result document without what legitimately differs between two runs of the same job: the
    creation time and wall-clock durations."""
    if isinstance(doc, dict):
        return {k: without_volatile(v) for k, v in doc.items() if k not in ("created", "elapsed", "design_seconds", "preparation_s")}
    if isinstance(doc, list):
        return [without_volatile(v) for v in doc]
    return doc


def same_values(results_a, results_b) -> bool:
    return ([(r.job_id, r.ok, without_volatile(r.value)) for r in results_a]
            == [(r.job_id, r.ok, without_volatile(r.value)) for r in results_b])


def assert_close_docs(a, b, rtol=1e-9):
    """Numbers equal to rtol (in-process runs use several BLAS/Numba threads, workers one)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_close_docs(a[k], b[k], rtol)
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_close_docs(x, y, rtol)
    elif isinstance(a, float):
        assert np.isclose(a, b, rtol=rtol, atol=1e-12), (a, b)
    else:
        assert a == b


# --------------------------------------------------------------------------- the workloads, executor-agnostic


def design_request(starts=4):
    from robodyn.identification import optimizers as opt
    from robodyn.identification.excitation import DesignRequest

    return DesignRequest(harmonics=3, wf=0.6, grid=60, starts=starts, seed=1,
                         options=opt.SLSQPOptions(max_iter=8, box_constraints=False))


def identify_specs(executor, recordings):
    """One job per recording (data through the store) and one that must fail (a 6-joint robot)."""
    from robodyn.scaleout import identify_job

    specs = [identify_job("scara", data=executor.put([rec]), config={"method": "ols", "rotor_inertia": False},
                          preprocessed=True, sources=[f"sim-{k}"]) for k, rec in enumerate(recordings)]
    specs.append(identify_job("ur5", data=executor.put(recordings[:1]), preprocessed=True, job_id="wrong-robot"))
    return specs


@pytest.fixture(scope="session")
def stribeck_problem(scara, recordings):
    """Seed 000's costly case: base parameters and a Stribeck model per joint in one search."""
    from robodyn.identification.base_params import base_parameters
    from robodyn.identification.metaheuristic import StribeckFitness, joint_major_data, stribeck_box
    from robodyn.identification.regressor import ColumnSpec

    base = base_parameters(scara, ColumnSpec())
    data = recordings[0]
    W = joint_major_data(scara, base, data)
    fitness = StribeckFitness.build(W, data.tau, data.qd)
    theta = np.linalg.lstsq(W.transpose(1, 0, 2).reshape(-1, base.count), data.tau.reshape(-1), rcond=None)[0]
    n = scara.dof
    bounds = stribeck_box(theta, {"fc": np.full(n, 0.3), "fs": np.full(n, 0.5), "vs": np.full(n, 0.1)})
    return fitness, bounds


def pso_on(executor, problem):
    from robodyn.identification import optimizers as opt
    from robodyn.scaleout import DistributedFitness

    fitness, bounds = problem
    return opt.minimize(DistributedFitness(executor, fitness), bounds, "pso", seed=3,
                        options=opt.PSOOptions(population=8, iterations=4))


def calibrate_specs(fleet):
    from robodyn.scaleout import calibrate_job

    return [calibrate_job(meas, loaded=loaded, options={"robot": "ur5_li2023", "method": "combined"})
            for meas, loaded in fleet]


@pytest.fixture(scope="session")
def local_runs(local, scara, recordings, stribeck_problem, fleet):
    """Every workload once on the local pool: the reference the Ray tests must reproduce exactly."""
    from robodyn.identification.excitation import design_excitation
    from robodyn.scaleout.excitation import run_starts

    return {"design": design_excitation(load_model("ur5"), design_request(), run_starts=partial(run_starts, local)),
            "identify": local.run(identify_specs(local, recordings)),
            "pso": pso_on(local, stribeck_problem),
            "calibrate": local.run(calibrate_specs(fleet))}
