"""Property-based fuzzing of the control endpoint, built from the protocol schema.

Every example is a valid request of some command (from ``protocol.COMMANDS`` and the
identification commands), with exactly one field made invalid: typed wrongly, nested, oversized,
out of its range, unknown, or missing. The property: the daemon answers every such frame with a
well-formed error reply (``v``, the request's id when it is a legal id, ``ok`` false, a documented
code that is never ``internal``, a message, ``details.field``) whose ``details.field`` names the
mutated field or the argument that contains it.

Used by tests/daemon/reliability/test_fuzz.py (a small count in CI) and bench/reliability/run.py
(100 000 examples).
"""

from __future__ import annotations

import time

import msgpack
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from robodyn.daemon import access
from robodyn.daemon import protocol as P
from robodyn.jobs.identification import ARGS as JOB_ARGS

SCHEMA = {**P.COMMANDS, **JOB_ARGS}
ERROR_CODES = {P.E_MALFORMED, P.E_VERSION, P.E_UNKNOWN_COMMAND, P.E_INVALID_ARGS, P.E_INVALID_TRAJECTORY,
               P.E_LIMIT, P.E_BUSY, P.E_NOT_FOUND, P.E_ROBOT, P.E_UNAVAILABLE, P.E_NOT_ARMED, P.E_FORBIDDEN,
               P.E_CANCELLED, P.E_UNAUTHORISED}
READY_Q = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
# the fuzzed daemon's arming token: every token the fuzzer sends is a wrong one
ARM_TOKEN = "the-operator-token-7c1e5a90d4b2"

# --------------------------------------------------------------------------- valid frames

ids = st.builds(lambda head, tail: head + tail, st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789"),
                st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", max_size=23))


def fourier_document(harmonics: int = 2) -> dict:
    return {"format": "robodyn.trajectory", "version": 1, "family": "fourier", "dof": 7,
            "params": {"wf": 0.6283, "q0": list(READY_Q), "a": [[0.01] * harmonics for _ in range(7)],
                       "b": [[0.0] * harmonics for _ in range(7)], "periods": 1.0}}


VALID_ARGS = {
    "submit_run": {"robot": st.just("panda"), "trajectory": st.builds(fourier_document, st.integers(1, 4)),
                   "mode": st.just("position"), "label": st.text(max_size=40)},
    "run_status": {"run_id": ids},
    "abort": {"run_id": ids, "reason": st.text(max_size=40), "stop": st.integers(1, 2 ** 62)},
    "runs": {"limit": st.integers(1, 1000)},
    "recording_info": {"recording": ids},
    "recordings": {"limit": st.integers(1, 1000), "offset": st.integers(0, 10 ** 6)},
    "jobs": {"limit": st.integers(1, 1000), "offset": st.integers(0, 10 ** 6)},
    "arm": {"token": st.text(min_size=1, max_size=40)},
    "disarm": {"reason": st.text(max_size=40)},
    "identify": {"recordings": st.lists(ids, min_size=1, max_size=3), "config": st.just({}),
                 "holdout": st.lists(ids, min_size=1, max_size=2)},
    "job_status": {"job": ids},
    "pull": {"job": ids},
}


@st.composite
def valid_request(draw, cmd: str) -> dict:
    schema = SCHEMA[cmd]
    args = {}
    for name, spec in schema.items():
        if spec.required or draw(st.booleans()):
            args[name] = draw(VALID_ARGS[cmd][name])
    return {"v": 1, "id": draw(st.one_of(st.none(), st.integers(0, 2 ** 62), ids)), "cmd": cmd, "args": args}


# --------------------------------------------------------------------------- invalid values

ints = st.integers(-(2 ** 63), 2 ** 64 - 1)  # what msgpack encodes

def ndarray_maps(valid: bool | None = None):
    """``{"$nd": 1, ...}`` maps: malformed ones (bad dtype, shape, byte count) and, unless
    ``valid`` is False, well-formed arrays (a wrong type wherever the schema wants a scalar)."""
    bad = st.fixed_dictionaries({"$nd": st.just(1),
                                 "dtype": st.one_of(st.sampled_from(["|O", "<c16", "<U4", "V8", ">f8"]),
                                                    ints, st.none()),
                                 "shape": st.one_of(st.lists(st.integers(-3, 2 ** 40), max_size=3), st.text(max_size=3)),
                                 "data": st.one_of(st.binary(max_size=32), st.text(max_size=4))})
    if valid is False:
        return bad
    good = st.builds(lambda n: P.encode_ndarray(np.arange(n, dtype="<i8")), st.integers(0, 8))
    return st.one_of(bad, good)


scalars = st.one_of(st.none(), st.booleans(), ints,
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20), st.binary(max_size=20))
anything = st.recursive(st.one_of(scalars, ndarray_maps()),
                        lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                        max_leaves=20)


