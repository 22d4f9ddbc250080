"""The writer of one run's recording: sample blocks written and flushed as they fill (a crash
loses at most the block being filled), events, the summary on close, and the cut back to the last
complete record after a failed write."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import numpy as np

from robodyn import __version__
from robodyn.private_files import make_private_dir, open_private
from robodyn.wire import packb

from .layout import EVENT_TOPIC, FORMAT, FORMAT_VERSION, STATE_SCHEMA, STATE_TOPIC


def load_writer_library(compression: str) -> None:
    """Import the MCAP writer and its compressor now. The recorder does this before it reports
    ready, so that opening a run's file imports nothing: on a loaded host the first open's import
    (mcap looks its version up in every installed package's metadata) kept the recorder silent
    for seconds."""
    _compression(compression)


def _compression(name: str):
    from mcap.writer import CompressionType

    return {"zstd": CompressionType.ZSTD, "lz4": CompressionType.LZ4, "none": CompressionType.NONE}[name]


class RecordingWriter:
    """Writes one run. Owns the file; the caller appends samples and closes with a summary."""

    def __init__(self, path: str | Path, meta: dict, width: int, compression: str = "zstd",
                 block_ms: float = 50.0, capacity: int = 8192, ros2_model=None):
        from mcap.writer import Writer

        self.ros2_model = ros2_model  # a RobotModel: also write the ROS 2 channels (ros2_channels.py)
        self.ros2 = None
        self.path = Path(path)
        make_private_dir(self.path.parent)
        self._file = open_private(self.path)  # 0600 whatever the umask; FileExistsError as "xb"
        try:
            self._start(Writer, meta, compression)
        except BaseException:
            # nothing recorded yet: a half-written header is no recording, leave no file behind
            try:
                self._file.close()
            except OSError:
                pass
            self.path.unlink(missing_ok=True)
            raise
        self.block_ns = int(block_ms * 1e6)
        self._seq = np.zeros(capacity, dtype=np.uint64)
        self._robot_time = np.zeros(capacity)
        self._host = np.zeros(capacity, dtype=np.int64)
        self._phase = np.zeros(capacity, dtype=np.uint8)
        self._values = np.zeros((capacity, width))
        self._n = 0
        self._block_started_ns = 0
        self._blocks = 0
        self.samples = 0
        self.closed = False

    def _start(self, Writer, meta: dict, compression: str) -> None:
        # every block is its own chunk, written and flushed at once: without ROS 2 channels a block
        # is one message (chunk_size=1 closes the chunk after it); with them, a block's messages
        # share one chunk, closed by _flushed() (Writer.flush)
        chunk_size = 1 if self.ros2_model is None else 1 << 40
        self._mcap = Writer(self._file, chunk_size=chunk_size, compression=_compression(compression))
        self._mcap.start(profile="robodyn", library=f"robodyn {__version__}")
        full_meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "software_version": __version__,
                     "host": socket.gethostname(),
                     "created_wall": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **meta}
        self._mcap.add_metadata("robodyn.recording", {k: json.dumps(v) for k, v in full_meta.items()})
        self.meta = full_meta  # for the index entry written on close (recording/index.py)
        schema = self._mcap.register_schema("robodyn.StateBlock", "jsonschema", json.dumps(STATE_SCHEMA).encode())
        self._state_ch = self._mcap.register_channel(STATE_TOPIC, "msgpack", schema)
        self._event_ch = self._mcap.register_channel(EVENT_TOPIC, "json", 0)
        if self.ros2_model is not None:
            from .ros2_channels import Ros2Channels

            m = self.ros2_model
            urdf = full_meta.get("model_urdf") or ""
            self._mcap.add_attachment(time.time_ns(), time.time_ns(), "robot.urdf", "application/xml", urdf.encode())
            self.ros2 = Ros2Channels(self._mcap, full_meta.get("robot") or {}, urdf, list(full_meta.get("columns") or []),
                                     list(m.joint_names), m.fixed, m.joint_types, m.tool)
        self._flushed()

    def _flushed(self) -> None:
        """Close the chunk, flush to the OS and remember where the file ends: every byte before is
        a complete record, which is where :meth:`abandon` cuts a file whose next write failed."""
        if self.ros2 is not None:
            self._mcap.flush()
        self._file.flush()
        self.bytes_written = self._file.tell()

    @property
    def buffered(self) -> int:
        """Samples appended but not yet written (the crash-loss exposure)."""
        return self._n

    def append(self, seq, robot_time, host_time_ns, phase, values) -> None:
        """Append consecutive samples (arrays); writes a block when the current one is old enough."""
        k = seq.shape[0]
        if self._n + k > self._seq.shape[0]:
            self.flush_block()
            if k > self._seq.shape[0]:
                self._grow(k)
        if self._n == 0:
            self._block_started_ns = time.monotonic_ns()
        sl = slice(self._n, self._n + k)
        self._seq[sl] = seq
        self._robot_time[sl] = robot_time
        self._host[sl] = host_time_ns
        self._phase[sl] = phase
        self._values[sl] = values
        self._n += k
        self.samples += k

    def _grow(self, k: int) -> None:
        cap = 1 << int(np.ceil(np.log2(k)))
        self._seq = np.zeros(cap, dtype=np.uint64)
        self._robot_time = np.zeros(cap)
        self._host = np.zeros(cap, dtype=np.int64)
        self._phase = np.zeros(cap, dtype=np.uint8)
        self._values = np.zeros((cap, self._values.shape[1]))

    def block_due(self, now_ns: int) -> bool:
        return self._n > 0 and now_ns - self._block_started_ns >= self.block_ns

    def flush_block(self) -> None:
        n = self._n
        if n == 0:
            return
        data = packb({"seq": self._seq[:n], "robot_time": self._robot_time[:n], "host_time_ns": self._host[:n],
                        "phase": self._phase[:n], "values": self._values[:n]})
        t = int(self._host[0])
        self._mcap.add_message(self._state_ch, log_time=t, data=data, publish_time=t, sequence=self._blocks)
        if self.ros2 is not None:
            self.ros2.write_static(t)
            self.ros2.write_samples(self._robot_time[:n], self._host[:n], self._values[:n])
        self._flushed()
        self._blocks += 1
        self._n = 0

    def event(self, event: dict) -> None:
        t = int(event.get("host_time_ns", time.monotonic_ns()))
        self._mcap.add_message(self._event_ch, log_time=t, data=json.dumps(event).encode(), publish_time=t,
                               sequence=0)
        self._flushed()

    def close(self, summary: dict) -> None:
        if self.closed:
            return
        self.flush_block()
        self._mcap.add_metadata("robodyn.summary", {k: json.dumps(v) for k, v in summary.items()})
        self._mcap.finish()
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self.closed = True

    def abandon(self) -> int:
        """After a failed write (disk full, I/O error): close the file and cut it back to the end
        of its last complete record, so the loader reads every block written before and the torn
        tail's space is freed. Returns the size kept."""
        kept = self.bytes_written
        try:
            self._file.close()  # flushing the torn tail may fail again; the descriptor closes anyway
        except OSError:
            pass
        try:
            os.truncate(self.path, kept)
        except OSError:
            pass
        self.closed = True
        return kept
