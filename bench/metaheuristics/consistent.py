"""Physically consistent identification on the simulated Panda (Ni et al. 2024 columns, 60 s at 100 Hz) and the
real Stäubli TX40 set (friction + coupled wrist), plus the URDF round trip through pinocchio and MuJoCo.

    .venv/bin/python bench/metaheuristics/consistent.py [--out FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from robodyn.identification.consistent import identify_consistent, nominal_reference
from robodyn.identification.datasets import tx40
from robodyn.identification.metaheuristic import normal_equations_of
from robodyn.identification.comparison_data import ASSUMED_PANDA_ROTOR_INERTIA, simulated_recording
from robodyn.identification.pipeline import IdentificationConfig
from robodyn.identification.regressor import sample_states
from robodyn.identification.urdf_export import export_urdf, verify_urdf
from robodyn.robot.loader import load_model
from robodyn.robot.urdf import model_from_urdf

TX40_DIR = tx40.DATA_DIR


def summary(name, model, base, res, urdf_check=None) -> dict:
    out = {"robot": name, "base_parameters": base.count, "all_links_feasible": res.feasibility["feasible"],
           "negative_parameters": res.feasibility["negative_parameters"],
           "min_pseudo_inertia_eig": [l["pseudo_inertia_min_eig"] for l in res.feasibility["links"]],
           "masses": [l["mass"] for l in res.feasibility["links"]], "rmse_increase": res.rmse_increase,
           "rmse": res.metrics["rmse"], "rmse_ols": res.metrics_ols["rmse"], "solver": res.solver,
           "elapsed_s": res.elapsed}
    if urdf_check:
        out["urdf"] = urdf_check
    ri = out["rmse_increase"]
    print(f"{name}: all links feasible = {out['all_links_feasible']}, RMSE sum {ri['rmse_sum']:.4f} vs OLS "
          f"{ri['rmse_sum_ols']:.4f} N.m (+{ri['percent']:.3f} %), {res.solver} {res.elapsed:.2f} s")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).with_name("consistent.json")))
    args = ap.parse_args()
    results = []

    panda = load_model("panda")
    rec = simulated_recording(panda, seed=0, seconds=60.0, rate_hz=100.0, noise=0.5,
                              rotor_inertia=np.array(ASSUMED_PANDA_ROTOR_INERTIA))
    cfg = IdentificationConfig(method="ols", friction="none", rotor_inertia=True)
    base, ne = normal_equations_of(panda, [rec], cfg, preprocessed=True)
    res = identify_consistent(ne, base, panda.dof, reference=nominal_reference(panda, base.spec),
                              joint_names=list(panda.joint_names))
    text = export_urdf(panda, res.to_dict(), base)
    q, qd, qdd = sample_states(panda, 200, seed=11)
    check = verify_urdf(text, panda, base, res.standard, q, qd, qdd)
    print(f"  URDF: pinocchio max error {check['pinocchio']['max_abs_error']:.2e} N.m, MuJoCo "
          f"{check['mujoco']['max_abs_error']:.2e} N.m (torques up to {check['torque_scale']:.1f} N.m)")
    results.append(summary("panda (simulated)", panda, base, res, check))

    model = model_from_urdf(TX40_DIR / "tx40_mdh_modified.urdf")
    cfg = IdentificationConfig(method="ols", friction="coulomb-viscous", processing=tx40.PROCESSING,
                               motor_couplings=(tx40.WRIST_COUPLING,))
    base, ne = normal_equations_of(model, [tx40.load(TX40_DIR)], cfg)
    res = identify_consistent(ne, base, model.dof, reference=nominal_reference(model, base.spec),
                              joint_names=list(model.joint_names))
    results.append(summary("staubli tx40 (real)", model, base, res))
    Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
