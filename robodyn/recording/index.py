"""The recording index: one small JSON file beside each recording, ``<run_id>.index.json``, holding
the line `robodyn recordings` lists (id, robot, samples, lost, duration, status, created, label)
and a digest of the recording's closing summary (counts, loop and tracking figures: what the status
page shows of a finished recording).

Why: listing recordings must cost the daemon's main process nothing that grows with the files'
sizes. The recorder writes the entry when it closes a recording, and when it repairs one a crash
left unfinished (daemon/recorder.py); the main process loads the entries at start and keeps them
in memory (:class:`RecordingIndex`), so a listing is a slice of a list. A recording without an
entry (made by an older version, or copied in by hand) is indexed once, at start, by the daemon's
heavy-read worker process, never on a request.

The digest is in the entry so that no view ever decodes a recording to show it: the status page
once asked for `recording_info` of each older recording, which decodes every sample (about 20 s
for an hour at 1 kHz) while its poll waited. Entries of version 1 have no digest: they are
rebuilt once by the worker at start, like a missing entry (reading only a finalized file's
footer metadata).

Every entry is written atomically (a temporary file in the same directory, fsync, rename): a
crash leaves the old entry or the new one, never half of one. Entries are 0600, as the recordings
(robodyn/private_files.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from robodyn.private_files import write_private_atomic
from .layout import recording_id, summary_digest

INDEX_SUFFIX = ".index.json"
INDEX_VERSION = 2  # 2: the summary digest
MAX_INDEX_BYTES = 64 * 1024  # an entry is a few hundred bytes; anything larger is not ours


def index_path(recording: str | Path) -> Path:
    path = Path(recording)
    return path.with_name(path.stem + INDEX_SUFFIX)


def index_row(meta: dict, summary: dict | None, path: str | Path) -> dict:
    """The listed line of a finalized recording, from its self-description and closing summary.
    Its ``id`` is the file's name (:func:`recording_id`); ``run_id`` the run the file says it holds."""
    summary = summary or {}
    samples = int(summary.get("recorded_samples") or 0)
    rate = float(meta.get("rate_hz") or 1.0)
    return {"id": recording_id(path), "run_id": meta.get("run_id", recording_id(path)), "path": str(path),
            "robot": (meta.get("robot") or {}).get("name"), "samples": samples,
            "lost": int(summary.get("lost_samples") or 0),
            "duration_s": (samples - 1) / rate if samples else 0.0,
            "status": summary.get("status", "unknown"), "created": meta.get("created_wall"),
            "label": meta.get("label", ""), "summary": summary_digest(summary)}


def write_index(recording: str | Path, row: dict) -> Path:
    """Write the entry of ``recording`` atomically; returns its path."""
    target = index_path(recording)
    write_private_atomic(target, json.dumps({"index_version": INDEX_VERSION, **row}).encode())
    return target


def read_index(recording: str | Path) -> dict | None:
    """The entry of ``recording``, or None when it has none (or one this version cannot read)."""
    target = index_path(recording)
    try:
        if target.stat().st_size > MAX_INDEX_BYTES:
            return None
        doc = json.loads(target.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.pop("index_version", None) != INDEX_VERSION or "id" not in doc:
        return None
    doc["path"] = str(recording)  # the data dir may have moved since the entry was written
    # an entry copied along with its recording names the original: the file's own name is its id
    doc["run_id"] = doc.get("run_id", doc["id"])
    doc["id"] = recording_id(recording)
    return doc


def build_index(recording: str | Path) -> dict:
    """Read ``recording`` and return its entry, writing it only when the file is complete (an
    unfinished file is the recorder's to repair, and the repair writes the entry). This reads the
    file: it runs in the heavy-read worker, never in the daemon's main process."""
    from .reader import read_recording_info
    from .repair import recording_is_complete

    try:
        row = read_recording_info(recording)
    except (ValueError, OSError) as exc:
        return {"id": recording_id(recording), "path": str(recording), "status": f"unreadable: {exc}"}
    if recording_is_complete(recording):
        write_index(recording, row)
    return row


def _key(row: dict) -> str:
    """Entries are keyed by file name (what `recording_info` opens), not by the id inside the file."""
    return recording_id(row["path"]) if row.get("path") else row["id"]


class RecordingIndex:
    """The entries of every recording in a directory, in memory, ordered by id (ids begin with
    their start time, so this is also the order they were made in)."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.rows: dict[str, dict] = {}
        self._order: list[str] | None = []
        self.missing: list[Path] = []  # recordings without an entry at start: to build once
        self.changes = 0  # counts every change: a listing cached before it is out of date

    def load(self) -> None:
        """Read every entry (small files; one directory listing). Recordings without one are
        listed as 'indexing' and left in :attr:`missing` for the worker."""
        self.rows.clear()
        self.missing = []
        for path in sorted(self.directory.glob("*.mcap")):
            row = read_index(path)
            if row is None:
                row = {"id": path.stem, "path": str(path), "status": "indexing"}
                self.missing.append(path)
            self.rows[_key(row)] = row
        self._order = None
        self.changes += 1

    def put(self, row: dict, only_if_indexing: bool = False) -> None:
        """Add or replace an entry. ``only_if_indexing``: a row built by the worker at start
        never replaces one the recorder sent meanwhile (the recorder's is newer)."""
        key = _key(row)
        old = self.rows.get(key)
        if only_if_indexing and old is not None and old.get("status") != "indexing":
            return
        if old is None:
            self._order = None
        self.rows[key] = row
        self.changes += 1

    def remove(self, rid: str) -> None:
        """``rid``: the file's name without ``.mcap`` (a run's id, in the daemon's own files)."""
        if self.rows.pop(rid, None) is not None:
            self._order = None
            self.changes += 1

    def get(self, rid: str) -> dict | None:
        return self.rows.get(rid)

    def __len__(self) -> int:
        return len(self.rows)

    def page(self, offset: int, limit: int) -> list[dict]:
        if self._order is None:
            self._order = sorted(self.rows)
        return [self.rows[rid] for rid in self._order[offset:offset + limit]]
