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


# --------------------------------------------------------------------------- a cluster of two Ray nodes


class Arrivals:
    """A Ray actor on the head node: where each job ran (job id, attempt, node id), reported by the
    task itself, so a test learns it through Ray and not through files."""

    def __init__(self):
        self.seen = []

    def arrived(self, job_id, attempt, node_id):
        self.seen.append((job_id, attempt, node_id))

    def all(self):
        return list(self.seen)


class ReportNode:
    """Runs the job after reporting to an :class:`Arrivals` actor which node it runs on."""

    def __init__(self, arrivals):
        self.arrivals = arrivals

    def __call__(self, spec, attempt):
        import ray

        ray.get(self.arrivals.arrived.remote(spec.job_id, attempt, ray.get_runtime_context().get_node_id()))
        return execute(spec, attempt)


class HangOnNode(ReportNode):
    """On the node ``node_id`` a job reports its arrival and then waits, doing nothing, until its
    node is killed. Elsewhere a job first waits until that node holds a job, then runs normally:
    the other node's CPUs stay busy meanwhile, so Ray must send work to ``node_id`` (left to
    itself it may keep every task on the node of the driver). Both waits are bounded: after
    ``polls`` short sleeps the task ends with an error, failing the test instead of hanging it."""

    def __init__(self, arrivals, node_id, polls=1200):
        super().__init__(arrivals)
        self.node_id, self.polls = node_id, polls

    def __call__(self, spec, attempt):
        import time

        import ray

        here = ray.get_runtime_context().get_node_id()
        if here == self.node_id:
            ray.get(self.arrivals.arrived.remote(spec.job_id, attempt, here))
            for _ in range(self.polls):
                time.sleep(0.25)
            raise RuntimeError(f"node {self.node_id[:8]} was not killed")
        for _ in range(self.polls):
            if any(node == self.node_id for _, _, node in ray.get(self.arrivals.all.remote())):
                return super().__call__(spec, attempt)
            time.sleep(0.25)
        raise RuntimeError(f"no job reached node {self.node_id[:8]}")
