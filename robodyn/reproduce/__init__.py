"""`robodyn reproduce PAPER`: each source paper's headline table beside robodyn's, on the paper's setup.

Every number carries the command that produces it. Where a paper's number cannot be reached, a
*finding* says why (unstated parameter, OCR-garbled formula, physically impossible value, data that
are not public) together with the measurement that shows it. Papers are cited by authors, year and
title (robodyn.papers); the keys below are what the command line accepts. Every row names its data's
origin, robodyn's and the paper's: real / plant / own-model (report.py).

- ``wso``          Ni et al. 2024, white shark optimizer identification of a Franka arm: Table 4
                   (torque RMSE of WSO / PSO / GA; the paper's real Franka) on an own-model Panda,
                   two plants unlike the model and the real Staubli TX40, at the paper's and at equal
                   evaluation budgets (part ``table4``); Table 2, the friction experiment on the
                   paper's 37 speeds, on a plant unlike the model (part ``table2``); the paper's
                   pipeline (friction experiment on 6 speeds, wf = 0.1 excitation, filtering) on
                   that plant (part ``pipeline``); Table 4 on the real Franka Panda log of Gaz et al. 2019,
                   read from the user's copy (part ``real_panda``, ``data_dir``, not shipped).
- ``stepwise``     Chen et al. 2021, stepwise identification of flexible-joint robots: Table 3
                   (minimum condition numbers of the periodic-polynomial excitation, and the candidate
                   observation matrices of eqs. 7-12 for its rigid-body cells; part ``table3``) and
                   the stepwise identification of the simulated flexible-joint arm (part ``flexible``,
                   own-model) and of recordings of a plant unlike the model (part ``recorded``).
- ``icpso``        Zhong et al. 2023, chaotic PSO excitation design for a SCARA: Table 2 (ICPSO as
                   printed, APSO, LPSO, PSO on F1-F5 at the paper's equal iterations, and at equal
                   evaluations with the tuned ICPSO as an ablation), the SCARA excitation's condition
                   numbers (ICPSO as printed; the tuned one beside it at the same evaluations), Tables 4-5
                   (linear neural network identification).
- ``ur10e``        Mamedov & Mikhel 2020 walk-through: the dynamic_calibration repository's real UR10e
                   logs identified (OLS, rotor inertia, fv/fc/f0 friction) and validated as its code
                   does, per-joint relative error and RMSE against the raw current x gain; the data are
                   read from the user's copy of that repository (``data_dir``, not shipped).
- ``calibration``  Li et al. 2023, UR5 kinematic calibration with joint stiffness: Tables 3 (stiffness),
                   4 and 5 (the abstract's max-error reduction) through the replay on the simulated UR5
                   (robodyn.calibration.paper_replay; part ``ur5``, own-model), and the same procedure on
                   the heavy-arm plant, which the model does not describe (part ``heavy``: an ablation, not the
                   paper's UR5).
"""

from __future__ import annotations

import time

from .chen2021 import STEPWISE_PARTS, reproduce_stepwise, stepwise_flexible
from .li2023 import CALIBRATION_PARTS, reproduce_calibration
from .ni2024 import WSO_PARTS, reproduce_wso
from .report import Finding, Reproduction, Row, Table, json_default
from .ur10e_walkthrough import reproduce_ur10e
from .zhong2023 import reproduce_icpso

PAPER_KEYS = ("wso", "stepwise", "icpso", "ur10e", "calibration")

__all__ = ["DATA_FOLDERS", "PAPER_KEYS", "PARTS", "READS_DATA", "REPRODUCERS", "Finding", "Reproduction", "Row", "Table", "json_default", "reproduce",
           "stepwise_flexible"]

REPRODUCERS = {"wso": reproduce_wso, "stepwise": reproduce_stepwise, "icpso": reproduce_icpso,
               "ur10e": reproduce_ur10e, "calibration": reproduce_calibration}


PARTS = {"stepwise": STEPWISE_PARTS, "wso": WSO_PARTS, "calibration": CALIBRATION_PARTS}


PLOTTING = ("calibration",)  # the reproductions that draw their figures (``plot``: a PNG prefix)
# the reproductions that read a data set the user has (``data_dir``), with the folder `git clone` makes
DATA_FOLDERS = {"ur10e": "dynamic_calibration", "wso": "FrankaEmikaPandaDynModel"}
READS_DATA = tuple(DATA_FOLDERS)


def reproduce(key: str, quick: bool = False, part: str | None = None, plot: str | None = None,
              data_dir: str | None = None) -> Reproduction:
    """One paper's reproduction; ``part`` picks one part of a paper that has several (PARTS);
    ``plot`` a PNG prefix for the figures of the reproductions in PLOTTING; ``data_dir`` the
    folder of the data set of a reproduction in READS_DATA."""
    if plot and key not in PLOTTING:
        raise ValueError(f"plot: only {', '.join(PLOTTING)} draws plots, not {key}")
    if data_dir and key not in READS_DATA:
        raise ValueError(f"data-dir: only {', '.join(READS_DATA)} reads a data set, not {key}")
    if key not in REPRODUCERS:
        raise ValueError(f"paper: unknown {key!r}; expected one of {list(PAPER_KEYS)}")
    if part not in (None, "all") and part not in PARTS.get(key, ()):
        raise ValueError(f"part: {key} has " + (f"the parts {list(PARTS[key])}" if key in PARTS else "one part")
                         + f", not {part!r}")
    t0 = time.perf_counter()
    rep = REPRODUCERS[key](quick=quick, **({"part": part} if key in PARTS else {}), **({"plot": plot} if plot else {}),
                           **({"data_dir": data_dir} if key in READS_DATA else {}))
    rep.elapsed = time.perf_counter() - t0
    return rep
