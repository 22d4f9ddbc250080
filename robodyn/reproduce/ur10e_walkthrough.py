"""The UR10e identification of Mamedov & Mikhel 2020 ("Practical Aspects of Model-Based Collision
Detection", and the practitioner's blog that walks through its repository), done the way the
repository dynamic_calibration does it, on the repository's own real UR10e logs.

Its steps (main.m) and robodyn's counterpart of each:

1. the regressor of the repository's URDF (URe/urdf/ur10e.urdf) with a rotor inertia per joint
   (regressorWithMotorDynamics.m: 11 parameters per link) and friction fv qd + fc sgn(qd) + f0 per
   joint (frictionRegressor.m): robodyn's regressor of that URDF with ColumnSpec(rotor_inertia,
   viscous, coulomb, offset);
2. base parameters by QR with pivoting (base_params_qr.m): robodyn's base_parameters;
3. drive gains: the repository's stored PC-OLS estimate (UR10E_parameters.txt), used as they are;
4. processing (filterData.m): datasets.ur10e.filter_log;
5. OLS on the identification log main.m names (estimate_dynamic_params.m, ordinaryLeastSquareEstimation;
   main.m itself runs the SDP variant, which needs YALMIP and SDPT3);
6. validation (validate_dynamic_params.m): prediction from the filtered states against the RAW
   current x gain, per-joint relative error 100 ||tau_m - tau_p|| / ||tau_m||, here beside the RMSE.

The data are not shipped (the repository has no licence): the command reads them from --data-dir
or ROBODYN_UR10E_DATA (datasets.ur10e.locate).
"""

from __future__ import annotations

import os

import numpy as np

from robodyn.errors import UserError

from .report import Finding, Reproduction, Row, Table

DATA_ENV = "ROBODYN_UR10E_DATA"
JOINTS = ("shoulder pan", "shoulder lift", "elbow", "wrist 1", "wrist 2", "wrist 3")
# the repository's counts: 11 standard parameters per link (base_params_qr.m with motor dynamics),
# 40 of them base (estimate_dynamic_params.m: pi_OLS(1:40)), and 3 friction parameters per joint
REPOSITORY_COUNTS = {"standard": 66, "base": 40, "friction": 18}
# estimate_drive_gains.m: the unloaded and loaded runs of one trajectory, and the payload's mass (kg)
GAIN_LOGS = ("ur-20_02_19_14harm50sec.csv", "ur-20_02_19_14harm50secLoad.csv")
PAYLOAD_KG = 2.805


def relative_error_percent(measured: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """Per joint 100 ||tau_m,j - tau_p,j|| / ||tau_m,j|| over the samples (validate_dynamic_params.m)."""
    measured, predicted = np.asarray(measured, float), np.asarray(predicted, float)
    return 100.0 * np.linalg.norm(measured - predicted, axis=0) / np.linalg.norm(measured, axis=0)


def rmse(measured: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """Per-joint root-mean-square error over the samples."""
    return np.sqrt(np.mean((np.asarray(measured, float) - np.asarray(predicted, float)) ** 2, axis=0))


def data_directory(data_dir: str | None) -> str:
    """The folder of the repository's data: the argument, else ROBODYN_UR10E_DATA; one line if neither."""
    from robodyn.identification.datasets.ur10e import CLONE_URL

    folder = data_dir or os.environ.get(DATA_ENV)
    if not folder:
        raise UserError(f"data-dir: the walk-through's UR10e logs are not shipped (their repository has no licence); "
                        f"git clone {CLONE_URL} and give its folder with --data-dir DIR or {DATA_ENV}=DIR")
    return folder


class Walkthrough:
    """The repository's model, base parameters and gains, and robodyn's regressor over them."""

    def __init__(self, model, gains):
        from robodyn.identification.base_params import base_parameters
        from robodyn.identification.regressor import ColumnSpec

        self.model = model
        self.spec = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))
        self.base = base_parameters(model, self.spec)
        self.gains = np.asarray(gains, float)

    def rows(self, flog) -> np.ndarray:
        """Base regressor (N*6, b), sample-major: filtered velocity and estimated acceleration, logged q."""
        from robodyn.identification.regressor import regressor

        return self.base.base_regressor(regressor(self.model, flog.q, flog.qd, flog.qdd, self.spec))

    def identify(self, flog):
        """OLS on the filtered current x gain (estimate_dynamic_params.m, method 'OLS')."""
        from robodyn.identification.estimators import NormalEquations, ols

        ne = NormalEquations(self.model.dof, self.base.count)
        ne.add(self.rows(flog), flog.current * self.gains)
        return ols(ne, self.base.names)

    def predict(self, flog, theta) -> np.ndarray:
        return (self.rows(flog) @ theta).reshape(flog.q.shape)

    def validate(self, flog, theta) -> dict:
        """The repository's validation: prediction against the raw current x gain."""
        measured = flog.raw.current * self.gains
        predicted = self.predict(flog, theta)
        return {"relative_error_percent": relative_error_percent(measured, predicted),
                "rmse_Nm": rmse(measured, predicted), "samples": int(measured.shape[0]),
                "at_rest_fraction": float(np.mean(np.all(np.abs(flog.qd) < 0.01, axis=1))),
                "measured_rms_Nm": np.sqrt(np.mean(measured ** 2, axis=0))}


