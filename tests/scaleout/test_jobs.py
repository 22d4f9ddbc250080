"""The job format, the ledger's exactly-once rules and the result store, without any worker."""

from __future__ import annotations

import numpy as np
import pytest

from robodyn.scaleout.jobs import (DUPLICATE, KEPT, KINDS, RETRY, JobResult, JobSpec, Ledger, Ref,
                                   ResultStore, RetryPolicy, digest)
from robodyn.scaleout.tasks import HANDLERS


def spec(x=1.0, **kw):
    return JobSpec("population", {"fitness": Ref("k" * 64, None), "X": np.array([[x, 2.0]])}, **kw)


def result(job, ok=True, value=1.0, attempt=1):
    return JobResult(job.job_id, job.kind, ok, value if ok else None, None if ok else "ValueError: bad", attempt)


def test_job_id_is_a_digest_of_the_work():
    assert spec().job_id == spec().job_id  # resubmitting the same work names the same job
    assert spec().job_id != spec(1.5).job_id
    assert JobSpec("population", {"fitness": Ref("a" * 64, "/some/path"), "X": 1}).job_id == \
        JobSpec("population", {"fitness": Ref("a" * 64, "/other/path"), "X": 1}).job_id  # stored where: irrelevant
    assert digest([1]) != digest(np.array([1.0])) != digest(np.array([1]))
    assert spec(job_id="robot-07.2026-11-21").job_id == "robot-07.2026-11-21"


def test_malformed_jobs_are_refused():
    with pytest.raises(ValueError, match="kind"):
        JobSpec("train", {})
    with pytest.raises(ValueError, match="job_id"):
        JobSpec("identify", {}, "../escape")
    with pytest.raises(TypeError, match="executor.put"):
        JobSpec("identify", {"model": object()})
    with pytest.raises(ValueError, match="unknown field"):
        JobSpec.from_dict({"kind": "identify", "payload": {}, "priority": 1})


def test_every_kind_has_a_handler():
    assert set(HANDLERS) == set(KINDS)


def test_spec_and_result_round_trip_through_json_documents():
    j = JobSpec("calibrate", {"measurements": "m.csv", "loaded": None, "options": {"method": "geometric"}})
    assert JobSpec.from_dict(j.to_dict()) == j
    r = JobResult(j.job_id, j.kind, True, {"rms": 1e-5}, None, 2, 0.5, "host:1")
    assert JobResult.from_dict(r.to_dict()) == r


def test_first_result_is_kept_and_a_late_duplicate_dropped():
    a = spec()
    ledger = Ledger.of([a, a])  # the same id twice in one batch is one job
    assert ledger.pending == [a.job_id]
    ledger.start_attempt(a.job_id)
    assert ledger.lost(a.job_id, "worker died") == RETRY
    ledger.start_attempt(a.job_id)
    assert ledger.record(result(a, value=1.0, attempt=2)) == KEPT
    # the first attempt's worker was only slow, not dead: its result arrives after the retry's
    assert ledger.record(result(a, value=1.0, attempt=1)) == DUPLICATE
    assert ledger.ordered([a, a]) == [ledger.results[a.job_id]] * 2
    assert ledger.results[a.job_id].attempts == 2


def test_exhausted_attempts_give_a_failure_result_never_a_missing_one():
    a, b = spec(1.0), spec(2.0)
    ledger = Ledger.of([a, b], RetryPolicy(max_attempts=2))
    for _ in range(2):
        ledger.start_attempt(a.job_id)
        verdict = ledger.lost(a.job_id, "node lost")
    assert verdict == KEPT
    ledger.start_attempt(b.job_id)
    ledger.record(result(b))
    assert ledger.pending == []
    failed = ledger.results[a.job_id]
    assert not failed.ok and failed.attempts == 2 and "node lost" in failed.error


def test_job_errors_are_results_unless_the_policy_retries_them():
    a = spec()
    plain = Ledger.of([a])
    plain.start_attempt(a.job_id)
    assert plain.record(result(a, ok=False)) == KEPT
    retrying = Ledger.of([a], RetryPolicy(max_attempts=2, retry_errors=True))
    retrying.start_attempt(a.job_id)
    assert retrying.record(result(a, ok=False)) == RETRY
    retrying.start_attempt(a.job_id)
    assert retrying.record(result(a, ok=False)) == KEPT


def test_two_different_jobs_cannot_share_an_id():
    with pytest.raises(ValueError, match="two different jobs"):
        Ledger.of([spec(1.0, job_id="x"), spec(2.0, job_id="x")])


def test_result_store_first_writer_wins(tmp_path):
    store = ResultStore(tmp_path)
    a = spec()
    assert store.commit(result(a, value=[1.0, np.float64(2.0)]))
    assert not store.commit(result(a, value=[9.0]))
    assert store.get(a.job_id).value == [1.0, 2.0]
    assert store.job_ids() == [a.job_id]
    assert store.get("absent") is None


def test_calibrate_job_takes_library_options_not_command_line_arguments():
    from robodyn.scaleout.tasks import run_calibrate

    with pytest.raises(ValueError, match="'args'.*'options'"):
        run_calibrate({"measurements": "m.csv", "loaded": None, "args": ["--robot", "ur5_li2023"]})
    with pytest.raises(ValueError, match="options: unknown calibration option"):
        run_calibrate({"measurements": "m.csv", "options": {"robot": "ur5_li2023", "plot": "x.png"}})
    with pytest.raises(ValueError, match="options.robot: required"):
        run_calibrate({"measurements": "m.csv", "options": {"method": "geometric"}})
