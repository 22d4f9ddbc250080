"""Real peers on loopback for the driver tests: franky-sim (libfranka protocol on MuJoCo) and the
project's simulated UR controller. Each gets its own 127.x.y.z address, so tests (and other
engineers' runs) never collide on the robots' fixed ports."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.processes import die_with_parent


def free_loopback(ports: tuple[int, ...]) -> str:
    """A random 127.a.b.c address on which every port in ``ports`` is free."""
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(200):
        host = f"127.{rng.randint(1, 254)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"
        ok = True
        for port in ports:
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind((host, port))
                except OSError:
                    ok = False
                    break
        if ok:
            return host
    raise RuntimeError("no free loopback address")


def wait_port(host: str, port: int, timeout: float, proc=None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"peer exited with {proc.returncode}")
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex((host, port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"{host}:{port} did not open in {timeout} s")


class Peer:
    def __init__(self, argv: list[str], host: str, port: int, log: Path, timeout: float = 60.0):
        self.host = host
        self.log_path = log
        self._log = open(log, "w+")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=die_with_parent)
        try:
            wait_port(host, port, timeout, self.proc)
        except Exception:
            self.stop()
            raise RuntimeError(f"{argv[0]} did not start:\n{self.log()}") from None

    def log(self) -> str:
        self._log.flush()
        return Path(self.log_path).read_text()

    def kill(self) -> None:
        """SIGKILL: the robot vanishes without a goodbye (forced disconnect)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


def franky_sim_path() -> str | None:
    exe = Path(sys.executable).with_name("franky-sim")
    return str(exe) if exe.exists() else shutil.which("franky-sim")


FRANKY_RT_PRIORITY = 15


def realtime_prefix(priority: int) -> list[str]:
    """``chrt -f PRIORITY`` where the host allows SCHED_FIFO (root, CAP_SYS_NICE or an RT rlimit),
    else nothing: a peer simulator that runs its 1 kHz loop at the default priority is starved by
    CPU hogs beside it (libfranka then reports 'UDP receive: Timeout'), and the tests would judge
    the host, not the driver."""
    chrt = shutil.which("chrt")
    if chrt is None:
        return []
    ok = subprocess.run([chrt, "-f", str(priority), "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return [chrt, "-f", str(priority)] if ok.returncode == 0 else []


def start_franky_sim(tmp_path: Path, host: str | None = None) -> Peer:
    host = host or free_loopback((1337, 1338))
    argv = realtime_prefix(FRANKY_RT_PRIORITY) + [franky_sim_path(), "-s", "mujoco", "--hostname", host]
    return Peer(argv, host, 1337, tmp_path / f"franky-sim-{host}.log")


def start_ur_controller(tmp_path: Path, *extra: str, host: str | None = None) -> Peer:
    host = host or free_loopback((29999, 30003, 30004))
    return Peer([sys.executable, "-m", "robodyn.tools.testing.ur_controller", "--host", host, *extra], host, 30004,
                tmp_path / f"ur-controller-{host}.log")