def drive_gains_ols(walk: Walkthrough, unloaded, loaded, payload_kg: float = PAYLOAD_KG) -> np.ndarray:
    """The drive gains of estimate_drive_gains.m's OLS branch: one least-squares system over an
    unloaded and a loaded run, K_j i_j - W theta (- W_load pi_load in the loaded run) = 0, with
    the arm's base and friction parameters, the payload's first moments and inertia unknown and its
    known mass moving the right-hand side (it fixes the scale K and theta share). The payload is
    rigid with the last link, so its columns are that link's ten."""
    from robodyn.identification.regressor import ColumnSpec, regressor

    def currents(flog):
        n, dof = flog.current.shape
        out = np.zeros((n * dof, dof))
        for j in range(dof):
            out[j::dof, j] = flog.current[:, j]
        return out

    last = 10 * (walk.model.dof - 1)
    w_load = regressor(walk.model, loaded.q, loaded.qd, loaded.qdd, ColumnSpec())[:, last:last + 10]
    w_unloaded, w_loaded = walk.rows(unloaded), walk.rows(loaded)
    A = np.block([[currents(unloaded), -w_unloaded, np.zeros((w_unloaded.shape[0], 9))],
                  [currents(loaded), -w_loaded, -w_load[:, :9]]])
    b = np.concatenate([np.zeros(w_unloaded.shape[0]), payload_kg * w_load[:, 9]])
    return np.linalg.lstsq(A, b, rcond=None)[0][:walk.model.dof]


def compare_models(builtin, repository, samples: int = 200, seed: int = 0) -> dict:
    """robodyn's built-in UR10e against the repository's URDF: joint axes (direction and offset of
    each axis line) and flange position over random joint values, and the limits. The built-in base
    frame is ROS base_link turned by pi about z (ur10e.toml), so that turn is undone first."""
    from robodyn.robot.kinematics import forward_kinematics, joint_frames

    rng = np.random.default_rng(seed)
    q = rng.uniform(-np.pi, np.pi, size=(samples, builtin.dof))
    turn = np.diag([-1.0, -1.0, 1.0])
    fa, fb = joint_frames(builtin, q), joint_frames(repository, q)
    za, zb = fa[..., :3, 2] @ turn.T, fb[..., :3, 2]
    oa, ob = fa[..., :3, 3] @ turn.T, fb[..., :3, 3]
    cos = np.clip(np.sum(za * zb, axis=-1), -1.0, 1.0)
    d = ob - oa
    offset = np.linalg.norm(d - np.sum(d * za, axis=-1, keepdims=True) * za, axis=-1)
    flange = np.linalg.norm(forward_kinematics(builtin, q)[..., :3, 3] @ turn.T
                            - forward_kinematics(repository, q)[..., :3, 3], axis=-1)
    limits = {f: {"builtin": getattr(builtin, f).tolist(), "repository": getattr(repository, f).tolist()}
              for f in ("q_min", "q_max", "qd_max", "tau_max")}
    return {"axis_angle_deg_max": float(np.degrees(np.arccos(cos)).max()),
            "axis_offset_mm_max": float(1000 * offset.max()), "flange_mm_max": float(1000 * flange.max()),
            "same_axis_sense": bool(np.all(cos > 0.999)), "limits": limits,
            "masses": {"builtin": builtin.inertial[:, 9].tolist(), "repository": repository.inertial[:, 9].tolist()}}


