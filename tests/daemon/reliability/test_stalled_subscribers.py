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


def publisher_status_once(d, condition, polls=240):
    """The publisher's statistics once `condition` holds (outer bound: `polls` rounds of 0.5 s)."""
    for _ in range(polls):
        st = dict(d.client.status()["publisher"])
        if condition(st):
            break
        time.sleep(0.5)
    return st


def test_subscribers_beyond_the_cap_are_refused_at_handshake(tmp_path, figure):
    """A burst of connections, as when viewers re-connect together after a restart: exactly `cap`
    get in (the gate counts approved handshakes, not connections still in their handshake), and a
    place freed by one that leaves is given to the next one."""
    cap = 3
    d = DaemonProcess(tmp_path, speed=1.0, arm=False, max_subscribers=cap)
    ctx = zmq.Context()

    def subscriber():
        s = ctx.socket(zmq.SUB)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.SUBSCRIBE, P.TOPIC_STATE)
        s.connect(d.state)
        return s

    def receiving(socks, polls=240):  # outer bound only: `polls` rounds of 0.5 s
        poller = zmq.Poller()
        for s in socks:
            poller.register(s, zmq.POLLIN)
        for _ in range(polls):
            ready = dict(poller.poll(500))
            if ready:
                return [s for s in socks if s in ready]
        return []

    try:
        subs = [subscriber() for _ in range(cap + 2)]  # all at once
        admitted = []
        for _ in range(cap):  # until `cap` of them receive
            admitted += receiving([s for s in subs if s not in admitted])
            if len(admitted) >= cap:
                break
        assert len(admitted) == cap, (len(admitted), dict(d.client.status()["publisher"]))
        refused = [s for s in subs if s not in admitted]
        assert receiving(refused, polls=4) == [], dict(d.client.status()["publisher"])  # 2 s: still nothing
        # the stats are sent every 0.5 s: until they count every handshake of the burst
        st = publisher_status_once(d, lambda st: st["subscribers"] == cap and st["refused_over_cap"] >= 2)
        assert st["subscribers"] == cap and st["refused_over_cap"] == 2, st

        admitted[0].close(linger=0)  # one leaves: once the daemon has seen it go, its place is free
        st = publisher_status_once(d, lambda st: st["subscribers"] == cap - 1)
        assert st["subscribers"] == cap - 1, st
        late = subscriber()
        assert receiving([late]) == [late], dict(d.client.status()["publisher"])
        figure("subscriber cap: a burst beyond max_subscribers refused at handshake, a freed place is reusable",
               cap=cap, refused=st["refused_over_cap"])
    finally:
        ctx.destroy(linger=0)
        d.stop()
