"""Do the calibration's parameter bands contain the truth as often as they claim?

Data: own-model simulation (an inverse crime for accuracy, but the right test of a band: the model is
exact, so a band that misses the truth more often than 5 % misstates the noise's effect). The
simulated UR5 of Li et al. 2023 (calibration/simulation.py: their Table 3 geometry and stiffness,
AT960-class tracker noise 15 um + 6 um/m), one random plan of 50 poses in the ISO 9283 cube (seed
0's) and the 20 most informative of them measured again with the paper's 4.678 kg payload; per seed
new tracker noise (so the coverage is that of this design, the textbook meaning of a band);
identified by the paper's combined method with the paper's parameter set (``li2023``).

For every seed and identified parameter: is the reference inside estimate +- 1.96 std (the 95 %
band)? The references:

* joint stiffness: the simulated truth (the band is taken on the compliance 1/K, where the fit is
  linear, as the result file's +-2σ text does);
* geometry: the same method's estimate from the same poses without noise, which is the truth for a
  parameter identifiable on its own and the identifiable combination for those that absorb a
  structurally redundant one (d2 absorbs d3 and d4); its distance from the truth is reported too.

    .venv/bin/python bench/calibration/band_coverage.py [--seeds 50] [--into bench/calibration/result.json]

With ``--into FILE`` the summary is stored in FILE under ``band_coverage`` (FILE's other keys kept:
the calibration benchmark's result, which the docs' figures cite); the per-seed values go to
``--out``.

Coverage per class (geometry lengths, geometry angles, stiffness) and per parameter, with the load
average beside the time (a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from robodyn.calibration.methods import calibrate
from robodyn.calibration.paper_replay import LOAD_COM, LOAD_MASS, LOADED_POSES, NOLOAD_POSES, UR5_LI2023_FLOOR_Z
from robodyn.calibration.parameters import preset_free_names
from robodyn.calibration.planning import CellSetup, plan_measurements
from robodyn.calibration.simulation import (DEFAULT_TOOL_OFFSET, DEFAULT_TRACKER_POSITION, TrackerNoise,
                                            measure_poses, ur5_li2023_cell)
from robodyn.calibration.li2023 import TABLE3_STIFFNESS
from robodyn.calibration.stiffness import Load, loaded_subset

Z95 = 1.959963984540054  # two-sided 95 % normal quantile
METHOD = "combined"


def fit(cell, gm, plan, sub, load, free, known=None):
    noload = measure_poses(cell, plan.q, None, plan.ids)
    loaded = measure_poses(cell, plan.q[sub], load, [plan.ids[i] for i in sub])
    return calibrate(gm, noload, loaded, method=METHOD, free_names=free, known_compliance=known)


def one_seed(seed: int, design, ref, known=None) -> dict:
    plan, sub, load, free = design
    gm, cell = ur5_li2023_cell(seed=seed)
    r = fit(cell, gm, plan, sub, load, free, known)
    truth = cell.robot.params
    geometry = {}
    for n in r.free_names:
        i = gm.index(n)
        z = float((r.params[i] - ref.params[i]) / r.std[i])
        geometry[n] = {"z": z, "covered": abs(z) <= Z95, "angle": bool(gm.angle_mask[i]),
                       "reference_minus_truth": float(ref.params[i] - truth[i])}
    stiffness = {}
    c_true = 1.0 / np.asarray(TABLE3_STIFFNESS, float)
    for j in np.flatnonzero(r.compliance_identified) if known is None else []:
        z = float((r.compliance[j] - c_true[j]) / r.compliance_std[j])
        stiffness[f"K{j + 1}"] = {"z": z, "covered": abs(z) <= Z95}
    return {"seed": seed, "geometry": geometry, "stiffness": stiffness, "failed": r.failed}


def summary(runs: list[dict]) -> dict:
    def cover(rows):
        rows = list(rows)
        hit = sum(bool(x["covered"]) for x in rows)
        z = np.array([x["z"] for x in rows])
        return {"bands": len(rows), "covered": hit, "coverage": hit / len(rows) if rows else None,
                "z_std": float(np.std(z)) if rows else None}

    classes = {
        "geometry_lengths": cover(v for r in runs for v in r["geometry"].values() if not v["angle"]),
        "geometry_angles": cover(v for r in runs for v in r["geometry"].values() if v["angle"]),
        "stiffness": cover(v for r in runs for v in r["stiffness"].values()),
    }
    names = sorted({n for r in runs for n in r["geometry"]}) + sorted({n for r in runs for n in r["stiffness"]})
    per = {n: cover(r["geometry"].get(n) or r["stiffness"].get(n) for r in runs
                    if n in r["geometry"] or n in r["stiffness"]) for n in names}
    return {"classes": classes, "per_parameter": per}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--out", default=None, help="every seed's values (JSON)")
    ap.add_argument("--into", default=None, help="store the summary under 'band_coverage' in this JSON file")
    ap.add_argument("--known-stiffness", action="store_true",
                    help="give the fit the true stiffness (geometry bands only; stored as band_coverage_known_stiffness): "
                         "do the geometry bands cover when the stiffness is not uncertain?")
    args = ap.parse_args()
    t0 = time.perf_counter()
    setup = CellSetup(tracker_position=DEFAULT_TRACKER_POSITION, tool_offset=DEFAULT_TOOL_OFFSET,
                      floor_z=UR5_LI2023_FLOOR_Z)
    gm, exact = ur5_li2023_cell(seed=0, noise=TrackerNoise(0.0, 0.0))
    plan = plan_measurements(gm.robot, setup, NOLOAD_POSES, seed=0)
    load = Load(LOAD_MASS, LOAD_COM)
    design = (plan, loaded_subset(gm, plan.q, load, LOADED_POSES), load, preset_free_names(gm, "li2023"))
    known = 1.0 / np.asarray(TABLE3_STIFFNESS, float) if args.known_stiffness else None
    ref = fit(exact, gm, *design, known)
    runs = []
    for s in range(args.seeds):
        runs.append(one_seed(s, design, ref, known))
        sys.stderr.write(f"seed {s}: {time.perf_counter() - t0:.0f} s\n")
        save(args, runs, t0)  # after every seed: a run cut short keeps what it measured, with its seed count
    result = save(args, runs, t0)
    print(json.dumps({k: result[k] for k in ("seeds", "summary", "failed_fits", "seconds", "loadavg_at_end")},
                     indent=2))
    return 0


def save(args, runs: list[dict], t0: float) -> dict:
    result = {"command": "bench/calibration/band_coverage.py " + " ".join(sys.argv[1:]),
              "data": "own-model: simulated UR5 of Li et al. 2023 (Table 3 geometry and stiffness), AT960-class noise",
              "method": METHOD + (", true stiffness given" if args.known_stiffness else ""), "seeds": len(runs), "seeds_asked": args.seeds, "band": "estimate +- 1.96 std (95 %)",
              "summary": summary(runs), "failed_fits": sum(r["failed"] for r in runs),
              "reference_minus_truth_max": {n: max(abs(r["geometry"][n]["reference_minus_truth"]) for r in runs)
                                            for n in runs[0]["geometry"]},
              "seconds": time.perf_counter() - t0, "loadavg_at_end": list(os.getloadavg()), "runs": runs}
    text = json.dumps(result, indent=2)
    if args.into:
        path = Path(args.into)
        doc = json.loads(path.read_text()) if path.exists() else {}
        key = "band_coverage_known_stiffness" if args.known_stiffness else "band_coverage"
        doc[key] = {k: v for k, v in result.items() if k != "runs"}
        path.write_text(json.dumps(doc, indent=2) + "\n")
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    return result


if __name__ == "__main__":
    sys.exit(main())
