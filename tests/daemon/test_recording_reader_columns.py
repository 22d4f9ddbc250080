"""The recovering loader reads blocks straight into one array per kept signal: what it returns
must not depend on the sample count the summary states (exact capacity), on growth (a file cut
short states none), on the order the blocks come in, or on which signals are kept."""

import numpy as np

from robodyn.recording import RecordingWriter, load_recording
from robodyn.recording.reader import _expected_samples

from .test_recording import DESC, WIDTH

SIGNALS = [s["name"] for s in DESC["signals"]]


def write(path, blocks, close=True, stated=None):
    meta = {"run_id": "r1", "driver": DESC, "rate_hz": 1000.0, "robot": {"name": "panda"}}
    w = RecordingWriter(path, meta, WIDTH, "zstd", 50.0)
    rng = np.random.default_rng(3)
    every = []
    for seq in blocks:
        seq = np.asarray(seq, dtype=np.uint64)
        values = rng.normal(size=(seq.shape[0], WIDTH))
        every.append((seq, values))
        w.append(seq, seq * 1e-3, seq.astype(np.int64) * 7, np.full(seq.shape[0], 2, np.uint8), values)
        w.flush_block()
    if close:
        n = sum(s.shape[0] for s, _ in every)
        w.close({"status": "completed", "recorded_samples": n if stated is None else stated, "expected_samples": n})
    seq = np.concatenate([s for s, _ in every])
    values = np.concatenate([v for _, v in every])
    order = np.argsort(seq, kind="stable")
    return seq[order], values[order]


def columns_of(values, name):
    start = 0
    for s in DESC["signals"]:
        if s["name"] == name:
            return values[:, start:start + s["width"]]
        start += s["width"]
    raise KeyError(name)


def check(rec, seq, values, names):
    assert rec.samples == seq.shape[0]
    assert np.array_equal(rec.seq, seq)
    assert np.array_equal(rec.robot_time, seq * 1e-3)
    assert np.array_equal(rec.host_time_ns, seq.astype(np.int64) * 7)
    assert list(rec.signals) == names
    for name in names:
        assert np.array_equal(rec.signal(name), columns_of(values, name)), name


def test_the_stated_count_is_read_from_the_summary_and_every_signal_comes_back(tmp_path):
    seq, values = write(tmp_path / "a.mcap", [np.arange(1, 401), np.arange(401, 1501), np.arange(1501, 1601)])
    with open(tmp_path / "a.mcap", "rb") as fh:
        assert _expected_samples(fh) == 1600
        assert fh.tell() == 0
    check(load_recording(tmp_path / "a.mcap"), seq, values, SIGNALS)


def test_kept_signals_are_the_same_columns_and_only_those(tmp_path):
    seq, values = write(tmp_path / "a.mcap", [np.arange(1, 701), np.arange(701, 1301)])
    rec = load_recording(tmp_path / "a.mcap", signals=("tau", "q", "qd"))
    check(rec, seq, values, [n for n in SIGNALS if n in ("q", "qd", "tau")])
    assert set(rec.units) == {"q", "qd", "tau"}


def test_a_file_stating_no_count_or_too_small_a_count_grows_to_every_sample(tmp_path):
    blocks = [np.arange(1 + 900 * k, 901 + 900 * k) for k in range(5)]  # 4500 samples, well past 1024
    seq, values = write(tmp_path / "cut.mcap", blocks, close=False)
    with open(tmp_path / "cut.mcap", "rb") as fh:
        assert _expected_samples(fh) == 0
    check(load_recording(tmp_path / "cut.mcap"), seq, values, SIGNALS)
    seq, values = write(tmp_path / "small.mcap", blocks, stated=1000)
    check(load_recording(tmp_path / "small.mcap", signals=("q",)), seq, values, ["q"])


def test_blocks_out_of_order_come_back_in_sequence_order(tmp_path):
    seq, values = write(tmp_path / "o.mcap", [np.arange(501, 1001), np.arange(1, 501), np.arange(1001, 1101)])
    check(load_recording(tmp_path / "o.mcap", signals=("q", "tau")), seq, values, ["q", "tau"])
