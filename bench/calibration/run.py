"""Held-out accuracy of every calibration method, side by side, on two arms.

1. **The paper's UR5** (Li et al. 2023, UR5 kinematic calibration with joint stiffness): the
   simulated cell of ``robodyn calibrate replay`` (the paper's Table 3 robot, 50 unloaded and 20
   loaded poses, AT960-class noise), 200 held-out poses, errors against the true positions. The
   simulated robot has exactly the model's physics, so this case measures the algorithms, not the
   model: the paper's own numbers on the real UR5 are printed beside it.
2. **A heavy arm with gravity sag** (``heavy6``, 165 kg class, FANUC-style coupled J2/J3): the
   plant of ``calibration/heavy_arm.py`` has effects the calibration model lacks (bending links, true
   link masses +-15 % off the model's, a joint-3 tilt no DH parameter expresses, nest errors), is
   measured with 3 SMRs per pose from single-axis sweeps in the tracker's frame, and is judged on
   held-out poses of which many lie beyond the identification joint ranges.

3. **The heavy arm with its masses hidden from the identifier** (``--hidden-mass-seeds``): the same
   plant measured on a single-axis sweep plan (36 sweep poses and the home pose, every 4th sweep
   pose held out, the held-out J2 end at +50 deg beyond the identified -30..+34 deg); the model the
   identifier gets is heavy6's geometry without masses. Geometric, combined-gravity with the
   model's (nominal, not the plant's) masses and its lumped form on the geometry-only model, beside
   nominal, and the geometric fit's extrapolation check. ``--only hidden-masses`` runs this alone.

For each method: held-out mean / max / RMS (mm), and whether it models the deflection under the
links' own weight. The reference is the nominal model (and, for the UR5, the paper's Table 4).

    .venv/bin/python bench/calibration/run.py [--seed 0] [--heavy-seeds 3] [--hidden-mass-seeds 3]
                                              [--only hidden-masses] [--out result.json] [--text]

With ``--only hidden-masses --out FILE`` the case is replaced in FILE and its other cases are kept.

Prints JSON (and the tables with --text).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from robodyn.calibration.heavy_arm import (format_comparison, format_hidden_mass, heavy_arm_comparison,
                                           hidden_mass_comparison)
from robodyn.calibration.paper_replay import run_paper_replay
from robodyn.calibration.li2023 import TABLE4
from robodyn.papers import cite


def ur5_case(seed: int) -> dict:
    t0 = time.perf_counter()
    rep = run_paper_replay(seed=seed, extra_methods=("combined-gravity",))
    rep.pop("_per_pose_mm")
    rows = {}
    for cond in ("no_load", "loaded"):
        for method, s in rep["table4_mm"][cond]["held_out_true"].items():
            rows.setdefault(method, {})[cond] = {k: s[k] for k in ("mean_mm", "max_mm", "rms_mm", "poses")}
    return {"case": f"simulated UR5 of {cite('calibration')}", "seed": seed, "methods": rows,
            "paper_table4_mm_mean_max_min": TABLE4, "seconds": time.perf_counter() - t0}


def heavy_case(seed: int) -> dict:
    t0 = time.perf_counter()
    rep = heavy_arm_comparison(seed)
    rep["seconds"] = time.perf_counter() - t0
    return rep


def verdict(rep: dict) -> dict:
    """Which methods reach a held-out max at or below the nominal model's, unloaded and loaded."""
    rows = rep["methods"]
    out = {}
    for cond in ("unloaded", "loaded"):
        nominal = rows["nominal"][cond]["max_mm"]
        out[cond] = {m: {"max_mm": r[cond]["max_mm"], "at_or_below_nominal_max": r[cond]["max_mm"] <= nominal,
                         "max_ratio_to_nominal": r[cond]["max_mm"] / nominal}
                     for m, r in rows.items() if m != "nominal"}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--heavy-seeds", type=int, default=3, help="heavy-arm plants (seeds 0..N-1)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--text", action="store_true", help="also print the tables (to stderr)")
    ap.add_argument("--hidden-mass-seeds", type=int, default=3, help="hidden-mass sweep-plan plants (seeds 0..N-1)")
    ap.add_argument("--only", choices=("hidden-masses",), default=None, help="run one case only")
    args = ap.parse_args()
    hidden = [hidden_mass_comparison(s) for s in range(args.hidden_mass_seeds)]
    if args.only == "hidden-masses":
        # --out names a full run's file: this case is replaced in it, the other cases are kept
        result = {}
        if args.out and Path(args.out).exists():
            result = json.loads(Path(args.out).read_text())
        result["heavy_arm_hidden_masses"] = hidden
        result["heavy_arm_hidden_masses_command"] = "bench/calibration/run.py " + " ".join(sys.argv[1:])
        text = json.dumps(result, indent=2)
        print(json.dumps(hidden, indent=2))
        if args.out:
            Path(args.out).write_text(text + "\n")
        if args.text:
            for h in hidden:
                sys.stderr.write(format_hidden_mass(h) + "\n")
        return 0
    ur5 = ur5_case(args.seed)
    heavy = [heavy_case(s) for s in range(args.heavy_seeds)]
    for h in heavy:
        h["verdict"] = verdict(h)
    methods = list(heavy[0]["methods"])
    median = {m: {c: {k: float(np.median([h["methods"][m][c][k] for h in heavy])) for k in ("mean_mm", "max_mm", "rms_mm")}
                  for c in ("unloaded", "loaded")} for m in methods}
    result = {"ur5": ur5, "heavy_arm": heavy, "heavy_arm_median_over_seeds": median, "heavy_arm_hidden_masses": hidden,
              "command": "bench/calibration/run.py " + " ".join(sys.argv[1:])}
    if args.out and Path(args.out).exists():  # band_coverage.py's results live in the same file: kept
        kept = json.loads(Path(args.out).read_text())
        result.update({k: v for k, v in kept.items() if k.startswith("band_coverage")})
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    if args.text:
        err = sys.stderr
        err.write(f"UR5 ({cite('calibration')}), held-out, true error, mm (mean / max / rms)\n")
        for m, r in ur5["methods"].items():
            err.write(f"  {m:24}" + "".join(f"{c:>9}: {r[c]['mean_mm']:.3f} / {r[c]['max_mm']:.3f} / {r[c]['rms_mm']:.3f}"
                                            for c in ("no_load", "loaded")) + "\n")
        for h in heavy:
            err.write(format_comparison(h) + "\n")
        for h in hidden:
            err.write(format_hidden_mass(h) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
