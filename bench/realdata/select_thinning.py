"""What thinning a fold's samples does to `identify --select`'s table and choice, on real logs.

On a long recording, model selection fits and scores every fold on one processed sample in k
(fold_budget.selection_thinning keeps a fold's fit within fold_budget.SELECTION_SAMPLES), so its time
and memory stop growing with the recording. No log here is that long, so the thinning is forced:
for every split bench/realdata/loro.py scores (the corpus arms and, unless ``--corpus-only``, the
three logs the defaults were first checked on), `--select` runs on the identification part with
every sample and then with one in k for each k of ``--every``, the cap set so that the largest
fold's fit thins by exactly k. Per k: the samples the largest fold then fits on, whether the choice
is the same, the held-out score of the chosen candidate's refit (loro.py's score: sum over joints
of the per-joint RMSE against the raw measured torque), and how far the candidates' mean fold
scores moved, relative and in units of the unthinned candidate's standard error (the unit the
one-standard-error rule compares in).

Forced on logs this short, a thinned fold keeps a few hundred to a few thousand samples, where
select's own thinning always leaves more than half of SELECTION_SAMPLES: the fold sizes at which
the choice changed are listed, to be read against that.

    .venv/bin/python bench/realdata/select_thinning.py [--every 2,4,8] [--corpus-only]
        [--out bench/realdata/select_thinning.json]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as robodyn/cli.py sets it

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loro_choice  # noqa: E402

KEY = ("friction", "rotor_inertia", "method", "cutoff_hz")


def selected(model, fit, held, couplings, cap: int) -> dict:
    """`--select` on ``fit`` with a fold's fit samples capped at ``cap``: its thinning, candidate
    means and standard errors, choice, and the chosen refit's score on ``held``."""
    from robodyn.identification import fold_budget, selection
    from robodyn.identification.pipeline import IdentificationConfig, validate

    saved = fold_budget.SELECTION_SAMPLES
    fold_budget.SELECTION_SAMPLES = cap
    try:
        config = IdentificationConfig(motor_couplings=tuple(tuple(c) for c in couplings))
        result = selection.select(model, [fit], config)
    finally:
        fold_budget.SELECTION_SAMPLES = saved
    sel = result.selection
    return {"thinning": sel["thinning"], "chosen": {k: sel["chosen"][k] for k in KEY},
            "held_out_rmse_sum": validate(model, result, [held])["rmse_sum"],
            "candidates": {tuple(c[k] for k in KEY): (c["mean"], c["standard_error"]) for c in sel["candidates"]}}


def moved(whole: dict, thinned: dict) -> dict:
    """How far the candidates' mean fold scores moved from ``whole``'s: relative (largest, median)
    and in units of the unthinned candidate's standard error (largest); candidates scored in both."""
    rel, in_se = [], []
    for key, (mean, se) in whole["candidates"].items():
        other = thinned["candidates"].get(key, (None, None))[0]
        if mean is None or other is None:
            continue
        rel.append(abs(other - mean) / mean)
        if se:
            in_se.append(abs(other - mean) / se)
    return {"mean_moved_relative_max": round(max(rel), 5),
            "mean_moved_relative_median": round(statistics.median(rel), 5),
            "mean_moved_in_standard_errors_max": round(max(in_se), 3) if in_se else None}


def largest_fold_fit(fit) -> int:
    """The samples the largest fold of ``fit`` fits on (select's folds)."""
    from robodyn.identification.folds import FOLDS, cross_validation_folds

    plan = cross_validation_folds([fit], FOLDS)[0]
    return max(sum(e - s for _, s, e in fold.fit) for fold in plan)


def fold_cap(fit, every: int) -> int:
    """The cap on a fold's fit samples under which the largest fold of ``fit`` thins by ``every``."""
    return -(-largest_fold_fit(fit) // every)


def main(argv=None) -> int:
    def every_option(p):
        p.add_argument("--every", default="2,4,8", help="thinnings to force, comma-separated whole numbers > 1")

    args = loro_choice.corpus_arguments(__doc__.split("\n\n")[0], "select_thinning.json", argv, more=every_option)
    everies = [int(x) for x in args.every.split(",") if x.strip().isdigit()]
    if len(everies) != len(args.every.split(",")) or any(k < 2 for k in everies):
        print(f"select_thinning: --every: expected comma-separated whole numbers of at least 2, got {args.every!r}",
              file=sys.stderr)
        return 2
    rows = []
    load_start = os.getloadavg()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for arm, label, model, fit, held, couplings in loro_choice.splits(args.corpus_only, args.dir):
            whole = selected(model, fit, held, couplings, 10**12)
            largest = largest_fold_fit(fit)
            row = {"arm": arm, "split": label, "fit_samples": fit.count, "largest_fold_fit": largest,
                   "chosen": whole["chosen"],
                   "held_out_rmse_sum": whole["held_out_rmse_sum"], "thinned": []}
            for every in everies:
                thinned = selected(model, fit, held, couplings, fold_cap(fit, every))
                row["thinned"].append({"every": thinned["thinning"], "fold_fit_samples": -(-largest // every),
                                       "same_choice": thinned["chosen"] == whole["chosen"],
                                       "chosen": thinned["chosen"], "held_out_rmse_sum": thinned["held_out_rmse_sum"],
                                       **moved(whole, thinned)})
            print(f"select_thinning: {arm} {label}: " + ", ".join(
                f"1 in {t['every']}: {'same choice' if t['same_choice'] else 'other choice'}, means moved "
                f"<= {t['mean_moved_in_standard_errors_max']} s.e." for t in row["thinned"]),
                file=sys.stderr, flush=True)
            rows.append(row)
    doc = {"benchmark": "--select with each fold thinned to one processed sample in k, against every sample",
           "command": "python bench/realdata/select_thinning.py "
                      + " ".join(argv if argv is not None else sys.argv[1:]),
           "score": "sum over joints of the per-joint RMSE against the raw measured torque on the held-out data",
           "splits": rows,
           "same_choice": {str(k): sum(t["same_choice"] for r in rows for t in r["thinned"] if t["every"] == k)
                           for k in everies},
           "split_count": len(rows),
           # the thinned folds' sizes where the choice changed: select's own thinning keeps more
           # than half of fold_budget.SELECTION_SAMPLES in a fold
           "choice_changed_at_fold_fit_samples": sorted(t["fold_fit_samples"] for r in rows for t in r["thinned"]
                                                        if not t["same_choice"]),
           # how far the chosen refit's held-out score moved (only where the choice changed), percent
           "held_out_moved_percent_max": round(max((abs(t["held_out_rmse_sum"] / r["held_out_rmse_sum"] - 1.0) * 100.0
                                                    for r in rows for t in r["thinned"]), default=0.0), 2),
           "same_choice_at_fold_fit_samples_min": min((t["fold_fit_samples"] for r in rows for t in r["thinned"]
                                                       if t["same_choice"]), default=None),
           "load_average_start": load_start, "load_average_end": os.getloadavg()}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({k: doc[k] for k in ("same_choice", "split_count", "choice_changed_at_fold_fit_samples")},
                     indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