def deeply_nested(depth_range=(20, 400)):
    """A value nested hundreds of levels (lists and maps)."""
    return st.builds(_nest, st.integers(*depth_range), st.booleans(), scalars)


def _nest(depth: int, maps: bool, leaf):
    value = leaf
    for k in range(depth):
        value = {"x": value} if maps and k % 2 else [value]
    return value


def not_of_types(types: tuple):
    """Any value whose exact type is not one of ``types`` (what the schema calls wrongly typed)."""
    return st.one_of(anything, deeply_nested()).filter(lambda v: type(v) not in types)


def oversized_text(minimum: int):
    return st.integers(minimum, minimum + 50_000).map(lambda n: "x" * n)


def violating(cmd: str, name: str):
    """Correctly typed values that break the argument's own check, or None if it has none."""
    spec = SCHEMA[cmd][name]
    if spec.types == (str,):
        if name in ("robot", "mode"):
            return st.one_of(st.just(""), oversized_text(65), st.sampled_from(["kuka", "torque_raw", "warp"]))
        if name in ("label", "reason", "token"):
            if name == "token":  # a wrong token is refused by the arming check, naming the token
                return st.one_of(oversized_text(P.MAX_TEXT + 1),
                                 st.text(min_size=1, max_size=30).filter(lambda t: t != ARM_TOKEN))
            return oversized_text(P.MAX_TEXT + 1)
        return st.one_of(st.just(""), st.sampled_from(["../../etc/passwd", "/etc/shadow", ".hidden", "a/b", ".."]),
                         oversized_text(129),
                         ids if name in ("run_id", "recording", "job") and cmd != "abort" else st.nothing())
    if spec.types == (int,):
        if name == "offset":  # 0 is the first page; past 2**40 is out of range
            return st.one_of(st.integers(-(2 ** 63), -1), st.integers(2 ** 40 + 1, 2 ** 63 - 1))
        if name == "limit":
            return st.one_of(st.integers(-(2 ** 63), 0), st.integers(P.MAX_PAGE + 1, 2 ** 63 - 1))
        return st.integers(-(2 ** 63), 0)
    if spec.types == (list,):
        empty = st.just([]) if spec.required else st.nothing()  # an empty optional list means none
        return st.one_of(empty, st.lists(not_of_types((str,)), min_size=1, max_size=3),
                         st.lists(st.sampled_from(["../x", "/etc/passwd", ""]), min_size=1, max_size=3),
                         st.lists(ids, min_size=101, max_size=120))
    if cmd == "identify" and name == "config":
        return st.dictionaries(st.sampled_from(["nonsense", "method_x", "processing_y"]), scalars, min_size=1)
    return None


# trajectory documents: one field of the document made invalid
def _not_one(v) -> bool:
    try:
        return not (v == 1)
    except Exception:
        return True


numeric_array_junk = st.one_of(
    st.none(), st.booleans(), st.text(max_size=10), st.dictionaries(st.text(max_size=5), scalars, max_size=3),
    st.lists(st.one_of(st.text(min_size=1, max_size=5), st.none(), st.booleans(), st.dictionaries(st.text(max_size=3), scalars)),
             min_size=1, max_size=8),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=6),  # wrong shape
    st.lists(st.sampled_from([float("nan"), float("inf")]), min_size=7, max_size=7),  # non-finite
    st.lists(st.lists(st.floats(-1, 1), min_size=1, max_size=3), min_size=8, max_size=9),  # 8-9 rows for 7 joints
    ndarray_maps(valid=False), deeply_nested((5, 60)))
def scalar_junk(out_of_range: list):
    return st.one_of(st.none(), st.booleans(), st.text(max_size=10), st.lists(scalars, max_size=3),
                     st.dictionaries(st.text(max_size=5), scalars, max_size=3), ndarray_maps(valid=False),
                     st.sampled_from([0.0, -1.0, float("nan"), float("inf"), -float("inf")] + out_of_range),
                     deeply_nested((5, 60)))



