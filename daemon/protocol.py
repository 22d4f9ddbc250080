"""Wire protocol of the daemon, version 1 (documented in docs/protocol.md).

Everything on the wire is msgpack with NumPy arrays in an explicit, checked encoding
(robodyn/wire.py, shared with the recordings).

Control (ZeroMQ ROUTER, request / reply)::

    request  {"v": 1, "id": any, "cmd": str, "args": {...}, "auth": str}   (auth: daemon/access.py)
    reply    {"v": 1, "id": same, "ok": true,  "result": {...}}
             {"v": 1, "id": same, "ok": false, "error": {"code": str, "message": str, "details": {...}}}

State stream (ZeroMQ PUB): its topics, phase codes and batches of samples are the recordings'
too (robodyn/recording/samples.py).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any, Callable

import msgpack
import numpy as np

# the message encoding and the samples' codes come from below (robodyn/wire.py, robodyn/recording):
# the daemon's modules keep reaching them as ``protocol.X``
from robodyn.recording.samples import (PHASE_EXECUTE, PHASE_IDLE, PHASE_MOVE, PHASE_NAMES, PHASE_SETTLE,  # noqa: F401
                                       PHASE_STOPPING, TOPIC_EVENT, TOPIC_RECORD, TOPIC_STATE, pack_state_batch,
                                       unpack_state_batch)
from robodyn.wire import (ALLOWED_DTYPES, E_MALFORMED, E_VERSION, MAX_ID_TEXT, MAX_REQUEST_BYTES,  # noqa: F401
                          PROTOCOL_VERSION, ProtocolError, decode_arrays, decode_ndarray, encode_ndarray,
                          encode_value, packb, request_id, unpackb)


# error codes (stable strings clients can switch on)
E_UNKNOWN_COMMAND = "unknown_command"
E_INVALID_ARGS = "invalid_args"
E_INVALID_TRAJECTORY = "invalid_trajectory"
E_LIMIT = "limit_violation"
E_BUSY = "busy"
E_NOT_FOUND = "not_found"
E_ROBOT = "robot_mismatch"
E_UNAVAILABLE = "unavailable"  # a component (driver, recorder) is down
E_NOT_ARMED = "not_armed"  # motion needs an operator to arm the daemon first
E_FORBIDDEN = "forbidden"  # arming refused: wrong token or not an operator's key
E_CANCELLED = "cancelled"  # a submission withdrawn (abort, disarm, shutdown) before any motion
E_UNAUTHORISED = "unauthorised"  # no or wrong access token (daemon/access.py)
E_INTERNAL = "internal"

MAX_TEXT = 1024  # labels, reasons, tokens: free text is short
# role of each command (docs/reliability.md, "Roles"): who may send it when CurveZMQ names clients
ROLE_ANYONE, ROLE_SUBMITTER, ROLE_OPERATOR = "anyone", "submitter", "operator"
ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


# --------------------------------------------------------------------------- pre-encoded parts


class Packed:
    """A value already encoded (:func:`packb`), placed as its bytes by :func:`pack_spliced`: a
    large part of a message encoded once, off the main loop, and never decoded there."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data


def pack_spliced(obj: Any) -> bytes:
    """:func:`packb` of ``obj``, in which every :class:`Packed` value stands as its bytes: the
    same bytes as ``packb`` of the decoded values (one copy of each part, no encoding)."""
    parts: list[bytes] = []
    tag = secrets.token_hex(8)

    def default(o):
        if isinstance(o, Packed):
            parts.append(o.data)
            return f"\x00packed-{tag}-{len(parts) - 1}"
        return encode_value(o)

    out = msgpack.packb(obj, default=default, use_bin_type=True)
    for k, data in enumerate(parts):
        marker = packb(f"\x00packed-{tag}-{k}")
        at = out.index(marker)
        out = b"".join((out[:at], data, out[at + len(marker):]))
    return out


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class Arg:
    types: tuple  # accepted Python types after decoding
    required: bool = False
    check: Callable[[Any], str | None] | None = None  # returns an error message or None
    doc: str = ""


