"""Observers flooding the daemon with listings while an operator stops and arms: the scenario of
tests/daemon/reliability/test_observer_flood.py (small counts) and bench/reliability/observer_flood.py
(large ones).

Recordings are generated, not recorded: tiny finalized files (a few samples each, through the
daemon's own writer), some with an index entry and some without (as an older version left them),
so that the daemon indexes the rest once at start. A listing's cost does not depend on the files'
sizes: it reads none of them.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
from robodyn.daemon import protocol as P
from robodyn.daemon.client import Client, DaemonError
from robodyn.recording import RecordingWriter, index_row, write_index


def make_recordings(recordings_dir: Path, count: int, indexed_fraction: float = 0.5, samples: int = 20) -> list[str]:
    """``count`` finalized recordings of a simulated Panda; the first ``indexed_fraction`` with an
    index entry."""
    from robodyn.drivers.sim import SimulatedRobot

    desc = SimulatedRobot({"seed": 0}).describe().to_dict()
    width = sum(s["width"] for s in desc["signals"])
    recordings_dir.mkdir(parents=True, exist_ok=True)
    ids = []
    for k in range(count):
        rid = f"20260101-{k // 3600:02d}{k // 60 % 60:02d}{k % 60:02d}-{k:03d}"
        path = recordings_dir / f"{rid}.mcap"
        meta = {"run_id": rid, "driver": desc, "rate_hz": 1000.0, "robot": {"name": "panda"}, "label": "generated"}
        w = RecordingWriter(path, meta, width, "none", 50.0)
        seq = np.arange(1, samples + 1, dtype=np.uint64)
        w.append(seq, seq * 1e-3, seq.astype(np.int64) * 1_000_000, np.full(samples, 2, np.uint8),
                 np.zeros((samples, width)))
        w.flush_block()
        summary = {"status": "completed", "expected_samples": samples, "recorded_samples": samples, "lost_samples": 0,
                   "gaps": [], "loop": {"p50_ms": 1.0, "p99_ms": 1.0 + k / 1000, "max_ms": 1.5}}
        w.close(summary)
        if k < indexed_fraction * count:
            write_index(path, index_row(w.meta, summary, path))
        ids.append(rid)
    return ids


def make_jobs(data_dir: Path, count: int) -> None:
    """``count`` finished identification jobs in the daemon's job directory."""
    jobs = data_dir / "jobs"
    for k in range(count):
        job = jobs / f"job-20260101-000000-{k:06x}"
        job.mkdir(parents=True, exist_ok=True)
        (job / "status.json").write_text(json.dumps({"job": job.name, "state": "completed", "stage": "done",
                                                     "progress": 1.0, "queue_seq": k + 1}))


def wait_indexed(client: Client, count: int, timeout: float = 120.0) -> dict:
    """Until the daemon lists ``count`` recordings, none still 'indexing' (outer time-out only)."""
    deadline = time.monotonic() + timeout
    while True:
        page = client.recordings_page(limit=1000, offset=0)
        if page["total"] == count and not any(r.get("status") == "indexing" for r in page["recordings"]):
            return page
        assert time.monotonic() < deadline, f"recordings not indexed in {timeout:.0f} s: {page['total']}"
        time.sleep(0.2)


