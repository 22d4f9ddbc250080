"""`robodyn scaleout run BATCH.json --out DIR`: a batch of identification / calibration jobs on the
local process pool or on Ray (``--cluster ray://HOST:PORT``).

BATCH.json (see docs/scaling.md)::

    {"format": "robodyn.scaleout.batch", "version": 1,
     "cluster": "local",            optional; --cluster overrides
     "workers": 2,                  optional; --workers overrides
     "jobs": [{"kind": "identify", "job_id": "arm07", "payload": {"robot": "panda",
                "recordings": ["/data/arm07.mcap"], "config": {"method": "wls"}}},
              {"kind": "calibrate", "payload": {"measurements": "m.csv", "loaded": "l.csv",
                "options": {"robot": "ur5_li2023", "method": "combined"}}}]}

Results go to DIR/<job_id>.json (robodyn.scaleout.result); ids already there are skipped, so a
batch interrupted at any point is finished by running the same command again.
"""

from __future__ import annotations

import sys

from . import progress as bars
from .common import add_json, add_out, needs_a_command, positive_int, print_json


def register(sub) -> None:
    p = sub.add_parser("scaleout", help="run batches of identification / calibration jobs on a process pool or Ray")
    act = p.add_subparsers(dest="action", metavar="ACTION")
    p.set_defaults(handler=needs_a_command(p, act))
    a = act.add_parser("run", help="run a batch file's jobs; results to DIR, finished ids skipped")
    a.add_argument("batch", help="batch file (JSON, format robodyn.scaleout.batch)")
    add_out(a, "the result folder written (one JSON per job id)", required=True, metavar="DIR")
    a.add_argument("--cluster", default=None,
                   help="local (process pool, default), inline, ray (local Ray), ray://HOST:PORT or ray:ADDRESS")
    a.add_argument("--workers", type=positive_int, default=None, help="worker processes / local Ray CPUs (default: all CPUs)")
    a.add_argument("--max-attempts", type=positive_int, default=3, help="executions per job when workers are lost")
    add_json(a, "print the summary as JSON")
    a.set_defaults(handler=cmd_run)


def cmd_run(args) -> int:
    from robodyn.scaleout.batch import run_batch_file

    with bars.bar(args, total=None, desc="jobs", unit="job") as b:
        def progress(done, total):
            b.total = total
            b.update(1)

        summary = run_batch_file(args.batch, args.out, cluster=args.cluster, workers=args.workers,
                                 max_attempts=args.max_attempts, progress=progress)
    if args.json:
        print_json(summary)
    else:
        for r in summary["results"]:
            state = "ok" if r["ok"] else f"FAILED: {r['error']}"
            print(f"{r['job_id']:<40} {r['kind']:<10} {state}")
        print(f"{summary['ok']} of {summary['jobs']} jobs ok; results in {args.out}", file=sys.stderr)
    return 0 if summary["ok"] == summary["jobs"] else 1
