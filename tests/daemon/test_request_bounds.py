"""The bounded decoding of client requests (daemon/protocol.py): what the budget counts, where
the head of a large frame ends, and that decoding in chunks gives what decoding at once gives."""

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robodyn.daemon import protocol as P
from robodyn.daemon import request_decoding as R

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 63, 2 ** 64 - 1), st.floats(allow_nan=False),
                    st.text(max_size=40), st.binary(max_size=40))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=6),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=6)),
                      max_leaves=60)


def elements(obj) -> int:
    """Array and map elements in all, counted as the budget counts them."""
    if isinstance(obj, list):
        return len(obj) + sum(elements(v) for v in obj)
    if isinstance(obj, dict):
        return len(obj) + sum(elements(v) for v in obj.values())
    return 0


@settings(max_examples=300, deadline=None)
@given(values, st.integers(1, 64))
def test_decoding_in_chunks_gives_what_decoding_at_once_gives(obj, chunk):
    data = msgpack.packb(obj, use_bin_type=True)
    assert R.decode_request(data, chunk=chunk) == msgpack.unpackb(data, raw=False) == obj


@settings(max_examples=200, deadline=None)
@given(values)
def test_the_budget_is_exactly_the_element_count(obj):
    data = msgpack.packb(obj, use_bin_type=True)
    n = elements(obj)
    assert R.decode_request(data, max_elements=max(n, 1)) == obj
    if n >= 1:
        with pytest.raises(P.ProtocolError) as err:
            R.decode_request(data, max_elements=n - 1)
        assert err.value.code == P.E_MALFORMED and err.value.details["limit"] == "elements"


def test_a_single_long_array_is_refused_from_its_header_naming_the_limit():
    data = msgpack.packb([0] * 10)
    with pytest.raises(P.ProtocolError) as err:
        R.decode_request(data, max_elements=9)
    assert "10 elements exceeds the 9-element limit" in err.value.message
    assert err.value.details == {"limit": "elements", "bound": 9, "field": "request"}


def test_encoded_arrays_are_one_element_and_a_bad_one_is_named_with_the_request_id():
    big = np.arange(100_000, dtype=float)
    obj = R.decode_request(P.packb({"v": 1, "id": 4, "args": {"a": big}}), max_elements=20)
    assert np.array_equal(obj["args"]["a"], big)
    bad = msgpack.packb({"v": 1, "id": 4, "args": {"a": {"$nd": 1, "dtype": "<f8", "shape": [3], "data": b"x"}}})
    with pytest.raises(P.ProtocolError) as err:
        R.decode_request(bad)
    assert err.value.details["field"] == "args.a" and err.value.request_id == 4


def test_trailing_bytes_and_truncated_frames_are_malformed():
    data = P.make_request("status", rid=1)
    for frame in (data + b"\x00", data[:-1], b""):
        with pytest.raises(P.ProtocolError) as err:
            R.decode_request(frame, chunk=3)
        assert err.value.code == P.E_MALFORMED


def test_the_head_is_what_comes_before_args_within_head_bytes():
    head = R.request_head(msgpack.packb({"auth": "t", "v": 1, "id": 3, "cmd": "x", "args": {"a": [0] * 50_000},
                                         "late": 1}))
    assert head == {"auth": "t", "v": 1, "id": 3, "cmd": "x", "args": None}
    # fields after the args are never read; a head longer than HEAD_BYTES is cut where it ends
    assert "auth" not in R.request_head(msgpack.packb({"v": 1, "args": {}, "auth": "t"}))
    long_id = msgpack.packb({"v": 1, "id": "i" * (R.HEAD_BYTES + 10), "auth": "t", "args": {}})
    assert R.request_head(long_id) == {"v": 1}
    with pytest.raises(P.ProtocolError):
        R.request_head(msgpack.packb({"v": 1, "x": [0] * 100, "args": {}}))  # 64 elements at most


@settings(max_examples=200, deadline=None)
@given(values, values, st.text(max_size=5))
def test_spliced_parts_give_the_bytes_of_encoding_the_whole(outer, part, key):
    """A part encoded apart (off the main loop) and spliced in: byte for byte what encoding the
    whole message gives, wherever the part stands and whatever else holds a look-alike string."""
    whole = {"a": outer, "meta": {key: part, "z": [part, "\x00packed-0-0"]}}
    spliced = {"a": outer, "meta": {key: P.Packed(P.packb(part)), "z": [P.Packed(P.packb(part)), "\x00packed-0-0"]}}
    assert P.pack_spliced(spliced) == P.packb(whole)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.binary(max_size=300), values.map(lambda v: msgpack.packb(v, use_bin_type=True))),
       st.integers(0, 300), st.integers(1, 50))
def test_any_bytes_decode_or_are_malformed_never_another_error(data, cut, chunk):
    """Whole, cut short or with a broken encoded array inside: a value or ``malformed``."""
    broken = msgpack.packb({"v": 1, "args": {"a": {"$nd": 1, "dtype": 5}}, "b": data})
    for frame in (data, data[:cut], broken, broken[:cut]):
        for head in (False, True):
            try:
                R.request_head(frame) if head else R.decode_request(frame, chunk=chunk)
            except P.ProtocolError as exc:
                assert exc.code == P.E_MALFORMED


def test_long_lists_of_numbers_go_as_one_encoded_array_each():
    t = [0.01 * k for k in range(1000)]
    q = [[0.1 * k, 1, 2.5] for k in range(1000)]
    doc = {"params": {"t": t, "q": q, "short": [1.0, 2.0], "names": ["a"] * 500, "ragged": [[1.0], [1.0, 2.0]] * 200}}
    sent = P.with_encoded_arrays(doc)
    assert isinstance(sent["params"]["t"], np.ndarray) and sent["params"]["q"].shape == (1000, 3)
    assert sent["params"]["short"] == [1.0, 2.0] and sent["params"]["names"] == ["a"] * 500
    assert sent["params"]["ragged"] == [[1.0], [1.0, 2.0]] * 200
    got = R.decode_request(P.packb(sent), max_elements=2000)
    assert np.array_equal(got["params"]["q"], np.asarray(q)) and np.array_equal(got["params"]["t"], t)
