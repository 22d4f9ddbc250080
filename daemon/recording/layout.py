"""The layout of a recording file (the package docstring and docs/recordings.md describe it): its
self-description's format name and version, the topics and the schema of the sample blocks."""

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
