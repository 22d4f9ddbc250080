"""Red team: observers flood a simulated daemon with listings while an operator arms and stops it.

    .venv/bin/python bench/reliability/observer_flood.py                       # 100 recordings, 6 clients
    .venv/bin/python bench/reliability/observer_flood.py --recordings 200 --clients 10 --stops 200
    .venv/bin/python bench/reliability/observer_flood.py --rt-priority 10    # driver SCHED_FIFO 10, main loop 9

The daemon (a simulated Panda at real time, 1 kHz) starts on a data dir holding ``--recordings``
generated recordings (half of them without an index entry, as an older version left them) and
``--jobs`` finished jobs. ``--clients`` connections then send ``recordings`` (every page), ``status``
and ``jobs`` as fast as they are answered, and the status page's own poller refreshes as fast as
it is answered (``--no-page``: without it), while one operator connection alternates ``arm`` and
``abort``/``disarm``. Printed as JSON (and written to ``--out``): the stop commands' latency as the
daemon measured it on its own clock, in periods of the real-time loop (from the last moment it
saw no request waiting before the stop came in to the reply: an upper bound) and on its main
thread's CPU clock, the rest of that wait split into runnable-but-not-running (the host's scheduler)
and blocked, the requests handled before each stop and between its receipt and its reply (receive
sequence numbers), the arm refusals (stale telemetry: `unavailable`), the host's load average.
``--rt-priority P`` runs the driver at SCHED_FIFO P and so the main loop at P - 1 (daemon/priority.py;
needs root or CAP_SYS_NICE: the result's ``daemon.main_scheduler`` says what it got).
The recordings are tiny: a listing costs the same for 1 h files, since it reads none of them
(tests/daemon/reliability/test_observer_flood.py overwrites one and still lists it from its entry).
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
from tests.daemon.reliability.observer_flood import flood, make_jobs, make_recordings, wait_indexed  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recordings", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=6, help="observer connections flooding listings")
    ap.add_argument("--requests", type=int, default=400, help="requests per observer connection")
    ap.add_argument("--stops", type=int, default=100, help="arm + abort/disarm cycles of the operator")
    ap.add_argument("--rt-priority", type=int, default=0,
                    help="[loop].rt_priority of the daemon: the driver's SCHED_FIFO priority, the main loop's less one")
    ap.add_argument("--no-page", action="store_true", help="without the status page's poller among the observers")
    ap.add_argument("--out", default=str(Path(__file__).with_name("observer_flood.json")))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="robodyn-flood-") as tmp:
        tmp = Path(tmp)
        data = tmp / "data"
        t0 = time.monotonic()
        make_recordings(data / "recordings", args.recordings, 0.5)
        make_jobs(data, args.jobs)
        generated_s = time.monotonic() - t0
        d = DaemonProcess(tmp, speed=1.0, data_dir=data, arm=False,
                          extra_config=f"[loop]\nrt_priority = {args.rt_priority}\n" if args.rt_priority else "")
        try:
            wait_indexed(d.client, args.recordings)
            load_before = os.getloadavg()
            result = flood(d.control, args.clients, args.requests, args.stops, page=not args.no_page)
            load_after = os.getloadavg()
        finally:
            d.stop()
    result.update(recordings=args.recordings, jobs=args.jobs, generated_s=round(generated_s, 1),
                  rt_priority=args.rt_priority,
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
