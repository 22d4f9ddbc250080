"""Requests on the control socket: framing, schema validation, authentication (the client's
name from CurveZMQ), authorisation by role, dispatch to the registered handlers and the replies,
immediate or deferred.

Objects built by :class:`robodyn.daemon.server.Daemon` and handed what they need: the
:class:`Dispatcher` (one request in, one reply out), which asks the access control
(control_access.py: token, client name, role), the :class:`ReplyChannel` every part replies and
counts through, and the :class:`RequestContext` (the request being handled) it sets for the
handlers.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

from . import protocol as P
from . import request_decoding as R
from .control_access import COMMAND_ROLES, AccessControl  # noqa: F401 (the roles' table, imported from here too)
from .schedstat import open_schedstat, run_delay_s

log = logging.getLogger("robodyn.daemon")

# the transport refuses larger frames outright (and drops that connection), so a frame claiming
# gigabytes is never buffered; between the request cap and this, the client gets `malformed`
TRANSPORT_MAX_BYTES = 2 * P.MAX_REQUEST_BYTES
DEFERRED = object()  # a handler's result meaning "the reply is sent later"
# answered at once whatever else is asked: their latency is measured and reported (below)
STOP_COMMANDS = ("abort", "disarm")
MAX_BURST = 100  # requests handled in a row before the worker pipes are read again
MAX_WAITING = 1000  # requests read off the socket and not yet handled (REQ clients have one each)
# Observers' reads are answered from the bytes of the last identical one (same command, arguments
# and role) while nothing has changed (:attr:`ReplyChannel.state_generation`, bumped by every
# command that is not a read and every worker event but the periodic telemetry and statistics) and
# for at most READ_CACHE_S: a flood of them costs the main loop an unpack, a dictionary look-up and a send
# each, and a stop waits behind no status built or listing encoded per request. The rows of a
# listing are encoded once each (ROW_CACHE_MAX kept), so even a page of MAX_PAGE rows built anew
# is a join of bytes. What a read may miss meanwhile: the periodic figures (telemetry, counters)
# of the last READ_CACHE_S (listings: below).
CACHED_READS = frozenset({"status", "describe", "runs", "recordings", "jobs"})
READ_ONLY = CACHED_READS | {"ping", "run_status", "recording_info", "job_status", "pull"}
READ_CACHE_S = 0.02
# a listing's own changes invalidate it (:meth:`Dispatcher._read_generation`): recordings and finished
# jobs at once; a page with a job still queued or running is rebuilt after UNFINISHED_JOBS_S (its
# progress is read from the job's file)
LISTING_CACHE_S = 10.0
UNFINISHED_JOBS_S = 0.5
READ_CACHE_MAX = 256
ROW_CACHE_MAX = 20_000


class RateLimitedLog:
    """Warnings about bad input: the first ``burst`` per window individually, the rest counted
    in one summary line, so a flood of garbage cannot flood the journal but every frame is
    accounted for in a log line."""

    def __init__(self, logger: logging.Logger, window_s: float = 10.0, burst: int = 5,
                 what: str = "dropped control messages"):
        self.logger, self.window_s, self.burst, self.what = logger, window_s, burst, what
        self.window_start = time.monotonic()
        self.in_window = 0
        self.suppressed = 0
        self.total = 0

    def warning(self, msg: str, *args) -> None:
        self.total += 1
        self.flush()
        self.in_window += 1
        if self.in_window <= self.burst:
            self.logger.warning(msg, *args)
        else:
            self.suppressed += 1

    def flush(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.window_start < self.window_s:
            return
        if self.suppressed:
            self.logger.warning("%d more %s in the last %.0f s (not logged one by one)",
                                self.suppressed, self.what, now - self.window_start)
        self.window_start, self.in_window, self.suppressed = now, 0, 0


@dataclass
class RequestContext:
    """The request being handled, as the handlers need it: the client's authenticated name
    (``peer``, '' without CurveZMQ), where a deferred reply goes (``envelope``), the request's id
    and what a large request's thread prepared for its handler (intake.py). Set by the dispatch
    before each handler runs; one object, handed to every part of the daemon that replies later."""

    peer: str = ""
    envelope: list = field(default_factory=list)
    rid: object = None
    prepared: dict = field(default_factory=dict)

    def client_key(self) -> str:
        """Whose share a per-client limit counts against: the authenticated name, else the
        connection's identity."""
        if self.peer:
            return self.peer
        return bytes(self.envelope[0]).hex() if self.envelope else ""


