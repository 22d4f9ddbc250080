"""``python -m robodyn.tools.testing.ur_controller --host 127.0.0.7``: run the simulated UR controller."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from robodyn.drivers.pacing import set_realtime

from .plant import PlantConfig
from .server import ROBOT_MODES, ControllerConfig, URController


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m robodyn.tools.testing.ur_controller",
                                description="Simulated UR controller (RTDE 30004, dashboard 29999, script 30003)")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (127.x.y.z)")
    p.add_argument("--robot", default="ur5e")
    p.add_argument("--cb3", action="store_true", help="report a CB3 controller (3.15, 125 Hz)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--perturbation", type=float, default=0.0, help="relative std of the true inertial parameters")
    p.add_argument("--payload-kg", type=float, default=0.0)
    p.add_argument("--payload-com", default="0.05,0,0.05", help="m, last link frame")
    p.add_argument("--robot-mode", default="RUNNING", choices=sorted(ROBOT_MODES))
    p.add_argument("--clock", default="free", choices=("free", "lockstep"),
                   help="free: tick on the wall clock; lockstep: while a client streams servoJ, each tick also "
                        "waits for its command (a servo run is the same on any host; tests)")
    p.add_argument("--lockstep-wait", type=float, default=0.1, metavar="S",
                   help="lockstep: longest wait for the client's next command before the tick goes ahead (s)")
    p.add_argument("--rt-priority", type=int, default=0,
                   help="SCHED_FIFO priority for the controller (0: default scheduler); keeps 500 Hz on a busy host")
    args = p.parse_args(argv)
    # before any thread starts: they all inherit it
    scheduler = set_realtime(args.rt_priority)
    if "refused" in scheduler:
        print(f"ur_controller: {scheduler}", file=sys.stderr)
    # the tick thread shares the GIL with the per-connection threads; a short switch interval
    # bounds how long it can wait for the GIL (default 5 ms: longer than two RTDE periods)
    sys.setswitchinterval(2e-4)
    plant = PlantConfig(robot=args.robot, seed=args.seed, perturbation=args.perturbation, payload_kg=args.payload_kg,
                        payload_com=tuple(float(x) for x in args.payload_com.split(",")))
    cfg = ControllerConfig(host=args.host, cb3=args.cb3, robot_mode=args.robot_mode, clock=args.clock,
                           lockstep_wait_s=args.lockstep_wait, plant=plant)
    ctl = URController(cfg)
    done = threading.Event()
    ctl.on_failure = done.set  # before start: the tick may fail at once
    try:
        ctl.start()
    except OSError as exc:
        print(f"ur_controller: cannot bind {args.host}: {exc}", file=sys.stderr)
        return 2
    print(f"ur_controller: {args.robot} on {args.host} (RTDE {cfg.rate_hz:.0f} Hz, version "
          f"{'.'.join(map(str, cfg.version))}), drive gains {[round(k, 4) for k in ctl.plant.drive_gains]}",
          flush=True)
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    done.wait()
    ctl.close()
    if ctl.failed:
        print("ur_controller: the real-time tick failed (above); controller stopped", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
