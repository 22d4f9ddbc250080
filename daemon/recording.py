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
import struct
import time
import zlib
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
                 block_ms: float = 50.0, capacity: int = 8192, ros2_model=None):
        from mcap.writer import Writer

        self.ros2_model = ros2_model  # a RobotModel: also write the ROS 2 channels (ros2_channels.py)
        self.ros2 = None
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
        data = P.packb({"seq": self._seq[:n], "robot_time": self._robot_time[:n], "host_time_ns": self._host[:n],
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


# --------------------------------------------------------------------------- repair of unfinished files

MCAP_MAGIC = b"\x89MCAP0\r\n"
REPAIR_METADATA = "robodyn.repair"
TORN_TAIL_ATTACHMENT = "robodyn.torn_tail"


def recording_is_complete(path: str | Path) -> bool:
    """True if the official reader's default path works: magic, footer and summary at the end."""
    from mcap.reader import make_reader

    try:
        with open(path, "rb") as fh:
            if fh.read(8) != MCAP_MAGIC:
                return False
            fh.seek(0)
            return make_reader(fh).get_summary() is not None
    except Exception:
        return False


@dataclass
class _Scan:
    """What survived in an unfinished file: every complete record up to ``good_end``."""

    good_end: int = 0
    size: int = 0
    header: bool = False
    schemas: dict = field(default_factory=dict)
    channels: dict = field(default_factory=dict)
    chunk_indexes: list = field(default_factory=list)
    metadata_indexes: list = field(default_factory=list)
    attachment_indexes: list = field(default_factory=list)
    channel_counts: dict = field(default_factory=dict)
    message_start: int | None = None
    message_end: int = 0
    messages: int = 0
    records: int = 0
    has_summary_meta: bool = False
    state_seq: list = field(default_factory=list)
    state_channel: int | None = None
    pending_indexes: bytes = b""  # message indexes regenerated for the last chunk
    stop_reason: str = ""


def _chunk_records(chunk) -> tuple[list, dict]:
    """(records, message index entries per channel: [(log_time, offset in the chunk)]) of a
    chunk, CRC-checked; raises on a chunk that does not decompress or check."""
    from mcap.records import Channel, Message, Schema
    from mcap.data_stream import ReadDataStream
    from mcap.stream_reader import get_chunk_data_stream

    stream, length = get_chunk_data_stream(chunk, validate_crc=True)
    data = stream.read(length) if length else b""
    if chunk.uncompressed_crc and zlib.crc32(data) != chunk.uncompressed_crc:
        raise ValueError("chunk CRC mismatch")
    records, index, pos = [], {}, 0
    while pos < len(data):
        opcode, rlen = struct.unpack_from("<BQ", data, pos)
        body = data[pos + 9:pos + 9 + rlen]
        if len(body) != rlen:
            raise ValueError("chunk record runs past the chunk")
        rs = ReadDataStream(io.BytesIO(body))
        if opcode == 0x05:
            msg = Message.read(rs, rlen)
            records.append(msg)
            index.setdefault(msg.channel_id, []).append((msg.log_time, pos))
        elif opcode == 0x04:
            records.append(Channel.read(rs))
        elif opcode == 0x03:
            records.append(Schema.read(rs))
        pos += 9 + rlen
    return records, index


def _scan_unfinished(fh, size: int) -> _Scan:
    """Walk the records of a file without footer; stop at the first one that is incomplete or
    does not check (a torn write), or at DataEnd (a summary that was being written)."""
    from mcap.data_stream import RecordBuilder, ReadDataStream
    from mcap.records import (Attachment, AttachmentIndex, Channel, Chunk, ChunkIndex, Message, MessageIndex,
                              Metadata, MetadataIndex, Schema)

    scan = _Scan(size=size)
    fh.seek(0)
    if fh.read(8) != MCAP_MAGIC:
        raise ValueError("no MCAP magic at the start")
    pos = 8
    last_chunk: ChunkIndex | None = None
    last_chunk_index: dict = {}
    last_chunk_mi_start = 0
    while True:
        scan.good_end = pos
        head = fh.read(9)
        if len(head) < 9:
            scan.stop_reason = "end of file" if not head else "torn record header"
            break
        opcode, rlen = struct.unpack("<BQ", head)
        if rlen > size - pos - 9:
            scan.stop_reason = f"torn record (opcode 0x{opcode:02x})"
            break
        body = fh.read(rlen)
        rs = ReadDataStream(io.BytesIO(body))
        try:
            if opcode == 0x01:
                scan.header = True
            elif opcode == 0x0F:  # DataEnd: a summary follows, written only in part
                scan.stop_reason = "unfinished summary section"
                break
            elif opcode in (0x02, 0x08, 0x0A, 0x0B, 0x0D, 0x0E):  # footer, index, statistics ...
                scan.stop_reason = f"summary record 0x{opcode:02x} in the data section"
                break
            elif opcode == 0x06:
                chunk = Chunk.read(rs)
                records, index = _chunk_records(chunk)
                for rec in records:
                    if isinstance(rec, Schema):
                        scan.schemas[rec.id] = rec
                    elif isinstance(rec, Channel):
                        scan.channels[rec.id] = rec
                    elif isinstance(rec, Message):
                        _count_message(scan, rec)
                last_chunk = ChunkIndex(message_start_time=chunk.message_start_time,
                                        message_end_time=chunk.message_end_time, chunk_start_offset=pos,
                                        chunk_length=9 + rlen, message_index_offsets={}, message_index_length=0,
                                        compression=chunk.compression, compressed_size=len(chunk.data),
                                        uncompressed_size=chunk.uncompressed_size)
                last_chunk_index = index
                last_chunk_mi_start = pos + 9 + rlen
                scan.chunk_indexes.append(last_chunk)
            elif opcode == 0x07:
                mi = MessageIndex.read(rs)
                if last_chunk is None:
                    raise ValueError("message index without a chunk")
                last_chunk.message_index_offsets[mi.channel_id] = pos
                last_chunk.message_index_length = pos + 9 + rlen - last_chunk_mi_start
            elif opcode == 0x0C:
                meta = Metadata.read(rs)
                scan.metadata_indexes.append(MetadataIndex(offset=pos, length=9 + rlen, name=meta.name))
                scan.has_summary_meta = scan.has_summary_meta or meta.name == "robodyn.summary"
            elif opcode == 0x09:
                att = Attachment.read(rs)
                scan.attachment_indexes.append(AttachmentIndex(
                    offset=pos, length=9 + rlen, log_time=att.log_time, create_time=att.create_time,
                    data_size=len(att.data), name=att.name, media_type=att.media_type))
            elif opcode == 0x03:
                rec = Schema.read(rs)
                scan.schemas[rec.id] = rec
            elif opcode == 0x04:
                rec = Channel.read(rs)
                scan.channels[rec.id] = rec
            elif opcode == 0x05:
                raise ValueError("message outside a chunk (robodyn writes every message in a chunk)")
        except Exception as exc:  # a record that does not parse or check: the torn tail starts here
            if opcode == 0x06 and scan.chunk_indexes and scan.chunk_indexes[-1].chunk_start_offset == pos:
                scan.chunk_indexes.pop()
            scan.stop_reason = f"record 0x{opcode:02x} at byte {pos} does not check ({type(exc).__name__}: {exc})"
            break
        scan.records += 1
        pos += 9 + rlen
    # the last chunk's message indexes may be missing or cut: regenerate them all (they are an
    # index of the chunk, rebuilt from it; no data is in them)
    if (last_chunk is not None and set(last_chunk.message_index_offsets) != set(last_chunk_index)
            and scan.good_end == last_chunk_mi_start + last_chunk.message_index_length):
        scan.good_end = last_chunk_mi_start
        builder = RecordBuilder()
        offsets = {}
        for channel_id, entries in sorted(last_chunk_index.items()):
            offsets[channel_id] = scan.good_end + builder.count
            MessageIndex(channel_id=channel_id, records=entries).write(builder)
        last_chunk.message_index_offsets = offsets
        last_chunk.message_index_length = builder.count
        scan.pending_indexes = builder.end()
    return scan


def _count_message(scan: _Scan, msg) -> None:
    scan.messages += 1
    scan.channel_counts[msg.channel_id] = scan.channel_counts.get(msg.channel_id, 0) + 1
    scan.message_start = msg.log_time if scan.message_start is None else min(scan.message_start, msg.log_time)
    scan.message_end = max(scan.message_end, msg.log_time)
    channel = scan.channels.get(msg.channel_id)
    if channel is not None and channel.topic == STATE_TOPIC:
        try:
            block = P.unpackb(msg.data, max_bytes=1 << 30)
            scan.state_seq.append(np.asarray(block["seq"], np.uint64))
        except Exception:
            pass


def repair_recording(path: str | Path, reason: str) -> dict | None:
    """Make an unfinished recording a complete MCAP file that any MCAP reader opens with its
    default call; None if the file was already complete.

    Every complete record stays where it is, byte for byte. After the last complete record the
    repair writes: the last chunk's message indexes when they were cut, the torn tail itself as
    an attachment ``robodyn.torn_tail`` (the bytes a crash left half-written, kept, not
    dropped), a ``robodyn.repair`` metadata record (the reason, where the file was cut, what was
    kept), a ``robodyn.summary`` when the run never wrote one (status ``aborted``, the reason,
    the samples found), then DataEnd, the summary section (schemas, channels, statistics, chunk,
    attachment and metadata indexes), the footer and the closing magic.

    Crash safety of the repair: the torn tail is first copied to ``<file>.torn-tail`` (fsync);
    a repair that fails (e.g. no space) puts the file back as it was; the copy is removed only
    once the repaired file is on disk.
    """
    from mcap.data_stream import RecordBuilder
    from mcap.opcode import Opcode
    from mcap.records import (Attachment, AttachmentIndex, DataEnd, Footer, Header, Metadata, MetadataIndex,
                              Statistics, SummaryOffset)

    path = Path(path)
    if recording_is_complete(path):
        return None
    size = path.stat().st_size
    with open(path, "rb") as fh:
        start = fh.read(8)
        if len(start) < 8 and MCAP_MAGIC.startswith(start):
            scan = _Scan(good_end=0, size=size, stop_reason="cut inside the file's magic")
        else:
            scan = _scan_unfinished(fh, size)
        fh.seek(scan.good_end)
        file_tail = fh.read()
    sidecar = path.with_name(path.name + ".torn-tail")
    tail = sidecar.read_bytes() if sidecar.exists() and len(sidecar.read_bytes()) >= len(file_tail) else file_tail
    if scan.pending_indexes and tail.startswith(scan.pending_indexes):
        tail = tail[len(scan.pending_indexes):]  # complete message indexes we re-create anyway

    out = RecordBuilder()
    prefix = b""
    if scan.good_end == 0:  # not even the magic survived: start the file again
        prefix = MCAP_MAGIC
        Header(profile="robodyn", library=f"robodyn {__version__}").write(out)
        prefix += out.end()
    blob = bytearray(prefix)
    blob += scan.pending_indexes
    now_ns = time.time_ns()  # label only, like created_wall
    if tail:
        offset = scan.good_end + len(blob)
        att = Attachment(log_time=now_ns, create_time=now_ns, name=TORN_TAIL_ATTACHMENT,
                         media_type="application/octet-stream", data=bytes(tail))
        att.write(out)
        rec = out.end()
        scan.attachment_indexes.append(AttachmentIndex(offset=offset, length=len(rec), log_time=now_ns,
                                                       create_time=now_ns, data_size=len(tail),
                                                       name=TORN_TAIL_ATTACHMENT,
                                                       media_type="application/octet-stream"))
        blob += rec
    seq = np.concatenate(scan.state_seq) if scan.state_seq else np.zeros(0, np.uint64)
    seq = np.unique(seq)
    d = np.diff(seq.astype(np.int64)) if seq.size > 1 else np.zeros(0, np.int64)
    gaps = [[int(seq[i]), int(d[i] - 1)] for i in np.flatnonzero(d > 1)]
    repair = {"reason": reason, "cut_at_byte": scan.good_end, "file_bytes_before": size,
              "torn_tail_bytes": len(tail), "stopped_at": scan.stop_reason, "records_kept": scan.records,
              "chunks_kept": len(scan.chunk_indexes), "messages_kept": scan.messages,
              "samples_kept": int(seq.size), "repaired_by": f"robodyn {__version__}",
              "repaired_wall": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    metas = [(REPAIR_METADATA, repair)]
    if not scan.has_summary_meta:
        metas.append(("robodyn.summary", {
            "status": "aborted", "reason": f"recording cut: {reason}", "recorded_samples": int(seq.size),
            "first_seq": int(seq[0]) if seq.size else 0, "last_seq": int(seq[-1]) if seq.size else 0,
            "gaps": gaps, "repaired": True}))
    for name, values in metas:
        offset = scan.good_end + len(blob)
        Metadata(name=name, metadata={k: json.dumps(v) for k, v in values.items()}).write(out)
        rec = out.end()
        scan.metadata_indexes.append(MetadataIndex(offset=offset, length=len(rec), name=name))
        blob += rec
    DataEnd(data_section_crc=0).write(out)
    blob += out.end()

    summary_start = scan.good_end + len(blob)
    groups = []
    summary = RecordBuilder()
    stats = Statistics(message_count=scan.messages, schema_count=len(scan.schemas),
                       channel_count=len(scan.channels), attachment_count=len(scan.attachment_indexes),
                       metadata_count=len(scan.metadata_indexes), chunk_count=len(scan.chunk_indexes),
                       message_start_time=scan.message_start or 0, message_end_time=scan.message_end,
                       channel_message_counts=dict(scan.channel_counts))
    for opcode, records in ((Opcode.SCHEMA, list(scan.schemas.values())),
                            (Opcode.CHANNEL, list(scan.channels.values())), (Opcode.STATISTICS, [stats]),
                            (Opcode.CHUNK_INDEX, scan.chunk_indexes),
                            (Opcode.ATTACHMENT_INDEX, scan.attachment_indexes),
                            (Opcode.METADATA_INDEX, scan.metadata_indexes)):
        if not records:
            continue
        group_start = summary.count
        for record in records:
            record.write(summary)
        groups.append(SummaryOffset(group_opcode=opcode, group_start=summary_start + group_start,
                                    group_length=summary.count - group_start))
    offsets_start = summary_start + summary.count
    for group in groups:
        group.write(summary)
    summary_data = summary.end()
    crc = zlib.crc32(summary_data)
    crc = zlib.crc32(struct.pack("<BQQQ", Opcode.FOOTER, 8 + 8 + 4, summary_start, offsets_start), crc)
    blob += summary_data
    Footer(summary_start=summary_start, summary_offset_start=offsets_start, summary_crc=crc).write(out)
    blob += out.end() + MCAP_MAGIC

    if tail:
        with open(sidecar, "wb") as fh:
            fh.write(tail)
            fh.flush()
            os.fsync(fh.fileno())
    try:
        with open(path, "r+b") as fh:
            fh.seek(scan.good_end)
            fh.truncate()
            fh.write(bytes(blob))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError:
        try:  # put the file back as it was (its tail fits: it was there a moment ago)
            with open(path, "r+b") as fh:
                fh.seek(scan.good_end)
                fh.truncate()
                fh.write(file_tail)
        except OSError:
            pass
        raise
    sidecar.unlink(missing_ok=True)
    return {"path": str(path), **repair}


def unfinished_recordings(directory: str | Path) -> list[Path]:
    """Every ``*.mcap`` in ``directory`` that the official reader's default call cannot open."""
    return [p for p in sorted(Path(directory).glob("*.mcap")) if not recording_is_complete(p)]


def repair_unfinished(directory: str | Path, reason: str) -> tuple[list, list]:
    """Repair every unfinished ``*.mcap`` in ``directory`` now: (repaired, failed). Only for files
    nothing writes to any more (the recorder uses :class:`UnfinishedFiles`, which waits)."""
    repaired, failed = [], []
    for path in unfinished_recordings(directory):
        try:
            result = repair_recording(path, reason)
        except Exception as exc:  # one bad file must not stop the others (or the recorder)
            failed.append({"path": str(path), "error": f"{type(exc).__name__}: {exc}"})
            continue
        if result is not None:
            repaired.append(result)
    return repaired, failed


class UnfinishedFiles:
    """Unfinished recordings waiting for their repair. A file is repaired once nothing has written
    to it for ``quiet_s`` (its size and modification stamp unchanged over that much monotonic
    time, as seen here: an orphaned recorder of a daemon restarted by hand may still be
    finalizing it), or at once when its writer is known to be dead. Failed repairs (no space)
    are retried every ``retry_s``."""

    def __init__(self, quiet_s: float, retry_s: float):
        self.quiet_s, self.retry_s = quiet_s, retry_s
        self.files: dict[str, dict] = {}

    @staticmethod
    def _signature(path: str):
        try:
            st = os.stat(path)
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns)

    def add(self, path, reason: str, now: float, writer_dead: bool = False) -> None:
        self.files[str(path)] = {"reason": reason, "signature": self._signature(str(path)), "since": now,
                                 "dead": writer_dead, "next_try": now}

    def __bool__(self) -> bool:
        return bool(self.files)

    def due(self, now: float) -> list[tuple[str, str]]:
        """(path, reason) of the files to repair now."""
        out = []
        for path, f in list(self.files.items()):
            sig = self._signature(path)
            if sig is None:  # gone
                del self.files[path]
                continue
            if sig != f["signature"]:  # someone is still writing it
                f["signature"], f["since"] = sig, now
                continue
            if (f["dead"] or now - f["since"] >= self.quiet_s) and now >= f["next_try"]:
                out.append((path, f["reason"]))
        return out

    def failed(self, path: str, now: float) -> None:
        if path in self.files:
            self.files[path]["next_try"] = now + self.retry_s

    def done(self, path: str) -> None:
        self.files.pop(path, None)


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
