"""Leave-one-robot-out table: robodyn's defaults on real logs of arms they were not chosen on.

For every arm of corpus.py that is to be evaluated, whose files are cached (fetch.py) and whose
URDF loads, and for every split it declares (time: first 60 % -> last 40 %; cross-run: run A ->
run B), three scores, each the sum over joints of the per-joint RMSE against the RAW measured
torque on the held-out data:

- ``plain``: the careful plain script (:func:`plain_script`): q and qd low-passed at 10 Hz
  (4th-order Butterworth, zero phase), qd differentiated from the filtered q when not logged, qdd
  by differentiating the filtered qd, robodyn's full regressor (10 inertial + rotor inertia per
  link) plus viscous, Coulomb and offset friction per joint, ordinary least squares on the
  unfiltered torque;
- ``default``: what ``robodyn identify`` does with its defaults
  (``robodyn.identification.methods.identification_result``), scored by ``validate`` on the
  held-out data (as bench/realdata/run.py's ``evaluate``), with the cut-off it chose and its warnings;
- ``selected``: the same with ``--select``;
- ``ceiling``: the default configuration fitted on the held-out data itself.

- ``ceiling_plain``: the plain script fitted on the held-out data itself (a ceiling that exists
  when the default refuses the data).

Diagnostics (not defaults): ``default_cutoff_10hz``, the default with its cut-off fixed at 10 Hz;
``default_without_rotor_inertia``, the default without the rotor-inertia columns.
Timing: ``seconds`` (wall) and ``cpu_seconds`` (processor time of this process, all its threads)
of each fit, in process once the kernels are loaded, with what a fresh command would compute anew
forgotten before each (:func:`_fresh_caches`); ``selected.time_vs_default`` and
``cpu_time_vs_default`` are their ratios. On a shared host the wall ratio moves with the other
jobs; the processor-time ratio much less. The load average is recorded at the start and the end.
Also the excitation's bandwidth: the frequency below which 99 % of the identification part's
joint-velocity power lies (largest over joints). Nothing is tuned.

    .venv/bin/python bench/realdata/loro.py [--dir ~/.cache/robodyn/corpus] [--arm NAME] [--out bench/realdata/loro.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

# as the robodyn command sets it (robodyn/cli.py): one OpenBLAS thread, set before numpy loads it,
# so that the timings below are the command's
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import scipy.signal

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
import fetch  # noqa: E402
import readers  # noqa: E402

PLAIN_CUTOFF_HZ = 10.0


def split_run(data, fit_fraction: float = corpus.TIME_SPLIT_FIT):
    """(first ``fit_fraction`` by time, the rest)."""
    cut = data.t[0] + fit_fraction * (data.t[-1] - data.t[0])
    return data.select(data.t <= cut), data.select(data.t > cut)


def _plain_states(d, cutoff_hz: float):
    rate = 1.0 / float(np.median(np.diff(d.t)))
    if cutoff_hz >= rate / 2:
        raise ValueError(f"cutoff_hz: {cutoff_hz} Hz must be below the Nyquist frequency {rate / 2:g} Hz")
    sos = scipy.signal.butter(4, cutoff_hz / (rate / 2.0), output="sos")
    q = scipy.signal.sosfiltfilt(sos, d.q, axis=0)
    qd = scipy.signal.sosfiltfilt(sos, d.qd, axis=0) if d.qd is not None else np.gradient(q, d.t, axis=0)
    return q, qd, np.gradient(qd, d.t, axis=0)


def plain_script(model, fit, held, cutoff_hz: float = PLAIN_CUTOFF_HZ, motor_couplings=()) -> dict:
    """The plain script: fit on ``fit``, predict ``held``; per-joint RMSE against held's raw torque.
    ``motor_couplings``: shared motors (a coupled wrist), as regressor.ColumnSpec takes them."""
    from robodyn.identification.regressor import ColumnSpec, regressor

    spec = ColumnSpec(True, ("viscous", "coulomb", "offset"), tuple(tuple(c) for c in motor_couplings))
    theta = np.linalg.lstsq(regressor(model, *_plain_states(fit, cutoff_hz), spec), fit.tau.ravel(), rcond=None)[0]
    predicted = (regressor(model, *_plain_states(held, cutoff_hz), spec) @ theta).reshape(held.tau.shape)
    rmse = np.sqrt(np.mean(np.square(predicted - held.tau), axis=0))
    return {"rmse": rmse.tolist(), "rmse_sum": float(rmse.sum())}


def excitation_bandwidth(d, power: float = 0.99) -> float:
    """Frequency (Hz) below which ``power`` of the joint-velocity power lies, largest over joints."""
    qd = d.qd if d.qd is not None else np.gradient(d.q, d.t, axis=0)
    rate = 1.0 / float(np.median(np.diff(d.t)))
    f, pxx = scipy.signal.periodogram(qd - qd.mean(axis=0), fs=rate, axis=0)
    cum = np.cumsum(pxx, axis=0)
    total = cum[-1]
    edges = [float(f[np.searchsorted(cum[:, j], power * total[j])]) for j in range(qd.shape[1]) if total[j] > 0]
    return max(edges) if edges else float("nan")


def _fresh_caches() -> None:
    """Forget what an earlier call compiled or designed that a fresh `robodyn identify` process
    would make anew (the physically consistent fit's compiled programs, the filter designs, the base
    parameters of each column set), so that each timed call pays for its own, as the command does:
    otherwise --select, timed after the default's runs, would reuse what they made."""
    from robodyn.identification import consistent, pipeline, processing

    consistent._PROGRAMS.clear()
    processing._butter_sos.cache_clear()
    pipeline._BASE_CACHE.clear()


