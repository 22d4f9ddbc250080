"""What every sample carries, on the daemon's state stream and in a recording: the phase codes,
the stream's topics and its batches of samples (docs/protocol.md, "State stream").

State stream (ZeroMQ PUB, multipart ``[topic, payload]``): topic ``b"state"`` carries
:func:`pack_state_batch` messages, topic ``b"event"`` carries run events (plain maps).
"""

from __future__ import annotations

import numpy as np

from robodyn.wire import E_MALFORMED, E_VERSION, PROTOCOL_VERSION, ProtocolError, packb, unpackb

TOPIC_STATE = b"state"
TOPIC_EVENT = b"event"
# the same samples in larger batches, for the recorder only (internal: the publisher process never
# forwards it; daemon/rtloop.py RECORD_BATCH_MS)
TOPIC_RECORD = b"record"

# phase codes carried by every sample
PHASE_IDLE, PHASE_MOVE, PHASE_EXECUTE, PHASE_SETTLE, PHASE_STOPPING = 0, 1, 2, 3, 4
PHASE_NAMES = {PHASE_IDLE: "idle", PHASE_MOVE: "move_to_start", PHASE_EXECUTE: "execute",
               PHASE_SETTLE: "settle", PHASE_STOPPING: "stopping"}


def pack_state_batch(robot: str, columns_id: int, seq: np.ndarray, robot_time: np.ndarray,
                     host_time_ns: np.ndarray, phase: np.ndarray, run: np.ndarray,
                     values: np.ndarray) -> bytes:
    """One batch of consecutive samples (arrays of the same length N; values is (N, width))."""
    return packb({"v": PROTOCOL_VERSION, "robot": robot, "layout": columns_id, "n": int(seq.shape[0]),
                  "seq": seq, "robot_time": robot_time, "host_time_ns": host_time_ns,
                  "phase": phase, "run": run, "values": values})


def unpack_state_batch(payload: bytes) -> dict:
    msg = unpackb(payload, max_bytes=1 << 30)
    if not isinstance(msg, dict) or msg.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(E_VERSION, "state batch of an unsupported protocol version")
    n = msg["n"]
    for key in ("seq", "robot_time", "host_time_ns", "phase", "run"):
        if msg[key].shape != (n,):
            raise ProtocolError(E_MALFORMED, f"state batch: {key} has shape {msg[key].shape}, expected ({n},)")
    if msg["values"].ndim != 2 or msg["values"].shape[0] != n:
        raise ProtocolError(E_MALFORMED, "state batch: values must be (n, width)")
    return msg
