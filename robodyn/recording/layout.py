"""The layout of a recording file (the package docstring and docs/recordings.md describe it): its
self-description's format name and version, the topics, the schema of the sample blocks, and the
digest of its closing summary that the recording index keeps (index.py), and a recording's id."""

from pathlib import Path

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


def summary_digest(summary: dict | None) -> dict | None:
    """The part of a closing summary a listing carries: bounded in size whatever the recording
    (the gaps as a count, not the list, which grows with every lost packet)."""
    if not summary:
        return None
    loop, tracking, gaps = summary.get("loop") or {}, summary.get("tracking") or {}, summary.get("gaps")
    digest = {k: summary.get(k) for k in ("status", "reason", "recorded_samples", "expected_samples",
                                          "lost_samples", "executed_samples", "trajectory_samples")}
    digest["gaps"] = len(gaps) if isinstance(gaps, list) else gaps
    digest["loop"] = {k: loop.get(k) for k in ("p50_ms", "p99_ms", "max_ms")} if isinstance(loop, dict) else {}
    digest["tracking"] = ({k: tracking.get(k) for k in ("rms_overall_rad", "max_overall_rad")}
                          if isinstance(tracking, dict) else {})
    if "error" in summary:
        digest["error"] = str(summary["error"])[:500]
    if isinstance(digest["reason"], str):
        digest["reason"] = digest["reason"][:500]
    return digest


def recording_id(path: str | Path) -> str:
    """A recording's id: its file's name without ``.mcap``, what `recording_info` opens. One id per
    file: a copy of a recording under another name is another recording, whatever run id it holds
    (listed as the ``run_id`` of its row)."""
    return Path(path).stem
