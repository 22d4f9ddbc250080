"""Benchmark: OLS identification of a 1-hour, 1 kHz, 7-DOF recording (3.6 M samples), streamed.

A child process writes the recording (simulated Panda, Fourier excitation, RNEA torques + noise)
to .npy files; a second child maps them and identifies from them in windows and chunks, never
building the stacked matrix. Wall time and peak RSS of the identifying process are reported
(goal: < 60 s and < 2 GB), next to the memory the full stacked matrix would have needed.

    python bench/identify/run.py [--hours 1.0] [--rate 1000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GENERATE = r"""
import sys, numpy as np
from robodyn.robot.loader import load_model
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.trajectory import FourierTrajectory
out, seconds, rate = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
model = load_model("panda")
rng = np.random.default_rng(0)
n, L = 7, 5
a = rng.normal(size=(n, L)) * 0.1; b = rng.normal(size=(n, L)) * 0.1
a[:, -1] = -a[:, :-1].sum(1); l = np.arange(1, L + 1); b[:, -1] = -(b[:, :-1] * l[:-1]).sum(1) / L
traj = FourierTrajectory(0.5, (model.q_min + model.q_max) / 2, a, b, periods=seconds * 0.5 / (2 * np.pi))
N = int(seconds * rate)
t_all = np.lib.format.open_memmap(out + "/t.npy", "w+", np.float64, (N,))
q_all = np.lib.format.open_memmap(out + "/q.npy", "w+", np.float64, (N, n))
tau_all = np.lib.format.open_memmap(out + "/tau.npy", "w+", np.float64, (N, n))
fr = {"viscous": np.full(n, 0.2), "coulomb": np.full(n, 0.4), "offset": np.zeros(n)}
step = 200000
for s in range(0, N, step):
    e = min(N, s + step)
    t = np.arange(s, e) / rate
    q, qd, qdd, _ = traj.evaluate(t)
    t_all[s:e] = t
    q_all[s:e] = q + rng.normal(scale=1e-5, size=q.shape)
    tau_all[s:e] = inverse_dynamics(model, q, qd, qdd, friction=fr) + rng.normal(scale=0.05, size=q.shape)
t_all.flush(); q_all.flush(); tau_all.flush()
"""

IDENTIFY = r"""
import json, sys, time, resource, numpy as np
t0 = time.perf_counter()
from robodyn.robot.loader import load_model
from robodyn.identification.pipeline import IdentificationConfig, identify
from robodyn.identification.signals import ProcessingConfig, SampledData
d = sys.argv[1]
data = SampledData(np.load(d + "/t.npy", mmap_mode="r"), np.load(d + "/q.npy", mmap_mode="r"),
                   np.load(d + "/tau.npy", mmap_mode="r"))
cfg = IdentificationConfig(method="ols", friction="coulomb-viscous", rotor_inertia=True,
                           processing=ProcessingConfig(q_cutoff_hz=20.0, tau_cutoff_hz=20.0))
t1 = time.perf_counter()
res = identify(load_model("panda"), [data], cfg).to_dict()
t2 = time.perf_counter()
print(json.dumps({"wall_s": t2 - t0, "identify_s": t2 - t1, "rows": res["estimate"]["rows"],
                  "base_parameters": res["base"]["count"], "cond": res["estimate"]["cond"],
                  "rmse_sum": res["metrics"]["identification"]["rmse_sum"],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--rate", type=float, default=1000.0)
    args = ap.parse_args()
    seconds = args.hours * 3600
    with tempfile.TemporaryDirectory(prefix="robodyn-bench-") as tmp:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", GENERATE, tmp, str(seconds), str(args.rate)], check=True)
        gen_s = time.perf_counter() - t
        size_mb = sum(p.stat().st_size for p in Path(tmp).glob("*.npy")) / 2**20
        p = subprocess.run([sys.executable, "-c", IDENTIFY, tmp], check=True, capture_output=True, text=True)
        run = json.loads(p.stdout.strip().splitlines()[-1])
    samples = int(seconds * args.rate)
    stacked_gb = samples * 7 * (7 * 14) * 8 / 2**30
    print(json.dumps({
        "benchmark": "identify", "robot": "panda", "samples": samples, "rate_hz": args.rate,
        "recording_mb": size_mb, "generate_s": gen_s, **run,
        "goal_wall_s": 60.0, "goal_peak_rss_mb": 2048.0,
        "reference_full_stacked_regressor_gb": stacked_gb,
        "peak_rss_ratio_to_full_stacked_regressor": run["peak_rss_mb"] / 1024 / stacked_gb,
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
