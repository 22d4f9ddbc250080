"""Ni et al. 2024 configuration: WSO (150 sharks x 3000 iterations) on the Panda's 48 base parameters
(rotor inertia, no friction columns) from a simulated 1 kHz, 60 s recording (RNEA + noise).

Measures: WSO wall time with the sufficient-statistics fitness, and the per-population cost of
that fitness against the naive residual evaluation on the same data (and a short WSO run with the
naive fitness, projected to 3000 iterations). Writes bench/metaheuristics/result.json.

    .venv/bin/python bench/metaheuristics/run.py [--iterations 3000] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from robodyn.identification import optimizers as opt
from robodyn.identification.estimators import ols
from robodyn.identification.comparison_data import ASSUMED_PANDA_ROTOR_INERTIA, simulated_recording
from robodyn.identification.metaheuristic import (QuadraticFitness, joint_major_data, naive_fitness,
                                                  normal_equations_of, ni2024_options, search_box)
from robodyn.identification.pipeline import IdentificationConfig
from robodyn.robot.loader import load_model


def timed(fn, *args, repeat: int = 3):
    """Best wall time of ``repeat`` calls (the first result is returned too)."""
    best, value = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        v = fn(*args)
        best = min(best, time.perf_counter() - t0)
        value = v if value is None else value
    return best, value


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=3000)
    ap.add_argument("--population", type=int, default=150)
    ap.add_argument("--naive-iterations", type=int, default=5, help="WSO iterations run with the naive fitness")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).with_name("result.json")))
    args = ap.parse_args()

    model = load_model("panda")
    rotor = np.array(ASSUMED_PANDA_ROTOR_INERTIA)
    t0 = time.perf_counter()
    data = simulated_recording(model, seed=args.seed, seconds=60.0, rate_hz=1000.0, noise=0.5, rotor_inertia=rotor)
    t_sim = time.perf_counter() - t0
    config = IdentificationConfig(method="ols", friction="none", rotor_inertia=True)
    t0 = time.perf_counter()
    base, ne = normal_equations_of(model, [data], config, preprocessed=True)
    t_stats = time.perf_counter() - t0
    est = ols(ne, base.names)
    bounds = search_box(est.theta)
    fitness = QuadraticFitness.from_statistics(ne)

    options = ni2024_options("wso", args.population, args.iterations)
    t0 = time.perf_counter()
    res = opt.minimize(fitness, bounds, "wso", seed=args.seed, options=options)
    t_wso = time.perf_counter() - t0
    metrics = ne.metrics(res.x, model.joint_names)
    metrics_ols = ne.metrics(est.theta, model.joint_names)

    # side by side on the same data and the same population
    W = joint_major_data(model, base, data)
    naive = naive_fitness(W, data.tau)
    population = bounds.sample(np.random.default_rng(1), args.population)
    t_fast, f_fast = timed(fitness, population, repeat=20)
    t_naive, f_naive = timed(naive, population, repeat=3)
    agreement = float(np.max(np.abs(f_fast - f_naive) / np.maximum(np.abs(f_naive), 1e-300)))
    short = ni2024_options("wso", args.population, args.naive_iterations)
    t0 = time.perf_counter()
    opt.minimize(naive, bounds, "wso", seed=args.seed, options=short)
    t_naive_run = time.perf_counter() - t0
    t0 = time.perf_counter()
    opt.minimize(fitness, bounds, "wso", seed=args.seed, options=short)
    t_fast_run = time.perf_counter() - t0

    out = {
        "configuration": {"robot": "panda (built-in MDH model, Ni et al. 2024 Table 1)", "base_parameters": base.count,
                          "columns": "10 inertial + rotor inertia IA per link, no friction columns",
                          "recording": {"rate_hz": 1000.0, "seconds": 60.0, "samples": int(data.t.size),
                                        "torque_noise_std_Nm": 0.5, "rotor_inertia_simulated": rotor.tolist()},
                          "wso": {"population": args.population, "iterations": args.iterations, "seed": args.seed},
                          "search_box": "OLS +- 5 |p_hat|"},
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count(), "python": platform.python_version()},
        "timings_s": {"simulate_rnea": t_sim, "regressor_and_statistics": t_stats, "wso_total": t_wso},
        "wso_goal_s": 5.0,
        "wso_under_goal": bool(t_wso < 5.0),
        "wso_result": {"fitness": float(res.fun), "nfev": res.nfev, "rmse": metrics["rmse"], "rmse_sum": metrics["rmse_sum"]},
        "ols_result": {"fitness": float(fitness(est.theta)[0]), "rmse": metrics_ols["rmse"],
                       "rmse_sum": metrics_ols["rmse_sum"]},
        "fitness_speedup": {
            "population": args.population,
            "sufficient_statistics_s_per_population": t_fast,
            "naive_residuals_s_per_population": t_naive,
            "ratio": t_naive / t_fast,
            "max_relative_difference": agreement,
            "short_wso_run": {"iterations": args.naive_iterations, "naive_s": t_naive_run, "fast_s": t_fast_run,
                              "ratio": t_naive_run / t_fast_run,
                              "naive_projected_to_full_run_s": t_naive_run / args.naive_iterations * args.iterations},
        },
    }
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(json.dumps({k: out[k] for k in ("timings_s", "wso_under_goal", "fitness_speedup")}, indent=1))
    print(f"WSO J = {res.fun:.6g} vs OLS J = {out['ols_result']['fitness']:.6g}; RMSE sum WSO "
          f"{metrics['rmse_sum']:.4f} vs OLS {metrics_ols['rmse_sum']:.4f}")


if __name__ == "__main__":
    main()
