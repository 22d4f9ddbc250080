"""Where a metaheuristic can help: the Stribeck friction of Ni et al. 2024 eq. 2 identified inside the loop.

Simulated Panda (RNEA + Ni et al. 2024 Table 2 Stribeck friction + 0.5 N.m noise, 100 Hz, 60 s), the Ni et al. 2024
48 base parameters. Compared on the identification and a held-out recording:

- OLS without friction columns (friction left in the residual);
- OLS with linear Coulomb + viscous + offset columns (the usual linear approximation);
- WSO over [theta, fc, fs, vs] with the Stribeck model inside the loop (batched Numba fitness), box:
  OLS +- 5 |p_hat| for theta, [0, 6 x nominal] for the friction parameters.

    .venv/bin/python bench/metaheuristics/stribeck.py [--iterations 1000] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from robodyn.identification.estimators import ols
from robodyn.robot.friction import FrictionModel
from robodyn.identification.metaheuristic import (StribeckFitness, joint_major_data, normal_equations_of,
                                                  run_metaheuristic, ni2024_options, stribeck_box)
from robodyn.identification.comparison_data import ASSUMED_PANDA_ROTOR_INERTIA, simulated_recording
from robodyn.identification.pipeline import IdentificationConfig
from robodyn.robot.loader import load_model


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--population", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).with_name("stribeck.json")))
    args = ap.parse_args()

    model = load_model("panda")
    friction = FrictionModel.franka_stribeck()
    rotor = np.array(ASSUMED_PANDA_ROTOR_INERTIA)
    rec = [simulated_recording(model, seed=s, seconds=60.0, rate_hz=100.0, noise=0.5, rotor_inertia=rotor,
                               stribeck=friction) for s in (args.seed, args.seed + 1)]
    plain = IdentificationConfig(method="ols", friction="none", rotor_inertia=True)
    linear = IdentificationConfig(method="ols", friction="coulomb-viscous", rotor_inertia=True)
    rows = []
    for label, cfg in (("OLS, no friction columns", plain), ("OLS, Coulomb + viscous + offset columns", linear)):
        base, ne = normal_equations_of(model, rec[:1], cfg, preprocessed=True)
        _, held = normal_equations_of(model, rec[1:], cfg, base=base, preprocessed=True)
        theta = ols(ne).theta
        rows.append({"method": label, "parameters": base.count,
                     "identification_rmse": ne.metrics(theta, model.joint_names)["rmse"],
                     "heldout_rmse": held.metrics(theta, model.joint_names)["rmse"]})
    base, ne = normal_equations_of(model, rec[:1], plain, preprocessed=True)
    center = ols(ne).theta
    fits = [StribeckFitness.build(joint_major_data(model, base, d), d.tau, d.qd, qd0=friction.qd0) for d in rec]
    bounds = stribeck_box(center, friction.params)
    x0 = (bounds.lower + bounds.upper) / 2  # box centre: the OLS theta and 3x nominal friction, not the truth
    t0 = time.perf_counter()
    res = run_metaheuristic(fits[0], bounds, "wso", seed=args.seed,
                            options=ni2024_options("wso", args.population, args.iterations), x0=x0)
    elapsed = time.perf_counter() - t0
    rows.append({"method": "WSO, Stribeck inside the loop", "parameters": bounds.dim,
                 "identification_rmse": fits[0].joint_rmse(res.theta).tolist(),
                 "heldout_rmse": fits[1].joint_rmse(res.theta).tolist(), "elapsed_s": elapsed,
                 "iterations": args.iterations, "population": args.population,
                 "friction_found": {"fc": res.theta[48:55].tolist(), "fs": res.theta[55:62].tolist(),
                                    "vs": res.theta[62:69].tolist()},
                 "friction_true": {k: friction.params[k].tolist() for k in ("fc", "fs", "vs")}})
    for r in rows:
        r["identification_sum"] = float(np.sum(r["identification_rmse"]))
        r["heldout_sum"] = float(np.sum(r["heldout_rmse"]))
        print(f"{r['method']:<42} params {r['parameters']:3d}  RMSE sum ident {r['identification_sum']:.4f}  "
              f"held-out {r['heldout_sum']:.4f}")
    Path(args.out).write_text(json.dumps({"rows": rows, "seed": args.seed}, indent=1))


if __name__ == "__main__":
    main()
