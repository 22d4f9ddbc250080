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
                    meta, summary = _robodyn_metadata(rec, meta, summary)
                elif isinstance(rec, Channel):
                    channels[rec.id] = rec.topic
                elif isinstance(rec, Message):
                    topic = channels.get(rec.channel_id)
                    if topic == STATE_TOPIC:
                        blocks.append(unpackb(rec.data, max_bytes=1 << 30))
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
