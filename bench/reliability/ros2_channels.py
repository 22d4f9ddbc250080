"""File size and recorder CPU with and without the ROS 2 channels, side by side.

    .venv/bin/python bench/reliability/ros2_channels.py [--seconds 30] [--repeats 3]

1. ``writer``: the samples of one real simulator run (recorded first), replayed through
   RecordingWriter in 50-sample blocks (one block per 50 ms at 1 kHz, as the recorder writes
   them), without and with the ROS 2 channels; CPU time per second of data (median of the
   repeats) and file size.
2. ``daemon``: the recorder process of a live daemon (simulator in real time) recording the same
   excitation, without and with ``[recorder].ros2``: its CPU time (utime + stime from /proc)
   over the run, and the file size.

Prints JSON and writes bench/reliability/ros2_channels.json.
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

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from robodyn.recording import RecordingWriter, load_recording  # noqa: E402
from robodyn.robot.loader import load_model  # noqa: E402
from tests.daemon.conftest import DaemonProcess, excitation  # noqa: E402


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def live(work: Path, seconds: float, ros2: bool) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    d = DaemonProcess(work, speed=1.0, extra_config=f"[recorder]\nros2 = {'true' if ros2 else 'false'}\n")
    try:
        pid = d.client.status()["recorder"]["pid"]
        c0 = cpu_s(pid)
        t0 = time.monotonic()
        a = d.client.submit_run("panda", excitation(seconds))
        final = d.client.wait_run(a["run_id"], timeout=seconds * 5 + 60)
        wall = time.monotonic() - t0
        cpu = cpu_s(pid) - c0
        size = os.path.getsize(a["recording"])
        return {"ros2": ros2, "samples": final["summary"]["samples"], "lost": final["summary"]["lost_samples"],
                "file_bytes": size, "bytes_per_sample": size / final["summary"]["samples"],
                "recorder_cpu_s": cpu, "recorder_cpu_percent": 100 * cpu / wall, "wall_s": wall,
                "recording": a["recording"]}
    finally:
        d.stop()


def replay(rec, path: Path, ros2_model, block: int = 50) -> tuple[float, int]:
    meta = dict(rec.meta)
    values = np.column_stack([rec.signals[n] for n in rec.signals])
    w = RecordingWriter(path, meta, values.shape[1], "zstd", 50.0, ros2_model=ros2_model)
    c0 = time.process_time()
    for k in range(0, rec.samples, block):
        sl = slice(k, k + block)
        w.append(rec.seq[sl], rec.robot_time[sl], rec.host_time_ns[sl], rec.phase[sl], values[sl])
        w.flush_block()
    w.close({"status": "completed"})
    return time.process_time() - c0, os.path.getsize(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).with_name("ros2_channels.json")))
    args = ap.parse_args()
    out = {"when": time.strftime("%Y-%m-%d %H:%M"), "load_average": list(os.getloadavg()),
           "seconds": args.seconds}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        out["daemon"] = {"without": live(tmp / "plain", args.seconds, False),
                         "with": live(tmp / "ros2", args.seconds, True)}
        rec = load_recording(out["daemon"]["without"]["recording"])
        model = load_model("panda")
        rows = {"without": [], "with": []}
        for r in range(args.repeats):
            for label, m in (("without", None), ("with", model)):
                rows[label].append(replay(rec, tmp / f"{label}{r}.mcap", m))
        data_s = rec.samples / float(rec.meta.get("rate_hz", 1000.0))
        out["writer"] = {label: {"cpu_s_per_data_s": statistics.median(c for c, _ in v) / data_s,
                                 "cpu_s_all": [round(c, 4) for c, _ in v], "file_bytes": v[0][1],
                                 "bytes_per_sample": v[0][1] / rec.samples} for label, v in rows.items()}
        out["writer"]["samples"] = rec.samples
        for section in ("daemon", "writer"):
            w, wo = out[section]["with"], out[section]["without"]
            out[section]["ratio_file_bytes"] = w["file_bytes"] / wo["file_bytes"]
            key = "recorder_cpu_s" if section == "daemon" else "cpu_s_per_data_s"
            out[section]["ratio_cpu"] = w[key] / wo[key]
        for v in out["daemon"].values():
            if isinstance(v, dict):
                v.pop("recording", None)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
