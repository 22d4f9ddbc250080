"""Choosing a default leave-one-robot-out: which of several variants of one default rule would be
picked without the arm it is judged on, and how that pick does on that arm.

Each variant changes one setting of ``robodyn identify``'s defaults (today: the factors the
automatic cut-off's validation tries around the rule's value). For every split of every arm
bench/realdata/loro.py scores (the corpus arms and, unless ``--corpus-only``, the three logs the
defaults were first checked on), the default is fitted under each variant and scored as loro.py
scores it (sum over joints of the per-joint RMSE against the raw measured torque on the held-out
data), and divided by the careful plain script's score on the same split. An arm's score under a
variant is the mean over its splits of log(default / plain). Then, for each arm A, the variant
with the lowest mean arm score over the OTHER arms is the one a leave-one-robot-out choice would
make without A; the table says which it is and what it scores on A, beside the current default.
A variant becomes the default only if it is chosen with every arm left out and is never worse on
the arm left out (nothing here changes a default by itself).

    .venv/bin/python bench/realdata/loro_choice.py [--corpus-only] [--out bench/realdata/loro_choice.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import warnings
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as robodyn/cli.py sets it

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
import fetch  # noqa: E402
import loro  # noqa: E402
import readers  # noqa: E402

# the variants of the automatic cut-off's validation: the factors tried around the rule's value
CUTOFF_FACTOR_VARIANTS = {
    "current": (1.0, 2.0, 4.0, 8.0),
    "with_half": (0.5, 1.0, 2.0, 4.0, 8.0),
}
CURRENT = "current"


def splits(corpus_only: bool, cache: Path):
    """(arm, split label, model, fit, held, couplings) of every split loro.py scores that is at hand."""
    for arm in corpus.ARMS:
        if not arm.evaluate or fetch.cached(cache, arm):
            continue
        model = readers.load_robot(arm, cache)
        for split in arm.splits:
            if split.kind == "time":
                fit, held = loro.split_run(readers.read_run(arm, split.fit, cache))
            else:
                fit, held = readers.read_run(arm, split.fit, cache), readers.read_run(arm, split.held, cache)
            yield arm.name, split.label, model, fit, held, ()
    if corpus_only:
        return
    args = argparse.Namespace(panda_log=None, ur10e_log=None, dir=cache)
    for log in loro.KNOWN_LOGS:
        with tempfile.TemporaryDirectory() as scratch:
            try:
                got = loro._peers_run().load_log(log.name, args, Path(scratch))
            except Exception as exc:  # noqa: BLE001 - a log not at hand is left out, said on stderr
                print(f"loro_choice: {log.name} left out: {exc}".splitlines()[0], file=sys.stderr)
                continue
        yield log.name, got["split"], got["model"], got["fit"], got["held"], tuple(got["couplings"])


def default_score(model, fit, held, couplings, factors) -> float:
    from robodyn.identification import selection
    from robodyn.identification.pipeline import IdentificationConfig

    saved = selection.AUTO_CUTOFF_FACTORS
    selection.AUTO_CUTOFF_FACTORS = factors
    try:
        config = IdentificationConfig(motor_couplings=tuple(tuple(c) for c in couplings))
        return loro._identify_and_validate(model, fit, held, config)["rmse_sum"]
    finally:
        selection.AUTO_CUTOFF_FACTORS = saved


def leave_one_robot_out(rows: list[dict], variants) -> list[dict]:
    """Per arm: the variant chosen on the other arms (lowest mean arm score), its score on this
    arm and the current default's."""
    arms = sorted({r["arm"] for r in rows}, key=[r["arm"] for r in rows].index)

    def arm_score(arm: str, v: str) -> float:
        own = [r for r in rows if r["arm"] == arm]
        return sum(math.log(r["default"][v] / r["plain"]) for r in own) / len(own)

    out = []
    for held_out in arms:
        others = [a for a in arms if a != held_out]
        on_others = {v: sum(arm_score(a, v) for a in others) / len(others) for v in variants}
        chosen = min(variants, key=lambda v: on_others[v])
        out.append({"arm_left_out": held_out, "chosen_on_the_others": chosen,
                    "mean_log_ratio_on_the_others": {v: round(x, 4) for v, x in on_others.items()},
                    "score_on_the_arm_left_out": round(arm_score(held_out, chosen), 4),
                    "current_default_on_it": round(arm_score(held_out, CURRENT), 4)})
    return out


def corpus_arguments(description: str, out: str, argv=None, more=None) -> argparse.Namespace:
    """--dir, --corpus-only and --out (default ``out`` beside this file), as the scripts that run
    over every split of loro.py's table take them; ``more`` adds a script's own to the parser."""
    p = argparse.ArgumentParser(description=description)
    if more is not None:
        more(p)
    p.add_argument("--dir", type=Path, default=fetch.DEFAULT_CACHE, help="the cache fetch.py filled")
    p.add_argument("--corpus-only", action="store_true", help="leave the three logs the defaults were first "
                                                              "checked on out")
    p.add_argument("--out", type=Path, default=Path(__file__).with_name(out))
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = corpus_arguments(__doc__.split("\n\n")[0], "loro_choice.json", argv)
    rows = []
    load_start = os.getloadavg()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for arm, label, model, fit, held, couplings in splits(args.corpus_only, args.dir):
            row = {"arm": arm, "split": label,
                   "plain": loro.plain_script(model, fit, held, motor_couplings=couplings)["rmse_sum"],
                   "default": {v: default_score(model, fit, held, couplings, f)
                               for v, f in CUTOFF_FACTOR_VARIANTS.items()}}
            print(f"loro_choice: {arm} {label}: plain {row['plain']:.4g}, " +
                  ", ".join(f"{v} {x:.4g}" for v, x in row["default"].items()), file=sys.stderr, flush=True)
            rows.append(row)
    doc = {"benchmark": "leave-one-robot-out choice of a default",
           "command": "python bench/realdata/loro_choice.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "setting": "AUTO_CUTOFF_FACTORS (identification/selection.py)",
           "variants": {k: list(v) for k, v in CUTOFF_FACTOR_VARIANTS.items()}, "current": CURRENT,
           "score": "per arm, the mean over its splits of log(default / plain script), both against the raw "
                    "measured torque on the held-out data (lower is better)",
           "splits": rows, "leave_one_robot_out": leave_one_robot_out(rows, list(CUTOFF_FACTOR_VARIANTS)),
           "load_average_start": load_start, "load_average_end": os.getloadavg()}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc["leave_one_robot_out"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
