"""Local access token: without CurveZMQ, a daemon is reachable only by who can read its token.

The daemon makes a random token at start and writes it to a file only its user can read (0600
in a 0700 directory: ``$XDG_RUNTIME_DIR/robodyn``; without it ``/run/user/<uid>/robodyn`` when
that runtime folder exists and is this user's alone, else ``~/.robodyn/run``), named
after its control endpoint, and removes it on a clean exit. ``[security].token_file`` puts it
elsewhere (under systemd ``/run/robodyn/token``, mode ``[security].token_file_mode = 0o640`` for
an operators' group). Every request but ``abort``, ``disarm`` and ``ping`` must carry it (the
request's ``auth`` field): another account on the machine can stop the robot, never move it,
change anything or read its data. Clients find it the same way, or from ``$ROBODYN_TOKEN`` /
``$ROBODYN_TOKEN_FILE`` (Jupyter's model).

The state stream (1 kHz joint states) is served, by default, on an ``ipc://`` socket in the same
directory (:func:`state_socket_path`): another account can neither connect to it nor read the
token that ``describe`` (which names the stream's endpoint) needs. The stop socket
(:func:`stop_socket_path`, daemon/stop_socket.py) is there too: the driver process serves
``abort`` and ``disarm`` on it to whoever can reach that directory.

Never a shared folder such as /tmp: there another account can create the per-user directory (or
the stop socket in it) first and answer stops itself. A client checks who made the stop socket and
its directory before sending to it (:func:`check_stop_socket`).
"""

from __future__ import annotations

import hmac
import os
import pwd
import re
import secrets
import stat
from pathlib import Path

# commands open without the token: stopping is never refused, and ping tells nothing but the
# version (liveness checks, "is it running?" before "may I?")
OPEN_COMMANDS = frozenset({"abort", "disarm", "ping"})
TOKEN_MODES = (0o600, 0o640)
E_UNAUTHORISED = "unauthorised"


HOME_RUN_DIR = (".robodyn", "run")  # under the home folder when there is no private runtime folder


def default_token_dir() -> Path:
    """$XDG_RUNTIME_DIR/robodyn; without it /run/user/<uid>/robodyn when that folder exists and
    only this user can reach it, else ~/.robodyn/run (made 0700 by :func:`write_token`). Never a
    world-writable folder, where another account could make the directory first. ValueError when
    there is neither a runtime folder nor a home folder."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "robodyn"
    uid = os.geteuid()
    run_user = Path("/run/user") / str(uid)
    try:
        st = os.lstat(run_user)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & 0o077:
            return run_user / "robodyn"
    except OSError:
        pass
    return _home_run_dir()


def _home_run_dir() -> Path:
    try:
        home = Path.home()
    except (RuntimeError, KeyError):  # no $HOME and no passwd entry
        raise ValueError("no private folder for the daemon's token: set XDG_RUNTIME_DIR or HOME, or "
                         "[security].token_file") from None
    return home.joinpath(*HOME_RUN_DIR)


def _make_private_dir(directory: Path) -> None:
    """Create the default token directory 0700 when missing (and ~/.robodyn with it, 0700)."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        if directory != _home_run_dir():  # a runtime folder that is not there: not ours to make
            raise
        try:
            os.mkdir(directory.parent, 0o700)
        except FileExistsError:
            pass
        os.mkdir(directory, 0o700)


def token_name(endpoint: str) -> str:
    """File name for a control endpoint: tcp://127.0.0.1:47770 -> 127.0.0.1-47770.token."""
    rest = endpoint.split("://", 1)[-1]
    return re.sub(r"[^A-Za-z0-9._-]", "-", rest).strip("-.")[:200] + ".token"


def token_path(endpoint: str, configured: str = "") -> Path:
    """Where the daemon on ``endpoint`` keeps its token (``configured``: [security].token_file)."""
    if configured:
        return Path(configured).expanduser()
    return default_token_dir() / token_name(endpoint)


# a Unix socket's path must fit sockaddr_un.sun_path (108 bytes with its terminating NUL)
MAX_IPC_PATH = 107


