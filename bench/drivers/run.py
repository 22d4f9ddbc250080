"""bench/drivers: the real client libraries over loopback.

- Franka: pylibfranka against franky-sim, the driver's loop (read + write in torque mode, the
  project's impedance + RNEA) for N seconds: achieved rate, period p50/p99/max (host clock),
  lost cycles (robot clock steps > 1 ms).
- UR: ur_rtde against the simulated controller, the driver streaming N seconds at 500 Hz:
  completeness by controller timestamps.

    .venv/bin/python bench/drivers/run.py [--seconds 20] [--out bench/drivers/result.json]

The load average at start and end is recorded: the host is shared, numbers depend on it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.real_drivers.peers import start_franky_sim, start_ur_controller  # noqa: E402

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


def ur(seconds: float, tmp: Path) -> dict:
    peer = start_ur_controller(tmp, "--rt-priority", "20")
    try:
        d = create_driver("ur", {"host": peer.host, "rt_priority": 10})
        d.connect()
        d.start("position")
        s = d.read()
        cmd = JointCommand(6)
        cmd.q[:] = s.q
        # the reading thread is real-time, as in the daemon's driver process; the counts start after
        # entering that section (entering it collects garbage, a few ms in which samples go by)
        with realtime(10):
            s = d.read()
            t0 = time.monotonic()
            ts0 = s.robot_time
            base = dict(d.clock.summary())
            while time.monotonic() - t0 < seconds:
                d.write(cmd)
                s = d.read()
        wall = time.monotonic() - t0
        st = d.clock.summary()
        expected = int(round((s.robot_time - ts0) / 0.002))
        received = st["received"] - base["received"]
        lost = st["lost"] - base["lost"]
        diag = d.diagnostics()
        d.stop()
        d.close()
        return {"peer": "robodyn simulated UR controller (SCHED_FIFO 20) on loopback", "client": "ur_rtde 1.6.5",
                "driver_rt_priority": 10, "reader": "SCHED_FIFO 10, GC paused (drivers.pacing.realtime)", "wall_s": wall, "controller_samples_spanned": expected,
                "received": received, "lost": lost, "completeness": received / expected if expected else None,
                "repeats_skipped": st["repeats_skipped"] - base["repeats_skipped"], "period_ms": diag["period"],
                "servoj_commands": received}
    finally:
        peer.stop()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--out", default=str(Path(__file__).with_name("result.json")))
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp())
    load0 = os.getloadavg()
    out = {"host": {"cpus": os.cpu_count(), "python": platform.python_version(), "loadavg_start": load0},
           "franka": franka(args.seconds, tmp), "ur": ur(args.seconds, tmp)}
    out["host"]["loadavg_end"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
