"""Reads whose cost grows with a file's size, kept out of the daemon's main process: decoding a
recording for ``recording_info``, a finished job's result for ``pull`` (a few hundred kB of JSON:
about 5 ms to decode and encode, five real-time periods a stop would wait behind) and indexing,
once at start, the recordings that have no index entry (recording/index.py). They run in one
worker process; the main loop only hands them over and sends the reply when the result is there (a deferred reply), so an observer asking for the
largest file delays no ``abort``, no ``disarm`` and no telemetry.

Each client may have :data:`MAX_HEAVY_PER_CLIENT` such reads in flight and all clients together
:data:`MAX_HEAVY_TOTAL`; one more is answered ``busy`` at once, never queued.

One object of :class:`robodyn.daemon.server.Daemon`, handed its collaborators.
"""

from __future__ import annotations

import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from . import protocol as P

log = logging.getLogger("robodyn.daemon")

MAX_HEAVY_PER_CLIENT = 1
MAX_HEAVY_TOTAL = 4
INDEX_BATCH = 16  # recordings indexed per worker task at start: a request waits behind one batch at most


def recording_info_work(path: str) -> dict:
    """In the worker: the full description of one recording (decodes every sample)."""
    from robodyn.recording.reader import load_recording, recording_summary_line

    rec = load_recording(path)
    return {**recording_summary_line(rec), "summary": rec.summary, "gaps": rec.gaps(),
            "truncated": rec.truncated, "columns": rec.meta.get("columns"), "units": rec.units}


def index_work(paths: list[str]) -> list[dict]:
    """In the worker: index entries of recordings that have none (written for complete files)."""
    from robodyn.recording.index import build_index

    return [build_index(p) for p in paths]


def packed_json_work(path: str, head: dict, key: str) -> bytes:
    """In the worker: the reply's result ``{**head, key: <the JSON document at path>}``, encoded
    (msgpack) here, so the main process only splices the bytes into the reply."""
    import json

    from . import protocol as P

    with open(path, "rb") as fh:
        return P.packb({**head, key: json.loads(fh.read())})


@dataclass
class HeavyRead:
    future: object
    client: str | None  # None: the daemon's own work (indexing), not a client's
    envelope: list
    rid: object
    finish: object  # callable(result) -> reply dict or encoded result bytes, or None for the daemon's own work
    what: str = "the recording"  # named when the read fails


