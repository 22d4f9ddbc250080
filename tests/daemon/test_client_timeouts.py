"""The client fails within its timeout when no daemon answers, even for a request that may take a
daemon longer, and says what it waits for when a daemon that answered is slow. A scripted
ROUTER socket on loopback stands in for the daemon; no wall-clock bound is asserted."""

from __future__ import annotations

import threading

import pytest

from robodyn.daemon import protocol as P
from robodyn.daemon.client import Client, DaemonUnavailable, check_endpoint
from robodyn.errors import UserError


class ScriptedDaemon:
    """Answers ``ping`` at once and ``recording_info`` once ``release`` is set; records the commands."""

    def __init__(self):
        import zmq

        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = f"tcp://127.0.0.1:{port}"
        self.commands: list[str] = []
        self.release = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        for _ in range(100):  # bounded: a test sends a handful of requests
            while not self.sock.poll(50):
                if self.stop.is_set():
                    return
            ident, payload = self.sock.recv_multipart()
            request = P.unpackb(payload)
            self.commands.append(request["cmd"])
            if request["cmd"] == "recording_info":
                self.release.wait(30)
                result = {"id": request["args"]["recording"], "samples": 0}
            else:
                result = {"pong": True}
            self.sock.send_multipart([ident, P.ok_reply(request["id"], result)])

    def close(self):
        self.stop.set()
        self.release.set()
        self.thread.join(10)
        self.sock.close(linger=0)
        self.ctx.term()


@pytest.fixture
def scripted():
    d = ScriptedDaemon()
    yield d
    d.close()


def test_no_daemon_fails_within_the_users_timeout_even_for_a_long_request():
    with Client("tcp://127.0.0.1:1", timeout=0.3, token="t") as c:
        with pytest.raises(DaemonUnavailable, match=r"within 0.3 s"):  # not the 30 s of a file read
            c.recording_info("r1")
        with pytest.raises(DaemonUnavailable, match=r"within 0.3 s"):  # nor the 600 s of a submission
            c.submit_run("panda", {"family": "fourier"})


def test_a_slow_answer_is_announced_once_with_what_it_waits_for(scripted):
    notices = []

    def notice(text):
        notices.append(text)
        scripted.release.set()  # the daemon answers once the wait has been announced

    # the ping that goes first must come back within this timeout: 2 s, not less, so a loaded host
    # that wakes the scripted daemon late does not turn it into "no daemon there"
    with Client(scripted.endpoint, timeout=2.0, token="t") as c:
        c.notice = notice
        assert c.recording_info("r1")["id"] == "r1"
        c.notice = None  # a loaded machine may make the next answer slow too: count only the first
        assert c.recording_info("r2")["id"] == "r2"  # answered before: no second ping
    assert scripted.commands == ["ping", "recording_info", "recording_info"]
    assert len(notices) == 1 and "find the recording" in notices[0] and scripted.endpoint in notices[0]


@pytest.mark.parametrize("endpoint", ["localhost:47770", "127.0.0.1:47770", "tcp://127.0.0.1", "tcp://:47770",
                                      "tcp://host:port", "tcp://host:70000", "http://127.0.0.1:47770", ""])
def test_a_malformed_endpoint_names_the_expected_form(endpoint):
    with pytest.raises(UserError, match=r"expected tcp://HOST:PORT or ipc://PATH"):
        check_endpoint(endpoint)


def test_well_formed_endpoints_pass():
    for endpoint in ("tcp://127.0.0.1:47770", "tcp://lab-pc.local:47770", "tcp://[::1]:47770",
                     "ipc:///run/robodyn/control", "inproc://daemon"):
        assert check_endpoint(endpoint) == endpoint
