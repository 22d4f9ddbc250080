"""Control-socket security: loopback by default, CurveZMQ with an allow-list for remote access,
arming (optionally by operator key and token), ids instead of paths."""

import os
import time

import pytest
import zmq

from robodyn.daemon import security
from robodyn.daemon.config import load_config
from robodyn.daemon.client import Client, CurveKeys, DaemonError, DaemonUnavailable
from tests.daemon.conftest import DaemonProcess, excitation

from .scenarios import wait_state, wait_stopped


@pytest.mark.parametrize("endpoint, local", [
    ("tcp://127.0.0.1:47770", True), ("tcp://127.3.4.5:1", True), ("tcp://localhost:1", True),
    ("tcp://[::1]:1", True), ("tcp://lo:1", True), ("ipc:///run/robodyn/x", True),
    ("tcp://*:47770", False), ("tcp://0.0.0.0:1", False), ("tcp://192.168.1.10:1", False),
    ("tcp://eth0:1", False), ("tcp://[::]:1", False), ("udp://127.0.0.1:1", False),
])
def test_loopback_classification(endpoint, local):
    assert security.is_loopback_endpoint(endpoint) is local


def test_config_refuses_remote_binds_without_curve(tmp_path):
    cfg = tmp_path / "d.toml"
    cfg.write_text('[daemon]\ncontrol = "tcp://0.0.0.0:47770"\n')
    with pytest.raises(ValueError, match="remote access needs CurveZMQ"):
        load_config(cfg)
    key = zmq.curve_keypair()[0].decode()
    cfg.write_text('[daemon]\ncontrol = "tcp://0.0.0.0:47770"\n[security]\ncurve_secret_key = "/x"\n')
    with pytest.raises(ValueError, match="clients is empty"):
        load_config(cfg)
    cfg.write_text(f'[daemon]\ncontrol = "tcp://0.0.0.0:47770"\n[security]\ncurve_secret_key = "/x"\n'
                   f'clients = {{ alice = "{key}" }}\noperators = ["bob"]\n')
    with pytest.raises(ValueError, match="operators"):
        load_config(cfg)
    cfg.write_text(f'[daemon]\ncontrol = "tcp://0.0.0.0:47770"\n[security]\ncurve_secret_key = "/x"\n'
                   f'clients = {{ alice = "{key}" }}\nsubmitters = ["alice"]\n')
    with pytest.raises(ValueError, match="submitters needs"):
        load_config(cfg)
    cfg.write_text(f'[daemon]\ncontrol = "tcp://0.0.0.0:47770"\n[security]\ncurve_secret_key = "/x"\n'
                   f'clients = {{ alice = "{key}" }}\n[safety]\nrequire_arm = false\n')
    loaded = load_config(cfg)
    assert loaded.curve and loaded.clients == {"alice": key} and loaded.arming_required is False
    assert load_config(None).arming_required is True  # even the simulator moves only once armed
    assert load_config(None, {"driver": "franka"}).arming_required is True  # a real robot never


def test_zap_decisions_and_arming_token():
    alice = b"a" * 32
    assert security.zap_decide(b"CURVE", [alice], {alice: "alice"}) == (b"200", "OK", "alice")
    assert security.zap_decide(b"CURVE", [b"b" * 32], {alice: "alice"})[0] == b"400"
    assert security.zap_decide(b"PLAIN", [b"user", b"pw"], {alice: "alice"})[0] == b"400"
    assert security.zap_decide(b"NULL", [], {alice: "alice"})[0] == b"200"  # internal ipc pipes only
    digest = security.token_hash("open sesame")
    assert security.token_matches("open sesame", digest)
    assert not security.token_matches("open sesam", digest) and not security.token_matches(None, digest)
    assert security.token_matches(None, "")  # no token configured


