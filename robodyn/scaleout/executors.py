"""Executors: who runs a batch of JobSpecs. All share :meth:`Executor.run` (submission, retries,
exactly-once results through a :class:`~.jobs.Ledger`); they differ only in how a task is
submitted, awaited and how a large object is stored once.

- :class:`LocalExecutor`: a process pool on this machine (the default). Large objects go to a
  pickle file in a private temporary directory; a worker loads each one once.
- :class:`RayExecutor`: Ray tasks on a local Ray instance or a cluster (``ray://HOST:PORT``).
  Large objects go to Ray's object store with one ``ray.put``; tasks receive references.
- :class:`InlineExecutor`: the calling process, one job after another (debugging, tiny batches).

Every worker runs with one BLAS / OpenMP / Numba thread. The executor's parallelism is its
workers, and a fixed thread count also fixes the summation order inside BLAS and Numba
reductions, so a job gives bit-identical results on a pool worker and on a Ray worker.
"""

from __future__ import annotations

import abc
import concurrent.futures as cf
import contextlib
import hashlib
import multiprocessing
import os
import pickle
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from .jobs import KEPT, RETRY, JobResult, JobSpec, Ledger, Ref, RetryPolicy
from .tasks import execute

THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "NUMBA_NUM_THREADS": "1"}

Task = Callable[[JobSpec, int], JobResult]


def object_key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Executor(abc.ABC):
    """Base class: subclasses implement put, _submit, _wait (and close when they hold resources)."""

    workers: int = 1
    policy: RetryPolicy = RetryPolicy()

    @abc.abstractmethod
    def put(self, obj) -> Ref:
        """Store a large object once; jobs carry the returned Ref."""

    @abc.abstractmethod
    def _submit(self, task: Task, spec: JobSpec, attempt: int):
        """Start one attempt of a job; returns a handle for _wait."""

    @abc.abstractmethod
    def _wait(self, handles: list) -> list[tuple[object, object]]:
        """At least one (handle, JobResult or the exception that lost it) of the in-flight handles."""

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def run(self, specs: Iterable[JobSpec], *, policy: RetryPolicy | None = None, task: Task = execute,
            on_result: Callable[[JobResult], None] | None = None) -> list[JobResult]:
        """Run ``specs``; one result per spec, in order. A repeated job id runs once. ``on_result`` is
        called once per job id with the kept result, as results arrive (to store or report them)."""
        specs = list(specs)
        ledger = Ledger.of(specs, policy or self.policy)
        inflight: dict = {}

        def launch(job_id: str) -> None:
            attempt = ledger.start_attempt(job_id)
            inflight[self._submit(task, ledger.specs[job_id], attempt)] = job_id

        for job_id in ledger.pending:
            launch(job_id)
        while inflight:
            for handle, outcome in self._wait(list(inflight)):
                job_id = inflight.pop(handle)
                if isinstance(outcome, JobResult) and outcome.job_id == job_id:
                    verdict = ledger.record(outcome)
                else:
                    verdict = ledger.lost(job_id, _describe(outcome))
                if verdict == RETRY:
                    launch(job_id)
                elif verdict == KEPT and on_result is not None:
                    on_result(ledger.results[job_id])
        return ledger.ordered(specs)


def _describe(outcome) -> str:
    if isinstance(outcome, BaseException):
        return f"{type(outcome).__name__}: {outcome}".strip(": ")
    return f"the task returned {type(outcome).__name__} for another job"


# --------------------------------------------------------------------------- in-process


