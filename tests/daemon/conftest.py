"""A daemon subprocess on loopback, simulated Panda as fast as possible, temporary data dir."""

import socket
import subprocess
import sys
import time

import numpy as np
import pytest

READY_Q = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DaemonProcess:
    def __init__(self, tmp_path, speed=0.0):
        self.control = f"tcp://127.0.0.1:{free_port()}"
        self.state = f"tcp://127.0.0.1:{free_port()}"
        self.data_dir = tmp_path / "data"
        self.config = tmp_path / "daemon.toml"
        self.config.write_text(
            f'[daemon]\ncontrol = "{self.control}"\nstate = "{self.state}"\ndata_dir = "{self.data_dir}"\n'
            f'[robot]\nname = "panda"\ndriver = "sim"\n[driver]\nspeed = {speed}\nseed = 2\n')
        self.log = open(tmp_path / "daemon.log", "w+")
        self.proc = subprocess.Popen([sys.executable, "-m", "robodyn", "daemon", "--config", str(self.config)],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        from robodyn.tools.client import Client

        self.client = Client(self.control, timeout=10.0)
        deadline = time.monotonic() + 60
        while True:
            assert self.proc.poll() is None, self.log_text()
            try:
                st = self.client.status()
                if st["driver"]["ready"] and st["recorder"]["ready"] and st["state"]["q"]:
                    break
            except Exception:
                pass
            assert time.monotonic() < deadline, "daemon did not become ready in 60 s:\n" + self.log_text()
            time.sleep(0.2)

    def log_text(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def commands(self) -> dict:
        return self.client.status()["driver"]["diagnostics"]["commands"]

    def stop(self):
        self.client.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = DaemonProcess(tmp_path_factory.mktemp("daemon"))
    yield d
    d.stop()
    assert d.proc.returncode == 0, "daemon did not exit cleanly on SIGTERM"


def excitation(duration: float, amplitude: float = 0.04, seed: int = 1) -> dict:
    """A smooth Fourier+quintic excitation around the ready pose, inside every Panda limit."""
    from robodyn.trajectory import FourierPolyTrajectory

    period = min(duration, 10.0)
    rng = np.random.default_rng(seed)
    traj = FourierPolyTrajectory(2 * np.pi / period, READY_Q + 0.05, rng.normal(0, amplitude, (7, 3)),
                                 rng.normal(0, amplitude, (7, 3)), periods=max(1, round(duration / period)))
    return traj.to_dict(robot="panda")
