"""Real client libraries against real peers on loopback: pylibfranka <-> franky-sim, ur_rtde <->
the project's simulated UR controller. The extras are part of the test environment; a machine
without them skips these modules with the install command in the reason."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np

from robodyn.tools.testing.local_daemon import free_port, terminate_daemon
from tests.processes import die_with_parent

from .peers import free_loopback, start_franky_sim, start_ur_controller


class Daemon:
    """`robodyn daemon` as a subprocess with a real-robot driver section."""

    def __init__(self, tmp_path, robot: str, driver: str, options: dict, rt_priority: int = 0):
        self.control = f"tcp://127.0.0.1:{free_port()}"
        self.state = f"tcp://127.0.0.1:{free_port()}"
        self.data_dir = tmp_path / "data"
        opts = "\n".join(f"{k} = {json.dumps(v)}" for k, v in options.items())
        self.config = tmp_path / f"daemon-{driver}.toml"
        self.config.write_text(f'[daemon]\ncontrol = "{self.control}"\nstate = "{self.state}"\n'
                               f'data_dir = "{self.data_dir}"\n[robot]\nname = "{robot}"\ndriver = "{driver}"\n'
                               f'[loop]\nrt_priority = {rt_priority}\n[driver]\n{opts}\n')
        self.log = open(tmp_path / f"daemon-{driver}.log", "w+")
        self.proc = subprocess.Popen([sys.executable, "-m", "robodyn", "daemon", "--config", str(self.config)],
                                     stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        from robodyn.daemon.client import Client

        self.client = Client(self.control, timeout=30.0)  # an outer time-out: a loaded host may answer late
        # an outer time-out only: at a load average of 16 a daemon's start took over 60 s
        deadline = time.monotonic() + 180
        while True:
            assert self.proc.poll() is None, self.log_text()
            try:
                st = self.client.status()
                if st["driver"]["ready"] and st["recorder"]["ready"] and st["state"]["q"]:
                    break
            except Exception:
                pass
            assert time.monotonic() < deadline, "daemon not ready in 180 s:\n" + self.log_text()
            time.sleep(0.2)
        # a real-robot driver needs the operator's arming before any motion (docs/reliability.md)
        assert self.client.arm()["required"] is True

    def q(self) -> np.ndarray:
        return np.array(self.client.status()["state"]["q"])

    def log_text(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def explain(self, final: dict) -> str:
        """Why a run did not complete, as one readable message: the run's own reason and every
        warning or error the daemon logged (pytest shortens a long tuple, which hid them)."""
        summary = final.get("summary") or {}
        lines = [ln for ln in self.log_text().splitlines()
                 if " WARNING " in ln or " ERROR " in ln or "Traceback" in ln or ln.startswith(("  ", "\t"))]
        return (f"run {final.get('run_id')} {final.get('state')}: {summary.get('reason') or final.get('reason')!r}\n"
                + "\n".join(lines[-60:]))

    def stop(self) -> None:
        self.client.close()
        terminate_daemon(self.proc, 30)
        self.log.close()


def disconnect_mid_run(client, peer, robot: str, doc: dict, mode: str = "position", after_samples: int = 500) -> int:
    """Submit a run, kill the robot (peer) once the run has executed ``after_samples`` trajectory
    samples (counted by the daemon, so the kill lands mid-run however fast the host runs it), and
    check that the run ends aborted or failed by the lost link, with its partial recording kept.
    Returns the number of executed samples in that recording."""
    from robodyn.recording import load_recording

    run_id = client.submit_run(robot, doc, mode=mode, label=f"{robot} disconnect")["run_id"]
    deadline = time.monotonic() + 180  # outer time-out only
    while time.monotonic() < deadline:
        st = client.run_status(run_id)
        if st["state"] == "execute" and st["progress"].get("trajectory_index", 0) >= after_samples:
            break
        assert st["state"] not in ("completed", "aborted", "failed"), st
        time.sleep(0.02)
    else:
        raise AssertionError(f"run {run_id} did not execute {after_samples} samples in 180 s")
    peer.kill()
    final = client.wait_run(run_id, timeout=180)
    assert final["state"] in ("aborted", "failed"), final
    assert "ConnectionLost" in str(final) or "driver process died" in str(final), final
    return int(load_recording(final["summary"]["recording"]).phase_mask("execute").sum())


def fourier_excitation(q0: np.ndarray, amplitude, duration: float, seed: int, robot: str, harmonics: int = 3) -> dict:
    """A smooth Fourier+quintic excitation around q0 (the shared trajectory representation)."""
    from robodyn.trajectory import FourierPolyTrajectory

    n = q0.shape[0]
    rng = np.random.default_rng(seed)
    amp = np.broadcast_to(np.asarray(amplitude, float), (n,))[:, None]
    traj = FourierPolyTrajectory(2 * np.pi / duration, q0, rng.normal(0, 1, (n, harmonics)) * amp,
                                 rng.normal(0, 1, (n, harmonics)) * amp, periods=1)
    return traj.to_dict(robot=robot)


def execute_npz(recording: str, out) -> str:
    """The executed part of a daemon recording as NPZ (t, q, qd, tau) for `robodyn identify`.

    (The identification CLI's own .mcap reader expects attributes the daemon's Recording does not
    have, so the tests go through the daemon's documented loader.)"""
    from robodyn.recording import load_recording

    rec = load_recording(recording)
    ex = rec.phase_mask("execute")
    np.savez(out, t=rec.robot_time[ex], q=rec.signal("q")[ex], qd=rec.signal("qd")[ex], tau=rec.signal("tau")[ex])
    return str(out)


def run_identify(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "robodyn", *args, "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)


__all__ = ["Daemon", "disconnect_mid_run", "execute_npz", "fourier_excitation", "free_loopback", "run_identify", "start_franky_sim", "start_ur_controller"]