def flood(control: str, clients: int, requests_per_client: int, stops: int, token_env: dict | None = None,
          page: bool = True) -> dict:
    """``clients`` threads, each with its own connection, send ``requests_per_client`` requests
    cycling ``recordings`` (every page of 100, and the largest page the protocol allows),
    ``status`` and ``jobs`` (a page of 100 and the largest); with ``page``, the status page's own
    poller (tools/operator/status_page.py, its read-only client) refreshes as fast as it is answered
    and asks for its slow listings (500 recordings and jobs, the run history) on every refresh;
    meanwhile an operator connection alternates ``arm`` and ``disarm``/``abort`` ``stops`` times.
    Returns the counts and the stop commands' latencies as the daemon measured them (dispatch.py:
    _stop_latency), on its clock (``periods``) and on its main thread's CPU clock (``work_periods``)."""
    errors: dict[str, int] = {}
    done = {"requests": 0}
    lock = threading.Lock()
    stop_flood = threading.Event()

    def observer(k: int) -> None:
        c = Client(control, timeout=60.0)
        try:
            for i in range(requests_per_client):
                if stop_flood.is_set():
                    break
                try:
                    kind = (i + k) % 5
                    if kind == 0:
                        c.recordings_page(limit=100, offset=(i * 37) % 200)
                    elif kind == 1:
                        c.status()
                    elif kind == 2:
                        c.jobs(limit=100)
                    elif kind == 3:
                        c.jobs(limit=P.MAX_PAGE, offset=0)
                    else:
                        c.recordings_page(limit=P.MAX_PAGE, offset=0)
                    with lock:
                        done["requests"] += 1
                except DaemonError as exc:
                    with lock:
                        errors[exc.code] = errors.get(exc.code, 0) + 1
        finally:
            c.close()

    poller_state = {"refreshes": 0, "connected": 0, "snapshot": None}

    def status_page() -> None:
        from robodyn.daemon.readonly import ReadOnlyClient
        from robodyn.tools.operator.status_page import StatusPoller

        poller = StatusPoller(lambda: ReadOnlyClient(control, timeout=60.0), period_s=0.0, slow_period_s=0.0)
        try:
            while not stop_flood.is_set():
                poller.refresh()
                snap = poller.get()
                poller_state["refreshes"] += 1
                poller_state["connected"] += bool(snap.get("connected"))
                poller_state["snapshot"] = snap
        finally:
            poller.client.close()

    threads = [threading.Thread(target=observer, args=(k,), daemon=True) for k in range(clients)]
    if page:
        threads.append(threading.Thread(target=status_page, daemon=True))
    for t in threads:
        t.start()
    # the stops through the main process's loop (the driver's stop socket has its own test:
    # test_stop_socket.py), which measures them
    op = Client(control, timeout=60.0, stop_socket=False)
    latencies, refusals = [], {}
    try:
        time.sleep(0.2)  # the observers are under way
        for i in range(stops):
            try:
                op.arm()
            except DaemonError as exc:
                refusals[exc.code + ": " + exc.message[:60]] = refusals.get(exc.code + ": " + exc.message[:60], 0) + 1
            reply = op.disarm("flood check") if i % 2 else op.abort(reason="flood check")
            latencies.append(reply["latency"])
            if not any(t.is_alive() for t in threads):
                break
        status = op.status()
    finally:
        stop_flood.set()
        for t in threads:
            t.join(120.0)
        op.close()
    periods = [lat["periods"] for lat in latencies if lat["periods"] is not None]
    wall = [lat["wall_periods"] for lat in latencies if lat.get("wall_periods") is not None]
    work = [lat["work_periods"] for lat in latencies if lat.get("work_periods") is not None]
    ahead = [lat["work_ahead_periods"] for lat in latencies if lat.get("work_ahead_periods") is not None]
    runqueue = [lat["runqueue_periods"] for lat in latencies if lat.get("runqueue_periods") is not None]
    blocked = [lat["blocked_periods"] for lat in latencies if lat.get("blocked_periods") is not None]
    # blocked with the loop awake: not asleep in its poll before the stop came in (the GIL, ...)
    blocked_awake = [lat["blocked_periods"] for lat in latencies
                     if lat.get("blocked_periods") is not None and not lat.get("in_poll")]

    def spread(values):
        return {"p50": float(np.median(values)) if values else None, "max": max(values) if values else None}
    snapshot = poller_state["snapshot"] or {}
    return {"clients": clients, "flood_requests": done["requests"], "flood_errors": errors,
            "status_page": {"refreshes": poller_state["refreshes"], "connected": poller_state["connected"],
                            "recordings_shown": len(snapshot.get("recordings") or []),
                            "recordings_with_summary": sum("summary" in r for r in snapshot.get("recordings") or []),
                            "error": snapshot.get("error")} if page else None,
            "stops": len(latencies), "arm_refusals": refusals,
            "stop_latency_periods": {"max": max(periods) if periods else None,
                                     "p50": float(np.median(periods)) if periods else None,
                                     "over_one": sum(p > 1.0 for p in periods)},
            # the same less the loop's sleep in its poll before the stop came in
            "stop_wall_periods": {"max": max(wall) if wall else None, "p50": float(np.median(wall)) if wall else None,
                                  "over_one": sum(p > 1.0 for p in wall)},
            "stop_work_periods": {"count": len(work), "max": max(work) if work else None,
                                  "p50": float(np.median(work)) if work else None,
                                  "over_one": sum(p > 1.0 for p in work),
                                  "ahead_max": max(ahead) if ahead else None,
                                  "ahead_p50": float(np.median(ahead)) if ahead else None},
            # the rest of the wall-clock wait: runnable but not running (the host's scheduler), and
            # neither (blocked: the GIL, a poll), from the main thread's schedstat
            "stop_runqueue_periods": spread(runqueue), "stop_blocked_periods": spread(blocked),
            "stop_blocked_awake_periods": spread(blocked_awake),
            "stops_in_poll": sum(bool(lat.get("in_poll")) for lat in latencies),
            "max_requests_ahead": max(lat["requests_ahead"] for lat in latencies),
            # counted by the daemon's receive sequence numbers: requests handled between a stop's
            # receipt and its reply, and requests received before a stop that it overtook
            "max_handled_since_received": max(lat["handled_since_received"] for lat in latencies),
            "overtook": {"requests": sum(lat["overtook"] for lat in latencies),
                         "stops": sum(lat["overtook"] > 0 for lat in latencies)},
            "received_seq_increasing": all(a["received_seq"] < b["received_seq"]
                                           for a, b in zip(latencies, latencies[1:])),
            "max_rounds": max(lat["rounds"] for lat in latencies),
            "rate_hz": latencies[0]["rate_hz"] if latencies else None,
            # what the flood cost the rest of the daemon: the driver's loop and the recorder
            "lost_samples": status["metrics"]["lost_samples"], "loop_jitter_ms": status["metrics"]["loop_jitter_ms"],
            "daemon": {k: status["control"][k] for k in ("stop_latency", "stale_refusals", "loop_rounds",
                                                           "heavy_reads", "recordings_indexed", "read_cache",
                                                           "main_scheduler", "gc_pauses")},
            "request_cost_ms": {cmd: {"count": v["count"], "max": round(v["max_ms"], 2),
                                      "mean": round(v["total_ms"] / max(1, v["count"]), 3),
                                      "cpu_max": round(v["max_cpu_ms"], 2),
                                      "cpu_mean": round(v["total_cpu_ms"] / max(1, v["count"]), 3)}
                                for cmd, v in status["control"]["request_cost_ms"].items()}}
