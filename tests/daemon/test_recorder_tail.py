"""The recorder finalizes a run only when its last sample is in, or provably lost: a recorder that is
merely behind on a loaded host must not cut the run's tail off (it once counted 221 samples of a
completed run as lost under `stress-ng --cpu 2` beside other work)."""

import time

import numpy as np
import pytest

from robodyn.daemon import protocol as P
from robodyn.daemon import recorder as R
from robodyn.daemon.config import DaemonConfig
from robodyn.recording import load_recording
from robodyn.drivers.sim import SimulatedRobot

DESC = SimulatedRobot({"seed": 0}).describe().to_dict()
WIDTH = sum(s["width"] for s in DESC["signals"])


class SteppedClock:
    """The recorder's ``time`` module with a monotonic clock the test moves: the close wait is
    judged on it, so a host that wakes the test late cannot finalize a run early."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def __getattr__(self, name):
        return getattr(time, name)


@pytest.fixture
def recorder(tmp_path, monkeypatch):
    cfg = DaemonConfig(data_dir=str(tmp_path), ros2=False)
    clock = SteppedClock()
    monkeypatch.setattr(R, "time", clock)
    rec = R.Recorder(cfg, {"state_ipc": f"ipc://{tmp_path}/state", "recorder_pipe": f"ipc://{tmp_path}/pipe"})
    replies = []
    monkeypatch.setattr(rec, "_reply", replies.append)
    monkeypatch.setattr(R, "CLOSE_WAIT_S", 0.2)
    rec.replies = replies
    rec.clock = clock
    yield rec
    rec.ctx.destroy(linger=0)


def batch(first: int, n: int, run: int) -> bytes:
    seq = np.arange(first, first + n, dtype=np.uint64)
    return P.pack_state_batch("panda", 0, seq, seq * 1e-3, seq.astype(np.int64), np.full(n, 2, np.uint8),
                              np.full(n, run, np.uint32), np.zeros((n, WIDTH)))


def open_run(rec, tmp_path):
    meta = {"run_id": "r1", "driver": DESC, "rate_hz": 1000.0, "trajectory": {"family": "fourier"},
            "robot": {"name": "panda"}}
    rec._handle({"type": "open", "run": 1, "run_id": "r1", "path": str(tmp_path / "r1.mcap"), "meta": meta,
                 "width": WIDTH})


def closed(rec):
    return [m for m in rec.replies if m.get("type") == "closed"]


def test_a_slow_recorder_keeps_the_tail_that_is_still_arriving(recorder, tmp_path):
    open_run(recorder, tmp_path)
    recorder._on_stream(P.TOPIC_STATE, batch(1, 100, 1))
    recorder._handle({"type": "close", "run": 1, "first_seq": 1, "last_seq": 400})
    # the rest trickles in, each batch later than the whole close wait after the close message
    for first in (101, 201, 301):
        recorder.clock.sleep(0.12)
        recorder._maybe_finalize()
        assert not closed(recorder)
        recorder._on_stream(P.TOPIC_STATE, batch(first, 100, 1))
    recorder._maybe_finalize()
    (msg,) = closed(recorder)
    assert msg["summary"]["lost_samples"] == 0 and msg["summary"]["recorded_samples"] == 400
    assert load_recording(msg["path"]).seq.shape[0] == 400


def test_a_tail_the_stream_has_passed_is_lost_at_once(recorder, tmp_path):
    open_run(recorder, tmp_path)
    recorder._on_stream(P.TOPIC_STATE, batch(1, 100, 1))
    recorder._handle({"type": "close", "run": 1, "first_seq": 1, "last_seq": 150})
    recorder._on_stream(P.TOPIC_STATE, batch(151, 50, 0))  # idle samples after the run: 101..150 never come
    recorder._maybe_finalize()
    (msg,) = closed(recorder)
    assert msg["summary"]["lost_samples"] == 50 and msg["summary"]["gaps"] == [[100, 50]]


def test_a_silent_stream_ends_the_wait(recorder, tmp_path):
    open_run(recorder, tmp_path)
    recorder._on_stream(P.TOPIC_STATE, batch(1, 100, 1))
    recorder._handle({"type": "close", "run": 1, "first_seq": 1, "last_seq": 150})
    recorder._maybe_finalize()
    assert not closed(recorder)
    recorder.clock.sleep(0.3)
    recorder._maybe_finalize()
    (msg,) = closed(recorder)
    assert msg["summary"]["lost_samples"] == 50


def test_a_recorder_with_a_backlog_keeps_its_heartbeat(tmp_path, monkeypatch):
    """A starved recorder working through a queue of batches must still report within STATS_S: the
    main process kills a recorder that is silent for HANG_TIMEOUT_S (5 s), and with it the run's
    recording. Here every batch costs at least 10 ms and 300 are queued (3 s of work, drained at once
    before). Counted in work, not time: a report comes at least every STATS_S + DRAIN_SLICE_S of
    draining, i.e. after at most that many 10 ms batches (fewer on a loaded host, never more); the
    drain-everything recorder of before sent one report after all 300."""
    import threading

    import zmq

    ctx = zmq.Context()
    pub = ctx.socket(zmq.XPUB)  # a PUB that hands over each subscription: sent only once it is in
    pub.setsockopt(zmq.SNDHWM, 0)
    pub.bind(f"ipc://{tmp_path}/state")
    pipe = ctx.socket(zmq.PAIR)
    pipe.bind(f"ipc://{tmp_path}/pipe")
    cfg = DaemonConfig(data_dir=str(tmp_path), ros2=False)
    rec = R.Recorder(cfg, {"state_ipc": f"ipc://{tmp_path}/state", "recorder_pipe": f"ipc://{tmp_path}/pipe"})
    slow = rec._on_stream

    def on_stream(topic, payload):
        time.sleep(0.01)
        slow(topic, payload)

    monkeypatch.setattr(rec, "_on_stream", on_stream)
    loop = threading.Thread(target=rec.run, daemon=True)
    loop.start()
    try:
        assert pipe.poll(120_000) and P.unpackb(pipe.recv())["type"] == "ready"  # outer time-out only
        # the recorder's subscription to the record topic has reached the publisher (a message sent
        # before it would be dropped, and a fixed sleep is no proof on a loaded host)
        subscribed = set()
        for _ in range(10):  # one message per topic it subscribes to
            if P.TOPIC_RECORD in subscribed:
                break
            assert pub.poll(120_000), f"the recorder did not subscribe (outer time-out only): {subscribed}"
            message = pub.recv()
            if message[:1] == b"\x01":
                subscribed.add(message[1:])
        assert P.TOPIC_RECORD in subscribed, subscribed
        for k in range(300):  # sent in milliseconds, worked through in 3 s: a backlog
            pub.send_multipart([P.TOPIC_RECORD, batch(1 + 10 * k, 10, 0)])
        reported = [0]  # samples received, as each stats report says
        deadline = time.monotonic() + 120  # generous outer time-out only
        while reported[-1] < 3000 and time.monotonic() < deadline:
            if pipe.poll(100):
                msg = P.unpackb(pipe.recv())
                if msg["type"] == "stats":
                    reported.append(msg["stream"]["received"])
        assert reported[-1] == 3000, reported
        per_report = np.diff(reported)
        # a slice may overrun by the batch in hand: two batches of slack (10 samples each)
        most = 10 * (int(np.ceil((R.STATS_S + R.DRAIN_SLICE_S) / 0.01)) + 2)
        assert per_report.max() <= most, reported
        assert np.count_nonzero((np.array(reported) > 0) & (np.array(reported) < 3000)) >= 3, reported
    finally:
        pipe.send(P.packb({"type": "shutdown"}))
        loop.join(5)
        rec.ctx.destroy(linger=0)
        ctx.destroy(linger=0)
