"""An "auto" cut-off is chosen (a spectrum of the recording) only when some filter in use follows
it: with q and tau cut-offs of their own and the velocity differentiated from q, nothing does.
Small synthetic 1 kHz recordings generated below (sines plus noise; no model involved)."""

import numpy as np
import pytest

from robodyn.identification import processing
from robodyn.identification.processing import ProcessingConfig, cutoff_needed, process, resolve_processing
from robodyn.identification.signals import SampledData, choose_cutoff


def recording(with_qd: bool, gap: bool = False, n: int = 6000) -> SampledData:
    rng = np.random.default_rng(4)
    t = np.arange(n) / 1000.0
    if gap:
        t[n // 2:] += 0.05  # 50 periods without samples
    w = 2 * np.pi * np.array([0.5, 0.8])
    q = 0.3 * np.sin(t[:, None] * w) + rng.normal(scale=1e-4, size=(n, 2))
    qd = 0.3 * w * np.cos(t[:, None] * w) + rng.normal(scale=1e-3, size=(n, 2))
    tau = 2.0 * np.sin(t[:, None] * w) + rng.normal(scale=0.05, size=(n, 2))
    return SampledData(t, q, tau, qd if with_qd else None)


def forbid_choice(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("choose_cutoff ran although no filter uses its result")
    monkeypatch.setattr(processing, "choose_cutoff", refuse)


@pytest.mark.parametrize("velocity, with_qd", [("differentiate", True), ("differentiate", False), ("auto", False)])
def test_no_spectrum_when_the_velocity_is_differentiated(monkeypatch, velocity, with_qd):
    forbid_choice(monkeypatch)
    cfg = ProcessingConfig(q_cutoff_hz=20.0, tau_cutoff_hz=15.0, velocity=velocity)
    data = recording(with_qd)
    assert not cutoff_needed(cfg, [data])
    assert resolve_processing(cfg, [data]) is cfg
    got = process(data, cfg)
    assert got.config.cutoff_hz == "auto" and got.config.cutoff_choice is None
    assert not any(st["step"] == "cutoff" for st in got.steps)
    # the same data as with any number in cutoff_hz: it filters nothing here
    ref = process(data, ProcessingConfig(q_cutoff_hz=20.0, tau_cutoff_hz=15.0, velocity=velocity, cutoff_hz=3.0))
    for name in ("t", "q", "qd", "qdd", "tau"):
        assert np.array_equal(getattr(got.data, name), getattr(ref.data, name)), name


@pytest.mark.parametrize("cfg, velocity", [
    (dict(q_cutoff_hz=20.0, tau_cutoff_hz=15.0), "measured"),  # the measured velocity follows cutoff_hz
    (dict(q_cutoff_hz=20.0, tau_cutoff_hz=15.0), "auto"),  # ... when the data carry one
    (dict(tau_cutoff_hz=15.0), "differentiate"),  # q follows cutoff_hz
    (dict(q_cutoff_hz=20.0), "differentiate"),  # tau follows cutoff_hz
])
def test_the_choice_runs_and_is_used_when_a_filter_follows_it(cfg, velocity):
    data = recording(with_qd=True)
    config = ProcessingConfig(velocity=velocity, **cfg)
    assert cutoff_needed(config, [data])
    chosen = resolve_processing(config, [data])
    expected = choose_cutoff([data], config)
    assert chosen.cutoff_hz == expected["cutoff_hz"] and chosen.cutoff_choice == expected
    got = process(data, config)
    ref = process(data, ProcessingConfig(velocity=velocity, **cfg, cutoff_hz=expected["cutoff_hz"]))
    for name in ("q", "qd", "qdd", "tau"):
        assert np.array_equal(getattr(got.data, name), getattr(ref.data, name)), name


def test_one_recording_with_measured_velocity_among_several_needs_the_choice():
    cfg = ProcessingConfig(q_cutoff_hz=20.0, tau_cutoff_hz=15.0)
    assert not cutoff_needed(cfg, [recording(False), recording(False)])
    assert cutoff_needed(cfg, [recording(False), recording(True)])
    assert not cutoff_needed(ProcessingConfig(q_cutoff_hz=20.0, qd_cutoff_hz=None, tau_cutoff_hz=15.0),
                             [recording(True)])


def test_edges_at_a_gap_follow_the_filters_in_use(monkeypatch):
    # a 1 Hz measured-velocity filter is not in the chain when q is differentiated: half a period
    # of the slowest filter used (20 Hz) is dropped at the gap's edges, 25 samples at 1 kHz
    forbid_choice(monkeypatch)
    data = recording(with_qd=True, gap=True)
    steps = process(data, ProcessingConfig(q_cutoff_hz=20.0, qd_cutoff_hz=1.0, tau_cutoff_hz=40.0,
                                           velocity="differentiate")).steps
    split = next(st for st in steps if st["step"] == "split_at_gaps")
    assert split["edge_samples_dropped"] == 25 and split["gap_count"] == 1
    assert split["gaps"][0]["seconds"] == pytest.approx(0.051)
    used = process(data, ProcessingConfig(q_cutoff_hz=20.0, qd_cutoff_hz=1.0, tau_cutoff_hz=40.0,
                                          velocity="measured")).steps
    assert next(st for st in used if st["step"] == "split_at_gaps")["edge_samples_dropped"] == 500
