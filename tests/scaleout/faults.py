"""Fault injection for the exactly-once tests: a task that does the job and then kills its worker
process the first time it runs a chosen job, before the result can reach the driver (a node lost
after the work was done). Every execution appends a line to a file per job, so a test can count
them; "first time" is read from that file, not from the attempt number, because a job may also be
lost without ever running (a local pool breaks for every job in flight when one worker dies)."""

from __future__ import annotations

import os
from pathlib import Path

from robodyn.scaleout.tasks import execute


class CrashAfterWork:
    def __init__(self, marker_dir, crash_ids):
        self.marker_dir = str(marker_dir)
        self.crash_ids = frozenset(crash_ids)

    def __call__(self, spec, attempt):
        result = execute(spec, attempt)
        first = executions(self.marker_dir, spec.job_id) == 0
        with open(Path(self.marker_dir) / f"{spec.job_id}.runs", "a") as fh:
            fh.write(f"{attempt}\n")
        if first and spec.job_id in self.crash_ids:
            os._exit(17)  # no exception, no cleanup: the process is gone, as after a kill -9
        return result


def executions(marker_dir, job_id) -> int:
    path = Path(marker_dir) / f"{job_id}.runs"
    return len(path.read_text().split()) if path.exists() else 0
