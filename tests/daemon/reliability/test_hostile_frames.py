"""Hostile frames on the control endpoint: nothing a client sends, with or without the token, is
decoded on the main loop beyond a bounded cost, so an abort that comes after it goes first.

The red team's frame: a 16 MiB msgpack map whose value is an array of 8 M one-element lists, sent
without a token while a run executed. Decoding it on the main loop froze the daemon for 23-44 s,
and the abort sent after it was answered after 31 s while the robot ran to the end. These tests
assert the mechanism that prevents it, from the daemon's own counters: the frame is refused from
its head (``large_requests.refused_before_decoding``, ``decoded`` 0), the abort is handled with no
request handled between its receipt and its reply, the run ends aborted with stopping samples in
its recording, and the watchdog heartbeat goes on."""

import time

import msgpack
import numpy as np
import pytest
import zmq

from robodyn.daemon import protocol as P
from robodyn.daemon import request_decoding as R
from robodyn.daemon.client import Client
from robodyn.recording.reader import load_recording
from tests.daemon.conftest import READY_Q, DaemonProcess, excitation
from tests.daemon.reliability.scenarios import NotifySocket, wait_state

pytestmark = pytest.mark.timeout(600)

WATCHDOG_S = 2.0


def lists_frame(auth: str | None = None, count: int = 8 * 1024 * 1024 - 64) -> bytes:
    """The red team's frame: ``{"v": 1, "cmd": "status", "args": {"x": [[0], [0], ...]}}``, 16 MiB,
    with ``auth`` first when given (its shape is what costs: one object per two bytes)."""
    head = {"auth": auth} if auth is not None else {}
    return msgpack.packb({**head, "v": 1, "id": 7, "cmd": "status", "args": {"x": [[0]] * count}})


def dealer(endpoint: str):
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    return sock


def reply_of(sock, timeout_s: float = 120.0) -> dict:
    assert sock.poll(int(timeout_s * 1000)), "no reply (an outer bound: the daemon never answered)"
    return msgpack.unpackb(sock.recv(), raw=False)


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    notify = NotifySocket(tmp / "notify")
    d = DaemonProcess(tmp, speed=1.0, env={"NOTIFY_SOCKET": str(tmp / "notify"),
                                           "WATCHDOG_USEC": str(int(WATCHDOG_S * 1e6))})
    d.notify = notify
    yield d
    d.stop()
    notify.closed = True


def large_counts(client) -> dict:
    return client.status()["control"]["large_requests"]


def test_a_16_mib_frame_without_the_token_is_refused_undecoded_and_the_abort_after_it_goes_first(watched, figure):
    client = watched.client
    accepted = client.submit_run("panda", excitation(20.0), label="hostile frame")
    wait_state(client, accepted["run_id"], ("execute",))
    before = large_counts(client)
    beats_before = len(watched.notify.times_of("WATCHDOG=1"))
    frame = lists_frame()  # built first: encoding it holds this process's GIL for seconds
    hostile, stopper = dealer(watched.control), dealer(watched.control)
    try:
        hostile.send(frame, copy=False)
        # the abort through the control endpoint (not the stop socket), right behind the frame
        stopper.send(P.make_request("abort", {"reason": "behind a hostile frame"}, rid=1))
        stop = reply_of(stopper)
        refused = reply_of(hostile)
    finally:
        hostile.close(0)
        stopper.close(0)
    assert stop["ok"], stop
    latency = stop["result"]["latency"]
    # no request was handled between the abort's receipt and its reply, and none it overtook
    assert latency["handled_since_received"] == 0, latency
    assert stop["result"]["aborted"] == accepted["run_id"]
    assert refused["ok"] is False and refused["error"]["code"] == P.E_UNAUTHORISED, refused
    assert f"limited to {R.INLINE_DECODE_BYTES} bytes" in refused["error"]["message"]
    assert refused["id"] == 7  # read from the head: the reply still names the request
    after = large_counts(client)
    assert after["received"] - before["received"] == 1
    assert after["refused_before_decoding"] - before["refused_before_decoding"] == 1
    assert after["decoded"] == before["decoded"] and after["in_flight"] == 0
    final = client.wait_run(accepted["run_id"], timeout=120, poll_s=0.05)
    assert final["state"] == "aborted" and "behind a hostile frame" in final["abort_reason"], final
    rec = load_recording(accepted["recording"])
    stopping = rec.phase == P.PHASE_STOPPING
    assert stopping.any(), "no stopping phase in the recording"
    assert rec.samples < accepted["trajectory_samples"] + accepted["move_samples"]
    # the heartbeat comes from the main loop only: it went on (bounded wait for the next beat)
    deadline = time.monotonic() + 60
    while len(watched.notify.times_of("WATCHDOG=1")) <= beats_before + 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(watched.notify.times_of("WATCHDOG=1")) > beats_before + 1
    figure("16 MiB unauthenticated frame, then abort over the control endpoint",
           abort_periods=latency["periods"], work_periods=latency["work_periods"],
           stopping_samples=int(stopping.sum()), samples=rec.samples)