class LogsAfterReply(logging.Filter):
    """Holds the daemon's log records while a stop is handled, to be written once its reply is
    sent: the stop's action (disarmed, the driver told to ramp down) comes first, its reply next,
    and the formatting and writing of its log lines (tens of microseconds each) after."""

    def __init__(self):
        super().__init__()
        self.held: list | None = None

    def filter(self, record) -> bool:
        if self.held is None:
            return True
        self.held.append(record)
        return False

    def hold(self) -> None:
        self.held = []

    def release(self) -> None:
        held, self.held = self.held or [], None
        for record in held:
            log.handle(record)


class ReplyChannel:
    """What every part that answers requests needs from the control endpoint: a reply sent later
    (a deferred one, or a large request's), an error counted for ``status``, and word that
    something a read reports has changed (no cached read is served any more). Built before the
    parts, handed to each of them and to the :class:`Dispatcher`."""

    def __init__(self, router, zmq):
        self.router, self.zmq = router, zmq
        self.errors: dict[str, int] = {}  # per error code
        self.state_generation = 0  # bumped by every change a read may report

    def state_changed(self) -> None:
        """Something a read reports has changed: no cached read is served any more."""
        self.state_generation += 1

    def count_error(self, code: str) -> None:
        self.state_changed()  # `status` counts them
        self.errors[code] = self.errors.get(code, 0) + 1

    def reply_later(self, envelope: list, reply: bytes) -> None:
        try:  # ROUTER drops a reply to a client that has gone: never blocks, never raises for that
            self.router.send_multipart(envelope + [reply], flags=self.zmq.NOBLOCK)
        except self.zmq.ZMQError as exc:
            log.warning("could not deliver a deferred reply: %s", exc)


