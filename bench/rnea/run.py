"""Benchmark: robodyn's inverse dynamics (RNEA, ``robodyn.robot.dynamics.inverse_dynamics``)
against pinocchio's RNEA in a C++ loop (the strongest reference: compiled here at -O3
-march=native against the installed ``pin`` wheel, bench/regressor/pinocchio_loop.cpp) and from
Python, side by side in one run. Prints JSON.

Per robot (Panda 7 joints, UR5e 6): ``--samples`` random states inside the joint limits, medians of
``--repeats`` timings after a warm-up. robodyn is timed on the batch call with Numba limited to one
thread (CPU time of the process) and with all threads (wall time); pinocchio's C++ loop on one
thread (CPU time of its thread), writing every sample's torque into one (N, n) array as the batch
call does; pinocchio from Python per sample on ``--pin-samples``. Both agree before anything is
timed: the largest torque difference against pinocchio from Python, relative to the largest
torque, must be below 1e-10, and the C++ loop's last torque likewise.

    python bench/rnea/run.py [--samples 100000] [--repeats 5] [--pin-samples 20000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("regressor_bench", HERE.parent / "regressor" / "run.py")
regressor_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(regressor_bench)


def bench_robot(name: str, args, binary) -> dict:
    import numba
    import pinocchio as pin

    from robodyn.robot.dynamics import inverse_dynamics
    from robodyn.robot.loader import load_model
    from robodyn.robot.urdf import model_to_urdf

    model = load_model(name)
    n, N = model.dof, args.samples
    rng = np.random.default_rng(0)
    q = rng.uniform(model.q_min, model.q_max, size=(N, n))
    qd = rng.normal(size=(N, n))
    qdd = rng.normal(size=(N, n))

    pm = pin.buildModelFromXML(model_to_urdf(model))
    pd = pm.createData()
    M = min(args.pin_samples, N)
    tau = inverse_dynamics(model, q, qd, qdd)
    tau_pin = np.array([pin.rnea(pm, pd, q[k], qd[k], qdd[k]) for k in range(M)])
    scale = float(np.abs(tau_pin).max())
    agreement = float(np.abs(tau[:M] - tau_pin).max() / scale)
    if agreement > 1e-10:
        raise SystemExit(f"{name}: robodyn's RNEA and pinocchio's disagree ({agreement:.1e}): not comparable")

    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = regressor_bench.timed(lambda: inverse_dynamics(model, q, qd, qdd), args.repeats, time.process_time)
    finally:
        numba.set_num_threads(threads)
    every = regressor_bench.timed(lambda: inverse_dynamics(model, q, qd, qdd), args.repeats, time.perf_counter)

    def run_pin():
        for k in range(M):
            pin.rnea(pm, pd, q[k], qd[k], qdd[k])

    pin_py = regressor_bench.timed(run_pin, max(1, args.repeats // 2))
    us = lambda runs, count=N: statistics.median(runs) / count * 1e6  # noqa: E731
    out = {"robot": name, "joints": n, "samples": N, "relative_difference_to_pinocchio": agreement,
           "robodyn_1thread_us_per_sample": us(one), "robodyn_all_threads_wall_us_per_sample": us(every),
           "numba_threads_all": threads, "pinocchio_python_samples": M,
           "pinocchio_python_us_per_sample": us(pin_py, M), "runs_s": {"robodyn_1thread": one,
                                                                      "robodyn_all_threads_wall": every,
                                                                      "pinocchio_python": pin_py}}
    if isinstance(binary, str):
        out["pinocchio_cpp"] = binary
    else:
        ref = regressor_bench.run_reference(binary, model, q, qd, qdd, args.repeats, True, "rnea")
        last = float(np.abs(np.array(ref["tau_last"]) - tau[-1]).max() / np.abs(tau[-1]).max())
        if last > 1e-10:
            raise SystemExit(f"{name}: pinocchio's C++ RNEA disagrees with robodyn's ({last:.1e}): not comparable")
        out["pinocchio_cpp_1thread_us_per_sample"] = us(ref["seconds"])
        out["pinocchio_cpp_relative_difference_last_sample"] = last
        out["runs_s"]["pinocchio_cpp_1thread"] = ref["seconds"]
        # > 1: robodyn takes longer per sample than pinocchio's C++ loop
        out["time_ratio_robodyn_1thread_to_pinocchio_cpp"] = (out["robodyn_1thread_us_per_sample"]
                                                              / out["pinocchio_cpp_1thread_us_per_sample"])
    out["time_ratio_robodyn_1thread_to_pinocchio_python"] = (out["robodyn_1thread_us_per_sample"]
                                                             / out["pinocchio_python_us_per_sample"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--pin-samples", type=int, default=20_000, help="pinocchio from Python is timed on this many")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--robots", default="panda,ur5e")
    args = ap.parse_args()
    try:
        import pinocchio as pin
    except ImportError:
        print("error: pinocchio is the reference: pip install 'robodyn[bench]'", file=sys.stderr)
        return 2
    cxx = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
    binary, how = regressor_bench.compile_reference(cxx) if cxx else (None, "no C++ compiler")
    result = {"benchmark": "rnea", "pinocchio_version": pin.__version__, "pinocchio_cpp_build": how,
              "repeats": args.repeats, "load_average_1min_at_start": os.getloadavg()[0],
              "robots": [bench_robot(r, args, binary if binary is not None else how) for r in args.robots.split(",")]}
    result["load_average_1min_at_end"] = os.getloadavg()[0]
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
