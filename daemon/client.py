"""Python client of the acquisition daemon.

    from robodyn.daemon.client import Client

    with Client() as c:                              # tcp://127.0.0.1:47770 by default
        print(c.status()["robot"])
        run = c.submit_run("panda", trajectory.to_dict())
        summary = c.wait_run(run["run_id"], progress=print)
        for batch in c.stream(max_batches=10):       # the live state stream
            print(batch["seq"][-1], batch["values"][-1])

Without CurveZMQ the client sends the daemon's access token, read from $ROBODYN_TOKEN, the file
$ROBODYN_TOKEN_FILE or the file the daemon wrote for its endpoint (daemon/access.py).

Errors from the daemon raise :class:`DaemonError` with the daemon's code and message; no reply
within the timeout raises :class:`DaemonUnavailable`; an endpoint that is not ``tcp://HOST:PORT``,
``ipc://PATH`` (or ``inproc://NAME``) raises :class:`robodyn.errors.UserError` naming the form.

``abort`` and ``disarm`` go to the daemon's stop socket when this host has it (daemon/stop_socket.py:
served by the driver process's real-time loop, never behind other clients' requests), found beside
the daemon's token file; without it (a remote client, another account, a daemon without one) or
when it does not answer within STOP_SOCKET_WAIT_S, to the control endpoint as before. A stop is
confirmed, never assumed: the socket and its directory must belong to the daemon's account
(access.check_stop_socket), the answer must come from that account (the kernel names the sender of
every datagram, SO_PASSCRED) and name this stop (its request id, the driver's count of the stop).
A stop socket another account made is refused: the stop goes to the control endpoint and the call
raises :class:`StopSocketRefused` all the same, saying what the control endpoint answered.

``timeout`` bounds every wait for a daemon that has not answered yet. A few requests make a daemon
that did answer work longer (checking a submitted trajectory, reading its recordings): before one,
the client pings with ``timeout`` (no daemon: it fails fast), and past ``timeout`` it tells
``notice`` (a callable taking one sentence, e.g. the command line's stderr) what it waits for.
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from typing import Callable, Iterator

from robodyn.daemon import access
from robodyn.daemon import protocol as P
from robodyn.daemon.config import DEFAULT_CONTROL
from robodyn.errors import UserError



def run_stage(run: dict) -> tuple[str, float]:
    """(what the run is doing, fraction of it done) from a ``run_status`` reply: the move to the
    start, then the trajectory."""
    p = run.get("progress") or {}
    if "move_samples" in p and p.get("phase") == "move_to_start":
        return "moving to start", p["move_index"] / max(1, p["move_samples"])
    if "trajectory_samples" in p and p.get("phase") in ("execute", "settle", "stopping"):
        return run["state"], p["trajectory_index"] / max(1, p["trajectory_samples"])
    return run["state"], 0.0

class DaemonError(Exception):
    def __init__(self, code: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}


E_STOP_SOCKET_REFUSED = "stop_socket_refused"


class StopSocketRefused(DaemonError):
    """The stop socket was not the daemon's (another account made it or its directory). The stop
    was sent to the control endpoint instead: ``details["confirmed"]`` holds that endpoint's answer,
    None when it gave none (nothing then confirms the stop); ``details["refused"]`` says why the
    socket was refused."""

    def __init__(self, message: str, refused: str, path: str, confirmed: dict | None):
        super().__init__(E_STOP_SOCKET_REFUSED, message, {"refused": refused, "path": path, "confirmed": confirmed})


class DaemonUnavailable(DaemonError):
    def __init__(self, endpoint: str, timeout: float):
        super().__init__("unavailable", f"no reply from the daemon at {endpoint} within {timeout:g} s; "
                                        "is `robodyn daemon` running?")


def default_endpoint() -> str:
    return os.environ.get("ROBODYN_ENDPOINT", DEFAULT_CONTROL)


ENDPOINT_FORM = "tcp://HOST:PORT or ipc://PATH"


def check_endpoint(endpoint: str, source: str = "--endpoint") -> str:
    """``endpoint`` if ZeroMQ can connect to it, else a UserError naming ``source`` and the form."""
    scheme, sep, rest = str(endpoint).partition("://")
    ok = bool(sep and rest)
    if ok and scheme == "tcp":
        host, colon, port = rest.rpartition(":")
        ok = bool(colon and host and port.isdigit() and 0 < int(port) < 65536)
    elif ok:
        ok = scheme in ("ipc", "inproc")
    if not ok:
        raise UserError(f"{source}: expected {ENDPOINT_FORM}, got {endpoint!r}")
    return endpoint


# what a daemon that answered is busy with during a long request (the notice's words)
# (a listing is a page of the daemon's in-memory index: bounded, so it takes the user's timeout)
LONG_REQUESTS = {"submit_run": "check the trajectory against the robot's limits",
                 "recording_info": "find the recording", "pull": "read the job's result"}


@dataclass(frozen=True)
class CurveKeys:
    """A client's keypair and the daemon's public key (Z85 strings) for CurveZMQ."""

    public: str
    secret: str
    server: str

    @classmethod
    def from_files(cls, client_secret_file: str, server_key: str) -> "CurveKeys":
        from robodyn.daemon.security import read_public_key, read_secret_key

        public, secret = read_secret_key(client_secret_file)
        return cls(public, secret, read_public_key(server_key))

    @classmethod
    def from_env(cls) -> "CurveKeys | None":
        """``$ROBODYN_CLIENT_KEY`` (secret key file) and ``$ROBODYN_SERVER_KEY`` (the daemon's
        public key or key file), or None when neither is set."""
        client, server = os.environ.get("ROBODYN_CLIENT_KEY"), os.environ.get("ROBODYN_SERVER_KEY")
        if not client and not server:
            return None
        if not (client and server):
            raise ValueError("set both ROBODYN_CLIENT_KEY (your .key_secret file) and ROBODYN_SERVER_KEY "
                             "(the daemon's public key) for CurveZMQ")
        return cls.from_files(client, server)

    def apply(self, sock) -> None:
        import zmq

        sock.setsockopt(zmq.CURVE_PUBLICKEY, self.public.encode())
        sock.setsockopt(zmq.CURVE_SECRETKEY, self.secret.encode())
        sock.setsockopt(zmq.CURVE_SERVERKEY, self.server.encode())


def _with_auth(payload: bytes, token: str | None) -> bytes:
    """``payload`` with an ``auth`` entry first when it is a msgpack map (header patched in place,
    the original bytes kept: malformed-input tests stay what they are). First: a request over
    request_decoding.INLINE_DECODE_BYTES is judged by the fields before its ``args``, the token among them."""
    if not token or not payload:
        return payload
    try:  # a frame that already names its own auth keeps it (a byte search would also match a value)
        if "auth" in P.unpackb(payload):
            return payload
    except Exception:  # noqa: BLE001 - malformed on purpose: patched below if it starts as a map
        pass
    entry = P.packb("auth") + P.packb(token)
    head = payload[0]
    if 0x80 <= head < 0x8F:
        return bytes([head + 1]) + entry + payload[1:]
    if head == 0xDE and len(payload) >= 3:
        n = int.from_bytes(payload[1:3], "big")
        if n < 0xFFFF:
            return b"\xde" + (n + 1).to_bytes(2, "big") + entry + payload[3:]
    return payload


# a submission is answered once its limit check is done: seconds for a long trajectory
SUBMIT_TIMEOUT_S = 600.0
# a stop socket that has not answered in this long (a dead driver's file, a driver being restarted)
# is given up for the control endpoint; a late answer to it is harmless (a stop twice is one stop)
STOP_SOCKET_WAIT_S = 1.0


def _sender_uid(ancillary, credentials) -> int | None:
    """The uid the kernel gives as a datagram's sender (SCM_CREDENTIALS): not the sender's to choose."""
    import socket

    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(value) >= credentials.size:
            return credentials.unpack(value[:credentials.size])[1]
    return None


def confirms_stop(reply, rid, cmd: str) -> bool:
    """Whether a stop socket's answer confirms this stop: an ok reply to request ``rid`` from the
    driver (``served_by``), whose ``stop`` names the command and the driver's count of stops served
    (stop_socket.StopServer.record), and says which run it stopped (``aborted``: an id or nil)."""
    if not isinstance(reply, dict) or reply.get("ok") is not True or reply.get("id") != rid:
        return False
    result = reply.get("result")
    if not isinstance(result, dict) or result.get("served_by") != "driver" or "aborted" not in result:
        return False
    stop = result.get("stop")
    return (isinstance(stop, dict) and stop.get("cmd") == cmd and type(stop.get("count")) is int
            and stop["count"] >= 1 and type(stop.get("acted_seq")) is int
            and (result["aborted"] is None or isinstance(result["aborted"], str)))


class Client:
    def __init__(self, endpoint: str | None = None, timeout: float = 5.0, curve: CurveKeys | None = None,
                 token: str | None = None, stop_socket: bool | None = None):
        """``token``: the daemon's access token; default: found anew for every request (a
        restarted daemon has a new one), see daemon/access.py client_token. ``stop_socket``:
        whether abort and disarm try the stop socket first; default: yes, unless the client has
        CurveZMQ keys (its key names it in the daemon's log and the run's reason, which only the
        control endpoint sees)."""
        import zmq

        self.zmq = zmq
        self.endpoint = check_endpoint(endpoint) if endpoint else check_endpoint(default_endpoint(), "ROBODYN_ENDPOINT")
        self.timeout = timeout
        self.notice: Callable[[str], None] | None = None
        self._answered = False  # the daemon has replied once: a long request is then worth waiting for
        self.curve = curve if curve is not None else CurveKeys.from_env()
        self.token = token
        self._ctx = zmq.Context()
        self._sock = None
        self._ids = itertools.count(1)
        self.use_stop_socket = self.curve is None if stop_socket is None else stop_socket
        self._stop_sock = None
        self._stop_sock_path = None
        self.stop_socket_note: str | None = None  # why the last stop's socket answer was not taken
        self._connect()

    def _connect(self) -> None:
        # DEALER, not REQ: a lost reply must not leave the socket stuck waiting forever
        zmq = self.zmq
        if self._sock is not None:
            self._sock.close(linger=0)
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, 0)
        if self.curve is not None:
            self.curve.apply(self._sock)
        try:
            self._sock.connect(self.endpoint)
        except zmq.ZMQError as exc:  # e.g. a host name that does not resolve
            raise UserError(f"cannot connect to {self.endpoint}: {exc} (expected {ENDPOINT_FORM})") from None

    def close(self) -> None:
        self._drop_stop_socket()
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
        # destroy, not term: a stream() generator left unfinished still owns a SUB socket, and
        # term() would wait for it forever (seen: a garbage-collected client hung a test run)
        if not self._ctx.closed:
            self._ctx.destroy(linger=0)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the zmq module may be half gone
            pass

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ----------------------------------------------------------------- raw

    def call(self, cmd: str, timeout: float | None = None, **args) -> dict:
        """Send one request; return its result or raise DaemonError."""
        if timeout is not None and timeout > self.timeout and not self._answered and cmd != "ping":
            self.call("ping")  # no daemon there: fail within the user's timeout, not the long one
        rid = next(self._ids)
        return self._exchange(P.make_request(cmd, args, rid, self._auth()), rid, timeout,
                              LONG_REQUESTS.get(cmd, f"answer {cmd}"))

    def _auth(self) -> str | None:
        if self.curve is not None:  # CurveZMQ keys and roles decide; the token is not used
            return None
        return self.token if self.token is not None else access.client_token(self.endpoint)

    def call_raw(self, payload: bytes, timeout: float | None = None) -> dict:
        """Send arbitrary bytes (for tests of malformed input); return the decoded reply map.
        A payload that is a msgpack map gets the access token appended, its bytes otherwise kept."""
        self._sock.send(_with_auth(payload, self._auth()))
        return self._receive(None, timeout, raw=True)

    def _exchange(self, payload: bytes, rid, timeout: float | None, what: str = "answer") -> dict:
        self._sock.send(payload)
        reply = self._receive(rid, timeout, what=what)
        if not reply.get("ok"):
            err = reply.get("error") or {}
            raise DaemonError(err.get("code", "unknown"), err.get("message", "request failed"), err.get("details"))
        return reply["result"]

    def _receive(self, rid, timeout: float | None, raw: bool = False, what: str = "answer") -> dict:
        timeout = self.timeout if timeout is None else timeout
        start = time.monotonic()
        deadline = start + timeout
        announce_at = start + self.timeout if timeout > self.timeout and self.notice is not None else None
        while True:
            now = time.monotonic()
            remaining = deadline - now
            step = remaining if announce_at is None else min(remaining, announce_at - now)
            if remaining <= 0 or not self._sock.poll(int(max(step, 0.0) * 1000) + 1):
                if announce_at is not None and time.monotonic() < deadline:
                    announce_at = None
                    self.notice(f"waiting for the daemon at {self.endpoint} to {what} (up to {timeout:g} s)")
                    continue
                self._connect()  # drop the late reply, if it ever comes
                raise DaemonUnavailable(self.endpoint, timeout)
            reply = P.unpackb(self._sock.recv())
            self._answered = True
            if raw or rid is None or reply.get("id") == rid:
                return reply
            # a stale reply to an earlier, timed-out request: skip it

    # ----------------------------------------------------------------- commands

    def ping(self) -> dict:
        return self.call("ping")

    def status(self) -> dict:
        return self.call("status")

    def describe(self) -> dict:
        return self.call("describe")

    def submit_run(self, robot: str, trajectory: dict, mode: str = "position", label: str = "") -> dict:
        args = {"robot": robot, "trajectory": P.with_encoded_arrays(trajectory), "mode": mode}
        if label:
            args["label"] = label
        return self.call("submit_run", timeout=max(self.timeout, SUBMIT_TIMEOUT_S), **args)

    def arm(self, token: str | None = None) -> dict:
        """Enable motion (an operator's decision: the robot's workspace has been checked)."""
        return self.call("arm", **({"token": token} if token else {}))

    def disarm(self, reason: str | None = None) -> dict:
        """Disable motion; a run in progress is aborted (ramped to rest)."""
        return self._stop("disarm", {"reason": reason} if reason else {})

    def run_status(self, run_id: str | None = None) -> dict:
        return self.call("run_status", **({"run_id": run_id} if run_id else {}))

    def abort(self, run_id: str | None = None, reason: str | None = None) -> dict:
        args = {}
        if run_id:
            args["run_id"] = run_id
        if reason:
            args["reason"] = reason
        return self._stop("abort", args)

    def _stop(self, cmd: str, args: dict) -> dict:
        """``abort`` / ``disarm``: the stop socket's answer (``served_by = "driver"``), else the
        control endpoint's. When the driver was moving nothing, the control endpoint is asked
        too, for what the main process withdrew (a submission being checked, a run being
        prepared): its answer may wait behind other clients' requests, the robot does not (a run
        sent to the driver before the stop is refused there, stop_socket.py). A stop socket that
        is not the daemon's is never sent to: StopSocketRefused, after the control endpoint's try."""
        self.stop_socket_note = None
        if self.use_stop_socket:
            try:
                result = self._stop_socket_call(cmd, args)
            except access.UntrustedStopSocket as refused:
                self._drop_stop_socket()
                return self._stop_after_refusal(cmd, args, refused)
            if result is not None:
                if result.get("aborted") is None:
                    try:
                        named = {"stop": result["stop"]["count"]} if cmd == "abort" else {}
                        result = {**self.call(cmd, **args, **named), "served_by": "driver", "stop": result["stop"]}
                    except DaemonUnavailable:  # the stop is served; only the bookkeeping's answer is missing
                        result["message"] = "no motion in progress; the daemon's main process did not answer"
                return result
        result = self.call(cmd, **args)
        return result if self.stop_socket_note is None else {**result, "stop_socket": self.stop_socket_note}

    def _stop_after_refusal(self, cmd: str, args: dict, refused: "access.UntrustedStopSocket"):
        """The stop through the control endpoint (the robot must stop whoever squats the socket),
        then StopSocketRefused: what answered on the stop socket would have claimed any stop
        served, so the caller hears of it, with the control endpoint's answer or its failure."""
        try:
            confirmed = self.call(cmd, **args)
        except DaemonError as exc:
            raise StopSocketRefused(f"{refused.message}; the {cmd} sent to the control endpoint {self.endpoint} "
                                    f"failed too ({exc.message}): nothing confirms the stop",
                                    refused.message, str(refused.path), None) from None
        if cmd == "disarm" or confirmed.get("aborted"):
            what = "run " + str(confirmed["aborted"]) + " is being stopped" if confirmed.get("aborted") else "disarmed"
        else:
            what = str(confirmed.get("message") or "no run in progress")
        raise StopSocketRefused(f"{refused.message}; the {cmd} went to the control endpoint {self.endpoint} "
                                f"instead, and the daemon confirmed it: {what}", refused.message, str(refused.path),
                                confirmed)

    def _stop_socket_call(self, cmd: str, args: dict) -> dict | None:
        """One stop through the stop socket; None when this client cannot reach one, it did not
        answer in STOP_SOCKET_WAIT_S or its answer confirms no stop (the control endpoint is then
        asked); access.UntrustedStopSocket when the socket, its directory or its answer's sender is
        not the daemon's account. The datagram begins with this host's CLOCK_MONOTONIC at sending:
        the driver counts the stop's wait in its socket from it."""
        import socket

        from robodyn.daemon.stop_socket import CREDENTIALS, STAMP

        found = access.client_stop_socket(self.endpoint)  # checked before every stop: a driver rebinds
        if found is None:
            self._drop_stop_socket()
            return None
        path, daemon_uid = found
        if self._stop_sock is None or self._stop_sock_path != path:
            self._drop_stop_socket()
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # the kernel names each answer's sender
                sock.bind("")  # an address of its own (Linux autobind), for the answer
                sock.connect(str(path))
            except OSError:  # nobody listens there: a dead driver's file
                sock.close()
                return None
            self._stop_sock, self._stop_sock_path = sock, path
        rid = next(self._ids)
        sock = self._stop_sock
        deadline = time.monotonic() + min(self.timeout, STOP_SOCKET_WAIT_S)
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.send(STAMP.pack(time.monotonic_ns()) + P.make_request(cmd, args, rid))
            while True:
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                data, ancillary, _flags, _addr = sock.recvmsg(1 << 20, socket.CMSG_SPACE(CREDENTIALS.size))
                sender = _sender_uid(ancillary, CREDENTIALS)
                if sender != daemon_uid:
                    raise access.UntrustedStopSocket(
                        path, f"stop socket {path} was answered by "
                              f"{'an unnamed sender' if sender is None else access.account_name(sender)}, not by "
                              f"the daemon's account (uid {daemon_uid}): refusing to trust it")
                try:
                    reply = P.unpackb(data, max_bytes=1 << 20)
                except P.ProtocolError:
                    reply = None
                if not isinstance(reply, dict) or reply.get("id") == rid:
                    break  # otherwise the late answer to an earlier stop
        except OSError:  # no answer in time (a timeout is an OSError), or the driver is gone
            self._drop_stop_socket()  # look again next time: a restarted driver binds anew
            return None
        if isinstance(reply, dict) and reply.get("ok") is False and isinstance(reply.get("error"), dict):
            err = reply["error"]  # the driver's refusal (e.g. another run's id): the daemon's own answer
            raise DaemonError(str(err.get("code", "unknown")), str(err.get("message", "request failed")),
                              err.get("details") if isinstance(err.get("details"), dict) else None)
        if not confirms_stop(reply, rid, cmd):
            self._drop_stop_socket()  # the control endpoint decides: a stop is never taken as served unconfirmed
            self.stop_socket_note = (f"the stop socket {path} answered without confirming the {cmd} (no ok reply "
                                     "naming it and the driver's count of stops); asked the control endpoint")
            return None
        return reply["result"]

    def _drop_stop_socket(self) -> None:
        if self._stop_sock is not None:
            self._stop_sock.close()
            self._stop_sock = None
            self._stop_sock_path = None

    def runs(self) -> list[dict]:
        return self.call("runs")["runs"]

    def recordings(self, limit: int | None = None, offset: int | None = None) -> list[dict]:
        """A page of the recordings (default: the newest DEFAULT_PAGE); :meth:`recordings_page`
        also gives the total and the next page's offset."""
        return self.recordings_page(limit, offset)["recordings"]

    def recordings_page(self, limit: int | None = None, offset: int | None = None) -> dict:
        args = {k: v for k, v in (("limit", limit), ("offset", offset)) if v is not None}
        return self.call("recordings", **args)

    def recording_info(self, recording: str) -> dict:
        return self.call("recording_info", recording=recording, timeout=max(self.timeout, 30.0))

    def wait_run(self, run_id: str, progress: Callable[[dict], None] | None = None, timeout: float | None = None,
                 poll_s: float = 0.2) -> dict:
        """Poll until the run is completed, aborted or failed; return its final status."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            st = self.run_status(run_id)
            if progress is not None:
                progress(st)
            if st["state"] in ("completed", "aborted", "failed"):
                return st
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} still {st['state']} after {timeout} s")
            time.sleep(poll_s)

    # ----------------------------------------------------------------- identification jobs

    def identify(self, recordings: list[str], config: dict | None = None, holdout: list[str] | None = None) -> dict:
        """Submit an identification job (recording ids + pipeline config); returns {"job": id, ...}."""
        args = {"recordings": list(recordings)}
        if config:
            args["config"] = config
        if holdout:
            args["holdout"] = list(holdout)
        return self.call("identify", **args)

    def job_status(self, job: str) -> dict:
        return self.call("job_status", job=job)

    def jobs(self, limit: int | None = None, offset: int | None = None) -> list[dict]:
        """A page of the jobs (default: the newest DEFAULT_PAGE), oldest first."""
        args = {k: v for k, v in (("limit", limit), ("offset", offset)) if v is not None}
        return self.call("jobs", **args)["jobs"]

    def pull(self, job: str) -> dict:
        """The result document of a completed job (robodyn.identification format)."""
        return self.call("pull", job=job, timeout=max(self.timeout, 30.0))["result"]

    def wait_job(self, job: str, progress: Callable[[dict], None] | None = None, timeout: float | None = None,
                 poll_s: float = 0.3) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            st = self.job_status(job)
            if progress is not None:
                progress(st)
            if st["state"] in ("completed", "failed"):
                return st
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {job} still {st['state']} after {timeout} s")
            time.sleep(poll_s)

    # ----------------------------------------------------------------- stream

    def stream(self, endpoint: str | None = None, max_batches: int | None = None, timeout: float = 5.0,
               events: bool = False) -> Iterator[dict]:
        """Decoded state batches (and run events when ``events``) from the daemon's PUB stream.

        Each batch is a dict with arrays ``seq``, ``robot_time``, ``host_time_ns``, ``phase``, ``run``,
        ``values`` (columns from ``describe()["columns"]``) and ``recv_ns`` (host monotonic clock at
        receive). Stops after ``max_batches`` or when nothing arrives within ``timeout`` seconds.
        """
        zmq = self.zmq
        endpoint = endpoint or self.describe()["state_endpoint"]
        sub = self._ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.RCVHWM, 200_000)
        if self.curve is not None:
            self.curve.apply(sub)
        sub.setsockopt(zmq.SUBSCRIBE, P.TOPIC_STATE)
        if events:
            sub.setsockopt(zmq.SUBSCRIBE, P.TOPIC_EVENT)
        sub.connect(endpoint)
        try:
            count = 0
            while max_batches is None or count < max_batches:
                if not sub.poll(int(timeout * 1000)):
                    return
                topic, payload = sub.recv_multipart()
                recv_ns = time.monotonic_ns()
                if topic == P.TOPIC_EVENT:
                    yield dict(P.unpackb(payload), topic="event")
                    continue
                batch = P.unpack_state_batch(payload)
                batch["recv_ns"] = recv_ns
                batch["topic"] = "state"
                count += 1
                yield batch
        finally:
            sub.close(linger=0)
