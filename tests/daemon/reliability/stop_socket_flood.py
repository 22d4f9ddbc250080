"""Runs stopped through the driver's stop socket (daemon/stop_socket.py) while observers flood the
main process: the scenario of tests/daemon/reliability/test_stop_socket.py (which asserts on it)
and bench/reliability/stop_socket_flood.py (which writes its figures as JSON)."""

from __future__ import annotations

import threading
import time

import numpy as np
from robodyn.daemon import protocol as P
from robodyn.daemon.client import Client
from robodyn.recording import load_recording

from tests.daemon.conftest import excitation

FLOOD_LIMIT = 20_000  # requests per observer at most: every loop is bounded
RUN_S = 6.0  # each run's trajectory: time enough for a poll of run_status to see it moving
MOVING = ("move_to_start", "execute")
OUTER_TIMEOUT_S = 300.0


def _wait_moving(client: Client, run_id: str) -> bool:
    """Until the run moves (True) or has ended unseen (False: a client starved by its host
    polled too rarely to see it); an outer time-out only."""
    deadline = time.monotonic() + OUTER_TIMEOUT_S
    while True:
        state = client.run_status(run_id)["state"]
        if state in MOVING:
            return True
        if state in ("completed", "aborted", "failed"):
            return False
        assert time.monotonic() < deadline, f"run {run_id} still {state} after {OUTER_TIMEOUT_S:.0f} s"
        time.sleep(0.02)


def _observe(control: str, k: int, stop: threading.Event, done: list) -> None:
    with Client(control, timeout=120.0) as c:
        for i in range(FLOOD_LIMIT):
            if stop.is_set():
                return
            kind = (i + k) % 3
            if kind == 0:
                c.recordings_page(limit=P.MAX_PAGE, offset=0)
            elif kind == 1:
                c.status()
            else:
                c.jobs(limit=P.MAX_PAGE, offset=0)
            done[k] += 1


def stop_runs_under_flood(control: str, client: Client, stops: int, observers: int) -> dict:
    """``observers`` connections flood ``recordings`` and ``jobs`` (pages of MAX_PAGE) and
    ``status``; meanwhile ``stops`` runs are submitted and each stopped as soon as the driver
    moves it (move to the start or trajectory): ``abort``, every fourth ``disarm`` (then armed
    again for the next). Per stop: the reply, the run's final status, and the first sample of
    its ramp (or settle) in the recording; then the daemon's status."""
    stop_flood, done = threading.Event(), [0] * observers
    threads = [threading.Thread(target=_observe, args=(control, k, stop_flood, done), daemon=True)
               for k in range(observers)]
    for t in threads:
        t.start()
    out = {"replies": [], "finals": [], "first_ramp_seq": [], "flooded_between": [], "observers_alive": True,
           "unseen_runs": 0}
    try:
        for attempt in range(3 * stops):  # bounded: a run the client never saw moving is not stopped
            i = len(out["replies"])
            if i == stops:
                break
            if not client.status()["safety"]["armed"]:
                client.arm()
            accepted = client.submit_run("panda", excitation(RUN_S, seed=attempt), label=f"stop {i}")
            run_id = accepted["run_id"]
            if not _wait_moving(client, run_id):
                out["unseen_runs"] += 1
                continue
            before = sum(done)
            reply = client.disarm(f"stop {i}") if i % 4 == 3 else client.abort(reason=f"stop {i}")
            out["replies"].append(reply)
            final = client.wait_run(run_id, timeout=300.0)
            out["finals"].append(final)
            out["flooded_between"].append(sum(done) - before)
            out["observers_alive"] &= all(t.is_alive() for t in threads)
        out["status"] = client.status()
    finally:
        stop_flood.set()
        for t in threads:
            t.join(120.0)
    out["observer_requests"] = sum(done)
    for final in out["finals"]:
        recording = (final.get("summary") or {}).get("recording")
        first = None
        if recording:
            rec = load_recording(recording)
            ramp = rec.seq[rec.phase_mask("stopping") | rec.phase_mask("settle")].astype(np.int64)
            first = int(ramp[0]) if ramp.size else None
        out["first_ramp_seq"].append(first)
    return out


def figures(out: dict) -> dict:
    """The counts and the stops' waits, in periods of the real-time loop, as the driver measured them."""
    stops = [r.get("stop") or {} for r in out["replies"]]
    in_socket = [s["in_socket_periods"] for s in stops if s.get("in_socket_periods") is not None]
    sent = [s["sent_periods"] for s in stops if s.get("sent_periods") is not None]
    status = out["status"]

    def spread(values):
        return {"p50": float(np.median(values)) if values else None, "max": max(values) if values else None}
    return {"stops": len(stops), "served_by_driver": sum(r.get("served_by") == "driver" for r in out["replies"]),
            "seen_eq_acted": sum(s.get("seen_seq") is not None and s.get("seen_seq") == s.get("acted_seq")
                                 for s in stops),
            "arrived_since_previous_cycle": sum(s.get("arrived_since_previous_cycle") is True for s in stops),
            "ramp_starts_at_acted_seq": sum(f == s.get("acted_seq") for f, s in zip(out["first_ramp_seq"], stops)),
            "aborted_runs": sum(f["state"] == "aborted" for f in out["finals"]), "unseen_runs": out["unseen_runs"],
            "in_socket_periods": spread(in_socket), "sent_periods": spread(sent),
            "observer_requests": out["observer_requests"],
            "stop_socket": status["driver"]["stop_socket"], "driver_stops": status["control"]["driver_stops"],
            "control_stops": status["control"]["stop_latency"]["count"],
            "driver_scheduler": status["driver"]["scheduler"], "loop_jitter_ms": status["metrics"]["loop_jitter_ms"],
            "lost_samples": status["metrics"]["lost_samples"]}
