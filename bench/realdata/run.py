"""bench/realdata: identification on real logs, judged against the measured torque. JSON out.

Every data set is split by time: the first 60 % identifies, the last 40 % is held out and predicted
(HELD_OUT below). Rows per data set:

- ``plain_ols``: the reference script (identification/baseline.py): 10 Hz zero-phase low-pass of q,
  qd and tau, least squares on the full regressor;
- ``default``: ``robodyn identify`` with no options (automatic cut-off, WLS, Coulomb-viscous);
- ``selected``: ``robodyn identify --select`` (friction x rotor inertia x estimator, chosen by blocked
  cross-validation in 5 contiguous blocks of the identification part and the one-standard-error
  rule), with every candidate's mean, spread and standard error over the folds.

Data sets:

- ``tx40``: the real Stäubli TX40 log in tests/data/staubli_tx40 (figaroh-plus, Apache-2.0), 5 kHz
  motor-side data, coupled wrist;
- ``panda`` (optional, ``--panda-log DIR``): a real 1 kHz Franka Panda log, e.g. the excitation
  log of Gaz et al. 2019 (github.com/marcocognetti/FrankaEmikaPandaDynModel, GPL-3.0, not shipped
  here): DIR holds exciting_traj_{time,positions,velocity,torques}.txt;
- ``franka_like`` / ``ur_like`` (``--sims``): realistic simulated logs (identification/realistic_logs.py).

    .venv/bin/python bench/realdata/run.py [--panda-log DIR] [--sims] [--out bench/realdata/result.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HELD_OUT = 0.4  # last 40 % of each recording, by time


def load_panda_log(directory: Path):
    from robodyn.identification.signals import SampledData

    read = lambda name: np.loadtxt(directory / f"exciting_traj_{name}.txt")  # noqa: E731
    t = read("time")
    shape = (t.size, -1)
    return SampledData(t, read("positions").reshape(shape), read("torques").reshape(shape),
                       read("velocity").reshape(shape))


def evaluate(name: str, model, data, couplings=(), select: bool = True) -> dict:
    from robodyn.identification.baseline import plain_ols
    from robodyn.identification.pipeline import IdentificationConfig, identify, validate
    from robodyn.identification.selection import select as run_select
    from robodyn.identification.selection import split_by_time

    fit, held = split_by_time(data, HELD_OUT)
    out = {"data": name, "samples": data.count, "split": f"first {1 - HELD_OUT:.0%} identifies, last {HELD_OUT:.0%} "
                                                         "held out, by time",
           "against": "measured torque at the measured samples"}
    t0 = time.perf_counter()
    plain = plain_ols(model, fit, held, motor_couplings=couplings)
    out["plain_ols"] = {**plain, "seconds": round(time.perf_counter() - t0, 2)}
    config = IdentificationConfig(motor_couplings=couplings)
    t0 = time.perf_counter()
    default = identify(model, [fit], config).to_dict()
    v = validate(model, default, [held])
    out["default"] = {"rmse": v["rmse"], "rmse_sum": v["rmse_sum"], "relative_error_total": v["relative_error_total"],
                      "cutoff_hz": default["config"]["processing"]["cutoff_hz"],
                      "cutoff_choice": default["config"]["processing"]["cutoff_choice"]["rule"],
                      "seconds": round(time.perf_counter() - t0, 2),
                      "vs_plain_ols": v["rmse_sum"] / plain["rmse_sum"]}
    if select:
        t0 = time.perf_counter()
        chosen = run_select(model, [fit], config).to_dict()
        v = validate(model, chosen, [held])
        out["selected"] = {"chosen": chosen["selection"]["chosen"], "rule": chosen["selection"]["rule"],
                           "rmse": v["rmse"], "rmse_sum": v["rmse_sum"],
                           "relative_error_total": v["relative_error_total"],
                           "seconds": round(time.perf_counter() - t0, 2),
                           "vs_plain_ols": v["rmse_sum"] / plain["rmse_sum"],
                           "vs_default": v["rmse_sum"] / out["default"]["rmse_sum"],
                           "candidates": [{k: c.get(k) for k in ("friction", "rotor_inertia", "cutoff_hz", "method",
                                                                  "parameters", "mean", "std", "standard_error",
                                                                  "error")} for c in chosen["selection"]["candidates"]]}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--panda-log", type=Path, help="directory of a real Franka Panda excitation log")
    p.add_argument("--sims", action="store_true", help="also the realistic simulated Franka-like and UR-like logs")
    p.add_argument("--no-select", action="store_true", help="skip model selection (faster)")
    p.add_argument("--out", type=Path, default=Path(__file__).with_name("result.json"))
    args = p.parse_args()
    from robodyn.identification.datasets import tx40
    from robodyn.robot.loader import load_model
    from robodyn.robot.urdf import model_from_urdf

    tx40_dir = ROOT / "tests" / "data" / "staubli_tx40"
    results = {"benchmark": "realdata", "host": {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()},
               "datasets": []}
    select = not args.no_select
    results["datasets"].append(evaluate("tx40 (real, Stäubli TX40, 5 kHz)", model_from_urdf(tx40_dir / "tx40_mdh_modified.urdf"),
                                        tx40.load(tx40_dir), (tx40.WRIST_COUPLING,), select))
    if args.panda_log:
        results["datasets"].append(evaluate("panda (real, Franka Panda, 1 kHz)", load_model("panda"),
                                            load_panda_log(args.panda_log), (), select))
    if args.sims:
        from robodyn.identification.realistic_logs import realistic_log

        for sensor, robot in (("franka", "panda"), ("ur", "ur5e")):
            log = realistic_log(sensor, 1, duration=20.0)
            row = evaluate(f"{sensor}_like (simulated plant with unmodelled effects)", load_model(robot), log.data, (),
                           select)
            row["noise_floor_rmse"] = log.noise_floor.tolist()
            results["datasets"].append(row)
    results["host"]["loadavg_end"] = os.getloadavg()
    args.out.write_text(json.dumps(results, indent=1))
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
