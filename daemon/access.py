"""Local access token: without CurveZMQ, a daemon is reachable only by who can read its token.

The daemon makes a random token at start and writes it to a file only its user can read (0600
in a 0700 directory: ``$XDG_RUNTIME_DIR/robodyn``, or ``/tmp/robodyn-<uid>`` without it), named
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
"""

from __future__ import annotations

import hmac
import os
import re
import secrets
import stat
from pathlib import Path

# commands open without the token: stopping is never refused, and ping tells nothing but the
# version (liveness checks, "is it running?" before "may I?")
OPEN_COMMANDS = frozenset({"abort", "disarm", "ping"})
TOKEN_MODES = (0o600, 0o640)
E_UNAUTHORISED = "unauthorised"


def default_token_dir() -> Path:
    """$XDG_RUNTIME_DIR/robodyn, or a per-user directory under /tmp."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "robodyn"
    return Path("/tmp") / f"robodyn-{os.geteuid()}"


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
    path would be too long. (Whether anything listens there is for the client to find out.)"""
    file = os.environ.get("ROBODYN_TOKEN_FILE")
    try:
        return stop_socket_path(endpoint, str(Path(file).expanduser()) if file else "")
    except ValueError:
        return None


def prepare_stop_dir(path: Path, private_dir: bool) -> None:
    """The stop socket's directory as for the token (write_token): made 0700 when it is the
    default one and missing (a CurveZMQ daemon writes no token), and refused when others can
    reach it (default) or write it (configured)."""
    if private_dir:
        try:
            os.mkdir(path.parent, 0o700)
        except FileExistsError:
            pass
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
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
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
