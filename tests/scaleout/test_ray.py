"""Ray (a local instance: 2 CPUs, loopback, no dashboard) gives the local pool's results, bit for
bit, for every workload, and keeps results exactly-once when a worker is killed."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from robodyn.identification.excitation import design_excitation
from robodyn.scaleout.excitation import run_starts
from robodyn.robot.loader import load_model

from . import faults
from .conftest import calibrate_specs, design_request, identify_specs, pso_on, same_values, without_volatile

ray = pytest.importorskip("ray", reason="the Ray executor needs the `ray` extra")

pytestmark = pytest.mark.timeout(600)  # an outer guard: 138 s on a slow host, 20 s on a fast one


@pytest.fixture(scope="module")
def ray_executor():
    from robodyn.scaleout import RayExecutor

    if ray.is_initialized():  # its CPU count is not ours to assume; in a test process it is a test's leak
        pytest.fail("a Ray instance is already running in this process: an earlier test did not shut down "
                    "the one it started", pytrace=False)
    ex = RayExecutor(workers=2)
    # the fault injector lives in the test package, which Ray workers cannot import: ship it by value
    ray.cloudpickle.register_pickle_by_value(faults)
    yield ex
    ex.close()


def test_ray_uses_two_local_cpus(ray_executor):
    assert ray_executor.workers == 2
    assert [n["NodeManagerAddress"] for n in ray.nodes()] == ["127.0.0.1"]  # loopback only


def test_ray_workers_run_at_the_callers_priority(ray_executor):
    """Ray's default starts workers at nice 15; beside any ordinary load they then get a sliver
    of the CPU. The local instance's workers run at this process's niceness, as the pool's do."""
    import os

    @ray.remote(num_cpus=1)
    def niceness() -> int:
        return os.nice(0)

    assert ray.get([niceness.remote() for _ in range(2)]) == [os.nice(0)] * 2


def test_multistart_design_identical_to_local(ray_executor, local_runs):
    on_ray = design_excitation(load_model("ur5"), design_request(), run_starts=partial(run_starts, ray_executor))
    assert without_volatile(on_ray.to_dict()) == without_volatile(local_runs["design"].to_dict())


def test_identification_batch_identical_to_local(ray_executor, recordings, local_runs):
    results = ray_executor.run(identify_specs(ray_executor, recordings))
    assert same_values(results, local_runs["identify"])  # the job ids too: Refs are named by content
    assert [r.ok for r in results] == [True, True, True, False]


def test_metaheuristic_population_identical_to_local(ray_executor, stribeck_problem, local_runs):
    on_ray, local = pso_on(ray_executor, stribeck_problem), local_runs["pso"]
    np.testing.assert_array_equal(on_ray.x, local.x)
    assert on_ray.fun == local.fun and on_ray.history == local.history and on_ray.nfev == local.nfev


def test_fleet_calibration_identical_to_local(ray_executor, fleet, local_runs):
    results = ray_executor.run(calibrate_specs(fleet))
    assert all(r.ok for r in results)
    assert same_values(results, local_runs["calibrate"])


def test_a_killed_ray_worker_gives_exactly_one_result(ray_executor, recordings, local_runs, tmp_path):
    specs = identify_specs(ray_executor, recordings)
    crash = {specs[1].job_id}
    results = ray_executor.run(specs, task=faults.CrashAfterWork(tmp_path, crash))
    assert same_values(results, local_runs["identify"])
    for s, r in zip(specs, results):
        # a Ray worker's death loses only its own task: every other job ran once
        expected = 2 if s.job_id in crash else 1
        assert faults.executions(tmp_path, s.job_id) == expected == r.attempts
