"""A daemon recording read for identification goes to unnamed temporary files mapped read-only, so
memory does not grow with the recording: what it gives must be what the mcap library reads from
the same file (its StreamReader with CRC checks, decoding every block with the wire format), the
identification from it must be the one from those arrays in memory, a file cut short or failing a
check keeps every complete block, and no temporary file outlives the read, also when it fails.

Data: recordings written here with the daemon's recording writer (blocks of varying length,
the move to the start, the excitation and the settle as phases 1, 2, 3, a sequence gap); the
excitation is a Fourier trajectory of the Panda model with RNEA torques (Coulomb-viscous friction,
0.05 N.m noise), the other columns carry distinct values so that a wrong column shows.
"""

import gc
import os

import numpy as np
import pytest

import robodyn.recording.reader as reader
from robodyn.drivers.sim import SimulatedRobot
from robodyn.identification.data import IDENTIFICATION_SIGNALS, load_dataset
from robodyn.identification.pipeline import IdentificationConfig, identify
from robodyn.identification.processing import ProcessingConfig
from robodyn.identification.signals import SampledData
from robodyn.recording import STATE_TOPIC, RecordingWriter, load_recording
from robodyn.robot.loader import load_model
from robodyn.wire import packb, unpackb
from tests.identification.conftest import rest_to_rest_fourier, simulate

DESC = SimulatedRobot({"seed": 0}).describe().to_dict()
WIDTH = sum(s["width"] for s in DESC["signals"])
RATE = 1000


def columns(name):
    start = 0
    for s in DESC["signals"]:
        if s["name"] == name:
            return slice(start, start + s["width"])
        start += s["width"]
    raise KeyError(name)


def excitation(seconds=12.0):
    model = load_model("panda")
    run = simulate(model, rest_to_rest_fourier(model, 5, periods=1), rate=RATE, noise=0.05)
    n = min(run.count, int(seconds * RATE))
    return run.q[:n], run.qd[:n], run.tau[:n]


