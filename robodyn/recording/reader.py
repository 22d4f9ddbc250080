"""The recovering loader: a recording read into arrays (also one cut short by a crash: every
complete chunk), and the one-line summaries `robodyn recordings` lists."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robodyn.wire import unpackb

from . import samples as P
from .layout import EVENT_TOPIC, FORMAT, STATE_TOPIC, recording_id, summary_digest


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


def _robodyn_metadata(rec, meta: dict, summary: dict | None) -> tuple[dict, dict | None]:
    """(meta, summary) with a robodyn metadata record read into its place (others are left)."""
    decoded = {k: json.loads(v) for k, v in rec.metadata.items()}
    if rec.name == "robodyn.recording":
        return decoded, summary
    if rec.name == "robodyn.summary":
        return meta, decoded
    return meta, summary


class _SampleColumns:
    """The samples of a recording as they are read, block by block, straight into one array per
    signal kept (no list of whole-width blocks to concatenate: reading a 1 h Franka recording that
    way held the file's samples three times over). Grows by half when a file holds more than
    expected; ``arrays()`` trims the spare capacity."""

    def __init__(self, layout: list[tuple[str, int, str]], keep: set | None, capacity: int):
        self.n = 0
        self.offsets, start = {}, 0
        for name, w, _ in layout:
            if keep is None or name in keep:
                self.offsets[name] = (start, w)
            start += w
        cap = max(int(capacity), 1024)
        self.seq = np.zeros(cap, np.uint64)
        self.robot_time = np.zeros(cap)
        self.host = np.zeros(cap, np.int64)
        self.phase = np.zeros(cap, np.uint8)
        self.values = {name: np.zeros((cap, w)) for name, (_, w) in self.offsets.items()}

    def _grow(self, need: int) -> None:
        cap = max(need, self.seq.shape[0] + self.seq.shape[0] // 2)

        def grown(a):
            out = np.zeros((cap,) + a.shape[1:], a.dtype)
            out[:self.n] = a[:self.n]
            return out

        self.seq, self.robot_time, self.host, self.phase = map(grown, (self.seq, self.robot_time, self.host,
                                                                        self.phase))
        self.values = {k: grown(v) for k, v in self.values.items()}

    def add(self, block: dict) -> None:
        k = int(np.shape(block["seq"])[0])
        if self.n + k > self.seq.shape[0]:
            self._grow(self.n + k)
        sl = slice(self.n, self.n + k)
        self.seq[sl] = block["seq"]
        self.robot_time[sl] = block["robot_time"]
        self.host[sl] = block["host_time_ns"]
        self.phase[sl] = block["phase"]
        values = block["values"]
        for name, (start, w) in self.offsets.items():
            self.values[name][sl] = values[:, start:start + w]
        self.n += k

    def arrays(self):
        """(seq, robot_time, host_time_ns, phase, signals) of the samples read, in sequence order."""
        n = self.n

        def trimmed(a):  # a view when little capacity is spare, else a copy of the samples alone
            return a[:n] if n >= 0.9 * a.shape[0] else a[:n].copy()

        seq, robot_time, host, phase = map(trimmed, (self.seq, self.robot_time, self.host, self.phase))
        signals = {k: trimmed(v) for k, v in self.values.items()}
        if n > 1 and not bool(np.all(seq[1:] > seq[:-1])):  # blocks out of order: put the samples in order
            order = np.argsort(seq, kind="stable")
            seq, robot_time, host, phase = (a[order] for a in (seq, robot_time, host, phase))
            signals = {k: v[order] for k, v in signals.items()}
        return seq, robot_time, host, phase, signals


def _expected_samples(fh) -> int:
    """The sample count a finalized file's summary metadata states, found through the MCAP summary
    offsets (the footer, one summary-offset group, one metadata record: a few hundred bytes read,
    where reading the whole summary section parses one chunk index per block), or 0 for a file cut
    short or written without a summary."""
    import io
    import os

    from mcap.records import Footer, Metadata, MetadataIndex, SummaryOffset
    from mcap.opcode import Opcode
    from mcap.stream_reader import StreamReader

    def records_at(offset: int, length: int):
        fh.seek(offset)
        return StreamReader(io.BytesIO(fh.read(length)), skip_magic=True, record_size_limit=1 << 20).records

    try:
        size = fh.seek(0, os.SEEK_END)
        footer_bytes = 1 + 8 + 20  # opcode, length, summary_start, summary_offset_start, crc
        footer = next(records_at(size - 8 - footer_bytes, footer_bytes))
        if not isinstance(footer, Footer) or not footer.summary_offset_start:
            return 0
        offsets = records_at(footer.summary_offset_start, size - 8 - footer_bytes - footer.summary_offset_start)
        group = next((r for r in offsets if isinstance(r, SummaryOffset)
                      and r.group_opcode == Opcode.METADATA_INDEX), None)
        if group is None:
            return 0
        index = next((r for r in records_at(group.group_start, group.group_length)
                      if isinstance(r, MetadataIndex) and r.name == "robodyn.summary"), None)
        if index is None:
            return 0
        record = next(records_at(index.offset, index.length))
        if isinstance(record, Metadata):
            return max(0, int(json.loads(record.metadata.get("recorded_samples", "0"))))
    except Exception:  # no usable summary (a crash, another writer): grow as the samples come
        return 0
    finally:
        fh.seek(0)
    return 0


def load_recording(path: str | Path, signals: tuple[str, ...] | None = None) -> Recording:
    """Read a recording, also one cut short by a crash (reads every complete chunk). ``signals``
    names the signals to keep (default: all); the others are skipped as the blocks are read, so
    identification, which needs q, qd and tau, holds only those of a many-column driver."""
    from mcap.records import Channel, Footer, Message, Metadata
    from mcap.stream_reader import StreamReader

    path = Path(path)
    keep = None if signals is None else set(signals)
    meta: dict = {}
    summary = None
    channels: dict[int, str] = {}
    columns: _SampleColumns | None = None
    events: list[dict] = []
    footer = False
    error = ""
    with open(path, "rb") as fh:
        expected = _expected_samples(fh)
        reader = StreamReader(fh, validate_crcs=True, record_size_limit=1 << 30)
        try:
            for rec in reader.records:
                if isinstance(rec, Metadata):
                    meta, summary = _robodyn_metadata(rec, meta, summary)
                elif isinstance(rec, Channel):
                    channels[rec.id] = rec.topic
                elif isinstance(rec, Message):
                    topic = channels.get(rec.channel_id)
                    if topic == STATE_TOPIC:
                        if columns is None:  # the metadata record comes first (writer.py)
                            columns = _SampleColumns(_signal_layout(meta), keep, expected)
                        columns.add(unpackb(rec.data, max_bytes=1 << 30))
                    elif topic == EVENT_TOPIC:
                        events.append(json.loads(rec.data))
                elif isinstance(rec, Footer):
                    footer = True
        except Exception as exc:  # a torn last record after a crash: keep what was complete
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: not a robodyn recording (no '{FORMAT}' metadata{'; ' + error if error else ''})")
    layout = _signal_layout(meta)
    if columns is None:
        columns = _SampleColumns(layout, keep, 0)
    seq, robot_time, host, phase, arrays = columns.arrays()
    units = {name: unit for name, _, unit in layout if name in arrays}
    return Recording(str(path), meta, seq, robot_time, host, phase, arrays, units, events, summary,
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
                    meta, summary = _robodyn_metadata(rec, meta, summary)
    except Exception:  # torn tail: fall back to the recovering loader below
        summary = None
    if meta.get("format") != FORMAT or summary is None or "recorded_samples" not in summary:
        return recording_summary_line(load_recording(path))
    return {"id": recording_id(path), "run_id": meta.get("run_id", recording_id(path)), "path": str(path),
            "robot": (meta.get("robot") or {}).get("name"),
            "samples": int(summary["recorded_samples"]), "lost": int(summary.get("lost_samples", 0)),
            "duration_s": (int(summary["recorded_samples"]) - 1) / float(meta.get("rate_hz", 1.0))
            if summary["recorded_samples"] else 0.0,
            "status": summary.get("status", "unknown"), "created": meta.get("created_wall"),
            "label": meta.get("label", ""), "summary": summary_digest(summary)}


def recording_summary_line(rec: Recording) -> dict:
    """What `robodyn recordings` lists about one file: ``id`` its file's name (one id per file),
    ``run_id`` the run it says it holds (a copy under another name holds another's)."""
    s = rec.summary or {}
    return {"id": recording_id(rec.path), "run_id": rec.meta.get("run_id", recording_id(rec.path)), "path": rec.path,
            "robot": (rec.meta.get("robot") or {}).get("name"), "samples": rec.samples, "lost": rec.lost,
            "duration_s": float(rec.robot_time[-1] - rec.robot_time[0]) if rec.samples else 0.0,
            "status": s.get("status", "incomplete (recovered)" if rec.truncated else "unknown"),
            "created": rec.meta.get("created_wall"), "label": rec.meta.get("label", ""),
            "summary": summary_digest(rec.summary)}