def _identify_and_validate(model, fit, held, config, select: bool = False):
    """What `robodyn identify` (with ``--select`` when ``select``) does with ``config``, scored by
    ``validate`` on ``held``."""
    from robodyn.identification.methods import identification_result
    from robodyn.identification.pipeline import validate

    _fresh_caches()

    result = identification_result(model, [fit], config, config.method, select=select,
                                   choose_method=not select)[0].to_json_dict()
    v = validate(model, result, [held])
    processing = result["config"]["processing"]
    choice = processing.get("cutoff_choice") or {}
    out = {"rmse": v["rmse"], "rmse_sum": v["rmse_sum"], "cutoff_hz": processing["cutoff_hz"],
           "cutoff_rule_hz": choice.get("rule_cutoff_hz"), "cutoff_source": choice.get("source"),
           "warnings": result["estimate"]["notes"]}
    if select:
        chosen = result["selection"]["chosen"]
        out["chosen"] = {k: chosen[k] for k in ("friction", "rotor_inertia", "method", "cutoff_hz", "mean",
                                                "standard_error")}
        reference = result["selection"].get("reference")
        out["reference_kept"] = reference is not None and all(reference[k] == chosen[k] for k in reference
                                                              if k != "parameters")
    return out


def evaluate_split(model, arm: corpus.Arm, split: corpus.Split, cache: Path) -> dict:
    from robodyn.identification.pipeline import IdentificationConfig
    from robodyn.identification.processing import ProcessingConfig

    if split.kind == "time":
        fit, held = split_run(readers.read_run(arm, split.fit, cache))
    else:
        fit, held = readers.read_run(arm, split.fit, cache), readers.read_run(arm, split.held, cache)
    row = {"split": split.label, "fit_samples": fit.count, "held_samples": held.count,
           "rate_hz": round(1.0 / float(np.median(np.diff(fit.t))), 3),
           "excitation_bandwidth_hz": round(excitation_bandwidth(fit), 3)}
    t0 = time.perf_counter()
    row["plain"] = {**plain_script(model, fit, held), "seconds": round(time.perf_counter() - t0, 2)}
    for name, config in (("default", IdentificationConfig()),
                         ("default_cutoff_10hz", IdentificationConfig(processing=ProcessingConfig(cutoff_hz=10.0))),
                         ("default_without_rotor_inertia", IdentificationConfig(rotor_inertia=False))):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            row[name] = {**_identify_and_validate(model, fit, held, config), "seconds": round(time.perf_counter() - t0, 2),
                         "cpu_seconds": round(time.process_time() - c0, 2)}
            row[name]["vs_plain"] = round(row[name]["rmse_sum"] / row["plain"]["rmse_sum"], 4)
        except Exception as exc:  # noqa: BLE001 - one line per failure is the finding
            row[name] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        row["selected"] = {**_identify_and_validate(model, fit, held, IdentificationConfig(), select=True),
                           "seconds": round(time.perf_counter() - t0, 2),
                           "cpu_seconds": round(time.process_time() - c0, 2)}
        row["selected"]["vs_plain"] = round(row["selected"]["rmse_sum"] / row["plain"]["rmse_sum"], 4)
        if "rmse_sum" in row.get("default", {}):
            # the bound: --select no worse than the default by more than one fold standard
            # error (of the chosen candidate's cross-validation scores)
            row["selected"]["minus_default"] = round(row["selected"]["rmse_sum"] - row["default"]["rmse_sum"], 4)
            row["selected"]["within_one_fold_standard_error"] = bool(
                row["selected"]["minus_default"] <= row["selected"]["chosen"]["standard_error"])
            row["selected"]["time_vs_default"] = round(row["selected"]["seconds"] / row["default"]["seconds"], 3)
            # processor time (all threads of this process): what the machine's other jobs do not
            # inflate, unlike the wall time on a shared host
            row["selected"]["cpu_time_vs_default"] = round(row["selected"]["cpu_seconds"] /
                                                           row["default"]["cpu_seconds"], 3)
    except Exception as exc:  # noqa: BLE001
        row["selected"] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    row["default_cutoff_10hz"]["note"] = "diagnostic only, not a default"
    row["default_without_rotor_inertia"]["note"] = "diagnostic only, not a default"
    t0 = time.perf_counter()
    try:
        row["ceiling"] = {**_identify_and_validate(model, held, held, IdentificationConfig()),
                          "seconds": round(time.perf_counter() - t0, 2),
                          "of": "the default configuration fitted on the held-out data itself"}
    except Exception as exc:  # noqa: BLE001
        row["ceiling"] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    row["ceiling_plain"] = {**plain_script(model, held, held), "of": "the plain script fitted on the held-out data itself"}
    return row


