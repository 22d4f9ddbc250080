"""Where a view may listen. The views have no login of their own, so they serve this machine
only: an address other than loopback would hand the daemon's state (and, with an operator's
token or key behind the view, whatever it may read) to anyone on the network."""

from __future__ import annotations

import ipaddress

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
        raise UserError(f"{view}: --host {host or '(all interfaces)'} refused: the {view} has no authentication, "
                        "so it serves this machine only; use --host 127.0.0.1 and reach it through "
                        "an SSH tunnel (ssh -L)")
