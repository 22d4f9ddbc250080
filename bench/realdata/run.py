"""bench/realdata: identification on real logs, judged against the measured torque. JSON out.

A data set with a second trajectory of the same arm identifies on one and predicts the other; the
others are split by time: the first 60 % identifies, the last 40 % is held out and predicted
(HELD_OUT below). Rows per data set:

- ``plain_ols``: the careful reference script a user would write (loro.py ``plain_script``): q and
  qd low-passed at 10 Hz (zero phase), qdd differentiated from the filtered qd, least squares on
  the full regressor with viscous, Coulomb and offset friction, the torque never filtered;
  ``plain_ols_filtered_torque``: identification/baseline.py's, which low-passes the torque too;
- ``default``: ``robodyn identify`` with no options (automatic cut-off judged on held-out data, WLS,
  Coulomb-viscous; ``identification.methods.identification_result``, the command's own call);
- ``selected``: ``robodyn identify --select`` (friction x rotor inertia x estimator, chosen by blocked
  cross-validation in 5 blocks of the identification part -- by phase of the period when its
  excitation repeats, else contiguous -- and the one-standard-error rule), with every candidate's mean, spread and standard error over the folds;
- ``ceiling``: the default configuration fitted on the held-out data itself (the best this model
  class can do there);
- ``interval``: the default's nominal 95 % prediction interval (identification/intervals.py), the
  fraction of held-out samples inside per joint, and the extrapolation warnings
  (identification/coverage.py) on the held-out data.

Data sets:

- ``tx40``: the real Stäubli TX40 log in identification/datasets/staubli_tx40 (figaroh-plus, Apache-2.0), 5 kHz
  motor-side data, coupled wrist;
- ``panda`` (optional, ``--panda-log DIR``): the real 1 kHz Franka Panda excitation log of Gaz et al.
  2019 (github.com/marcocognetti/FrankaEmikaPandaDynModel, GPL-3.0, never shipped;
  identification/datasets/gaz2019.py): DIR holds exciting_traj_{time,positions,velocity,torques}.txt;
- ``ur10e`` (optional, ``--ur10e-log DIR``): the real UR10e logs of Mamedov & Mikhel's
  dynamic_calibration repository (no licence: never shipped; DIR is a checkout, a bare clone or a
  folder of its CSVs, identification/datasets/ur10e.py), torque = current x the repository's drive
  gains: identified on its 12-harmonic excitation (``main.m``'s log and rows), predicted on its
  point-to-point validation run (a second trajectory, held out whole);
- ``franka_like`` / ``ur_like`` (``--sims``): realistic simulated logs (identification/realistic_logs.py).

    .venv/bin/python bench/realdata/run.py [--panda-log DIR] [--ur10e-log DIR] [--sims] [--out bench/realdata/result.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

# as the robodyn command sets it (robodyn/cli.py): one OpenBLAS thread, set before numpy loads it,
# so that the timings below are the command's
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # loro.py's plain script
HELD_OUT = 0.4  # last 40 % of each recording, by time


def evaluate(name: str, model, data, couplings=(), select: bool = True, held=None, split: str = "") -> dict:
    """The rows of one data set: ``held`` (another trajectory, described by ``split``) is predicted
    when given, else the last HELD_OUT of ``data`` by time."""
    from robodyn.identification.baseline import plain_ols
    from loro import plain_script  # the careful script, beside this file
    from robodyn.identification.methods import identification_result
    from robodyn.identification.pipeline import IdentificationConfig, identify, validate
    from robodyn.identification.selection import split_by_time

    if held is None:
        fit, held = split_by_time(data, HELD_OUT)
        split = f"first {1 - HELD_OUT:.0%} identifies, last {HELD_OUT:.0%} held out, by time"
    else:
        fit = data
    out = {"data": name, "samples": fit.count + held.count, "split": split,
           "against": "measured torque at the measured samples"}
    t0 = time.perf_counter()
    # the careful plain script a user would write (loro.py): q and qd low-passed at 10 Hz, the
    # torque never filtered, ordinary least squares on the full regressor with friction
    plain = plain_script(model, fit, held, motor_couplings=couplings)
    out["plain_ols"] = {**plain, "seconds": round(time.perf_counter() - t0, 2),
                        "of": "the careful plain script (bench/realdata/loro.py plain_script)"}
    t0 = time.perf_counter()
    out["plain_ols_filtered_torque"] = {**plain_ols(model, fit, held, motor_couplings=couplings),
                                        "seconds": round(time.perf_counter() - t0, 2),
                                        "of": "identification/baseline.py plain_ols: the torque low-passed too"}
    config = IdentificationConfig(motor_couplings=couplings)
    t0 = time.perf_counter()
    # what `robodyn identify` does with no options (its cut-off judged on held-out data)
    default = identification_result(model, [fit], config, config.method, choose_method=True)[0].to_json_dict()
    v = validate(model, default, [held])
    choice = default["config"]["processing"]["cutoff_choice"]
    out["default"] = {"rmse": v["rmse"], "rmse_sum": v["rmse_sum"], "relative_error_total": v["relative_error_total"],
                      "cutoff_hz": default["config"]["processing"]["cutoff_hz"],
                      "cutoff_choice": choice["rule"], "cutoff_rule_hz": choice.get("rule_cutoff_hz"),
                      "cutoff_candidates": choice.get("candidates"), "warnings": default["estimate"]["notes"],
                      "seconds": round(time.perf_counter() - t0, 2),
                      "vs_plain_ols": v["rmse_sum"] / plain["rmse_sum"]}
    if select:
        t0 = time.perf_counter()
        chosen = identification_result(model, [fit], config, config.method, select=True)[0].to_json_dict()
        v = validate(model, chosen, [held])
        out["selected"] = {"chosen": chosen["selection"]["chosen"], "rule": chosen["selection"]["rule"],
                           "cross_validation": chosen["selection"]["cross_validation"],
                           "rmse": v["rmse"], "rmse_sum": v["rmse_sum"],
                           "relative_error_total": v["relative_error_total"],
                           "seconds": round(time.perf_counter() - t0, 2),
                           "vs_plain_ols": v["rmse_sum"] / plain["rmse_sum"],
                           "vs_default": v["rmse_sum"] / out["default"]["rmse_sum"],
                           "candidates": [{k: c.get(k) for k in ("friction", "rotor_inertia", "cutoff_hz", "method",
                                                                  "parameters", "mean", "std", "standard_error",
                                                                  "error")} for c in chosen["selection"]["candidates"]]}
    ceiling = identify(model, [held], config).to_dict()
    v = validate(model, ceiling, [held])
    out["ceiling"] = {"rmse": v["rmse"], "rmse_sum": v["rmse_sum"],
                      "of": "the default configuration fitted on the held-out data itself"}
    out["interval"] = interval_on(model, [fit], [held], config)
    return out


def interval_on(model, fit, held, config) -> dict:
    """The default's 95 % interval on the held-out data (fraction inside per joint, residual RMS
    over the residual model's std, lag-1 autocorrelation) and the extrapolation warnings there."""
    from robodyn.identification.coverage import result_warnings
    from robodyn.identification.intervals import calibration
    from robodyn.identification.methods import identification_document

    doc, _, _ = identification_document(model, fit, config, config.method)
    cal = calibration(model, doc, held)
    return {"inside_fraction": cal["inside_fraction"], "rms_over_identification_std": cal["rms_over_identification_std"],
            "lag1_autocorrelation": cal["lag1_autocorrelation"], "residual_model": doc["residual_model"]["of"],
            "note": cal["note"], "coverage_warnings": [w["message"] for w in result_warnings(model, doc, held)]}


