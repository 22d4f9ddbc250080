"""Robustness of the Li et al. 2023 replay (UR5 kinematic calibration with joint stiffness): the acceptance numbers over many seeds and two readings of the
AT960 noise figure.

    .venv/bin/python bench/calibration_seed_sweep.py [SEEDS]

Prints, per noise model, the worst and the median over seeds of the held-out errors of the combined
method (against the true positions and against tracker readings) and of the compensation reduction.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from robodyn.calibration.planning import largest_test_cube, reference_configuration
from robodyn.calibration.paper_replay import UR5_LI2023_FLOOR_Z, run_paper_replay
from robodyn.calibration.planning import CellSetup
from robodyn.calibration.simulation import (DEFAULT_TOOL_OFFSET, DEFAULT_TRACKER_POSITION, TrackerNoise,
                                            load_ur5_li2023)

NOISE_MODELS = {
    "+-15um+6um/m as 1 sigma per axis (default)": TrackerNoise(15e-6, 6e-6),
    "typical = MPE/2 (Leica)": TrackerNoise(7.5e-6, 3e-6),
}


def main(seeds: int) -> int:
    robot = load_ur5_li2023()
    setup = CellSetup(tracker_position=DEFAULT_TRACKER_POSITION, tool_offset=DEFAULT_TOOL_OFFSET, floor_z=UR5_LI2023_FLOOR_Z)
    cube = largest_test_cube(robot, setup, reference_configuration(robot, setup, np.array([0.5, 0.0, 0.0])))
    for label, noise in NOISE_MODELS.items():
        t0 = time.time()
        rows = []
        for seed in range(seeds):
            r = run_paper_replay(seed=seed, noise=noise, cube=cube)
            row = []
            for cond in ("no_load", "loaded"):
                for view in ("held_out_true", "held_out_measured"):
                    s = r["table4_mm"][cond][view]["combined"]
                    row += [s["mean_mm"], s["max_mm"]]
                row.append(r["table5_mm"][cond]["true"]["max_reduction"])
            rows.append(row)
        a = np.array(rows)
        print(f"{label}: {seeds} seeds, {time.time() - t0:.0f} s")
        names = ["no-load true mean", "no-load true max", "no-load tracker mean", "no-load tracker max",
                 "no-load ISO reduction", "loaded true mean", "loaded true max", "loaded tracker mean",
                 "loaded tracker max", "loaded ISO reduction"]
        for k, n in enumerate(names):
            worst = a[:, k].min() if "reduction" in n else a[:, k].max()
            print(f"  {n:<22} median {np.median(a[:, k]):.4f}  worst {worst:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10))
