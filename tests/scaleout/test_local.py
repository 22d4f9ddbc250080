"""The local process pool (the default executor): correct results, exactly once, under failures."""

from __future__ import annotations

from functools import partial

import json

import numpy as np

from robodyn.cli import main
from robodyn.identification.excitation import design_excitation
from robodyn.scaleout.excitation import run_starts
from robodyn.identification.pipeline import identify
from robodyn.scaleout import InlineExecutor, ResultStore, run_batch
from robodyn.scaleout.jobs import RetryPolicy
from robodyn.robot.loader import load_model

from .conftest import assert_close_docs, design_request, identify_specs, same_values, without_volatile
from .faults import CrashAfterWork, executions


def test_starts_run_as_jobs_combine_to_the_one_process_design():
    # same process, same threads: splitting the starts into jobs must not change a single bit
    ur5, req = load_model("ur5"), design_request(starts=2)
    whole = design_excitation(ur5, req).to_dict()
    split = design_excitation(ur5, req, run_starts=partial(run_starts, InlineExecutor())).to_dict()
    assert without_volatile(split) == without_volatile(whole)
    assert [r["run"] for r in split["optimizer"]["runs"]] == [0, 1]


def test_pool_design_keeps_the_best_start(local_runs):
    design = local_runs["design"].to_dict()
    runs = design["optimizer"]["runs"]
    assert [r["run"] for r in runs] == [0, 1, 2, 3]
    assert design["optimizer"]["fun"] == min(r["fun"] for r in runs if r["feasible"])
    assert design["limits_ok"]


def test_identification_batch_equals_identify_per_recording(local_runs, scara, recordings):
    results = local_runs["identify"]
    assert [r.ok for r in results] == [True, True, True, False]
    for rec, r in zip(recordings, results):
        from robodyn.jobs.identification import _config_from_dict

        direct = identify(scara, [rec], _config_from_dict({"method": "ols", "rotor_inertia": False}),
                          sources=[r.value["provenance"]["recordings"][0]], preprocessed=True).to_dict()
        # the pool's workers use one BLAS thread, this process several: equal to rounding
        assert_close_docs(without_volatile(r.value), without_volatile(direct))
    failed = results[-1]
    assert failed.job_id == "wrong-robot" and failed.attempts == 1  # a job error is not retried
    assert "joints" in failed.error


def test_a_worker_killed_after_its_work_still_gives_exactly_one_result(local, recordings, local_runs, tmp_path):
    specs = identify_specs(local, recordings)
    crash = {specs[0].job_id, specs[2].job_id}
    results = local.run(specs + specs[:1], task=CrashAfterWork(tmp_path, crash))  # and one id submitted twice
    assert len(results) == len(specs) + 1 and results[-1] is results[0]
    assert same_values(results[:-1], local_runs["identify"])
    for s, r in zip(specs, results):
        if s.job_id in crash:
            # the work ran again (the first worker died after doing it), the result exists once; a
            # second run may itself be lost when the other chosen job's worker dies while it is in
            # flight (the pool breaks for every job in it), so it may run a third time
            assert 2 <= executions(tmp_path, s.job_id) <= r.attempts <= 3
        else:  # possibly lost with the broken pool, never duplicated
            assert 1 <= executions(tmp_path, s.job_id) <= r.attempts <= 3


def test_a_job_whose_workers_always_die_fails_visibly(local, recordings, tmp_path):
    specs = identify_specs(local, recordings[:1])[:1]
    [r] = local.run(specs, task=CrashAfterWork(tmp_path, {specs[0].job_id}), policy=RetryPolicy(max_attempts=1))
    assert not r.ok and r.attempts == 1 and "lost after 1 attempt" in r.error


def test_result_store_makes_a_rerun_skip_finished_jobs(local, recordings, tmp_path):
    store = ResultStore(tmp_path / "results")
    specs = identify_specs(local, recordings[:2])
    first = run_batch(local, specs, store)
    assert store.job_ids() == sorted(s.job_id for s in specs[:2])  # the failed job is not stored
    marks = tmp_path / "marks"
    marks.mkdir()
    # the rerun executes only the job that has no stored result
    rerun = run_batch(_CountingExecutor(local, marks), specs, store)
    assert [executions(marks, s.job_id) for s in specs] == [0, 0, 1]
    assert same_values(rerun[:2], first[:2]) and not rerun[2].ok


class _CountingExecutor:
    """The pool, with every execution counted in a marker file."""

    def __init__(self, inner, marks):
        self.inner, self.marks = inner, marks

    def run(self, specs, *, policy=None, on_result=None):
        return self.inner.run(specs, policy=policy, on_result=on_result, task=CrashAfterWork(self.marks, ()))


def test_distributed_fitness_evaluates_in_row_order(local, stribeck_problem):
    from robodyn.scaleout import DistributedFitness

    fitness, bounds = stribeck_problem
    X = bounds.sample(np.random.default_rng(0), 7)
    remote = DistributedFitness(local, fitness, chunks=3)
    np.testing.assert_allclose(remote(X), fitness(X), rtol=1e-12)
    assert remote.calls == 1


def test_fleet_calibration_equals_the_cli_per_robot(local_runs, fleet, tmp_path):
    for (meas, loaded), r in zip(fleet, local_runs["calibrate"]):
        out = tmp_path / "cli.json"
        assert main(["calibrate", "identify", str(meas), "--robot", "ur5_li2023", "--loaded", str(loaded), "--method", "combined",
                     "--out", str(out)]) == 0
        assert r.ok
        assert_close_docs(r.value, json.loads(out.read_text()), rtol=1e-6)
