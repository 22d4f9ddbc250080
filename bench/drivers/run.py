"""bench/drivers: the real client libraries over loopback.

- Franka: pylibfranka against franky-sim, the driver's loop (read + write in torque mode, the
  project's impedance + RNEA) for N seconds: achieved rate, period p50/p99/max (host clock),
  lost cycles (robot clock steps > 1 ms).
- UR: ur_rtde against the simulated controller (free-running clock, as a real controller), the
  driver streaming servoJ for N seconds at 500 Hz: completeness by controller timestamps, the
  reader's period, and the controller's own overruns (ticks more than half a period late).

Each runs on the idle host and again with CPU hogs beside it (``--hogs``, default 2: stress-ng
when installed, else busy Python processes), and UR also without SCHED_FIFO (controller and
reader on the default scheduler, as on a host that refuses real-time priority). This is where
loss and jitter under load are measured; the tests only check that every lost sample is counted.

    .venv/bin/python bench/drivers/run.py [--seconds 20] [--hogs 2] [--out bench/drivers/result.json]

The load average at start and end is recorded: the host is shared, numbers depend on it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.drivers.peers.peers import start_franky_sim, start_ur_controller  # noqa: E402

from robodyn.drivers.base import JointCommand  # noqa: E402
from robodyn.drivers.pacing import realtime  # noqa: E402
from robodyn.drivers.registry import create_driver  # noqa: E402


def franka(seconds: float, tmp: Path) -> dict:
    peer = start_franky_sim(tmp)
    try:
        d = create_driver("franka", {"ip": peer.host, "realtime": "ignore"})
        d.connect()
        d.start("torque")
        s = d.read()
        cmd = JointCommand(7)
        q0 = s.q.copy()
        d.periods.reset()
        lost0, reads0, t0_robot = d.lost_cycles, d.reads, s.robot_time
        t0 = time.monotonic()
        k = 0
        while time.monotonic() - t0 < seconds:
            cmd.q[:] = q0
            cmd.q[6] += 0.1 * np.sin(2 * np.pi * 0.5 * k * 1e-3)
            d.write(cmd)
            s = d.read()
            k += 1
        wall = time.monotonic() - t0
        diag = d.diagnostics()
        d.stop()
        d.close()
        return {"peer": "franky-sim (mujoco) on loopback", "client": "pylibfranka", "mode": "torque",
                "cycles": d.reads - reads0, "wall_s": wall, "achieved_rate_hz": (d.reads - reads0) / wall,
                "robot_time_s": s.robot_time - t0_robot,
                # the peer's own clock against the wall: below 1, the simulator (not the client loop)
                # is what falls short of 1 kHz
                "peer_clock_ratio": (s.robot_time - t0_robot) / wall, "period_ms": diag["period"],
                "lost_cycles": d.lost_cycles - lost0, "control_exceptions": diag["control_exceptions"]}
    finally:
        peer.stop()


def _busy() -> None:
    while True:
        pass


@contextmanager
def cpu_hogs(n: int):
    """n processes that each keep a core busy at the default priority (stress-ng --cpu n if installed)."""
    if n <= 0:
        yield "none"
        return
    if shutil.which("stress-ng"):
        proc = subprocess.Popen(["stress-ng", "--cpu", str(n), "--quiet"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.0)
            yield f"stress-ng --cpu {n}"
        finally:
            proc.terminate()
            proc.wait(10)
        return
    procs = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(n)]
    for pr in procs:
        pr.start()
    try:
        time.sleep(1.0)
        yield f"{n} busy Python processes"
    finally:
        for pr in procs:
            pr.terminate()
            pr.join(10)


def _sim_status(host: str) -> dict:
    with socket.create_connection((host, 29999), timeout=5) as sock:
        f = sock.makefile("rwb", buffering=0)
        f.readline()
        f.write(b"sim status\n")
        return json.loads(f.readline().decode())


def ur(seconds: float, tmp: Path, rt: bool = True) -> dict:
    controller_priority, reader_priority = (20, 10) if rt else (0, 0)
    peer = start_ur_controller(tmp, "--rt-priority", str(controller_priority))
    try:
        d = create_driver("ur", {"host": peer.host, "rt_priority": reader_priority})
        d.connect()
        d.start("position")
        s = d.read()
        cmd = JointCommand(6)
        cmd.q[:] = s.q
        # the reading thread is real-time, as in the daemon's driver process; the counts start after
        # entering that section (entering it collects garbage, a few ms in which samples go by)
        with realtime(reader_priority) as scheduler:
            s = d.read()
            d.periods.reset()
            t0 = time.monotonic()
            ts0 = s.robot_time
            base = dict(d.clock.summary())
            overruns0 = _sim_status(peer.host)["overruns"]
            while time.monotonic() - t0 < seconds:
                d.write(cmd)
                s = d.read()
        wall = time.monotonic() - t0
        st = d.clock.summary()
        expected = int(round((s.robot_time - ts0) / 0.002))
        received = st["received"] - base["received"]
        lost = st["lost"] - base["lost"]
        diag = d.diagnostics()
        controller = _sim_status(peer.host)
        d.stop()
        d.close()
        return {"peer": f"robodyn simulated UR controller (SCHED_FIFO {controller_priority or 'off'}) on loopback",
                "client": "ur_rtde 1.6.5", "reader": f"{scheduler}, GC paused (drivers.pacing.realtime)",
                "wall_s": wall, "controller_samples_spanned": expected, "received": received, "lost": lost,
                "completeness": received / expected if expected else None,
                "repeats_skipped": st["repeats_skipped"] - base["repeats_skipped"], "period_ms": diag["period"],
                "controller_overruns": controller["overruns"] - overruns0,
                "controller_max_late_ms": controller["max_late_ms"],
                "controller_real_time_ratio": controller.get("real_time_ratio"),
                "driver_saw_controller_overruns": diag["controller"]["overruns"]}
    finally:
        peer.stop()


def _measured(fn, *args, **kwargs) -> dict:
    """A run that fails under load is a figure too (e.g. libfranka's UDP timeout), not a crash."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - reported, never hidden
        return {"failed": f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--hogs", type=int, default=2, help="CPU hogs for the loaded runs (0: idle runs only)")
    p.add_argument("--out", default=str(Path(__file__).with_name("result.json")))
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp())
    out = {"host": {"cpus": os.cpu_count(), "python": platform.python_version(), "loadavg_start": os.getloadavg()},
           "runs": []}
    for hogs in sorted({0, args.hogs}):
        with cpu_hogs(hogs) as load:
            out["runs"].append({"load": load, "franka": _measured(franka, args.seconds, tmp),
                                "ur": _measured(ur, args.seconds, tmp),
                                "ur_without_sched_fifo": _measured(ur, args.seconds, tmp, rt=False)})
    out["host"]["loadavg_end"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
