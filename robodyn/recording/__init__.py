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

The package: the file layout (:mod:`.layout`), the writer the recorder uses (:mod:`.writer`),
the repair of files a crash left unfinished (:mod:`.repair`), the index of small entries the
daemon lists recordings from (:mod:`.index`), the recovering loader
(:mod:`.reader`) and CSV/NPZ export and CSV import (:mod:`.exchange`). The names below are the
package's public interface.
"""

from .exchange import CSV_UNITS, export_csv, export_npz, import_csv
from .index import RecordingIndex, build_index, index_path, index_row, read_index, write_index
from .layout import EVENT_TOPIC, FORMAT, FORMAT_VERSION, STATE_SCHEMA, STATE_TOPIC
from .reader import Recording, load_recording, read_recording_info, recording_summary_line
from .repair import (UnfinishedFiles, recording_is_complete, repair_recording, repair_unfinished,
                     unfinished_recordings)
from .writer import RecordingWriter

__all__ = ["CSV_UNITS", "EVENT_TOPIC", "FORMAT", "FORMAT_VERSION", "Recording", "RecordingWriter", "STATE_SCHEMA",
           "STATE_TOPIC", "RecordingIndex", "UnfinishedFiles", "build_index", "export_csv", "index_path", "index_row", "read_index", "write_index", "export_npz", "import_csv", "load_recording",
           "read_recording_info", "recording_is_complete", "recording_summary_line", "repair_recording",
           "repair_unfinished", "unfinished_recordings"]
