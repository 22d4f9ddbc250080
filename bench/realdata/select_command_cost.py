"""What ``--select`` costs a user, as the user runs it: the whole ``robodyn identify`` command with and
without ``--select`` on the real Stäubli TX40 log (the split of the leave-one-robot-out table where
``--select``'s in-process fit time is furthest from the default's), timed from outside by
farm-bench, the two commands in turn, the ratio taken run by run.

The identification part is what loro.py fits: the first 60 % of the log (by rows, 5 kHz), written as
the motor-side CSV a user has (motor angles and torques), identified with the model file that
carries the coupled wrist (identification/datasets/staubli_tx40/tx40.toml). Each command starts a
fresh interpreter, imports robodyn, loads the compiled kernels from numba's cache, reads the CSV,
identifies, writes the result and exits: loro.py's table times the fit alone, in process.

    .venv/bin/python bench/realdata/select_command_cost.py [--runs 5] [--out bench/realdata/select_command_cost.json]

Needs farm-bench on PATH (the lab's timing tool); without it, one line says so and nothing is written.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "identification" / "datasets" / "staubli_tx40"
FIT_SHARE = 0.6  # the identification part, as loro.py's time split
ROWS = {"A wall s": "select_wall_s", "B wall s": "default_wall_s", "A cpu s": "select_cpu_s",
        "B cpu s": "default_cpu_s", "A peak MiB": "select_peak_mib", "B peak MiB": "default_peak_mib",
        "A/B wall": "wall_ratio", "A/B cpu": "cpu_ratio"}


def write_fit_part(path: Path) -> int:
    """The first FIT_SHARE of the TX40 log's rows as a motor-side CSV (t, qm1..6, taum1..6); the row count."""
    def read(name):
        with gzip.open(DATA / f"{name}.csv.gz", "rt") as fh:
            return np.loadtxt(fh, delimiter=",", skiprows=1)

    from robodyn.identification.datasets import tx40

    qm, taum = read("pos_read_data"), read("curr_data")
    rows = int(FIT_SHARE * qm.shape[0])
    t = np.arange(rows) * tx40.SAMPLE_PERIOD
    header = ",".join(["t"] + [f"qm{j + 1}" for j in range(6)] + [f"taum{j + 1}" for j in range(6)])
    np.savetxt(path, np.column_stack([t, qm[:rows], taum[:rows]]), delimiter=",", header=header, comments="",
               fmt="%.12g")
    return rows


def parse(report: str) -> dict:
    """The medians of farm-bench's table (min, median, max per row)."""
    out = {}
    for line in report.splitlines():
        for label, key in ROWS.items():
            m = re.match(rf"^{re.escape(label)}\s+(\S+)\s+(\S+)\s+(\S+)\s*$", line)
            if m:
                out[key] = {"min": float(m.group(1)), "median": float(m.group(2)), "max": float(m.group(3))}
    missing = [k for k in ROWS.values() if k not in out]
    if missing:
        raise ValueError(f"farm-bench's report has no row for {missing[0]}")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5, help="timed runs of each command (farm-bench -n)")
    p.add_argument("--out", type=Path, default=Path(__file__).with_name("select_command_cost.json"))
    args = p.parse_args(argv)
    bench = shutil.which("farm-bench")
    if bench is None:
        print("select_command_cost: farm-bench is not on PATH; nothing measured", file=sys.stderr)
        return 2
    robodyn = str(Path(sys.executable).with_name("robodyn"))
    with tempfile.TemporaryDirectory() as scratch:
        csv = Path(scratch) / "tx40_fit.csv"
        rows = write_fit_part(csv)
        command = [robodyn, "identify", str(csv), "--robot", str(DATA / "tx40.toml"), "--force"]
        default = command + ["--out", str(Path(scratch) / "default.json")]
        select = command + ["--select", "--out", str(Path(scratch) / "select.json")]
        load_start = os.getloadavg()
        done = subprocess.run([bench, "-n", str(args.runs), "--warmup", "1", "--timeout", "3000",
                               "--vs", " ".join(default), "--", *select], capture_output=True, text=True, check=False)
        load_end = os.getloadavg()
        if done.returncode != 0 or " exit 0 (" not in done.stdout:
            print(f"select_command_cost: farm-bench failed (exit {done.returncode}): "
                  f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}", file=sys.stderr)
            return 1
        figures = parse(done.stdout)
    out = {"benchmark": "robodyn identify --select against robodyn identify, whole commands, timed by farm-bench",
           "log": "real Stäubli TX40, 5 kHz, identification/datasets/staubli_tx40 (figaroh-plus, Apache-2.0): "
                  f"the first {FIT_SHARE:.0%} of its rows ({rows} samples) as the motor-side CSV",
           "commands": {"default": " ".join(default[1:]).replace(scratch, "SCRATCH"),
                        "select": " ".join(select[1:]).replace(scratch, "SCRATCH")},
           "runs": args.runs, "host": {"cpus": os.cpu_count(), "loadavg_start": list(load_start),
                                        "loadavg_end": list(load_end)},
           **figures, "farm_bench_report": done.stdout.splitlines()}
    text = json.dumps(out, indent=1)
    args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