def test_large_frames_with_the_token_are_bounded_too(watched):
    """The token before 'args' lets a large frame through to its thread, which refuses more than
    MAX_REQUEST_ELEMENTS elements; a token after 'args', a wrong one, or a frame over the byte
    limit are refused from the head, undecoded."""
    client = watched.client
    token = client._auth()
    assert token
    sock = dealer(watched.control)
    try:
        before = large_counts(client)
        sock.send(lists_frame(auth=token))
        reply = reply_of(sock)
        assert reply["error"]["code"] == P.E_MALFORMED and reply["error"]["details"]["limit"] == "elements", reply
        # nested arrays under the per-array limit still meet the total
        sock.send(msgpack.packb({"auth": token, "v": 1, "id": 8, "cmd": "status",
                                 "args": {"x": [[0] * 1000] * 200}}))
        reply = reply_of(sock)
        assert reply["error"]["details"]["limit"] == "elements" and reply["id"] == 8, reply
        mid = large_counts(client)
        assert mid["refused_after_decoding"] - before["refused_after_decoding"] == 2
        # the token after the args: not looked for
        sock.send(msgpack.packb({"v": 1, "id": 9, "cmd": "status", "args": {"pad": "x" * 5000}, "auth": token}))
        reply = reply_of(sock)
        assert reply["error"]["code"] == P.E_UNAUTHORISED and reply["error"]["details"]["field"] == "auth", reply
        sock.send(msgpack.packb({"auth": "wrong", "v": 1, "cmd": "status", "args": {"pad": "x" * 5000}}))
        assert reply_of(sock)["error"]["code"] == P.E_UNAUTHORISED
        sock.send(b"\x81" + msgpack.packb("auth") + msgpack.packb("x" * (P.MAX_REQUEST_BYTES + 10)))
        reply = reply_of(sock)
        assert reply["error"]["code"] == P.E_MALFORMED and "exceeds" in reply["error"]["message"], reply
        after = large_counts(client)
        assert after["refused_before_decoding"] - mid["refused_before_decoding"] == 3
        assert after["decoded"] == before["decoded"]
        # a large, valid request with the token is decoded on its thread and answered as usual:
        # its unknown argument is named like that of a small one
        sock.send(msgpack.packb({"auth": token, "v": 1, "id": 10, "cmd": "status", "args": {"pad": "x" * 5000}}))
        reply = reply_of(sock)
        assert reply["id"] == 10 and reply["error"]["code"] == P.E_INVALID_ARGS, reply
        assert reply["error"]["details"]["field"] == "args.pad"
        assert large_counts(client)["refused_after_decoding"] - after["refused_after_decoding"] == 1
    finally:
        sock.close(0)


def test_a_large_sampled_trajectory_is_parsed_on_its_thread_and_run(watched):
    """A sampled trajectory sent as encoded arrays (over INLINE_DECODE_BYTES): decoded and parsed
    on its thread (``decoded`` counts it), then admitted like any other; the handler does not parse
    it again (its parse is what the thread prepared)."""
    from robodyn.trajectory import trajectory_from_dict

    client = watched.client
    last = client.status().get("run")  # the module's previous run, if any, has ended
    if last and last.get("run_id"):
        client.wait_run(last["run_id"], timeout=120, poll_s=0.05)
    t = np.arange(0, 2.0, 0.01)
    tau = t / t[-1]  # a quintic rise: at rest, without acceleration, at both ends
    q = READY_Q[None, :] + 0.05 + 0.04 * (10 * tau ** 3 - 15 * tau ** 4 + 6 * tau ** 5)[:, None] * np.ones(7)[None, :]
    doc = {"format": "robodyn.trajectory", "version": 1, "family": "sampled", "dof": 7,
           "params": {"t": t, "q": q}}
    trajectory_from_dict({**doc, "params": {"t": t.tolist(), "q": q.tolist()}})  # a valid document
    payload = P.packb({"auth": client._auth(), "v": 1, "id": 11, "cmd": "submit_run",
                       "args": {"robot": "panda", "trajectory": doc, "label": "large"}})
    assert len(payload) > R.INLINE_DECODE_BYTES
    before = large_counts(client)
    sock = dealer(watched.control)
    try:
        sock.send(payload)
        reply = reply_of(sock, 300)
    finally:
        sock.close(0)
    assert reply["ok"], reply
    assert large_counts(client)["decoded"] - before["decoded"] == 1
    final = client.wait_run(reply["result"]["run_id"], timeout=120, poll_s=0.05)
    assert final["state"] == "completed", (final["state"], final.get("abort_reason"))