TRAJECTORY_MUTATIONS = {
    "format": st.one_of(st.text(max_size=20).filter(lambda s: s != "robodyn.trajectory"), ints, st.none(),
                        st.lists(scalars, max_size=2), ndarray_maps(valid=False)),
    "version": st.one_of(ints.filter(lambda v: v != 1), st.text(max_size=5), st.none(),
                         st.lists(scalars, max_size=2), ndarray_maps(valid=False)).filter(_not_one),
    "family": st.one_of(st.text(max_size=20).filter(lambda s: s not in ("fourier",)), ints, st.none(),
                        st.lists(scalars, max_size=2), ndarray_maps(valid=False)).filter(
        lambda f: not isinstance(f, str) or f != "fourier"),
    "dof": st.one_of(ints.filter(lambda v: v != 7), st.text(max_size=5), st.lists(scalars, max_size=2),
                     st.booleans(), ndarray_maps(valid=False)),
    "params": st.one_of(st.none(), st.text(max_size=5), st.lists(scalars, max_size=3), ints,
                        ndarray_maps(valid=False)),
    "params.wf": scalar_junk([]),
    # 1e9 periods: a run far longer than [safety].max_run_s; periods absent (None) means 1
    "params.periods": scalar_junk([1e9]).filter(lambda v: v is not None),
    "params.q0": numeric_array_junk,
    "params.a": st.one_of(numeric_array_junk, st.just([[0.01] * 2] * 8)),
    "params.b": numeric_array_junk,
}


# Fields the trajectory schema refuses on their own (nothing else in the document involved), so
# the reply must name them exactly: unknown or misspelled parameters (identifier keys: the daemon
# maps "params.<key>: ..." onto details.field) and numbers outside their physical range.
FOURIER_FIELDS = ("wf", "q0", "a", "b", "periods")


def _typos(name: str) -> list[str]:
    return [name + name[-1], name[:-1], name.upper(), name + "s", "_" + name]


misspelled_params = st.sampled_from(sorted({t for n in FOURIER_FIELDS for t in _typos(n)} - set(FOURIER_FIELDS) - {""}))
unknown_param_names = st.one_of(
    misspelled_params,
    st.from_regex(r"[a-z_][a-z0-9_]{0,15}", fullmatch=True).filter(lambda k: k not in FOURIER_FIELDS))
OUT_OF_RANGE = {  # field: values outside its range, and the range as the refusal states it
    "wf": ([1e308, 1e-300, -0.0, 0.0, -1.0, 1e-5, 101.0, float("nan"), float("inf")], "[0.0001, 100] rad/s"),
    "periods": ([1e308, 1e-300, -0.0, 1e9, float("nan"), -float("inf")], "[0.001, 100000]"),
    "q0": ([1e300, -1e300, 101.0, float("nan"), float("inf")], "[-100, 100] rad"),
    "a": ([1e308, -1e308, 1000.5, float("nan"), -float("inf")], "[-1000, 1000] rad/s"),
    "b": ([1e308, -2e3, float("nan")], "[-1000, 1000] rad/s"),
}


@st.composite
def strict_trajectory_mutation(draw, doc: dict) -> tuple[str, bool]:
    """Mutate ``doc`` in place with one field the schema refuses by itself; (path, exact) where
    ``exact`` says the reply must name that path, not just the trajectory."""
    kind = draw(st.sampled_from(["unknown_param", "unknown_param_text", "unknown_document_field", "out_of_range"]))
    params = doc["params"]
    if kind == "unknown_param":
        key = draw(unknown_param_names)
        params[key] = draw(st.one_of(scalars, st.just(params.get(key.rstrip("s_").lower(), 1.0))))
        return f"args.trajectory.params.{key}", True
    if kind == "unknown_param_text":  # any text: spaces, colons, newlines; the reply names the trajectory
        key = draw(st.text(min_size=1, max_size=30).filter(lambda k: k not in FOURIER_FIELDS))
        params[key] = draw(scalars)
        return "args.trajectory", False
    if kind == "unknown_document_field":
        key = draw(st.sampled_from(["parms", "params_", "familly", "durration", "periods", "q0", "meta_", "dofs"]))
        doc[key] = draw(scalars)
        return "args.trajectory", False
    name = draw(st.sampled_from(sorted(OUT_OF_RANGE)))
    value = draw(st.sampled_from(OUT_OF_RANGE[name][0]))
    if name in ("wf", "periods"):
        params[name] = value
    elif name == "q0":
        params[name][draw(st.integers(0, 6))] = value
    else:
        params[name][draw(st.integers(0, 6))][draw(st.integers(0, len(params[name][0]) - 1))] = value
    return f"args.trajectory.params.{name}", True


