"""The stop socket: `abort` and `disarm` served by the driver process's real-time loop itself.

The main process serves observers' requests one at a time, so a stop sent to the control endpoint
waits for the request in progress, and then for the driver's pipe, which the loop reads every
POLL_EVERY cycles (rtloop.py). A stop sent here waits for neither: observers never reach this
process. The loop looks at this socket with a zero-timeout poll(2) on every cycle
(:meth:`StopServer.waiting`), right after reading the robot's state, and a stop it finds is acted
on in that very cycle (``RunExecutor.abort``: the same ramp to rest as a stop through the main
process), before that cycle's command is written. Then the main process is told (a
``stop_served`` event on the driver's pipe, sent before the client's reply), and it keeps its
bookkeeping (run aborted, submission withdrawn, disarmed) from that event.

A Unix datagram socket, not ZeroMQ: the datagram is in this socket's kernel buffer when the
client's send returns, with no I/O thread of the driver process to be scheduled first; its
per-cycle poll cost a third of a ZeroMQ socket's EVENTS check (bench/reliability/stop_socket_poll.py);
the kernel stamps each arrival (SO_TIMESTAMPNS; ZeroMQ gives none) and names each sender
(SO_PASSCRED).

Only ``abort`` and ``disarm`` are served; anything else gets one error reply naming the control
endpoint, without its arguments being parsed (no trajectory is ever decoded in this process).
The socket is a file beside the daemon's token file (access.stop_socket_path): reachable by
whoever can reach the token's directory (the daemon's user; with a configured token file mode
0640, its group, socket mode 0660 as for the state socket), never by more than may read the token
and then do anything. With CurveZMQ it is the same path, in a 0700 directory: only processes of the
daemon's user, which can read the daemon's own secret key, reach it. The kernel names each sender
(SO_PASSCRED: pid and uid), and the stop's reason says it.

A client trusts no answer it cannot tie to the daemon (daemon/client.py): it sends only to a
socket owned by the daemon's account in a directory no other account can write
(access.check_stop_socket), takes an answer only from that account (the kernel names the sender of
each reply too: SO_PASSCRED on the client's socket; SO_PEERCRED gives nothing for a datagram
socket), and only when it names the stop: its request id, ``served_by = "driver"``, ``stop.cmd``
and ``stop.count``. Else the control endpoint is asked, and a socket another account made fails
the command.

A datagram: the client's CLOCK_MONOTONIC stamp in ns at sending (8 bytes, little endian; same
host, same clock as the loop's), then the request (the control protocol's map: ``v``, ``id``,
``cmd``, ``args``). The kernel stamps its arrival (SO_TIMESTAMPNS, CLOCK_REALTIME, converted to
CLOCK_MONOTONIC when the loop reads it). The reply, to the client's own (autobound) address, is
the control protocol's reply; its result has ``served_by = "driver"`` and ``stop``: the loop's
sequence number at which its poll saw the stop (``seen_seq``) and at which ``abort`` took effect
(``acted_seq``: the same cycle by construction), its wait in the socket from the kernel's arrival
stamp (``in_socket_periods``) and from the client's stamp (``sent_periods``: the client's own
delays before its send included), in the loop's periods, whether it arrived after the previous
cycle began (``arrived_since_previous_cycle``: no earlier poll could have seen it), and this
driver's count of stops served.
"""

from __future__ import annotations

import os
import select
import socket
import stat
import struct
import time

from . import protocol as P

STOP_COMMANDS = ("abort", "disarm")
MAX_STOPS_PER_CYCLE = 8  # stops served in one cycle; the rest wait for the next (the cycle stays short)
MAX_STOP_BYTES = 64 * 1024  # a larger datagram is answered `malformed`, unread
STAMP = struct.Struct("<q")  # the client's CLOCK_MONOTONIC at sending, ns, first in the datagram
CREDENTIALS = struct.Struct("iII")  # struct ucred: pid, uid, gid
TIMESPEC = struct.Struct("qq")  # struct timespec: the kernel's arrival stamp (CLOCK_REALTIME)
# Linux's SO_TIMESTAMPNS (asm-generic value; Python's socket module does not name it): the kernel
# stamps each datagram as it is queued on this socket
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


