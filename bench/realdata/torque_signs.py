"""The torque-sign check (identification/torque_sign.py) on real logs: silent as logged, and does it
name a joint whose sign is made wrong?

For every run of the corpus arms (corpus.py, cached by fetch.py) and the known real logs (the
figaroh TX40 log in the repository; the Panda and UR10e logs when given), processed at a 10 Hz
cut-off (the careful plain script's), the check runs on the log as logged (the best single-joint
flip's residual share is recorded: it must stay above REPORTED_SHARE) and then once per joint with
that joint's torque negated (it names that joint, or nothing: a slow excitation cannot tell). Data origin: real, every row.

    .venv/bin/python bench/realdata/torque_signs.py [--panda-log DIR] [--ur10e-log DIR] [--out bench/realdata/torque_signs.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# as the robodyn command sets it (robodyn/cli.py): one OpenBLAS thread, set before numpy loads it
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
import fetch  # noqa: E402
import readers  # noqa: E402

CUTOFF_HZ = 10.0


def processed(raw, cutoff_hz: float = CUTOFF_HZ):
    from robodyn.identification.processing import ProcessingConfig, process_windows

    rate = 1.0 / float(np.median(np.diff(raw.t)))
    pieces = [p.data for p in process_windows(raw, ProcessingConfig(cutoff_hz=min(cutoff_hz, 0.4 * rate / 2)))]
    return pieces[0]


def check_log(name: str, model, raw, spec) -> dict:
    from robodyn.identification.torque_sign import REPORTED_SHARE, check_torque_signs

    d = processed(raw)
    logged = check_torque_signs(model, d.q, d.qd, d.qdd, d.tau, spec)
    row = {"log": name, "samples": int(d.count), "joints": model.dof,
           "as_logged_best_flip_share": round(min(logged["flipped_share"]), 4),
           "as_logged_suspect": [model.joint_names[j] for j in logged["suspect"]], "flipped": []}
    for j in range(model.dof):
        tau = d.tau.copy()
        tau[:, j] *= -1.0
        got = check_torque_signs(model, d.q, d.qd, d.qdd, tau, spec)
        row["flipped"].append({"joint": model.joint_names[j], "share": round(got["flipped_share"][j], 4),
                               "named": [model.joint_names[k] for k in got["suspect"]]})
    row["flips_named_alone"] = sum(f["named"] == [f["joint"]] for f in row["flipped"])
    row["flips_named_wrong"] = sum(bool(f["named"]) and f["named"] != [f["joint"]] for f in row["flipped"])
    row["reported_share"] = REPORTED_SHARE
    return row


def main(argv=None) -> int:
    from robodyn.identification.config import IdentificationConfig

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", type=Path, default=fetch.DEFAULT_CACHE)
    p.add_argument("--panda-log", type=Path)
    p.add_argument("--ur10e-log", type=Path)
    p.add_argument("--out", type=Path, default=Path(__file__).with_name("torque_signs.json"))
    args = p.parse_args(argv)
    spec = IdentificationConfig().spec
    rows = []
    for arm in corpus.ARMS:
        if not arm.evaluate or fetch.cached(args.dir, arm):
            continue
        model = readers.load_robot(arm, args.dir)
        runs = sorted({s.fit for s in arm.splits} | {s.held for s in arm.splits if s.held})
        for run in runs:
            rows.append(check_log(f"{arm.name}:{run} (real, {arm.maker})", model, readers.read_run(arm, run, args.dir),
                                  spec))
    from robodyn.identification.datasets import gaz2019, tx40
    from robodyn.identification.regressor import ColumnSpec
    from robodyn.robot.loader import load_model
    from robodyn.robot.urdf import model_from_urdf

    tx40_spec = ColumnSpec(True, ("viscous", "coulomb", "offset"), (tx40.WRIST_COUPLING,))
    rows.append(check_log("tx40 (real, Staubli TX40, figaroh log)",
                          model_from_urdf(tx40.DATA_DIR / "tx40_mdh_modified.urdf"), tx40.load(tx40.DATA_DIR), tx40_spec))
    if args.panda_log:
        rows.append(check_log("panda (real, Franka Panda, Gaz et al. log)", load_model("panda"),
                              gaz2019.load(args.panda_log), spec))
    if args.ur10e_log:
        from run import load_ur10e

        ident, held, _ = load_ur10e(args.ur10e_log)
        rows.append(check_log("ur10e (real, UR10e, identification log)", load_model("ur10e"), ident, spec))
    out = {"benchmark": "torque sign check on real logs", "cutoff_hz": CUTOFF_HZ, "logs": rows,
           "silent_as_logged": sum(not r["as_logged_suspect"] for r in rows),
           "flips_named_alone": sum(r["flips_named_alone"] for r in rows),
           "flips_named_wrong": sum(r["flips_named_wrong"] for r in rows),
           "flips": sum(r["joints"] for r in rows), "host": {"loadavg": os.getloadavg()}}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k != "logs"}, indent=1))
    for r in rows:
        print(r["log"], r["as_logged_best_flip_share"], r["as_logged_suspect"], r["flips_named_alone"], "/", r["joints"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