@st.composite
def mutated_frame(draw) -> tuple[dict, str, str]:
    """(frame, mutated field path, kind of mutation)."""
    # a quarter of the frames break the envelope, a third an argument, the rest a trajectory
    level = draw(st.sampled_from(["envelope"] * 25 + ["argument"] * 35 + ["trajectory"] * 40))
    cmd = "submit_run" if level == "trajectory" else draw(st.sampled_from(sorted(SCHEMA)))
    frame = draw(valid_request(cmd))
    schema = SCHEMA[cmd]
    if level == "envelope":
        targets = ["v", "id", "cmd", "args", "extra_field"]
    elif level == "argument":
        targets = ["unknown_arg"] + [f"arg:{n}" for n in schema] + [f"missing:{n}" for n, s in schema.items()
                                                                    if s.required]
    else:
        targets = [f"trajectory:{k}" for k in TRAJECTORY_MUTATIONS] + ["strict"] * 4
    target = draw(st.sampled_from(targets))
    if target == "v":
        frame["v"] = draw(st.one_of(anything, deeply_nested()).filter(lambda v: not (type(v) is int and v == 1)))
        return frame, "v", "v"
    if target == "id":
        frame["id"] = draw(st.one_of(not_of_types((int, str, type(None))), oversized_text(P.MAX_ID_TEXT + 1)))
        return frame, "id", "id"
    if target == "cmd":
        frame["cmd"] = draw(st.one_of(not_of_types((str,)), st.text(max_size=30).filter(lambda c: c not in SCHEMA)))
        return frame, "cmd", "cmd"
    if target == "args":
        frame["args"] = draw(not_of_types((dict, type(None))))
        return frame, "args", "args"
    if target == "extra_field":
        key = draw(st.text(min_size=1, max_size=12).filter(lambda k: k not in ("v", "id", "cmd", "args")))
        frame[key] = draw(anything)
        return frame, key[:64], "extra_field"
    if target == "unknown_arg":
        key = draw(st.text(min_size=1, max_size=12).filter(lambda k: k not in schema))
        frame["args"][key] = draw(anything)
        return frame, f"args.{key[:64]}", "unknown_arg"
    if target == "strict":
        path, exact = draw(strict_trajectory_mutation(frame["args"]["trajectory"]))
        return frame, path, "trajectory_exact" if exact else "trajectory_unknown"
    kind, name = target.split(":", 1)
    if kind == "missing":
        frame["args"].pop(name, None)
        return frame, f"args.{name}", "missing"
    if kind == "arg":
        spec = schema[name]
        bad = violating(cmd, name)
        choice = not_of_types(spec.types) if bad is None else st.one_of(not_of_types(spec.types), bad)
        frame["args"][name] = draw(choice)
        return frame, f"args.{name}", "wrong_type_or_range"
    # a field inside the trajectory document
    doc = frame["args"]["trajectory"]
    value = draw(TRAJECTORY_MUTATIONS[name])
    if name.startswith("params."):
        doc["params"][name.split(".", 1)[1]] = value
    else:
        doc[name] = value
    return frame, f"args.trajectory.{name}", "trajectory"


# --------------------------------------------------------------------------- the property

def argument_of(path: str) -> str:
    """The part of the request a reply must name at least: ``args.<name>`` for anything inside
    an argument, else the top-level field."""
    parts = path.split(".")
    return ".".join(parts[:2]) if parts[0] == "args" and len(parts) > 1 else parts[0]


