"""The job specification and the result format shared by every executor, and the bookkeeping that
makes retries safe.

A :class:`JobSpec` names what to compute (``kind`` + ``payload``) and carries a ``job_id``. Unless
the caller names it, the id is a digest of kind and payload, so submitting the same work twice
yields the same id: the id, not the submission, is the unit of exactly-once.

Large inputs never sit in a payload by value: an executor's ``put`` stores them once and returns a
:class:`Ref` (a file a local worker maps, or a Ray object-store reference). A Ref enters the job
id by its content digest, so the id does not depend on where the object is stored.

The :class:`Ledger` is the driver's record of one batch. Executions are at-least-once (a worker
that dies after finishing its work is indistinguishable from one that died before it), results
are exactly-once: the first result recorded for an id is kept, later ones are dropped, and an id
whose attempts are exhausted gets a failure result, so no id is ever missing from the answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

JOB_FORMAT = "robodyn.scaleout.job"
RESULT_FORMAT = "robodyn.scaleout.result"
FORMAT_VERSION = 1
KINDS = ("identify", "excitation-start", "population", "calibrate")
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")  # also a safe file name in a ResultStore


@dataclass(frozen=True)
class Ref:
    """A large object stored once by an executor; workers resolve it (see tasks.resolve)."""

    key: str  # content digest: the object's identity in job ids and in a worker's cache
    handle: object  # where it lives: a file path (local pool) or a ray.ObjectRef


def digest(obj) -> str:
    """A stable content digest of a payload: JSON-like values, numpy arrays and Refs."""
    h = hashlib.sha256()
    _feed(h, obj)
    return h.hexdigest()


def _feed(h, obj) -> None:
    # every branch writes a type tag first so that, e.g., the list [1] and the array [1.0] differ
    if isinstance(obj, Ref):
        h.update(b"R" + obj.key.encode())
    elif isinstance(obj, np.ndarray):
        a = np.ascontiguousarray(obj)
        h.update(b"A" + f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    elif isinstance(obj, dict):
        h.update(b"D%d" % len(obj))
        for k in sorted(obj):
            _feed(h, str(k))
            _feed(h, obj[k])
    elif isinstance(obj, (list, tuple)):
        h.update(b"L%d" % len(obj))
        for v in obj:
            _feed(h, v)
    elif obj is None or isinstance(obj, (bool, int, float, str, np.generic)):
        h.update(b"V" + json.dumps(obj.item() if isinstance(obj, np.generic) else obj).encode())
    else:
        raise TypeError(f"payload: cannot digest a {type(obj).__name__}; store it with executor.put() and pass the Ref")


@dataclass(frozen=True)
class JobSpec:
    kind: str
    payload: dict
    job_id: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {list(KINDS)}, got {self.kind!r}")
        if not isinstance(self.payload, dict):
            raise ValueError(f"payload: expected a dict, got {type(self.payload).__name__}")
        if not self.job_id:
            object.__setattr__(self, "job_id", f"{self.kind}-{digest(self.payload)[:20]}")
        if not ID_PATTERN.match(self.job_id) or ".." in self.job_id:
            raise ValueError(f"job_id: {self.job_id!r} must be letters, digits, '-', '_', '.' (at most 128)")

    def to_dict(self) -> dict:
        return {"format": JOB_FORMAT, "version": FORMAT_VERSION, "job_id": self.job_id, "kind": self.kind,
                "payload": self.payload}

    @classmethod
    def from_dict(cls, d: dict) -> "JobSpec":
        if d.get("format", JOB_FORMAT) != JOB_FORMAT:
            raise ValueError(f"job: format is {d.get('format')!r}, expected {JOB_FORMAT!r}")
        unknown = set(d) - {"format", "version", "job_id", "kind", "payload"}
        if unknown:
            raise ValueError(f"job: unknown field(s) {sorted(unknown)}")
        return cls(d.get("kind"), d.get("payload"), d.get("job_id") or "")


@dataclass(frozen=True)
class JobResult:
    job_id: str
    kind: str
    ok: bool
    value: object  # JSON-ready; the kind's result document (None when not ok)
    error: str | None = None
    attempts: int = 1
    elapsed_s: float = 0.0  # time spent in the task on the worker (not queueing or transport)
    worker: str = ""  # host:pid that produced the kept result
    cpu_s: float = 0.0  # CPU time of the worker process in the task: below elapsed_s on a busy machine

    def to_dict(self) -> dict:
        return {"format": RESULT_FORMAT, "version": FORMAT_VERSION, "job_id": self.job_id, "kind": self.kind,
                "ok": self.ok, "value": self.value, "error": self.error, "attempts": self.attempts,
                "elapsed_s": self.elapsed_s, "worker": self.worker, "cpu_s": self.cpu_s}

    @classmethod
    def from_dict(cls, d: dict) -> "JobResult":
        if d.get("format") != RESULT_FORMAT or d.get("version") != FORMAT_VERSION:
            raise ValueError(f"result: expected {RESULT_FORMAT} version {FORMAT_VERSION}, got "
                             f"{d.get('format')!r} version {d.get('version')!r}")
        return cls(d["job_id"], d["kind"], d["ok"], d["value"], d.get("error"), d.get("attempts", 1),
                   d.get("elapsed_s", 0.0), d.get("worker", ""), d.get("cpu_s", 0.0))


def _json_default(o):
    # result documents come from numpy code; an int64 rank or a float64 must not stop a commit
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` executions per job id when a worker is lost (crash, killed process, lost
    node). An exception raised by the job itself is a result (ok = False), retried only when
    ``retry_errors`` is set: a bad recording fails the same way on every machine."""

    max_attempts: int = 3
    retry_errors: bool = False

    def __post_init__(self):
        if int(self.max_attempts) < 1:
            raise ValueError(f"max_attempts: must be >= 1, got {self.max_attempts}")


