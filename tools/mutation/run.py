"""Mutation testing of robodyn's math modules with cosmic-ray.

    python tools/mutation/run.py [--module identification/friction.py ...] [--sample N] [--workdir DIR]

For each module of tools/mutation/modules.toml: write a cosmic-ray config whose test command is
that module's targeted pytest subset, `cosmic-ray init`, mark the excluded operator families
(and, with a sample, all but a seeded random subset) as skipped, check the unmutated baseline
passes, `cosmic-ray exec` (one mutant at a time: the source file is mutated in place), and print
killed / survived / timeout / incompetent / equivalent per module as JSON, with the diff of every
survivor. Mutants listed in tools/mutation/equivalent.toml (with the reason) are counted as
equivalent, not as survivors.

Run it from the repository root in the project's venv (`make mutation`). Never interrupt it with
SIGKILL: cosmic-ray restores the mutated file after each mutant; the script checks at the end that
`git diff` of every mutated module is empty and fails loudly if not.
"""
from __future__ import annotations

import argparse
import datetime
import json
import random
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _test_command(module: dict, timeout: float) -> str:
    env = "NUMBA_DISABLE_JIT=1 " if module.get("numba") == "nojit" else ""
    tests = " ".join(shlex.quote(t) for t in module["tests"])
    tests += "".join(f" --deselect {shlex.quote(t)}" for t in module.get("deselect", ()))
    # -x: the first failing test kills the mutant; the per-test timeout turns a mutant that
    # loops forever into a failure before cosmic-ray's own timeout has to kill the group
    return (f"env {env}PYTHONHASHSEED=0 {shlex.quote(sys.executable)} -m pytest -x -q -p no:cacheprovider "
            f"-p no:randomly --timeout={int(timeout)} {tests}")


def _write_config(path: Path, module: dict, command: str, timeout: float, excluded) -> None:
    lines = ["[cosmic-ray]", f'module-path = "{module["path"]}"', f"timeout = {timeout:.1f}",
             "excluded-modules = []", f"test-command = {json.dumps(command)}", "",
             "[cosmic-ray.distributor]", 'name = "local"', "",
             "[cosmic-ray.filters.operators-filter]",
             "exclude-operators = [" + ", ".join(json.dumps(e) for e in excluded) + "]", ""]
    path.write_text("\n".join(lines))


def _run(cmd, **kw):
    return subprocess.run(cmd, cwd=ROOT, check=True, **kw)


