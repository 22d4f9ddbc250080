"""Wire protocol: explicit ndarray encoding and request schema validation."""

import msgpack
import numpy as np
import pytest

from robodyn.daemon import protocol as P


def test_ndarray_round_trip_keeps_dtype_and_shape():
    for a in (np.arange(12, dtype=np.float64).reshape(3, 4), np.arange(5, dtype=np.uint64),
              np.array([1, 2], dtype=">i4"), np.zeros((0, 7))):
        b = P.unpackb(P.packb({"x": a}))["x"]
        assert b.shape == a.shape and np.array_equal(b, a)
        assert b.dtype == a.dtype.newbyteorder("<")


@pytest.mark.parametrize("bad, message", [
    ({"$nd": 1, "dtype": "|O", "shape": [1], "data": b"\0" * 8}, "not allowed"),
    ({"$nd": 1, "dtype": "<f8", "shape": [2], "data": b"\0" * 8}, "needs 16 bytes"),
    ({"$nd": 1, "dtype": "<f8", "shape": [-1], "data": b""}, "non-negative"),
])
def test_bad_ndarrays_are_refused(bad, message):
    with pytest.raises(P.ProtocolError, match=message):
        P.unpackb(msgpack.packb(bad))


def test_garbage_and_oversized_messages():
    with pytest.raises(P.ProtocolError) as e:
        P.unpackb(b"\xc1\xff\x00")
    assert e.value.code == P.E_MALFORMED
    with pytest.raises(P.ProtocolError, match="exceeds"):
        P.unpackb(b"\0" * 100, max_bytes=10)


@pytest.mark.parametrize("obj, code, words", [
    ([1, 2], P.E_MALFORMED, "must be a map"),
    ({"v": 2, "cmd": "ping"}, P.E_VERSION, "version 2"),
    ({"v": 1, "cmd": "fly"}, P.E_UNKNOWN_COMMAND, "'fly'"),
    ({"v": 1, "cmd": 3}, P.E_MALFORMED, "'cmd' must be a string"),
    ({"v": 1, "cmd": "ping", "extra": 1}, P.E_MALFORMED, "unknown request field"),
    ({"v": 1, "cmd": "submit_run", "args": {"robot": "panda"}}, P.E_INVALID_ARGS, "missing required argument 'trajectory'"),
    ({"v": 1, "cmd": "submit_run", "args": {"robot": 5, "trajectory": {}}}, P.E_INVALID_ARGS, "'robot' must be a string"),
    ({"v": 1, "cmd": "submit_run", "args": {"robot": "", "trajectory": {}}}, P.E_INVALID_ARGS, "must not be empty"),
    ({"v": 1, "cmd": "abort", "args": {"force": True}}, P.E_INVALID_ARGS, "unknown argument"),
    ({"v": 1, "cmd": "runs", "args": {"limit": True}}, P.E_INVALID_ARGS, "got a boolean"),
    ({"v": 1, "cmd": "runs", "args": []}, P.E_INVALID_ARGS, "'args' must be a map"),
])
def test_request_validation_names_the_problem(obj, code, words):
    with pytest.raises(P.ProtocolError) as e:
        P.parse_request(obj)
    assert e.value.code == code and words in e.value.message


ARRAY = {"$nd": 1, "dtype": "<i8", "shape": [2], "data": np.array([1, 1], "<i8").tobytes()}
ONE = {"$nd": 1, "dtype": "<i8", "shape": [1], "data": np.array([1], "<i8").tobytes()}


