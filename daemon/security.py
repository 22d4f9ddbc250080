"""Security of the public endpoints: loopback by default, CurveZMQ with an allow-list for remote
access, and the guard on arming.

- :func:`is_loopback_endpoint` decides whether an endpoint may be bound without authentication;
- :func:`write_keypair` / :func:`read_public_key` / :func:`read_secret_key`: the key files of
  ``robodyn keys`` (ZeroMQ's certificate text format, secret file mode 0600);
- :class:`ZapHandler`: the ZAP (ZeroMQ authentication protocol, RFC 27) handler that admits only
  allow-listed client keys and logs every refusal; :func:`zap_decide` is its pure decision;
- :func:`token_matches`: the optional arming token, compared by SHA-256 in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
import time
from pathlib import Path

log = logging.getLogger("robodyn.daemon.security")

ZAP_ENDPOINT = "inproc://zeromq.zap.01"  # fixed by RFC 27: libzmq asks here
ZAP_DOMAIN = "robodyn"
REFUSAL_LOG_INTERVAL_S = 60.0  # one line per refused key and address per minute: no journal flood


# --------------------------------------------------------------------------- endpoints


def endpoint_host(endpoint: str) -> str | None:
    """The host part of a ``tcp://host:port`` endpoint; None for other transports."""
    if not endpoint.startswith("tcp://"):
        return None
    rest = endpoint[len("tcp://"):]
    if ";" in rest:  # "source;destination" form of connect endpoints: the bind side is the last
        rest = rest.split(";")[-1]
    if rest.startswith("["):
        return rest[1:rest.index("]")] if "]" in rest else rest
    return rest.rsplit(":", 1)[0]


def is_loopback_endpoint(endpoint: str) -> bool:
    """True if binding ``endpoint`` exposes nothing beyond this host.

    ipc:// and inproc:// are local (ipc is guarded by the directory's permissions); tcp:// is local
    only on a loopback address (127.0.0.0/8, ::1, ``localhost``, interface ``lo``). A wildcard
    ``*`` or any other interface is remote.
    """
    if endpoint.startswith(("ipc://", "inproc://")):
        return True
    host = endpoint_host(endpoint)
    if host is None:
        return False
    if host in ("localhost", "lo"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --------------------------------------------------------------------------- key files


def _certificate_text(public: bytes, secret: bytes | None) -> str:
    lines = ["#   robodyn CurveZMQ key (robodyn keys); ZeroMQ certificate format",
             "metadata", "curve", f'    public-key = "{public.decode()}"']
    if secret is not None:
        lines.append(f'    secret-key = "{secret.decode()}"')
    return "\n".join(lines) + "\n"


def write_keypair(directory: str | Path, name: str) -> tuple[Path, Path, str]:
    """Generate a CurveZMQ keypair: ``NAME.key`` (public, shareable) and ``NAME.key_secret``
    (mode 0600). Refuses to overwrite an existing key: a lost secret key would lock clients out."""
    import zmq

    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"key name {name!r}: use a plain name such as 'daemon' or 'alice'")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    public_path, secret_path = directory / f"{name}.key", directory / f"{name}.key_secret"
    for p in (public_path, secret_path):
        if p.exists():
            raise ValueError(f"{p} exists; remove it first if you really mean to replace this key")
    public, secret = zmq.curve_keypair()
    fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(_certificate_text(public, secret))
    public_path.write_text(_certificate_text(public, None))
    return public_path, secret_path, public.decode()


def _read_field(path: Path, field: str) -> str | None:
    for line in path.read_text().splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() == field:
            return value.strip().strip('"')
    return None


def _check_z85(key: str, what: str) -> str:
    from zmq.utils import z85

    if len(key) != 40:
        raise ValueError(f"{what}: a CurveZMQ key is 40 Z85 characters, got {len(key)}")
    try:
        z85.decode(key.encode())
    except Exception:
        raise ValueError(f"{what}: not a Z85-encoded key") from None
    return key


def read_public_key(value: str | Path) -> str:
    """A public key given inline (40 Z85 characters) or as a key file (public or secret)."""
    text = str(value)
    if len(text) == 40 and not Path(text).exists():
        return _check_z85(text, "public key")
    path = Path(text).expanduser()
    if not path.exists():
        raise ValueError(f"public key {text!r}: neither a 40-character key nor an existing key file")
    key = _read_field(path, "public-key")
    if key is None:
        raise ValueError(f"{path}: no public-key line (not a robodyn/ZeroMQ key file)")
    return _check_z85(key, str(path))