def reply_problem(reply, frame: dict, path: str, exact: bool = False) -> str | None:
    """Why ``reply`` breaks the property for a frame mutated at ``path``; None if it holds.
    ``exact``: the reply must be ``invalid_trajectory`` naming ``path`` itself, and its message
    must start with that field's path within the trajectory and state the limit (or that the
    field is unknown)."""
    if not isinstance(reply, dict) or reply.get("v") != 1:
        return f"not a version-1 reply map: {reply!r:.200}"
    rid = frame.get("id")
    legal_id = rid is None or type(rid) is int or (type(rid) is str and len(rid) <= P.MAX_ID_TEXT)
    if reply.get("id") != (rid if legal_id and path != "id" else None):
        return f"reply id {reply.get('id')!r:.60} does not echo the request's legal id"
    if reply.get("ok") is not False:
        return "accepted (ok=true) a frame with an invalid field"
    err = reply.get("error")
    if not isinstance(err, dict) or set(err) != {"code", "message", "details"}:
        return f"error is not {{code, message, details}}: {err!r:.200}"
    if err["code"] == P.E_INTERNAL:
        return f"internal: {err['message']}"
    if err["code"] not in ERROR_CODES:
        return f"undocumented code {err['code']!r}"
    if not isinstance(err["message"], str) or not err["message"]:
        return "empty message"
    field = err["details"].get("field") if isinstance(err["details"], dict) else None
    if not isinstance(field, str):
        return f"no details.field ({err['code']}: {err['message']:.200})"
    top = argument_of(path)
    if not (field == top or field.startswith(top + ".")):
        return f"names {field!r}, the mutated field is {path!r} ({err['code']}: {err['message']:.200})"
    if exact:
        inner = path.removeprefix("args.trajectory.")
        if err["code"] != P.E_INVALID_TRAJECTORY or field != path:
            return f"names {field!r} ({err['code']}), the refused field is {path!r}: {err['message']:.200}"
        if not err["message"].startswith(f"trajectory: {inner}: "):
            return f"the message does not start with the field {inner!r}: {err['message']:.200}"
        name = inner.removeprefix("params.")
        limit = f"is outside {OUT_OF_RANGE[name][1]}" if name in OUT_OF_RANGE else "unknown field of family"
        if limit not in err["message"]:
            return f"the message does not say {limit!r}: {err['message']:.200}"
    if "\n" in err["message"] or "\r" in err["message"]:
        return f"a message of more than one line: {err['message']!r:.200}"
    return None


class Endpoint:
    """A DEALER socket to the daemon's control endpoint; one frame, one reply."""

    def __init__(self, endpoint: str, timeout_s: float = 60.0):
        import zmq

        self.zmq = zmq
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.timeout_ms = int(timeout_s * 1000)
        # the daemon's access token, as its own user's clients send it: the fuzzed fields reach
        # the handlers' validation instead of stopping at `unauthorised`
        self.token = access.client_token(endpoint)

    def exchange(self, payload: bytes):
        from robodyn.daemon.client import _with_auth

        self.sock.send(_with_auth(payload, self.token))
        if not self.sock.poll(self.timeout_ms):
            raise AssertionError(f"no reply within {self.timeout_ms} ms to a {len(payload)}-byte frame")
        return msgpack.unpackb(self.sock.recv(), raw=False)

    def close(self) -> None:
        self.sock.close(linger=0)
        self.ctx.destroy(linger=0)


def run_property(endpoint: str, examples: int, seed: int = 17) -> dict:
    """Send ``examples`` mutated frames; raise AssertionError (with hypothesis' shrunk example)
    on the first reply that breaks the property. Returns counts by kind and error code."""
    conn = Endpoint(endpoint)
    counts = {"frames": 0, "kinds": {}, "codes": {}, "bytes_max": 0}
    t0 = time.monotonic()

    @hypothesis_seed(seed)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate, Phase.shrink],
              suppress_health_check=list(HealthCheck))
    @given(mutated_frame())
    def prop(case):
        frame, path, kind = case
        payload = msgpack.packb(frame, use_bin_type=True)
        reply = conn.exchange(payload)
        counts["frames"] += 1
        counts["kinds"][kind] = counts["kinds"].get(kind, 0) + 1
        counts["bytes_max"] = max(counts["bytes_max"], len(payload))
        code = (reply.get("error") or {}).get("code", "ok") if isinstance(reply, dict) else "?"
        counts["codes"][code] = counts["codes"].get(code, 0) + 1
        problem = reply_problem(reply, frame, path, exact=kind == "trajectory_exact")
        assert problem is None, f"{problem}\nfield {path!r}, frame {frame!r:.600}"

    try:
        prop()
    finally:
        conn.close()
    counts["seconds"] = time.monotonic() - t0
    counts["internal"] = counts["codes"].get(P.E_INTERNAL, 0)
    return counts
