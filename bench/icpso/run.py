"""Zhong et al. 2023 (chaotic PSO, SCARA) Table 2 re-run: ICPSO as printed, its baselines APSO and LPSO,
and plain PSO on F1-F5 (Table 1), mean and spread over >= 20 seeds, beside the paper's numbers.

Settings (section 3.1): dimension 30, population 50, T = 100 iterations, c in [0.5, 2.5],
w in [0.4, 0.9]; ICPSO C = 10, delta = 1 (f_d = 0, the known optimum), M = 10 tent-map steps
(not given). Plain PSO: w falling linearly 0.9 -> 0.4, c1 = c2 = 2. All clamp velocity to 20 % of
the range and clip positions to the bounds. Variance is over the runs' final best values, 1/n
normalised (as eq. 14). APSO and LPSO are not defined in the paper; robodyn's readings are in
robodyn.identification.optimizers (APSOOptions, LPSOOptions).

    .venv/bin/python bench/icpso/run.py [--runs 20] [--equal-budget] [--ablation] [--out FILE]

--equal-budget  also give robodyn's tuned ICPSO (an ablation), APSO, LPSO and PSO, run by run, as many
                evaluations as ICPSO as printed used at T = 100 (the chaotic search evaluates M points
                per premature particle; the paper compares at equal iterations)
--ablation      the readings of the chaotic search (whole domain vs near the best, replace always
                vs only if better, radius) and APSO on all five functions, each run at the same
                5050 evaluations (what APSO spends at T = 100)
Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import time

from robodyn.reproduce import zhong2023
from robodyn.papers import cite


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--seed", type=int, default=2023)
    p.add_argument("--equal-budget", action="store_true")
    p.add_argument("--ablation", action="store_true")
    p.add_argument("--out", default=None, help="also write the JSON here")
    a = p.parse_args()
    if a.runs < 20:
        p.error("--runs: the paper reports 20 runs; use at least 20")
    t0 = time.perf_counter()
    result = {"paper": cite("icpso"),
              "settings": {"dim": 30, "population": 50, "iterations": 100, "runs": a.runs, "C": 10.0, "delta": 1.0,
                           "chaos_steps": 10, "seed": a.seed},
              "table2": zhong2023.icpso_table2(a.runs, a.seed)}
    if a.equal_budget:
        result["equal_evaluations"] = zhong2023.icpso_equal_budget(a.runs, a.seed)
    if a.ablation:
        result["chaos_ablation"] = zhong2023.icpso_ablation(a.runs, a.seed)
    result["seconds"] = time.perf_counter() - t0
    text = json.dumps(result, indent=1)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