def state_socket_path(endpoint: str, configured: str = "") -> Path:
    """The state stream's default socket, beside the token file of the daemon on ``endpoint``
    (127.0.0.1-47770.token -> 127.0.0.1-47770.state): reachable by who can reach the token's
    directory (0700: this user; a configured one, e.g. /run/robodyn 0750, its group too)."""
    return _beside_token(endpoint, configured, ".state", "config: the state stream's socket path",
                         "set [daemon].state to a shorter ipc:// path")


def stop_socket_path(endpoint: str, configured: str = "") -> Path:
    """The stop socket of the daemon on ``endpoint`` (daemon/stop_socket.py), beside its token
    file (127.0.0.1-47770.token -> 127.0.0.1-47770.stop): served by the driver process, reachable by
    who can reach the token's directory, never by more. ValueError when the path is too long for a
    Unix socket (the daemon then runs without it; clients stop through the control endpoint)."""
    return _beside_token(endpoint, configured, ".stop", "the stop socket's path",
                         "stops go through the control endpoint")


def _beside_token(endpoint: str, configured: str, suffix: str, what: str, otherwise: str) -> Path:
    """A Unix socket's path beside the daemon's token file (its stem, then ``suffix``); ValueError
    naming ``what`` and ``otherwise`` when the path is too long for a Unix socket."""
    token = token_path(endpoint, configured)
    path = token.with_name(token.stem + suffix)
    if len(str(path).encode()) > MAX_IPC_PATH:
        raise ValueError(f"{what} {path} is longer than {MAX_IPC_PATH} bytes (a Unix socket's limit); {otherwise}")
    return path


def client_stop_path(endpoint: str) -> Path | None:
    """Where a client on this host finds the stop socket of the daemon on ``endpoint``: beside
    $ROBODYN_TOKEN_FILE when set, else beside the endpoint's default token file; None when the
    path would be too long. (Whether anything listens there is for the client to find out, and
    whether the daemon made it: :func:`client_stop_socket`.)"""
    file = os.environ.get("ROBODYN_TOKEN_FILE")
    try:
        return stop_socket_path(endpoint, str(Path(file).expanduser()) if file else "")
    except ValueError:
        return None


class UntrustedStopSocket(Exception):
    """A stop socket this client will not send to: someone other than the daemon's account made
    it or its directory (another account can answer stops there and claim them served)."""

    def __init__(self, path: Path, message: str):
        super().__init__(message)
        self.path = path
        self.message = message


def account_name(uid: int) -> str:
    """``uid 1001 (mallory)``: a uid as a log line names it."""
    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid} (no such user)"


def client_stop_socket(endpoint: str) -> tuple[Path, int] | None:
    """The stop socket of the daemon on ``endpoint`` and the uid of the daemon's account, when a
    client of this host may send stops to it; None when there is none it can reach (the client
    stops through the control endpoint, as a remote client does); UntrustedStopSocket when there is
    one that another account made (:func:`check_stop_socket`)."""
    path = client_stop_path(endpoint)
    if path is None:
        return None
    file = os.environ.get("ROBODYN_TOKEN_FILE")
    daemon_uid = check_stop_socket(path, Path(file).expanduser() if file else None)
    return None if daemon_uid is None else (path, daemon_uid)


