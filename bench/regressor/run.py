"""Benchmark: Numba regressor vs pinocchio's computeJointTorqueRegressor called per sample.

Panda with rotor-inertia and friction columns (98 columns), batch of 100k samples, single thread
and all cores, side by side with pinocchio in the same run. Prints JSON. Also measures the first
call in a fresh process with a warm Numba cache, and Numba's allocation count for a small and a
large batch (equal counts = no per-sample allocation).

    python bench/regressor/run.py [--samples 100000] [--repeats 5] [--pin-samples 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

FRESH_PROCESS = r"""
import time
t0 = time.perf_counter()
import numpy as np
from robodyn.robot.loader import load_model
from robodyn.identification.regressor import ColumnSpec, regressor
model = load_model("panda")
spec = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))
q = np.zeros((1000, 7))
t1 = time.perf_counter()
regressor(model, q, q, q, spec)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""

ALLOCATIONS = r"""
import sys
import numpy as np
from numba.core.runtime import rtsys
from robodyn.robot.loader import load_model
from robodyn.identification.regressor import ColumnSpec, regressor
model = load_model("panda")
spec = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))
counts = []
for n in (1000, 100000):
    q = np.random.default_rng(0).normal(size=(n, 7))
    out = np.empty((n * 7, 98))
    regressor(model, q, q, q, spec, out=out, threads=1)
    before = rtsys.get_allocation_stats().alloc
    regressor(model, q, q, q, spec, out=out, threads=1)
    counts.append(rtsys.get_allocation_stats().alloc - before)
print(counts[0], counts[1])
"""


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--pin-samples", type=int, default=20_000, help="pinocchio is timed on this many samples")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    import numba

    from robodyn.identification.regressor import ColumnSpec, regressor
    from robodyn.robot.loader import load_model
    from robodyn.robot.urdf import model_to_urdf

    model = load_model("panda")
    spec = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))
    rng = np.random.default_rng(0)
    N = args.samples
    q = rng.uniform(model.q_min, model.q_max, size=(N, 7))
    qd = rng.normal(size=(N, 7))
    qdd = rng.normal(size=(N, 7))
    out = np.empty((N * 7, spec.per_joint * 7))
    regressor(model, q[:100], qd[:100], qdd[:100], spec)  # compile / load cache

    all_threads = numba.config.NUMBA_NUM_THREADS
    single = timed(lambda: regressor(model, q, qd, qdd, spec, out=out, threads=1), args.repeats)
    multi = timed(lambda: regressor(model, q, qd, qdd, spec, out=out, threads=all_threads), args.repeats)

    result = {
        "benchmark": "regressor",
        "robot": "panda",
        "columns": spec.per_joint * 7,
        "samples": N,
        "threads_all": all_threads,
        "robodyn_us_per_sample_1thread_median": statistics.median(single) / N * 1e6,
        "robodyn_us_per_sample_all_threads_median": statistics.median(multi) / N * 1e6,
        "robodyn_1thread_runs_s": single,
        "robodyn_all_threads_runs_s": multi,
    }
    try:
        import pinocchio as pin

        pm = pin.buildModelFromXML(model_to_urdf(model))
        pd = pm.createData()
        M = min(args.pin_samples, N)
        pin_out = np.empty((M * 7, 70))

        def run_pin():
            for k in range(M):
                pin_out[7 * k: 7 * k + 7] = pin.computeJointTorqueRegressor(pm, pd, q[k], qd[k], qdd[k])

        pin_runs = timed(run_pin, max(1, args.repeats // 2))
        pin_us = statistics.median(pin_runs) / M * 1e6
        result.update({
            "pinocchio_version": pin.__version__,
            "pinocchio_columns": 70,
            "pinocchio_samples": M,
            "pinocchio_us_per_sample_median": pin_us,
            "speedup_1thread_vs_pinocchio": pin_us / result["robodyn_us_per_sample_1thread_median"],
            "speedup_all_threads_vs_pinocchio": pin_us / result["robodyn_us_per_sample_all_threads_median"],
            "goal_speedup_1thread": 3.0,
        })
    except ImportError:
        result["pinocchio"] = "not installed (pip install 'robodyn[bench]')"

    env = dict(os.environ)
    fresh = []
    for _ in range(3):
        p = subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True, env=env, check=True)
        fresh.append([float(x) for x in p.stdout.split()])
    result["fresh_process_import_s_median"] = statistics.median(f[0] for f in fresh)
    result["fresh_process_first_call_s_median"] = statistics.median(f[1] for f in fresh)
    result["goal_first_call_s"] = 1.0
    env["NUMBA_NRT_STATS"] = "1"
    p = subprocess.run([sys.executable, "-c", ALLOCATIONS], capture_output=True, text=True, env=env, check=True)
    small, large = (int(x) for x in p.stdout.split())
    result["numba_allocations_1k_samples"] = small
    result["numba_allocations_100k_samples"] = large
    result["per_sample_allocation"] = large > small
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
