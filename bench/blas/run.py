"""bench/blas: small dense linear algebra with OpenBLAS's default thread count against one thread,
side by side in one run, each in its own process (the thread count is read when numpy loads).

The work is the size the identification and calibration code solves many times: SVDs of a
600 x 58 matrix and Gram products plus least-squares solves on 5000 x 40. On a 2-core host that
also runs other processes, OpenBLAS's worker threads spin while they wait for a core; that is why
the test suite runs with ``OPENBLAS_NUM_THREADS=1`` (tests/conftest.py). Wall time, median of
``--repeats`` alternating pairs; the load average is recorded, since the result depends on it.

    .venv/bin/python bench/blas/run.py [--repeats 5] [--out bench/blas/result.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

WORK = """
import json, time, numpy as np
rng = np.random.default_rng(0)
A = rng.normal(size=(600, 58)); B = rng.normal(size=(5000, 40))
np.linalg.svd(A, full_matrices=False)
t = time.perf_counter()
for _ in range(50): np.linalg.svd(A, full_matrices=False)
svd = time.perf_counter() - t
t = time.perf_counter()
for _ in range(20): B.T @ B; np.linalg.lstsq(B, B[:, 0], rcond=None)
print(json.dumps({"svd_600x58_x50_s": svd, "gram_lstsq_5000x40_x20_s": time.perf_counter() - t}))
"""


def once(threads: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if threads is not None:
        env["OPENBLAS_NUM_THREADS"] = threads
    out = subprocess.run([sys.executable, "-c", WORK], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    runs = {"default_threads": [], "one_thread": []}
    load_start = os.getloadavg()
    for _ in range(args.repeats):
        runs["default_threads"].append(once(None))
        runs["one_thread"].append(once("1"))
    result = {"command": "python bench/blas/run.py", "cpus": os.cpu_count(),
              "load_average_start": [round(x, 2) for x in load_start]}
    for name, rs in runs.items():
        result[name] = {k: round(statistics.median(r[k] for r in rs), 4) for k in rs[0]}
        result[name]["max"] = {k: round(max(r[k] for r in rs), 4) for k in rs[0]}
    result["ratio_default_over_one"] = {k: round(result["default_threads"][k] / result["one_thread"][k], 2)
                                        for k in runs["one_thread"][0]}
    result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
