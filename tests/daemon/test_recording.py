"""Recordings: self-description, gaps, crash recovery, CSV/NPZ export and CSV import."""

import json
import os
import stat

import numpy as np
import pytest

from robodyn.recording import (RecordingWriter, export_csv, export_npz, import_csv, load_recording,
                                      read_recording_info)
from robodyn.drivers.sim import SimulatedRobot

DESC = SimulatedRobot({"seed": 0}).describe().to_dict()
WIDTH = sum(s["width"] for s in DESC["signals"])


def write(path, seqs, block_ms=50.0, close=True):
    meta = {"run_id": "r1", "driver": DESC, "rate_hz": 1000.0, "trajectory": {"family": "fourier"},
            "robot": {"name": "panda"}}
    w = RecordingWriter(path, meta, WIDTH, "zstd", block_ms)
    for chunk in np.array_split(np.asarray(seqs, dtype=np.uint64), max(1, len(seqs) // 100)):
        n = chunk.shape[0]
        w.append(chunk, chunk * 1e-3, chunk.astype(np.int64) * 1000, np.full(n, 2, np.uint8),
                 np.outer(chunk, np.ones(WIDTH)).astype(float))
        w.flush_block()  # as if every 100 samples took one block period
    if close:
        w.event({"event": "phase", "phase": "execute", "host_time_ns": 5})
        w.close({"status": "completed", "expected_samples": int(seqs[-1] - seqs[0] + 1),
                 "recorded_samples": len(seqs), "lost_samples": int(seqs[-1] - seqs[0] + 1) - len(seqs)})
    return w


def test_round_trip_is_self_describing(tmp_path):
    path = tmp_path / "r1.mcap"
    write(path, np.arange(1, 1001))
    rec = load_recording(path)
    assert rec.samples == 1000 and not rec.truncated and rec.gaps() == [] and rec.lost == 0
    assert rec.meta["software_version"] and rec.meta["rate_hz"] == 1000.0 and rec.meta["trajectory"]
    assert rec.units["tau"] == "N.m" and rec.signal("q").shape == (1000, 7)
    assert np.array_equal(rec.signal("q")[:, 0], np.arange(1, 1001))
    assert rec.summary["status"] == "completed" and rec.events[0]["phase"] == "execute"
    info = read_recording_info(path)  # from the summary, without decoding the samples
    assert (info["id"], info["samples"], info["lost"], info["status"]) == ("r1", 1000, 0, "completed")


def test_gaps_are_counted_never_hidden(tmp_path):
    seqs = np.concatenate([np.arange(1, 301), np.arange(311, 601), np.arange(602, 1001)])
    write(tmp_path / "g.mcap", seqs)
    rec = load_recording(tmp_path / "g.mcap")
    assert rec.gaps() == [(300, 10), (600, 1)] and rec.lost == 11


def test_truncated_file_still_opens_with_every_complete_block(tmp_path):
    path = tmp_path / "t.mcap"
    write(path, np.arange(1, 901), close=False)
    complete = os.path.getsize(path)  # every block is on disk as soon as it is written
    write(tmp_path / "full.mcap", np.arange(1, 1001), close=False)
    full = (tmp_path / "full.mcap").read_bytes()
    # the same file cut in the middle of its tenth block, as a SIGKILL during the write would
    path.write_bytes(full[:complete + 200])
    rec = load_recording(path)
    assert rec.truncated and rec.summary is None and rec.read_error
    assert rec.samples == 900 and rec.seq[0] == 1 and rec.gaps() == []
    assert rec.meta["run_id"] == "r1"
    info = read_recording_info(path)
    assert info["samples"] == 900 and info["status"] == "incomplete (recovered)"


def test_csv_and_npz_export_and_csv_import(tmp_path):
    path = tmp_path / "e.mcap"
    write(path, np.arange(1, 201))
    rec = load_recording(path)
    csv_path = export_csv(rec, tmp_path / "e.csv")
    header = csv_path.read_text().splitlines()[0].split(",")
    assert header[:4] == ["t", "seq", "phase", "q1"] and "tau7" in header
    back = import_csv(csv_path)
    assert np.allclose(back.signal("q"), rec.signal("q")) and np.allclose(back.signal("tau"), rec.signal("tau"))
    assert np.allclose(back.signal("qd"), rec.signal("qd")) and np.allclose(back.t, rec.t)
    assert "q_d1" in back.meta["ignored_columns"]
    npz = np.load(export_npz(rec, tmp_path / "e.npz"))
    assert npz["q"].shape == (200, 7) and json.loads(str(npz["meta_json"]))["run_id"] == "r1"


def test_csv_import_column_convention(tmp_path):
    p = tmp_path / "ext.csv"
    p.write_text("# exported by some other tool\nt,q1,q2,tau1,tau2\n0,0,0,1,2\n0.01,0.1,0.2,1.5,2.5\n")
    rec = import_csv(p)
    assert rec.signal("q").shape == (2, 2) and "qd" not in rec.signals and rec.units["q"] == "rad"
    bad = tmp_path / "bad.csv"
    bad.write_text("t,q1,q2,tau1\n0,0,0,1\n")
    with pytest.raises(ValueError, match="tau2"):
        import_csv(bad)
    bad.write_text("t,q1,qd1,tau1\n0,0,0,1\n0,0,0,1\n")
    with pytest.raises(ValueError, match="strictly increase"):
        import_csv(bad)
    bad.write_text("t,q1,q2,qd1,tau1,tau2\n0,0,0,0,1,1\n")
    with pytest.raises(ValueError, match="all of qd1..qd2 or none"):
        import_csv(bad)


# --------------------------------------------------------------------------- repair


def official_default_read(path):
    """What a user of the official `mcap` Python library does: the reader's default call."""
    from mcap.reader import make_reader

    with open(path, "rb") as fh:
        reader = make_reader(fh)
        messages = [(channel.topic, message.data) for _schema, channel, message in reader.iter_messages()]
        summary = reader.get_summary()
        metadata = {m.name: m.metadata for m in reader.iter_metadata()}
        attachments = {a.name: a.data for a in reader.iter_attachments()}
    return messages, summary, metadata, attachments


def cut_points(full: bytes):
    """Byte offsets that cut the file inside its records: every record boundary +-1 and inside
    each record (header, chunk, message indexes, metadata), as a kill during any write would."""
    import struct

    points, pos = set(), 8
    while pos + 9 <= len(full):
        opcode, length = struct.unpack_from("<BQ", full, pos)
        if opcode == 0x0F:  # DataEnd: the summary follows
            break
        end = pos + 9 + length
        points.update({pos, pos + 1, pos + 5, pos + 9, (pos + end) // 2, end - 1})
        pos = end
    points.update(range(0, 9))
    return sorted(p for p in points if p < pos)


def test_a_file_cut_anywhere_is_finalized_and_opens_with_the_official_default_call(tmp_path):
    """after a crash the official reader's default call raised RecordLengthLimitExceeded.
    The repair gives every cut file a summary, indexes and footer, keeps every complete block
    (the same samples robodyn's loader finds in the cut file) and keeps the torn bytes too."""
    from robodyn.recording import recording_is_complete, repair_recording

    full_path = tmp_path / "full.mcap"
    write(full_path, np.arange(1, 1001), close=False)
    full = full_path.read_bytes()
    points = cut_points(full)
    assert len(points) > 60
    failed_before = 0
    for cut in points:
        path = tmp_path / f"cut{cut}.mcap"
        path.write_bytes(full[:cut])
        try:
            official_default_read(path)
        except Exception:
            failed_before += 1
        try:
            before = load_recording(path)
        except ValueError:  # cut before its self-description was complete
            before = None
        result = repair_recording(path, "test cut")
        assert result is not None and recording_is_complete(path)
        messages, summary, metadata, attachments = official_default_read(path)
        repair = {k: json.loads(v) for k, v in metadata["robodyn.repair"].items()}
        assert repair["reason"] == "test cut" and summary.statistics.message_count == len(messages)
        tail = attachments.get("robodyn.torn_tail", b"")
        kept = path.read_bytes()[:repair["cut_at_byte"]]
        # the bytes are all still there: the kept prefix, then the torn tail as an attachment
        assert kept + tail == full[:cut] or (repair["cut_at_byte"] == 0 and tail == full[:cut])
        if before is None:
            assert messages == [] and repair["samples_kept"] == 0
            continue
        after = load_recording(path)
        assert not after.truncated and after.gaps() == []
        # nothing the loader could read before is lost
        assert after.samples == before.samples and np.array_equal(after.seq, before.seq)
        assert np.array_equal(after.signal("tau"), before.signal("tau"))
        state = [m for topic, m in messages if topic == "/robodyn/state"]
        assert sum(len(load_block(m)["seq"]) for m in state) == after.samples
        assert repair["samples_kept"] == after.samples
        assert after.summary["status"] == "aborted" and after.summary["recorded_samples"] == after.samples
        assert repair_recording(path, "again") is None  # complete now: left alone
    assert failed_before >= len(points) - 2, "the defect: the default call failed on cut files"


def load_block(data):
    from robodyn.daemon import protocol as P

    return P.unpackb(data, max_bytes=1 << 30)


def test_repair_keeps_a_closed_summary_and_survives_a_failed_write(tmp_path, monkeypatch):
    from robodyn.recording import repair as R

    path = tmp_path / "r.mcap"
    w = write(path, np.arange(1, 501), close=False)
    w.abandon()  # what the recorder does on a full disk: cut back to the last complete record
    original = path.read_bytes()

    def no_space(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(R.os, "fsync", no_space)
    with pytest.raises(OSError):
        R.repair_recording(path, "disk full")
    assert path.read_bytes() == original  # a repair that cannot finish leaves the file as it was
    monkeypatch.undo()
    result = R.repair_recording(path, "disk full")
    assert result["torn_tail_bytes"] == 0 and result["samples_kept"] == 500
    messages, _summary, metadata, attachments = official_default_read(path)
    assert "robodyn.torn_tail" not in attachments and len(messages) == 5
    assert path.read_bytes()[:len(original)] == original  # appended after, byte for byte


def test_every_unfinished_file_in_a_directory_is_repaired_finished_ones_untouched(tmp_path):
    from robodyn.recording import repair_unfinished

    write(tmp_path / "done.mcap", np.arange(1, 101))
    done = (tmp_path / "done.mcap").read_bytes()
    write(tmp_path / "cut.mcap", np.arange(1, 301), close=False)
    (tmp_path / "empty.mcap").write_bytes(b"")
    (tmp_path / "junk.mcap").write_bytes(b"not an mcap file at all")
    repaired, failed = repair_unfinished(tmp_path, "crash")
    assert sorted(p["path"].rsplit("/", 1)[1] for p in repaired) == ["cut.mcap", "empty.mcap"]
    assert [f["path"].rsplit("/", 1)[1] for f in failed] == ["junk.mcap"]  # not ours: left alone
    assert (tmp_path / "done.mcap").read_bytes() == done
    assert (tmp_path / "junk.mcap").read_bytes() == b"not an mcap file at all"
    assert official_default_read(tmp_path / "empty.mcap")[0] == []


def test_a_file_that_may_still_have_a_writer_is_not_repaired_under_it(tmp_path):
    """An orphaned recorder of a daemon restarted by hand finalizes for up to 10 s: a new
    recorder must not rewrite the file under it. A file is repaired once nothing has written to
    it for the quiet time (monotonic, as seen by the recorder), at once if its writer is dead."""
    from robodyn.recording import UnfinishedFiles

    for name in ("written", "quiet", "dead_writer"):
        write(tmp_path / f"{name}.mcap", np.arange(1, 201), close=False)
    files = UnfinishedFiles(quiet_s=15.0, retry_s=5.0)
    for name in ("written", "quiet", "dead_writer"):
        files.add(tmp_path / f"{name}.mcap", "crash", now=100.0, writer_dead=name == "dead_writer")
    assert [p.rsplit("/", 1)[1] for p, _ in files.due(101.0)] == ["dead_writer.mcap"]
    files.done(str(tmp_path / "dead_writer.mcap"))
    with open(tmp_path / "written.mcap", "ab") as fh:  # its writer is still at work
        fh.write(b"\0" * 10)
    assert files.due(110.0) == []
    assert [p.rsplit("/", 1)[1] for p, _ in files.due(115.5)] == ["quiet.mcap"]  # 15 s unchanged
    files.done(str(tmp_path / "quiet.mcap"))
    assert files.due(124.0) == [] and [p.rsplit("/", 1)[1] for p, _ in files.due(125.5)] == ["written.mcap"]
    files.failed(str(tmp_path / "written.mcap"), now=125.5)  # e.g. no space: retried 5 s later
    assert files.due(128.0) == [] and len(files.due(130.6)) == 1


def test_a_block_is_written_block_ms_after_its_first_sample_and_survives_a_crash(tmp_path, monkeypatch):
    """The crash-loss bound the code controls, on a fake clock: a block is due [recorder].block_ms
    after its first sample (the recorder loop writes it on its next turn), and a written block is
    in the file before close (a SIGKILL right after loses nothing of it). What a loaded host adds by
    turning the loop late is a figure: bench/reliability/run.py --only kills."""
    import time

    from robodyn.recording import writer

    clock = [10_000_000_000]

    class FakeTime:  # the writer's clock only; everything else as it is
        def __getattr__(self, name):
            return getattr(time, name)

        def monotonic_ns(self):
            return clock[0]

    monkeypatch.setattr(writer, "time", FakeTime())
    meta = {"run_id": "r1", "driver": DESC, "rate_hz": 1000.0, "robot": {"name": "panda"}}
    w = RecordingWriter(tmp_path / "r1.mcap", meta, WIDTH, "zstd", block_ms=20.0)
    seq = np.arange(1, 11, dtype=np.uint64)
    w.append(seq, seq * 1e-3, seq.astype(np.int64), np.full(10, 2, np.uint8), np.zeros((10, WIDTH)))
    assert w.buffered == 10 and not w.block_due(clock[0] + 19_999_999) and w.block_due(clock[0] + 20_000_000)
    w.flush_block()
    assert w.buffered == 0 and not w.block_due(clock[0] + 10 ** 12)  # nothing buffered: nothing due
    crashed = load_recording(tmp_path / "r1.mcap")  # never closed, as after a SIGKILL
    assert crashed.truncated and crashed.samples == 10 and crashed.seq.tolist() == seq.tolist()


def test_index_entries_are_atomic_versioned_and_never_replace_newer_ones(tmp_path):
    from robodyn.recording import RecordingIndex, build_index, index_path, read_index, write_index

    write(tmp_path / "a.mcap", np.arange(1, 1001))
    write(tmp_path / "b.mcap", np.arange(1, 501))
    write(tmp_path / "c.mcap", np.arange(1, 301), close=False)  # unfinished: the recorder's to repair
    row = build_index(tmp_path / "a.mcap")  # what the worker does for a file without an entry
    assert (row["samples"], row["lost"], row["status"]) == (1000, 0, "completed")
    assert row["duration_s"] == pytest.approx(0.999)
    # with the digest of the closing summary the page shows (read from the footer, not the samples)
    assert (row["summary"]["recorded_samples"], row["summary"]["status"]) == (1000, "completed")
    assert read_index(tmp_path / "a.mcap") == row and not list(tmp_path.glob(".*.tmp"))
    assert build_index(tmp_path / "c.mcap")["samples"] == 300 and read_index(tmp_path / "c.mcap") is None
    index = RecordingIndex(tmp_path)
    index.load()
    assert [r["status"] for r in index.page(0, 10)] == ["completed", "indexing", "indexing"]
    assert index.missing == [tmp_path / "b.mcap", tmp_path / "c.mcap"]
    # keyed by file name (what recording_info opens), whatever id the file carries
    index.put({"id": "r1", "path": str(tmp_path / "b.mcap"), "status": "aborted"})  # the recorder's entry
    index.put({"id": "r1", "path": str(tmp_path / "b.mcap"), "status": "completed"}, only_if_indexing=True)
    assert index.get("b")["status"] == "aborted" and len(index) == 3
    # an entry of another format version, or not JSON, or huge, is no entry: the file is re-indexed
    # (version 1 entries have no summary digest: rebuilt once at start rather than shown without it)
    for text in ('{"index_version": 99, "id": "a"}', '{"index_version": 1, "id": "a"}', "{", " " * 70_000):
        index_path(tmp_path / "a.mcap").write_text(text)
        assert read_index(tmp_path / "a.mcap") is None
    write_index(tmp_path / "a.mcap", row)
    assert read_index(tmp_path / "a.mcap")["samples"] == 1000


def test_copies_of_a_recording_are_listed_once_each_under_their_own_names(tmp_path):
    """The id of a listed recording is its file's name (what `recording_info` opens): copies of one
    run's file under other names are rows of their own, the run id inside the file their ``run_id``,
    also when a copy's index entry was copied with it (it names the original)."""
    import shutil

    from robodyn.recording import RecordingIndex, build_index, index_path, read_index

    write(tmp_path / "a.mcap", np.arange(1, 1001))  # holds run r1
    build_index(tmp_path / "a.mcap")
    for name in ("b", "c", "d"):
        shutil.copy(tmp_path / "a.mcap", tmp_path / f"{name}.mcap")
    shutil.copy(index_path(tmp_path / "a.mcap"), index_path(tmp_path / "b.mcap"))
    index = RecordingIndex(tmp_path)
    index.load()
    assert index.missing == [tmp_path / "c.mcap", tmp_path / "d.mcap"]
    for path in index.missing:  # what the heavy-read worker does at start
        index.put(build_index(path), only_if_indexing=True)
    rows = index.page(0, 10)
    assert [(r["id"], r["run_id"], r["status"]) for r in rows] == [(n, "r1", "completed") for n in "abcd"]
    assert [r["path"] for r in rows] == [str(tmp_path / f"{n}.mcap") for n in "abcd"]
    assert read_index(tmp_path / "b.mcap")["id"] == "b"
    assert read_recording_info(tmp_path / "c.mcap")["id"] == "c"


def test_recording_files_are_private_whatever_the_umask(tmp_path):
    """A recording, its index entry, a repaired recording and the folders made for them: 0700
    folders, 0600 files, under the 0022 umask of a daemon started from a shell."""
    from robodyn.recording import build_index, index_path, repair_recording

    umask = os.umask(0o022)
    try:
        folder = tmp_path / "data" / "recordings"
        write(folder / "r1.mcap", np.arange(1, 1001))
        build_index(folder / "r1.mcap")
        write(folder / "cut.mcap", np.arange(1, 901), close=False)
        with open(folder / "cut.mcap", "ab") as fh:
            fh.write(b"\x05torn")  # a record begun, never finished
        repair_recording(folder / "cut.mcap", "test")
        made = [tmp_path / "data", folder, *folder.iterdir()]
        assert {p.name for p in made} >= {"r1.mcap", index_path(folder / "r1.mcap").name, "cut.mcap"}
        modes = {p.name: stat.S_IMODE(os.lstat(p).st_mode) for p in made}
        assert modes == {p.name: 0o700 if p.is_dir() else 0o600 for p in made}, modes
    finally:
        os.umask(umask)
