"""A stop is confirmed, never assumed. Another account that creates the stop socket's path first
(a shared folder such as /tmp as the runtime folder) and answers stops itself must not make
`robodyn abort` or `robodyn disarm` report a stop served: the client checks who owns the socket and
its folder before sending, checks that the answer comes from the daemon's account (the kernel names
each datagram's sender) and that it names this stop. A refused socket sends the stop to the control
endpoint and fails the command, naming the path and its owner."""

import os
import select
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from robodyn.daemon import access
from robodyn.daemon import protocol as P
from robodyn.daemon.client import Client, DaemonUnavailable, StopSocketRefused
from robodyn.daemon.stop_socket import STAMP
from robodyn.tools.testing.local_daemon import free_port

from tests.daemon.conftest import DaemonProcess, excitation
from tests.daemon.reliability.stop_socket_flood import RUN_S, _wait_moving
from tests.daemon.reliability.test_local_access import other_user  # noqa: F401 - the second Unix account

NO_SUCH_UID = 54321  # owns what root chowns to "someone else" (no account needed)
OUTER_S = 120.0  # an outer time-out of every wait below


def _requires_root() -> None:
    if os.geteuid() != 0:
        line = "files owned by another uid need root (chown); run as root to test it"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(line, pytrace=False)
        pytest.skip(line)


def _stop_name(endpoint: str) -> str:
    return access.token_name(endpoint)[:-len(".token")] + ".stop"


def _forged_success(request: dict) -> bytes:
    """What a squatter answers: the driver's reply, claiming the stop served in cycle 1."""
    cmd = request.get("cmd")
    return P.ok_reply(request.get("id"), {
        "aborted": "run-that-keeps-moving" if cmd == "abort" else None, "state": "stopping", "served_by": "driver",
        "stop": {"cmd": cmd, "seen_seq": 1, "acted_seq": 1, "in_socket_periods": 0.0, "sent_periods": 0.0,
                 "arrived_since_previous_cycle": True, "count": 1}, **({"armed": False} if cmd == "disarm" else {})})


class FakeStopServer:
    """A datagram socket at ``path`` answering every stop with ``answer(request)`` on a thread,
    counting the datagrams it got; bounded by ``OUTER_S``."""

    def __init__(self, path: Path, answer):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.1)
        self.answer, self.received, self.done = answer, 0, threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        deadline = time.monotonic() + OUTER_S
        while not self.done.is_set() and time.monotonic() < deadline:
            try:
                data, sender = self.sock.recvfrom(1 << 16)
            except socket.timeout:
                continue
            self.received += 1
            self.sock.sendto(self.answer(P.unpackb(data[STAMP.size:])), sender)

    def close(self) -> int:
        self.done.set()
        self.thread.join(OUTER_S)
        self.sock.close()
        return self.received


def _squat(uid: int, gid: int, folder: Path, name: str) -> tuple[int, int, int]:
    """Another account's process: makes ``folder`` (its own, open to all) and a socket ``name`` in
    it, tells the parent it is there (one byte on the returned pipe), then answers every datagram
    with a forged success until the parent closes its end of the control pipe (or OUTER_S). It
    writes how many datagrams it got when it ends. (pid, result pipe, control pipe)."""
    ready_r, ready_w = os.pipe()
    control_r, control_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: drop to the other account, never return into pytest
        count = 0
        try:
            os.close(ready_r)
            os.close(control_w)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            folder.mkdir(mode=0o777)
            folder.chmod(0o777)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(str(folder / name))
            os.chmod(folder / name, 0o777)
            os.write(ready_w, b"R")
            deadline = time.monotonic() + OUTER_S
            while time.monotonic() < deadline:
                readable, _, _ = select.select([sock, control_r], [], [], 0.1)
                if control_r in readable:  # the parent is done
                    break
                if sock in readable:
                    data, sender = sock.recvfrom(1 << 16)
                    count += 1
                    sock.sendto(_forged_success(P.unpackb(data[STAMP.size:])), sender)
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            os.write(ready_w, f"E{exc!r}".encode())
        os.write(ready_w, f"#{count}".encode())
        os._exit(0)
    os.close(ready_w)
    os.close(control_r)
    first = os.read(ready_r, 1)
    assert first == b"R", first + os.read(ready_r, 4096)
    return pid, ready_r, control_w


