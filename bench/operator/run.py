"""Does the Foxglove bridge disturb the 1 kHz loop? Side by side in one daemon session.

    .venv/bin/python bench/operator/run.py --output bench/operator/result.json

Starts ``robodyn daemon`` (simulated Panda in real time at 1 kHz, recorder on, driver process at
SCHED_FIFO ``--rt-priority``, as the systemd unit grants it) and alternates runs of the same
``--run-s`` second excitation in two conditions, ``--pairs`` times each (A B A B ...):

    A  no bridge: nothing but the daemon
    B  ``robodyn bridge foxglove`` (every sample relayed, transforms at 50 Hz) with ``--viewers``
       WebSocket viewers subscribed to every channel, decoding every joint-state message (one
       Python process on the same host, normal priority: a harsher case than viewers on other desks)

The loop's period statistics come from the daemon itself: each run's summary (``loop``: p50,
p99, p99.9 and max of the period over the run's cycles, from the driver process). Reported (JSON):
per run and per condition the medians, and the ratios B / A of the medians; the bridge's and the
viewers' CPU; what the viewers received (messages, samples missing from their sequence).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from robodyn.daemon.client import DaemonError
from robodyn.tools.testing.local_daemon import cpu_seconds, free_port

QUANTITIES = ("p50_ms", "p99_ms", "p999_ms", "max_ms", "mean_ms")


def excitation(duration: float, q_start: np.ndarray):
    """A Fourier + quintic excitation of 10 s periods around the start pose (seeded, within limits)."""
    from robodyn.trajectory import FourierPolyTrajectory

    period = min(10.0, duration)
    rng = np.random.default_rng(7)
    return FourierPolyTrajectory(2 * np.pi / period, q_start, rng.normal(0, 0.05, (7, 4)),
                                 rng.normal(0, 0.05, (7, 4)), periods=max(1, int(round(duration / period))))


# --------------------------------------------------------------------------- viewers


async def _viewer(url: str, stop_at: float, out: dict) -> None:
    import websockets

    async with websockets.connect(url, subprotocols=["foxglove.sdk.v1"], max_size=None) as ws:
        channels = {}
        while True:
            msg = json.loads(await ws.recv())
            if msg["op"] == "advertise":
                channels.update({c["topic"]: c["id"] for c in msg["channels"]})
            if "/joint_states" in channels and len(channels) >= 6:
                break
        subs = list(channels.items())
        await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
            {"id": i + 1, "channelId": cid} for i, (_, cid) in enumerate(subs)]}))
        joint_sub = 1 + [t for t, _ in subs].index("/joint_states")
        last = None
        while time.time() < stop_at:
            try:
                frame = await asyncio.wait_for(ws.recv(), max(0.1, stop_at - time.time()))
            except (asyncio.TimeoutError, websockets.ConnectionClosed):  # the bridge stopped after the run
                break
            if isinstance(frame, str):
                continue
            out["messages"] += 1
            out["bytes"] += len(frame)
            if int.from_bytes(frame[1:5], "little") == joint_sub:
                seq = json.loads(frame[13:])["seq"]  # a viewer decodes what it shows
                out["joint_states"] += 1
                if last is not None and seq > last + 1:
                    out["missing"] += seq - last - 1
                last = seq


def viewers_main(url: str, count: int, seconds: float, result_path: str) -> None:
    """``count`` WebSocket viewers in one process, each subscribed to every channel."""
    stop_at = time.time() + seconds
    outs = [{"messages": 0, "bytes": 0, "joint_states": 0, "missing": 0} for _ in range(count)]

    async def all_viewers():
        await asyncio.gather(*(_viewer(url, stop_at, o) for o in outs))

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    asyncio.run(all_viewers())
    Path(result_path).write_text(json.dumps({"viewers": outs, "cpu_s": cpu_seconds(os.getpid())}))


# --------------------------------------------------------------------------- the benchmark


def start_daemon(work: Path, rt_priority: int):
    from robodyn.daemon.client import Client

    control, state = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    (work / "daemon.toml").write_text(
        f'[daemon]\ncontrol = "{control}"\nstate = "{state}"\ndata_dir = "{work / "data"}"\n'
        f'[robot]\nname = "panda"\ndriver = "sim"\n[driver]\nspeed = 1.0\nrate_hz = 1000\nseed = 1\n'
        f'[loop]\nrt_priority = {rt_priority}\n')
    log = open(work / "daemon.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "robodyn", "daemon", "--config", str(work / "daemon.toml")],
                            stdout=log, stderr=subprocess.STDOUT)
    client = Client(control, timeout=30.0)
    deadline = time.monotonic() + 90
    while True:
        try:
            st = client.status()
            if st["driver"]["ready"] and st["recorder"]["ready"] and st["state"]["q"]:
                break
        except Exception:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit(f"daemon did not start; log in {work / 'daemon.log'}")
        time.sleep(0.3)
    for _ in range(50):
        try:
            client.arm()
            break
        except Exception:
            time.sleep(0.2)
    return proc, client, log, st


def start_bridge(control: str, log_path: Path, nice: int) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "robodyn", "bridge", "foxglove", "--endpoint", control,
                             "--port", "0", "--nice", str(nice), "--json"], stdout=subprocess.PIPE, stderr=open(log_path, "a"), text=True)
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"the bridge did not start; see {log_path}")
    return proc, json.loads(line)["serving"]  # ws://127.0.0.1:PORT/?token=...: the bridge needs its token


def one_run(client, condition: str, run_s: float, viewers: int, work: Path, index: int, control: str,
            bridge_nice: int) -> dict:
    st = client.status()
    traj = excitation(run_s, np.asarray(st["state"]["q"]))
    bridge = viewer_proc = None
    out: dict = {"condition": condition}
    if condition == "bridge":
        bridge, url = start_bridge(control, work / "bridge.log", bridge_nice)
        ctx = multiprocessing.get_context("spawn")
        result_path = work / f"viewers-{index}.json"
        viewer_proc = ctx.Process(target=viewers_main, args=(url, viewers, run_s + 60,
                                                             str(result_path)))
        viewer_proc.start()
        time.sleep(2.0)  # viewers connected and subscribed before the run starts
    t0 = time.monotonic()
    cpu0 = {} if bridge is None else {"bridge": cpu_seconds(bridge.pid)}
    try:
        accepted = client.submit_run("panda", traj.to_dict(robot="panda"), label=f"bench/operator {condition}")
    except DaemonError as exc:
        if exc.code != "not_armed":
            raise
        # a fault disarmed the daemon (on a shared host: a worker starved past the hang timeout);
        # the bench's operator arms again, and the run that was hit is reported, not counted
        client.arm()
        accepted = client.submit_run("panda", traj.to_dict(robot="panda"), label=f"bench/operator {condition}")
    final = client.wait_run(accepted["run_id"], timeout=run_s + 120, poll_s=0.5)
    wall = time.monotonic() - t0
    s = final["summary"]
    out.update(run_id=accepted["run_id"], state=final["state"], wall_s=wall, samples=s["samples"],
               lost_samples=s["lost_samples"], loop_ms={k: s["loop"].get(k) for k in ("count",) + QUANTITIES})
    if bridge is not None:
        out["cpu_percent"] = {"bridge": 100.0 * (cpu_seconds(bridge.pid) - cpu0["bridge"]) / wall}
        bridge.send_signal(signal.SIGTERM)
        stats = json.loads(bridge.communicate(timeout=30)[0].strip().splitlines()[-1])
        out["bridge"] = {k: stats.get(k) for k in ("received", "published", "lost", "tf", "viewers")}
        viewer_proc.join(run_s + 90)
        v = json.loads(result_path.read_text())
        out["viewers"] = v["viewers"]
        out["cpu_percent"]["viewers_process"] = 100.0 * v["cpu_s"] / max(wall, 1e-9)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run-s", type=float, default=20.0, help="length of each run's trajectory (default 20 s)")
    ap.add_argument("--pairs", type=int, default=3, help="runs per condition, alternated (default 3)")
    ap.add_argument("--viewers", type=int, default=5, help="WebSocket viewers on the bridge (default 5)")
    ap.add_argument("--rt-priority", type=int, default=50, help="SCHED_FIFO priority of the driver process "
                                                                "(default 50, as the systemd unit; 0: default scheduler)")
    ap.add_argument("--bridge-nice", type=int, default=10, help="the bridge's --nice (default 10, its own default)")
    ap.add_argument("--output", default=None, help="also write the JSON result here")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="robodyn-bench-operator-"))
    proc, client, log, st = start_daemon(work, args.rt_priority)
    runs = []
    try:
        for i in range(args.pairs):
            for condition in ("none", "bridge"):
                runs.append(one_run(client, condition, args.run_s, args.viewers, work, len(runs),
                                    client.endpoint, args.bridge_nice))
                print(f"run {len(runs)}/{2 * args.pairs} {condition}: loop p99 "
                      f"{runs[-1]['loop_ms']['p99_ms']:.3f} ms", file=sys.stderr)
        # a bridge left running with nobody connected (it builds no message for no one)
        bridge, _ = start_bridge(client.endpoint, work / "bridge.log", args.bridge_nice)
        time.sleep(2.0)
        c0, t0 = cpu_seconds(bridge.pid), time.monotonic()
        time.sleep(10.0)
        idle_cpu = 100.0 * (cpu_seconds(bridge.pid) - c0) / (time.monotonic() - t0)
        bridge.send_signal(signal.SIGTERM)
        bridge.communicate(timeout=30)
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()

    def median(condition, key):
        vals = [r["loop_ms"][key] for r in runs if r["condition"] == condition and r["state"] == "completed"
                and r["loop_ms"].get(key) is not None]
        return statistics.median(vals) if vals else None

    medians = {c: {k: median(c, k) for k in QUANTITIES} for c in ("none", "bridge")}
    ratios = {k: (medians["bridge"][k] / medians["none"][k]) if medians["none"][k] else None for k in QUANTITIES}
    bridge_runs = [r for r in runs if r["condition"] == "bridge"]
    result = {
        "benchmark": "bench/operator",
        "command": "bench/operator/run.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "host": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                 "loadavg_at_end": os.getloadavg()},
        "config": {"robot": "panda", "driver": "sim", "rate_hz": 1000, "speed": 1.0, "run_s": args.run_s,
                   "pairs": args.pairs, "viewers": args.viewers, "rt_priority": args.rt_priority,
                   "bridge": f"robodyn bridge foxglove --nice {args.bridge_nice} (every sample, transforms at 50 Hz)",
                   "scheduler": st["driver"].get("scheduler")},
        "loop_period_ms_median": medians,
        "ratio_bridge_over_none": ratios,
        "runs_not_completed": [{k: r[k] for k in ("condition", "run_id", "state")} for r in runs
                               if r["state"] != "completed"],
        "lost_samples": {c: sum(int(r["lost_samples"] or 0) for r in runs if r["condition"] == c)
                         for c in ("none", "bridge")},
        "bridge_cpu_percent_median": statistics.median(r["cpu_percent"]["bridge"] for r in bridge_runs),
        "bridge_cpu_percent_no_viewer_idle_robot": idle_cpu,
        "viewers_process_cpu_percent_median": statistics.median(r["cpu_percent"]["viewers_process"]
                                                                for r in bridge_runs),
        "viewer_joint_states_missing": [sum(v["missing"] for v in r["viewers"]) for r in bridge_runs],
        "runs": runs,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