@pytest.mark.parametrize("frame, code, field", [
    # an encoded array as `v` was answered `internal` ("truth value of an array is
    # ambiguous"); a one-element array `v`, a list or array `id` were accepted as valid
    ({"v": ARRAY, "id": 1, "cmd": "ping"}, P.E_VERSION, "v"),
    ({"v": ONE, "id": 1, "cmd": "ping"}, P.E_VERSION, "v"),
    ({"v": 1, "id": [1, 2], "cmd": "ping"}, P.E_MALFORMED, "id"),
    ({"v": 1, "id": ARRAY, "cmd": "ping"}, P.E_MALFORMED, "id"),
    ({"v": 1, "id": {"a": 1}, "cmd": "ping"}, P.E_MALFORMED, "id"),
    ({"v": 1, "id": "x" * 257, "cmd": "ping"}, P.E_MALFORMED, "id"),
    ({"v": True, "cmd": "ping"}, P.E_VERSION, "v"),
    ({"v": 1.0, "cmd": "ping"}, P.E_VERSION, "v"),
    ({"v": 1, "cmd": ARRAY}, P.E_MALFORMED, "cmd"),
    ({"v": 1, "cmd": "runs", "args": {"limit": ONE}}, P.E_INVALID_ARGS, "args.limit"),
    ({"v": 1, "cmd": "abort", "args": {"reason": ["x"]}}, P.E_INVALID_ARGS, "args.reason"),
    ({"v": 1, "cmd": "submit_run", "args": {"robot": "panda", "trajectory": ARRAY}}, P.E_INVALID_ARGS,
     "args.trajectory"),
    ({"v": 1, "cmd": "submit_run", "args": {"robot": "panda", "trajectory": {
        "family": "fourier", "params": {"q": {"$nd": 1, "dtype": "<f8", "shape": [3], "data": b""}}}}},
     P.E_MALFORMED, "args.trajectory.params.q"),
])
def test_malformed_fields_are_named_never_internal(frame, code, field):
    """Through the same decode + validate path the daemon runs on every frame."""
    with pytest.raises(P.ProtocolError) as e:
        P.parse_request(P.unpackb(msgpack.packb(frame, use_bin_type=True)))
    assert e.value.code == code, e.value.message
    assert e.value.details["field"] == field, e.value.details


def test_valid_request_and_replies():
    req = P.parse_request(P.unpackb(P.make_request("run_status", {"run_id": "x"}, rid=7)))
    assert (req.cmd, req.args, req.id) == ("run_status", {"run_id": "x"}, 7)
    ok = P.unpackb(P.ok_reply(7, {"a": np.float64(1.5)}))
    assert ok == {"v": 1, "id": 7, "ok": True, "result": {"a": 1.5}}
    err = P.unpackb(P.error_reply(7, P.E_BUSY, "busy", {"run_id": "r"}))
    assert err["error"] == {"code": "busy", "message": "busy", "details": {"run_id": "r"}}


def test_state_batch_round_trip():
    n, w = 3, 21
    payload = P.pack_state_batch("panda", 99, np.arange(1, n + 1, dtype=np.uint64), np.arange(n) * 1e-3,
                                 np.arange(n, dtype=np.int64), np.full(n, 2, np.uint8), np.ones(n, np.uint32),
                                 np.arange(n * w, dtype=float).reshape(n, w))
    b = P.unpack_state_batch(payload)
    assert b["n"] == n and b["layout"] == 99 and b["values"].shape == (n, w)
    assert b["seq"].dtype == np.uint64 and list(b["seq"]) == [1, 2, 3]


def _fourier(**params) -> dict:
    doc = {"format": "robodyn.trajectory", "version": 1, "family": "fourier", "dof": 2,
           "params": {"wf": 0.6283, "q0": [0.0, 0.5], "a": [[0.01, 0.0], [0.0, 0.01]], "b": [[0.0, 0.0], [0.0, 0.0]]}}
    doc["params"].update(params)
    return doc


@pytest.mark.parametrize("doc, field, message", [
    (_fourier(period=3), "args.trajectory.params.period", "did you mean 'periods'?"),
    (_fourier(wf=1e-300), "args.trajectory.params.wf", "1e-300 is outside [0.0001, 100] rad/s"),
    (_fourier(wf=float("nan")), "args.trajectory.params.wf", "nan is outside [0.0001, 100] rad/s"),
    (_fourier(a=[[1e308, 0.0], [0.0, 0.01]]), "args.trajectory.params.a", "1e+308 at [0][0] is outside"),
    (_fourier(q0=np.array([1e300, 0.0])), "args.trajectory.params.q0", "1e+300 at [0] is outside [-100, 100] rad"),
    (_fourier(periods=1e9), "args.trajectory.params.periods", "1e+09 is outside [0.001, 100000]"),
    (dict(_fourier(), famly="fourier"), "args.trajectory.famly", "famly: unknown field of a trajectory document"),
])
def test_a_submitted_trajectory_is_refused_naming_the_field(doc, field, message):
    """Through the daemon's own parse of a submitted document (decode, then admission): the
    parser's one-line message becomes `invalid_trajectory` with `details.field` the field at fault."""
    from robodyn.daemon.admission import parse_trajectory

    req = P.parse_request(P.unpackb(P.make_request("submit_run", {"robot": "panda", "trajectory": doc}, rid=1)))
    with pytest.raises(P.ProtocolError) as e:
        parse_trajectory(req.args["trajectory"])
    assert e.value.code == P.E_INVALID_TRAJECTORY and message in e.value.message, e.value.message
    assert e.value.details["field"] == field and "\n" not in e.value.message
