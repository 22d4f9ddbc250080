"""Requests on the control socket: framing, schema validation, authentication (the client's
name from CurveZMQ), authorisation by role, dispatch to the registered handlers and the replies,
immediate or deferred.

A mixin of :class:`robodyn.daemon.server.Daemon`.
"""

from __future__ import annotations

import logging
import time

from . import access
from . import protocol as P

log = logging.getLogger("robodyn.daemon")

# the transport refuses larger frames outright (and drops that connection), so a frame claiming
# gigabytes is never buffered; between the request cap and this, the client gets `malformed`
TRANSPORT_MAX_BYTES = 2 * P.MAX_REQUEST_BYTES
DEFERRED = object()  # a handler's result meaning "the reply is sent later"
# Roles (docs/reliability.md, "Roles"), when CurveZMQ names the clients and [security].operators is
# set: operators arm and submit; submitters submit runs and identification jobs; every other
# allowed client observes. Stopping is never refused: abort and disarm are open to everyone.
COMMAND_ROLES = {"arm": P.ROLE_OPERATOR, "submit_run": P.ROLE_SUBMITTER, "identify": P.ROLE_SUBMITTER}


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


class Dispatch:
    """The control endpoint: one request in, one reply out (now or later)."""

    def add_command(self, name: str, args: dict, handler) -> None:
        """Register a request handler ``handler(args) -> dict`` (raise ProtocolError on errors)."""
        if name in self.commands:
            raise ValueError(f"command {name!r} already registered")
        if name not in P.COMMANDS:
            P.register_command(name, args)
        self.commands[name] = handler

    def _on_request(self) -> None:
        frames = self.router.recv_multipart(copy=False)
        data = [f.bytes for f in frames]
        if len(data) == 3 and data[1] == b"":  # REQ client: identity, delimiter, payload
            envelope, payload = data[:2], data[2]
        elif len(data) == 2:  # DEALER client: identity, payload
            envelope, payload = data[:1], data[1]
        else:
            self.requests["dropped"] += 1
            self.dropped.warning("dropped a control message with %d frames (expected 1 payload frame)",
                                 len(data) - 1)
            if len(data) >= 2:
                self.router.send_multipart([data[0], P.error_reply(None, P.E_MALFORMED,
                                                                   "expected exactly one payload frame")])
            return
        self._peer = self._user_id(frames[-1])
        self._envelope = envelope
        reply = self.handle_payload(payload)
        if reply is not None:
            self.router.send_multipart(envelope + [reply])

    def _user_id(self, frame) -> str:
        """The client's name from the allow-list (set by the ZAP handler); '' without Curve."""
        if self.zap is None:
            return ""
        try:
            return frame.get("User-Id") or ""
        except Exception:  # not authenticated through ZAP
            return ""

    def handle_payload(self, payload: bytes) -> bytes | None:
        """Validate and dispatch one request; the encoded reply, or None when it is deferred."""
        rid = None
        self.requests["total"] += 1
        try:
            obj = P.unpackb(payload)
            rid = P.request_id(obj)
            req = P.parse_request(obj)
            handler = self.commands.get(req.cmd)
            if handler is None:
                raise P.ProtocolError(P.E_UNKNOWN_COMMAND, f"command {req.cmd!r} is not available in this daemon")
            self._rid = rid
            self._authenticate(req)
            self._authorise(req.cmd)
            result = handler(req.args)
            return None if result is DEFERRED else P.ok_reply(rid, result)
        except P.ProtocolError as exc:
            self._count_error(exc.code)
            if rid is None:
                rid = getattr(exc, "request_id", None)
            return P.error_reply(rid, exc.code, exc.message, exc.details)
        except Exception as exc:  # a bug: answer, log, keep serving
            self._count_error(P.E_INTERNAL)
            log.exception("internal error while handling a request")
            return P.error_reply(rid, P.E_INTERNAL, f"internal error: {type(exc).__name__}: {exc}")

    def _authenticate(self, req: P.Request) -> None:
        """Without CurveZMQ, every command but abort, disarm and ping needs the daemon's token
        (daemon/access.py): another account on the machine can stop the robot, nothing else."""
        if self.token is None or req.cmd in access.OPEN_COMMANDS:
            return
        if req.auth is not None and access.token_ok(req.auth, self.token):
            return
        self.refused_auth.warning("%s refused: %s access token", req.cmd, "wrong" if req.auth else "no")
        raise P.ProtocolError(P.E_UNAUTHORISED, f"unauthorised: this daemon needs its token ({self.token_path}); "
                                                "run as the daemon's user or set ROBODYN_TOKEN_FILE",
                              {"token_file": str(self.token_path)}, field="auth")

    def role_of(self, peer: str) -> str:
        """The role of an authenticated client (everyone is an operator without roles)."""
        if not self.cfg.curve or not self.cfg.operators or peer in self.cfg.operators:
            return P.ROLE_OPERATOR
        return P.ROLE_SUBMITTER if peer in self.cfg.submitters else P.ROLE_ANYONE

    def _authorise(self, cmd: str) -> None:
        needed = COMMAND_ROLES.get(cmd, P.ROLE_ANYONE)
        role = self.role_of(self._peer)
        allowed = {P.ROLE_ANYONE: (P.ROLE_ANYONE, P.ROLE_SUBMITTER, P.ROLE_OPERATOR),
                   P.ROLE_SUBMITTER: (P.ROLE_SUBMITTER, P.ROLE_OPERATOR), P.ROLE_OPERATOR: (P.ROLE_OPERATOR,)}
        if role in allowed[needed]:
            return
        who = self._peer or "not authenticated"
        log.warning("%s refused: client %s has the role %s, %s needs %s", cmd, who, role, cmd, needed,
                    extra={"fields": {"event": "forbidden", "peer": who}})
        what = "arming is reserved to the operators' keys" if cmd == "arm" else \
            f"{cmd} is reserved to {'operators' if needed == P.ROLE_OPERATOR else 'operators and submitters'}"
        raise P.ProtocolError(P.E_FORBIDDEN, f"{what} ([security].operators / submitters); this client is {who} "
                                             f"({role}); abort and disarm are open to every client",
                              {"role": role, "needed": needed, "client": who}, field="cmd")

    def _count_error(self, code: str) -> None:
        errors = self.requests["errors"]
        errors[code] = errors.get(code, 0) + 1

    def _reply_later(self, envelope: list, reply: bytes) -> None:
        try:  # ROUTER drops a reply to a client that has gone: never blocks, never raises for that
            self.router.send_multipart(envelope + [reply], flags=self.zmq.NOBLOCK)
        except self.zmq.ZMQError as exc:
            log.warning("could not deliver a deferred reply: %s", exc)
