"""Identify the real Stäubli TX40 data set and compare with its authors' published result. JSON out.

    python bench/tx40/run.py
"""

import json
import sys
from pathlib import Path

import numpy as np

from robodyn.identification.datasets import tx40
from robodyn.identification.pipeline import IdentificationConfig, identify
from robodyn.robot.urdf import model_from_urdf

DATA = tx40.DATA_DIR


def main() -> int:
    model = model_from_urdf(DATA / "tx40_mdh_modified.urdf")
    data = tx40.load(DATA)
    rows = {}
    for method in ("ols", "wls"):
        cfg = IdentificationConfig(method=method, friction="coulomb-viscous", processing=tx40.PROCESSING,
                                   motor_couplings=(tx40.WRIST_COUPLING,))
        doc = identify(model, [data], cfg, sources=[str(DATA)]).to_dict()
        m = doc["metrics"]["identification"]
        rows[method] = {"equations": doc["estimate"]["rows"], "base_parameters": doc["base"]["count"],
                        "rmse_all_rows": float(np.sqrt(np.mean(np.square(m["rmse"])))),
                        "rmse_per_joint": m["rmse"], "relative_residual": doc["estimate"]["relative_residual"],
                        "cond": doc["estimate"]["cond"]}
    print(json.dumps({"benchmark": "tx40_real_data", "robodyn": rows, "published": tx40.PUBLISHED,
                      "ratio_wls_rmse_to_published": rows["wls"]["rmse_all_rows"] / tx40.PUBLISHED["wls_rmse"]},
                     indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
