"""Fault scenarios shared by the CI tests (small counts) and bench/reliability/run.py (the full
counts). Each returns its measurements; the caller asserts and reports."""

from __future__ import annotations

import os
import random
import signal
import socket
import threading
import time
from pathlib import Path

import msgpack
import numpy as np

from robodyn.daemon import protocol as P
from robodyn.recording import load_recording
from tests.daemon.conftest import recorder_flushed

TERMINAL = ("completed", "aborted", "failed")


def wait_state(client, run_id: str, states, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    st = {"state": None}
    while time.monotonic() < deadline:
        st = client.run_status(run_id)
        if st["state"] in states:
            return st
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} never reached {states}; last {st['state']}")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def wait_stopped(client, timeout: float = 60.0) -> dict:
    """Status once the driver reports its robot braked (telemetry lags by up to 0.1 s; the ramp to
    rest is in robot time, so a loaded host only delays it: a generous outer time-out)."""
    deadline = time.monotonic() + timeout
    while True:
        st = client.status()
        if st["driver"]["lifecycle"] == "connected" or time.monotonic() > deadline:
            return st
        time.sleep(0.05)


# --------------------------------------------------------------------------- systemd notify


class NotifySocket:
    """systemd's side of the notify protocol: a datagram socket read by a thread, so each
    message is stamped when it arrives."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.1)
        self.messages: list[tuple[float, str]] = []
        self.closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while not self.closed:
            try:
                self.messages.append((time.monotonic(), self.sock.recv(4096).decode()))
            except (TimeoutError, socket.timeout):
                continue

    def drain(self) -> list[tuple[float, str]]:
        return list(self.messages)

    def times_of(self, field: str) -> list[float]:
        return [t for t, m in self.drain() if field in m.split("\n")]


# --------------------------------------------------------------------------- SIGKILL


def kill_mid_run(daemon, component: str, trajectory: dict, settle_s: float = 0.3) -> dict:
    """SIGKILL the driver or recorder process while a run executes. Returns what the issue asks
    to check: the run's final state and reason, the recording (opens, how much is missing before
    the kill), whether motion stopped, and how long the component took to come back."""
    client = daemon.client
    before = client.status()
    pid = before[component]["pid"]
    brakes_before = before["driver"]["diagnostics"]["commands"]["hard_brakes"]
    accepted = client.submit_run("panda", trajectory, label=f"kill {component}")
    wait_state(client, accepted["run_id"], ("execute",))
    time.sleep(settle_s)
    # the daemon's own counts just before the kill: samples the recorder has written to the file,
    # and the driver's sequence number at its last telemetry (published up to one batch before)
    last, flushed = recorder_flushed(client, accepted["recording"])
    os.kill(pid, signal.SIGKILL)
    killed_ns = time.monotonic_ns()
    final = client.wait_run(accepted["run_id"], timeout=180, poll_s=0.05)
    noticed_s = (time.monotonic_ns() - killed_ns) / 1e9
    daemon.wait_ready(old_pids=(pid,))
    restart_s = (time.monotonic_ns() - killed_ns) / 1e9
    # a killed recorder's file is finalized by its successor before it reports ready
    official = official_read(accepted["recording"])
    rec = load_recording(accepted["recording"])
    st = wait_stopped(client)
    diag = st["driver"]["diagnostics"]["commands"]
    return {
        "component": component, "state": final["state"], "reason": final["abort_reason"],
        "samples": rec.samples, "truncated": rec.truncated, "gaps": rec.gaps(),
        "loss_ms": (killed_ns - int(rec.host_time_ns[-1])) / 1e6 if rec.samples else float("inf"),
        "flushed_before_kill": flushed, "driver_seq_before_kill": int(last["state"]["seq"]),
        "first_seq": int(rec.seq[0]) if rec.samples else None, "last_seq": int(rec.seq[-1]) if rec.samples else None,
        "noticed_s": noticed_s, "restart_s": restart_s, "restarts": st[component]["restarts"],
        # the driver ramped to rest and braked only at standstill (a killed driver is replaced by
        # a fresh, braked one; its counters restart)
        "stopped": st["driver"]["lifecycle"] == "connected",
        "hard_brakes": diag["hard_brakes"] - (brakes_before if component == "recorder" else 0),
        "armed_after": st["safety"]["armed"],
        "official_ok": official["ok"], "official_error": official["error"],
        "official_samples": official["samples"], "repaired": official["repaired"],
    }


def official_read(path) -> dict:
    """The official `mcap` Python reader's default call, as any MCAP user would open the file:
    ``make_reader(f).iter_messages()``; counts the samples in the state blocks it yields."""
    from mcap.reader import make_reader

    out = {"ok": False, "error": "", "messages": 0, "samples": 0, "repaired": False}
    try:
        with open(path, "rb") as fh:
            reader = make_reader(fh)
            for _schema, channel, message in reader.iter_messages():
                out["messages"] += 1
                if channel.topic == "/robodyn/state":
                    out["samples"] += int(P.unpackb(message.data, max_bytes=1 << 30)["seq"].shape[0])
            out["repaired"] = any(m.name == "robodyn.repair" for m in reader.iter_metadata())
        out["ok"] = True
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def kill_daemon_mid_run(work: Path, data_dir: Path, trajectory: dict, settle_s: float = 0.3) -> dict:
    """SIGKILL the daemon's main process mid-run: the driver ramps to rest and exits, the
    recorder finalizes the file (its reason names the main process) and exits. The file must
    open with the official reader's default call and with robodyn's loader."""
    from tests.daemon.conftest import DaemonProcess

    work.mkdir(parents=True, exist_ok=True)
    d = DaemonProcess(work, data_dir=data_dir)
    try:
        st = d.client.status()
        workers = (st["driver"]["pid"], st["recorder"]["pid"])
        accepted = d.client.submit_run("panda", trajectory, label="kill daemon")
        wait_state(d.client, accepted["run_id"], ("execute",))
        time.sleep(settle_s)
        d.proc.kill()
        t0 = time.monotonic()
        while any(_alive(p) for p in workers) and time.monotonic() - t0 < 60:  # outer time-out only
            time.sleep(0.05)
        gone_s = time.monotonic() - t0
        workers_left = [p for p in workers if _alive(p)]
    finally:
        d.stop()
    official = official_read(accepted["recording"])
    rec = load_recording(accepted["recording"])
    return {"component": "daemon", "workers_gone_s": gone_s, "workers_left": workers_left,
            "official_ok": official["ok"], "official_error": official["error"],
            "official_samples": official["samples"], "repaired": official["repaired"],
            "samples": rec.samples, "gaps": rec.gaps(), "truncated": rec.truncated,
            "status": (rec.summary or {}).get("status"), "reason": (rec.summary or {}).get("reason", ""),
            "stopping_samples": int(rec.phase_mask("stopping").sum()),
            "final_qd_d": float(np.abs(rec.signal("qd_d")[-1]).max()) if rec.samples else None}


# --------------------------------------------------------------------------- fuzzing


def _valid_request(rng: random.Random) -> dict:
    cmd = rng.choice(sorted(P.COMMANDS) + ["teleport", "", "status\x00", "a" * 300])
    return {"v": 1, "id": rng.randrange(1 << 30), "cmd": cmd, "args": {}}


def _junk_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.randrange(-(1 << 63), 1 << 63)
    if kind == 1:
        return rng.random() * 10 ** rng.randrange(-300, 300) * rng.choice([1, -1])
    if kind == 2:
        return "".join(chr(rng.randrange(32, 0x2FF)) for _ in range(rng.randrange(20)))
    if kind == 3:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(20)))
    if kind == 4:
        return rng.choice([None, True, False, float("nan"), float("inf")])
    if kind == 5:
        return {"$nd": 1, "dtype": rng.choice(["<f8", "|O", "<c16", 5]), "shape": [rng.randrange(-2, 1 << 40)],
                "data": b"\0" * rng.randrange(16)}
    if kind == 6:
        return [_junk_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    if kind == 7:
        return {rng.choice(["family", "params", "dof", "q0", "duration", "x"]): _junk_value(rng, depth + 1)
                for _ in range(rng.randrange(5))}
    return {"format": "robodyn.trajectory", "version": 1, "dof": 7,
            "family": rng.choice(["fourier", "fourier_poly", "point_to_point", "sampled", "sequence", "x"]),
            "params": {k: _junk_value(rng, depth + 1) for k in ("wf", "q0", "a", "b", "q_start", "q_end",
                                                                "duration", "t", "q")}}


FUZZ_KINDS = ["random_bytes", "truncated", "wrong_types", "not_a_map", "bad_version", "unknown_cmd", "unknown_args",
              "huge_header", "deep_nesting", "bad_ndarray", "multi_frame", "empty", "hostile_args", "large_frame"]


def fuzz_frame(rng: random.Random) -> tuple[str, list[bytes]]:
    """One malformed (or merely hostile) control message, and its kind."""
    # frames of 16 MiB are rare (about 15 in 10 000) to keep the test quick
    kind = rng.choices(FUZZ_KINDS, weights=[1.0] * (len(FUZZ_KINDS) - 1) + [0.02])[0]
    if kind == "random_bytes":
        return kind, [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))]
    if kind == "truncated":
        full = msgpack.packb(dict(_valid_request(rng), args={"trajectory": _junk_value(rng)}), use_bin_type=True)
        return kind, [full[:rng.randrange(1, max(2, len(full)))]]
    if kind == "wrong_types":
        req = _valid_request(rng)
        req[rng.choice(["v", "id", "cmd", "args"])] = _junk_value(rng)
        return kind, [msgpack.packb(req, use_bin_type=True)]
    if kind == "not_a_map":
        return kind, [msgpack.packb(_junk_value(rng), use_bin_type=True)]
    if kind == "bad_version":
        return kind, [msgpack.packb(dict(_valid_request(rng), v=rng.choice([0, 2, "1", None, 1.0, -1])))]
    if kind == "unknown_cmd":
        return kind, [msgpack.packb({"v": 1, "cmd": "".join(rng.choice("abcxyz_") for _ in range(8)), "args": {}})]
    if kind == "unknown_args":
        req = _valid_request(rng)
        req["args"] = {f"arg{rng.randrange(99)}": _junk_value(rng) for _ in range(rng.randrange(1, 4))}
        return kind, [msgpack.packb(req, use_bin_type=True)]
    if kind == "huge_header":  # a length prefix promising gigabytes, followed by almost nothing
        head = rng.choice([b"\xc6\xff\xff\xff\xff", b"\xdb\xff\xff\xff\xf0", b"\xdd\x7f\xff\xff\xff",
                           b"\xdf\x7f\xff\xff\xff", b"\xc9\xff\xff\xff\xff\x05"])
        return kind, [head + bytes(rng.randrange(256) for _ in range(rng.randrange(32)))]
    if kind == "deep_nesting":
        depth = rng.randrange(100, 100_000)
        return kind, [b"\x91" * depth + b"\xc0"]
    if kind == "bad_ndarray":
        req = {"v": 1, "cmd": "submit_run", "args": {"robot": "panda", "trajectory": {
            "family": "sampled", "params": {"q": _junk_value(rng, 10) if rng.random() < 0.3 else
                                            {"$nd": 1, "dtype": "<f8", "shape": [1 << 40, 1 << 40], "data": b""}}}}}
        return kind, [msgpack.packb(req, use_bin_type=True)]
    if kind == "multi_frame":
        return kind, [msgpack.packb(_valid_request(rng)) for _ in range(rng.randrange(2, 4))]
    if kind == "empty":
        return kind, [b""]
    if kind == "hostile_args":  # paths instead of ids, oversized text, the arming command without token
        cmd, args = rng.choice([
            ("recording_info", {"recording": rng.choice(["../../etc/passwd", "/etc/shadow", ".hidden", "a/b"])}),
            ("run_status", {"run_id": "../" * rng.randrange(1, 50)}),
            ("abort", {"reason": "x" * rng.randrange(1025, 100_000)}),
            ("submit_run", {"robot": "panda", "label": "y" * 5000, "trajectory": {}}),
            ("arm", {}),
            ("pull", {"job": "../../../etc"}),
            ("identify", {"recordings": ["/etc/passwd"]}),
        ])
        return kind, [msgpack.packb({"v": 1, "id": 1, "cmd": cmd, "args": args})]
    # large_frame: just over the 16 MiB request cap (below the transport's cut-off)
    return kind, [b"\x00" * (P.MAX_REQUEST_BYTES + rng.randrange(1, 1 << 20))]


def fuzz(endpoint: str, frames: int, seed: int = 9, reply_timeout_s: float = 60.0) -> dict:
    """Send ``frames`` fuzz messages, one at a time; every one must get a reply (an error)."""
    import zmq

    rng = random.Random(seed)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    kinds: dict[str, int] = {}
    codes: dict[str, int] = {}
    ok_replies = 0
    t0 = time.monotonic()
    try:
        for i in range(frames):
            kind, parts = fuzz_frame(rng)
            kinds[kind] = kinds.get(kind, 0) + 1
            sock.send_multipart(parts)
            if not sock.poll(int(reply_timeout_s * 1000)):
                raise AssertionError(f"no reply to fuzz frame {i} ({kind}) within {reply_timeout_s} s")
            reply = msgpack.unpackb(sock.recv(), raw=False)
            if reply.get("ok"):
                ok_replies += 1
            else:
                code = reply["error"]["code"]
                codes[code] = codes.get(code, 0) + 1
    finally:
        sock.close(linger=0)
        ctx.destroy(linger=0)
    return {"frames": frames, "seconds": time.monotonic() - t0, "kinds": kinds, "error_codes": codes,
            "ok_replies": ok_replies, "multi_frame": kinds.get("multi_frame", 0)}


# --------------------------------------------------------------------------- soak


def soak(daemon, samples: int, trajectory: dict, rss_every_s: float = 2.0, progress=None) -> dict:
    """Back-to-back runs until the recorder has written ``samples`` samples; resident memory of
    the three processes sampled along the way. RSS slope: least squares of the summed RSS against
    samples over the second half (after caches and allocators have warmed up)."""
    client = daemon.client
    st = client.status()
    pids = {"main": st["daemon"]["pid"], "driver": st["driver"]["pid"], "recorder": st["recorder"]["pid"]}
    start_written = (st["metrics"]["recorder_throughput"] or {}).get("samples_written", 0)
    points, runs, lost, next_rss = [], 0, 0, 0.0
    t0 = time.monotonic()
    give_up = t0 + 500.0  # an outer time-out (below pytest's 600 s), so a stuck soak says where it stuck
    written = 0
    while written < samples:
        accepted = client.submit_run("panda", trajectory, label="soak")
        while True:
            now = time.monotonic()
            assert now < give_up, f"soak: {written} of {samples} samples written after {now - t0:.0f} s"
            if now >= next_rss:
                next_rss = now + rss_every_s
                st = client.status()
                written = (st["metrics"]["recorder_throughput"] or {}).get("samples_written", 0) - start_written
                points.append((written, sum(rss_kib(p) for p in pids.values()),
                               {k: rss_kib(p) for k, p in pids.items()}))
            run = client.run_status(accepted["run_id"])
            if run["state"] in TERMINAL:
                break
            time.sleep(0.2)
        assert run["state"] == "completed", run
        runs += 1
        lost += run["summary"]["lost_samples"]
        st = client.status()
        written = (st["metrics"]["recorder_throughput"] or {}).get("samples_written", 0) - start_written
        if progress:
            progress(written, runs)
    st = client.status()
    assert {k: v for k, v in pids.items()} == {"main": st["daemon"]["pid"], "driver": st["driver"]["pid"],
                                                "recorder": st["recorder"]["pid"]}, "a process was restarted"
    x = np.array([p[0] for p in points], float)
    y = np.array([p[1] for p in points], float)
    half = x >= x[-1] / 2 if x.size else x
    slope = float(np.polyfit(x[half] / 1e6, y[half], 1)[0]) if half.sum() >= 3 else float("nan")
    return {"samples": int(written), "runs": runs, "lost_samples": int(lost),
            "stream_lost": st["metrics"]["lost_samples"]["stream"], "seconds": time.monotonic() - t0,
            "rss_kib_first": points[0][2] if points else {}, "rss_kib_last": points[-1][2] if points else {},
            "rss_slope_kib_per_million_samples": slope, "rss_points": len(points)}


# --------------------------------------------------------------------------- stalled subscribers


def stalled_subscribers(daemon, count: int, seconds: float, sample_every_s: float = 5.0, progress=None) -> dict:
    """``count`` subscribers that connect to the state stream and never read (receive queue of
    one message, a 4 KiB kernel buffer), plus one that reads everything, for ``seconds``.
    Returns the resident memory of the driver and publisher processes over time, the loop's
    period percentiles from the driver's telemetry, and the reader's sequence gaps."""
    import zmq

    client = daemon.client
    st = client.status()
    pids = {"driver": st["driver"]["pid"], "publisher": st["publisher"]["pid"], "main": st["daemon"]["pid"]}
    ctx = zmq.Context()
    stalled = []
    try:
        for _ in range(count):
            s = ctx.socket(zmq.SUB)
            s.setsockopt(zmq.RCVHWM, 1)
            s.setsockopt(zmq.RCVBUF, 4096)
            s.setsockopt(zmq.LINGER, 0)
            s.setsockopt(zmq.SUBSCRIBE, b"")
            s.connect(daemon.state)
            stalled.append(s)
        reader = ctx.socket(zmq.SUB)
        reader.setsockopt(zmq.LINGER, 0)
        reader.setsockopt(zmq.SUBSCRIBE, P.TOPIC_STATE)
        reader.connect(daemon.state)
        seq_start = int(client.call("status")["state"]["seq"])  # the driver's own sequence number
        t0 = time.monotonic()
        points, first_seq, last_seq, gaps, lost, received, next_sample = [], 0, 0, 0, 0, 0, t0 + 1.0

        def read() -> None:
            nonlocal first_seq, last_seq, gaps, lost, received
            if reader.poll(50):
                while True:
                    try:
                        _topic, payload = reader.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    seq = P.unpack_state_batch(payload)["seq"]
                    if last_seq and int(seq[0]) != last_seq + 1:
                        gaps += 1
                        lost += int(seq[0]) - last_seq - 1
                    first_seq = first_seq or int(seq[0])
                    last_seq = int(seq[-1])
                    received += int(seq.shape[0])

        while time.monotonic() - t0 < seconds:
            read()
            now = time.monotonic()
            if now >= next_sample:
                next_sample = now + sample_every_s
                tel = client.status()
                points.append({"t": round(now - t0, 1), **{k: rss_kib(p) for k, p in pids.items()},
                               "loop_p99_ms": (tel["driver"]["loop"] or {}).get("p99_ms"),
                               "subscribers": tel["publisher"].get("subscribers")})
                if progress:
                    progress(points[-1])
        st = client.status()
        # the reader then catches up with the driver's sequence number at the window's end (how fast
        # it got there is the host's; that it got every sample is the code's)
        seq_end = int(st["state"]["seq"])
        caught_up = time.monotonic() + 60
        while last_seq < seq_end and time.monotonic() < caught_up:
            read()
    finally:
        for s in stalled:
            s.close(linger=0)
        ctx.destroy(linger=0)
    settled = [p for p in points if p["t"] >= min(10.0, seconds / 3)] or points
    return {"stalled": count, "seconds": seconds, "points": points,
            "driver_rss_kib": {"first": settled[0]["driver"], "last": settled[-1]["driver"],
                               "max": max(p["driver"] for p in settled), "min": min(p["driver"] for p in settled)},
            "publisher_rss_kib": {"first": settled[0]["publisher"], "max": max(p["publisher"] for p in settled)},
            "loop": st["driver"]["loop"], "reader": {"received": received, "gaps": gaps, "lost": lost,
                                                        "first_seq": first_seq, "last_seq": last_seq},
            "driver_seq": {"start": seq_start, "end": seq_end},
            "subscribers_seen": st["publisher"].get("subscribers")}
