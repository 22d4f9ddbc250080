"""A daemon subprocess on loopback, simulated Panda as fast as possible, temporary data dir."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from robodyn.tools.testing.local_daemon import free_port, terminate_daemon
from tests.processes import die_with_parent

READY_Q = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])


class DaemonProcess:
    """``robodyn daemon`` on free loopback ports. Arming is required (as for a real robot) and
    done right after start-up, so every run in these tests passes the arming gate.

    ``extra_config`` adds TOML sections; ``prefix`` wraps the command (e.g. ``unshare``);
    ``env`` adds environment variables (e.g. a fake ``NOTIFY_SOCKET``); ``default_state``: no
    ``[daemon].state``, so the stream is on the default ipc socket (``state`` is then None: clients
    find it through ``describe``)."""

    def __init__(self, tmp_path, speed=0.0, extra_config: str = "", arm: bool = True, prefix=(), env=None,
                 data_dir=None, require_arm: bool = True, max_subscribers: int | None = None,
                 default_state: bool = False):
        self.control = f"tcp://127.0.0.1:{free_port()}"
        self.state = None if default_state else f"tcp://127.0.0.1:{free_port()}"
        self.data_dir = data_dir or tmp_path / "data"
        self.config = tmp_path / "daemon.toml"
        safety = f"[safety]\nrequire_arm = {'true' if require_arm else 'false'}\n"
        self.config.write_text(
            f'[daemon]\ncontrol = "{self.control}"\n' + (f'state = "{self.state}"\n' if self.state else "")
            + f'data_dir = "{self.data_dir}"\n'
            + (f"max_subscribers = {max_subscribers}\n" if max_subscribers else "")
            +             f'[robot]\nname = "panda"\ndriver = "sim"\n[driver]\nspeed = {speed}\nseed = 2\n'
            + (safety if "[safety]" not in extra_config else "") + extra_config)
        self.log = open(tmp_path / "daemon.log", "w+")
        self.proc = subprocess.Popen([*prefix, sys.executable, "-m", "robodyn", "daemon", "--config", str(self.config)],
                                     stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                                     preexec_fn=die_with_parent)
        from robodyn.daemon.client import Client

        self.client = Client(self.control, timeout=30.0)  # an outer time-out: a loaded host may answer late
        try:
            self.wait_ready()
        except BaseException:  # a daemon that never got ready must not run on beside the next tests
            self.stop()
            raise
        if arm:
            self.client.arm()

    def wait_ready(self, timeout: float = 180.0, old_pids: tuple = ()) -> dict:
        """Until driver and recorder are up with fresh state (and, after a kill, replaced). The
        time-out is an outer one only: at a load average of 16-20 on 2 cores, start-up took over 60 s."""
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc.poll() is None, self.log_text()
            try:
                st = self.client.status()
                if (st["driver"]["ready"] and st["recorder"]["ready"] and st["state"]["q"]
                        and st["publisher"]["ready"]
                        and st["driver"]["alive"] and st["recorder"]["alive"]
                        and st["driver"]["pid"] not in old_pids and st["recorder"]["pid"] not in old_pids
                        and (st["driver"]["telemetry_age_s"] or 0) < 0.5):
                    return st
            except Exception:
                pass
            assert time.monotonic() < deadline, f"daemon not ready in {timeout:.0f} s:\n" + self.log_text()
            time.sleep(0.1)

    def log_text(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def commands(self) -> dict:
        return self.client.status()["driver"]["diagnostics"]["commands"]

    def stop(self):
        self.client.close()
        terminate_daemon(self.proc, 60)  # SIGTERM: ramp to rest and finalize; SIGKILL only after 60 s
        self.log.close()


def recorder_flushed(client, recording: str, timeout: float = 60.0) -> tuple[dict, int]:
    """The daemon's status once its recorder reports samples of ``recording`` written to the file
    (not just buffered), and that count: everything the recorder has written survives any crash
    after this status (the crash-loss guarantee the code controls, counted in samples, not ms)."""
    deadline = time.monotonic() + timeout
    while True:
        st = client.status()
        rec = st["recorder"].get("recording") or {}
        buffered = st["metrics"]["queues"]["recorder_buffered_samples"] or 0
        if str(rec.get("path")) == str(recording) and rec.get("samples", 0) - buffered > 0:
            return st, int(rec["samples"] - buffered)
        assert time.monotonic() < deadline, f"the recorder wrote nothing of {recording} in {timeout:.0f} s: {rec}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = DaemonProcess(tmp_path_factory.mktemp("daemon"))
    yield d
    d.stop()
    assert d.proc.returncode == 0, "daemon did not exit cleanly on SIGTERM"


def excitation(duration: float, amplitude: float = 0.04, seed: int = 1, harmonics: int = 3,
               harmonic_decay: float = 0.0) -> dict:
    """A smooth Fourier+quintic excitation around the ready pose, inside every Panda limit.

    The k-th harmonic's coefficients are scaled by amplitude / k**harmonic_decay; a decay of 2 keeps
    velocity and acceleration inside the limits however many harmonics there are."""
    from robodyn.trajectory import FourierPolyTrajectory

    period = min(duration, 10.0)
    rng = np.random.default_rng(seed)
    scale = amplitude / np.arange(1, harmonics + 1) ** harmonic_decay
    traj = FourierPolyTrajectory(2 * np.pi / period, READY_Q + 0.05, rng.normal(0, 1, (7, harmonics)) * scale,
                                 rng.normal(0, 1, (7, harmonics)) * scale,
                                 periods=max(1, round(duration / period)))
    return traj.to_dict(robot="panda")