class Dispatcher:
    """The control endpoint: one request in, one reply out (now or later). Built with what it
    needs: the control socket (``router``), the access control, the reply channel the parts share,
    the request context it sets before each handler, the handlers table (``commands``, name ->
    ``handler(args) -> dict``; extensions add to it through :meth:`add_command`), the large
    requests' threads (intake.py), the recordings' index and the runs (what a cached listing
    depends on), the robot's newest state (the rate a stop's latency is counted in), ``jobs()``,
    the identification jobs' manager if an extension registered one, and the two rate-limited
    logs. The poll loop (supervision.py) calls :meth:`serve` when the socket is readable and tells
    it of each round (:meth:`count_round`, :meth:`control_empty`)."""

    def __init__(self, router, zmq, access_control: AccessControl, replies: ReplyChannel, request: RequestContext,
                 commands: dict, large_requests, recording_index, robot, runs, *, jobs, dropped: RateLimitedLog,
                 logs_after_reply: LogsAfterReply):
        self.router, self.zmq, self.access, self.replies, self.request = router, zmq, access_control, replies, request
        self.commands = commands
        self.large_requests, self.recording_index, self.robot, self.runs = large_requests, recording_index, robot, runs
        self.jobs, self.dropped, self.logs_after_reply = jobs, dropped, logs_after_reply
        self.requests_total, self.requests_dropped = 0, 0
        # the stop commands' latency (below) and the main loop's rounds it is counted in
        self.loop_rounds = 0
        self.requests_handled = 0
        self.control_empty_at, self.control_empty_round, self.control_empty_handled = time.monotonic(), 0, 0
        self.requests_received = 0  # read off the control socket: a request's receive sequence number
        self.overtook = 0  # requests received before the stop being handled and still waiting
        self.received: tuple = ()
        self.waiting: list[tuple] = []  # read off the control socket, not yet handled
        self.request_cost: dict[str, dict] = {}  # per command: count, max and total handling time
        self.cmd = ""
        # this (the loop's) thread's scheduler statistics, for the stop latency
        self.schedstat = open_schedstat()
        self.control_empty_cpu = self.handling_cpu = time.thread_time()
        self.control_empty_delay = self.run_delay()
        self.control_empty_in_poll = False
        self.stop_latency = {"count": 0, "max_periods": None, "over_one_period": 0, "max_work_periods": None,
                             "work_over_one_period": 0, "max_requests_ahead": 0, "max_rounds": 0,
                             "max_handled_since_received": 0, "overtook": 0}
        # cached reads: their bytes, and what invalidates them
        self.read_cache: dict[tuple, tuple] = {}
        self.read_cache_counts = {"hits": 0, "built": 0}
        self.row_bytes: dict[int, tuple] = {}

    def add_command(self, name: str, args: dict, handler) -> None:
        """Register a request handler ``handler(args) -> dict`` (raise ProtocolError on errors)."""
        if name in self.commands:
            raise ValueError(f"command {name!r} already registered")
        if name not in P.COMMANDS:
            P.register_command(name, args)
        self.commands[name] = handler

    def close(self) -> None:
        if self.schedstat is not None:
            os.close(self.schedstat)
            self.schedstat = None

    def count_round(self) -> None:
        """The main loop's poll returned: one more round (a stop's latency counts those it spans)."""
        self.loop_rounds += 1

    def control_empty(self, when: float, cpu: float | None = None, delay: float | None = None,
                      in_poll: bool = False) -> None:
        """The main loop saw no request waiting at ``when``: any later one arrived after it. The
        main thread's CPU clock (and run-queue time) is read with it, or given, read at ``when``:
        the work the loop did from then on is what it did before a stop that came in later.
        ``in_poll``: ``when`` is the start of a poll that woke for the control socket, so the
        request came in sometime during the poll's sleep (``wall_periods``, below)."""
        self.control_empty_at, self.control_empty_round = when, self.loop_rounds
        self.control_empty_handled = self.requests_handled
        self.control_empty_cpu = time.thread_time() if cpu is None else cpu
        self.control_empty_delay = self.run_delay() if cpu is None else delay
        self.control_empty_in_poll = in_poll

    def run_delay(self) -> float | None:
        """Seconds the main thread has spent runnable but waiting for a CPU (the kernel's
        schedstat; None where it is not kept): the part of a stop's wait that is the host's
        scheduler, told apart from the daemon's work (its CPU clock) and from blocking."""
        return run_delay_s(self.schedstat)

    def control_readable(self) -> bool:
        """A request waits on the control socket (ZMQ_EVENTS: no poller made per call, as
        ``Socket.poll`` does; this runs before every request)."""
        return bool(self.router.getsockopt(self.zmq.EVENTS) & self.zmq.POLLIN)

    def _pack_row(self, row: dict) -> bytes:
        """A listing row's bytes, encoded once per row object (rows are replaced, never edited)."""
        hit = self.row_bytes.get(id(row))
        if hit is not None and hit[0] is row:
            return hit[1]
        if len(self.row_bytes) >= ROW_CACHE_MAX:
            self.row_bytes.clear()
        data = P.packb(row)
        self.row_bytes[id(row)] = (row, data)  # the row is kept: its id is never reused meanwhile
        return data

    def warm_rows(self) -> int:
        """The listing rows there are at start (recordings, finished jobs) encoded before the
        daemon reports ready: the first page of 1 000 rows built on a request is then a join of
        bytes, not 1 000 encodings (up to 4 ms of CPU under load, work a stop could wait behind)."""
        rows = list(self.recording_index.rows.values())
        jobs = self.jobs()
        if jobs is not None:
            with jobs.lock:
                rows += list(jobs._rows.values())
        for row in rows[:ROW_CACHE_MAX]:
            self._pack_row(row)
        return min(len(rows), ROW_CACHE_MAX)

    def _read_generation(self, cmd: str):
        """What a cached read of ``cmd`` depends on: listings only on their own entries (an
        operator arming and stopping in a loop leaves them valid); the rest on every change."""
        if cmd == "recordings":
            return self.recording_index.changes, getattr(self.runs.current, "id", None)
        if cmd == "jobs":  # a new job, a job finished (its row kept from then on)
            jobs = self.jobs()
            return None if jobs is None else (len(jobs.states), len(jobs._rows))
        return self.replies.state_generation

    def _cached_read(self, req: P.Request, rid, handler) -> bytes:
        """The reply to a read in CACHED_READS, from the last identical one when still valid."""
        key = (req.cmd, self.access.role_of(self.request.peer),
               tuple(sorted((k, repr(v)) for k, v in req.args.items())))
        now = time.monotonic()
        hit = self.read_cache.get(key)
        counts = self.read_cache_counts
        generation = self._read_generation(req.cmd)
        if hit is not None and hit[0] == generation and now < hit[1]:
            counts["hits"] += 1
            return P.ok_reply_packed(rid, hit[2])
        counts["built"] += 1
        result = handler(req.args)
        packed = P.pack_result(result, self._pack_row)
        if len(self.read_cache) >= READ_CACHE_MAX:
            self.read_cache.clear()
        if req.cmd == "recordings":
            life = LISTING_CACHE_S
        elif req.cmd == "jobs":
            unfinished = any(row.get("state") not in ("completed", "failed") for row in result.get("jobs") or ())
            life = UNFINISHED_JOBS_S if unfinished else LISTING_CACHE_S
        else:
            life = READ_CACHE_S
        self.read_cache[key] = (generation, now + life, packed)
        return P.ok_reply_packed(rid, packed)

    def serve(self, drain_driver) -> None:
        """Requests on the control socket, at most MAX_BURST handled before the worker pipes are
        read again (the rest wait in :attr:`waiting` for the next round). The socket is drained
        before each request is handled and a stop command goes first, so an `abort` or a
        `disarm` waits for at most the one request being handled when it came in, however many
        observers are asking: from its receipt to its reply no other request is handled (each
        stop's ``latency.handled_since_received``, counted by receive sequence numbers). Before
        any other request the driver's pipe is read (``drain_driver()``, the poll loop's): `arm`
        and `submit_run` judge the newest robot state the driver sent, not the last one the loop
        got to."""
        handled = 0
        waiting = self.waiting
        while True:
            while len(waiting) < MAX_WAITING and self.control_readable():
                item = self._receive()
                if item is not None:  # None: a large frame, answered or handed to its thread
                    waiting.append(item)
            if len(waiting) < MAX_WAITING:
                self.control_empty(time.monotonic())
            k = next((i for i, item in enumerate(waiting) if item[3]), None)
            if k is None:
                if not waiting or handled >= MAX_BURST:
                    return
                k = 0
                drain_driver()
            self.overtook = k  # requests received before this one, still waiting (stops only)
            self._handle_received(waiting.pop(k))
            handled += 1

    def _receive(self) -> tuple | None:
        """(frames, envelope, payload, urgent, empty_at, empty_handled, empty_round, empty_cpu,
        received_seq, handled_at_receipt, empty_run_delay, empty_in_poll) of one request, or of a framing error (envelope None);
        ``urgent``: it may be a stop command (a cheap look at the payload: a label that mentions
        one is only served early); ``received_seq``: its receive sequence number, and the count of
        requests handled when it was read off the socket."""
        frames = self.router.recv_multipart(copy=False)
        if 2 <= len(frames) <= 3 and len(frames[-1]) > R.INLINE_DECODE_BYTES and \
                (len(frames) == 2 or len(frames[1]) == 0):
            # never copied, never decoded here: its head is read and it is refused or handed on
            self.requests_received += 1
            self._screen_large([f.bytes for f in frames[:-1]], frames[-1])
            return None
        data = [f.bytes for f in frames]
        if len(data) == 3 and data[1] == b"":  # REQ client: identity, delimiter, payload
            envelope, payload = data[:2], data[2]
        elif len(data) == 2:  # DEALER client: identity, payload
            envelope, payload = data[:1], data[1]
        else:
            envelope, payload = None, data
        urgent = payload is not None and envelope is not None and any(c.encode() in payload for c in STOP_COMMANDS)
        self.requests_received += 1
        return (frames, envelope, payload, urgent, self.control_empty_at, self.control_empty_handled,
                self.control_empty_round, self.control_empty_cpu, self.requests_received, self.requests_handled,
                self.control_empty_delay, self.control_empty_in_poll)

    def _stop_latency(self) -> dict:
        """How long a stop command can have waited, from the last moment the loop saw the control
        queue empty before it came in to its reply (an upper bound: it arrived after that moment),
        in periods of the real-time loop: ``periods`` on the daemon's monotonic clock (the host's
        scheduler included), ``work_periods`` on its main thread's CPU clock (what the daemon
        itself did meanwhile: the requests ahead of it, the rest of the loop round, the stop's own
        handling); the requests handled in between and the main-loop rounds it spanned. Counted
        by the daemon's sequence numbers: ``handled_since_received``, the requests handled between
        the stop's receipt (read off the socket) and its reply (0: stops go first), and
        ``overtook``, the requests received before it and answered after it. Where the rest of
        the wait went: ``runqueue_periods``, the main thread runnable but not running (the host's
        scheduler), and ``blocked_periods``, neither running nor runnable (the GIL held by another
        thread, a poll). ``in_poll``: the span began with the loop asleep in its poll, and the
        stop came in during that sleep, which is then no part of its wait: ``wall_periods`` is
        ``periods`` less it (the work and the run queue), otherwise ``periods`` itself. Kept per
        daemon in ``status``."""
        if not self.received:  # a payload handled outside the loop (tests)
            return {"periods": None, "wall_periods": None, "work_periods": None, "requests_ahead": 0, "rounds": 0,
                    "rate_hz": None, "received_seq": None, "handled_since_received": 0, "overtook": 0}
        (_frames, _env, _payload, _urgent, empty_at, empty_handled, empty_round, empty_cpu, received_seq,
         handled_at_receipt, empty_delay, in_poll) = self.received
        delay, now, cpu_now = self.run_delay(), time.monotonic(), time.thread_time()
        rate = float(self.robot.rate_hz() or 0.0)
        waited = max(0.0, now - empty_at)
        worked = max(0.0, cpu_now - empty_cpu)
        runqueue = None if delay is None or empty_delay is None else max(0.0, delay - empty_delay)
        blocked = None if runqueue is None else max(0.0, waited - worked - runqueue)
        asleep = blocked if in_poll and blocked is not None else 0.0  # in the poll, before it came
        before = max(0.0, self.handling_cpu - empty_cpu)  # the part before the stop's own handling
        periods = waited * rate if rate else None
        wall = max(0.0, waited - asleep) * rate if rate else None
        work = worked * rate if rate else None
        ahead = max(0, self.requests_handled - empty_handled - 1)
        rounds = self.loop_rounds - empty_round
        since_received = self.requests_handled - handled_at_receipt - 1  # less the stop itself
        st = self.stop_latency
        st["count"] += 1
        st["max_handled_since_received"] = max(st["max_handled_since_received"], since_received)
        st["overtook"] += self.overtook
        st["max_requests_ahead"] = max(st["max_requests_ahead"], ahead)
        st["max_rounds"] = max(st["max_rounds"], rounds)
        if periods is not None:
            st["max_periods"] = max(st["max_periods"] or 0.0, wall)
            st["over_one_period"] += wall > 1.0
            st["max_work_periods"] = max(st["max_work_periods"] or 0.0, work)
            st["work_over_one_period"] += work > 1.0
        return {"periods": periods, "work_periods": work, "work_ahead_periods": before * rate if rate else None,
                "requests_ahead": ahead, "rounds": rounds, "rate_hz": rate or None, "received_seq": received_seq,
                "handled_since_received": since_received, "overtook": self.overtook,
                "runqueue_periods": None if runqueue is None or not rate else runqueue * rate,
                "blocked_periods": None if blocked is None or not rate else blocked * rate, "in_poll": in_poll,
                "wall_periods": wall}

    def _handle_received(self, item: tuple) -> None:
        frames, envelope, payload = item[:3]
        self.requests_handled += 1
        if envelope is None:
            data = payload
            self.requests_dropped += 1
            self.replies.state_changed()
            self.dropped.warning("dropped a control message with %d frames (expected 1 payload frame)",
                                 len(data) - 1)
            if len(data) >= 2:
                self.router.send_multipart([data[0], P.error_reply(None, P.E_MALFORMED,
                                                                   "expected exactly one payload frame")])
            return
        self.request.peer = self.access.user_id(frames[-1])
        self.request.envelope = envelope
        self.received = item
        started, started_cpu = time.monotonic(), time.thread_time()
        self.handling_cpu = started_cpu
        if item[3]:  # perhaps a stop: its log lines are written after its reply
            self.logs_after_reply.hold()
        try:
            reply = self.handle_payload(payload)
            if reply is not None:
                self.router.send_multipart(envelope + [reply])
        finally:
            if item[3]:
                self.logs_after_reply.release()
        # what one request costs the main loop (monotonic clock), per command: a stop waits for
        # at most one of these
        cost, cpu = time.monotonic() - started, time.thread_time() - started_cpu
        entry = self.request_cost.get(self.cmd)
        if entry is None and len(self.request_cost) < 64:
            entry = self.request_cost[self.cmd] = {"count": 0, "max_ms": 0.0, "total_ms": 0.0, "max_cpu_ms": 0.0,
                                                   "total_cpu_ms": 0.0}
        if entry is not None:  # wall clock (the host's scheduler included) and the thread's CPU clock
            entry["count"] += 1
            entry["total_ms"] += cost * 1e3
            entry["max_ms"] = max(entry["max_ms"], cost * 1e3)
            entry["total_cpu_ms"] += cpu * 1e3
            entry["max_cpu_ms"] = max(entry["max_cpu_ms"], cpu * 1e3)

    def handle_payload(self, payload: bytes) -> bytes | None:
        """Validate and dispatch one request; the encoded reply, or None when it is deferred."""
        rid = None
        self.cmd = "(invalid)"
        self.requests_total += 1
        try:
            obj = R.decode_request(payload)
            rid = P.request_id(obj)
            req = P.parse_request(obj)
        except P.ProtocolError as exc:
            self.replies.count_error(exc.code)
            return P.error_reply(getattr(exc, "request_id", None) if rid is None else rid, exc.code, exc.message,
                                 exc.details)
        except Exception as exc:  # a bug in the decoding: answer, log, keep serving
            self.replies.count_error(P.E_INTERNAL)
            log.exception("internal error while decoding a request")
            return P.error_reply(rid, P.E_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
        return self.dispatch_request(req, rid)

    def _screen_large(self, envelope: list, frame) -> None:
        """A frame over INLINE_DECODE_BYTES, judged by its head alone (request_decoding.request_head: the
        cost of an inline decode, whatever its size): refused at once unless its sender is known
        (the token before 'args', or a CurveZMQ identity) and may send that command, and then
        decoded on a thread of its own (daemon/intake.py) within the per-client share."""
        self.requests_total += 1
        large = self.large_requests
        large.counts["received"] += 1
        size, peer, rid = len(frame), self.access.user_id(frame), None
        try:
            if size > P.MAX_REQUEST_BYTES:
                raise P.ProtocolError(P.E_MALFORMED, f"message of {size} bytes exceeds the {P.MAX_REQUEST_BYTES}-byte "
                                                     "limit", field="request")
            head = R.request_head(frame.buffer)
            rid = P.request_id(head)
            self.access.authenticate_head(head, size, peer)
            cmd = head.get("cmd")
            if type(cmd) is str:  # a role refused before the decoding, not after it
                self.request.peer = peer
                self.access.authorise(cmd, peer)
            client = peer or bytes(envelope[0]).hex()
            large.admit(client)
        except P.ProtocolError as exc:
            large.counts["refused_before_decoding"] += 1
            self.replies.count_error(exc.code)
            self.replies.reply_later(envelope, P.error_reply(rid, exc.code, exc.message, exc.details))
            return
        except Exception as exc:  # a bug in the screening: answer, log, keep serving
            self.replies.count_error(P.E_INTERNAL)
            log.exception("internal error while screening a large request")
            self.replies.reply_later(envelope, P.error_reply(rid, P.E_INTERNAL,
                                                             f"internal error: {type(exc).__name__}: {exc}"))
            return
        large.start(client, peer, envelope, rid, frame)

    def complete_large(self) -> None:
        """From the main loop: dispatch every large request whose thread has decoded it."""
        for item in self.large_requests.finished():
            exc = item.future.exception()
            if exc is not None:
                self.large_requests.counts["refused_after_decoding"] += 1
                if isinstance(exc, P.ProtocolError):
                    self.replies.count_error(exc.code)
                    rid = getattr(exc, "request_id", None)
                    reply = P.error_reply(item.rid if rid is None else rid, exc.code, exc.message, exc.details)
                else:  # a bug in the decoding: answered, logged, the loop goes on
                    self.replies.count_error(P.E_INTERNAL)
                    log.error("internal error while decoding a large request: %s: %s", type(exc).__name__, exc)
                    reply = P.error_reply(item.rid, P.E_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")
                self.replies.reply_later(item.envelope, reply)
                continue
            self.large_requests.counts["decoded"] += 1
            rid, req, prepared = item.future.result()
            self.request.peer, self.request.envelope, self.received = item.peer, item.envelope, ()
            self.request.prepared = prepared or {}
            try:
                reply = self.dispatch_request(req, rid)
            finally:
                self.request.prepared = {}
            if reply is not None:
                self.replies.reply_later(item.envelope, reply)

    def dispatch_request(self, req: P.Request, rid) -> bytes | None:
        """Authenticate, authorise and run one parsed request; the encoded reply, or None when
        it is deferred."""
        try:
            self.cmd = req.cmd
            handler = self.commands.get(req.cmd)
            if handler is None:
                raise P.ProtocolError(P.E_UNKNOWN_COMMAND, f"command {req.cmd!r} is not available in this daemon")
            self.request.rid = rid
            self.access.authenticate(req)
            self.access.authorise(req.cmd, self.request.peer)
            if req.cmd in CACHED_READS:
                return self._cached_read(req, rid, handler)
            if req.cmd not in READ_ONLY:
                self.replies.state_changed()
            result = handler(req.args)
            if req.cmd in STOP_COMMANDS and isinstance(result, dict):
                result = {**result, "latency": self._stop_latency()}
            return None if result is DEFERRED else P.ok_reply(rid, result)
        except P.ProtocolError as exc:
            self.replies.count_error(exc.code)
            if rid is None:
                rid = getattr(exc, "request_id", None)
            return P.error_reply(rid, exc.code, exc.message, exc.details)
        except Exception as exc:  # a bug: answer, log, keep serving
            self.replies.count_error(P.E_INTERNAL)
            log.exception("internal error while handling a request")
            return P.error_reply(rid, P.E_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")

    def report(self) -> dict:
        """The control endpoint's counters, for ``status`` (status.py) with the loop's."""
        large = self.large_requests
        return {"requests": self.requests_total, "errors": dict(self.replies.errors),
                "dropped": self.requests_dropped, "stop_latency": dict(self.stop_latency),
                "loop_rounds": self.loop_rounds,
                "request_cost_ms": {k: dict(v) for k, v in self.request_cost.items()},
                "large_requests": {"in_flight": len(large.in_flight), **large.counts},
                "read_cache": dict(self.read_cache_counts)}
