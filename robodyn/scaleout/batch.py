"""Batches of whole jobs (identification per robot or recording, fleet calibration) and population
evaluation spread over workers, with an on-disk result store for nightly runs."""

from __future__ import annotations

import os
from typing import Iterable, Sequence

import numpy as np

from .jobs import JobResult, JobSpec, ResultStore, RetryPolicy, digest


def file_job_id(kind: str, payload: dict, paths: Sequence) -> str:
    """An id that changes when an input file changes (size or modification time), so tonight's
    recording under yesterday's file name is new work, and a re-run over the same files is not."""
    stats = [[str(p), os.stat(p).st_size, os.stat(p).st_mtime_ns] for p in paths]
    return f"{kind}-{digest([payload, stats])[:20]}"


def identify_job(robot, *, recordings: Sequence | None = None, data=None, config: dict | None = None,
                 preprocessed: bool = False, drive_gains=None, sources: Sequence | None = None,
                 job_id: str = "") -> JobSpec:
    """An ``identify`` job: ``recordings`` (files every worker can read) or ``data`` (a Ref to a
    list of SampledData from ``executor.put``); ``config`` is the daemon's JSON pipeline config."""
    payload: dict = {"robot": robot, "config": dict(config or {}), "preprocessed": bool(preprocessed)}
    if recordings is not None:
        payload["recordings"] = [str(p) for p in recordings]
    if data is not None:
        payload["data"] = data
    if sources is not None:
        payload["sources"] = [str(s) for s in sources]
    if drive_gains is not None:
        payload["drive_gains"] = [float(g) for g in drive_gains]
    if not job_id and recordings is not None:
        job_id = file_job_id("identify", payload, recordings)
    return JobSpec("identify", payload, job_id)


def calibrate_job(measurements, *, loaded=None, options: dict | None = None, job_id: str = "",
                  executor=None) -> JobSpec:
    """A ``calibrate`` job: what `robodyn calibrate identify MEASUREMENTS [--loaded LOADED]` does, with
    ``options`` the identification options by name (robot is required; see
    robodyn.calibration.workflow.IdentifyOptions), e.g. {"robot": "ur5_li2023", "method": "combined"}.

    Without ``executor`` the job carries the file paths, which every worker must be able to read.
    With it, the files' names and bytes go to the executor's store (:func:`ship_file`) and the job
    carries references: a worker on another machine needs no shared file system, and the job id
    is the files' content."""
    if executor is not None:
        payload = {"measurements": ship_file(executor, measurements),
                   "loaded": None if loaded is None else ship_file(executor, loaded), "options": dict(options or {})}
        return JobSpec("calibrate", payload, job_id)
    payload = {"measurements": str(measurements), "loaded": None if loaded is None else str(loaded),
               "options": dict(options or {})}
    if not job_id:
        job_id = file_job_id("calibrate", payload, [p for p in (measurements, loaded) if p is not None])
    return JobSpec("calibrate", payload, job_id)


def ship_file(executor, path):
    """A file's name and bytes, stored once by ``executor``: a worker writes them to its own
    temporary directory under the same name (tasks.materialize)."""
    from pathlib import Path

    path = Path(path)
    return executor.put({"file": path.name, "bytes": path.read_bytes()})


def run_batch(executor, specs: Iterable[JobSpec], store: ResultStore | None = None,
              policy: RetryPolicy | None = None, on_result=None) -> list[JobResult]:
    """Run ``specs``, skipping ids the store already holds; successful results are committed as they
    arrive (a driver that dies loses no finished job), failures are returned but not stored, so the
    next run tries them again. One result per spec, in order; with a store, the stored one.
    ``on_result(result)`` is called as each job of this run finishes (a progress display)."""
    specs = list(specs)
    if store is None:
        return executor.run(specs, policy=policy, on_result=on_result)
    todo = [s for s in specs if store.get(s.job_id) is None]

    def finished(r: JobResult) -> None:
        if r.ok:
            store.commit(r)
        if on_result is not None:
            on_result(r)

    fresh = {r.job_id: r for r in executor.run(todo, policy=policy, on_result=finished)}
    # a concurrent driver may have stored an id first: the stored result is the one result
    return [store.get(s.job_id) or fresh[s.job_id] for s in specs]