class InlineExecutor(Executor):
    """Runs each job in the calling process as it is submitted (no parallelism, no isolation)."""

    workers = 1

    def __init__(self, policy: RetryPolicy | None = None):
        self.policy = policy or RetryPolicy()
        self._objects: dict = {}

    def put(self, obj) -> Ref:
        data = pickle.dumps(obj, protocol=5)
        key = object_key(data)
        # a private copy, as a worker would see it: a caller mutating obj later changes no job
        self._objects.setdefault(key, pickle.loads(data))
        return Ref(key, _InlineHandle(key, self._objects))

    def _submit(self, task, spec, attempt):
        try:
            return _Done(task(spec, attempt))
        except Exception as exc:  # noqa: BLE001 - the ledger decides (retry or failure result)
            return _Done(exc)

    def _wait(self, handles):
        return [(h, h.outcome) for h in handles]


class _Done:
    def __init__(self, outcome):
        self.outcome = outcome


class _InlineHandle:
    """Resolves in the same process; pickling it (to another process) is an error by design."""

    def __init__(self, key, objects):
        self.key, self.objects = key, objects

    def load(self):
        return self.objects[self.key]

    def __reduce__(self):
        raise TypeError("an InlineExecutor reference cannot leave its process")


# --------------------------------------------------------------------------- local process pool


@contextlib.contextmanager
def worker_environment():
    """THREAD_ENV in os.environ while worker processes may start: a spawned child copies the
    parent's environment at start, before numpy or numba read it."""
    saved = {k: os.environ.get(k) for k in THREAD_ENV}
    os.environ.update(THREAD_ENV)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class LocalExecutor(Executor):
    """A pool of ``workers`` processes on this machine (default: one per CPU).

    ``spawn`` start method: the driver may hold threads (Numba, BLAS, Ray), which ``fork`` would copy
    in an arbitrary state. If a worker dies the pool is broken for every job in it; the pool is
    rebuilt and every job that was in flight is retried (its attempt counts)."""

    def __init__(self, workers: int | None = None, policy: RetryPolicy | None = None):
        self.workers = int(workers or os.cpu_count() or 1)
        if self.workers < 1:
            raise ValueError(f"workers: must be >= 1, got {workers}")
        self.policy = policy or RetryPolicy()
        self._tmp = tempfile.TemporaryDirectory(prefix="robodyn-scaleout-")
        self._pool: cf.ProcessPoolExecutor | None = None

    def put(self, obj) -> Ref:
        data = pickle.dumps(obj, protocol=5)
        key = object_key(data)
        path = Path(self._tmp.name) / f"{key}.pkl"
        if not path.exists():  # content-addressed: a second put of the same object writes nothing
            part = path.with_suffix(".part")
            part.write_bytes(data)
            os.replace(part, path)
        return Ref(key, str(path))

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))

    def _submit(self, task, spec, attempt):
        with worker_environment():
            if self._pool is None:
                self._pool = self._new_pool()
            try:
                return self._pool.submit(task, spec, attempt)
            except cf.process.BrokenProcessPool:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._new_pool()
                return self._pool.submit(task, spec, attempt)

    def _wait(self, handles):
        done, _ = cf.wait(handles, return_when=cf.FIRST_COMPLETED)
        return [(f, _future_outcome(f)) for f in done]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._tmp.cleanup()


def _future_outcome(f: cf.Future):
    exc = f.exception()
    return exc if exc is not None else f.result()


# --------------------------------------------------------------------------- Ray


def _run_task(task: Task, spec: JobSpec, attempt: int) -> JobResult:
    return task(spec, attempt)


@contextlib.contextmanager
def _loopback_only(ray):
    """Keep a local Ray instance on 127.0.0.1. Ray rewrites a requested loopback node address to
    the machine's routable one (``_node_ip_address`` is no longer honoured) and then listens on
    every interface; its switch for single-machine platforms (macOS, Windows) makes every server
    bind to loopback instead. The environment variable reaches the processes ray.init starts
    (GCS, raylet, and the workers they start later); the module constant is the same switch for
    this process, where ray was imported before the variable could be read."""
    from ray._private import ray_constants

    name = ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR
    saved_env, saved_const = os.environ.get(name), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[name], ray_constants.ENABLE_RAY_CLUSTER = "0", False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_const
        if saved_env is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved_env


