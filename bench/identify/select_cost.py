"""What ``--select`` costs against the default on the identify bench's own recordings, by length.

The recordings are run.py's (a simulated Panda, a Fourier excitation, RNEA torques with viscous and
Coulomb friction plus noise): its own model, so they serve timing only and no accuracy is claimed
from them. For each length the first 60 % is identified (``robodyn identify``'s path: the default,
and ``--select``) and the rest validated, in process, by bench/realdata/loro.py's own call (each
with a fresh process's caches), as it times the real logs: the default and ``--select`` in turn,
``--runs`` times each, medians of wall and processor time.

Beside the times, what decides them: one processed sample in how many each fold fits and scores on
(``fold_budget.selection_thinning``: a fold's fit is kept within ``fold_budget.SELECTION_SAMPLES``), how
much a fold keeps (``fold_budget.fold_memory``: those samples' regressor rows), how many folds are
scored at once (``fold_budget.fold_workers``), and, for a length whose one fold would keep over half
the memory available, the one line ``--select`` refuses it with (nothing is timed for it then).

    .venv/bin/python bench/identify/select_cost.py [--seconds 60,300,900,3600] [--rate 1000] [--runs 3]
        [--data-dir DIR] [--out bench/identify/select_cost.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIT_SHARE = 0.6  # as the real logs' time split


def _generator() -> str:
    spec = importlib.util.spec_from_file_location("identify_bench", HERE / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GENERATE


def recording(data_dir: Path, seconds: float, rate: float) -> Path:
    """run.py's Panda recording of ``seconds`` at ``rate``, written once into ``data_dir``."""
    out = data_dir / f"panda-{seconds:g}s-{rate:g}hz"
    if not (out / "tau.npy").exists():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-c", _generator(), str(out), "panda", str(seconds), str(rate)], check=True)
    return out


def _timed(call) -> tuple[float, float, object]:
    w0, c0 = time.perf_counter(), time.process_time()
    value = call()
    return time.perf_counter() - w0, time.process_time() - c0, value


def _loro():
    """bench/realdata/loro.py: the one place that runs what ``robodyn identify`` does (with a fresh
    process's caches) and scores it, and its time split."""
    sys.path.insert(0, str(HERE.parent / "realdata"))
    import loro

    return loro


def measure(directory: Path, runs: int) -> dict:
    """The default and --select on one recording: medians of ``runs`` alternating runs of each."""
    import numpy as np

    from robodyn.identification import fold_budget
    from robodyn.identification.folds import FOLDS, cross_validation_folds
    from robodyn.identification.pipeline import IdentificationConfig
    from robodyn.identification.signals import SampledData
    from robodyn.robot.loader import load_model

    loro = _loro()
    model = load_model("panda")
    fit, held = loro.split_run(SampledData(*(np.load(directory / f"{k}.npy") for k in ("t", "q", "tau"))), FIT_SHARE)
    config = IdentificationConfig()
    plan = cross_validation_folds([fit], FOLDS)[0]
    every = fold_budget.selection_thinning(plan, config)
    fold_bytes, counted = fold_budget.fold_memory(model, config, plan, every)
    loro._identify_and_validate(model, fit, held, config)  # untimed: the kernels' first calls (and Numba's layer)
    row = {"fit_samples": fit.count, "held_samples": held.count, "thinning": every,
           "fold_memory_mib": round(fold_bytes / 2**20, 1), "fold_memory_counted": counted,
           "folds_at_once": fold_budget.fold_workers(len(plan), fold_bytes, fold_budget.available_memory())}
    times: dict = {"default": [], "selected": []}
    scores: dict = {}
    for _ in range(runs):
        for name, select in (("default", False), ("selected", True)):
            if select and "selected_refused" in row:
                continue
            try:
                wall, cpu, out = _timed(lambda: loro._identify_and_validate(model, fit, held, config, select=select))
            except ValueError as exc:  # --select refuses what would not fit in memory
                row["selected_refused"] = " ".join(str(exc).split())
                del times["selected"]
                continue
            times[name].append({"seconds": round(wall, 3), "cpu_seconds": round(cpu, 3)})
            scores[name] = out["rmse_sum"]
    for name, entries in times.items():
        row[name] = {"runs": entries, "rmse_sum": scores[name],
                     "seconds": statistics.median(e["seconds"] for e in entries),
                     "cpu_seconds": statistics.median(e["cpu_seconds"] for e in entries)}
    if "selected" in row:
        row["time_vs_default"] = loro._ratio(row["selected"]["seconds"], row["default"]["seconds"])
        row["cpu_time_vs_default"] = loro._ratio(row["selected"]["cpu_seconds"], row["default"]["cpu_seconds"])
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", default="60,300,900,3600", help="recording lengths, comma-separated")
    p.add_argument("--rate", type=float, default=1000.0, help="sample rate of the recordings, Hz")
    p.add_argument("--runs", type=int, default=3, help="timed runs of each, alternating (medians reported)")
    p.add_argument("--data-dir", type=Path, help="where the recordings are kept (default: a temporary directory)")
    p.add_argument("--out", type=Path, default=HERE / "select_cost.json")
    args = p.parse_args(argv)
    try:
        lengths = [float(s) for s in args.seconds.split(",")]
    except ValueError:
        print(f"select_cost: --seconds: expected comma-separated numbers, got {args.seconds!r}", file=sys.stderr)
        return 2
    if args.runs < 1 or any(s <= 0 for s in lengths):
        print("select_cost: --runs and every --seconds must be positive", file=sys.stderr)
        return 2
    load_start = list(os.getloadavg())
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = args.data_dir or Path(scratch)
        rows = []
        for seconds in lengths:
            print(f"select_cost: {seconds:g} s at {args.rate:g} Hz", file=sys.stderr, flush=True)
            rows.append({"seconds": seconds, "rate_hz": args.rate,
                         **measure(recording(data_dir, seconds, args.rate), args.runs)})
    report = {"benchmark": "robodyn identify's default and --select, in process, on the identify bench's "
                           "simulated Panda recordings (timing only: its own model)",
              "fit_share": FIT_SHARE, "runs": args.runs,
              "host": {"cpus": os.cpu_count(), "loadavg_start": load_start, "loadavg_end": list(os.getloadavg())},
              "lengths": rows}
    text = json.dumps(report, indent=1)
    args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
