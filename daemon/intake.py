"""Large requests, decoded off the main loop.

A request frame larger than :data:`request_decoding.INLINE_DECODE_BYTES` is never decoded on the main
loop: the loop reads only its head (the fields before ``args``, :func:`request_decoding.request_head`),
refuses it there when its sender has not shown the daemon's token (or CurveZMQ identity), and
otherwise hands the frame, as ZeroMQ received it (no copy), to a thread of its own. The thread
decodes it in chunks (the loop takes the GIL back between them), checks it against the command's
schema and prepares what its handler would otherwise compute on the loop (a submitted
trajectory is parsed here); the loop then dispatches the prepared request like any other.

Each client may have :data:`MAX_PER_CLIENT` large requests in flight and all clients together
:data:`MAX_TOTAL`; one more is answered ``busy`` at once, never queued, so the memory held for
them is bounded by those counts times the frame limit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from . import protocol as P
from . import request_decoding as R

MAX_PER_CLIENT = 1
MAX_TOTAL = 2


@dataclass
class LargeRequest:
    client: str  # the CurveZMQ name, or the connection's routing id without CurveZMQ
    peer: str  # the authenticated name ('' without CurveZMQ)
    envelope: list
    rid: object  # the id read from the head, echoed if decoding fails
    size: int
    future: Future


def decode_and_prepare(payload, prepare: Callable[[P.Request], dict | None]) -> tuple:
    """On the thread: (request id, the parsed request, what ``prepare`` made of it)."""
    obj = R.decode_request(payload, chunk=R.DECODE_CHUNK_BYTES)
    rid = P.request_id(obj)
    try:
        req = P.parse_request(obj)
        return rid, req, prepare(req)
    except P.ProtocolError as exc:
        exc.request_id = rid
        raise


class LargeRequests:
    """The large requests being decoded, and their threads."""

    def __init__(self, prepare: Callable[[P.Request], dict | None]):
        self.prepare = prepare
        self.in_flight: list[LargeRequest] = []
        self.counts = {"received": 0, "decoded": 0, "refused_before_decoding": 0, "refused_busy": 0,
                       "refused_after_decoding": 0}

    def admit(self, client: str) -> None:
        """``busy`` when this client, or all together, have their share in flight."""
        mine = sum(1 for r in self.in_flight if r.client == client)
        if mine >= MAX_PER_CLIENT or len(self.in_flight) >= MAX_TOTAL:
            self.counts["refused_busy"] += 1
            which = f"this client has {mine} of its {MAX_PER_CLIENT}" if mine >= MAX_PER_CLIENT else \
                f"{len(self.in_flight)} of the daemon's {MAX_TOTAL}"
            raise P.ProtocolError(P.E_BUSY, f"busy: {which} large requests (over {R.INLINE_DECODE_BYTES} bytes) "
                                            "being decoded; send again when it is answered", field="request")

    def start(self, client: str, peer: str, envelope: list, rid, frame) -> None:
        """Decode ``frame`` (a ZeroMQ frame, read through its buffer) on a new thread."""
        future: Future = Future()
        payload = frame.buffer

        def work():
            try:
                future.set_result(decode_and_prepare(payload, self.prepare))
            except BaseException as exc:  # delivered to the loop, which answers the client
                future.set_exception(exc)

        self.in_flight.append(LargeRequest(client, peer, list(envelope), rid, len(payload), future))
        threading.Thread(target=work, name="robodyn-large-request", daemon=True).start()

    def finished(self) -> list[LargeRequest]:
        """The requests whose thread is done, taken out of the in-flight list."""
        if not any(r.future.done() for r in self.in_flight):
            return []
        done = [r for r in self.in_flight if r.future.done()]
        self.in_flight = [r for r in self.in_flight if not r.future.done()]
        return done
