"""Client request frames decoded within bounds: every byte of a request is hostile until bounded
(docs/protocol.md, "Bounds"; daemon/intake.py decodes the large ones). The cost of
decoding msgpack grows with the number of objects, not of bytes: a 16 MiB frame of one-element
lists is 8 M objects, about 13 s of one CPU to build and walk, and about 250 ms to free, all of
it holding the GIL. So:
- a frame of at most INLINE_DECODE_BYTES is decoded on the main loop: at most ~1 000 objects,
  at most ~0.2 ms (bench/reliability/hostile_frames.py measures the worst shapes);
- a larger frame is looked at only up to its 'args' (HEAD_BYTES at most) on the main loop: a
  client without the token, or with its 'auth' after 'args', is refused there, undecoded; an
  authenticated one is decoded on a thread, DECODE_CHUNK_BYTES per call into the decoder, so the
  loop gets the GIL back between chunks;
- a request holds at most MAX_REQUEST_ELEMENTS array and map elements in all (bulk numbers go
  as encoded arrays, one object each), so what is built, and freed, is bounded too.
"""

from __future__ import annotations

from typing import Any

import msgpack

from .protocol import E_MALFORMED, MAX_REQUEST_BYTES, ProtocolError, decode_arrays, decode_ndarray, request_id

INLINE_DECODE_BYTES = 2048
HEAD_BYTES = 2048
DECODE_CHUNK_BYTES = 2048
MAX_REQUEST_ELEMENTS = 50_000


class _ElementBudget:
    """The decoder's hooks: every array and map counted against ``limit`` as it is built (the
    decoder refuses a single one longer than the limit before building it), and every
    ``{"$nd": 1, ...}`` map turned into its array on the way."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0

    def _spend(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            raise ProtocolError(E_MALFORMED, f"request holds more than {self.limit} array and map elements in all; "
                                             "send bulk numbers as encoded arrays ({'$nd': 1, ...}, docs/protocol.md)",
                                {"limit": "elements", "bound": self.limit}, field="request")

    def list_hook(self, value: list) -> list:
        self._spend(len(value))
        return value

    def object_hook(self, value: dict):
        self._spend(len(value))
        if type(value.get("$nd")) is int and value["$nd"] == 1:
            return decode_ndarray(value)  # its field is named by the slow path (decode_request)
        return value


def _request_decoder(size: int, max_elements: int) -> tuple[msgpack.Unpacker, _ElementBudget]:
    budget = _ElementBudget(max_elements)
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=True, list_hook=budget.list_hook,
                                object_hook=budget.object_hook, max_buffer_size=max(size, 1),
                                max_str_len=size, max_bin_len=size, max_array_len=max_elements,
                                max_map_len=max_elements, max_ext_len=0)
    return unpacker, budget


def decode_request(data, max_bytes: int = MAX_REQUEST_BYTES, max_elements: int = MAX_REQUEST_ELEMENTS,
                   chunk: int | None = None) -> Any:
    """A client's request frame, decoded within the bounds above: ``malformed`` naming the limit
    when it is too large, holds too many elements or is not msgpack. ``chunk``: feed the decoder
    that many bytes per call (on a thread: the GIL is given back between calls)."""
    size = len(data)
    if size > max_bytes:
        raise ProtocolError(E_MALFORMED, f"message of {size} bytes exceeds the {max_bytes}-byte limit",
                            field="request")
    view = memoryview(data)
    unpacker, _budget = _request_decoder(size, max_elements)
    step = chunk or max(size, 1)
    obj, done = None, False
    try:
        for offset in range(0, size, step):
            unpacker.feed(view[offset:offset + step])
            try:
                obj, done = unpacker.unpack(), True
                break
            except msgpack.OutOfData:
                continue
        if not done:
            raise ValueError("incomplete message")
        if unpacker.tell() != size:
            raise ValueError(f"{size - unpacker.tell()} bytes after the message")
    except ProtocolError as exc:
        if exc.details.get("limit") == "elements":
            raise
        # a bad encoded array: decoded again without the hook (bounded: the budget held) to name
        # its field and echo the request's id
        try:
            obj = msgpack.unpackb(data, raw=False, strict_map_key=True)
        except Exception as again:  # the frame is bad beyond the array (e.g. cut short)
            raise _malformed(again, max_elements) from None
        try:
            return decode_arrays(obj)
        except ProtocolError as named:
            named.request_id = request_id(obj)
            raise
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        raise _malformed(exc, max_elements) from None
    return obj


def _malformed(exc: Exception, max_elements: int) -> ProtocolError:
    text = str(exc)
    if "exceeds max_array_len" in text or "exceeds max_map_len" in text:  # refused from its header
        return ProtocolError(E_MALFORMED, f"an array or map of {text.split()[0]} elements exceeds the "
                                          f"{max_elements}-element limit of a request; send bulk numbers as "
                                          "encoded arrays ({'$nd': 1, ...}, docs/protocol.md)",
                             {"limit": "elements", "bound": max_elements}, field="request")
    return ProtocolError(E_MALFORMED, f"not a valid msgpack message ({type(exc).__name__}: {text})", field="request")


def request_head(data) -> dict:
    """The top-level fields of a request map that come before its ``args``, read from at most its
    first HEAD_BYTES (the cost of an inline decode, whatever the frame's size): what the main loop
    knows of a large frame before anything else of it is decoded. ``"args"`` is in the result
    (as None) when the map has it after the fields read."""
    view = memoryview(data)[:HEAD_BYTES]
    unpacker, _budget = _request_decoder(len(view), 64)
    unpacker.feed(view)
    head: dict = {}
    try:
        n = unpacker.read_map_header()
        for _ in range(n):
            key = unpacker.unpack()
            if key == "args":
                head["args"] = None
                break
            head[key] = unpacker.unpack()
    except msgpack.OutOfData:
        pass  # the fields before 'args' take more than HEAD_BYTES: what was read is the head
    except ProtocolError:
        raise
    except Exception as exc:
        raise _malformed(exc, 64) from None
    return head
