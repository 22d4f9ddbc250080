"""The recorder process: subscribes to the state stream, writes one MCAP file per run.

Sockets: SUB connected to the driver process's internal ipc PUB endpoint; PAIR connected to the
main process (``open`` / ``close`` requests in, replies and stream statistics out).

It watches sequence numbers on the whole stream (not only during runs), so a gap anywhere is
counted and reported, never silently dropped. Per run it keeps the samples stamped with the run's
number; at ``close`` it waits (bounded) for the run's last sequence number, then finalizes the
file with a summary: recorded samples, expected samples, lost samples and the gaps.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback

import numpy as np

from . import protocol as P
from .main_process import (main_process_gone, main_process_pid, say_leaving, start_up_done, start_up_step,
                           watch_start_up)
from robodyn.private_files import tighten_dir
from robodyn.recording.index import index_row, write_index
from robodyn.recording.reader import read_recording_info
from robodyn.recording.repair import UnfinishedFiles, repair_recording, unfinished_recordings
from robodyn.recording.writer import RecordingWriter, load_writer_library

RCV_HWM = 200_000
DRAIN_SLICE_S = 0.1  # longest stretch of stream draining between control and heartbeat checks
# how long `close` waits for the run's last samples while the stream brings nothing new. A recorder
# that is merely behind (a loaded host) is still receiving: its wait restarts with every batch, and
# only a stream that went past the run's end, or fell silent, proves a missing tail lost
CLOSE_WAIT_S = 3.0
STATS_S = 0.5
ORPHAN_WAIT_S = 10.0  # after the main process died: longest wait for the driver's ramp to rest
REPAIR_RETRY_S = 5.0  # a repair that failed (e.g. the disk is still full) is tried again this often
# an unfinished file written to this recently may still have a writer (an orphaned recorder
# finalizes for up to ORPHAN_WAIT_S): repaired only once it has been quiet this long, unless the
# main process says its writer is dead
QUIET_BEFORE_REPAIR_S = 15.0
STARTUP_REPAIR_REASON = ("the recorder stopped before finalizing this file (its process was killed, or the "
                         "daemon with it); finalized when the recorder next started")


class StreamWatch:
    """Sequence-number bookkeeping over the whole stream."""

    def __init__(self):
        self.received = 0
        self.last_seq = 0
        self.lost = 0
        self.gaps = 0
        self.batches = 0

    def add(self, seq: np.ndarray) -> None:
        first = int(seq[0])
        if self.last_seq and first > self.last_seq + 1:
            self.lost += first - self.last_seq - 1
            self.gaps += 1
        if seq.shape[0] > 1:
            d = np.diff(seq.astype(np.int64))
            holes = d > 1
            if holes.any():
                self.lost += int(np.sum(d[holes] - 1))
                self.gaps += int(np.count_nonzero(holes))
        self.last_seq = int(seq[-1])
        self.received += int(seq.shape[0])
        self.batches += 1

    def to_dict(self) -> dict:
        return {"received": self.received, "last_seq": self.last_seq, "lost": self.lost, "gaps": self.gaps,
                "batches": self.batches}


class ActiveRun:
    def __init__(self, msg: dict, writer: RecordingWriter):
        self.run = int(msg["run"])
        self.run_id = msg["run_id"]
        self.writer = writer
        self.path = msg["path"]
        self.meta = getattr(writer, "meta", None) or msg.get("meta") or {}
        self.last_seq_seen = 0
        self.first_seq_seen = 0
        self.gaps: list[list[int]] = []  # [last seq before gap, missing]
        self.close_msg: dict | None = None
        self.close_deadline = 0.0
        self.driver_done = False  # the driver's run ended (its "done" event was on the stream)
        self.done_event: dict | None = None

    def add(self, seq: np.ndarray, robot_time, host, phase, values) -> None:
        if self.first_seq_seen == 0:
            self.first_seq_seen = int(seq[0])
        if self.last_seq_seen and int(seq[0]) > self.last_seq_seen + 1:
            self.gaps.append([self.last_seq_seen, int(seq[0]) - self.last_seq_seen - 1])
        d = np.diff(seq.astype(np.int64))
        for i in np.flatnonzero(d > 1):
            self.gaps.append([int(seq[i]), int(d[i] - 1)])
        self.last_seq_seen = int(seq[-1])
        self.writer.append(seq, robot_time, host, phase, values)


class Throughput:
    """Samples and bytes written per second over the last statistics interval."""

    def __init__(self):
        self.samples = 0
        self.bytes = 0
        self._last = (time.monotonic(), 0, 0)
        self.rate = {"samples_per_s": 0.0, "bytes_per_s": 0.0, "bytes_written": 0, "samples_written": 0}

    def add(self, samples: int, nbytes: int) -> None:
        self.samples += samples
        self.bytes += nbytes

    def update(self) -> dict:
        now = time.monotonic()
        t0, s0, b0 = self._last
        dt = max(now - t0, 1e-6)
        self.rate = {"samples_per_s": (self.samples - s0) / dt, "bytes_per_s": (self.bytes - b0) / dt,
                     "bytes_written": self.bytes, "samples_written": self.samples}
        self._last = (now, self.samples, self.bytes)
        return self.rate

    def totals(self) -> dict:
        """The samples and bytes written so far, without closing the rate's interval."""
        return {"bytes_written": self.bytes, "samples_written": self.samples}