@contextlib.contextmanager
def _ray_start_in_one_line():
    """Ray waits a fixed 30 s for a local instance's raylet to register (not configurable); on an
    overloaded host that start fails with a long traceback of Ray's. Said in one line instead, with
    what to do."""
    try:
        yield
    except Exception as exc:
        if "timed out during startup" not in str(exc):
            raise
        from robodyn.errors import UserError

        raise UserError("cluster ray: the local Ray instance did not start within Ray's fixed 30 s (the host is "
                        "too busy for it); run again when it is quieter, or use --cluster local") from None


class RayExecutor(Executor):
    """Ray tasks, one CPU each. ``address``: None starts (or joins an already started) local Ray
    instance with ``workers`` CPUs, on the loopback address and without the dashboard;
    ``ray://HOST:PORT`` connects through Ray Client; ``auto`` or ``HOST:PORT`` joins a cluster
    from one of its nodes. Ray's own task retries are off (``max_retries=0``): retries are the
    ledger's, so attempts are counted in one place and a retried job keeps one result."""

    def __init__(self, address: str | None = None, workers: int | None = None, policy: RetryPolicy | None = None):
        import ray

        self.policy = policy or RetryPolicy()
        self._ray = ray
        self._owns = not ray.is_initialized()
        if self._owns:
            common = {"include_dashboard": False, "log_to_driver": False}
            if address is None:
                # Ray starts its workers at nice 15 (its `worker_niceness`); on a busy lab PC that
                # leaves them a sliver of the CPU beside any ordinary process (the fleet tests beside
                # `stress-ng --cpu 4` crawled). A local instance robodyn starts runs its work at the
                # caller's priority, as the process-pool executor does.
                with _loopback_only(ray), _ray_start_in_one_line():
                    try:
                        ray.init(num_cpus=workers, _system_config={"worker_niceness": 0}, **common)
                    except ValueError as exc:  # joined a local instance someone else started: its settings
                        if "_system_config" not in str(exc):
                            raise
                        ray.init(num_cpus=workers, **common)
            else:
                ray.init(address=address, **common)
        self.workers = int(ray.cluster_resources().get("CPU", 1))
        self._remote = ray.remote(num_cpus=1, max_retries=0, runtime_env={"env_vars": dict(THREAD_ENV)})(_run_task)

    def put(self, obj) -> Ref:
        # the digest needs the bytes once; the object itself goes to the store once, as Ray serialises it
        return Ref(object_key(pickle.dumps(obj, protocol=5)), self._ray.put(obj))

    def _submit(self, task, spec, attempt):
        return self._remote.remote(task, spec, attempt)

    def _wait(self, handles):
        ready, _ = self._ray.wait(handles, num_returns=1)
        out = []
        for ref in ready:
            try:
                out.append((ref, self._ray.get(ref)))
            except Exception as exc:  # noqa: BLE001 - worker crash, lost object, cancelled task
                out.append((ref, exc))
        return out

    def close(self) -> None:
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()


def make_executor(cluster: str | None = None, workers: int | None = None,
                  policy: RetryPolicy | None = None) -> Executor:
    """``cluster``: None or ``local`` (process pool), ``inline``, ``ray`` (local Ray instance),
    ``ray://HOST:PORT`` (Ray Client) or ``ray:ADDRESS`` (join a cluster, e.g. ``ray:auto``)."""
    if cluster in (None, "", "local"):
        return LocalExecutor(workers, policy)
    if cluster == "inline":
        return InlineExecutor(policy)
    if cluster == "ray":
        return RayExecutor(None, workers, policy)
    if cluster.startswith("ray://"):
        return RayExecutor(cluster, None, policy)
    if cluster.startswith("ray:"):
        return RayExecutor(cluster[len("ray:"):], None, policy)
    raise ValueError(f"cluster: expected local, inline, ray, ray://HOST:PORT or ray:ADDRESS, got {cluster!r}")