class DistributedFitness:
    """A population fitness evaluated on an executor's workers, for metaheuristics whose candidates
    are costly (e.g. metaheuristic.StribeckFitness: O(N) per candidate). The fitness object, with
    its arrays, is stored once; each call sends only the candidates, split into ``chunks`` row
    blocks (default: one per worker), and returns the fitness in row order."""

    def __init__(self, executor, fitness, chunks: int | None = None, policy: RetryPolicy | None = None):
        self.executor = executor
        self.ref = executor.put(fitness)
        self.chunks = int(chunks or executor.workers)
        self.policy = policy
        self.calls = 0

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(np.asarray(X, float))
        blocks = np.array_split(np.arange(X.shape[0]), min(self.chunks, X.shape[0]))
        specs = [JobSpec("population", {"fitness": self.ref, "X": X[rows]}) for rows in blocks]
        results = self.executor.run(specs, policy=self.policy)
        self.calls += 1
        failed = [r for r in results if not r.ok]
        if failed:
            raise RuntimeError("population fitness: " + "; ".join(f"{r.job_id}: {r.error}" for r in failed))
        return np.concatenate([np.asarray(r.value, float) for r in results])


BATCH_FORMAT = "robodyn.scaleout.batch"
FILE_KINDS = {"identify": ("recordings",), "calibrate": ("measurements", "loaded")}


def job_specs(doc: dict) -> list[JobSpec]:
    """A batch document's jobs (see docs/scaling.md) as JobSpecs; a file job without an id is named
    by its files' state (:func:`file_job_id`)."""
    from pathlib import Path

    if doc.get("format") != BATCH_FORMAT:
        raise ValueError(f"batch: format is {doc.get('format')!r}, expected {BATCH_FORMAT!r}")
    jobs = doc.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise ValueError("batch: 'jobs' must be a non-empty list")
    specs = []
    for k, job in enumerate(jobs):
        spec = JobSpec.from_dict(job)  # validates kind, payload, id
        if not job.get("job_id") and spec.kind in FILE_KINDS:
            paths = [p for key in FILE_KINDS[spec.kind] for p in _as_list(spec.payload.get(key))]
            missing = [p for p in paths if not Path(p).exists()]
            if missing:
                raise FileNotFoundError(f"jobs[{k}]: no such file {missing[0]}")
            spec = JobSpec(spec.kind, spec.payload, file_job_id(spec.kind, spec.payload, paths))
        specs.append(spec)
    return specs


def _as_list(v) -> list:
    return [] if v is None else ([v] if isinstance(v, str) else list(v))


def run_batch_file(batch, out, *, cluster: str | None = None, workers: int | None = None, max_attempts: int = 3,
                   progress=None) -> dict:
    """Run a batch file's jobs (format robodyn.scaleout.batch) with results in the directory ``out``,
    skipping ids already there. ``cluster`` and ``workers`` override the file's. ``progress(done,
    total)`` is called as each job of this run finishes. Returns the summary (one row per job)."""
    import json
    from pathlib import Path

    from .executors import make_executor

    try:
        doc = json.loads(Path(batch).read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{batch}: not JSON ({exc})") from None
    specs = job_specs(doc)
    store = ResultStore(out)
    policy = RetryPolicy(max_attempts=max_attempts)
    cluster = cluster or doc.get("cluster")
    todo = sum(store.get(s.job_id) is None for s in specs)
    done = []

    def finished(r: JobResult) -> None:
        done.append(r.job_id)
        if progress is not None:
            progress(len(done), todo)

    with make_executor(cluster, workers or doc.get("workers"), policy) as executor:
        results = run_batch(executor, specs, store, policy, on_result=finished)
    return {"out": str(out), "cluster": cluster or "local", "jobs": len(results),
            "ok": sum(r.ok for r in results),
            "results": [{"job_id": r.job_id, "kind": r.kind, "ok": r.ok, "attempts": r.attempts,
                         "elapsed_s": r.elapsed_s, "error": r.error} for r in results]}
