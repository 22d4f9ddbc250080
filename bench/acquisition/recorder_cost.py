"""The recorder's CPU per sample of the stream, by samples per batch.

    .venv/bin/python bench/acquisition/recorder_cost.py [--samples 20000] [--repeats 5]

Feeds the recorder's stream handler (daemon/recorder.py ``Recorder._on_stream``) batches packed by
the driver loop's own Batcher, for a 7-joint robot's columns, with no run open (what the recorder
does for every sample between runs) and with a run open (the samples written to an MCAP file).
Prints JSON: per batch size, the median over the repeats of the recorder process's CPU time per
sample in microseconds, and its ratio to one sample per batch (the live stream's batching, which
the recorder was given until 2026-11-26). CPU time, not wall time, so a loaded host changes the
figures less; both cases run in one process, alternating."""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import numpy as np

from robodyn.daemon import protocol as P
from robodyn.daemon import recorder as R
from robodyn.daemon.config import DaemonConfig
from robodyn.recording.writer import RecordingWriter
from robodyn.daemon.rtloop import RECORD_BATCH_MS, Batcher

WIDTH = 7 * 5 + 2  # q, qd, tau, tau_ext, q_d of 7 joints and two more columns


def packed_stream(samples: int, per_batch: int, run: int) -> list[bytes]:
    batcher, out, seq = Batcher(WIDTH, 0), [], 0
    values = np.linspace(-1.0, 1.0, WIDTH)
    for _ in range(samples // per_batch):
        for _ in range(per_batch):
            seq += 1
            batcher.append(seq, seq * 1e-3, seq * 1_000_000, P.PHASE_EXECUTE if run else P.PHASE_IDLE, run, values)
        out.append(batcher.pack("fr3", 1, seq * 1_000_000))
    return out


def cpu_per_sample_us(recorder, messages: list[bytes], samples: int) -> float:
    t0 = time.process_time()
    for payload in messages:
        recorder._on_stream(P.TOPIC_RECORD, payload)
    return (time.process_time() - t0) / samples * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    sizes = sorted({1, 2, int(RECORD_BATCH_MS), 10})
    tmp = tempfile.mkdtemp(prefix="robodyn-recorder-cost-")
    cfg = DaemonConfig(data_dir=tmp, ros2=False)
    recorder = R.Recorder(cfg, {"state_ipc": f"ipc://{tmp}/state", "recorder_pipe": f"ipc://{tmp}/pipe"})
    result = {"command": "python bench/acquisition/recorder_cost.py", "samples": args.samples,
              "repeats": args.repeats, "record_batch_samples_at_1khz": int(RECORD_BATCH_MS), "cases": {}}
    for case, run in (("idle", 0), ("recording", 1)):
        streams = {n: packed_stream(args.samples, n, run) for n in sizes}
        times = {n: [] for n in sizes}
        for rep in range(args.repeats):
            for n in sizes:  # alternating, so a change of the host's load falls on every size alike
                recorder.watch = R.StreamWatch()
                if run:
                    writer = RecordingWriter(f"{tmp}/{case}-{n}-{rep}.mcap", {"run_id": "bench"}, WIDTH, "zstd", 50.0)
                    recorder.active = R.ActiveRun({"run": 1, "run_id": "bench", "path": writer.path.as_posix()},
                                                  writer)
                times[n].append(cpu_per_sample_us(recorder, streams[n], args.samples))
                if run:
                    recorder.active.writer.close({"status": "completed"})
                    recorder.active = None
        base = statistics.median(times[1])
        result["cases"][case] = {f"samples_per_batch_{n}": {"cpu_us_per_sample_median": round(statistics.median(times[n]), 2),
                                          "ratio_to_one_per_batch": round(statistics.median(times[n]) / base, 3)}
                                 for n in sizes}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