def _limits_text(limits: dict) -> str:
    same = [f for f, v in limits.items() if np.allclose(v["builtin"], v["repository"], rtol=1e-3)]
    differ = [f"{f} URDF {np.round(v['repository'], 2).tolist()} against the built-in "
              f"{np.round(v['builtin'], 2).tolist()}" for f, v in limits.items() if f not in same]
    return ("limits " + ", ".join(same) + " equal" if same else "no limit equal") + \
        ("; " + "; ".join(differ) if differ else "")


def reproduce_ur10e(quick: bool = False, data_dir: str | None = None) -> Reproduction:
    from robodyn.identification.datasets import ur10e as ds
    from robodyn.identification.regressor import ColumnSpec, regressor, standard_parameter_vector
    from robodyn.robot.loader import load_model
    from robodyn.robot.urdf import model_from_urdf

    files = ds.locate(data_directory(data_dir))
    model = model_from_urdf(files.urdf_text(), name="ur10e (dynamic_calibration URDF)")
    builtin = load_model("ur10e")
    kin = compare_models(builtin, model)
    walk = Walkthrough(model, ds.DRIVE_GAINS)

    def filtered(name):
        log = files.log(name)
        return ds.filter_log(log.rows(*ds.TRIMMED_ROWS[name]) if name in ds.TRIMMED_ROWS else log)

    ident_name, val_name = ds.IDENTIFICATION_LOG, ds.VALIDATION_LOG
    ident, val = filtered(ident_name), filtered(val_name)
    est = walk.identify(ident)
    fit = walk.validate(ident, est.theta)
    headline = walk.validate(val, est.theta)
    cmd = "robodyn reproduce ur10e --data-dir dynamic_calibration" + (" --quick" if quick else "")
    rows_i, rows_v = ds.TRIMMED_ROWS[ident_name], ds.TRIMMED_ROWS[val_name]
    real_v = f"real (UR10e, {val_name} rows {rows_v[0]}-{rows_v[1]}; identified on {ident_name} rows " \
             f"{rows_i[0]}-{rows_i[1]})"
    real_i = f"real (UR10e, {ident_name} rows {rows_i[0]}-{rows_i[1]}, the identification log itself)"
    details = {"model_check": kin, "base_count": walk.base.count, "base_names": walk.base.names,
               "drive_gains": ds.DRIVE_GAINS.tolist(), "identification_log": ident_name,
               "identification_rows": list(rows_i), "validation_log": val_name, "validation_rows": list(rows_v),
               "estimate": {"theta": est.theta, "relative_std_percent": est.relative_std_percent, "cond": est.cond,
                            "rows": est.rows, "relative_residual": est.relative_residual},
               "identification_fit": fit, "validation": headline}

    rep = Reproduction("ur10e", "The repository's own real UR10e logs, processed, identified and validated as its "
                                "MATLAB code does: regressor of its URDF with a rotor inertia and fv, fc, f0 friction "
                                "per joint; base parameters by QR; torque = motor current x its stored drive gains "
                                f"{np.round(ds.DRIVE_GAINS, 4).tolist()} (UR10E_parameters.txt); filterData.m's "
                                "zero-phase 5th-order Butterworth filters (velocity and acceleration 0.15, current 0.20 "
                                "of Nyquist), acceleration by central differences of the filtered velocity; OLS on "
                                f"{ident_name} (main.m's rows {rows_i[0]}-{rows_i[1]}); validation on {val_name} "
                                f"(rows {rows_v[0]}-{rows_v[1]}) against the raw current x gain. Data read from the "
                                "user's copy of the repository (not shipped: no licence).")
    repo_code = "own-model (the repository's code: counts, no data)"
    structural = "own-model (robodyn's regressor of the repository's URDF: counts, no data)"
    rep.tables.append(Table("Parameters (base_params_qr.m, regressorWithMotorDynamics.m, frictionRegressor.m)", [
        Row("standard parameters (10 inertial + rotor inertia per link)", str(REPOSITORY_COUNTS["standard"]),
            len(walk.base.standard_names) - 18, cmd, structural, paper_origin=repo_code),
        Row("base parameters of links and rotors", str(REPOSITORY_COUNTS["base"]), walk.base.count - 18, cmd,
            structural, paper_origin=repo_code),
        Row("friction parameters (fv, fc, f0 per joint)", str(REPOSITORY_COUNTS["friction"]), 18, cmd, structural,
            paper_origin=repo_code),
        Row("all columns, 14 per joint (the blog's extended vector) -> base columns",
            f"{6 * 14} -> {REPOSITORY_COUNTS['base'] + REPOSITORY_COUNTS['friction']}",
            f"{len(walk.base.standard_names)} -> {walk.base.count}", cmd, structural, paper_origin=repo_code),
    ]))
    val_rows = [Row(f"relative error {j + 1} {JOINTS[j]} (%)", None, float(headline["relative_error_percent"][j]),
                    cmd, real_v, note="100 norm(tau_m - tau_p) / norm(tau_m), tau_m = raw current x gain")
                for j in range(6)]
    val_rows += [Row(f"RMSE {j + 1} {JOINTS[j]} (N.m)", None, float(headline["rmse_Nm"][j]), cmd, real_v,
                     note=f"measured RMS {headline['measured_rms_Nm'][j]:.3g} N.m")
                 for j in range(6)]
    rep.tables.append(Table(f"Validation on the real UR10e, without the inverse crime (validate_dynamic_params.m: "
                            f"identified on {ident_name}, predicted on {val_name})", val_rows,
                            own_model_allowed=False))
    side = [Row("identification fit, relative error, mean of 6 joints (%)", None,
                float(np.mean(fit["relative_error_percent"])), cmd, real_i),
            Row("identification fit, RMSE, mean of 6 joints (N.m)", None, float(np.mean(fit["rmse_Nm"])), cmd, real_i),
            Row("cond(base regressor) of the identification log", None, est.cond, cmd, real_i)]
    if not quick:
        side += _side_rows(files, ds, walk, model, builtin, est.theta, val, cmd, details)
    rep.tables.append(Table("Beside the headline: the fit itself, other logs, other gains and models (real data)",
                            side, own_model_allowed=False))
    nominal_spec = ColumnSpec()
    tau_nominal = (regressor(model, val.q, val.qd, val.qdd, nominal_spec)
                   @ standard_parameter_vector(model, nominal_spec)).reshape(val.q.shape)
    nominal = relative_error_percent(val.raw.current * ds.DRIVE_GAINS, tau_nominal)
    details["nominal_relative_error_percent"] = nominal
    rep.tables.append(Table("The URDF's own inertial parameters, no friction, on the same validation log", [
        Row(f"relative error {j + 1} {JOINTS[j]} (%)", None, float(nominal[j]), cmd,
            f"real (UR10e, {val_name} rows {rows_v[0]}-{rows_v[1]}; nominal URDF parameters, nothing identified)")
        for j in range(6)], own_model_allowed=False))
    builtin_effect = ""
    if "builtin_kinematics" in details:
        gap = np.abs(details["builtin_kinematics"]["relative_error_percent"] - headline["relative_error_percent"])
        builtin_effect = (f"; identified and validated with the built-in kinematics instead, the per-joint relative "
                          f"errors move by at most {gap.max():.2g} percentage points")
    rep.findings.append(Finding(
        "robodyn's built-in ur10e against the repository's URDF", "kinematics and limits compared",
        f"same joint order and axis senses ({'yes' if kin['same_axis_sense'] else 'NO'}); axes within "
        f"{kin['axis_angle_deg_max']:.2g} deg and {kin['axis_offset_mm_max']:.2f} mm, flange within "
        f"{kin['flange_mm_max']:.2f} mm over 200 random poses (the URDF rounds UR's lengths to the mm); "
        f"{_limits_text(kin['limits'])}; masses differ (URDF {np.round(kin['masses']['repository'], 3).tolist()} kg "
        f"against the built-in {np.round(kin['masses']['builtin'], 3).tolist()}), which OLS does not use. The "
        "reproduction uses the repository's URDF" + builtin_effect, cmd,
        kind="reached"))
    rep.findings.append(Finding(
        "the walk-through's identification", "method",
        "main.m runs the physically consistent SDP (PC-OLS, YALMIP + SDPT3) for both the drive gains and the "
        "parameters; robodyn runs the repository's OLS branch (ordinaryLeastSquareEstimation) with the stored PC-OLS "
        "gains. The repository publishes no validation figures, so no row has a paper value", cmd,
        kind="about the paper"))
    rep.findings.append(Finding(
        "the walk-through's 70 -> 43 base parameters and < 0.001 N.m", "not run",
        "Those are the blog's simulated 7-DOF arm (torques from its own model: an inverse crime), not the UR10e; "
        f"for the repository's 6-DOF UR10e with rotors robodyn finds {walk.base.count - 18} base parameters of "
        "links and rotors, as its code's 40", cmd))
    rep.details = details
    return rep


