"""How soon the driver stops a moving robot on its own once the daemon's main process falls silent
(daemon/rtloop.py SupervisorWatch, [safety].supervisor_silence_s).

    .venv/bin/python bench/reliability/supervisor_silence.py [--runs 5] [--bound 0.5]

A simulated Panda in real time; each run executes a 60 s excitation, the main process is SIGSTOPped
during the execution (at a different moment of its 25 ms "alive" rhythm each run) and SIGCONTed
once the run's end is on the driver's stream. Measured from each recording: from the SIGSTOP to
the first sample of the ramp to rest, in samples (sequence numbers from the first sample read
after the SIGSTOP) and in milliseconds (the samples' host stamps); then the ramp's length. Prints
JSON with the host's load average and writes it to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.daemon.conftest import DaemonProcess, excitation  # noqa: E402
from tests.daemon.reliability.test_supervisor_silence import (stop_main_process_mid_run,  # noqa: E402
                                                              stop_to_first_stopping_sample)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bound", type=float, default=0.5, help="[safety].supervisor_silence_s, s")
    ap.add_argument("--out", default=str(Path(__file__).with_name("supervisor_silence.json")))
    args = ap.parse_args()
    load_before = os.getloadavg()
    samples, ms, stopping, reasons, starved = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        d = DaemonProcess(Path(tmp), speed=1.0,
                          extra_config=f"[safety]\nrequire_arm = true\nsupervisor_silence_s = {args.bound}\n")
        try:
            for i in range(args.runs):
                if i:
                    d.client.arm()  # the stop disarmed it
                r = stop_main_process_mid_run(d, excitation(60.0, seed=i + 1), executing_s=0.3 + 0.0137 * i)
                if r["final"]["state"] != "aborted" or not r["recording"].phase_mask("stopping").any():
                    raise SystemExit(f"run {i}: not stopped by the driver: {r['final']['state']} "
                                     f"{r['final']['abort_reason']!r}")
                first = stop_to_first_stopping_sample(r)
                samples.append(first["samples"])
                ms.append(round(first["ms"], 1))
                stopping.append(int(r["recording"].phase_mask("stopping").sum()))
                silent = [e for e in r["events"] if e["event"] == "supervisor_silent"][0]
                starved.append(round(silent["starved_s"], 3))
                reasons.append(r["final"]["abort_reason"])
            rate_hz = d.client.describe()["driver"]["rate_hz"]
        finally:
            d.stop()
    result = {"silence_bound_s": args.bound, "runs": args.runs, "rate_hz": rate_hz,
              "stop_to_first_stopping_sample_ms": ms, "median": statistics.median(ms),
              "stop_to_first_stopping_sample_periods": samples, "median_periods": statistics.median(samples),
              "stopping_samples": stopping, "starved_s": starved, "reason_example": reasons[0],
              "load_avg": [round(x, 1) for x in load_before],
              "load_avg_after": [round(x, 1) for x in os.getloadavg()],
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    text = json.dumps(result, indent=1)
    print(text)
    Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