class Recorder:
    def __init__(self, cfg, endpoints: dict):
        import zmq

        # first: the main process may die while this start-up runs (daemon/main_process.py)
        self.parent_pid = main_process_pid()
        self.zmq = zmq
        self.cfg = cfg
        self.ctx = zmq.Context()
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.RCVHWM, RCV_HWM)
        # the batched copy of the stream (daemon/rtloop.py RECORD_BATCH_MS), not the live one
        self.sub.setsockopt(zmq.SUBSCRIBE, P.TOPIC_RECORD)
        self.sub.setsockopt(zmq.SUBSCRIBE, P.TOPIC_EVENT)
        self.sub.connect(endpoints["state_ipc"])
        self.pipe = self.ctx.socket(zmq.PAIR)
        self.pipe.setsockopt(zmq.LINGER, 1000)
        self.pipe.connect(endpoints["recorder_pipe"])
        self.watch = StreamWatch()
        load_writer_library(cfg.compression)
        # the robot model for the ROS 2 channels' frame transforms ([recorder].ros2)
        self.ros2_model = None
        if cfg.ros2:
            from robodyn.robot.loader import load_model

            self.ros2_model = load_model(cfg.robot)
        self.active: ActiveRun | None = None
        self.running = True
        self.written_runs = 0
        self.throughput = Throughput()
        self.orphaned_since: float | None = None
        self.unfinished = UnfinishedFiles(QUIET_BEFORE_REPAIR_S, REPAIR_RETRY_S)
        self.writer_dead: set[str] = set(endpoints.get("repair_now", ()))  # files whose writer is gone
        self.repaired: list[dict] = []
        self.stop_reason = ""  # why the recorder stops with a run open (the summary's reason)

    # ----------------------------------------------------------------- unfinished files

    def repair_at_start(self) -> None:
        """Before the first run: every file a killed recorder (or daemon) left without footer
        becomes a complete MCAP file (daemon/recording/repair.py: repair_recording). Files whose writer
        the main process knows is dead are repaired now; the others once they have been quiet
        for QUIET_BEFORE_REPAIR_S (their writer may be an orphaned recorder still finalizing)."""
        self._private_recordings_dir()
        now = time.monotonic()
        for path in unfinished_recordings(self.cfg.recordings_dir):
            self.unfinished.add(path, STARTUP_REPAIR_REASON, now, writer_dead=str(path) in self.writer_dead)
        self._retry_repairs(now)

    def _private_recordings_dir(self) -> None:
        """The recordings' folder is this account's alone (0700; files 0600, daemon/private_files.py),
        also when an older version or a 0022 umask made it readable by others."""
        old = tighten_dir(self.cfg.recordings_dir)
        if old is not None:
            print(f"robodyn recorder: {self.cfg.recordings_dir} had mode {old:04o} (other accounts could read "
                  f"the recordings); now {old & 0o700:04o}", file=sys.stderr, flush=True)

    def _retry_repairs(self, now: float) -> None:
        if not self.unfinished:
            return
        for path, reason in self.unfinished.due(now):
            try:
                result = repair_recording(path, reason)
            except OSError:
                self.unfinished.failed(path, now)  # still no space: try again later
                continue
            except Exception as exc:  # not repairable: say so once, keep the file as it is
                print(f"robodyn recorder: cannot finalize {path}: {type(exc).__name__}: {exc}", file=sys.stderr)
            else:
                if result is not None:
                    self.repaired.append(result)
                    self._index_repaired(path)
            self.unfinished.done(path)

    # ----------------------------------------------------------------- control

    def _handle(self, msg: dict) -> None:
        kind = msg.get("type")
        if kind == "open":
            try:
                if self.active is not None:
                    raise RuntimeError(f"run {self.active.run_id} is still being recorded")
                writer = RecordingWriter(msg["path"], msg["meta"], int(msg["width"]), self.cfg.compression,
                                         self.cfg.block_ms, ros2_model=self.ros2_model)
                self.active = ActiveRun(msg, writer)
                self._reply({"type": "opened", "run": msg["run"], "path": msg["path"]})
            except Exception as exc:
                self._reply({"type": "open_failed", "run": msg.get("run"), "reason": f"{type(exc).__name__}: {exc}"})
        elif kind == "close":
            if self.active is None or self.active.run != int(msg["run"]):
                self._reply({"type": "close_failed", "run": msg.get("run"), "reason": "no such run being recorded"})
                return
            self.active.close_msg = msg
            self.active.close_deadline = time.monotonic() + CLOSE_WAIT_S
        elif kind == "shutdown":
            self.running = False

    def _index(self, path: str, row: dict) -> dict:
        """Write the listing's entry of a closed recording (recording/index.py). A failure to
        write it costs the listing nothing but a read by the worker at the next start."""
        try:
            write_index(path, row)
        except OSError as exc:
            print(f"robodyn recorder: cannot write the index entry of {path}: {exc}", file=sys.stderr)
        return row

    def _index_repaired(self, path) -> None:
        """The listing's entry of a repaired file, sent to the main process, which never reads it."""
        try:
            row = read_recording_info(path)
        except (OSError, ValueError) as exc:
            print(f"robodyn recorder: cannot index the repaired {path}: {exc}", file=sys.stderr)
            return
        self._reply({"type": "indexed", "row": self._index(str(path), row)})

    def _reply(self, msg: dict) -> None:
        self.pipe.send(P.packb(msg))

    def _maybe_finalize(self) -> None:
        run = self.active
        if run is None or run.close_msg is None:
            return
        last = int(run.close_msg["last_seq"])
        if run.last_seq_seen < last and self.watch.last_seq < last and time.monotonic() < run.close_deadline:
            return  # the tail is still in flight
        first = int(run.close_msg["first_seq"])
        expected = last - first + 1
        recorded = run.writer.samples
        head_missing = max(0, (run.first_seq_seen or last + 1) - first)
        tail_missing = max(0, last - run.last_seq_seen)
        gaps = list(run.gaps)
        if head_missing:
            gaps.insert(0, [first - 1, head_missing])
        if tail_missing and run.last_seq_seen:
            gaps.append([run.last_seq_seen, tail_missing])
        summary = dict(run.close_msg.get("summary", {}), recorded_samples=recorded, expected_samples=expected,
                       lost_samples=expected - recorded, gaps=gaps, first_seq=first, last_seq=last)
        if not self._write(lambda: run.writer.close(summary)):
            return  # write_failed was reported; the file ends at its last complete block
        row = self._index(run.path, index_row(run.meta, summary, run.path))
        # the totals ride with the close: the next run's disk estimate uses this file's measured
        # bytes per sample however soon it is submitted (not only after the next stats tick)
        self._reply({"type": "closed", "run": run.run, "path": run.path, "summary": summary, "index": row,
                     "written": self.throughput.totals()})
        self.active = None
        self.written_runs += 1

    # ----------------------------------------------------------------- loop

    def run(self) -> None:
        zmq = self.zmq
        poller = zmq.Poller()
        poller.register(self.sub, zmq.POLLIN)
        poller.register(self.pipe, zmq.POLLIN)
        start_up_done()  # the start-up watch ends before ready; the check below covers the moment after
        if self._orphaned_and_done(time.monotonic()):  # died while this process started: no run exists
            return
        self._reply({"type": "ready", "pid": os.getpid(), "repaired": [r["path"] for r in self.repaired]})
        next_stats = 0.0
        while self.running:
            events = dict(poller.poll(10))
            if self.sub in events:
                # drain what is queued, then look at the control pipe and the heartbeat again: bounded
                # in time, not count, so a recorder working through a backlog on a starved host still
                # reports within STATS_S (the main process kills a recorder silent for HANG_TIMEOUT_S)
                drain_until = time.monotonic() + DRAIN_SLICE_S
                while time.monotonic() < drain_until:
                    try:
                        topic, payload = self.sub.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    self._on_stream(topic, payload)
            if self.pipe in events:
                while self.pipe.poll(0):
                    self._handle(P.unpackb(self.pipe.recv()))
            now_ns = time.monotonic_ns()
            if self.active is not None and self.active.writer.block_due(now_ns):
                self._write(self.active.writer.flush_block)
            self._maybe_finalize()
            self._retry_repairs(time.monotonic())
            if time.monotonic() >= next_stats:
                next_stats = time.monotonic() + STATS_S
                self._reply({"type": "stats", "stream": self.watch.to_dict(),
                             "recording": None if self.active is None else
                             {"run": self.active.run, "path": self.active.path, "samples": self.active.writer.samples},
                             "buffered_samples": 0 if self.active is None else self.active.writer.buffered,
                             "throughput": self.throughput.update(), "written_runs": self.written_runs})
                if self._orphaned_and_done(time.monotonic()):
                    self.running = False
        if self.active is not None:
            run = self.active
            summary = {"status": "aborted", "reason": self.stop_reason or "recorder shut down before the run ended",
                       "recorded_samples": run.writer.samples, "gaps": list(run.gaps),
                       "first_seq": run.first_seq_seen, "last_seq": run.last_seq_seen}
            done = run.done_event or {}
            if done.get("last_seq"):  # the driver's own count of the run's samples
                first, last = int(done.get("first_seq", 1)), int(done["last_seq"])
                summary.update(first_seq=first, last_seq=last, expected_samples=last - first + 1,
                               lost_samples=last - first + 1 - run.writer.samples,
                               executed_samples=done.get("executed_samples"), tracking=done.get("tracking"))
            if self._write(lambda: run.writer.close(summary)):
                self._index(run.path, index_row(run.meta, summary, run.path))

    def _orphaned_and_done(self, now: float) -> bool:
        """The main process died: keep recording until the driver's ramp to rest has ended (its
        run's ``done`` event) or ORPHAN_WAIT_S passed, then finalize and leave; with no recording
        open (start-up too), leave now."""
        if not main_process_gone(self.parent_pid):
            return False
        if self.orphaned_since is None:
            self.orphaned_since = now
            self.stop_reason = (f"the daemon's main process (pid {self.parent_pid}) died during the run; the driver "
                                "ramped the robot to rest and the recorder finalized the file")
            say_leaving("recorder", self.parent_pid, "no recording open; exiting" if self.active is None else
                        f"finalizing {self.active.path} once the driver's ramp to rest has ended, then exiting")
        run = self.active
        return run is None or run.driver_done or now - self.orphaned_since > ORPHAN_WAIT_S

    def _write(self, operation) -> bool:
        """Run a write of the active recording. On an OS error (disk full, I/O error) the file is
        cut back to its last complete block, so it stays readable and frees the torn tail's space,
        the run is dropped here, and the main process is told (it stops the robot)."""
        run = self.active
        before = run.writer.bytes_written
        samples_before = run.writer.samples - run.writer.buffered
        try:
            operation()
        except OSError as exc:
            kept = run.writer.abandon()
            self.active = None
            reason = f"{exc.strerror or exc} ({type(exc).__name__})"
            self._reply({"type": "write_failed", "run": run.run, "path": run.path, "reason": reason,
                         "kept_bytes": kept})
            # finalize the cut file now if the few kilobytes fit, else as soon as space is back
            now = time.monotonic()
            self.unfinished.add(run.path, f"writing failed: {reason}; the file ends at its last complete block", now,
                                writer_dead=True)
            self._retry_repairs(now)
            return False
        self.throughput.add(run.writer.samples - run.writer.buffered - samples_before,
                            run.writer.bytes_written - before)
        return True

    def _on_stream(self, topic: bytes, payload: bytes) -> None:
        if topic == P.TOPIC_EVENT:
            if self.active is not None:
                event = P.unpackb(payload)
                if event.get("run") == self.active.run:
                    if event.get("event") == "done":
                        self.active.driver_done = True
                        self.active.done_event = event
                    self._write(lambda: self.active.writer.event(event))
            return
        batch = P.unpack_state_batch(payload)
        seq = batch["seq"]
        self.watch.add(seq)
        run = self.active
        if run is None:
            return
        if run.close_msg is not None:
            run.close_deadline = time.monotonic() + CLOSE_WAIT_S  # still receiving: not a lost tail
        mask = batch["run"] == run.run
        if mask.all():
            ok = self._write(lambda: run.add(seq, batch["robot_time"], batch["host_time_ns"], batch["phase"],
                                             batch["values"]))
        elif mask.any():
            ok = self._write(lambda: run.add(seq[mask], batch["robot_time"][mask], batch["host_time_ns"][mask],
                                             batch["phase"][mask], batch["values"][mask]))
        else:
            ok = True
        if ok and self.active.writer.block_due(time.monotonic_ns()):
            self._write(self.active.writer.flush_block)


def recorder_process_main(cfg_dict: dict, endpoints: dict) -> None:
    from .config import DaemonConfig

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    main_pid = main_process_pid()
    if main_process_gone(main_pid):  # died while this interpreter started: no run exists
        say_leaving("recorder", main_pid, "during start-up; exiting")
        return
    watch_start_up("recorder", main_pid)
    cfg = DaemonConfig.from_dict(cfg_dict)
    rec = Recorder(cfg, endpoints)
    try:
        # a repair killed half-way is finished by the next start (daemon/recording/repair.py)
        start_up_step("while repairing unfinished recordings")
        rec.repair_at_start()
        rec.run()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    finally:
        rec.ctx.destroy(linger=500)
