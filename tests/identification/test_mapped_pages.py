"""Pages of a memory-mapped recording that processing has read go back to the kernel: the
resident set of a long recording stays a window, and the values never change."""

import mmap

import numpy as np

from robodyn.identification import mapped_pages, processing
from robodyn.identification.mapped_pages import release_rows_before
from robodyn.identification.pipeline import IdentificationConfig, identify
from robodyn.identification.processing import ProcessingConfig
from robodyn.identification.signals import SampledData
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.loader import load_model
from tests.identification.test_gravity_check import motion


def resident_kb(path) -> int:
    """The kernel's count of this process's resident pages of the file's mapping(s)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if "-" in head[0] and len(head) >= 5:
                inside = len(head) >= 6 and head[-1] == str(path)
            elif inside and line.startswith("Rss:"):
                total += int(head[1])
    return total


def test_released_rows_leave_the_resident_set_and_keep_their_values(tmp_path):
    path = tmp_path / "q.npy"
    values = np.random.default_rng(0).normal(size=(200_000, 7))
    np.save(path, values)
    q = np.asarray(np.load(path, mmap_mode="r"), float)  # as SampledData holds it: a view of the mapping
    assert float(q.sum()) == float(values.sum())  # every page read
    before = resident_kb(path)
    assert before * 1024 >= values.nbytes
    half = q.shape[0] // 2
    released = release_rows_before((q,), half)
    assert 0 < released <= half * q.strides[0] and released % mmap.PAGESIZE == 0
    after = resident_kb(path)
    assert before - after >= released // 1024 - 4  # the kernel's own count fell by what was released
    assert np.array_equal(q[half:half + 10], values[half:half + 10])  # the page holding row `half` kept
    assert np.array_equal(q, values)  # released pages read back the same values (from the page cache)


def test_arrays_that_are_not_mapped_or_not_row_ordered_are_left_alone(tmp_path):
    in_memory = np.zeros((100_000, 7))
    assert release_rows_before((in_memory, None), 50_000) == 0
    np.save(tmp_path / "q.npy", np.ones((100_000, 7)))
    mapped = np.load(tmp_path / "q.npy", mmap_mode="r")
    assert release_rows_before((mapped.T,), 5) == 0  # columns are not rows
    assert release_rows_before((mapped,), 0) == 0
    assert release_rows_before((mapped[1:],), 1) == 0  # less than a whole page


def test_identification_releases_what_it_read_and_fits_the_same(tmp_path, monkeypatch):
    model = load_model("panda")
    rate = 1000.0  # 400 s: two processing windows (processing.process_windows' 200 000 samples)
    q, qd, qdd = motion(model, seconds=400.0, rate=rate)
    t = np.arange(q.shape[0]) / rate
    tau = inverse_dynamics(model, q, qd, qdd) + np.random.default_rng(1).normal(0, 0.05, q.shape)
    for name, a in (("t", t), ("q", q), ("tau", tau)):
        np.save(tmp_path / f"{name}.npy", a)
    config = IdentificationConfig(method="ols", processing=ProcessingConfig(cutoff_hz=10.0))

    def fit():
        data = SampledData(*(np.load(tmp_path / f"{n}.npy", mmap_mode="r") for n in ("t", "q", "tau")))
        return identify(model, [data], config).values

    released = []
    original = mapped_pages.release_rows_before

    def counting(arrays, row):
        released.append(original(arrays, row))
        return released[-1]

    monkeypatch.setattr(processing, "release_rows_before", counting)
    with_release = fit()
    assert sum(released) > 0  # the windows after the first released the rows before them
    monkeypatch.setattr(processing, "release_rows_before", lambda arrays, row: 0)
    monkeypatch.setattr("robodyn.identification.signals.release_rows_before", lambda arrays, row: 0)
    assert np.array_equal(fit(), with_release)
