"""All five source papers reproduced side by side: `robodyn reproduce PAPER` for each, one JSON.

    python bench/papers/run.py [--papers wso,stepwise,icpso,ur10e,calibration] [--part PART] [--quick]
                                          [--data-dir DIR] [--out bench/papers/result.json]

ur10e reads the real UR10e logs of the dynamic_calibration repository, which robodyn does not ship:
git clone https://github.com/shamilmamedov/dynamic_calibration and pass its folder with --data-dir
(or set ROBODYN_UR10E_DATA). wso's part real_panda reads the real Panda log of Gaz et al. 2019 the same
way: git clone https://github.com/marcocognetti/FrankaEmikaPandaDynModel, --data-dir (or
ROBODYN_PANDA_DATA).

A run of some papers replaces their entries in an existing result file and keeps the others; each
paper's entry is written as soon as it is done.

Prints every paper's text report (its headline table beside robodyn's, the command behind every
number, and why a number is not reached) and writes the JSON reports with their wall times.
Papers: Ni et al. 2024 (wso), Chen et al. 2021 (stepwise), Zhong et al. 2023 (icpso), Mamedov &
Mikhel 2020 (ur10e), Li et al. 2023 (calibration); see robodyn/papers.py.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

# One OpenBLAS thread, as `robodyn reproduce` runs (robodyn/cli.py), before numpy is imported: the
# thread count changes the order of BLAS sums, and a design by SLSQP amplifies the last bits (part
# pipeline's excitation came out at cond 114.72 here with the default threads, 114.12 from the command)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from robodyn import reproduce  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--papers", default=",".join(reproduce.PAPER_KEYS))
    p.add_argument("--quick", action="store_true", help="smoke run with small budgets (not the papers' setups)")
    p.add_argument("--part", default=None, help="one part of a paper that has several (robodyn reproduce --part); "
                                                "its entry is PAPER_PART, beside the paper's whole entry")
    p.add_argument("--data-dir", default=None, help="ur10e: a copy of the dynamic_calibration repository "
                                                    "(default: the environment variable ROBODYN_UR10E_DATA); wso "
                                                    "--part real_panda: a copy of FrankaEmikaPandaDynModel "
                                                    "(default: ROBODYN_PANDA_DATA)")
    p.add_argument("--out", default=str(Path(__file__).with_name("result.json")))
    a = p.parse_args()
    keys = [k.strip() for k in a.papers.split(",") if k.strip()]
    unknown = [k for k in keys if k not in reproduce.PAPER_KEYS]
    if unknown:
        p.error(f"--papers: unknown {unknown}; expected some of {list(reproduce.PAPER_KEYS)}")
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "quick": a.quick, "papers": {}}
    if a.part and len(keys) != 1:
        p.error("--part: name one paper with --papers")
    for key in keys:
        reads = key in reproduce.READS_DATA
        rep = reproduce.reproduce(key, quick=a.quick, part=a.part, data_dir=a.data_dir if reads else None)
        print(rep.format(), flush=True)
        doc = rep.to_dict()
        # a user's copy of the data is named by the folder `git clone` makes, not by this machine's path
        used_data = key == "ur10e" or "real_panda" in doc.get("details", {})
        data = f" --data-dir {reproduce.DATA_FOLDERS[key]}" if used_data else ""
        command = (f"robodyn reproduce {key}" + (f" --part {a.part}" if a.part else "") + data
                   + (" --quick" if a.quick else ""))
        # every part with its command and what it measured: the rows (robodyn's value, its origin and
        # the row's own command) and the findings
        parts = {t["title"]: {"command": command, "rows": [{k: r[k] for k in ("quantity", "paper", "robodyn",
                                                                                "origin", "paper_origin", "command")}
                                                             for r in t["rows"]]}
                 for t in doc["tables"]}
        entry = f"{key}_{a.part}" if a.part else key
        out["papers"][entry] = {**doc, "measured": time.strftime("%Y-%m-%d"), "command": command, "parts": parts,
                                "bench_command": f"python bench/papers/run.py --papers {key}"
                                                 + (f" --part {a.part}" if a.part else "") + data
                                                 + (" --quick" if a.quick else "")}
        write(Path(a.out), out, entry, a.quick)
        print(f"wrote {entry} to {a.out}", flush=True)


def write(path: Path, out: dict, key: str, quick: bool) -> None:
    """Write one paper's entry, keeping every other paper's entry of the file as it is NOW (re-read at
    each write: a run of some papers, even one running beside another, updates only its own entries,
    and a paper that fails later does not lose the finished ones)."""
    merged = dict(out, papers={})
    if path.exists():
        old = json.loads(path.read_text())
        if old.get("quick") == quick:
            merged["papers"] = old.get("papers", {})
    merged["papers"][key] = out["papers"][key]
    merged["seconds"] = sum(p.get("elapsed_s", 0.0) for p in merged["papers"].values())
    path.write_text(json.dumps(merged, indent=1, default=reproduce.json_default) + "\n")


if __name__ == "__main__":
    main()
