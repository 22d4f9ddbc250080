"""What the real-time loop's per-cycle check of the stop socket costs (daemon/stop_socket.py):
``StopServer.waiting`` on an empty socket, the path every cycle takes, timed over many calls.
Prints JSON (ns per check: median of repeats, and the spread of the repeats).

    .venv/bin/python bench/reliability/stop_socket_poll.py [--calls 200000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from robodyn.daemon.stop_socket import StopServer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = StopServer(os.path.join(tmp, "stop"), 0o600, 1000.0)
        per_call = []
        for _ in range(args.repeats):
            t0 = time.perf_counter_ns()
            for seq in range(args.calls):
                server.waiting(seq)
            per_call.append((time.perf_counter_ns() - t0) / args.calls)
        server.close()
    per_call.sort()
    print(json.dumps({"calls": args.calls, "repeats": args.repeats, "ns_per_check_median": per_call[len(per_call) // 2],
                      "ns_per_check_min": per_call[0], "ns_per_check_max": per_call[-1],
                      "load_average": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