def _non_empty(v) -> str | None:
    return None if v else "must not be empty"


def _positive(v) -> str | None:
    return None if v > 0 else "must be > 0"


def _short_text(v) -> str | None:
    return None if len(v) <= MAX_TEXT else f"is longer than {MAX_TEXT} characters"


def _stop_count(v) -> str | None:
    return None if 1 <= v < 1 << 63 else f"must be a stop's count, 1 or more, got {v}"


def check_id(v) -> str | None:
    """Run and recording ids: never a path (no '/', no leading '.'), short, a fixed alphabet."""
    if not v:
        return "must not be empty"
    if len(v) > 128 or v.startswith(".") or not set(v) <= ID_CHARS:
        return "must be an id (letters, digits, '-', '_', '.'), not a path"
    return None


# pages of `recordings`, `runs` and `jobs` (docs/protocol.md): a listing's cost never grows with
# the history, whatever a client asks
DEFAULT_PAGE = 100
MAX_PAGE = 1000


def _page_limit(v) -> str | None:
    return None if 1 <= v <= MAX_PAGE else f"must be 1..{MAX_PAGE} (default {DEFAULT_PAGE}), got {v}"


def _page_offset(v) -> str | None:
    return None if 0 <= v <= 1 << 40 else f"must be >= 0, got {v}"


PAGE_ARGS = {"limit": Arg((int,), False, _page_limit, f"page size, 1..{MAX_PAGE}, default {DEFAULT_PAGE}"),
             "offset": Arg((int,), False, _page_offset, "index of the page's first entry, oldest first; "
                                                        "default: the newest page")}


def page_bounds(args: dict, total: int) -> tuple[int, int]:
    """(offset, limit) of a listing's page; without ``offset`` the newest page (the last entries)."""
    limit = int(args.get("limit", DEFAULT_PAGE))
    offset = args.get("offset")
    return (max(0, total - limit) if offset is None else min(int(offset), total)), limit


def page_reply(key: str, rows: list, offset: int, limit: int, total: int) -> dict:
    return {key: rows, "total": total, "offset": offset, "limit": limit,
            "next_offset": offset + len(rows) if offset + len(rows) < total else None}


def _name(v) -> str | None:
    return _non_empty(v) or (None if len(v) <= 64 else "is longer than 64 characters")


# Argument schemas per command. Handlers are registered separately (see daemon.server); a command
# listed here without a handler answers ``unknown_command`` too.
COMMANDS: dict[str, dict[str, Arg]] = {
    "ping": {},
    "status": {},
    "describe": {},
    "submit_run": {
        "robot": Arg((str,), True, _name, "robot name the client expects the daemon to drive"),
        "trajectory": Arg((dict,), True, None, "robodyn.trajectory JSON document"),
        "mode": Arg((str,), False, _name, "control mode, default 'position'"),
        "label": Arg((str,), False, _short_text, "free text stored in the recording"),
    },
    "run_status": {"run_id": Arg((str,), False, check_id, "default: the current or last run")},
    "abort": {"run_id": Arg((str,), False, check_id), "reason": Arg((str,), False, _short_text),
              "stop": Arg((int,), False, _stop_count, "the stop socket's `count` of the stop this call follows up")},
    "runs": {"limit": Arg((int,), False, _page_limit)},
    "recordings": dict(PAGE_ARGS),
    "recording_info": {"recording": Arg((str,), True, check_id, "recording id")},
    "arm": {"token": Arg((str,), False, _short_text, "arming token, when the daemon is configured with one")},
    "disarm": {"reason": Arg((str,), False, _short_text)},
}


@dataclass
class Request:
    cmd: str
    args: dict
    id: Any = None
    auth: str | None = None


