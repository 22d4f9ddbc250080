"""bench/realdata: calibration of the 95 % prediction interval (identification/intervals.py).

Per data set: the default identification (WLS, Coulomb-viscous, automatic cut-off) on one part,
then the fraction of measured samples inside the nominal 95 % interval, per joint, on the
identification data itself and on held-out data, with what explains a miss: the held-out residual
RMS over the identification residual std (model error) and the residual's lag-1 autocorrelation.

Data sets:

- ``tx40``: the real Staubli TX40 log (LS2N, figaroh-plus, Apache-2.0), 5 kHz motor-side data; the
  first 60 % of the run identifies, the last 40 % is held out (one run: no second trajectory);
- ``panda`` (``--panda-log DIR``): the real 1 kHz Franka Panda excitation log of Gaz et al. 2019
  (GPL-3.0, never shipped; identification/datasets/gaz2019.py), joint torque sensors; split by time
  as the TX40 (one run);
- ``franka_like`` / ``ur_like`` (``--sims``): realistic plants (identification/realistic_logs.py:
  inertial parameters 15 % off the model, Stribeck friction with position ripple and load-dependent
  Coulomb, one elastic joint; Franka-like 1 kHz jittered torque sensors with drops and drifting
  offsets, UR-like 500 Hz currents through drive gains 7 % off, quantised, one sample late);
  excitation seed 1 identifies, seed 2 (another trajectory, same arm) is held out;
- ``ur10e`` (``--ur10e-log DIR``): the real UR10e logs of Mamedov & Mikhel's dynamic_calibration
  repository (no licence, never shipped; identification/datasets/ur10e.py), torque = current x
  the repository's drive gains: its 12-harmonic excitation identifies, its point-to-point
  validation run (another trajectory) is held out.

Third row per data set: the residual model calibrated on held-out data (``identify --holdout``:
seed 2; the 60-80 % stretch of the TX40 and Panda runs; the UR10e's point-to-point run p1) and evaluated on data used
for neither (seed 3; their last 20 %; the UR10e's 10-point run).

Each data set's entry names the commit it was measured with (``measured_with``). ``--merge`` keeps
the data sets of an existing JSON that this run does not measure (the UR10e without its logs), and
the table says which rows are kept from an earlier run, and with which code.

    .venv/bin/python bench/realdata/interval_coverage.py [--tx40 DIR] [--panda-log DIR] [--sims] [--seconds S] [--ur10e-log DIR] [--merge] [--out JSON]
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HELD_OUT = 0.4
PARTS = (("identification", "identification data"), ("held_out", "held out"),
         ("held_out_after_calibration", "held out, after calibrating on other held-out data"))


def measure(model, config, ident, held, calibrate, later) -> dict:
    """The default residual model (out-of-fold residuals of the identification data) evaluated on
    the identification data and a held-out part; then the residual model calibrated on held-out
    data of other motion (``calibrate``, as ``identify --holdout`` does) evaluated on data that
    neither fitted nor calibrated (``later``)."""
    from robodyn.identification.intervals import calibration
    from robodyn.identification.methods import identification_document

    doc, _, _ = identification_document(model, [ident], config, "wls")
    cal, _, _ = identification_document(model, [ident], config, "wls", holdout=[calibrate])
    brief = lambda rm: {k: v for k, v in rm.items() if k != "fold_covariance"}  # noqa: E731 (a P x P matrix)
    return {"residual_model": brief(doc["residual_model"]), "identification": calibration(model, doc, [ident]),
            "held_out": calibration(model, doc, [held]),
            "calibrated_residual_model": brief(cal["residual_model"]),
            "held_out_after_calibration": calibration(model, cal, [later])}


def split_by_time(model, config, raw) -> dict:
    """One run: the first 60 % identifies, the last 40 % is held out; its first half calibrates,
    its second half is the later data."""
    cut = raw.t[0] + (1 - HELD_OUT) * (raw.t[-1] - raw.t[0])
    mid = raw.t[0] + (1 - HELD_OUT / 2) * (raw.t[-1] - raw.t[0])
    return measure(model, config, raw.select(raw.t < cut), raw.select(raw.t >= cut),
                   raw.select((raw.t >= cut) & (raw.t < mid)), raw.select(raw.t >= mid))


def tx40(directory: Path) -> dict:
    from robodyn.identification.datasets import tx40 as T
    from robodyn.identification.pipeline import IdentificationConfig
    from robodyn.robot.urdf import model_from_urdf

    return split_by_time(model_from_urdf(directory / "tx40_mdh_modified.urdf"),
                         IdentificationConfig(method="wls", motor_couplings=(T.WRIST_COUPLING,)), T.load(directory))


def panda(directory: Path) -> dict:
    from robodyn.identification.datasets import gaz2019
    from robodyn.identification.pipeline import IdentificationConfig
    from robodyn.robot.loader import load_model

    return split_by_time(load_model("panda"), IdentificationConfig(), gaz2019.load(directory))


def ur10e(directory: Path) -> dict:
    from robodyn.identification.datasets import ur10e as U
    from robodyn.identification.pipeline import IdentificationConfig
    from robodyn.robot.loader import load_model

    files = U.locate(directory)
    ident, held = (files.log(name).rows(*U.TRIMMED_ROWS[name]).sampled()
                   for name in (U.IDENTIFICATION_LOG, U.VALIDATION_LOG))
    calibrate = files.log(U.POINT_TO_POINT_LOGS[0]).sampled()
    return measure(load_model("ur10e"), IdentificationConfig(), ident, held, calibrate, held)


def sims(seconds: float) -> dict:
    from robodyn.identification.pipeline import IdentificationConfig
    from robodyn.identification.realistic_logs import ROBOT_FOR_SENSOR, realistic_log
    from robodyn.robot.loader import load_model

    out = {}
    for sensor in ("franka", "ur"):
        A, B, C = (realistic_log(sensor, seed, duration=seconds) for seed in (1, 2, 3))
        out[f"{sensor}_like"] = measure(load_model(ROBOT_FOR_SENSOR[sensor]), IdentificationConfig(), A.data, B.data,
                                        B.data, C.data)
    return out


def markdown(result: dict, command: str) -> str:
    """The table docs/identification.md includes verbatim: coverage per joint, in %, with the
    held-out residual RMS over the identification residual std and the lag-1 autocorrelation."""
    lines = [f"`{command}`", "",
             "| data | evaluated on | inside the 95 % interval, per joint [%] | RMS / residual-model std | "
             "lag-1 autocorrelation |", "|---|---|---|---|---|"]
    for name, r in result.items():
        for part, label in PARTS:
            c = r[part]
            lines.append(f"| {name} | {label} | " + " ".join(f"{x * 100:.1f}" for x in c["inside_fraction"])
                         + " | " + " ".join(f"{x:.2f}" for x in c["rms_over_identification_std"])
                         + " | " + " ".join(f"{x:.2f}" for x in c["lag1_autocorrelation"]) + " |")
    kept = [f"{name} (measured with {r.get('measured_with', 'an earlier commit')})"
            for name, r in result.items() if r.get("kept_from_earlier_run")]
    if kept:
        lines += ["", "Kept from an earlier run (`--merge`, not measured by this one): " + "; ".join(kept) + "."]
    return "\n".join(lines) + "\n"


def _git(*args) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def commit() -> str:
    """The commit the measurement ran with, "-dirty" when the work tree had uncommitted changes."""
    head = _git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("-dirty" if _git("status", "--porcelain", "--untracked-files=no") else "")


def main() -> int:
    from robodyn.identification.datasets.tx40 import DATA_DIR as TX40_DIR

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tx40", type=Path, default=TX40_DIR)
    ap.add_argument("--panda-log", type=Path, help="directory of the Panda excitation log of Gaz et al. 2019")
    ap.add_argument("--sims", action="store_true")
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each realistic log")
    ap.add_argument("--ur10e-log", type=Path, help="directory of the UR10e logs of the dynamic_calibration repository")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "realdata" / "interval_coverage.json")
    ap.add_argument("--markdown", type=Path, default=ROOT / "bench" / "realdata" / "interval_coverage.md")
    ap.add_argument("--from-json", type=Path, default=None, help="render a result written before; measure nothing")
    ap.add_argument("--merge", action="store_true",
                    help="keep the data sets of an existing --out that this run does not measure")
    args = ap.parse_args()
    command = "python bench/realdata/interval_coverage.py" + (" --panda-log DIR" if args.panda_log else "") + (" --sims" if args.sims else "") + (
        f" --seconds {args.seconds:g}" if args.sims else "") + (" --ur10e-log DIR" if args.ur10e_log else "") + (
        " --merge" if args.merge else "")
    if args.from_json:
        result = json.loads(args.from_json.read_text())
    else:
        version = commit()  # before measuring: an edit made while it runs is not its code
        result = {"tx40": tx40(args.tx40)}
        if args.panda_log:
            result["panda"] = panda(args.panda_log)
        if args.sims:
            result.update(sims(args.seconds))
        if args.ur10e_log:
            result["ur10e"] = ur10e(args.ur10e_log)
        for r in result.values():
            r["measured_with"] = version
        if args.merge and args.out.exists():
            # an entry written before entries named their commit: the last commit of the JSON
            written = _git("log", "-1", "--format=%h", "--", str(args.out)) or "an earlier commit"
            for name, r in json.loads(args.out.read_text()).items():
                if name not in result:
                    result[name] = {"measured_with": written, **r, "kept_from_earlier_run": True}
        args.out.write_text(json.dumps(result, indent=1))
    args.markdown.write_text(markdown(result, command))
    for name, r in result.items():
        for part, _ in PARTS:
            c = r[part]
            print(f"{name:<12} {part:<15} inside " + " ".join(f"{x * 100:5.1f}" for x in c["inside_fraction"])
                  + " | rms/std " + " ".join(f"{x:.2f}" for x in c["rms_over_identification_std"])
                  + " | lag1 " + " ".join(f"{x:.2f}" for x in c["lag1_autocorrelation"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