def _skip(db: Path, excluded, n: int | None, seed: int, module_path: str) -> int:
    """Mark the mutants of excluded operators, and all but n of the rest (drawn with
    random.Random(seed)), as skipped, in one transaction. Returns how many remain to run."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult
    pattern = re.compile("|".join(f"(?:{e})" for e in excluded))
    with use_db(str(db), WorkDB.Mode.open) as work_db:
        pending = sorted(work_db.pending_work_items, key=lambda item: item.job_id)
        filtered = [i.job_id for i in pending if any(pattern.match(m.operator_name) for m in i.mutations)]
        kept = sorted(set(i.job_id for i in pending) - set(filtered))
        if filtered:
            work_db.set_multiple_results(filtered, WorkResult(output="Filtered operator",
                                                              worker_outcome=WorkerOutcome.SKIPPED))
        if n and n < len(kept):
            chosen = set(random.Random(f"{seed}:{module_path}").sample(kept, n))
            work_db.set_multiple_results([j for j in kept if j not in chosen],
                                         WorkResult(output="not in the sample", worker_outcome=WorkerOutcome.SKIPPED))
            return n
        return len(kept)


def _equivalents() -> list[dict]:
    path = HERE / "equivalent.toml"
    return tomllib.loads(path.read_text()).get("mutant", []) if path.exists() else []


def _source_line(module_path: str, line: int) -> str:
    return (ROOT / module_path).read_text().splitlines()[line - 1].strip()


def _summary(db: Path, module_path: str, equivalents: list[dict]) -> dict:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome
    counts = dict(killed=0, survived=0, timeout=0, incompetent=0, equivalent=0, skipped=0, pending=0)
    survivors, stale = [], []
    known = [e for e in equivalents if e["module"] == module_path]
    with use_db(str(db), WorkDB.Mode.open) as work_db:
        results = dict(work_db.results)
        for item in work_db.work_items:
            m = item.mutations[0]
            line = m.start_pos[0]
            res = results.get(item.job_id)
            if res is None:
                counts["pending"] += 1
                continue
            if res.worker_outcome == WorkerOutcome.SKIPPED:
                counts["skipped"] += 1
                continue
            if res.test_outcome == TestOutcome.KILLED:
                counts["timeout" if (res.output or "").strip() == "timeout" else "killed"] += 1
                continue
            if res.test_outcome == TestOutcome.INCOMPETENT or res.worker_outcome != WorkerOutcome.NORMAL:
                counts["incompetent"] += 1
                continue
            match = [e for e in known if e["operator"] == m.operator_name and e["line"] == line
                     and e["occurrence"] == m.occurrence]
            if match:
                if match[0].get("source") and match[0]["source"] != _source_line(module_path, line):
                    stale.append(match[0])
                counts["equivalent"] += 1
                continue
            counts["survived"] += 1
            survivors.append({"job": item.job_id, "operator": m.operator_name, "occurrence": m.occurrence,
                              "line": line, "source": _source_line(module_path, line), "diff": res.diff})
    tried = counts["killed"] + counts["timeout"] + counts["survived"]
    counts["score"] = round((counts["killed"] + counts["timeout"]) / tried, 4) if tried else None
    return {"module": module_path, **counts, "survivors": survivors,
            "stale_equivalents": stale}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", action="append", help="only these module paths (repeatable)")
    ap.add_argument("--sample", type=int, help="run a seeded random sample of this many mutants per module")
    ap.add_argument("--seed", type=int, help="sample seed (default: modules.toml's)")
    ap.add_argument("--workdir", default="/tmp/robodyn-mutation", help="session databases and configs")
    ap.add_argument("--report-only", action="store_true", help="summarise existing sessions, run nothing")
    ap.add_argument("--json", action="store_true", help="print only the JSON summary")
    args = ap.parse_args(argv)

    cfg = tomllib.loads((HERE / "modules.toml").read_text())
    excluded = cfg["defaults"]["exclude-operators"]
    seed = cfg["defaults"]["seed"] if args.seed is None else args.seed
    modules = [m for m in cfg["module"] if not args.module or m["path"] in args.module]
    unknown = set(args.module or ()) - {m["path"] for m in cfg["module"]}
    if unknown:
        ap.error(f"--module: not in tools/mutation/modules.toml: {sorted(unknown)}")
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    equivalents = _equivalents()
    summaries = []
    for module in modules:
        name = module["path"].replace("/", ".").removesuffix(".py")
        config, db = work / f"{name}.toml", work / f"{name}.sqlite"
        if not args.report_only:
            # the baseline sets the timeout: 4x the unmutated run, at least 60 s
            probe = _test_command(module, 600)
            t0 = time.monotonic()
            base = subprocess.run(shlex.split(probe), cwd=ROOT, capture_output=True, text=True)
            elapsed = time.monotonic() - t0
            if base.returncode != 0:
                print(base.stdout[-3000:], file=sys.stderr)
                raise SystemExit(f"{module['path']}: the unmutated tests fail; fix them before mutating")
            timeout = max(60.0, 4.0 * elapsed)
            command = _test_command(module, timeout)
            _write_config(config, module, command, timeout, excluded)
            db.unlink(missing_ok=True)
            _run([sys.executable, "-m", "cosmic_ray.cli", "init", str(config), str(db)])
            n = module.get("sample", args.sample)
            remaining = _skip(db, excluded, n, seed, module["path"])
            if not args.json:
                print(f"{module['path']}: {remaining} mutants; baseline {elapsed:.1f} s, timeout {timeout:.0f} s; {command}",
                      file=sys.stderr, flush=True)
            started = time.monotonic()
            try:
                _run([sys.executable, "-m", "cosmic_ray.cli", "exec", str(config), str(db)])
            finally:
                dirty = subprocess.run(["git", "diff", "--quiet", "--", module["path"]], cwd=ROOT).returncode
                if dirty:
                    raise SystemExit(f"{module['path']} is left mutated: `git checkout -- {module['path']}`")
            wall = time.monotonic() - started
        s = _summary(db, module["path"], equivalents)
        if not args.report_only:
            s["wall_s"] = round(wall, 1)
            s["test_command"] = command
            s["sample"] = module.get("sample", args.sample)
            s["seed"] = seed
        s["date"] = datetime.date.today().isoformat()
        summaries.append(s)
        if not args.json:
            print(json.dumps({k: v for k, v in s.items() if k not in ("survivors",)}), file=sys.stderr, flush=True)
    print(json.dumps(summaries, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