def register_command(name: str, args: dict[str, Arg]) -> None:
    """Declare a command's argument schema (extensions such as identification jobs use this)."""
    if name in COMMANDS:
        raise ValueError(f"command {name!r} already declared")
    COMMANDS[name] = dict(args)


def parse_request(obj: Any) -> Request:
    """Validate a decoded request against the schema; raise ProtocolError naming the field.

    Types are checked exactly (``type(x) is int``, not ``==``): a decoded ndarray, a bool or a
    float never passes for the integer 1, and nothing is compared element-wise."""
    if not isinstance(obj, dict):
        raise ProtocolError(E_MALFORMED, f"request must be a map, got {_type_name(obj)}", field="request")
    v = obj.get("v")
    if type(v) is not int or v != PROTOCOL_VERSION:
        shown = repr(v) if type(v) in (int, str, float, bool, type(None)) and len(repr(v)) <= 40 else _type_name(v)
        raise ProtocolError(E_VERSION, f"request field 'v': protocol version {shown} not supported; this daemon "
                                       f"speaks {PROTOCOL_VERSION} (the integer)",
                            {"supported": [PROTOCOL_VERSION]}, field="v")
    if "id" in obj:
        rid = obj["id"]
        if not (rid is None or type(rid) is int or type(rid) is str):
            raise ProtocolError(E_MALFORMED, f"request field 'id' must be an integer, a string or nil, got "
                                             f"{_type_name(rid)}", field="id")
        if type(rid) is str and len(rid) > MAX_ID_TEXT:
            raise ProtocolError(E_MALFORMED, f"request field 'id' is longer than {MAX_ID_TEXT} characters",
                                field="id")
    if "auth" in obj and not (type(obj["auth"]) is str and len(obj["auth"]) <= MAX_TEXT):
        raise ProtocolError(E_MALFORMED, f"request field 'auth' must be a string of at most {MAX_TEXT} "
                                         "characters (the daemon's access token)", field="auth")
    extra = sorted(str(k) for k in set(obj) - {"v", "id", "cmd", "args", "auth"})
    if extra:
        raise ProtocolError(E_MALFORMED, f"unknown request field(s) {[e[:64] for e in extra[:5]]}",
                            field=extra[0][:64])
    cmd = obj.get("cmd")
    if type(cmd) is not str:
        raise ProtocolError(E_MALFORMED, f"request field 'cmd' must be a string, got {_type_name(cmd)}", field="cmd")
    if cmd not in COMMANDS:
        raise ProtocolError(E_UNKNOWN_COMMAND, f"request field 'cmd': unknown command {cmd[:64]!r}; known: "
                                               f"{sorted(COMMANDS)}", field="cmd")
    args = obj.get("args", {})
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ProtocolError(E_INVALID_ARGS, f"{cmd}: 'args' must be a map, got {_type_name(args)}", field="args")
    schema = COMMANDS[cmd]
    unknown = sorted(str(k) for k in set(args) - set(schema))
    if unknown:
        raise ProtocolError(E_INVALID_ARGS, f"{cmd}: unknown argument(s) {[u[:64] for u in unknown[:5]]}; "
                                            f"accepted: {sorted(schema)}", field=f"args.{unknown[0][:64]}")
    for name, spec in schema.items():
        if name not in args:
            if spec.required:
                raise ProtocolError(E_INVALID_ARGS, f"{cmd}: missing required argument {name!r}",
                                    field=f"args.{name}")
            continue
        value = args[name]
        if type(value) not in spec.types:  # exact: bool is not int, an ndarray is not a list
            raise ProtocolError(E_INVALID_ARGS, f"{cmd}: argument {name!r} must be "
                                                f"{_type_names(spec.types)}, got {_type_name(value)}",
                                field=f"args.{name}")
        if spec.check is not None:
            problem = spec.check(value)
            if problem:
                raise ProtocolError(E_INVALID_ARGS, f"{cmd}: argument {name!r} {problem}", field=f"args.{name}")
    return Request(cmd, args, obj.get("id"), obj.get("auth"))


