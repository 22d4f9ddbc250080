"""Red team: a 16 MiB frame to the control endpoint, then an abort behind it.

    .venv/bin/python bench/reliability/hostile_frames.py [--repeats 10] [--rt-priority 10]

Two parts, printed as JSON (and written to ``--out``) with the host's load average:

``decode``: what decoding costs the main loop. The worst shapes of a frame of
``INLINE_DECODE_BYTES`` (the largest decoded on the loop: one object per byte or two), decoded with
``request_decoding.decode_request``, median of ``--calls`` decodes, in microseconds; beside them the red
team's 16 MiB frame decoded the way the loop decoded every frame before (``msgpack.unpackb`` and
the walk for encoded arrays, once), and what the loop now does with it (its head read).

``daemon``: a simulated Panda at real time. ``--repeats`` times: a run is started, and once it
executes, one connection sends the 16 MiB frame without the token and another sends ``abort``
through the control endpoint right behind it; in alternation, the same abort without the frame
(the reference). For each abort: the daemon's own latency figures (periods of the 1 kHz loop from
the last moment it saw no request waiting to the reply; on its main thread's CPU clock; the
requests handled between the abort's receipt and its reply), the wall time the client waited for
the reply, and the watchdog heartbeat's longest gap over the whole part. Medians, and the ratio
of the medians with the frame to without it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import msgpack

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from robodyn.daemon import protocol as P  # noqa: E402
from robodyn.daemon import request_decoding as R  # noqa: E402
from tests.daemon.conftest import DaemonProcess, excitation  # noqa: E402
from tests.daemon.reliability.scenarios import NotifySocket, wait_state  # noqa: E402
from tests.daemon.reliability.test_hostile_frames import dealer, lists_frame, reply_of  # noqa: E402

WATCHDOG_S = 2.0


def decode_part(calls: int) -> dict:
    n = R.INLINE_DECODE_BYTES
    shapes = {"empty maps": b"\x80", "one-element lists": b"\x91\x00", "nils": b"\xc0",
              "one-key maps": b"\x81\xa1a\x00"}
    out = {}
    for name, body in shapes.items():
        k = (n - 5) // len(body)
        frame = b"\xdd" + k.to_bytes(4, "big") + body * k
        times = []
        for _ in range(calls):
            t0 = time.perf_counter_ns()
            try:
                R.decode_request(frame)
            except P.ProtocolError:
                pass
            times.append(time.perf_counter_ns() - t0)
        out[name] = {"bytes": len(frame), "median_us": statistics.median(times) / 1e3, "max_us": max(times) / 1e3}
    frame = lists_frame()
    t0 = time.perf_counter()
    P.decode_arrays(msgpack.unpackb(frame, raw=False))
    before_s = time.perf_counter() - t0
    times = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        R.request_head(frame)
        times.append(time.perf_counter_ns() - t0)
    return {"inline_worst_shapes": out, "red_team_frame_bytes": len(frame),
            "red_team_frame_decoded_as_before_s": round(before_s, 2),
            "red_team_frame_head_read_median_us": statistics.median(times) / 1e3}


def abort_once(d, hostile: bool, frame: bytes) -> dict:
    client = d.client
    accepted = client.submit_run("panda", excitation(20.0), label="hostile frame bench")
    wait_state(client, accepted["run_id"], ("execute",))
    time.sleep(0.2)
    frame_sock, stop_sock = dealer(d.control), dealer(d.control)
    try:
        t0 = time.monotonic()
        if hostile:
            frame_sock.send(frame, copy=False)
        stop_sock.send(P.make_request("abort", {"reason": "bench"}, rid=1))
        stop = reply_of(stop_sock)
        waited = time.monotonic() - t0
        refused = reply_of(frame_sock)["error"]["code"] if hostile else None
    finally:
        frame_sock.close(0)
        stop_sock.close(0)
    final = client.wait_run(accepted["run_id"], timeout=120, poll_s=0.05)
    lat = stop["result"]["latency"]
    return {"hostile": hostile, "periods": lat["periods"], "wall_periods": lat["wall_periods"],
            "work_periods": lat["work_periods"], "handled_since_received": lat["handled_since_received"],
            "client_wait_ms": waited * 1e3, "frame_reply": refused, "run": final["state"]}


def daemon_part(repeats: int, rt_priority: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="robodyn-hostile-") as tmp:
        tmp = Path(tmp)
        notify = NotifySocket(tmp / "notify")
        d = DaemonProcess(tmp, speed=1.0, env={"NOTIFY_SOCKET": str(tmp / "notify"),
                                               "WATCHDOG_USEC": str(int(WATCHDOG_S * 1e6))},
                          extra_config=f"[loop]\nrt_priority = {rt_priority}\n" if rt_priority else "")
        try:
            # built once, before any timing: encoding it takes this process seconds holding its GIL,
            # which would stall the thread that stamps the heartbeats and the client's clock
            frame = lists_frame()
            rows = [abort_once(d, hostile=k % 2 == 0, frame=frame) for k in range(2 * repeats)]
            counts = d.client.status()["control"]["large_requests"]
        finally:
            d.stop()
            notify.closed = True
        beats = notify.times_of("WATCHDOG=1")
    gaps = [b - a for a, b in zip(beats, beats[1:])]

    def summary(hostile: bool) -> dict:
        sel = [r for r in rows if r["hostile"] is hostile]
        return {key: statistics.median(r[key] for r in sel) for key in
                ("periods", "wall_periods", "work_periods", "client_wait_ms")} | {
            "max_wall_periods": max(r["wall_periods"] for r in sel),
            "max_handled_since_received": max(r["handled_since_received"] for r in sel),
            "runs_aborted": sum(r["run"] == "aborted" for r in sel), "aborts": len(sel)}

    with_frame, without = summary(True), summary(False)
    return {"with_frame": with_frame, "without_frame": without,
            "ratio_of_medians": {k: with_frame[k] / without[k] if without[k] else None
                                 for k in ("wall_periods", "work_periods", "client_wait_ms")},
            "frame_replies": sorted({r["frame_reply"] for r in rows if r["hostile"]}),
            "large_requests": counts, "watchdog_s": WATCHDOG_S, "heartbeat_max_gap_s": max(gaps) if gaps else None,
            "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=10, help="aborts behind a hostile frame (and as many without)")
    ap.add_argument("--calls", type=int, default=200, help="decodes per shape in the decode part")
    ap.add_argument("--rt-priority", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).with_name("hostile_frames.json")))
    args = ap.parse_args(argv)
    load_before = os.getloadavg()
    result = {"decode": decode_part(args.calls), "daemon": daemon_part(args.repeats, args.rt_priority),
              "rt_priority": args.rt_priority,
              "host": {"cpus": os.cpu_count(), "machine": platform.machine(),
                       "load_average_before": [round(x, 1) for x in load_before],
                       "load_average_after": [round(x, 1) for x in os.getloadavg()]},
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    text = json.dumps(result, indent=1, default=str)
    print(text)
    Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