@pytest.fixture(scope="module")
def curve_daemon(tmp_path_factory):
    """A daemon that requires CurveZMQ: alice (operator), carol (submitter) and bob (observer) are
    allowed; arming also needs a token. (Bound to loopback here; the same config binds to a lab
    network.)"""
    tmp = tmp_path_factory.mktemp("curve")
    keys = {}
    for name in ("daemon", "alice", "bob", "carol", "mallory"):
        _pub, secret_path, public = security.write_keypair(tmp / "keys", name)
        keys[name] = (public, secret_path)
    extra = (f'[security]\ncurve_secret_key = "{keys["daemon"][1]}"\n'
             f'clients = {{ alice = "{keys["alice"][0]}", bob = "{keys["bob"][0]}", carol = "{keys["carol"][0]}" }}\n'
             f'operators = ["alice"]\nsubmitters = ["carol"]\n'
             f'[safety]\nrequire_arm = true\narm_token_sha256 = "{security.token_hash("t0ken")}"\n')

    def client_for(name, timeout=10.0):
        return Client(d.control, timeout=timeout, curve=CurveKeys.from_files(keys[name][1], keys["daemon"][0]))

    # the harness's own client (readiness, status) authenticates as alice, through the environment
    env = {"ROBODYN_CLIENT_KEY": str(keys["alice"][1]), "ROBODYN_SERVER_KEY": keys["daemon"][0]}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        d = DaemonProcess(tmp, extra_config=extra, arm=False)
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    d.client_for = client_for
    d.keys = keys
    yield d
    d.stop()
    assert d.proc.returncode == 0


def test_only_allow_listed_keys_get_in_and_refusals_are_logged(curve_daemon, figure):
    d = curve_daemon
    for name in ("alice", "bob"):
        with d.client_for(name) as c:
            assert c.ping()["protocol"] == 1
    with d.client_for("alice") as c:  # the state stream is guarded by the same keys
        batches = list(c.stream(d.state, max_batches=20, timeout=30.0))
        assert len(batches) == 20
    t0 = time.monotonic()
    for intruder in (lambda: d.client_for("mallory", timeout=2.0), lambda: Client(d.control, timeout=2.0)):
        with intruder() as c:
            with pytest.raises(DaemonUnavailable):
                c.ping()
    with Client(d.control, timeout=2.0) as c:
        assert list(c.stream(d.state, max_batches=1, timeout=1.0)) == []  # no curve: no state either
    st = d.client.status()
    log = d.log_text()
    assert f"key {d.keys['mallory'][0]}" in log and "refused CURVE client" in log
    assert "refused a control client: handshake failed" in log  # the client without CurveZMQ
    assert st["security"]["refused"] >= 1 and st["security"]["failed_handshakes"] >= 1
    figure("unknown and unauthenticated clients refused and logged", refused_keys=st["security"]["refused"],
           failed_handshakes=st["security"]["failed_handshakes"], authenticated=st["security"]["authenticated"],
           seconds=round(time.monotonic() - t0, 2))


def test_motion_needs_an_operator_to_arm(curve_daemon, figure):
    d = curve_daemon
    before = d.commands()
    alice, bob = d.client_for("alice"), d.client_for("bob")
    try:
        with pytest.raises(DaemonError) as e:
            alice.submit_run("panda", excitation(2.0))
        assert e.value.code == "not_armed" and "robodyn arm" in e.value.message
        with pytest.raises(DaemonError) as e:
            bob.arm("t0ken")  # allowed to connect, but not an operator
        assert e.value.code == "forbidden" and "operators" in e.value.message
        with pytest.raises(DaemonError) as e:
            alice.arm("wrong")
        assert e.value.code == "forbidden"
        after = d.commands()
        assert after["starts"] == before["starts"] and after["writes"] == before["writes"]
        assert alice.arm("t0ken")["armed"] is True and bob.status()["safety"]["armed_by"] == "alice"

        # any client may disarm: the run in progress is ramped to rest and motion is disabled
        accepted = alice.submit_run("panda", excitation(30.0))
        wait_state(alice, accepted["run_id"], ("execute",))
        t0 = time.monotonic()
        assert bob.disarm("test")["aborted"] == accepted["run_id"]
        final = alice.wait_run(accepted["run_id"], timeout=180, poll_s=0.05)
        stop_s = time.monotonic() - t0
        assert final["state"] == "aborted" and "disarmed by bob" in final["abort_reason"]
        st = wait_stopped(alice)
        assert st["safety"]["armed"] is False and st["driver"]["lifecycle"] == "connected"
        assert st["driver"]["diagnostics"]["commands"]["hard_brakes"] == 0
        with pytest.raises(DaemonError) as e:
            alice.submit_run("panda", excitation(2.0))
        assert e.value.code == "not_armed"
        figure("disarm mid-run: ramped to rest and braked", seconds_to_rest=round(stop_s, 2))
    finally:
        alice.close()
        bob.close()