KEPT, DUPLICATE, RETRY = "kept", "duplicate", "retry"


@dataclass
class Ledger:
    """The driver's record of one batch (see the module docstring)."""

    specs: dict  # job_id -> JobSpec, first occurrence of each id
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    attempts: dict = field(default_factory=dict)
    results: dict = field(default_factory=dict)

    @classmethod
    def of(cls, specs: Iterable[JobSpec], policy: RetryPolicy | None = None) -> "Ledger":
        unique: dict = {}
        for s in specs:
            # compared by digest: payloads hold arrays, whose == is elementwise
            if s.job_id in unique and digest([s.kind, s.payload]) != digest([unique[s.job_id].kind,
                                                                               unique[s.job_id].payload]):
                raise ValueError(f"job_id: {s.job_id!r} names two different jobs")
            unique.setdefault(s.job_id, s)
        return cls(unique, policy or RetryPolicy(), {k: 0 for k in unique})

    def start_attempt(self, job_id: str) -> int:
        self.attempts[job_id] += 1
        return self.attempts[job_id]

    def record(self, result: JobResult) -> str:
        """KEPT (first result for its id), DUPLICATE (dropped) or RETRY (a job error to run again)."""
        if result.job_id not in self.specs:
            raise KeyError(f"result for unknown job {result.job_id!r}")
        if result.job_id in self.results:
            return DUPLICATE
        if not result.ok and self.policy.retry_errors and self.attempts[result.job_id] < self.policy.max_attempts:
            return RETRY
        self.results[result.job_id] = replace(result, attempts=self.attempts[result.job_id])
        return KEPT

    def lost(self, job_id: str, reason: str) -> str:
        """A worker died or its result was lost: RETRY while attempts remain, else record a failure."""
        if job_id in self.results:
            return DUPLICATE
        if self.attempts[job_id] < self.policy.max_attempts:
            return RETRY
        spec = self.specs[job_id]
        self.results[job_id] = JobResult(job_id, spec.kind, False, None,
                                         f"lost after {self.attempts[job_id]} attempt(s): {reason}",
                                         self.attempts[job_id])
        return KEPT

    @property
    def pending(self) -> list[str]:
        return [k for k in self.specs if k not in self.results]

    def ordered(self, specs: Sequence[JobSpec]) -> list[JobResult]:
        """Results in the order of ``specs`` (a repeated id gets the same result again)."""
        return [self.results[s.job_id] for s in specs]


class ResultStore:
    """Results on disk, one ``<job_id>.json`` per id, first writer wins. A batch re-run after the
    driver died skips ids already stored, and two drivers racing on one id cannot both record it."""

    def __init__(self, directory):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)

    def path(self, job_id: str) -> Path:
        if not ID_PATTERN.match(job_id) or ".." in job_id:
            raise ValueError(f"job_id: {job_id!r} is not a valid id")
        return self.dir / f"{job_id}.json"

    def get(self, job_id: str) -> JobResult | None:
        try:
            return JobResult.from_dict(json.loads(self.path(job_id).read_text()))
        except FileNotFoundError:
            return None

    def commit(self, result: JobResult) -> bool:
        """Store ``result`` unless its id is already stored; True when this call stored it."""
        final = self.path(result.job_id)
        tmp = final.with_name(f".{result.job_id}.{os.getpid()}.{id(result)}.tmp")
        tmp.write_text(json.dumps(result.to_dict(), indent=1, default=_json_default))
        try:
            os.link(tmp, final)  # atomic and fails if the name exists: the first writer wins
            return True
        except FileExistsError:
            return False
        finally:
            tmp.unlink()

    def job_ids(self) -> list[str]:
        return sorted(p.stem for p in self.dir.glob("*.json"))
