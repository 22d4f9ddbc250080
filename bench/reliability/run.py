"""Reliability bench (issues 9 and 17): the full counts, on loopback, against a simulated Panda.

    .venv/bin/python bench/reliability/run.py                      # everything, 10 M-sample soak
    .venv/bin/python bench/reliability/run.py --soak-samples 1e6   # a shorter soak
    .venv/bin/python bench/reliability/run.py --only kills

Sections: ``fuzz`` (random frames), ``schema_fuzz`` (100 000 hypothesis frames from the protocol
schema: 0 `internal`), ``validation`` (peak RSS of validating the largest accepted requests, in a
fresh process, windowed against the one-pass validator of before; and live in the daemon, with
the control endpoint's latency meanwhile), ``heartbeat`` (the watchdog heartbeat's gaps idle and
while a 10-minute trajectory is validated), ``kills`` (SIGKILLs of the recorder, the driver and
the whole daemon; every file opened with the official `mcap` reader's default call and with
robodyn's loader), ``subscribers`` (driver RSS and loop period with 50 stalled subscribers for
10 minutes, against the same daemon without them), ``disk`` (estimate vs file), ``soak``.

Writes bench/reliability/result.json (figures quoted in docs/reliability.md). The same scenarios
run with small counts in tests/daemon/reliability (CI).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from robodyn.recording import load_recording  # noqa: E402
from tests.daemon.conftest import DaemonProcess, excitation  # noqa: E402
from tests.daemon.reliability.schema_fuzz import ARM_TOKEN  # noqa: E402
from tests.daemon.reliability.scenarios import (fuzz, kill_daemon_mid_run, kill_mid_run, official_read, rss_kib,  # noqa: E402
                                        soak, stalled_subscribers, wait_state)


def bench_fuzz(work: Path, frames: int) -> dict:
    from robodyn.daemon import security

    d = DaemonProcess(work, arm=False, extra_config=f'[safety]\nrequire_arm = true\n'
                                                     f'arm_token_sha256 = "{security.token_hash(ARM_TOKEN)}"\n')
    try:
        before = d.commands()
        r = fuzz(d.control, frames)
        r["alive"] = d.proc.poll() is None and d.client.ping()["protocol"] == 1
        r["robot_commanded"] = d.commands()["writes"] - before["writes"]
        r["dropped_counted"] = d.client.status()["control"]["dropped"]
    finally:
        d.stop()
    return r


def bench_schema_fuzz(work: Path, examples: int) -> dict:
    from robodyn.daemon import security
    from tests.daemon.reliability.schema_fuzz import run_property

    d = DaemonProcess(work, arm=False, extra_config=f'[safety]\nrequire_arm = true\n'
                                                     f'arm_token_sha256 = "{security.token_hash(ARM_TOKEN)}"\n')
    try:
        before = d.commands()
        r = run_property(d.control, examples)  # raises on the first reply that breaks the property
        r["alive"] = d.proc.poll() is None and d.client.ping()["protocol"] == 1
        r["robot_commanded"] = d.commands()["writes"] - before["writes"]
    finally:
        d.stop()
    return r


VALIDATION_CASES = [
    # the red team's 6.5 KB request: 600 s, 50 harmonics (2.4 GiB and 61 s before)
    ("fourier:600:50", True),
    # the longest run the default budget accepts with 5 harmonics: 7200 s (cost 2.3e9 of 3e9)
    ("fourier:7200:5", False),
    # the largest sampled request under the 16 MiB cap: 2200 s at 100 Hz
    ("sampled:2200:100", False),
]


def bench_validation(work: Path, only: list | None = None, previous: dict | None = None) -> dict:
    """Peak RSS of the daemon's validation (plan_run) of the largest accepted requests, each in a
    fresh process; the first also with the one-pass validator of before, side by side; then the
    first live in a daemon: main-process peak and the latency of `status` while it validates.
    ``only``: run just these cases (and no live run), keeping the other results of ``previous``."""
    script = Path(__file__).with_name("validation_peak.py")
    if only:
        kept = [c for c in (previous or {}).get("cases", []) if c["case"] in {k for k, _ in VALIDATION_CASES}
                and c["case"] not in only]
        return {"cases": kept + bench_validation_cases(script, [c for c in VALIDATION_CASES if c[0] in only]),
                "live": (previous or {}).get("live")}
    cases = bench_validation_cases(script, VALIDATION_CASES)
    return {"cases": cases, "live": bench_validation_live(work, VALIDATION_CASES[0][0])}


def bench_validation_cases(script: Path, chosen) -> list:
    cases = []
    for case, with_reference in chosen:
        for impl in ("windowed", "one-pass") if with_reference else ("windowed",):
            print(f"  validating {case} ({impl}) ...", flush=True)
            out = subprocess.run([sys.executable, str(script), case, "--implementation", impl], capture_output=True,
                                 text=True, cwd=ROOT, timeout=3600)
            if out.returncode != 0:
                cases.append({"case": case, "implementation": impl, "error": out.stderr[-2000:]})
                continue
            cases.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return cases


def bench_validation_live(work: Path, case: str) -> dict:
    sys.path.insert(0, str(Path(__file__).parent))
    from validation_peak import build

    d = DaemonProcess(work)
    try:
        pid = d.client.status()["daemon"]["pid"]
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets the main process's peak RSS
        rss_before = rss_kib(pid)
        import threading

        from robodyn.daemon.client import Client

        result, latencies = {}, []
        t = threading.Thread(target=lambda: result.update(d.client.submit_run("panda", build(case))), daemon=True)
        t0 = time.monotonic()
        t.start()
        with Client(d.control, timeout=10.0) as watcher:
            while t.is_alive():
                s0 = time.monotonic()
                watcher.status()
                latencies.append(time.monotonic() - s0)
                time.sleep(0.05)
        validated_s = time.monotonic() - t0
        peak = 0
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1])
        if result.get("run_id"):
            wait_state(d.client, result["run_id"], ("move_to_start", "execute", "completed"))
            d.client.abort(reason="bench: validation measured")
            d.client.wait_run(result["run_id"], timeout=60)
        lat = sorted(latencies)
        return {"case": case, "accepted": bool(result.get("run_id")), "validated_s": validated_s,
                "main_rss_before_mib": rss_before / 1024, "main_peak_rss_mib": peak / 1024,
                "main_increase_mib": (peak - rss_before) / 1024, "status_requests": len(lat),
                "status_latency_ms": {"p50": 1000 * lat[len(lat) // 2], "max": 1000 * lat[-1]} if lat else None}
    finally:
        d.stop()


def bench_heartbeat(work: Path, idle_s: float, watchdog_s: float = 2.0) -> dict:
    """The watchdog heartbeat's gaps as systemd would see them (a fake NOTIFY_SOCKET), idle for
    ``idle_s`` and then while a 10-minute trajectory is validated (status polled meanwhile, as in
    tests/daemon/reliability/test_systemd.py, which asserts the schedule and counts, not these gaps)."""
    import threading

    import numpy as np

    from robodyn.daemon.client import Client, DaemonError
    from tests.daemon.reliability.scenarios import NotifySocket

    ns = NotifySocket(work / "notify")
    d = DaemonProcess(work, env={"NOTIFY_SOCKET": str(work / "notify"), "WATCHDOG_USEC": str(int(watchdog_s * 1e6))})

    def gaps(t0: float, t1: float) -> dict:
        beats = [t for t in ns.times_of("WATCHDOG=1") if t0 <= t <= t1]
        g = np.diff(beats)
        return {"beats": len(beats), "mean_gap_s": float(g.mean()) if g.size else None,
                "max_gap_s": float(g.max()) if g.size else None}

    try:
        t0 = time.monotonic()
        time.sleep(idle_s)
        idle = gaps(t0, time.monotonic())

        def submit():
            with Client(d.control, timeout=600) as c:
                try:
                    c.submit_run("panda", excitation(600.0))
                except DaemonError:
                    pass

        sub = threading.Thread(target=submit, daemon=True)
        sub.start()
        seen, latencies, t_first, t_last, st = 0, [], None, None, {}
        with Client(d.control, timeout=60.0) as watcher:
            while sub.is_alive() and time.monotonic() - t0 < idle_s + 600:
                s0 = time.monotonic()
                st = watcher.status()
                latencies.append(time.monotonic() - s0)
                if st["control"]["validating_s"] is not None:
                    seen += 1
                    t_first = t_first or s0
                    t_last = time.monotonic()
                elif seen:
                    break
                time.sleep(0.05)
            if st.get("run") or sub.is_alive():
                try:
                    watcher.abort(reason="bench: heartbeat measured")
                except DaemonError:
                    pass
        validating = gaps(t_first, t_last) if t_first else None
        lat = sorted(latencies)
        return {"watchdog_s": watchdog_s, "heartbeat_period_s": watchdog_s / 2, "idle_s": idle_s, "idle": idle,
                "while_validating": validating, "validating_s": (t_last - t_first) if t_first else None,
                "status_replies_while_validating": seen,
                "status_latency_ms": {"p50": 1000 * lat[len(lat) // 2], "max": 1000 * lat[-1]} if lat else None}
    finally:
        d.stop()
        ns.closed = True


def bench_kills(work: Path, kills: int) -> dict:
    (work / "workers").mkdir(parents=True, exist_ok=True)
    d = DaemonProcess(work / "workers")
    out = {"recorder": [], "driver": [], "daemon": []}
    try:
        for i in range(kills):
            for component in ("recorder", "driver"):
                r = kill_mid_run(d, component, excitation(20.0, seed=i + 1))
                out[component].append(r)
                print(f"  kill {component} {i + 1}/{kills}: {r['state']}, loss {r['loss_ms']:.1f} ms, "
                      f"restart {r['restart_s']:.2f} s, official reader {'ok' if r['official_ok'] else 'FAILED'}",
                      flush=True)
                d.client.arm()
    finally:
        d.stop()
    data = work / "daemon-data"
    for i in range(kills):
        r = kill_daemon_mid_run(work / f"daemon{i}", data, excitation(20.0, seed=i + 1))
        out["daemon"].append(r)
        print(f"  kill daemon {i + 1}/{kills}: {r['status']}, workers gone {r['workers_gone_s']:.2f} s, "
              f"official reader {'ok' if r['official_ok'] else 'FAILED'}", flush=True)
    # every file the kills left, opened both ways
    files = sorted((work / "workers" / "data" / "recordings").glob("*.mcap")) + sorted((data / "recordings").glob("*.mcap"))
    opened = {"files": len(files), "official_default_call": 0, "robodyn_loader": 0, "failures": []}
    for f in files:
        official = official_read(f)
        try:
            rec = load_recording(f)
            loader_ok = not rec.truncated
        except Exception as exc:
            loader_ok, official["error"] = False, official["error"] or f"loader: {exc}"
        opened["official_default_call"] += official["ok"]
        opened["robodyn_loader"] += loader_ok
        if not (official["ok"] and loader_ok):
            opened["failures"].append({"file": f.name, "error": official["error"]})
    summary = {"files": opened}
    for component, rs in out.items():
        s = {"kills": len(rs), "official_default_call_ok": sum(r["official_ok"] for r in rs),
             "official_samples_equal_loader": sum(r["official_samples"] == r["samples"] for r in rs),
             "files_gap_free": sum(r["samples"] > 0 and not r["gaps"] for r in rs),
             "repaired": sum(bool(r["repaired"]) for r in rs)}
        if component == "daemon":
            s.update(aborted=sum(r["status"] == "aborted" for r in rs),
                     reason_names_main_process=sum("main process" in r["reason"] for r in rs),
                     workers_left=sum(len(r["workers_left"]) for r in rs),
                     max_workers_gone_s=max(r["workers_gone_s"] for r in rs),
                     ramped_to_rest=sum(r["stopping_samples"] > 0 and r["final_qd_d"] == 0.0 for r in rs))
        else:
            s.update(aborted=sum(r["state"] == "aborted" for r in rs),
                     max_loss_ms=max(r["loss_ms"] for r in rs), mean_loss_ms=sum(r["loss_ms"] for r in rs) / len(rs),
                     max_noticed_s=max(r["noticed_s"] for r in rs), max_restart_s=max(r["restart_s"] for r in rs),
                     stopped=sum(r["stopped"] for r in rs), hard_brakes=sum(r["hard_brakes"] for r in rs),
                     disarmed=sum(not r["armed_after"] for r in rs))
        summary[component] = s
    return summary


def bench_subscribers(work: Path, count: int, seconds: float, baseline_s: float) -> dict:
    """A real-time daemon with a reader only, then a fresh one with ``count`` stalled subscribers
    too (fresh: the driver's loop statistics start from zero, so each p99 is its own phase's)."""
    progress = lambda p: print(f"  {p}", flush=True)  # noqa: E731
    phases = {}
    for label, stalled, duration in (("without", 0, baseline_s), ("with", count, seconds)):
        (work / label).mkdir()
        d = DaemonProcess(work / label, speed=1.0, arm=False, max_subscribers=max(32, count + 2))
        try:
            print(f"  {label}: {stalled} stalled subscribers for {duration:.0f} s ...", flush=True)
            phases[label] = stalled_subscribers(d, stalled, duration, sample_every_s=10.0, progress=progress)
        finally:
            d.stop()
    base, loaded = phases["without"], phases["with"]

    def p99s(points):
        vals = sorted(p["loop_p99_ms"] for p in points if p["loop_p99_ms"] is not None)
        return {"median_of_p99_ms": vals[len(vals) // 2], "max_of_p99_ms": vals[-1]} if vals else None

    drv = loaded["driver_rss_kib"]
    loop = {label: {k: v for k, v in (phases[label]["loop"] or {}).items() if k.endswith("_ms") or k == "count"}
            for label in phases}
    return {"stalled": count, "seconds": seconds, "baseline_seconds": baseline_s, "loop_at_end": loop,
            "driver_rss_mib": {"first": drv["first"] / 1024, "last": drv["last"] / 1024,
                               "max_minus_min": (drv["max"] - drv["min"]) / 1024},
            "publisher_rss_mib": {"first": loaded["publisher_rss_kib"]["first"] / 1024,
                                  "max": loaded["publisher_rss_kib"]["max"] / 1024},
            "loop_p99_ms": {"without": p99s(base["points"]), "with": p99s(loaded["points"])},
            "reader": {"without": base["reader"], "with": loaded["reader"]},
            "points": loaded["points"]}


def bench_disk(work: Path) -> dict:
    """The disk estimate against the file, for the issue's example (a 20 s run, real time)."""
    import os

    d = DaemonProcess(work, speed=1.0)
    try:
        rows = []
        for duration in (20.0, 20.0):  # the first from the raw size, the second measured
            a = d.client.submit_run("panda", excitation(duration))
            final = d.client.wait_run(a["run_id"], timeout=120)
            size = os.path.getsize(a["recording"])
            rows.append({"duration_s": duration, "file_bytes": size, "estimate_bytes": a["disk_estimate"]["bytes"],
                         "ratio": a["disk_estimate"]["bytes"] / size, "source": a["disk_estimate"]["source"],
                         "bytes_per_sample_file": size / final["summary"]["samples"]})
            time.sleep(1.0)
        return {"runs": rows}
    finally:
        d.stop()


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
    ap.add_argument("--schema-examples", type=int, default=100_000)
    ap.add_argument("--kills", type=int, default=20, help="SIGKILLs of each worker process and of the daemon")
    ap.add_argument("--stalled", type=int, default=50)
    ap.add_argument("--stalled-seconds", type=float, default=600.0)
    ap.add_argument("--baseline-seconds", type=float, default=120.0)
    ap.add_argument("--soak-samples", type=float, default=10e6)
    ap.add_argument("--validation-cases", help="comma-separated cases to (re)run, e.g. fourier:7200:5")
    ap.add_argument("--heartbeat-idle-seconds", type=float, default=60.0)
    sections = ("fuzz", "schema_fuzz", "validation", "heartbeat", "kills", "subscribers", "disk", "soak")
    ap.add_argument("--only", choices=sections, action="append", help="run only these sections (repeatable)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("result.json")))
    args = ap.parse_args()
    out_path = Path(args.out)
    result = json.loads(out_path.read_text()) if out_path.exists() else {}
    host = {"python": platform.python_version(), "machine": platform.machine(),
            "processor": platform.processor(), "when": time.strftime("%Y-%m-%d %H:%M"),
            "load_average": list(__import__("os").getloadavg())}
    chosen = args.only or list(sections)
    runners = {"fuzz": lambda w: bench_fuzz(w, args.frames),
               "schema_fuzz": lambda w: bench_schema_fuzz(w, args.schema_examples),
               "validation": lambda w: bench_validation(
                   w, args.validation_cases.split(",") if args.validation_cases else None, result.get("validation")),
               "heartbeat": lambda w: bench_heartbeat(w, args.heartbeat_idle_seconds),
               "kills": lambda w: bench_kills(w, args.kills),
               "subscribers": lambda w: bench_subscribers(w, args.stalled, args.stalled_seconds, args.baseline_seconds),
               "disk": bench_disk, "soak": lambda w: bench_soak(w, int(args.soak_samples))}
    with tempfile.TemporaryDirectory() as tmp:
        for name in sections:
            if name not in chosen:
                continue
            work = Path(tmp) / name
            work.mkdir()
            print(f"{name} ...", flush=True)
            t0 = time.monotonic()
            result[name] = runners[name](work)
            result[name + "_host"] = dict(host, seconds=time.monotonic() - t0)
            out_path.write_text(json.dumps(result, indent=1, default=str))  # after each section
    out_path.write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps({k: v for k, v in result.items() if k in chosen}, indent=1, default=str))


if __name__ == "__main__":
    main()