def evaluate_arm(arm: corpus.Arm, cache: Path) -> dict:
    out = {"arm": arm.name, "maker": arm.maker, "model": arm.model, "dof": arm.dof,
           "source": f"{arm.repository}@{arm.commit}", "licence": arm.licence, "torque_source": arm.torque_source}
    if not arm.evaluate:
        return {**out, "skipped": arm.why_not}
    problems = fetch.cached(cache, arm)
    if problems:
        return {**out, "skipped": f"not in the cache {cache}: {problems[0]} (run bench/realdata/fetch.py)"}
    try:
        model = readers.load_robot(arm, cache)
    except ValueError as exc:
        return {**out, "skipped": f"URDF does not load: {exc}"}
    out["splits"] = []
    for split in arm.splits:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out["splits"].append(evaluate_split(model, arm, split, cache))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", type=Path, default=fetch.DEFAULT_CACHE, help="the cache fetch.py filled")
    p.add_argument("--arm", action="append", help="only these arms (repeatable)")
    p.add_argument("--out", type=Path, default=Path(__file__).with_name("loro.json"))
    args = p.parse_args(argv)
    arms = [corpus.arm(a) for a in args.arm] if args.arm else list(corpus.ARMS)
    result = {"benchmark": "leave-one-robot-out", "score": "sum over joints of per-joint RMSE (N.m) against the raw "
              "measured torque on the held-out data", "plain_cutoff_hz": PLAIN_CUTOFF_HZ,
              "host": {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()},
              "arms": [evaluate_arm(a, args.dir) for a in arms]}
    result["host"]["loadavg_end"] = os.getloadavg()
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
