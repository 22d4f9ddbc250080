"""Excitation design benchmarks (issue 4 "what must be shown"); prints JSON.

    .venv/bin/python bench/excitation/run.py [--case panda|twolink|scara|all]

- panda:   Franka Panda, Franka's published limits, fourier family, 5 harmonics, wf = 2 pi / 10 rad/s
           (10 s period), RAW cond(W_base) optimised with viscous + Coulomb friction columns
           (57 base parameters), SLSQP best of 3 starts under a 110 s budget; proof: every
           sample at 1 kHz (x2 oversampling) passes robodyn.limits.check_trajectory.
           Published reference for comparison: 122 (Gaz et al. 2019).
- twolink: seed 001's 2-DOF arm (Table 1 limits), periodic polynomial, T = 5 s, 50 Hz grid,
           GA with seed 001's settings (20 / 800 / 0.8 / 0.2); once exactly as the paper (order 8,
           start 30 deg) and once with order 12 and a free start. Table 3: 2.04 .. 5.76.
- scara:   seed 002's SCARA, modified Fourier + quintic, wf = 0.2, 5 harmonics (30 variables),
           ICPSO (population 50, 100 iterations), fixed start q_sf = 0. Seed 002: cond 1.0039.
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

from robodyn.identification import optimizers as opt
from robodyn.identification.excitation import DesignRequest, design_excitation
from robodyn.identification.regressor import ColumnSpec
from robodyn.robot.loader import load_model


def summary(name, r, extra=None):
    d = {"case": name, "family": r.family.describe(), "objective_optimised": r.objective,
         "cond_raw": r.metrics["cond_raw"], "cond_scaled": r.metrics["cond_scaled"], "logdet": r.metrics["logdet"],
         "base_parameters": r.metrics["base_parameters"], "report_samples": r.metrics["samples"],
         "cond_raw_design_grid": r.grid_metrics["cond_raw"], "limits_ok": r.limit_report["ok"],
         "samples_checked": r.limit_report["samples_checked"], "check_rate_hz": r.limit_report["rate_hz"],
         "design_seconds": r.elapsed, "optimizer_runs": r.optimizer["runs"]}
    d.update(extra or {})
    return d


def panda():
    model = load_model("panda")
    req = DesignRequest(family="fourier", harmonics=5, wf=2 * math.pi / 10, optimizer="slsqp", starts=3, seed=0,
                        columns=ColumnSpec(friction=("viscous", "coulomb")), objective="cond", grid=200,
                        time_limit=110.0)
    r = design_excitation(model, req)
    return summary("panda", r, {"reference_gaz_2019": 122, "target": 60, "target_met": r.metrics["cond_raw"] <= 60,
                                "time_target_met": r.elapsed <= 120})


def twolink():
    model = load_model("twolink")
    out = []
    for label, order, start in (("seed001_exact", 8, np.radians([30.0, 30.0])), ("order12_free_start", 12, None)):
        for cols in (ColumnSpec(), ColumnSpec(friction=("viscous", "coulomb"))):
            req = DesignRequest(family="poly", period=5.0, order=order, optimizer="ga", options=opt.GAOptions(),
                                columns=cols, objective="cond_scaled", grid=250, margin=0.0, start=start, seed=1)
            r = design_excitation(model, req)
            out.append(summary(f"twolink_{label}_{'friction' if cols.friction else 'frictionless'}", r,
                               {"paper_table_3_both_links": 3.3003 if cols.friction else 4.2574}))
    return out


def scara():
    model = load_model("scara")
    out = []
    for objective in ("cond_scaled", "cond"):
        req = DesignRequest(family="fourier-poly", wf=0.2, harmonics=5, optimizer="icpso",
                            options=opt.ICPSOOptions(target=1.0), columns=ColumnSpec(), objective=objective,
                            start=np.zeros(3), seed=1)
        out.append(summary(f"scara_{objective}", design_excitation(model, req), {"paper_cond": 1.0039}))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", default="all", choices=["all", "panda", "twolink", "scara"])
    a = p.parse_args()
    results = []
    for name, fn in (("panda", panda), ("twolink", twolink), ("scara", scara)):
        if a.case in ("all", name):
            r = fn()
            results += r if isinstance(r, list) else [r]
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