def _type_name(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an encoded array ({value.dtype.str}, shape {list(value.shape)})"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", bytes: "binary data",
            dict: "a map", list: "a list", type(None): "nil"}.get(type(value), type(value).__name__)


def _type_names(types: tuple) -> str:
    names = {str: "a string", int: "an integer", float: "a number", dict: "a map", list: "a list",
             bool: "a boolean"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def ok_reply(rid, result: dict) -> bytes:
    return packb({"v": PROTOCOL_VERSION, "id": rid, "ok": True, "result": result})


def _map_header(n: int) -> bytes:
    return bytes([0x80 | n]) if n < 16 else b"\xde" + n.to_bytes(2, "big")


def _array_header(n: int) -> bytes:
    return bytes([0x90 | n]) if n < 16 else b"\xdc" + n.to_bytes(2, "big") if n < 1 << 16 else \
        b"\xdd" + n.to_bytes(4, "big")


def ok_reply_packed(rid, packed_result: bytes) -> bytes:
    """:func:`ok_reply` around a result already encoded (the daemon's cached reads: the same
    bytes as ``ok_reply(rid, unpackb(packed_result))``)."""
    return (_map_header(4) + packb("v") + packb(PROTOCOL_VERSION) + packb("id") + packb(rid) + packb("ok")
            + packb(True) + packb("result") + packed_result)


def pack_result(result: dict, pack_row) -> bytes:
    """Encode a result whose lists of maps (a listing's rows) are encoded row by row with
    ``pack_row(row) -> bytes`` (which may keep each row's bytes: a listing's rows rarely change),
    everything else with :func:`packb`; the bytes :func:`packb` would give for the same result."""
    parts = [_map_header(len(result))]
    for key, value in result.items():
        parts.append(packb(key))
        if isinstance(value, list) and value and all(type(row) is dict for row in value):
            parts.append(_array_header(len(value)))
            parts.extend(pack_row(row) for row in value)
        else:
            parts.append(packb(value))
    return b"".join(parts)


def error_reply(rid, code: str, message: str, details: dict | None = None) -> bytes:
    return packb({"v": PROTOCOL_VERSION, "id": rid, "ok": False,
                  "error": {"code": code, "message": message, "details": details or {}}})


def with_encoded_arrays(obj: Any, min_elements: int = 256) -> Any:
    """``obj`` with every list of numbers (or of equal-length lists of numbers) of at least
    ``min_elements`` numbers as a float64 array, which goes on the wire as one encoded array:
    a sampled trajectory of 220 000 samples is 1.5 M numbers, far over MAX_REQUEST_ELEMENTS as
    lists, one element as an array."""
    if isinstance(obj, dict):
        return {k: with_encoded_arrays(v, min_elements) for k, v in obj.items()}
    if isinstance(obj, list):
        if len(obj) and all(type(v) in (int, float) for v in obj) and len(obj) >= min_elements:
            return np.asarray(obj, dtype=float)
        if len(obj) and all(type(v) is list for v in obj) and sum(len(v) for v in obj) >= min_elements:
            width = len(obj[0])
            if all(len(v) == width and all(type(x) in (int, float) for x in v) for v in obj):
                return np.asarray(obj, dtype=float)
        return [with_encoded_arrays(v, min_elements) for v in obj]
    return obj


def make_request(cmd: str, args: dict | None = None, rid=None, auth: str | None = None) -> bytes:
    # the token before the arguments: the daemon reads a large request's fields only up to its
    # 'args' before deciding whether to decode the rest (request_head)
    req = {"auth": auth} if auth is not None else {}
    req.update({"v": PROTOCOL_VERSION, "id": rid, "cmd": cmd, "args": args or {}})
    return packb(req)
