"""Recordings: crash-safe MCAP files, a recovering loader, CSV/NPZ export and CSV import.

File layout (documented in docs/recordings.md)::

    MCAP header             profile "robodyn"
    metadata "robodyn.recording"   self-description, every value a JSON string:
        format, format_version, software_version, run_id, robot (model summary), model_urdf,
        model_inertial, driver (description), rate_hz, columns, units, trajectory, move_to_start,
        mode, label, created_wall (label only), host
    channel "/robodyn/state"   message_encoding "msgpack", one message per block of samples:
        {seq: u8[N], robot_time: f8[N], host_time_ns: i8[N], phase: u1[N], values: f8[N, width]}
        (arrays in the protocol's explicit ndarray encoding)
    channel "/robodyn/events"  message_encoding "json": run phase changes, abort reasons
    metadata "robodyn.summary" written when the run is finalized
    MCAP summary + footer      only on a clean close

Crash safety: every block (at most ``block_ms`` of samples, <= 100 ms) is written as its own
chunk and flushed to the OS at once, so a SIGKILL of the recorder loses only the block being
filled. A file without footer is read by :func:`load_recording`, which stops at the first
incomplete record and reports ``truncated=True``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robodyn import __version__

from . import protocol as P

FORMAT = "robodyn.recording"
FORMAT_VERSION = 1
STATE_TOPIC = "/robodyn/state"
EVENT_TOPIC = "/robodyn/events"
STATE_SCHEMA = {
    "title": "robodyn.StateBlock",
    "description": "msgpack map; arrays are {'$nd':1,'dtype','shape','data'} (see docs/protocol.md)",
    "type": "object",
    "properties": {"seq": {"description": "uint64 sample sequence numbers (gaps = lost samples)"},
                   "robot_time": {"description": "float64 robot clock, s"},
                   "host_time_ns": {"description": "int64 host CLOCK_MONOTONIC at driver read, ns"},
                   "phase": {"description": "uint8 0 idle, 1 move_to_start, 2 execute, 3 settle, 4 stopping"},
                   "values": {"description": "float64 (N, width), columns in metadata 'columns'"}},
}


def _compression(name: str):
    from mcap.writer import CompressionType

    return {"zstd": CompressionType.ZSTD, "lz4": CompressionType.LZ4, "none": CompressionType.NONE}[name]


# --------------------------------------------------------------------------- writer


class RecordingWriter:
    """Writes one run. Owns the file; the caller appends samples and closes with a summary."""

    def __init__(self, path: str | Path, meta: dict, width: int, compression: str = "zstd",
                 block_ms: float = 50.0, capacity: int = 8192):
        from mcap.writer import Writer

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "xb")
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
        # chunk_size=1: every block closes its own chunk, written and flushed immediately
        self._mcap = Writer(self._file, chunk_size=1, compression=_compression(compression))
        self._mcap.start(profile="robodyn", library=f"robodyn {__version__}")
        full_meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "software_version": __version__,
                     "host": socket.gethostname(),
                     "created_wall": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **meta}
        self._mcap.add_metadata("robodyn.recording", {k: json.dumps(v) for k, v in full_meta.items()})
        schema = self._mcap.register_schema("robodyn.StateBlock", "jsonschema", json.dumps(STATE_SCHEMA).encode())
        self._state_ch = self._mcap.register_channel(STATE_TOPIC, "msgpack", schema)
        self._event_ch = self._mcap.register_channel(EVENT_TOPIC, "json", 0)
        self._flushed()

    def _flushed(self) -> None:
        """Flush to the OS and remember where the file ends: every byte before is a complete
        record, which is where :meth:`abandon` cuts a file whose next write failed."""
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
        data = P.packb({"seq": self._seq[:n], "robot_time": self._robot_time[:n], "host_time_ns": self._host[:n],
                        "phase": self._phase[:n], "values": self._values[:n]})
        t = int(self._host[0])
        self._mcap.add_message(self._state_ch, log_time=t, data=data, publish_time=t, sequence=self._blocks)
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


# --------------------------------------------------------------------------- loader


@dataclass
class Recording:
    """A loaded recording (or an imported CSV log). ``signals`` maps name -> (N, width) array."""

    path: str
    meta: dict
    seq: np.ndarray
    robot_time: np.ndarray
    host_time_ns: np.ndarray
    phase: np.ndarray
    signals: dict
    units: dict
    events: list = field(default_factory=list)
    summary: dict | None = None
    truncated: bool = False  # no footer: the writer did not close the file
    read_error: str = ""  # why reading stopped early, if it did

    @property
    def t(self) -> np.ndarray:
        """Robot time from the first sample, s."""
        return self.robot_time - self.robot_time[0] if self.robot_time.size else self.robot_time

    @property
    def samples(self) -> int:
        return int(self.seq.shape[0])

    def gaps(self) -> list[tuple[int, int]]:
        """(last sequence number before the gap, samples missing) for every hole in the sequence."""
        if self.seq.size < 2:
            return []
        d = np.diff(self.seq.astype(np.int64))
        idx = np.flatnonzero(d > 1)
        return [(int(self.seq[i]), int(d[i] - 1)) for i in idx]

    @property
    def lost(self) -> int:
        """Samples missing inside the recorded span, plus any the daemon knew were never recorded."""
        inner = sum(m for _, m in self.gaps())
        if self.summary and "expected_samples" in self.summary:
            return max(inner, int(self.summary["expected_samples"]) - self.samples)
        return inner

    def signal(self, name: str) -> np.ndarray:
        if name not in self.signals:
            raise KeyError(f"recording has no signal {name!r}; it has {list(self.signals)}")
        return self.signals[name]

    def columns(self) -> list[str]:
        cols = []
        for name, arr in self.signals.items():
            w = arr.shape[1]
            cols += [name] if w == 1 else [f"{name}{i + 1}" for i in range(w)]
        return cols

    def phase_mask(self, name: str) -> np.ndarray:
        code = {v: k for k, v in P.PHASE_NAMES.items()}[name]
        return self.phase == code


def _signal_layout(meta: dict) -> list[tuple[str, int, str]]:
    driver = meta.get("driver") or {}
    return [(s["name"], int(s["width"]), s.get("unit", "")) for s in driver.get("signals", [])]


def load_recording(path: str | Path) -> Recording:
    """Read a recording, also one cut short by a crash (reads every complete chunk)."""
    from mcap.records import Channel, Footer, Message, Metadata
    from mcap.stream_reader import StreamReader

    path = Path(path)
    meta: dict = {}
    summary = None
    channels: dict[int, str] = {}
    blocks: list[dict] = []
    events: list[dict] = []
    footer = False
    error = ""
    with open(path, "rb") as fh:
        reader = StreamReader(fh, validate_crcs=True, record_size_limit=1 << 30)
        try:
            for rec in reader.records:
                if isinstance(rec, Metadata):
                    decoded = {k: json.loads(v) for k, v in rec.metadata.items()}
                    if rec.name == "robodyn.recording":
                        meta = decoded
                    elif rec.name == "robodyn.summary":
                        summary = decoded
                elif isinstance(rec, Channel):
                    channels[rec.id] = rec.topic
                elif isinstance(rec, Message):
                    topic = channels.get(rec.channel_id)
                    if topic == STATE_TOPIC:
                        blocks.append(P.unpackb(rec.data, max_bytes=1 << 30))
                    elif topic == EVENT_TOPIC:
                        events.append(json.loads(rec.data))
                elif isinstance(rec, Footer):
                    footer = True
        except Exception as exc:  # a torn last record after a crash: keep what was complete
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: not a robodyn recording (no '{FORMAT}' metadata{'; ' + error if error else ''})")
    layout = _signal_layout(meta)
    width = sum(w for _, w, _ in layout)
    if blocks:
        seq = np.concatenate([b["seq"] for b in blocks]).astype(np.uint64)
        robot_time = np.concatenate([b["robot_time"] for b in blocks])
        host = np.concatenate([b["host_time_ns"] for b in blocks])
        phase = np.concatenate([b["phase"] for b in blocks])
        values = np.concatenate([b["values"] for b in blocks])
        order = np.argsort(seq, kind="stable")
        seq, robot_time, host, phase, values = (a[order] for a in (seq, robot_time, host, phase, values))
    else:
        seq = np.zeros(0, np.uint64)
        robot_time = np.zeros(0)
        host = np.zeros(0, np.int64)
        phase = np.zeros(0, np.uint8)
        values = np.zeros((0, width))
    signals, units, start = {}, {}, 0
    for name, w, unit in layout:
        signals[name] = values[:, start:start + w]
        units[name] = unit
        start += w
    return Recording(str(path), meta, seq, robot_time, host, phase, signals, units, events, summary,
                     truncated=not footer, read_error=error if not footer else "")


def read_recording_info(path: str | Path) -> dict:
    """`recording_summary_line` without decoding samples when the file was finalized (its summary
    has the counts); an unfinished file is fully read to count what it holds."""
    from mcap.records import Metadata
    from mcap.stream_reader import StreamReader

    meta, summary = {}, None
    try:
        with open(path, "rb") as fh:
            for rec in StreamReader(fh, emit_chunks=True, record_size_limit=1 << 30).records:
                if isinstance(rec, Metadata):
                    decoded = {k: json.loads(v) for k, v in rec.metadata.items()}
                    if rec.name == "robodyn.recording":
                        meta = decoded
                    elif rec.name == "robodyn.summary":
                        summary = decoded
    except Exception:  # torn tail: fall back to the recovering loader below
        summary = None
    if meta.get("format") != FORMAT or summary is None or "recorded_samples" not in summary:
        return recording_summary_line(load_recording(path))
    return {"id": meta.get("run_id", Path(path).stem), "path": str(path), "robot": (meta.get("robot") or {}).get("name"),
            "samples": int(summary["recorded_samples"]), "lost": int(summary.get("lost_samples", 0)),
            "duration_s": (int(summary["recorded_samples"]) - 1) / float(meta.get("rate_hz", 1.0))
            if summary["recorded_samples"] else 0.0,
            "status": summary.get("status", "unknown"), "created": meta.get("created_wall"),
            "label": meta.get("label", "")}


def recording_summary_line(rec: Recording) -> dict:
    """What `robodyn recordings` lists about one file."""
    s = rec.summary or {}
    return {"id": rec.meta.get("run_id", Path(rec.path).stem), "path": rec.path,
            "robot": (rec.meta.get("robot") or {}).get("name"), "samples": rec.samples, "lost": rec.lost,
            "duration_s": float(rec.robot_time[-1] - rec.robot_time[0]) if rec.samples else 0.0,
            "status": s.get("status", "incomplete (recovered)" if rec.truncated else "unknown"),
            "created": rec.meta.get("created_wall"), "label": rec.meta.get("label", "")}


# --------------------------------------------------------------------------- export / import


def export_csv(rec: Recording, path: str | Path) -> Path:
    """CSV with header ``t,seq,phase,<columns>``; t is robot time from the first sample, SI units."""
    path = Path(path)
    cols = rec.columns()
    data = np.column_stack([rec.t] + [rec.signals[n] for n in rec.signals]) if rec.samples else np.zeros((0, 1 + len(cols)))
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t", "seq", "phase"] + cols)
        for i in range(rec.samples):
            row = data[i]
            w.writerow([repr(float(row[0])), int(rec.seq[i]), int(rec.phase[i])] + [repr(float(v)) for v in row[1:]])
    return path


def export_npz(rec: Recording, path: str | Path) -> Path:
    """NPZ with arrays t, seq, robot_time, host_time_ns, phase, one (N, width) array per signal,
    ``units_json`` and ``meta_json`` (the recording's self-description)."""
    path = Path(path)
    arrays = {"t": rec.t, "seq": rec.seq, "robot_time": rec.robot_time, "host_time_ns": rec.host_time_ns,
              "phase": rec.phase}
    for name, arr in rec.signals.items():
        arrays[name] = np.ascontiguousarray(arr)
    arrays["units_json"] = np.array(json.dumps(rec.units))
    arrays["meta_json"] = np.array(json.dumps(rec.meta))
    np.savez_compressed(path, **arrays)
    return path


CSV_UNITS = {"q": "rad", "qd": "rad/s", "tau": "N.m"}


def import_csv(path: str | Path) -> Recording:
    """Read an external log. Column convention (header row required, SI units, '#' lines skipped):

    ``t`` (s, strictly increasing), ``q1..qn`` (rad), optional ``qd1..qdn`` (rad/s), ``tau1..taun``
    (N.m). n is the number of q columns; qd is all-or-nothing; other columns are ignored.
    """
    path = Path(path)
    text = "\n".join(line for line in path.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#"))
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise ValueError(f"{path}: empty CSV file") from None
    index = {h: i for i, h in enumerate(header)}
    if "t" not in index:
        raise ValueError(f"{path}: no 't' column; expected columns t, q1..qn, [qd1..qdn], tau1..taun")
    n = 0
    while f"q{n + 1}" in index:
        n += 1
    if n == 0:
        raise ValueError(f"{path}: no q1 column; expected columns t, q1..qn, [qd1..qdn], tau1..taun")
    for name in ("tau",):
        missing = [f"{name}{i + 1}" for i in range(n) if f"{name}{i + 1}" not in index]
        if missing:
            raise ValueError(f"{path}: {n} joints (q1..q{n}) but column(s) {missing} missing")
    has_qd = [f"qd{i + 1}" in index for i in range(n)]
    if any(has_qd) and not all(has_qd):
        raise ValueError(f"{path}: qd columns must be all of qd1..qd{n} or none")
    rows = []
    for lineno, row in enumerate(reader, start=2):
        if len(row) != len(header):
            raise ValueError(f"{path}: row {lineno} has {len(row)} fields, header has {len(header)}")
        try:
            rows.append([float(v) for v in row])
        except ValueError:
            raise ValueError(f"{path}: row {lineno} has a non-numeric value") from None
    data = np.array(rows, dtype=float).reshape(-1, len(header))
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{path}: NaN or infinite values")
    t = data[:, index["t"]]
    if np.any(np.diff(t) <= 0):
        k = int(np.argmax(np.diff(t) <= 0)) + 2
        raise ValueError(f"{path}: t must strictly increase (row {k + 1})")
    signals = {"q": data[:, [index[f"q{i + 1}"] for i in range(n)]]}
    if all(has_qd):
        signals["qd"] = data[:, [index[f"qd{i + 1}"] for i in range(n)]]
    signals["tau"] = data[:, [index[f"tau{i + 1}"] for i in range(n)]]
    units = {k: CSV_UNITS[k] for k in signals}
    ignored = [h for h in header if h != "t" and not any(h == f"{s}{i + 1}" for s in signals for i in range(n))]
    meta = {"format": "robodyn.csv-import", "source": str(path), "ignored_columns": ignored,
            "driver": {"signals": [{"name": k, "width": n, "unit": units[k]} for k in signals]}}
    N = t.shape[0]
    return Recording(str(path), meta, np.arange(N, dtype=np.uint64), t, np.zeros(N, np.int64),
                     np.full(N, P.PHASE_EXECUTE, np.uint8), signals, units)
