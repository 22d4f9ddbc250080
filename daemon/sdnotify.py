"""systemd's notification protocol, without libsystemd: one datagram per message on the unix
socket named by ``$NOTIFY_SOCKET`` ("@name" is Linux's abstract namespace).

Used for ``Type=notify`` readiness (``READY=1`` once the endpoints are bound and the driver is
connected), the watchdog heartbeat (``WATCHDOG=1`` at half of ``$WATCHDOG_USEC``), ``STATUS=``
lines shown by ``systemctl status`` and ``STOPPING=1``. Outside systemd every call is a no-op.
"""

from __future__ import annotations

import os
import socket
import time


def notify_address(value: str | None) -> str | bytes | None:
    """The socket address from ``$NOTIFY_SOCKET``: a path, or abstract ("@x" -> b"\\0x")."""
    if not value:
        return None
    if value.startswith("@"):
        return b"\0" + value[1:].encode()
    if value.startswith("/"):
        return value
    return None  # vsock and other forms are not used by the service units here


def watchdog_interval_s(usec: str | None, pid: str | None, own_pid: int) -> float | None:
    """Heartbeat period: half the watchdog timeout (systemd's advice), or None when no watchdog
    is armed for this process (``$WATCHDOG_PID`` names another one)."""
    if not usec:
        return None
    if pid and pid.isdigit() and int(pid) != own_pid:
        return None
    try:
        timeout = int(usec) / 1e6
    except ValueError:
        return None
    return timeout / 2 if timeout > 0 else None


class Notifier:
    """Reads the environment once and removes the variables, so worker processes (spawned with
    this environment) never talk to systemd in the daemon's name."""

    def __init__(self, environ=os.environ):
        self.address = notify_address(environ.pop("NOTIFY_SOCKET", None))
        self.watchdog_s = watchdog_interval_s(environ.pop("WATCHDOG_USEC", None), environ.pop("WATCHDOG_PID", None),
                                              os.getpid())
        self._next_beat = 0.0
        self._sock = None
        if self.address is not None:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)

    @property
    def enabled(self) -> bool:
        return self._sock is not None

    def send(self, *fields: str) -> bool:
        if self._sock is None:
            return False
        try:
            self._sock.sendto("\n".join(fields).encode(), self.address)
            return True
        except OSError:  # systemd gone or the socket full: never fatal for the daemon
            return False

    def ready(self, status: str) -> None:
        self.send("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def status(self, status: str) -> None:
        self.send(f"STATUS={status}")

    def stopping(self, status: str = "stopping") -> None:
        self.send("STOPPING=1", f"STATUS={status}")

    def heartbeat(self) -> None:
        """Send WATCHDOG=1 if due. Called from the main loop only: a wedged loop stops the
        heartbeat and systemd restarts the service."""
        if self.watchdog_s is None or self._sock is None:
            return
        now = time.monotonic()
        if now >= self._next_beat:
            self._next_beat = now + self.watchdog_s
            self.send("WATCHDOG=1")
