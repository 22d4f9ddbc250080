"""Where the UR10e walk-through's validation error comes from, per joint: JSON out.

    python bench/realdata/ur10e_error_sources.py --data-dir DIR [--out bench/realdata/ur10e_error_sources.json]

DIR is a copy of Mamedov & Mikhel's dynamic_calibration repository (a checkout, a bare clone or a
folder of its CSVs; no licence, so nothing of it ships and nothing of it is written here: the JSON
holds only statistics). The identification and validation are those of ``robodyn reproduce ur10e``
(robodyn/reproduce/ur10e_walkthrough.py: OLS on main.m's identification log with the stored drive
gains, validated on main.m's point-to-point log against the raw current x gain), unchanged. What is
measured, per joint, on the validation log:

- ``measured``: RMS, mean and standard deviation of the raw current x gain, and the current's
  resolution (its smallest step, x gain);
- ``noise``: raw minus the filterData.m-filtered current x gain, and the relative error that
  difference alone would give (a floor no model of the filtered signal can pass);
- ``prediction_parts``: RMS over the log of the prediction's rigid-body part (inertia, gravity,
  rotor) and of its fv qd, fc sgn(qd) and f0 terms;
- ``residual``: the error split by a least-squares projection of it onto [1], [1, sgn qd] and
  [1, sgn qd, qd] of the joint's own filtered velocity (a DIAGNOSTIC fit on the validation log,
  never fed back into the model): the relative error left after each, i.e. how much of it an
  offset, a Coulomb and a viscous term could explain; the friction values that projection implies
  beside the identified ones;
- ``still``: the share of samples near rest (|qd| under 2 % of the joint's largest identified
  speed, identification/coverage.py's definition) in both logs, the share of the squared error
  they carry, the relative error of the moving samples alone, the measured torque at rest beside
  the prediction's Coulomb term there (and how often its sign flips), and the error with that term
  left out at rest (a diagnostic, no parameter fitted);
- ``extrapolation``: the identification log's q, qd, qdd ranges and the fraction of validation
  samples outside each.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from robodyn.identification.coverage import STILL_RELATIVE
from robodyn.identification.datasets import ur10e as ds
from robodyn.reproduce.ur10e_walkthrough import JOINTS, Walkthrough, data_directory, relative_error_percent
from robodyn.robot.urdf import model_from_urdf


def _rel(err: np.ndarray, measured: np.ndarray) -> float:
    return float(100.0 * np.linalg.norm(err) / np.linalg.norm(measured))


def _project_out(e: np.ndarray, columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """e minus its least-squares projection on the columns; and the coefficients."""
    A = np.column_stack(columns)
    c = np.linalg.lstsq(A, e, rcond=None)[0]
    return e - A @ c, c


def joint_report(j: int, walk: Walkthrough, theta: np.ndarray, ident, val) -> dict:
    names = walk.base.names
    gain = walk.gains[j]
    measured = val.raw.current[:, j] * gain
    filtered = val.current[:, j] * gain
    rows = walk.rows(val)  # (N*6, b), sample-major
    rows_j = rows[j::walk.model.dof]
    predicted = rows_j @ theta
    err = measured - predicted
    # a joint's friction columns are never grouped with others (each is the only column of its kind)
    friction_cols = {kind: names.index(f"{kind}{j + 1}") for kind in ("FV", "FC", "FO")}
    parts = {kind: rows_j[:, k] * theta[k] for kind, k in friction_cols.items()}
    rigid = predicted - sum(parts.values())
    qd = val.qd[:, j]
    # the regressor's own friction columns of the joint (1, sgn qd, qd), so the implied values are exact
    one, sgn, vis = (rows_j[:, friction_cols[kind]] for kind in ("FO", "FC", "FV"))
    left_offset, c0 = _project_out(err, [one])
    left_coulomb, c1 = _project_out(err, [one, sgn])
    left_viscous, c2 = _project_out(err, [one, sgn, vis])
    steps = np.diff(np.unique(val.raw.current[:, j]))
    speed_max = float(np.max(np.abs(ident.qd[:, j])))
    still_val = np.abs(qd) <= STILL_RELATIVE * speed_max
    still_ident = np.abs(ident.qd[:, j]) <= STILL_RELATIVE * speed_max
    outside = {}
    for name, a_id, a_val in (("q", ident.q, val.q), ("qd", ident.qd, val.qd), ("qdd", ident.qdd, val.qdd)):
        lo, hi = float(a_id[:, j].min()), float(a_id[:, j].max())
        v = a_val[:, j]
        outside[name] = {"identified_range": [lo, hi], "validation_range": [float(v.min()), float(v.max())],
                         "fraction_outside": float(np.mean((v < lo) | (v > hi)))}
    identified = {kind: float(theta[k]) for kind, k in friction_cols.items()}
    fit_measured = ident.raw.current[:, j] * gain
    fit_err = fit_measured - walk.rows(ident)[j::walk.model.dof] @ theta
    return {
        "joint": JOINTS[j],
        "relative_error_percent": _rel(err, measured),
        "identification_fit_relative_error_percent": _rel(fit_err, fit_measured),
        "identification_measured_rms_Nm": float(np.sqrt(np.mean(fit_measured ** 2))),
        "rmse_Nm": float(np.sqrt(np.mean(err ** 2))),
        "measured": {"rms_Nm": float(np.sqrt(np.mean(measured ** 2))), "mean_Nm": float(measured.mean()),
                     "std_Nm": float(measured.std()),
                     "resolution_Nm": float(steps[steps > 0].min() * gain) if np.any(steps > 0) else None},
        "noise": {"rms_Nm": float(np.sqrt(np.mean((measured - filtered) ** 2))),
                  "relative_error_percent": _rel(measured - filtered, measured),
                  "filtered_prediction_relative_error_percent": _rel(filtered - predicted, measured)},
        "prediction_parts": {"rigid_rms_Nm": float(np.sqrt(np.mean(rigid ** 2))),
                             **{f"{kind}_rms_Nm": float(np.sqrt(np.mean(p ** 2))) for kind, p in parts.items()}},
        "residual": {"mean_Nm": float(err.mean()),
                     "relative_error_percent": {"as_validated": _rel(err, measured),
                                                "offset_removed": _rel(left_offset, measured),
                                                "offset_coulomb_removed": _rel(left_coulomb, measured),
                                                "offset_coulomb_viscous_removed": _rel(left_viscous, measured)},
                     "identified": identified,
                     "implied_by_validation_log": {"FO": identified["FO"] + float(c2[0]),
                                                   "FC": identified["FC"] + float(c2[1]),
                                                   "FV": identified["FV"] + float(c2[2])},
                     "projection_coefficients": {"offset": c0.tolist(), "offset_coulomb": c1.tolist(),
                                                 "offset_coulomb_viscous": c2.tolist()}},
        "still": {"threshold_rad_s": STILL_RELATIVE * speed_max,
                  "identification_fraction": float(still_ident.mean()), "validation_fraction": float(still_val.mean()),
                  "squared_error_share": float(np.sum(err[still_val] ** 2) / np.sum(err ** 2)),
                  "relative_error_percent_moving_only": _rel(err[~still_val], measured[~still_val])
                  if np.any(~still_val) else None,
                  "measured_rms_Nm_still": float(np.sqrt(np.mean(measured[still_val] ** 2))),
                  "measured_percentiles_5_95_Nm_still": np.percentile(measured[still_val], [5, 95]).tolist(),
                  # sgn(qd) changing between two neighbouring still samples: the Coulomb term's chatter
                  "coulomb_sign_changes_while_still": int(np.sum(still_val[1:] & still_val[:-1]
                                                                 & (np.sign(qd[1:]) != np.sign(qd[:-1])))),
                  "predicted_coulomb_rms_Nm_still": float(np.sqrt(np.mean(parts["FC"][still_val] ** 2))),
                  # the same prediction with the Coulomb term left out near rest, where sgn(qd) is the sign
                  # of the filtered velocity's noise (a diagnostic with coverage.py's fixed threshold)
                  "relative_error_percent_coulomb_off_when_still": _rel(err + np.where(still_val, parts["FC"], 0.0),
                                                                        measured)},
        "extrapolation": outside,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=None, help="a copy of the dynamic_calibration repository "
                                                    "(default: the environment variable ROBODYN_UR10E_DATA)")
    p.add_argument("--out", default=None, help="JSON file (default: stdout)")
    a = p.parse_args()
    files = ds.locate(data_directory(a.data_dir))
    model = model_from_urdf(files.urdf_text(), name="ur10e (dynamic_calibration URDF)")
    walk = Walkthrough(model, ds.DRIVE_GAINS)

    def filtered(name):
        return ds.filter_log(files.log(name).rows(*ds.TRIMMED_ROWS[name]))

    ident, val = filtered(ds.IDENTIFICATION_LOG), filtered(ds.VALIDATION_LOG)
    theta = walk.identify(ident).theta
    check = relative_error_percent(val.raw.current * walk.gains, walk.predict(val, theta))
    out = {"command": "python bench/realdata/ur10e_error_sources.py --data-dir dynamic_calibration",
           "origin": f"real (UR10e, identified on {ds.IDENTIFICATION_LOG} rows {ds.TRIMMED_ROWS[ds.IDENTIFICATION_LOG]}, "
                     f"validated on {ds.VALIDATION_LOG} rows {ds.TRIMMED_ROWS[ds.VALIDATION_LOG]})",
           "relative_error_percent": check.tolist(),
           "joints": [joint_report(j, walk, theta, ident, val) for j in range(model.dof)]}
    text = json.dumps(out, indent=1) + "\n"
    if a.out:
        Path(a.out).write_text(text)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
