"""Who may reach a view (status page, Foxglove bridge).

- Where it listens: loopback only. The views speak plain HTTP / WebSocket without TLS, so their
  token would cross a network in clear text; another desk reaches them through an SSH tunnel.
- Who may read it: the holder of the view's own token, made at start and written like the
  daemon's (daemon/access.py: 0600 in a 0700 directory only this user can enter). The operator
  gets it in an address (the page: ``http://127.0.0.1:47780/#token=...``; the bridge:
  ``ws://127.0.0.1:8765/?token=...``); another account on the machine cannot read the file, so it
  cannot read the view, whatever key the view holds for the daemon.
- Never in a cookie: browsers scope cookies by host, not port, so a cookie set by a view on
  127.0.0.1 would go with every request to any other server on 127.0.0.1, another account's too.
  A request presents the token in ``Authorization: Bearer`` (the page's script sends it from the
  tab's sessionStorage, which is per origin: scheme, host and port), or, for the bridge whose
  viewers can only give a URL, in the WebSocket address's ``?token=``.
- From where: a browser request must come from the view's own origin (no cross-site WebSocket,
  no page of another site reading the JSON), and name the view's own address in ``Host`` (a DNS
  name rebound to 127.0.0.1 carries its own name there, and is refused).
"""

from __future__ import annotations

import hmac
import ipaddress
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from robodyn.daemon.access import default_token_dir, new_token, remove_token, token_name, write_token
from robodyn.errors import UserError


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_listen_host(host: str, view: str) -> None:
    """UserError unless ``host`` is a loopback address (127.0.0.0/8, ::1, localhost)."""
    if not is_loopback_host(host):
        raise UserError(f"{view}: --host {host or '(all interfaces)'} refused: the {view} has no TLS, so its "
                        "access token would cross the network in clear text; use --host 127.0.0.1 and reach it "
                        "through an SSH tunnel (ssh -L)")


class ViewToken:
    """The view's own token and the file that holds it (removed by :meth:`remove`)."""

    def __init__(self, view: str, host: str, port: int, directory: Path | None = None):
        self.value = new_token()
        # named after the view and its address: never the name of a daemon's token file
        self.path = (directory or default_token_dir()) / f"{view}-{token_name(f'tcp://{host}:{port}')}"
        write_token(self.path, self.value)

    def matches(self, presented: str | None) -> bool:
        if not isinstance(presented, str) or not presented:
            return False
        return hmac.compare_digest(presented.encode(), self.value.encode())

    def remove(self) -> None:
        remove_token(self.path, self.value)


def own_hosts(host: str, port: int) -> set[str]:
    """The ``Host`` values that name this view: its bound address or a loopback name, with its port."""
    names = {host, "localhost", "127.0.0.1", "[::1]"}
    if ":" in host and not host.startswith("["):
        names.add(f"[{host}]")
    return {f"{n}:{port}" for n in names}


def foreign_request(headers, host: str, port: int, allow_origins=()) -> str | None:
    """Why a request must be refused for where it comes from (Host, Origin), or None."""
    hosts = own_hosts(host, port)
    got = (headers.get("Host") or "").strip().lower()
    if got not in hosts:
        return f"Host {got or '(none)'!r} is not this view's address (expected one of {sorted(hosts)})"
    origin = headers.get("Origin")
    if origin is not None:  # browsers send it; command-line clients need not
        origin = origin.strip().lower()
        if origin not in {f"http://{h}" for h in hosts} | set(allow_origins):
            return f"Origin {origin!r} is not this view's own (cross-site requests are refused)"
    return None


def presented_token(headers, target: str, query: bool = True) -> str | None:
    """The token a request carries: ``Authorization: Bearer``, or (with ``query``) the target's
    ``?token=``. A ``Cookie`` header is never read: whatever it holds, any server on the host may
    have been sent it too."""
    auth = headers.get("Authorization") or ""
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    if query:
        values = parse_qs(urlsplit(target).query).get("token")
        if values:
            return values[0]
    return None