def test_clients_name_recordings_by_id_never_by_path(curve_daemon):
    with curve_daemon.client_for("bob") as c:
        for bad in ("../../etc/passwd", "/etc/shadow", ".hidden", "a/b"):
            with pytest.raises(DaemonError) as e:
                c.recording_info(bad)
            assert e.value.code == "invalid_args" and "not a path" in e.value.message
        with pytest.raises(DaemonError) as e:
            c.call("pull", job="../../etc")
        assert e.value.code == "invalid_args"
        with pytest.raises(DaemonError) as e:
            c.abort(reason="x" * 5000)
        assert e.value.code == "invalid_args" and "longer than" in e.value.message


def test_roles_submit_arm_identify_abort_disarm(curve_daemon, figure):
    """once an operator had armed, any allowed key could submit runs. Roles: operators
    arm and submit; submitters submit runs and identification jobs; observers watch. Abort and
    disarm stay open to every client: stopping the robot is never refused."""
    d = curve_daemon
    alice, bob, carol = d.client_for("alice"), d.client_for("bob"), d.client_for("carol")
    try:
        assert bob.status()["safety"]["your_role"] == "anyone"
        assert carol.status()["safety"]["your_role"] == "submitter"
        assert alice.status()["safety"]["your_role"] == "operator"
        for client in (carol, bob):
            with pytest.raises(DaemonError) as e:
                client.arm("t0ken")
            assert e.value.code == "forbidden" and e.value.details["field"] == "cmd"
        assert alice.arm("t0ken")["armed"] is True
        before = d.commands()
        with pytest.raises(DaemonError) as e:  # an observer cannot move the robot, even armed
            bob.submit_run("panda", excitation(2.0))
        assert e.value.code == "forbidden" and e.value.details["needed"] == "submitter", e.value.details
        with pytest.raises(DaemonError) as e:
            bob.identify(["some-recording"])
        assert e.value.code == "forbidden"
        assert d.commands()["starts"] == before["starts"]
        with pytest.raises(DaemonError) as e:  # a submitter passes the role gate (no such recording)
            carol.identify(["some-recording"])
        assert e.value.code == "not_found"
        accepted = carol.submit_run("panda", excitation(30.0))
        wait_state(carol, accepted["run_id"], ("execute",))
        assert bob.abort(reason="observer saw a problem")["aborted"] == accepted["run_id"]  # abort: anyone
        final = carol.wait_run(accepted["run_id"], timeout=180, poll_s=0.05)
        assert final["state"] == "aborted" and "observer saw a problem" in final["abort_reason"]
        wait_stopped(alice)
        assert alice.status()["safety"]["armed"] is True  # an abort is not a fault
        assert bob.disarm("end of test")["armed"] is False  # disarm: anyone
        figure("roles: observer refused submit/identify/arm, submitter refused arm, abort and disarm by an observer",
               run_aborted_by_observer=final["state"] == "aborted")
    finally:
        for c in (alice, bob, carol):
            c.close()