def write(path, close=True, gap=True, shuffle=False, seconds=12.0, compression="zstd"):
    """A recording of move (300 samples), excitation, settle (200); returns its blocks' arrays."""
    q, qd, tau = excitation(seconds)
    n_move, n_settle = 300, 200
    N = n_move + q.shape[0] + n_settle
    values = np.random.default_rng(1).normal(size=(N, WIDTH))  # every other column: noise of its own
    for name, x in (("q", q), ("qd", qd), ("tau", tau)):
        values[n_move:n_move + q.shape[0], columns(name)] = x
    phase = np.concatenate([np.full(n_move, 1), np.full(q.shape[0], 2), np.full(n_settle, 3)]).astype(np.uint8)
    seq = np.arange(1, N + 1, dtype=np.uint64)
    if gap:
        seq[n_move + 4000:] += 7  # seven samples the daemon lost inside the excitation
    meta = {"run_id": "r1", "driver": DESC, "rate_hz": float(RATE), "robot": {"name": "panda"},
            "trajectory": {"family": "fourier"}}
    w = RecordingWriter(path, meta, WIDTH, compression, 50.0)
    rng = np.random.default_rng(2)
    edges = np.cumsum(rng.integers(40, 70, size=N // 40))  # blocks of 40 to 69 samples, as the daemon's vary
    edges = np.concatenate([[0], edges[edges < N], [N]])
    blocks = list(zip(edges[:-1], edges[1:]))
    if shuffle:
        blocks[3], blocks[7] = blocks[7], blocks[3]
    for a, b in blocks:
        w.append(seq[a:b], seq[a:b] / RATE, seq[a:b].astype(np.int64) * 1000, phase[a:b], values[a:b])
        w.flush_block()
    if close:
        w.event({"event": "phase", "phase": "execute", "host_time_ns": 5})
        w.close({"status": "completed", "recorded_samples": N, "expected_samples": int(seq[-1])})
    return w


def reference(path):
    """What the mcap library reads: every state block before the first failing record, decoded by
    the wire format, in sequence order; and whether the footer was reached."""
    from mcap.records import Channel, Footer, Message
    from mcap.stream_reader import StreamReader

    blocks, channels, footer = [], {}, False
    with open(path, "rb") as fh:
        try:
            for rec in StreamReader(fh, validate_crcs=True, record_size_limit=1 << 30).records:
                if isinstance(rec, Channel):
                    channels[rec.id] = rec.topic
                elif isinstance(rec, Message) and channels.get(rec.channel_id) == STATE_TOPIC:
                    blocks.append(unpackb(rec.data, max_bytes=1 << 30))
                elif isinstance(rec, Footer):
                    footer = True
        except Exception:
            pass
    out = {k: np.concatenate([b[k] for b in blocks]) for k in ("seq", "robot_time", "host_time_ns", "phase", "values")}
    order = np.argsort(out["seq"], kind="stable")
    return {k: v[order] for k, v in out.items()}, footer


def assert_same_as_reference(rec, ref, names):
    assert rec.samples == ref["seq"].shape[0]
    for mine, theirs in ((rec.seq, "seq"), (rec.robot_time, "robot_time"), (rec.host_time_ns, "host_time_ns"),
                         (rec.phase, "phase")):
        assert np.array_equal(mine, ref[theirs]), theirs
    assert list(rec.signals) == names
    for name in names:
        assert np.array_equal(rec.signal(name), ref["values"][:, columns(name)]), name


def mapped_temporaries(where):
    """Files under ``where`` that this process still maps or holds open (deleted ones included)."""
    with open("/proc/self/maps") as fh:
        maps = [line for line in fh if str(where) in line]
    fds = [os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
           if os.path.exists(f"/proc/self/fd/{fd}")]
    return maps + [f for f in fds if str(where) in f]


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    import tempfile

    where = tmp_path / "user-tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def test_disk_read_is_what_the_mcap_library_reads(tmp_path, private_tmp):
    path = tmp_path / "r.mcap"
    write(path)
    ref, footer = reference(path)
    assert footer
    rec = load_recording(path, signals=IDENTIFICATION_SIGNALS, on_disk=True)
    assert_same_as_reference(rec, ref, ["q", "qd", "tau"])
    assert all(isinstance(a.base, np.memmap) or isinstance(a, np.memmap) for a in rec.signals.values())
    memory = load_recording(path, signals=IDENTIFICATION_SIGNALS)
    assert_same_as_reference(memory, ref, ["q", "qd", "tau"])
    assert not rec.truncated and rec.summary["status"] == "completed" and rec.events[0]["phase"] == "execute"
    gap_at = int(ref["seq"][300 + 3999])
    assert rec.gaps() == memory.gaps() == [(gap_at, 7)] and rec.lost == memory.lost == 7
    for phase in ("move_to_start", "execute", "settle", "idle"):
        assert rec.phase_span(phase) == memory.phase_span(phase)
    n_exec = int(np.count_nonzero(ref["phase"] == 2))
    assert rec.phase_span("execute") == (300, 300 + n_exec, n_exec)
    assert os.listdir(private_tmp) == []  # the private directory is gone while the maps live
    del rec
    gc.collect()
    assert mapped_temporaries(private_tmp) == []


def test_identification_from_the_disk_read_equals_the_arrays_in_memory(tmp_path, private_tmp):
    path = tmp_path / "r.mcap"
    write(path, gap=False)
    ref, _ = reference(path)
    keep = ref["phase"] == 2
    in_memory = SampledData(ref["robot_time"][keep], ref["values"][keep][:, columns("q")],
                            ref["values"][keep][:, columns("tau")], ref["values"][keep][:, columns("qd")])
    data = load_dataset(path)
    assert np.array_equal(data.q, in_memory.q) and np.array_equal(data.t, in_memory.t)
    model = load_model("panda")
    cfg = IdentificationConfig(method="ols", friction="coulomb-viscous",
                               processing=ProcessingConfig(q_cutoff_hz=20.0, tau_cutoff_hz=20.0))
    ours = identify(model, [data], cfg).to_dict()["estimate"]["values"]
    theirs = identify(model, [in_memory], cfg).to_dict()["estimate"]["values"]
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    assert ours.shape == theirs.shape and ours.size > 40
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12 * np.abs(theirs).max())


def test_blocks_out_of_order_come_back_sorted_from_disk(tmp_path, private_tmp):
    path = tmp_path / "o.mcap"
    write(path, shuffle=True, seconds=2.0)
    ref, _ = reference(path)
    rec = load_recording(path, signals=("tau", "q"), on_disk=True)
    assert_same_as_reference(rec, ref, ["q", "tau"])
    assert rec.gaps() == load_recording(path).gaps()


@pytest.mark.parametrize("compression", ["lz4", "none"])
def test_every_compression_the_writer_offers_reads_the_same(tmp_path, private_tmp, compression):
    path = tmp_path / "c.mcap"
    write(path, seconds=2.0, compression=compression)
    ref, footer = reference(path)
    assert footer
    assert_same_as_reference(load_recording(path, signals=("qd",), on_disk=True), ref, ["qd"])


@pytest.mark.parametrize("cut", ["torn_tail", "bad_crc"])
def test_a_damaged_file_keeps_every_complete_block(tmp_path, private_tmp, cut):
    path = tmp_path / "d.mcap"
    if cut == "torn_tail":
        write(path, close=False, seconds=2.0)
        data = path.read_bytes()
        path.write_bytes(data[:len(data) - 700])  # inside the last block, as a SIGKILL mid-write leaves it
    else:
        write(path, seconds=2.0)
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF  # a flipped bit in a chunk in the middle: its CRC no longer matches
        path.write_bytes(bytes(data))
    ref, footer = reference(path)
    assert not footer and 0 < ref["seq"].shape[0]
    for on_disk in (True, False):
        rec = load_recording(path, signals=IDENTIFICATION_SIGNALS, on_disk=on_disk)
        assert_same_as_reference(rec, ref, ["q", "qd", "tau"])
        assert rec.truncated and rec.read_error and "\n" not in rec.read_error
    assert os.listdir(private_tmp) == []


def test_a_block_of_the_same_length_but_another_layout_is_decoded_not_read_in_place(tmp_path, private_tmp):
    """Blocks are read in place when their bytes outside the arrays equal a decoded block's; one of
    the same byte length whose robot_time is int64 (another dtype, same size) must be decoded."""
    path = tmp_path / "l.mcap"
    w = write(path, close=False, seconds=1.0)
    seq = np.arange(5000, 5050, dtype=np.uint64)
    for time_dtype in (np.float64, np.int64, np.float64):
        block = {"seq": seq, "robot_time": (seq * 3).astype(time_dtype), "host_time_ns": seq.astype(np.int64),
                 "phase": np.full(50, 3, np.uint8), "values": np.full((50, WIDTH), float(time_dtype is np.int64))}
        w._mcap.add_message(w._state_ch, log_time=1, data=packb(block), publish_time=1, sequence=0)
        seq = seq + 50
    w.close({"status": "completed"})
    ref, _ = reference(path)
    rec = load_recording(path, on_disk=True)
    assert_same_as_reference(rec, ref, [s["name"] for s in DESC["signals"]])
    assert rec.robot_time.dtype == np.float64 and rec.robot_time[-100] == ref["robot_time"][-100]


def test_no_temporary_file_is_left_when_the_read_fails_midway(tmp_path, private_tmp, monkeypatch):
    path = tmp_path / "f.mcap"
    write(path, seconds=3.0)
    monkeypatch.setattr(reader, "BATCH_BYTES", 1)  # one chunk a batch: several writes to the files
    add = reader._DiskColumns.add
    calls = []

    def failing_add(self, *a):
        calls.append(1)
        if len(calls) == 5:
            raise OSError(28, "No space left on device")
        return add(self, *a)

    monkeypatch.setattr(reader._DiskColumns, "add", failing_add)
    with pytest.raises(OSError, match="No space left"):
        load_recording(path, signals=IDENTIFICATION_SIGNALS, on_disk=True)
    gc.collect()
    assert os.listdir(private_tmp) == [] and mapped_temporaries(private_tmp) == []


def test_a_file_that_is_no_recording_is_refused_in_one_line(tmp_path, private_tmp):
    path = tmp_path / "x.mcap"
    path.write_bytes(reader.MAGIC + os.urandom(5000))  # an MCAP's first bytes, then noise
    with pytest.raises(ValueError) as err:
        load_dataset(path)
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)
    with pytest.raises(ValueError) as err:
        load_recording(path, on_disk=True)
    assert str(err.value).startswith(f"{path}: not a robodyn recording") and "\n" not in str(err.value)
    assert os.listdir(private_tmp) == []
