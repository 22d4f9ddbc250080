"""Multi-start excitation design on an executor: one job per start, combined as in one process."""

from __future__ import annotations

import numpy as np

from robodyn.identification import optimizers as opt

from .jobs import JobSpec


def start_jobs(executor, model, request) -> list[JobSpec]:
    """One ``excitation-start`` job per start. The model and the request go to the executor's store
    once; every job carries only references and its start index."""
    model_ref, request_ref = executor.put(model), executor.put(request)
    return [JobSpec("excitation-start", {"model": model_ref, "request": request_ref, "runs": [k]})
            for k in range(int(request.starts))]


def result_from_doc(doc: dict) -> opt.OptimizeResult:
    return opt.OptimizeResult(np.asarray(doc["x"], float), float(doc["fun"]), doc["method"], int(doc["nit"]),
                              int(doc["nfev"]), float(doc["elapsed"]), bool(doc["feasible"]), doc["message"],
                              list(doc.get("history", [])), list(doc["runs"]))


def run_starts(executor, model, request) -> opt.OptimizeResult:
    """The optimizer result of all ``request.starts`` starts, as ``minimize(restarts=starts)`` gives
    it in one process (same winner, same x; ``elapsed`` is the starts' total compute time)."""
    results = executor.run(start_jobs(executor, model, request))
    failed = [r for r in results if not r.ok]
    if failed:
        # the request was already built and checked in the driver, so this is no user error
        raise RuntimeError("excitation design: " + "; ".join(f"{r.job_id}: {r.error}" for r in failed))
    return opt.best_of([result_from_doc(r.value) for r in results])
