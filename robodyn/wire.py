"""The msgpack wire format shared by the daemon's control protocol, its state stream and the
recordings (documented in docs/protocol.md).

Everything is msgpack. NumPy arrays are never pickled: an array is the map
``{"$nd": 1, "dtype": "<f8", "shape": [n, m], "data": <bin, C order>}``, decoded by
:func:`unpackb` and checked (dtype on an allow-list, byte count matching the shape). A bad
message raises :class:`ProtocolError` naming the field at fault.
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

PROTOCOL_VERSION = 1
MAX_REQUEST_BYTES = 16 * 1024 * 1024  # a sampled 7-joint trajectory of ~1 h at 100 Hz fits
ALLOWED_DTYPES = {"<f8", "<f4", "<i8", "<i4", "<u8", "<u4", "|u1", "|i1", "|b1"}
MAX_ID_TEXT = 256  # a request id that is a string

# the error codes a message's decoding raises (the control protocol adds its own: daemon/protocol.py)
E_MALFORMED = "malformed"  # not msgpack, not a map, too large
E_VERSION = "unsupported_version"


class ProtocolError(Exception):
    """An error reply. ``field`` names the part of the request at fault, as a dotted path
    ("v", "id", "cmd", "args", "args.trajectory.params.a", or "request" for the frame as a
    whole); it is sent as ``details.field``."""

    def __init__(self, code: str, message: str, details: dict | None = None, field: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = dict(details or {})
        if field is not None:
            self.details.setdefault("field", field)


def encode_ndarray(a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a)
    dtype = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    a = a.astype(dtype, copy=False)
    return {"$nd": 1, "dtype": a.dtype.str, "shape": list(a.shape), "data": a.tobytes()}


def decode_ndarray(d: dict, field: str = "request") -> np.ndarray:
    dtype, shape, data = d.get("dtype"), d.get("shape"), d.get("data")
    if type(dtype) is not str or dtype not in ALLOWED_DTYPES:
        raise ProtocolError(E_MALFORMED, f"{field}: ndarray dtype {_short_repr(dtype)} not allowed; use one of "
                                         f"{sorted(ALLOWED_DTYPES)}", field=field)
    if type(shape) is not list or not all(type(s) is int and s >= 0 for s in shape) or len(shape) > 32:
        raise ProtocolError(E_MALFORMED, f"{field}: ndarray shape must be a list of at most 32 non-negative "
                                         f"integers, got {_short_repr(shape)}", field=field)
    if not isinstance(data, (bytes, bytearray)):
        raise ProtocolError(E_MALFORMED, f"{field}: ndarray data must be binary", field=field)
    dt = np.dtype(dtype)
    expected = dt.itemsize
    for s in shape:  # Python integers: a product of huge dimensions cannot overflow
        expected *= s
    if expected != len(data):
        raise ProtocolError(E_MALFORMED, f"{field}: ndarray shape {shape} of {dtype} needs {expected} bytes, got "
                                         f"{len(data)}", field=field)
    return np.frombuffer(data, dtype=dt).reshape(shape)


def _short_repr(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def decode_arrays(obj: Any) -> Any:
    """Replace every ``{"$nd": 1, ...}`` map by its array, naming the field of a bad one
    (iterative: the nesting depth msgpack accepts never meets Python's recursion limit)."""
    if not isinstance(obj, (dict, list)):
        return obj
    if isinstance(obj, dict) and type(obj.get("$nd")) is int and obj["$nd"] == 1:
        return decode_ndarray(obj)
    stack = [(obj, "")]
    while stack:
        node, path = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(value, (dict, list)):
                sub = f"{path}.{key}" if path else str(key)
                if isinstance(value, dict) and type(value.get("$nd")) is int and value["$nd"] == 1:
                    try:
                        node[key] = decode_ndarray(value, sub[:200])
                    except ProtocolError as exc:  # the path is the client's text: shown escaped, one line
                        shown = sub[:200] if sub[:200].isprintable() else repr(sub[:200])
                        exc.message = exc.message.replace(sub[:200], shown, 1)
                        exc.args = (exc.message,)
                        raise
                else:
                    stack.append((value, sub))
    return obj


def encode_value(o):
    if isinstance(o, np.ndarray):
        return encode_ndarray(o)
    if isinstance(o, (np.floating, np.integer, np.bool_)):
        return o.item()
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"cannot encode {type(o).__name__}")


def packb(obj: Any) -> bytes:
    return msgpack.packb(obj, default=encode_value, use_bin_type=True)


def unpackb(data: bytes, max_bytes: int = MAX_REQUEST_BYTES) -> Any:
    if len(data) > max_bytes:
        raise ProtocolError(E_MALFORMED, f"message of {len(data)} bytes exceeds the {max_bytes}-byte limit",
                            field="request")
    try:
        obj = msgpack.unpackb(data, raw=False, strict_map_key=True)
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        raise ProtocolError(E_MALFORMED, f"not a valid msgpack message ({type(exc).__name__}: {exc})",
                            field="request") from None
    try:
        return decode_arrays(obj)
    except ProtocolError as exc:  # a bad array inside a request: the reply still echoes its id
        exc.request_id = request_id(obj)
        raise



def request_id(obj: Any):
    """The id to echo in the reply: the request's own when it is one of the allowed types,
    otherwise nil (a reply never echoes a value the protocol does not allow)."""
    if not isinstance(obj, dict):
        return None
    rid = obj.get("id")
    if rid is None or type(rid) is int or (type(rid) is str and len(rid) <= MAX_ID_TEXT):
        return rid
    return None
