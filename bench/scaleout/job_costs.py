"""Cost of single jobs, for the sizing in docs/scaling.md; prints JSON.

    env NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        .venv/bin/python bench/scaleout/job_costs.py [--out bench/scaleout/job_costs.json]

Run with one thread, as a worker runs. Two costs:

- ``stribeck_population``: one population (150 candidates, Ni et al. 2024's WSO size) of the fitness
  with a Stribeck model inside the loop (metaheuristic.StribeckFitness), on 60 s of simulated
  1 kHz Panda data: the candidate cost that makes population evaluation worth distributing.
- ``calibrate_job``: one ``calibrate`` job (combined method, 40 unloaded + 16 loaded poses of the
  simulated Li et al. 2023 UR5 cell), run in this process as a worker would run it.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from robodyn.cli import main as robodyn
from robodyn.identification.base_params import base_parameters
from robodyn.identification.metaheuristic import StribeckFitness, joint_major_data
from robodyn.identification.comparison_data import simulated_recording
from robodyn.identification.regressor import ColumnSpec
from robodyn.scaleout import calibrate_job
from robodyn.scaleout.tasks import execute
from robodyn.robot.loader import load_model

LOAD = "4.678,0,-0.03686,0.02985"


def stribeck_population(repeat: int = 3) -> dict:
    model = load_model("panda")
    rec = simulated_recording(model, seed=0, seconds=60.0, rate_hz=1000.0)
    base = base_parameters(model, ColumnSpec(rotor_inertia=True))
    W = joint_major_data(model, base, rec)
    fitness = StribeckFitness.build(W, rec.tau, rec.qd)
    rng = np.random.default_rng(0)
    X = np.hstack([rng.normal(size=(150, base.count)), np.abs(rng.normal(size=(150, 3 * model.dof))) + 0.01])
    fitness(X[:2])  # Numba dispatch and cache load out of the timing
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fitness(X)
        times.append(time.perf_counter() - t0)
    return {"samples": int(rec.t.size), "base_parameters": base.count, "regressor_mb": W.nbytes / 1e6,
            "candidates": X.shape[0], "candidate_floats": X.shape[1], "seconds": times,
            "best_seconds": min(times)}


def calibrate_cost(repeat: int = 3) -> dict:
    with tempfile.TemporaryDirectory(prefix="robodyn-bench-") as tmp:
        d = Path(tmp)
        assert robodyn(["calibrate", "plan", "--robot", "ur5_li2023", "--poses", "40", "--loaded", "16", "--seed", "2",
                        "--out", str(d / "plan.json")]) == 0
        assert robodyn(["calibrate", "measure", str(d / "plan.json"), "--out", str(d / "m.csv")]) == 0
        assert robodyn(["calibrate", "measure", str(d / "plan.json"), "--load", LOAD, "--out", str(d / "l.csv")]) == 0
        spec = calibrate_job(d / "m.csv", loaded=d / "l.csv", options={"robot": "ur5_li2023", "method": "combined"})
        runs = [execute(spec, 1) for _ in range(repeat)]
    assert all(r.ok for r in runs), [r.error for r in runs]
    return {"poses": 40, "loaded_poses": 16, "method": "combined", "seconds": [r.elapsed_s for r in runs],
            "cpu_seconds": [r.cpu_s for r in runs], "best_seconds": min(r.elapsed_s for r in runs),
            "result_json_bytes": len(json.dumps(runs[0].value))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).with_name("job_costs.json")))
    args = ap.parse_args(argv)
    out = {"threads": {k: os.environ.get(k) for k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
           "load_avg_1min_before": os.getloadavg()[0],
           "stribeck_population": stribeck_population(), "calibrate_job": calibrate_cost()}
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
