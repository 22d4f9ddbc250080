"""Local access by default (no CurveZMQ): the daemon's token file decides who may do more than
stop the robot. A second Unix account can abort and disarm, never arm, submit, identify or read,
nor connect to the state stream (an ipc socket beside the token, by default)."""

import json
import os
import pwd
import stat
import subprocess

import pytest
from robodyn.daemon import access
from robodyn.daemon.client import Client, DaemonError

from tests.daemon.conftest import DaemonProcess, excitation

OTHER_USER = "robodyn-test-other"


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_token_file_private_and_unsafe_directories_refused(tmp_path):
    token_dir = tmp_path / "run" / "robodyn"
    (tmp_path / "run").mkdir()
    access.write_token(token_dir / "a.token", "secret-1")
    assert _mode(token_dir) == 0o700 and _mode(token_dir / "a.token") == 0o600
    assert access.read_token_file(token_dir / "a.token") == "secret-1"
    assert [p.name for p in token_dir.iterdir()] == ["a.token"]  # the temporary file was renamed
    access.remove_token(token_dir / "a.token", "someone else's")  # not ours: left alone
    assert (token_dir / "a.token").exists()
    access.remove_token(token_dir / "a.token", "secret-1")
    assert not (token_dir / "a.token").exists()

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # a pre-existing world-writable directory: someone could swap the file
    with pytest.raises(ValueError, match="mode 0777"):
        access.write_token(shared / "a.token", "secret")
    shared.chmod(0o750)  # even group-readable is too wide for the default location
    with pytest.raises(ValueError, match="mode 0750"):
        access.write_token(shared / "a.token", "secret")
    assert not list(shared.iterdir())
    access.write_token(shared / "b.token", "secret", mode=0o640, private_dir=False)  # a configured file
    assert _mode(shared / "b.token") == 0o640
    link = tmp_path / "link"
    link.symlink_to(token_dir)
    with pytest.raises(ValueError, match="not a plain directory"):
        access.write_token(link / "a.token", "secret")
    with pytest.raises(ValueError, match="0o600 or 0o640"):
        access.write_token(token_dir / "c.token", "secret", mode=0o644)
    assert access.token_name("tcp://127.0.0.1:47770") == "127.0.0.1-47770.token"
    assert access.token_ok("abc", "abc") and not access.token_ok("abd", "abc") and not access.token_ok(None, "abc")


