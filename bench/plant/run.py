"""bench/plant: CPU time of one control period of the simulated plant
(robodyn/simulation/mujoco_plant.py, run by drivers/sim.py), against the bare MuJoCo calls it
cannot do without.

The plant is the daemon's simulated robot (Panda at 1 kHz, 4 physics steps per period) and the arm
of the simulated UR controller (UR5e at 500 Hz, 8 steps), which runs at SCHED_FIFO for the whole
of every UR test: what it costs per period is taken from everything else on a 2-core host.

The reference is the floor: the same number of ``mj_step`` + ``mj_inverse`` calls on the same
MuJoCo models with nothing around them. ``ratio`` = plant / floor; 1.0 would be a plant with no
cost of its own. CPU time (``time.process_time``), median of ``--repeats`` blocks of ``--ticks``
periods each, both measured in the same process, interleaved.

    .venv/bin/python bench/plant/run.py [--ticks 2000] [--repeats 7] [--out bench/plant/result.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from robodyn.drivers.base import JointCommand
from robodyn.drivers.sim import SimulatedRobot

PLANTS = {"panda_1khz": ("the daemon's simulated robot", {"robot": "panda", "speed": 0.0}),
          "ur5e_500hz": ("the simulated UR controller's arm", {"robot": "ur5e", "rate_hz": 500.0, "speed": 0.0})}


def plant_block(robot: SimulatedRobot, cmd: JointCommand, q0: np.ndarray, ticks: int, k0: int) -> float:
    start = time.process_time()
    for k in range(k0, k0 + ticks):
        cmd.q[:] = q0 + 0.05 * np.sin(k * 0.002)
        robot.write(cmd)
        robot.read()
    return (time.process_time() - start) / ticks


def floor_block(robot: SimulatedRobot, ticks: int) -> float:
    mj, plant, data = robot.plant.mujoco, robot.plant.mj, robot.plant.data
    sensor, sensor_data = robot.plant.sensor, robot.plant.sensor_data
    steps = robot.substeps
    start = time.process_time()
    for _ in range(ticks):
        for _ in range(steps):
            mj.mj_step(plant, data)
            mj.mj_inverse(sensor, sensor_data)
    return (time.process_time() - start) / ticks


def measure(what: str, config: dict, ticks: int, repeats: int) -> dict:
    robot = SimulatedRobot(config)
    robot.connect()
    robot.start("position")
    q0 = robot.read().q.copy()
    cmd = JointCommand(robot.model.dof)
    plant_block(robot, cmd, q0, 200, 0)  # warm: kernels loaded, caches filled
    plant, floor = [], []
    for r in range(repeats):
        plant.append(plant_block(robot, cmd, q0, ticks, 200 + r * ticks))
        floor.append(floor_block(robot, ticks))
    p, f = float(np.median(plant)), float(np.median(floor))
    return {"what": what, "physics_steps_per_period": robot.substeps, "plant_ms_per_period": round(p * 1e3, 4),
            "mujoco_floor_ms_per_period": round(f * 1e3, 4), "ratio": round(p / f, 3),
            "core_share_at_rate": round(p * robot.cfg.rate_hz, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ticks", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    load = os.getloadavg()
    out = {"command": "python bench/plant/run.py", "host": platform.node(), "cpus": os.cpu_count(),
           "load_average_start": [round(x, 2) for x in load],
           "plants": {name: measure(what, cfg, args.ticks, args.repeats) for name, (what, cfg) in PLANTS.items()}}
    out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
