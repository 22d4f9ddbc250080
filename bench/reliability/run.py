"""Reliability bench (issue 9): the full counts, on loopback, against a simulated Panda.

    .venv/bin/python bench/reliability/run.py                      # everything, 10 M-sample soak
    .venv/bin/python bench/reliability/run.py --soak-samples 1e6   # a shorter soak
    .venv/bin/python bench/reliability/run.py --only kills

Writes bench/reliability/result.json (figures quoted in docs/reliability.md). The same scenarios
run with small counts in tests/reliability (CI).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.daemon.conftest import DaemonProcess, excitation  # noqa: E402
from tests.reliability.scenarios import fuzz, kill_mid_run, soak  # noqa: E402


def bench_fuzz(work: Path, frames: int) -> dict:
    from robodyn.daemon import security

    d = DaemonProcess(work, arm=False, extra_config=f'[safety]\nrequire_arm = true\n'
                                                     f'arm_token_sha256 = "{security.token_hash("k")}"\n')
    try:
        before = d.commands()
        r = fuzz(d.control, frames)
        r["alive"] = d.proc.poll() is None and d.client.ping()["protocol"] == 1
        r["robot_commanded"] = d.commands()["writes"] - before["writes"]
        r["dropped_counted"] = d.client.status()["control"]["dropped"]
    finally:
        d.stop()
    return r


def bench_kills(work: Path, kills: int) -> dict:
    d = DaemonProcess(work)
    out = {"recorder": [], "driver": []}
    try:
        for i in range(kills):
            for component in ("recorder", "driver"):
                r = kill_mid_run(d, component, excitation(20.0, seed=i + 1))
                out[component].append(r)
                print(f"  kill {component} {i + 1}/{kills}: {r['state']}, loss {r['loss_ms']:.1f} ms, "
                      f"restart {r['restart_s']:.2f} s", flush=True)
                d.client.arm()
    finally:
        d.stop()
    summary = {}
    for component, rs in out.items():
        summary[component] = {
            "kills": len(rs), "aborted": sum(r["state"] == "aborted" for r in rs),
            "files_open_gap_free": sum(r["samples"] > 0 and not r["gaps"] for r in rs),
            "max_loss_ms": max(r["loss_ms"] for r in rs), "mean_loss_ms": sum(r["loss_ms"] for r in rs) / len(rs),
            "max_noticed_s": max(r["noticed_s"] for r in rs), "max_restart_s": max(r["restart_s"] for r in rs),
            "stopped": sum(r["stopped"] for r in rs), "hard_brakes": sum(r["hard_brakes"] for r in rs),
            "disarmed": sum(not r["armed_after"] for r in rs)}
    return summary


def bench_soak(work: Path, samples: int) -> dict:
    d = DaemonProcess(work)
    try:
        return soak(d, samples, excitation(120.0), rss_every_s=5.0,
                    progress=lambda n, runs: print(f"  soak: {n} samples, {runs} runs", flush=True))
    finally:
        d.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, default=10_000)
    ap.add_argument("--kills", type=int, default=20, help="SIGKILLs of each worker process")
    ap.add_argument("--soak-samples", type=float, default=10e6)
    ap.add_argument("--only", choices=("fuzz", "kills", "soak"))
    ap.add_argument("--out", default=str(Path(__file__).with_name("result.json")))
    args = ap.parse_args()
    out_path = Path(args.out)
    result = json.loads(out_path.read_text()) if out_path.exists() else {}
    result["host"] = {"python": platform.python_version(), "machine": platform.machine(),
                      "processor": platform.processor(), "when": time.strftime("%Y-%m-%d %H:%M")}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name in ("fuzz", "kills", "soak"):
            (tmp / name).mkdir()
        if args.only in (None, "fuzz"):
            print("fuzzing ...", flush=True)
            result["fuzz"] = bench_fuzz(tmp / "fuzz", args.frames)
        if args.only in (None, "kills"):
            print("SIGKILLs ...", flush=True)
            result["kills"] = bench_kills(tmp / "kills", args.kills)
        if args.only in (None, "soak"):
            print("soak ...", flush=True)
            result["soak"] = bench_soak(tmp / "soak", int(args.soak_samples))
    out_path.write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps({k: v for k, v in result.items() if k != "host"}, indent=1, default=str))


if __name__ == "__main__":
    main()
