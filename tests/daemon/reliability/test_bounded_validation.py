"""Bounded validation: the limit check works in fixed-size windows, its cost is known
from the trajectory's parameters before anything is evaluated, and the daemon refuses, with a
`limit_violation` naming the budget, a request whose check would exceed it.

Before: a 38 KB request (7000 s, 300 harmonics) made the daemon try to allocate 31 GiB
(`internal: MemoryError`); a 6.5 KB one (600 s, 50 harmonics) took the main process to 2.4 GiB.
The full-size figures (peak RSS of the largest accepted request) are in bench/reliability/run.py.
"""

import time
import tracemalloc

import msgpack
import numpy as np
import pytest

from robodyn.daemon import protocol as P
from robodyn.limits import ValidationWithdrawn, check_trajectory, validation_cost
from robodyn.robot.loader import load_model
from robodyn.trajectory import (FourierPolyTrajectory, FourierTrajectory, PointToPointTrajectory,
                                SampledTrajectory, SequenceTrajectory)
from tests.daemon.conftest import READY_Q, DaemonProcess, excitation

from .scenarios import rss_kib

PANDA = load_model("panda")


def fourier(duration: float, harmonics: int, amplitude: float = 1e-3, seed: int = 0) -> FourierTrajectory:
    rng = np.random.default_rng(seed)
    return FourierTrajectory(2 * np.pi / duration, READY_Q, rng.normal(0, amplitude, (7, harmonics)),
                             rng.normal(0, amplitude, (7, harmonics)))


def trajectories():
    rng = np.random.default_rng(3)
    p2p = PointToPointTrajectory(READY_Q, READY_Q + 0.5, 0.3)  # fast: breaks velocity, acceleration, jerk
    t = np.linspace(0, 2, 41)
    sampled = SampledTrajectory(t, READY_Q + 0.2 * np.outer(np.sin(np.pi * t / 2) ** 2, np.ones(7)))
    back = PointToPointTrajectory(READY_Q + 0.3, READY_Q, 1.7)
    return {
        "fourier, far over its limits": fourier(3.0, 4, amplitude=0.8, seed=1),
        "fourier_poly within limits": FourierPolyTrajectory(2 * np.pi / 2.5, READY_Q, rng.normal(0, 0.02, (7, 3)),
                                                            rng.normal(0, 0.02, (7, 3)), periods=2),
        "point_to_point too fast": p2p,
        "sampled": sampled,
        "sequence": SequenceTrajectory([PointToPointTrajectory(READY_Q, READY_Q + 0.3, 1.7), back]),
    }


@pytest.mark.parametrize("name", list(trajectories()))
def test_the_report_is_the_same_for_any_window(name):
    """Windows change memory, never the verdict: every violation (limit, joint, first time,
    worst value), the utilisation and the sample count are identical."""
    traj = trajectories()[name]
    whole = check_trajectory(PANDA, traj, rate_hz=500, current_q=READY_Q, window=10 ** 9).to_dict()
    for window in (7, 64, 333):
        assert check_trajectory(PANDA, traj, rate_hz=500, current_q=READY_Q, window=window).to_dict() == whole
    if name.startswith(("fourier,", "point_to_point")):
        assert not whole["ok"] and whole["violations"]


def test_a_withdrawn_check_stops_at_its_next_window(monkeypatch):
    """An abort of a submission under validation used to leave its check running to the end in
    the background (minutes of CPU for a long run). The check asks before every window whether it
    is still wanted: withdrawn after the third, it evaluates exactly three windows and raises;
    never withdrawn, its report is the one without the question."""
    traj = fourier(2.0, 3, amplitude=0.02)
    windows = []
    evaluate = type(traj).evaluate
    monkeypatch.setattr(type(traj), "evaluate", lambda self, t: (windows.append(t.shape[0]), evaluate(self, t))[1])
    with pytest.raises(ValidationWithdrawn, match="after 300 of 4001 samples"):
        check_trajectory(PANDA, traj, rate_hz=1000, window=100, withdrawn=lambda: len(windows) >= 3)
    assert windows == [100, 100, 100]
    windows.clear()
    asked = check_trajectory(PANDA, traj, rate_hz=1000, window=100, withdrawn=lambda: False).to_dict()
    assert asked == check_trajectory(PANDA, traj, rate_hz=1000, window=100).to_dict() and len(windows) == 2 * 41


def test_validation_memory_does_not_grow_with_the_duration():
    """The one-pass check held every sample, sine and cosine at once: its peak grew with the
    duration (600 s x 50 harmonics: 2.4 GiB). Now the peak is one window's."""
    peaks = {}
    for duration in (15.0, 60.0):
        traj = fourier(duration, 50)
        tracemalloc.start()
        report = check_trajectory(PANDA, traj, rate_hz=1000, check_torque=False)
        peaks[duration] = tracemalloc.get_traced_memory()[1] / 2 ** 20
        tracemalloc.stop()
        assert report.samples_checked == validation_cost(traj, 1000).samples
    assert peaks[60.0] < 64 and peaks[60.0] < 1.3 * peaks[15.0], peaks


def test_the_cost_is_known_before_evaluating(monkeypatch):
    traj = fourier(7000.0, 300)  # the red team's request

    def evaluated(*_args, **_kwargs):
        raise AssertionError("the cost was computed by evaluating the trajectory")

    for name in ("evaluate", "sample"):  # from the parameters alone: no sample may be computed
        monkeypatch.setattr(type(traj), name, evaluated)
    cost = validation_cost(traj, 1000)
    assert cost.samples == 14_000_001 and cost.terms == 7 * 300 + 12 * 7
    assert cost.evaluations > 3e10 and 256 <= cost.window <= 65_536


def test_a_request_over_the_validation_budget_is_refused_with_a_limit(tmp_path, figure):
    d = DaemonProcess(tmp_path, arm=False)
    try:
        pid = d.client.status()["daemon"]["pid"]
        before_kib = rss_kib(pid)
        doc = fourier(7000.0, 300).to_dict(robot="panda")
        frame = msgpack.packb({"v": 1, "id": 5, "cmd": "submit_run", "args": {"robot": "panda", "trajectory": doc}},
                              use_bin_type=True)
        t0 = time.monotonic()
        reply = d.client.call_raw(frame)
        answered_s = time.monotonic() - t0
        err = reply["error"]
        assert err["code"] == P.E_LIMIT and err["details"]["limit"] == "validation_cost", err
        assert err["details"]["field"] == "args.trajectory" and "max_validation_cost" in err["message"]
        # refused from the parameters: no validation was started (the daemon logs each one it starts)
        assert "validating a 7000.0 s" not in d.log_text()
        assert d.client.status()["control"]["validating_s"] is None
        grown_mib = (rss_kib(pid) - before_kib) / 1024
        assert grown_mib < 50, grown_mib
        # a request within budget goes on to the next gate (here: not armed)
        reply = d.client.call_raw(msgpack.packb({"v": 1, "id": 6, "cmd": "submit_run", "args": {
            "robot": "panda", "trajectory": excitation(20.0)}}, use_bin_type=True))
        assert reply["error"]["code"] == P.E_NOT_ARMED
        figure("7000 s x 300 harmonics (38 KB) refused from its parameters", bytes=len(frame),
               evaluations=err["details"]["value"], answered_s=round(answered_s, 3),
               main_rss_growth_mib=round(grown_mib, 1))
    finally:
        d.stop()
