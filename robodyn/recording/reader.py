"""The recovering loader: a recording read into arrays (also one cut short by a crash: every
complete chunk), and the one-line summaries `robodyn recordings` lists."""

from __future__ import annotations

import io
import json
import os
import struct
import zlib
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from robodyn.wire import decode_ndarray, unpackb

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
    # found as the samples were read (a recording read to disk), else None and found from the arrays:
    seq_gaps: list | None = None  # gaps(), in sequence order
    phase_stretches: dict | None = None  # phase code -> (first, stop, count), as phase_span gives

    @property
    def t(self) -> np.ndarray:
        """Robot time from the first sample, s."""
        return self.robot_time - self.robot_time[0] if self.robot_time.size else self.robot_time

    @property
    def samples(self) -> int:
        return int(self.seq.shape[0])

    def gaps(self) -> list[tuple[int, int]]:
        """(last sequence number before the gap, samples missing) for every hole in the sequence."""
        if self.seq_gaps is not None:
            return list(self.seq_gaps)
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

    def phase_span(self, name: str) -> tuple[int, int, int]:
        """(first sample, one past the last, count) of phase ``name``, (0, 0, 0) when it has none:
        its samples are one stretch when stop - first == count."""
        if self.phase_stretches is not None:
            return self.phase_stretches.get({v: k for k, v in P.PHASE_NAMES.items()}[name], (0, 0, 0))
        mask = self.phase_mask(name)
        count = int(np.count_nonzero(mask))
        return (int(np.argmax(mask)), mask.shape[0] - int(np.argmax(mask[::-1])), count) if count else (0, 0, 0)


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
    """The samples of a recording as they are read, batch by batch, straight into one array per
    signal kept. Grows by half when a file holds more than expected; ``arrays()`` trims the spare."""

    def __init__(self, offsets: dict, capacity: int):
        self.n, cap = 0, max(int(capacity), 1024)
        self.seq, self.robot_time, self.host, self.phase = (np.zeros(cap, t) for t in _DiskColumns.DTYPES)
        self.values = {name: np.zeros((cap, w)) for name, (_, w) in offsets.items()}

    def _grow(self, need: int) -> None:
        cap = max(need, self.seq.shape[0] + self.seq.shape[0] // 2)

        grown = lambda a: np.concatenate([a[:self.n], np.zeros((cap - self.n,) + a.shape[1:], a.dtype)])  # noqa: E731
        self.seq, self.robot_time, self.host, self.phase = map(grown, (self.seq, self.robot_time, self.host,
                                                                        self.phase))
        self.values = {k: grown(v) for k, v in self.values.items()}

    def add(self, seq, robot_time, host, phase, signals: dict) -> None:
        k = int(seq.shape[0])
        if self.n + k > self.seq.shape[0]:
            self._grow(self.n + k)
        sl = slice(self.n, self.n + k)  # one batch of samples at a time
        self.seq[sl], self.robot_time[sl], self.host[sl], self.phase[sl] = seq, robot_time, host, phase
        for name, v in signals.items():
            self.values[name][sl] = v
        self.n += k

    def arrays(self):
        """(seq, robot_time, host_time_ns, phase, signals, gaps, stretches) of the samples read, in
        sequence order (gaps and stretches None: the arrays are at hand to find them)."""
        n = self.n
        trimmed = lambda a: a[:n] if n >= 0.9 * a.shape[0] else a[:n].copy()  # noqa: E731 (a copy when much is spare)
        arrays = [trimmed(a) for a in (self.seq, self.robot_time, self.host, self.phase)]
        return (*_in_order(*arrays, {k: trimmed(v) for k, v in self.values.items()}), None, None)


def _in_order(seq, robot_time, host, phase, signals):
    if seq.shape[0] > 1 and not bool(np.all(seq[1:] > seq[:-1])):  # blocks out of order: sort the samples
        order = np.argsort(seq, kind="stable")
        seq, robot_time, host, phase = (np.asarray(a)[order] for a in (seq, robot_time, host, phase))
        signals = {k: np.asarray(v)[order] for k, v in signals.items()}
    return seq, robot_time, host, phase, signals


class _DiskColumns:
    """The samples written, batch by batch, to unnamed temporary files mapped back read-only, so
    memory is bounded whatever the recording's length unless TMPDIR is a tmpfs (identification hands
    the maps' pages back as it reads them: identification/mapped_pages.py). The files are made in a
    private directory (0700) of the user's temporary directory, removed at once: nameless, nothing of
    them is left on any exit, and their space is freed with the maps. Sequence gaps and each phase's
    stretch are found batch by batch, without a whole-log pass."""

    DTYPES = (np.uint64, np.float64, np.int64, np.uint8)  # seq, robot_time, host_time_ns, phase

    def __init__(self, offsets: dict, directory: str | None):
        import tempfile

        self.widths = {name: w for name, (_, w) in offsets.items()}
        self.dtypes = list(self.DTYPES) + [np.float64] * len(offsets)
        self.n, self.last, self.ordered, self.gaps, self.stretches = 0, None, True, [], {}
        self.where = tempfile.mkdtemp(prefix="robodyn-decoded-", dir=directory)  # mode 0700
        try:  # 0600, and unlinked at once (O_TMPFILE where the file system has it)
            self.files = [tempfile.TemporaryFile(dir=self.where) for _ in self.dtypes]
        finally:
            os.rmdir(self.where)

    def close(self) -> None:
        for f in self.files:
            f.close()

    def add(self, seq, robot_time, host, phase, signals: dict) -> None:
        k = int(seq.shape[0])
        if not k:  # nothing to write (a block may hold no sample)
            return
        seq, phase = np.asarray(seq, np.uint64), np.asarray(phase, np.uint8)
        s = seq.astype(np.int64)
        d = np.diff(s, prepend=s[0] - 1 if self.last is None else self.last)
        self.ordered = self.ordered and bool(np.all(d > 0))
        for i in np.flatnonzero(d > 1):
            self.gaps.append((int(s[i - 1] if i else self.last), int(d[i] - 1)))
        self.last = int(s[-1])
        for code, count in enumerate(np.bincount(phase)):
            if count:
                hit = phase == code
                first, stop = self.n + int(np.argmax(hit)), self.n + k - int(np.argmax(hit[::-1]))
                was = self.stretches.get(code, (first, 0, 0))
                self.stretches[code] = (was[0], stop, was[2] + int(count))
        parts = [seq, robot_time, host, phase] + [signals[name] for name in self.widths]
        try:
            for f, a, dtype in zip(self.files, parts, self.dtypes):
                f.write(memoryview(np.ascontiguousarray(a, dtype)).cast("B"))
        except OSError as exc:
            raise OSError(exc.errno, f"cannot write the decoded samples to a temporary file under "
                                     f"{os.path.dirname(self.where)} ({exc.strerror}); set TMPDIR to a "
                                     "directory with room") from None
        self.n += k

    def arrays(self):
        """(seq, robot_time, host_time_ns, phase, signals, gaps, stretches), every array a read-only
        map of its file; a file whose blocks came out of order is sorted in memory instead."""
        shapes = [()] * 4 + [(w,) for w in self.widths.values()]
        for f in self.files:
            f.flush()
        mapped = [np.memmap(f, dtype, "r", shape=(self.n,) + shape) if self.n else np.zeros((0,) + shape, dtype)
                  for f, shape, dtype in zip(self.files, shapes, self.dtypes)]
        self.close()
        signals = dict(zip(self.widths, mapped[4:]))
        if not self.ordered:
            return (*_in_order(*mapped[:4], signals), None, None)
        return (*mapped[:4], signals, self.gaps, self.stretches)


def _expected_samples(fh) -> int:
    """The sample count a finalized file's summary metadata states, found through the MCAP summary
    offsets (the footer, one summary-offset group, one metadata record: a few hundred bytes read,
    where reading the whole summary section parses one chunk index per block), or 0 for a file cut
    short or written without a summary."""
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


# ---------------------------------------------------------------------------- reading the MCAP file
#
# The file is read in large pieces, its records found by their lengths (mcap's StreamReader reads
# each field with a call of its own), and the chunks decompressed, checked and decoded a batch at a
# time. The checks are StreamReader's with validate_crcs (record size limit, data-section CRC,
# every chunk's CRC): reading stops at the first record cut short or failing one, keeping every
# complete chunk before it.

MAGIC = b"\x89MCAP0\r\n"
RECORD_LIMIT = 1 << 30
READ_BYTES = 8 << 20
BATCH_BYTES = 8 << 20  # decompressed bytes per batch of chunks
OP_FOOTER, OP_CHANNEL, OP_MESSAGE, OP_CHUNK, OP_METADATA, OP_DATA_END = 2, 4, 5, 6, 12, 15
_RECORD = struct.Struct("<BQ")  # opcode, length of the record's body
_CHUNK = struct.Struct("<QQQII")  # start and end time, uncompressed size and CRC, compression name length
_MESSAGE = struct.Struct("<HIQQ")  # channel, sequence, log time, publish time
BLOCK_KEYS = ("seq", "robot_time", "host_time_ns", "phase", "values")


class RecordError(ValueError):
    """A record of the file is cut short or fails a check: reading stops before it."""


def _top_records(fh, wanted: set):
    """(opcode, body) of every record of an opcode in ``wanted`` up to the footer, in file order;
    raises RecordError at the first record cut short or too large, or a data section whose CRC
    does not match."""
    buf, at, pos = fh.read(READ_BYTES), 0, 8  # at: the file offset of buf[0]
    if buf[:8] != MAGIC:
        raise RecordError("no MCAP magic at the start of the file")
    crc, crc_end = 0, 0  # CRC of file bytes [0, crc_end), while the data section lasts
    while True:
        while True:  # until the record's header and body are in the buffer
            length = _RECORD.unpack_from(buf, pos)[1] if pos + 9 <= len(buf) else None
            if length is not None and length > RECORD_LIMIT:
                raise RecordError(f"record at byte {at + pos} states {length} bytes, over the limit")
            need = 9 if length is None else 9 + length
            if pos + need <= len(buf):
                break
            more = fh.read(max(READ_BYTES, need - (len(buf) - pos)))
            if not more:
                raise RecordError(f"record at byte {at + pos} cut short: the file ends at byte {at + len(buf)}")
            if crc_end is not None:
                crc, crc_end = zlib.crc32(memoryview(buf)[crc_end - at:pos], crc), at + pos
            buf, at, pos = buf[pos:] + more, at + pos, 0
        op, pos = buf[pos], pos + 9 + length
        if op == OP_DATA_END and crc_end is not None:
            crc = zlib.crc32(memoryview(buf)[crc_end - at:pos - 9 - length], crc)
            stated = struct.unpack_from("<I", buf, pos - length)[0] if length >= 4 else 0
            if stated and stated != crc:
                raise RecordError(f"data section CRC mismatch: stated {stated}, calculated {crc}")
            crc_end = None
        if op in wanted:
            yield op, memoryview(buf)[pos - length:pos]
        if op == OP_FOOTER:
            return


def _chunk(body) -> tuple:
    """(compression, uncompressed size, uncompressed CRC, compressed bytes) of a chunk record."""
    _, _, size, crc, name_length = _CHUNK.unpack_from(body)
    start = _CHUNK.size + name_length
    data_length = struct.unpack_from("<Q", body, start)[0] if len(body) >= start + 8 else len(body)
    if len(body) < start + 8 + data_length:
        raise RecordError("chunk record states more data than it holds")
    return str(body[_CHUNK.size:start], "utf-8"), size, crc, body[start + 8:start + 8 + data_length]


def _inflate(compression: str, size: int, data, zstd):
    if compression == "zstd":
        return zstd.decompress(data, max_output_size=size)
    if compression == "lz4":
        return __import__("lz4.frame").frame.decompress(data)
    if compression:
        raise RecordError(f"chunk compression {compression!r} is not supported")
    return bytes(data)


def _parsed(reader_class, body):
    from mcap.data_stream import ReadDataStream

    return reader_class.read(ReadDataStream(io.BytesIO(bytes(body))))


def _block_arrays(block, offsets: dict) -> tuple:
    """(seq, robot_time, host_time_ns, phase, values) of one decoded block, checked."""
    if not isinstance(block, dict) or any(not isinstance(block.get(k), np.ndarray) for k in BLOCK_KEYS):
        raise RecordError(f"state block without the arrays {list(BLOCK_KEYS)}")
    arrays = tuple(block[k] for k in BLOCK_KEYS)
    k = arrays[0].shape[0] if arrays[0].ndim == 1 else -1
    values = arrays[4]
    if any(a.shape != (k,) for a in arrays[:4]) or values.ndim != 2 or values.shape[0] != k \
            or values.shape[1] < max((start + w for start, w in offsets.values()), default=0):
        raise RecordError(f"state block of inconsistent shapes: {[a.shape for a in arrays]}")
    return arrays


def _joined(blocks: list, offsets: dict) -> tuple:
    """("samples", seq, robot_time, host_time_ns, phase, {signal: values}) of consecutive blocks."""
    cols = list(zip(*blocks))
    return ("samples", *(np.concatenate(c) for c in cols[:4]),
            {name: np.concatenate([v[:, start:start + w] for v in cols[4]]) for name, (start, w) in offsets.items()})


class _BlockLayout:
    """Where the arrays of a state block of one byte length sit in its msgpack bytes. A block whose
    bytes outside the arrays' contents equal this one's parses to the same keys, dtypes and shapes
    (msgpack states every length ahead of its bytes), so its arrays are read in place, without
    decoding it: the decoder's own checks were made on the first block of that length."""

    def __init__(self, data):
        import msgpack

        self.raw = bytes(data)
        unpacker = msgpack.Unpacker(raw=False, strict_map_key=True, max_buffer_size=len(self.raw))
        unpacker.feed(self.raw)
        self.arrays, contents = {}, []
        for _ in range(unpacker.read_map_header()):
            key = unpacker.unpack()
            if key not in BLOCK_KEYS:
                unpacker.skip()
                continue
            fields = {}
            for _ in range(unpacker.read_map_header()):
                name = unpacker.unpack()
                fields[name] = unpacker.unpack()
                if name == "data" and isinstance(fields[name], bytes):
                    contents.append((unpacker.tell() - len(fields[name]), unpacker.tell()))
            a = decode_ndarray(fields, key)  # the wire format's checks (dtype allowed, size)
            if fields.get("$nd") != 1 or key in self.arrays:
                raise RecordError("state block of an unexpected layout")
            self.arrays[key] = (contents[-1][0], a.dtype, a.size, a.shape)
        if unpacker.tell() != len(self.raw) or set(self.arrays) != set(BLOCK_KEYS):
            raise RecordError("state block of an unexpected layout")
        edges = [0] + [e for pair in sorted(contents) for e in pair] + [len(self.raw)]
        self.fixed = [(a, b) for a, b in zip(edges[::2], edges[1::2]) if b > a]

    def read(self, data) -> tuple | None:
        """The block's arrays (views of ``data``) in BLOCK_KEYS order, or None when its layout differs."""
        if any(data[a:b] != self.raw[a:b] for a, b in self.fixed):
            return None
        return tuple(np.frombuffer(data, dtype, size, at).reshape(shape)
                     for at, dtype, size, shape in map(self.arrays.__getitem__, BLOCK_KEYS))


def _decoded_chunks(chunks, state: int | None, offsets: dict | None, layouts: dict):
    """The items of a batch of chunks, decompressed and checked, in file order: consecutive state
    blocks joined into one ("samples", ...) item, ("channel", record) and ("message", channel id,
    bytes) for the rest; what stops it is raised after the items before it."""
    import zstandard
    from mcap.records import Channel

    run, zstd = [], zstandard.ZstdDecompressor()
    try:
        for compression, size, crc, data in chunks:
            data = _inflate(compression, size, data, zstd)
            if crc and zlib.crc32(data) != crc:
                raise RecordError(f"chunk CRC mismatch: stated {crc}, calculated {zlib.crc32(data)}")
            view, pos = memoryview(data), 0
            while pos < len(view):
                op, length = _RECORD.unpack_from(view, pos) if pos + 9 <= len(view) else (0, len(view))
                body, pos = view[pos + 9:pos + 9 + length], pos + 9 + length
                if len(body) < length:
                    raise RecordError("chunk ends inside a record")
                if op == OP_MESSAGE and _MESSAGE.unpack_from(body)[0] == state and offsets is not None:
                    message = body[_MESSAGE.size:]
                    layout = layouts.get(len(message))
                    arrays = None if layout is None else layout.read(message)
                    if arrays is None:
                        arrays = _block_arrays(unpackb(message, max_bytes=RECORD_LIMIT), offsets)
                        with suppress(Exception):  # a layout not read in place: each such block is decoded
                            layouts.setdefault(len(message), _BlockLayout(message))
                    run.append(arrays)
                elif op in (OP_CHANNEL, OP_MESSAGE):
                    if run:
                        yield _joined(run, offsets)
                        run = []
                    if op == OP_CHANNEL:
                        channel = _parsed(Channel, body)
                        state = channel.id if channel.topic == STATE_TOPIC else state
                        yield "channel", channel
                    else:
                        yield "message", _MESSAGE.unpack_from(body)[0], body[_MESSAGE.size:]
    except Exception:
        if run:
            yield _joined(run, offsets)
        raise
    if run:
        yield _joined(run, offsets)


class _Decoder:
    """The records of one file in order: metadata, channels and events kept here, the samples
    handed on as ("samples", seq, robot_time, host_time_ns, phase, signals) batches."""

    def __init__(self, keep: set | None):
        self.keep, self.meta, self.summary, self.footer = keep, {}, None, False
        self.channels, self.events = {}, []  # channel id -> topic; the run's events
        self.layouts: dict = {}  # byte length -> _BlockLayout

    def offsets(self) -> dict:
        found, start = {}, 0
        for name, w, _ in _signal_layout(self.meta):
            if self.keep is None or name in self.keep:
                found[name] = (start, w)
            start += w
        return found

    def _samples_of(self, items):
        """The batches of samples among ``items``; channels and events are noted here."""
        for item in items:
            if item[0] == "samples":
                yield item
            elif item[0] == "channel":
                self.channels[item[1].id] = item[1].topic
            elif self.channels.get(item[1]) == STATE_TOPIC:
                offsets = self.offsets()
                yield _joined([_block_arrays(unpackb(item[2], max_bytes=RECORD_LIMIT), offsets)], offsets)
            elif self.channels.get(item[1]) == EVENT_TOPIC:
                self.events.append(json.loads(bytes(item[2])))

    def samples(self, fh):
        """Every batch of samples in file order; raises what stopped the reading, after the
        samples of every complete chunk before it."""
        from mcap.records import Channel, Metadata

        batch, size, stopped = [], 0, None
        records = _top_records(fh, {OP_METADATA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK, OP_FOOTER})
        while True:
            try:
                op, body = next(records)
                if op == OP_CHUNK:
                    batch.append(_chunk(body))
                    size += batch[-1][1]
                    if size < BATCH_BYTES:
                        continue
            except StopIteration:
                op = None
            except Exception as exc:  # cut short or failing a check: the chunks before it count
                stopped, op = exc, None
            if batch:
                state = next((i for i, t in self.channels.items() if t == STATE_TOPIC), None)
                yield from self._samples_of(_decoded_chunks(batch, state, self.offsets() if self.meta else None,
                                                            self.layouts))
                batch, size = [], 0
            if op is None:
                break
            if op == OP_METADATA:
                self.meta, self.summary = _robodyn_metadata(_parsed(Metadata, body), self.meta, self.summary)
            elif op == OP_CHANNEL:
                yield from self._samples_of([("channel", _parsed(Channel, body))])
            elif op == OP_MESSAGE:
                yield from self._samples_of([("message", _MESSAGE.unpack_from(body)[0], body[_MESSAGE.size:])])
            elif op == OP_FOOTER:
                self.footer = True
        if stopped is not None:
            raise stopped


def load_recording(path: str | Path, signals: tuple[str, ...] | None = None,
                   on_disk: bool = False, temp_dir: str | None = None) -> Recording:
    """Read a recording, also one cut short by a crash (reads every complete chunk). ``signals``
    names the signals to keep (default: all); the others are skipped as the blocks are read, so
    identification, which needs q, qd and tau, holds only those of a many-column driver.
    ``on_disk``: the arrays are read-only maps of unnamed temporary files (:class:`_DiskColumns`,
    under ``temp_dir``, default the user's temporary directory), so a recording of any length is
    read in bounded memory."""
    path, columns, error = Path(path), None, ""
    decoder = _Decoder(None if signals is None else set(signals))
    with open(path, "rb") as fh:
        expected = 0 if on_disk else _expected_samples(fh)
        batches = decoder.samples(fh)
        try:
            while True:
                try:
                    found = next(batches)
                except StopIteration:
                    break
                except Exception as exc:  # a torn last record after a crash: keep what was complete
                    error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                    break
                if columns is None:  # the metadata record comes first (writer.py)
                    columns = (_DiskColumns(decoder.offsets(), temp_dir) if on_disk
                               else _SampleColumns(decoder.offsets(), expected))
                columns.add(*found[1:])
        except BaseException:
            if isinstance(columns, _DiskColumns):
                columns.close()
            raise
        finally:
            batches.close()
    meta, footer = decoder.meta, decoder.footer
    if meta.get("format") != FORMAT:
        if isinstance(columns, _DiskColumns):
            columns.close()
        raise ValueError(f"{path}: not a robodyn recording (no '{FORMAT}' metadata{'; ' + error if error else ''})")
    seq, robot_time, host, phase, arrays, gaps, stretches = (columns or _SampleColumns(decoder.offsets(), 0)).arrays()
    units = {name: unit for name, _, unit in _signal_layout(meta) if name in arrays}
    return Recording(str(path), meta, seq, robot_time, host, phase, arrays, units, decoder.events, decoder.summary,
                     truncated=not footer, read_error=error if not footer else "", seq_gaps=gaps,
                     phase_stretches=stretches)


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
