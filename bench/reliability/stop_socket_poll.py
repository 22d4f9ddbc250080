"""What the real-time loop's per-cycle check of the stop socket costs (daemon/stop_socket.py).

    .venv/bin/python bench/reliability/stop_socket_poll.py [--calls 100000] [--repeats 5]

Times ``StopServer.waiting`` on an empty socket (the path every cycle takes: one poll(2)) over
many calls, beside two references timed the same way: a Python call that does nothing (what the
host's load does to any Python code) and the ``EVENTS`` check of a ZeroMQ socket (the first design
of the stop socket). Prints JSON (ns per call: the median of the repeats, and their spread) with
the host's load average, and writes it to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from robodyn.daemon.stop_socket import StopServer


def _per_call(fn, calls: int, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for seq in range(calls):
            fn(seq)
        runs.append((time.perf_counter_ns() - t0) / calls)
    runs.sort()
    return {"median_ns": runs[len(runs) // 2], "min_ns": runs[0], "max_ns": runs[-1]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).with_name("stop_socket_poll.json")))
    args = ap.parse_args()
    import zmq

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        server = StopServer(os.path.join(tmp, "stop"), 0o600, 1000.0)
        ctx = zmq.Context()
        router = ctx.socket(zmq.ROUTER)
        router.bind(f"ipc://{tmp}/zmq")
        events = zmq.EVENTS
        result = {"stop_socket_check": _per_call(server.waiting, args.calls, args.repeats),
                  "python_noop_call": _per_call(lambda seq: None, args.calls, args.repeats),
                  "zmq_events_check": _per_call(lambda seq: router.getsockopt(events), args.calls, args.repeats)}
        server.close()
        ctx.destroy(linger=0)
    result.update(calls=args.calls, repeats=args.repeats,
                  load_average_before=[round(x, 1) for x in load_before],
                  load_average_after=[round(x, 1) for x in os.getloadavg()],
                  date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    text = json.dumps(result, indent=1)
    print(text)
    Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