class HeavyReads:
    """The worker for heavy reads and the replies waiting on it, and the listing of the recordings.

    Handed what it needs: the recording index and its folder, the request being handled
    (dispatch.RequestContext: who asks, where the reply goes), the run in progress (``current_run()``,
    whose file is not read while it is written) and the control endpoint's ``reply_later``,
    ``count_error`` and ``state_changed``. Indexing the recordings that have no entry starts here."""

    def __init__(self, recording_index, recordings_dir: Path, request, current_run, *, reply_later, count_error,
                 state_changed):
        self.recording_index = recording_index
        self.recordings_dir = recordings_dir
        self.request = request
        self.current_run = current_run
        self.reply_later, self.count_error, self.state_changed = reply_later, count_error, state_changed
        self.pool = None
        self.in_flight: list[HeavyRead] = []
        self.counts = {"submitted": 0, "busy_refused": 0, "indexed_at_start": 0}
        missing = [str(p) for p in self.recording_index.missing]
        for k in range(0, len(missing), INDEX_BATCH):
            self._submit(None, index_work, missing[k:k + INDEX_BATCH], finish=None)
        if missing:
            log.info("%d recordings have no index entry (made by an older version or copied in): indexing "
                     "them in the worker", len(missing))

    def report(self) -> dict:
        """For ``status``: reads in flight and the counters."""
        return {"in_flight": len(self.in_flight), **self.counts}

    def _pool(self) -> ProcessPoolExecutor:
        if self.pool is None:
            self.pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return self.pool

    def defer_to_worker(self, fn, *args, finish, what: str):
        """For a command handler (the daemon's or an extension's): ``fn(*args)`` runs in the worker
        within the calling client's limit, the reply is ``finish(result)`` (a dict, or the result's
        encoded bytes) and is sent when it is done. Returns the handler's "reply later" result."""
        from .dispatch import DEFERRED

        self._submit(self.request.client_key(), fn, *args, finish=finish, what=what)
        return DEFERRED

    def _submit(self, client: str | None, fn, *args, finish, what: str = "the recording") -> None:
        """Hand ``fn(*args)`` to the worker; the reply to the current request is sent when done."""
        if client is not None:
            mine = sum(1 for h in self.in_flight if h.client == client)
            clients = sum(1 for h in self.in_flight if h.client is not None)
            if mine >= MAX_HEAVY_PER_CLIENT or clients >= MAX_HEAVY_TOTAL:
                self.counts["busy_refused"] += 1
                which = f"this client has {mine} of its {MAX_HEAVY_PER_CLIENT}" if mine >= MAX_HEAVY_PER_CLIENT \
                    else f"{clients} of the daemon's {MAX_HEAVY_TOTAL}"
                raise P.ProtocolError(P.E_BUSY, f"busy: {which} heavy reads in progress; ask again when it is answered")
        try:
            future = self._pool().submit(fn, *args)
        except BrokenProcessPool:  # the worker died (e.g. out of memory): a new one
            self.pool = None
            future = self._pool().submit(fn, *args)
        self.counts["submitted"] += 1
        self.in_flight.append(HeavyRead(future, client, list(self.request.envelope) if client is not None else [],
                                        self.request.rid, finish, what))

    def complete(self) -> None:
        """From the main loop: reply to every finished heavy read."""
        if not self.in_flight or not any(h.future.done() for h in self.in_flight):
            return
        self.state_changed()  # e.g. recordings indexed at start: listed now
        waiting = []
        for h in self.in_flight:
            if not h.future.done():
                waiting.append(h)
                continue
            exc = h.future.exception()
            if h.finish is None:  # indexing at start
                if exc is None:
                    for row in h.future.result():
                        self.recording_index.put(row, only_if_indexing=True)
                        self.counts["indexed_at_start"] += 1
                else:
                    log.warning("indexing recordings failed: %s", exc)
                    if isinstance(exc, BrokenProcessPool):
                        self.pool = None
                continue
            if exc is None:
                try:
                    result = h.finish(h.future.result())
                    reply = P.ok_reply_packed(h.rid, result) if isinstance(result, bytes) else P.ok_reply(h.rid, result)
                except P.ProtocolError as perr:
                    reply = P.error_reply(h.rid, perr.code, perr.message, perr.details)
            else:
                if isinstance(exc, BrokenProcessPool):
                    self.pool = None
                # a damaged or vanished file is the data's state, not a daemon bug
                code = P.E_NOT_FOUND if isinstance(exc, FileNotFoundError) else \
                    P.E_UNAVAILABLE if isinstance(exc, (OSError, ValueError)) else P.E_INTERNAL
                self.count_error(code)
                reply = P.error_reply(h.rid, code, f"could not read {h.what}: {type(exc).__name__}: "
                                                   f"{str(exc).splitlines()[0] if str(exc) else ''}")
            self.reply_later(h.envelope, reply)
        self.in_flight = waiting

    def close(self) -> None:
        """At shutdown: a read in progress is of no use any more; its worker is stopped, not awaited."""
        pool, self.pool = self.pool, None
        if pool is None:
            return
        workers = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in workers:
            if proc.is_alive():
                proc.terminate()

    # ----------------------------------------------------------------- commands

    def cmd_recording_info(self, args):
        rid = args["recording"]  # an id by schema (P.check_id): never a path
        path = self.recordings_dir / f"{rid}.mcap"
        if not path.exists():
            raise P.ProtocolError(P.E_NOT_FOUND, f"no recording {rid!r}", field="args.recording")
        current = self.current_run()
        if current is not None and current.path == str(path):
            raise P.ProtocolError(P.E_BUSY, f"busy: recording {rid!r} is being written; ask when its run has ended",
                                  field="args.recording")
        return self.defer_to_worker(recording_info_work, str(path), finish=lambda info: info, what="the recording")

    def cmd_recordings(self, args) -> dict:
        """A page of the in-memory index: no file is read (recording/index.py)."""
        total = len(self.recording_index)
        offset, limit = P.page_bounds(args, total)
        rows, current = [], self.current_run()
        for row in self.recording_index.page(offset, limit):
            if current is not None and row["path"] == current.path:
                row = {"id": current.id, "path": row["path"], "status": "recording"}
            rows.append(row)
        return P.page_reply("recordings", rows, offset, limit, total)

    def index_opened(self, run_id: str, path: str) -> None:
        """A run's file exists from its opening: listed as 'recording' until the recorder's entry."""
        self.recording_index.put({"id": run_id, "path": path, "status": "recording"})

    def index_closed(self, run_id: str, path: str, row: dict | None) -> None:
        if row:
            self.recording_index.put(row)
        elif not Path(path).exists():  # never opened
            if (self.recording_index.get(run_id) or {}).get("status") == "recording":
                self.recording_index.remove(run_id)
        elif (self.recording_index.get(run_id) or {}).get("status") == "recording" and Path(path).exists():
            # the recorder died or could not finish: its successor repairs the file and sends the entry
            self.recording_index.put({"id": run_id, "path": path, "status": "unfinished (awaiting repair)"})
