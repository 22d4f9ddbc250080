"""Which estimators `identify --select` fits on every fold, chosen leave-one-robot-out.

Every selectable estimator of the table (names.ESTIMATORS) can be a `--select` candidate; the ones
marked ``candidate`` are fitted on every fold without being asked (another is fitted when it is
the reference, `--select --method NAME`). A candidate costs its fits on every fold of every
friction and rotor-inertia family; one that is never the best candidate and whose absence changes
no choice costs time and decides nothing.

For every split bench/realdata/loro.py scores (the corpus arms and, unless ``--corpus-only``, the
three logs the defaults were first checked on), `--select` runs twice on the identification part:
with every selectable estimator as a candidate ("all") and with the table's candidates ("table"),
each timed in processor time after the caches a fresh command would not have are forgotten
(loro._fresh_caches), the chosen candidate scored on the held-out part as loro.py scores it. The
"all" run's candidate table says, per selectable estimator, whether it had the best mean and
whether the one-standard-error rule's choice changes without it (selection.one_standard_error_choice
on the same table).

Leave-one-robot-out: with arm A left out, an estimator is left out of the candidates if on every
split of every other arm it was neither the best candidate nor needed for the choice; the table
says what that choice does on A (its choice, and so its held-out score, the same or not).

    .venv/bin/python bench/realdata/select_candidates.py [--corpus-only] [--out bench/realdata/select_candidates.json]
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as robodyn/cli.py sets it

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loro  # noqa: E402
from loro_choice import corpus_arguments, splits  # noqa: E402

KEY = ("friction", "rotor_inertia", "method", "cutoff_hz")


def _key(candidate: dict) -> tuple:
    return tuple(candidate[k] for k in KEY)


def run_select(model, fit, held, couplings, methods: list[str] | None) -> dict:
    """`identify --select` on ``fit`` with ``methods`` as its candidate estimators (None: the
    table's), scored on ``held``; the candidate table and the processor time."""
    from robodyn.identification import selection
    from robodyn.identification.methods import identification_result
    from robodyn.identification.pipeline import IdentificationConfig, validate

    config = IdentificationConfig(motor_couplings=tuple(tuple(c) for c in couplings))
    saved = selection.candidate_methods
    if methods is not None:
        selection.candidate_methods = lambda reference=None: list(methods)
    try:
        loro._fresh_caches()
        c0 = time.process_time()
        result = identification_result(model, [fit], config, config.method, select=True, choose_method=False)[0]
        cpu = time.process_time() - c0
    finally:
        selection.candidate_methods = saved
    sel = result.selection
    return {"cpu_seconds": round(cpu, 3), "chosen": {k: sel["chosen"][k] for k in KEY},
            "reference": None if sel["reference"] is None else {k: sel["reference"][k] for k in KEY},
            "held_out_rmse_sum": validate(model, result, [held])["rmse_sum"],
            "candidates": [{k: c[k] for k in (*KEY, "parameters", "mean", "standard_error")}
                           for c in sel["candidates"]]}


def estimator_roles(run: dict, estimators: list[str]) -> dict:
    """Per estimator: best mean of the table, and whether the rule's choice changes without it."""
    from robodyn.identification.selection import one_standard_error_choice

    table = run["candidates"]
    scored = [c for c in table if c["mean"] is not None]
    best = min(scored, key=lambda c: c["mean"])
    out = {}
    for name in estimators:
        rest = [c for c in table if c["method"] != name]
        reference = next((k for k, c in enumerate(rest) if run["reference"] and _key(c) == _key(run["reference"])),
                         None)
        chosen = _key(rest[one_standard_error_choice(rest, reference)[0]]) if rest else None
        out[name] = {"best": best["method"] == name, "choice_changes_without_it": chosen != _key(run["chosen"])}
    return out


def leave_one_robot_out(rows: list[dict], estimators: list[str]) -> list[dict]:
    arms = sorted({r["arm"] for r in rows}, key=[r["arm"] for r in rows].index)
    out = []
    for held_out in arms:
        others = [r for r in rows if r["arm"] != held_out]
        left_out = [e for e in estimators
                    if not any(r["roles"][e]["best"] or r["roles"][e]["choice_changes_without_it"] for r in others)]
        own = [r for r in rows if r["arm"] == held_out]
        out.append({"arm_left_out": held_out, "estimators_left_out_on_the_others": left_out,
                    "choice_on_it_unchanged": all(not any(r["roles"][e]["choice_changes_without_it"] for e in left_out)
                                                  for r in own)})
    return out


def main(argv=None) -> int:
    from robodyn.identification.names import CANDIDATES, SELECTABLE
    from robodyn.identification.selection import CONSISTENT, consistent_fit_available

    args = corpus_arguments(__doc__.split("\n\n")[0], "select_candidates.json", argv)
    every = list(SELECTABLE) + ([CONSISTENT] if consistent_fit_available() else [])
    estimators = list(SELECTABLE)
    rows = []
    load_start = os.getloadavg()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for arm, label, model, fit, held, couplings in splits(args.corpus_only, args.dir):
            runs = {"all": run_select(model, fit, held, couplings, every),
                    "table": run_select(model, fit, held, couplings, None)}
            row = {"arm": arm, "split": label, "roles": estimator_roles(runs["all"], estimators),
                   **{name: {k: v for k, v in run.items() if k != "candidates"} for name, run in runs.items()},
                   "cpu_table_vs_all": round(runs["table"]["cpu_seconds"] / runs["all"]["cpu_seconds"], 3)}
            print(f"select_candidates: {arm} {label}: cpu all {runs['all']['cpu_seconds']:.2f} s, table "
                  f"{runs['table']['cpu_seconds']:.2f} s, held-out {runs['all']['held_out_rmse_sum']:.4g} / "
                  f"{runs['table']['held_out_rmse_sum']:.4g}", file=sys.stderr, flush=True)
            rows.append(row)
    doc = {"benchmark": "leave-one-robot-out choice of --select's candidate estimators",
           "command": "python bench/realdata/select_candidates.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "selectable": estimators, "table_candidates": list(CANDIDATES),
           "score": "sum over joints of the per-joint RMSE against the raw measured torque on the held-out data",
           "splits": rows, "leave_one_robot_out": leave_one_robot_out(rows, estimators),
           "per_estimator": {e: {"best_on_splits": sum(r["roles"][e]["best"] for r in rows),
                                 "choice_changes_without_it_on_splits":
                                     sum(r["roles"][e]["choice_changes_without_it"] for r in rows)}
                             for e in estimators},
           "held_out_same_on_splits": sum(r["all"]["held_out_rmse_sum"] == r["table"]["held_out_rmse_sum"]
                                          for r in rows),
           "split_count": len(rows),
           "load_average_start": load_start, "load_average_end": os.getloadavg()}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc["leave_one_robot_out"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