def load_ur10e(directory: Path):
    """(identification run, point-to-point validation run) of the UR10e logs, the repository's rows."""
    from robodyn.identification.datasets import ur10e

    files = ur10e.locate(directory)
    runs = [files.log(name).rows(*ur10e.TRIMMED_ROWS[name]).sampled()
            for name in (ur10e.IDENTIFICATION_LOG, ur10e.VALIDATION_LOG)]
    return runs[0], runs[1], (f"{ur10e.IDENTIFICATION_LOG} (rows {ur10e.TRIMMED_ROWS[ur10e.IDENTIFICATION_LOG]}) "
                              f"identifies, {ur10e.VALIDATION_LOG} (rows {ur10e.TRIMMED_ROWS[ur10e.VALIDATION_LOG]}), "
                              "another trajectory, is held out")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--panda-log", type=Path, help="directory of a real Franka Panda excitation log")
    p.add_argument("--ur10e-log", type=Path, help="directory of the UR10e logs of the dynamic_calibration repository")
    p.add_argument("--sims", action="store_true", help="also the realistic simulated Franka-like and UR-like logs")
    p.add_argument("--no-select", action="store_true", help="skip model selection (faster)")
    p.add_argument("--only", help="comma-separated data sets to run (tx40, panda, ur10e, franka_like, ur_like)")
    p.add_argument("--merge", action="store_true",
                   help="replace only the data sets run in an existing --out, keep the others")
    p.add_argument("--out", type=Path, default=Path(__file__).with_name("result.json"))
    args = p.parse_args()
    only = set(args.only.split(",")) if args.only else None
    wanted = lambda name: only is None or name in only  # noqa: E731
    from robodyn.identification.datasets import gaz2019, tx40
    from robodyn.robot.loader import load_model
    from robodyn.robot.urdf import model_from_urdf

    tx40_dir = tx40.DATA_DIR
    results = {"benchmark": "realdata", "host": {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()},
               "datasets": []}
    select = not args.no_select
    if wanted("tx40"):
        results["datasets"].append(evaluate("tx40 (real, Stäubli TX40, 5 kHz)",
                                            model_from_urdf(tx40_dir / "tx40_mdh_modified.urdf"),
                                            tx40.load(tx40_dir), (tx40.WRIST_COUPLING,), select))
    if args.panda_log and wanted("panda"):
        results["datasets"].append(evaluate("panda (real, Franka Panda, 1 kHz)", load_model("panda"),
                                            gaz2019.load(args.panda_log), (), select))
    if args.ur10e_log and wanted("ur10e"):
        ident, held, split = load_ur10e(args.ur10e_log)
        results["datasets"].append(evaluate("ur10e (real, UR10e, motor currents x drive gains, ~94 Hz)",
                                            load_model("ur10e"), ident, (), select, held=held, split=split))
    if args.sims:
        from robodyn.identification.realistic_logs import realistic_log

        for sensor, robot in (("franka", "panda"), ("ur", "ur5e")):
            if not wanted(f"{sensor}_like"):
                continue
            log = realistic_log(sensor, 1, duration=20.0)
            row = evaluate(f"{sensor}_like (simulated plant with unmodelled effects)", load_model(robot), log.data, (),
                           select)
            row["noise_floor_rmse"] = log.noise_floor.tolist()
            results["datasets"].append(row)
    results["host"]["loadavg_end"] = os.getloadavg()
    if args.merge and args.out.exists():  # the data sets not run keep their entries (and the host of their run)
        old = json.loads(args.out.read_text())
        run_now = {d["data"].split()[0]: d for d in results["datasets"]}
        for d in results["datasets"]:
            d["host"] = results["host"]
        kept = [run_now.pop(d["data"].split()[0], d) for d in old["datasets"]]
        results = {**old, "datasets": kept + list(run_now.values())}
    args.out.write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
