"""Stops through the driver's stop socket while observers flood the main process (daemon/stop_socket.py).

    .venv/bin/python bench/reliability/stop_socket_flood.py                    # 20 stops, 3 observers
    .venv/bin/python bench/reliability/stop_socket_flood.py --stops 100 --observers 6
    .venv/bin/python bench/reliability/stop_socket_flood.py --rt-priority 10   # driver SCHED_FIFO 10 (root)

The scenario of tests/daemon/reliability/test_stop_socket.py (tests/daemon/reliability/stop_socket_flood.py):
a simulated Panda at real time (1 kHz) on a data dir of ``--recordings`` recordings and ``--jobs``
jobs; ``--observers`` connections flood ``recordings``, ``jobs`` and ``status`` while ``--stops`` runs
are submitted and each stopped (abort, every fourth disarm) as soon as it moves. Printed as JSON
(and written to ``--out``): how many stops the driver acted on in the cycle its poll saw them, how
many arrived after the previous cycle began, their wait in the socket (from the kernel's arrival
stamp) and from the client's stamp, in periods of the loop, the loop's polls against its cycles,
the loop's jitter and the host's load average (a loaded host's figures say so).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.daemon.conftest import DaemonProcess  # noqa: E402
from tests.daemon.reliability.observer_flood import make_jobs, make_recordings  # noqa: E402
from tests.daemon.reliability.stop_socket_flood import figures, stop_runs_under_flood  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recordings", type=int, default=40)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--observers", type=int, default=3, help="observer connections flooding listings and status")
    ap.add_argument("--stops", type=int, default=20, help="runs submitted and stopped")
    ap.add_argument("--rt-priority", type=int, default=0, help="[loop].rt_priority: the driver's SCHED_FIFO priority")
    ap.add_argument("--out", default=str(Path(__file__).with_name("stop_socket_flood.json")))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="robodyn-stops-") as tmp:
        tmp = Path(tmp)
        data = tmp / "data"
        make_recordings(data / "recordings", args.recordings, 1.0)
        make_jobs(data, args.jobs)
        d = DaemonProcess(tmp, speed=1.0, data_dir=data,
                          extra_config=f"[loop]\nrt_priority = {args.rt_priority}\n" if args.rt_priority else "")
        try:
            load_before = os.getloadavg()
            out = stop_runs_under_flood(d.control, d.client, args.stops, args.observers)
            load_after = os.getloadavg()
        finally:
            d.stop()
    result = figures(out)
    result.update(recordings=args.recordings, jobs=args.jobs, observers=args.observers, rt_priority=args.rt_priority,
                  host={"cpus": os.cpu_count(), "machine": platform.machine(),
                        "load_average_before": [round(x, 1) for x in load_before],
                        "load_average_after": [round(x, 1) for x in load_after]},
                  date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    text = json.dumps(result, indent=1, default=str)
    print(text)
    Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