class StopServer:
    """The stop commands' Unix datagram socket, in the driver process."""

    def __init__(self, path: str, file_mode: int, rate_hz: float):
        self.path = path
        try:  # a dead predecessor's socket (never anything else: a plain file is left, and bind fails)
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                os.unlink(path)
        except FileNotFoundError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # the kernel names each sender
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            self.arrival_stamps = True
        except OSError:  # no arrival stamp: the wait is then counted from the client's stamp only
            self.arrival_stamps = False
        self.sock.bind(path)
        os.chmod(path, file_mode)
        self._poll = select.poll()
        self._poll.register(self.sock.fileno(), select.POLLIN)
        self._cmsg = socket.CMSG_SPACE(CREDENTIALS.size) + socket.CMSG_SPACE(TIMESPEC.size)
        self.period_ns = 1e9 / rate_hz
        self.polls = 0
        self.first_poll_seq: int | None = None
        self.served = 0
        self.refused = 0
        self.max_in_socket_periods: float | None = None
        self.last: dict | None = None

    def waiting(self, seq: int) -> bool:
        """The loop's per-cycle check (zero timeout, one poll(2)): is a datagram waiting? Counted,
        so that ``polls`` = cycles since ``first_poll_seq`` shows that no cycle went unchecked."""
        if self.first_poll_seq is None:
            self.first_poll_seq = seq
        self.polls += 1
        return bool(self._poll.poll(0))

    def receive(self):
        """(sender, request, request id, stamps, credentials) of the next stop; ``None`` when
        nothing waits; ``()`` when the request was refused here (answered with an error).
        ``stamps``: (sent, arrived, seen), CLOCK_MONOTONIC ns, None where unknown: the client's
        stamp, the kernel's (converted from CLOCK_REALTIME at this moment) and this process's."""
        try:
            data, ancillary, flags, sender = self.sock.recvmsg(MAX_STOP_BYTES, self._cmsg)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return ()
        seen_ns, realtime_ns = time.monotonic_ns(), time.time_ns()
        creds = arrived_ns = None
        for level, kind, value in ancillary:
            if level != socket.SOL_SOCKET:
                continue
            if kind == socket.SCM_CREDENTIALS and len(value) >= CREDENTIALS.size:
                creds = CREDENTIALS.unpack(value[:CREDENTIALS.size])
            elif kind == SO_TIMESTAMPNS and len(value) >= TIMESPEC.size:
                sec, nsec = TIMESPEC.unpack(value[:TIMESPEC.size])
                arrived_ns = seen_ns - (realtime_ns - (sec * 1_000_000_000 + nsec))
        rid = None
        try:
            if flags & socket.MSG_TRUNC:
                raise P.ProtocolError(P.E_MALFORMED, f"a stop request is at most {MAX_STOP_BYTES} bytes",
                                      field="request")
            if len(data) < STAMP.size:
                raise P.ProtocolError(P.E_MALFORMED, "expected the client's CLOCK_MONOTONIC stamp (8 bytes) and "
                                                     "the request", field="request")
            sent_ns = STAMP.unpack(data[:STAMP.size])[0]
            obj = P.unpackb(data[STAMP.size:], max_bytes=MAX_STOP_BYTES)
            rid = P.request_id(obj)
            cmd = obj.get("cmd") if isinstance(obj, dict) else None
            if cmd not in STOP_COMMANDS:  # refused before its arguments are looked at
                raise P.ProtocolError(P.E_UNKNOWN_COMMAND, f"the stop socket serves only abort and disarm, not "
                                      f"{cmd!r}: send it to the daemon's control endpoint", field="cmd")
            req = P.parse_request(obj)
        except P.ProtocolError as exc:
            self.refused += 1
            self._send(sender, P.error_reply(rid, exc.code, exc.message, exc.details))
            return ()
        except Exception as exc:  # noqa: BLE001 - anything a client sends is answered, never raised in the loop
            self.refused += 1
            self._send(sender, P.error_reply(rid, P.E_MALFORMED, f"not a request: {type(exc).__name__}",
                                             {"field": "request"}))
            return ()
        return sender, req, rid, (sent_ns if sent_ns > 0 else None, arrived_ns, seen_ns), creds

    def refuse(self, sender, rid, code: str, message: str, field: str) -> None:
        self.refused += 1
        self._send(sender, P.error_reply(rid, code, message, {"field": field}))

    def answer(self, sender, rid, result: dict) -> None:
        self._send(sender, P.ok_reply(rid, result))

    def record(self, cmd: str, seen_seq: int, acted_seq: int, stamps: tuple, previous_cycle_ns: int) -> dict:
        """Count one stop served; its figures, in the loop's sequence numbers and periods:
        ``in_socket_periods`` from the kernel's arrival stamp to the loop's poll that saw it,
        ``sent_periods`` from the client's stamp (its own delays before the send included), and
        ``arrived_since_previous_cycle``: it came in after the previous cycle began, so no poll
        before the one that saw it could have (the loop polls every cycle)."""
        self.served += 1
        sent, arrived, seen = stamps
        in_socket = None if arrived is None else max(0, seen - arrived) / self.period_ns
        if in_socket is not None:
            self.max_in_socket_periods = max(self.max_in_socket_periods or 0.0, in_socket)
        self.last = {"cmd": cmd, "seen_seq": seen_seq, "acted_seq": acted_seq, "in_socket_periods": in_socket,
                     "sent_periods": None if sent is None else max(0, seen - sent) / self.period_ns,
                     "arrived_since_previous_cycle": None if arrived is None else arrived >= previous_cycle_ns,
                     "count": self.served}
        return self.last

    def summary(self, seq: int) -> dict:
        """For the telemetry: the checks made and the cycles they span (equal: every cycle checked)."""
        first = self.first_poll_seq
        return {"path": self.path, "polls": self.polls, "first_poll_seq": first,
                "cycles": 0 if first is None else seq - first + 1, "served": self.served, "refused": self.refused,
                "max_in_socket_periods": self.max_in_socket_periods, "last": self.last}

    def _send(self, sender, reply: bytes) -> None:
        if not sender:  # an unbound client cannot be answered
            return
        try:  # never waits: a client that does not read loses its answer
            self.sock.sendto(reply, socket.MSG_DONTWAIT, sender)
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()


def sender_name(creds) -> str:
    """Who sent a stop, as the kernel says (SO_PASSCRED): for the reason and the log."""
    if creds is None:
        return "a local client"
    pid, uid, _gid = creds
    return f"uid {uid} (pid {pid})"