def test_daemon_token_file_refusals_and_clean_removal(tmp_path, monkeypatch):
    run = tmp_path / "xdg"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    for name in ("ROBODYN_TOKEN", "ROBODYN_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    d = DaemonProcess(tmp_path)  # its client finds the token by itself, and arms
    try:
        path = access.token_path(d.control)
        assert path.parent == run / "robodyn"
        assert _mode(path.parent) == 0o700 and _mode(path) == 0o600
        token = access.read_token_file(path)
        assert token and len(token) >= 40
        for bad in (Client(d.control, token="wrong"), Client(d.control, token=token[:-1])):
            with bad, pytest.raises(DaemonError) as exc:
                bad.status()
            assert exc.value.code == "unauthorised"
        monkeypatch.setenv("ROBODYN_TOKEN_FILE", str(tmp_path / "no-such-file"))
        with Client(d.control) as none:
            with pytest.raises(DaemonError) as exc:
                none.arm()
            assert exc.value.code == "unauthorised"
            assert exc.value.message == (f"unauthorised: this daemon needs its token ({path}); run as the "
                                         "daemon's user or set ROBODYN_TOKEN_FILE")
            assert none.ping()["protocol"] == 1  # open: says nothing but the version
            assert none.abort(reason="anyone may stop")  # open
        monkeypatch.setenv("ROBODYN_TOKEN_FILE", str(path))
        with Client(d.control) as by_file:
            assert by_file.status()["safety"]["armed"] is True
        monkeypatch.delenv("ROBODYN_TOKEN_FILE")
        monkeypatch.setenv("ROBODYN_TOKEN", token)
        with Client(d.control) as by_env:
            assert by_env.describe()["robot"]["name"] == "panda"
        monkeypatch.delenv("ROBODYN_TOKEN")
        refused = d.log_text().count("access token")
        assert refused >= 3, d.log_text()
    finally:
        d.stop()
    assert d.proc.returncode == 0
    assert not path.exists()  # removed on a clean stop
    assert _mode(path.parent) == 0o700


def _as_user(uid: int, gid: int, fn) -> dict:
    """Run ``fn()`` in a forked child with the other account's uid/gid (the interpreter lives
    under /root, so a fresh process as that user could not even start it); its JSON result."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: drop to the other account, never return into pytest
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            out = json.dumps(fn()).encode()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            out = json.dumps({"child_error": repr(exc)}).encode()
        os.write(write, out)
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks))


@pytest.fixture
def other_user():
    if os.geteuid() != 0:
        line = "a second Unix user needs root (useradd, setuid); run as root to test it"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(line, pytrace=False)
        pytest.skip(line)
    subprocess.run(["userdel", OTHER_USER], capture_output=True)
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER],
                   check=True, capture_output=True)
    try:
        yield pwd.getpwnam(OTHER_USER)
    finally:
        subprocess.run(["userdel", OTHER_USER], capture_output=True)


def test_a_second_unix_user_can_stop_but_not_move(tmp_path, monkeypatch, other_user):
    run = tmp_path / "xdg"
    run.mkdir(mode=0o700)
    run.chmod(0o711)  # the other account may traverse to the token's directory, as in /tmp
    tmp_path.chmod(0o711)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    for name in ("ROBODYN_TOKEN", "ROBODYN_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    d = DaemonProcess(tmp_path, default_state=True)  # the stream on its default socket, too
    path = access.token_path(d.control)
    stream = d.client.describe()["state_endpoint"]
    socket_path = access.state_socket_path(d.control)
    assert stream == f"ipc://{socket_path}" and socket_path.parent == path.parent  # beside the token, 0700
    assert _mode(socket_path) == 0o600
    # the daemon's own user (the Client finds the endpoint through describe) gets the 1 kHz states
    assert len(list(d.client.stream(max_batches=3, timeout=30.0))) == 3

    def attempts() -> dict:
        import socket

        import zmq

        result = {"uid": os.geteuid()}
        try:
            open(path).read()
            result["read_token"] = "read"
        except PermissionError:
            result["read_token"] = "denied"
        # the state stream: the socket's directory is closed to this account, so no connection
        # (a raw connect is refused; a ZeroMQ subscriber keeps retrying and receives nothing)
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            raw.connect(str(socket_path))
            result["connect_state"] = "connected"
        except PermissionError:
            result["connect_state"] = "denied"
        finally:
            raw.close()
        ctx = zmq.Context()
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(stream)
        result["state_messages"] = sum(1 for _ in range(20) if sub.poll(100))  # 2 s of a 1 kHz stream
        sub.close()
        ctx.term()
        with Client(d.control, timeout=10.0) as c:
            for name, call in (("arm", c.arm), ("status", c.status), ("recordings", c.recordings),
                               ("submit_run", lambda: c.submit_run("panda", excitation(1.0))),
                               ("identify", lambda: c.identify(["rec-x"])),
                               ("abort", lambda: c.abort(reason="the other account stops it")),
                               ("disarm", lambda: c.disarm(reason="the other account disarms"))):
                try:
                    call()
                    result[name] = "ok"
                except DaemonError as exc:
                    result[name] = exc.code
        return result

    try:
        other = _as_user(other_user.pw_uid, other_user.pw_gid, attempts)
        assert other == {"uid": other_user.pw_uid, "read_token": "denied", "connect_state": "denied",
                         "state_messages": 0, "arm": "unauthorised",
                         "status": "unauthorised", "recordings": "unauthorised", "submit_run": "unauthorised",
                         "identify": "unauthorised", "abort": "ok", "disarm": "ok"}, other
        assert d.client.status()["safety"]["armed"] is False  # the other account's disarm held
        # the daemon's own user: arms, submits, runs and identifies
        assert d.client.arm()["armed"] is True
        run_id = d.client.submit_run("panda", excitation(1.0), label="own user")["run_id"]
        assert d.client.wait_run(run_id, timeout=120)["state"] == "completed"
        with pytest.raises(DaemonError) as exc:
            d.client.identify(["rec-x"])
        assert exc.value.code != "unauthorised"  # past the token: the recording is unknown
    finally:
        d.stop()
    assert not path.exists()
    assert not socket_path.exists()  # the publisher's socket goes with it


def test_token_file_options_are_checked(tmp_path):
    from robodyn.daemon.config import load_config

    cfg = tmp_path / "d.toml"
    cfg.write_text('[security]\ntoken_file = "/run/robodyn/token"\ntoken_file_mode = 0o640\n')
    loaded = load_config(cfg)
    assert loaded.token_file == "/run/robodyn/token" and loaded.token_file_mode == 0o640
    assert access.token_path("tcp://127.0.0.1:1", loaded.token_file) == access.Path("/run/robodyn/token")
    assert load_config(None).token_file_mode == 0o600
    # the state stream's default: an ipc socket beside the token (here the configured one); TCP
    # only when asked for, or with CurveZMQ (remote subscribers, no token file)
    assert loaded.state == "ipc:///run/robodyn/token.state"
    assert load_config(None).state == f"ipc://{access.state_socket_path('tcp://127.0.0.1:47770')}"
    cfg.write_text('[daemon]\nstate = "tcp://127.0.0.1:47771"\n')
    assert load_config(cfg).state == "tcp://127.0.0.1:47771"
    cfg.write_text(f'[daemon]\ncontrol = "tcp://127.0.0.1:1"\n[security]\ntoken_file = "/{"x" * 120}/token"\n')
    with pytest.raises(ValueError, match="longer than 107 bytes"):
        load_config(cfg)
    cfg.write_text('[security]\ntoken_file_mode = 0o644\n')
    with pytest.raises(ValueError, match=r"token_file_mode must be 0o600 or 0o640, got 0o644"):
        load_config(cfg)
    cfg.write_text('[security]\ntoken_file = "token"\n')
    with pytest.raises(ValueError, match="token_file must be an absolute path"):
        load_config(cfg)
