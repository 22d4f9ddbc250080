"""Stalled subscribers: ten subscribers with a receive queue of one grew the real-time
driver process from 184 to 248 MiB in 60 s (each socket queued up to 200 000 messages, and
nothing capped their number). The stream is now republished by the publisher process: the
driver's memory does not depend on clients, the publisher queues at most 2000 messages per
subscriber, and [daemon].max_subscribers caps the connections.
(50 stalled subscribers for 10 minutes: bench/reliability/run.py --only subscribers.)"""

import time

import zmq

from robodyn.daemon import protocol as P
from tests.daemon.conftest import DaemonProcess

from .scenarios import stalled_subscribers

STALLED = 10
SECONDS = 30.0


def test_stalled_subscribers_do_not_grow_the_driver_and_are_capped(tmp_path, figure):
    d = DaemonProcess(tmp_path, speed=1.0, arm=False)
    try:
        r = stalled_subscribers(d, STALLED, SECONDS, sample_every_s=2.0)
        drv = r["driver_rss_kib"]
        growth_mib = (drv["max"] - drv["first"]) / 1024
        pub_mib = (r["publisher_rss_kib"]["max"] - r["publisher_rss_kib"]["first"]) / 1024
        assert growth_mib < 3.0, r["points"]  # was +64 MiB in 60 s with ten of them
        assert pub_mib < 60.0, r["points"]  # bounded by the high-water mark: 2000 messages each
        # a live reader loses nothing, counted by the driver's sequence numbers (how many samples a
        # loaded host lets the driver make in SECONDS is the host's figure, not asserted): every sample
        # from the reader's first to the driver's sequence number at the window's end reached it ...
        reader, drv = r["reader"], r["driver_seq"]
        assert drv["end"] > drv["start"] and reader["gaps"] == 0 and reader["lost"] == 0, (reader, drv)
        assert reader["last_seq"] >= drv["end"], (reader, drv)
        assert reader["received"] == reader["last_seq"] - reader["first_seq"] + 1, reader
        # ... and it was subscribed for most of the window, while the stalled ones filled their queues
        assert 0 < reader["first_seq"] <= drv["start"] + (drv["end"] - drv["start"]) // 2, (reader, drv)
        figure(f"{STALLED} stalled subscribers for {SECONDS:.0f} s at 1 kHz: driver RSS flat, a live reader loses nothing",
               driver_growth_mib=round(growth_mib, 2), publisher_growth_mib=round(pub_mib, 1),
               loop_p99_ms=r["loop"].get("p99_ms"), reader=r["reader"])
    finally:
        d.stop()


def test_subscribers_beyond_the_cap_are_refused_at_handshake(tmp_path, figure):
    cap = 3
    d = DaemonProcess(tmp_path, speed=1.0, arm=False, max_subscribers=cap)
    ctx = zmq.Context()
    try:
        subs = []
        for _ in range(cap + 2):
            s = ctx.socket(zmq.SUB)
            s.setsockopt(zmq.LINGER, 0)
            s.setsockopt(zmq.SUBSCRIBE, P.TOPIC_STATE)
            s.connect(d.state)
            subs.append(s)
            time.sleep(0.3)  # in order: the first `cap` get in
        got = [bool(s.poll(2000)) for s in subs]
        assert got == [True] * cap + [False, False], got
        st = d.client.status()["publisher"]
        assert st["subscribers"] <= cap + 2 and st["refused_over_cap"] >= 2, st
        subs[0].close(linger=0)  # one leaves: its place is free again
        late = ctx.socket(zmq.SUB)
        late.setsockopt(zmq.LINGER, 0)
        late.setsockopt(zmq.SUBSCRIBE, P.TOPIC_STATE)
        deadline = time.monotonic() + 120  # outer time-out only
        late.connect(d.state)
        while not late.poll(500):
            assert time.monotonic() < deadline, d.client.status()["publisher"]
        figure("subscriber cap: beyond max_subscribers refused at handshake, a freed place is reusable",
               cap=cap, refused=st["refused_over_cap"])
    finally:
        ctx.destroy(linger=0)
        d.stop()
