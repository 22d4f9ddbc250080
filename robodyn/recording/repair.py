"""Repair of recordings a crash left unfinished: every complete record kept byte for byte, the torn
tail kept as an attachment, and the summary section, footer and magic written, so any MCAP reader
opens the file with its default call; and the queue of files waiting for their repair."""

from __future__ import annotations

import io
import json
import os
import struct
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robodyn import __version__
from robodyn.private_files import open_private
from robodyn.wire import unpackb

from .layout import STATE_TOPIC

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
            block = unpackb(msg.data, max_bytes=1 << 30)
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
        with open_private(sidecar, exclusive=False) as fh:
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