def _log_label(name: str) -> str:
    """'p3' for ur-20_01_17-p3.csv: the short name of a point-to-point log."""
    return name.rsplit("-", 1)[-1].removesuffix(".csv")


def point_to_point_rows(p2p: dict, expected, identification_log: str, cmd: str) -> tuple[list[Row], dict]:
    """The rows of the point-to-point logs that were found (``p2p``: log name -> validation), named by
    the logs they average; when some of ``expected`` are missing, the rows say how many were found and
    which are missing, and their values are marked as not the mean over all of them."""
    if not p2p:
        return [], {"point_to_point_found": [], "point_to_point_missing": [_log_label(n) for n in expected]}
    found = [_log_label(n) for n in expected if n in p2p]
    missing = [_log_label(n) for n in expected if n not in p2p]
    details = {"point_to_point_found": found, "point_to_point_missing": missing}
    per_joint = np.array([v["relative_error_percent"] for v in p2p.values()])
    details["point_to_point_mean_relative_error_percent"] = per_joint.mean(axis=0)
    measured = np.array([v["measured_rms_Nm"] for v in p2p.values()]).mean(axis=0)
    details["point_to_point_mean_measured_rms_Nm"] = measured
    rest = float(np.mean([v["at_rest_fraction"] for v in p2p.values()]))
    details["point_to_point_at_rest_fraction"] = rest
    logs = f"{len(found)} of the {len(expected)} point-to-point logs ({', '.join(found)})"
    origin = (f"real (UR10e, {logs}, whole logs ur-20_01_17-pK.csv; identified on {identification_log})")
    incomplete = (f"; INCOMPLETE: {', '.join(missing)} not found in the data folder, so this is not the mean over "
                  f"all {len(expected)} logs" if missing else "")
    mean_over = "mean over the log" if len(found) == 1 else "mean over the logs"
    rows = [Row(f"{logs}: relative error per joint, {mean_over} (%)", None,
                " / ".join(f"{x:.1f}" for x in per_joint.mean(axis=0)), cmd, origin,
                note=f"whole logs (the repository gives no row range for them); {100 * rest:.0f} % of their "
                     "samples have every joint below 0.01 rad/s: the arm holds each point, so they test "
                     "gravity, and fc sgn(qd) follows the sign of the filtered velocity's noise; measured "
                     "RMS " + " / ".join(f"{x:.2g}" for x in measured) + " N.m" + incomplete)]
    rmses = np.array([v["rmse_Nm"] for v in p2p.values()])
    rows.append(Row(f"{logs}: RMSE per joint, {mean_over} (N.m)", None,
                    " / ".join(f"{x:.2f}" for x in rmses.mean(axis=0)), cmd, origin,
                    note=incomplete.removeprefix("; ")))
    return rows, details


