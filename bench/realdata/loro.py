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
of each fit, in process after one untimed default fit of the split has loaded the kernels and
paid every first call, with what a fresh command would compute anew forgotten before each
(:func:`_fresh_caches`). The default and ``--select`` are each timed :data:`TIMING_RUNS` times,
alternating, and their ``seconds`` and ``cpu_seconds`` are the medians (every run is listed under
``runs``; one run of a 2 s fit moved by a third on this host's virtual machine, whose first touch of
fresh memory costs what the fit's arithmetic does); ``selected.time_vs_default`` and
``cpu_time_vs_default`` are the medians' ratios. On a shared host the wall ratio moves with the other
jobs; the processor-time ratio much less. The load average is recorded at the start and the end.
Also the excitation's bandwidth: the frequency below which 99 % of the identification part's
joint-velocity power lies (largest over joints). Nothing is tuned.

The three real logs robodyn's defaults were first chosen and checked on (:data:`KNOWN_LOGS`: the
Gaz et al. Panda, the dynamic_calibration UR10e, the figaroh TX40) are rows too, after the corpus,
unless ``--corpus-only``. No default has a parameter fitted to any log, but these three are where
the rules were checked, so their rows are not out-of-sample evidence in the sense the corpus arms'
rows are (each row says so: ``defaults_first_checked_on``). They are loaded, split and sourced by
bench/peers/run.py's ``load_log`` (one loader for both benchmarks): the Panda and the UR10e from
``--panda-log`` / ``--ur10e-log`` or their bare clones under /work/.mirror when present (neither is
shipped), the TX40 from identification/datasets/staubli_tx40; a log not at hand is one ``skipped``
line. The TX40's coupled wrist is given to every fit, the plain script's included.

    .venv/bin/python bench/realdata/loro.py [--dir ~/.cache/robodyn/corpus] [--arm NAME] [--corpus-only]
        [--panda-log DIR] [--ur10e-log DIR] [--list] [--out bench/realdata/loro.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
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
TIMING_RUNS = 5  # alternating timed runs of the default and of --select per split (medians reported)
PEERS_RUN = Path(__file__).resolve().parents[1] / "peers" / "run.py"


@dataclass(frozen=True)
class KnownLog:
    """One of the three logs the defaults were first checked on; bench/peers/run.py's ``load_log``
    reads it under ``name`` and splits it (``split_kind`` says how, for listing without the data)."""

    name: str
    maker: str
    model: str
    rate: str
    torque_source: str
    split_kind: str  # "time" or "cross-run"


KNOWN_LOGS = (
    KnownLog("panda", "Franka Emika", "Panda 7-DoF", "1 kHz", "joint torque sensors", "time"),
    KnownLog("ur10e", "Universal Robots", "UR10e 6-DoF", "~94 Hz", "motor currents x drive gains", "cross-run"),
    KnownLog("tx40", "Stäubli", "TX40 6-DoF", "5 kHz", "motor-side torque x reductions (coupled wrist)", "time"),
)


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


def _median_timings(default: dict, selected: dict, model, fit, held, config) -> None:
    """Time the default and --select :data:`TIMING_RUNS` times each, alternating (the first run of
    each is the one already in ``default`` / ``selected``), and set their seconds to the medians;
    every run is kept under ``runs``. The scores are the first runs' (the fits are deterministic:
    a rerun that scores differently is reported, not hidden)."""
    runs = {"default": [(default["seconds"], default["cpu_seconds"])],
            "selected": [(selected["seconds"], selected["cpu_seconds"])]}
    for _ in range(TIMING_RUNS - 1):
        for name, entry, select in (("default", default, False), ("selected", selected, True)):
            t0, c0 = time.perf_counter(), time.process_time()
            again = _identify_and_validate(model, fit, held, config, select=select)
            runs[name].append((round(time.perf_counter() - t0, 2), round(time.process_time() - c0, 2)))
            if again["rmse_sum"] != entry["rmse_sum"]:
                entry.setdefault("rerun_scores", []).append(again["rmse_sum"])
    for name, entry in (("default", default), ("selected", selected)):
        entry["runs"] = [{"seconds": w, "cpu_seconds": c} for w, c in runs[name]]
        entry["seconds"] = float(np.median([w for w, _ in runs[name]]))
        entry["cpu_seconds"] = float(np.median([c for _, c in runs[name]]))


def _fastest_ratio(selected: dict, default: dict, field: str) -> float | None:
    """The fastest of ``selected``'s timed runs over the fastest of ``default``'s (``field``:
    "seconds" or "cpu_seconds"; an entry timed once is its own run)."""
    return _ratio(min(r[field] for r in selected.get("runs", [selected])),
                  min(r[field] for r in default.get("runs", [default])))


def _ratio(a: float, b: float) -> float | None:
    """a / b to three decimals; None when b rounded to zero (a fit faster than the rounding)."""
    return round(a / b, 3) if b > 0 else None


def evaluate_split(model, arm: corpus.Arm, split: corpus.Split, cache: Path) -> dict:
    if split.kind == "time":
        fit, held = split_run(readers.read_run(arm, split.fit, cache))
    else:
        fit, held = readers.read_run(arm, split.fit, cache), readers.read_run(arm, split.held, cache)
    return evaluate_fit_held(model, fit, held, split.label)


def evaluate_fit_held(model, fit, held, label: str, motor_couplings=()) -> dict:
    """Every column of the table on one split: identify on ``fit``, score on ``held``.
    ``motor_couplings``: shared motors (a coupled wrist), given to every fit."""
    from robodyn.identification.pipeline import IdentificationConfig
    from robodyn.identification.processing import ProcessingConfig

    couplings = tuple(tuple(c) for c in motor_couplings)
    row = {"split": label, "fit_samples": fit.count, "held_samples": held.count,
           "rate_hz": round(1.0 / float(np.median(np.diff(fit.t))), 3),
           "excitation_bandwidth_hz": round(excitation_bandwidth(fit), 3)}
    t0 = time.perf_counter()
    row["plain"] = {**plain_script(model, fit, held, motor_couplings=couplings),
                    "seconds": round(time.perf_counter() - t0, 2)}
    default = IdentificationConfig(motor_couplings=couplings)
    try:  # untimed: what the first robodyn fit of a model loads (kernels, first calls) is paid by none of the timed ones
        _identify_and_validate(model, fit, held, default)
    except Exception:  # noqa: BLE001 - the timed call below reports it
        pass
    for name, config in (("default", default),
                         ("default_cutoff_10hz", IdentificationConfig(motor_couplings=couplings,
                                                                      processing=ProcessingConfig(cutoff_hz=10.0))),
                         ("default_without_rotor_inertia", IdentificationConfig(motor_couplings=couplings,
                                                                                rotor_inertia=False))):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            row[name] = {**_identify_and_validate(model, fit, held, config), "seconds": round(time.perf_counter() - t0, 2),
                         "cpu_seconds": round(time.process_time() - c0, 2)}
            row[name]["vs_plain"] = round(row[name]["rmse_sum"] / row["plain"]["rmse_sum"], 4)
        except Exception as exc:  # noqa: BLE001 - one line per failure is the finding
            row[name] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        row["selected"] = {**_identify_and_validate(model, fit, held, default, select=True),
                           "seconds": round(time.perf_counter() - t0, 2),
                           "cpu_seconds": round(time.process_time() - c0, 2)}
        if "rmse_sum" in row.get("default", {}):
            _median_timings(row["default"], row["selected"], model, fit, held, default)
        row["selected"]["vs_plain"] = round(row["selected"]["rmse_sum"] / row["plain"]["rmse_sum"], 4)
        if "rmse_sum" in row.get("default", {}):
            # the bound: --select no worse than the default by more than one fold standard
            # error (of the chosen candidate's cross-validation scores)
            row["selected"]["minus_default"] = round(row["selected"]["rmse_sum"] - row["default"]["rmse_sum"], 4)
            row["selected"]["within_one_fold_standard_error"] = bool(
                row["selected"]["minus_default"] <= row["selected"]["chosen"]["standard_error"])
            row["selected"]["time_vs_default"] = _ratio(row["selected"]["seconds"], row["default"]["seconds"])
            # processor time (all threads of this process): what the machine's other jobs do not
            # inflate, unlike the wall time on a shared host
            row["selected"]["cpu_time_vs_default"] = _ratio(row["selected"]["cpu_seconds"],
                                                            row["default"]["cpu_seconds"])
            # the fastest run of each beside the medians: on a host whose first touch of fresh
            # memory sometimes costs more system time than the fit (a virtual machine's huge pages),
            # the least disturbed run of each is the other honest figure
            for key, field in (("time_vs_default_fastest", "seconds"), ("cpu_time_vs_default_fastest", "cpu_seconds")):
                row["selected"][key] = _fastest_ratio(row["selected"], row["default"], field)
    except Exception as exc:  # noqa: BLE001
        row["selected"] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    row["default_cutoff_10hz"]["note"] = "diagnostic only, not a default"
    row["default_without_rotor_inertia"]["note"] = "diagnostic only, not a default"
    t0 = time.perf_counter()
    try:
        row["ceiling"] = {**_identify_and_validate(model, held, held, default),
                          "seconds": round(time.perf_counter() - t0, 2),
                          "of": "the default configuration fitted on the held-out data itself"}
    except Exception as exc:  # noqa: BLE001
        row["ceiling"] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    row["ceiling_plain"] = {**plain_script(model, held, held, motor_couplings=couplings),
                            "of": "the plain script fitted on the held-out data itself"}
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


def _peers_run():
    """bench/peers/run.py, whose ``load_log`` reads the three known logs, by path (bench/realdata
    has a run.py too) and once per process; the folders it puts on sys.path are taken off again."""
    if "peers_run" not in sys.modules:
        path = list(sys.path)
        spec = importlib.util.spec_from_file_location("peers_run", PEERS_RUN)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path[:] = path
        sys.modules["peers_run"] = module
    return sys.modules["peers_run"]


def evaluate_known_log(log: KnownLog, panda_log: Path | None = None, ur10e_log: Path | None = None) -> dict:
    """The table's row of one of :data:`KNOWN_LOGS`, read by bench/peers/run.py's ``load_log``; a
    log not at hand (or not readable) is one ``skipped`` line."""
    from robodyn.errors import UserError

    out = {"arm": log.name, "maker": log.maker, "model": log.model, "rate": log.rate,
           "torque_source": log.torque_source, "defaults_first_checked_on": True,
           "note": "one of the three logs robodyn's defaults were first checked on: not out-of-sample "
                   "evidence in the sense the corpus arms are"}
    args = argparse.Namespace(panda_log=panda_log, ur10e_log=ur10e_log, dir=fetch.DEFAULT_CACHE)
    with tempfile.TemporaryDirectory() as scratch:
        try:
            loaded = _peers_run().load_log(log.name, args, Path(scratch))
        except (ValueError, OSError, UserError, subprocess.CalledProcessError) as exc:
            return {**out, "skipped": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    out.update(source=loaded["source"], dof=loaded["model"].dof)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["splits"] = [{"kind": log.split_kind,
                          **evaluate_fit_held(loaded["model"], loaded["fit"], loaded["held"], loaded["split"],
                                              loaded["couplings"])}]
    return out


def arm_names(corpus_only: bool = False) -> list[str]:
    """Every arm the table scores, in order: the corpus's, then (unless ``corpus_only``) the known logs."""
    return [a.name for a in corpus.ARMS] + ([] if corpus_only else [k.name for k in KNOWN_LOGS])


def splits_of(name: str) -> list[str]:
    """The splits the table scores for arm ``name`` (its corpus labels, or a known log's kind)."""
    known = {k.name: k for k in KNOWN_LOGS}
    if name in known:
        return [known[name].split_kind]
    return [s.label for s in corpus.arm(name).splits]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", type=Path, default=fetch.DEFAULT_CACHE, help="the cache fetch.py filled")
    p.add_argument("--arm", action="append", help="only these arms (repeatable): a corpus arm or one of "
                   f"{[k.name for k in KNOWN_LOGS]}")
    p.add_argument("--corpus-only", action="store_true", help="leave out the three logs the defaults were first "
                   f"checked on ({', '.join(k.name for k in KNOWN_LOGS)})")
    p.add_argument("--panda-log", type=Path, help="folder of the Gaz et al. 2019 Panda log (default: its bare clone "
                   "under /work/.mirror when present)")
    p.add_argument("--ur10e-log", type=Path, help="dynamic_calibration checkout or bare clone (default: its bare "
                   "clone under /work/.mirror when present)")
    p.add_argument("--list", action="store_true", help="print each arm and its splits, read nothing, and exit")
    p.add_argument("--out", type=Path, default=Path(__file__).with_name("loro.json"))
    args = p.parse_args(argv)
    known = {k.name: k for k in KNOWN_LOGS}
    names = args.arm or arm_names(args.corpus_only)
    unknown = [n for n in names if n not in known and n not in {a.name for a in corpus.ARMS}]
    if unknown:
        p.error(f"--arm: unknown {unknown}; expected any of {arm_names()}")
    if args.corpus_only:
        names = [n for n in names if n not in known]
    if args.list:
        for name in names:
            print(f"{name}: {', '.join(splits_of(name))}")
        return 0
    result = {"benchmark": "leave-one-robot-out", "score": "sum over joints of per-joint RMSE (N.m) against the raw "
              "measured torque on the held-out data", "plain_cutoff_hz": PLAIN_CUTOFF_HZ,
              "host": {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()},
              "arms": [evaluate_known_log(known[n], args.panda_log, args.ur10e_log) if n in known
                       else evaluate_arm(corpus.arm(n), args.dir) for n in names]}
    result["host"]["loadavg_end"] = os.getloadavg()
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