def read_secret_key(path: str | Path) -> tuple[str, str]:
    """(public, secret) from a ``.key_secret`` file. Refuses a file others can read."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ValueError(f"secret key file {path} does not exist (create it with `robodyn keys`)")
    if path.stat().st_mode & 0o077:
        raise ValueError(f"secret key file {path} is readable by group/others; chmod 600 it")
    public, secret = _read_field(path, "public-key"), _read_field(path, "secret-key")
    if public is None or secret is None:
        raise ValueError(f"{path}: not a secret key file (needs public-key and secret-key lines)")
    return _check_z85(public, str(path)), _check_z85(secret, str(path))


# --------------------------------------------------------------------------- ZAP


def zap_decide(mechanism: bytes, credentials: list[bytes], allowed: dict[bytes, str]) -> tuple[bytes, str, str]:
    """(status code, status text, user id) for one ZAP request.

    NULL is admitted: a NULL peer can only complete a handshake with a NULL socket, and the only
    NULL sockets bound in a Curve-enabled daemon are its internal ipc pipes in a private directory.
    CURVE is admitted only for an allow-listed public key (the user id becomes the key's name).
    PLAIN and anything else are refused.
    """
    if mechanism == b"NULL":
        return b"200", "OK", ""
    if mechanism == b"CURVE" and credentials and len(credentials[0]) == 32:
        name = allowed.get(credentials[0])
        if name is not None:
            return b"200", "OK", name
        return b"400", "client key not in the allow-list", ""
    return b"400", f"mechanism {mechanism.decode(errors='replace')} not accepted", ""


class ZapHandler:
    """Answers libzmq's authentication requests for one context; polled by its owner's loop
    (the main loop, or the driver loop for the state stream), so no extra thread is needed."""

    def __init__(self, ctx, clients: dict[str, str]):
        import zmq
        from zmq.utils import z85

        self.zmq = zmq
        self.allowed = {z85.decode(key.encode()): name for name, key in clients.items()}
        self.socket = ctx.socket(zmq.REP)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.bind(ZAP_ENDPOINT)
        self.accepted = 0
        self.refused = 0
        self._last_logged: dict[tuple, float] = {}

    def serve_pending(self) -> None:
        while self.socket.poll(0):
            self.handle(self.socket.recv_multipart())

    def handle(self, frames: list[bytes]) -> None:
        if len(frames) < 6:
            log.warning("ZAP request with %d frames ignored", len(frames))
            self.socket.send_multipart([b"1.0", b"", b"500", b"bad ZAP request", b"", b""])
            return
        version, request_id, _domain, address, _identity, mechanism = frames[:6]
        status, text, user = zap_decide(mechanism, frames[6:], self.allowed)
        if status == b"200":
            if mechanism != b"NULL":
                self.accepted += 1
                log.info("control client %r authenticated from %s", user, address.decode(errors="replace"))
        else:
            self.refused += 1
            key = frames[6] if len(frames) > 6 else b""
            self._log_refusal(address.decode(errors="replace"), mechanism.decode(errors="replace"), key, text)
        self.socket.send_multipart([version, request_id, status, text.encode(), user.encode(), b""])

    def _log_refusal(self, address: str, mechanism: str, key: bytes, text: str) -> None:
        from zmq.utils import z85

        shown = z85.encode(key).decode() if len(key) == 32 else "-"
        now = time.monotonic()
        tag = (address, shown)
        if now - self._last_logged.get(tag, -1e9) < REFUSAL_LOG_INTERVAL_S:
            return
        self._last_logged[tag] = now
        if len(self._last_logged) > 1000:  # bounded memory under a scan
            self._last_logged.clear()
        log.warning("refused %s client from %s (key %s): %s", mechanism, address, shown, text)

    def close(self) -> None:
        self.socket.close(linger=0)


class HandshakeMonitor:
    """Logs handshakes that fail before ZAP is asked: a client without CurveZMQ (or with the
    wrong server key) never reaches the allow-list, and would otherwise be refused silently.
    Watches only failure events, so normal connections add nothing to the journal."""

    def __init__(self, sock, what: str):
        import zmq

        self.zmq = zmq
        events = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                  | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
        self.socket = sock.get_monitor_socket(events)
        self.what = what
        self.failed = 0
        self._last_logged = -1e9
        self._suppressed = 0

    def serve_pending(self) -> None:
        from zmq.utils.monitor import recv_monitor_message

        while self.socket.poll(0):
            event = recv_monitor_message(self.socket)
            self.failed += 1
            now = time.monotonic()
            if now - self._last_logged < REFUSAL_LOG_INTERVAL_S / 6:
                self._suppressed += 1
                continue
            self._last_logged = now
            more = f" ({self._suppressed} more since the last line)" if self._suppressed else ""
            self._suppressed = 0
            log.warning("refused a %s client: handshake failed (%s, code %s); not a CurveZMQ client with "
                        "this daemon's public key%s", self.what, event["event"].name, event["value"], more)

    def close(self) -> None:
        self.socket.close(linger=0)


def make_curve_server(sock, secret_key: str) -> None:
    """Turn a socket into a CurveZMQ server under the robodyn ZAP domain (before bind)."""
    import zmq

    sock.setsockopt(zmq.CURVE_SERVER, 1)
    sock.setsockopt(zmq.CURVE_SECRETKEY, secret_key.encode())
    sock.setsockopt(zmq.ZAP_DOMAIN, ZAP_DOMAIN.encode())


# --------------------------------------------------------------------------- arming token


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(token: str | None, expected_sha256: str) -> bool:
    """Constant-time check of an arming token against the configured SHA-256 (hex)."""
    if not expected_sha256:
        return True
    if not token:
        return False
    return hmac.compare_digest(token_hash(token), expected_sha256.lower())