def _squatter_count(pid: int, result_r: int, control_w: int) -> int:
    os.close(control_w)
    chunks = []
    while chunk := os.read(result_r, 4096):
        chunks.append(chunk)
    os.close(result_r)
    os.waitpid(pid, 0)
    text = b"".join(chunks).decode()
    assert text.startswith("#"), text
    return int(text[1:])


def _cli(args: list, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "robodyn", *args], capture_output=True, text=True, env=env,
                          timeout=OUTER_S)


def test_a_squatted_stop_socket_is_refused_and_the_stop_still_reaches_the_daemon(tmp_path, monkeypatch,
                                                                               other_user):  # noqa: F811
    """Another account answers on the stop socket's path of a client whose runtime folder is a
    shared one: `robodyn abort` and `robodyn disarm` send it nothing, exit 2 naming the socket and
    its owner, and the stop reaches the daemon through its control endpoint (the run ends aborted,
    the daemon disarmed). The daemon's own stop socket still serves the stops of a client that
    finds it."""
    private = tmp_path / "xdg"
    private.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(private))
    for name in ("ROBODYN_TOKEN", "ROBODYN_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    shared = Path(tempfile.mkdtemp(prefix="robodyn-shared-", dir="/tmp"))
    shared.chmod(0o1777)  # as /tmp: anyone makes entries, nobody removes another's
    d = DaemonProcess(tmp_path, speed=1.0)
    squatter = None
    try:
        squatted = shared / "robodyn" / _stop_name(d.control)
        squatter = _squat(other_user.pw_uid, other_user.pw_gid, shared / "robodyn", squatted.name)
        env = {**os.environ, "XDG_RUNTIME_DIR": str(shared)}
        run_id = d.client.submit_run("panda", excitation(RUN_S, seed=7), label="squatted")["run_id"]
        assert _wait_moving(d.client, run_id)
        done = _cli(["abort", "--endpoint", d.control, "--reason", "through the squatted path"], env)
        refusal = (f"stop socket {squatted} belongs to uid {other_user.pw_uid} ({other_user.pw_name}), not to the "
                   f"daemon's account (uid {os.geteuid()}): refusing to trust it")
        assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and refusal in done.stderr, done.stderr
        assert f"went to the control endpoint {d.control} instead, and the daemon confirmed it: run {run_id}" \
            in done.stderr, done.stderr
        final = d.client.wait_run(run_id, timeout=OUTER_S)
        assert final["state"] == "aborted" and final["abort_reason"] == "through the squatted path", final
        assert d.client.status()["safety"]["armed"] is True
        done = _cli(["disarm", "--endpoint", d.control], env)
        assert done.returncode == 2 and refusal in done.stderr and "confirmed it: disarmed" in done.stderr, done.stderr
        assert d.client.status()["safety"]["armed"] is False
        assert _squatter_count(*squatter) == 0  # nothing was sent to it
        squatter = None
        # the daemon's own stop socket, found by a client of the daemon's account: served by the driver
        d.client.arm()
        run_id = d.client.submit_run("panda", excitation(RUN_S, seed=8), label="genuine")["run_id"]
        assert _wait_moving(d.client, run_id)
        with Client(d.control, timeout=30.0) as c:
            reply = c.abort(reason="through the genuine stop socket")
        assert reply["served_by"] == "driver" and reply["aborted"] == run_id and reply["stop"]["count"] == 1, reply
        assert d.client.wait_run(run_id, timeout=OUTER_S)["state"] == "aborted"
    finally:
        if squatter is not None:
            _squatter_count(*squatter)
        d.stop()
        shutil.rmtree(shared, ignore_errors=True)


@pytest.fixture
def private_runtime(tmp_path, monkeypatch):
    """A private runtime folder for this test's client, its robodyn folder made as a daemon makes
    it, and an endpoint where no daemon answers (the control endpoint's fallback then fails)."""
    run = tmp_path / "xdg"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    for name in ("ROBODYN_TOKEN", "ROBODYN_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    path = access.stop_socket_path(endpoint)
    access.prepare_stop_dir(path, private_dir=True)
    return endpoint, path


def _abort_refused(endpoint: str) -> StopSocketRefused:
    with Client(endpoint, timeout=0.5) as c, pytest.raises(StopSocketRefused) as exc:
        c.abort(reason="refused")
    return exc.value


def test_a_stop_socket_or_folder_of_another_uid_is_refused_before_anything_is_sent(private_runtime):
    """Root stands in for the other account: the socket, then its folder, chowned to a uid no one
    has; a folder that others may enter. Each is refused before a datagram is sent, naming the path
    and its owner; the control endpoint does not answer here, so nothing confirms the stop."""
    _requires_root()
    endpoint, path = private_runtime
    server = FakeStopServer(path, _forged_success)
    try:
        os.chown(path, NO_SUCH_UID, NO_SUCH_UID)
        refused = _abort_refused(endpoint)
        assert refused.code == "stop_socket_refused" and refused.details["confirmed"] is None
        assert refused.message.startswith(
            f"stop socket {path} belongs to uid {NO_SUCH_UID} (no such user), not to the daemon's account "
            f"(uid {os.geteuid()}): refusing to trust it; the abort sent to the control endpoint {endpoint} failed "
            "too (no reply"), refused.message
        assert refused.message.endswith("nothing confirms the stop") and "\n" not in refused.message
        os.chown(path, os.geteuid(), os.getegid())
        os.chown(path.parent, NO_SUCH_UID, NO_SUCH_UID)
        assert f"stop socket folder {path.parent} belongs to uid {NO_SUCH_UID} (no such user)" in \
            _abort_refused(endpoint).message
        os.chown(path.parent, os.geteuid(), os.getegid())
        path.parent.chmod(0o755)
        assert f"stop socket folder {path.parent} has mode 0755 (must be 0700)" in _abort_refused(endpoint).message
        path.parent.chmod(0o700)
        assert server.received == 0
        with Client(endpoint, timeout=0.5) as c:  # all the daemon's again: the answer is taken
            assert c.abort(reason="ours")["stop"]["count"] == 1
        assert server.received == 1
    finally:
        server.close()


def test_beside_a_configured_token_file_the_token_files_owner_is_the_daemons_account(tmp_path, monkeypatch):
    """$ROBODYN_TOKEN_FILE (the systemd daemon's /run/robodyn/token): the socket must be the token
    file's owner's, its folder that owner's or root's and writable by no one else; and the answer
    must come from that account, as the kernel names its sender (a root process answering on a
    socket that says it is uid 54321's is refused)."""
    _requires_root()
    folder = tmp_path / "run-robodyn"
    folder.mkdir(mode=0o750)
    token = folder / "token"
    token.write_text("secret\n")
    os.chown(token, NO_SUCH_UID, NO_SUCH_UID)
    monkeypatch.setenv("ROBODYN_TOKEN_FILE", str(token))
    monkeypatch.delenv("ROBODYN_TOKEN", raising=False)
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    path = access.client_stop_path(endpoint)
    assert path == folder / "token.stop"
    server = FakeStopServer(path, _forged_success)
    try:
        refused = _abort_refused(endpoint)  # the socket is root's, the token file uid 54321's
        assert f"stop socket {path} belongs to uid 0 (root), not to the daemon's account (uid {NO_SUCH_UID})" in \
            refused.message and server.received == 0
        os.chown(path, NO_SUCH_UID, NO_SUCH_UID)  # the folder stays root's: allowed
        assert access.client_stop_socket(endpoint) == (path, NO_SUCH_UID)
        refused = _abort_refused(endpoint)  # but root (this process) answers, not uid 54321
        assert refused.message.startswith(f"stop socket {path} was answered by uid 0 (root), not by the daemon's "
                                          f"account (uid {NO_SUCH_UID}): refusing to trust it"), refused.message
        assert server.received == 1
        folder.chmod(0o770)
        assert "has mode 0770 (must be no group or world write)" in _abort_refused(endpoint).message
        token.unlink()
        assert f"the daemon's account is unknown (its token file {token}" in _abort_refused(endpoint).message
    finally:
        server.close()


def _answers():
    def garbage(request):
        return b"\xc1 not msgpack"

    def other_id(request):
        return _forged_success({**request, "id": "someone else's"})

    def other_stop(request):
        return _forged_success({**request, "cmd": "disarm" if request.get("cmd") == "abort" else "abort"})

    def no_count(request):
        reply = P.unpackb(_forged_success(request))
        del reply["result"]["stop"]["count"]
        return P.packb(reply)

    def not_the_driver(request):
        reply = P.unpackb(_forged_success(request))
        reply["result"]["served_by"] = "main"
        return P.packb(reply)

    return {"garbage": garbage, "other_id": other_id, "other_stop": other_stop, "no_count": no_count,
            "not_the_driver": not_the_driver}


@pytest.mark.parametrize("answer", sorted(_answers()))
def test_an_answer_that_does_not_name_the_stop_is_not_taken_for_one(private_runtime, answer):
    """The daemon's own socket (this account's), answering without confirming the stop: the
    client asks the control endpoint, which does not answer here, so the stop fails as a daemon
    that is not there does: never a success from an answer that does not name the stop."""
    endpoint, path = private_runtime
    server = FakeStopServer(path, _answers()[answer])
    try:
        with Client(endpoint, timeout=0.5) as c:
            with pytest.raises(DaemonUnavailable):
                c.abort(reason=answer)
            if answer == "other_id":  # taken for the late answer to an earlier stop: waited past, as no answer
                assert c.stop_socket_note is None
            else:
                assert str(path) in c.stop_socket_note and "without confirming" in c.stop_socket_note
        assert server.received == 1
    finally:
        server.close()


def test_the_default_token_folder_is_private_and_never_a_shared_one(request, monkeypatch):
    """Without $XDG_RUNTIME_DIR: /run/user/<uid>/robodyn when that folder is this user's alone,
    else ~/.robodyn/run, made 0700 (the folder above it too); never /tmp, where another account
    could make the per-user folder first. A home too long for a Unix socket's path: the daemon runs
    without a stop socket (ValueError naming the limit), clients stop through the control endpoint."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("ROBODYN_TOKEN_FILE", raising=False)
    # a short home: pytest's own temporary folders (per xdist worker) can make the socket's path
    # longer than a Unix socket allows, which is a case of its own (below)
    home = Path(tempfile.mkdtemp(prefix="rd-", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    monkeypatch.setenv("HOME", str(home))
    folder = access.default_token_dir()
    run_user = Path("/run/user") / str(os.geteuid())
    try:
        st = os.lstat(run_user)
        private_run_user = stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077
    except OSError:
        private_run_user = False
    assert not str(folder).startswith("/tmp/robodyn-")
    if private_run_user:
        assert folder == run_user / "robodyn"
        return
    assert folder == home / ".robodyn" / "run"
    endpoint = "tcp://127.0.0.1:47770"
    access.write_token(access.token_path(endpoint), "secret")
    assert stat.S_IMODE(os.lstat(home / ".robodyn").st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
    assert access.stop_socket_path(endpoint) == folder / "127.0.0.1-47770.stop"
    # ~/.robodyn/run made by someone else (root here, a uid no one has) is refused, as before
    if os.geteuid() == 0:
        os.chown(folder, NO_SUCH_UID, NO_SUCH_UID)
        with pytest.raises(ValueError, match=f"belongs to uid {NO_SUCH_UID}, not to this user"):
            access.write_token(access.token_path(endpoint), "secret")
    long_home = home / ("h" * 90)
    monkeypatch.setenv("HOME", str(long_home))
    with pytest.raises(ValueError, match="longer than 107 bytes"):
        access.stop_socket_path(endpoint)
    assert access.client_stop_path(endpoint) is None