def _side_rows(files, ds, walk, model, builtin, theta, val, cmd, details) -> list[Row]:
    """The other identification logs main.m lists, the ten point-to-point logs, De Luca's gains and
    the built-in model's kinematics, each scored on the validation log like the headline."""
    rows = []
    val_name, rows_v = ds.VALIDATION_LOG, ds.TRIMMED_ROWS[ds.VALIDATION_LOG]
    others = {}
    for name in ("ur-20_02_12-40sec_12harm.csv", "ur-20_02_05-20sec_8harm.csv", "ur-20_02_12-50sec_12harm.csv"):
        if not files.has(name):  # a folder with some of the logs: the rows it can fill
            continue
        flog = ds.filter_log(files.log(name).rows(*ds.TRIMMED_ROWS[name]))
        others[name] = walk.validate(val, walk.identify(flog).theta)
    details["other_identification_logs"] = others
    for name, v in others.items():
        first, last = ds.TRIMMED_ROWS[name]
        rows.append(Row(f"identified on {name}: relative error, mean of 6 joints (%)", None,
                        float(np.mean(v["relative_error_percent"])), cmd,
                        f"real (UR10e, identified on {name} rows {first}-{last}, validated on {val_name})"))
    p2p = {}
    for name in ds.POINT_TO_POINT_LOGS:
        if files.has(name):
            p2p[name] = walk.validate(ds.filter_log(files.log(name)), theta)
    details["point_to_point"] = p2p
    p2p_rows, p2p_details = point_to_point_rows(p2p, ds.POINT_TO_POINT_LOGS, ds.IDENTIFICATION_LOG, cmd)
    rows += p2p_rows
    details.update(p2p_details)
    ident = ds.filter_log(files.log(ds.IDENTIFICATION_LOG).rows(*ds.TRIMMED_ROWS[ds.IDENTIFICATION_LOG]))

    def variant_row(walkthrough, label: str, setup: str) -> dict:
        """Identify on the identification log with this variant, validate, and add its row."""
        v = walkthrough.validate(val, walkthrough.identify(ident).theta)
        rows.append(Row(f"{label}: relative error per joint (%)", None,
                        " / ".join(f"{x:.1f}" for x in v["relative_error_percent"]), cmd,
                        f"real (UR10e, {val_name} rows {rows_v[0]}-{rows_v[1]}; {setup})"))
        return v

    details["de_luca_gains"] = variant_row(Walkthrough(model, ds.DE_LUCA_GAINS),
                                           "with the gains main.m attributes to De Luca",
                                           f"gains {ds.DE_LUCA_GAINS.tolist()}")
    if all(files.has(n) for n in GAIN_LOGS):
        unloaded, loaded = (ds.filter_log(files.log(n).rows(*ds.TRIMMED_ROWS[n])) for n in GAIN_LOGS)
        gains = drive_gains_ols(walk, unloaded, loaded)
        origin = (f"real (UR10e, {GAIN_LOGS[0]} rows {ds.TRIMMED_ROWS[GAIN_LOGS[0]][0]}-"
                  f"{ds.TRIMMED_ROWS[GAIN_LOGS[0]][1]} and {GAIN_LOGS[1]} rows {ds.TRIMMED_ROWS[GAIN_LOGS[1]][0]}-"
                  f"{ds.TRIMMED_ROWS[GAIN_LOGS[1]][1]}, payload {PAYLOAD_KG} kg)")
        rows.append(Row("drive gains by the repository's OLS branch, joints 1-6 (N.m/A)",
                        " / ".join(f"{g:.4f}" for g in ds.DRIVE_GAINS), " / ".join(f"{g:.3f}" for g in gains), cmd,
                        origin, paper_origin="real (the repository's logs; its stored PC-OLS estimate, constrained "
                                             "to K1 > 10, UR10E_parameters.txt)",
                        note="joint 1 carries no gravity, so the payload changes only its inertial torques and "
                             "its gain is weakly determined; the repository constrains it to K1 > 10"))
        details["drive_gains_ols"] = {"gains": gains, "validation": variant_row(
            Walkthrough(model, gains), "with those OLS gains", "gains from the two runs above")}
    details["builtin_kinematics"] = variant_row(Walkthrough(builtin, ds.DRIVE_GAINS),
                                                "with robodyn's built-in ur10e kinematics", "built-in DH model")
    return rows