def check_stop_socket(path: Path, token_file: Path | None) -> int | None:
    """The uid of the daemon's account, when the socket at ``path`` is its stop socket: a socket
    owned by that account, in a plain directory owned by it (``token_file`` None, the default
    location: this user, directory 0700) or, beside a configured token file, owned by the token
    file's owner or root and writable by no one else. None when there is no socket there that this
    account can reach (nothing to send to). UntrustedStopSocket naming the path and its owner when
    the socket or its directory is someone else's."""
    try:
        sock_st = os.lstat(path)
    except OSError:  # missing, or in a directory this account cannot enter: no one answers there
        return None
    if not stat.S_ISSOCK(sock_st.st_mode):  # a plain file, a symlink: nothing a stop can be sent to
        return None
    if token_file is None:
        daemon_uid, dir_owners, forbidden, rule = os.geteuid(), {os.geteuid()}, 0o077, "0700"
    else:
        try:
            daemon_uid = os.stat(token_file).st_uid
        except OSError as exc:
            raise UntrustedStopSocket(path, f"stop socket {path}: the daemon's account is unknown (its token file "
                                            f"{token_file}: {exc.strerror}): refusing to trust it") from None
        dir_owners, forbidden, rule = {daemon_uid, 0}, 0o022, "no group or world write"
    if sock_st.st_uid != daemon_uid:
        raise UntrustedStopSocket(path, f"stop socket {path} belongs to {account_name(sock_st.st_uid)}, not to the "
                                        f"daemon's account (uid {daemon_uid}): refusing to trust it")
    folder = path.parent
    dir_st = os.lstat(folder)
    if stat.S_ISLNK(dir_st.st_mode) or not stat.S_ISDIR(dir_st.st_mode):
        raise UntrustedStopSocket(path, f"stop socket folder {folder} is not a plain directory: refusing to trust "
                                        f"the stop socket {path}")
    if dir_st.st_uid not in dir_owners:
        raise UntrustedStopSocket(path, f"stop socket folder {folder} belongs to {account_name(dir_st.st_uid)}, not "
                                        f"to the daemon's account (uid {daemon_uid}): refusing to trust the stop "
                                        f"socket {path}")
    if dir_st.st_mode & forbidden:
        raise UntrustedStopSocket(path, f"stop socket folder {folder} has mode {stat.S_IMODE(dir_st.st_mode):04o} "
                                        f"(must be {rule}): another account could have put the socket "
                                        f"there; refusing to trust the stop socket {path}")
    return daemon_uid


def prepare_stop_dir(path: Path, private_dir: bool) -> None:
    """The stop socket's directory as for the token (write_token): made 0700 when it is the
    default one and missing (a CurveZMQ daemon writes no token), and refused when others can
    reach it (default) or write it (configured)."""
    if private_dir:
        _make_private_dir(path.parent)
    _check_dir(path.parent, strict=private_dir)


def _check_dir(path: Path, strict: bool) -> None:
    """Refuse a directory that is a symlink, not ours, or that others can write (strict: reach)."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise ValueError(f"token directory {path} is not a plain directory; remove it or set [security].token_file")
    if st.st_uid != os.geteuid():
        raise ValueError(f"token directory {path} belongs to uid {st.st_uid}, not to this user "
                         f"({os.geteuid()}); remove it or set [security].token_file")
    bad = st.st_mode & (0o077 if strict else 0o022)
    if bad:
        raise ValueError(f"token directory {path} has mode {stat.S_IMODE(st.st_mode):04o}: others can "
                         f"{'reach' if strict else 'write'} it (must be {'0700' if strict else 'no group/world write'}); "
                         "chmod it or set [security].token_file")


def write_token(path: Path, token: str, mode: int = 0o600, private_dir: bool = True) -> None:
    """Write ``token`` to ``path`` atomically with ``mode``. ``private_dir``: create the directory
    0700 when missing and require it to stay so (the default location); otherwise (a configured
    file) the directory must exist, be ours and writable by nobody else."""
    if mode not in TOKEN_MODES:
        raise ValueError(f"config: [security].token_file_mode must be 0o600 or 0o640, got {mode:#o}")
    directory = path.parent
    if private_dir:
        _make_private_dir(directory)
    _check_dir(directory, strict=private_dir)
    tmp = directory / f".{path.name}.{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)  # the umask must not widen or narrow it
        os.write(fd, (token + "\n").encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def remove_token(path: Path, token: str) -> None:
    """Remove the file if it still holds our token (a successor's is left alone)."""
    try:
        if read_token_file(path) == token:
            path.unlink()
    except OSError:
        pass


def read_token_file(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read(1024).strip() or None
    except OSError:
        return None


def client_token(endpoint: str) -> str | None:
    """The token a client sends: $ROBODYN_TOKEN, else the file $ROBODYN_TOKEN_FILE, else the
    default file of ``endpoint``; None when none is readable (the daemon then says why)."""
    token = os.environ.get("ROBODYN_TOKEN")
    if token:
        return token.strip()
    file = os.environ.get("ROBODYN_TOKEN_FILE")
    return read_token_file(Path(file).expanduser() if file else token_path(endpoint))


def token_ok(presented, expected: str) -> bool:
    """Constant-time comparison of the presented token with the daemon's."""
    if type(presented) is not str:
        return False
    return hmac.compare_digest(presented.encode(), expected.encode())
