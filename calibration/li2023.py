"""Numbers published in Li et al. 2023 (Li, Sui, Wang, Shan, Huo: "Kinematics application calibration
method of collaborative robot", J. Univ. Chinese Academy of Sciences 2023, 40(4):555-565).

Only facts from the paper live here (converted to SI where stated); how they are used is in
simulation.py and paper_replay.py. The paper's UR5 model (its Table 2 frames) is
calibration/data/ur5_li2023.toml.
"""

from __future__ import annotations

import numpy as np

# Table 3, "combined identification" (综合辨识) rows 1..6: alpha deg, a mm, d mm, theta deg.
TABLE3_COMBINED = np.array([
    [0.0, 0.0, 0.0, 0.0],
    [90.026, 0.158, 109.646, 179.834],
    [0.040, 425.290, 0.496, 0.069],
    [-0.242, 391.965, 0.497, -0.338],
    [-90.011, -0.528, 94.813, -180.000],
    [-89.981, 0.014, 0.0, 0.0],
])
# Table 3, "geometric identification only" (仅几何参数辨识) rows 1..6, same units.
TABLE3_GEOMETRIC = np.array([
    [0.0, 0.0, 0.0, 0.0],
    [90.047, 1.731, 109.665, 180.179],
    [0.028, 426.448, 0.516, -0.108],
    [-0.259, 391.868, 0.516, 0.068],
    [-90.053, 0.148, 94.701, -179.983],
    [-89.940, 0.078, 0.0, 0.0],
])
# Table 3 joint stiffness K (N·m/rad) of the combined identification, joints 1..6. Joint 1 keeps
# the initial value 50 000 because the paper's load is purely vertical and never twists joint 1.
TABLE3_STIFFNESS = np.array([50000.0, 18764.0, 165771.0, 115648.0, 5404.0, 4319.0])
INITIAL_STIFFNESS = 50000.0  # Table 3: the value every joint starts from

# Section 4.1: payload 4.678 kg, centre of mass [0, -36.86, 29.85] mm from the flange centre.
LOAD_MASS = 4.678
LOAD_COM = (0.0, -0.03686, 0.02985)
NOLOAD_POSES = 50
LOADED_POSES = 20
UR5_REACH = 0.850  # m, section 4.1: workspace = sphere of radius 850 mm about the base

# Table 4: end position error in mm (mean, max, min) on the measured poses.
TABLE4 = {
    "no_load": {
        "nominal": (2.280, 3.299, 1.509),
        "geometric": (0.264, 0.520, 0.074),
        "combined": (0.192, 0.453, 0.049),
    },
    "loaded": {
        "nominal": (2.668, 4.173, 1.845),
        "geometric": (1.752, 3.261, 1.019),
        # the printed mean 0.060 is below the printed min 0.348: a typo in the paper
        "geometric_then_stiffness": (0.060, 0.934, 0.348),
        "combined": (0.361, 0.615, 0.151),
    },
}
# Table 5: compensation at the five GB/T 12642 (ISO 9283) points, mm (mean, max, min).
TABLE5 = {
    "no_load": {"before": (1.831, 2.338, 1.592), "after": (0.337, 0.572, 0.142)},
    "loaded": {"before": (2.771, 4.478, 1.704), "after": (0.399, 0.666, 0.193)},
}
TABLE5_MAX_REDUCTION = {"no_load": 0.755, "loaded": 0.851}


def table_to_si(table_deg_mm: np.ndarray) -> dict[str, np.ndarray]:
    t = np.asarray(table_deg_mm, dtype=float)
    return {"alpha": np.deg2rad(t[:, 0]), "a": t[:, 1] / 1000.0, "d": t[:, 2] / 1000.0,
            "theta": np.deg2rad(t[:, 3])}
