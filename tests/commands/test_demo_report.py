"""The demo's friction table with the simulator's per-joint viscous friction (the plant adds its
viscous term per joint, so `fv` arrives as a list), the README image option, and the progress of
steps 6 and 7 (the passes of the regressor say how far they got, on a fake clock)."""

import numpy as np

from robodyn.cli import main
from robodyn.demo import _every, friction_errors, predicted_torque, torque_shares
from robodyn.identification.base_params import base_parameters
from robodyn.identification.pipeline import base_rows, predict_processed
from robodyn.identification.regressor import ColumnSpec
from robodyn.identification.signals import SampledData
from robodyn.robot.loader import load_model
from tests.clocks import TickingClock


def _points(fc, fv, joints):
    speeds = [v for v in np.linspace(-1.0, 1.0, 21) if v != 0.0]
    return [[(v, fc * np.sign(v) + fv * v) for v in speeds] for _ in range(joints)]


def test_friction_errors_take_a_per_joint_viscous_truth():
    truth = {"fc": [0.3, 0.3], "fs": [0.4, 0.4], "vs": [0.05, 0.05], "qd0": 0.01, "fv": [0.05, 0.08]}
    fitted = {"fc": [0.3, 0.3], "fs": [0.4, 0.4], "vs": [0.05, 0.05]}
    rows = friction_errors(fitted, truth, _points(0.3, 0.05, 2))
    # joint 1's curve is the truth's apart from the Stribeck hump; joint 2's true fv differs, so its
    # curve error is larger: the per-joint value is the one used
    assert rows[0]["level_error"] < rows[1]["level_error"]
    scalar = dict(truth, fv=0.05)
    assert friction_errors(fitted, scalar, _points(0.3, 0.05, 2))[0]["level_error"] == rows[0]["level_error"]


def test_demo_documents_the_plot_option(capsys):
    try:
        main(["demo", "--help"])
    except SystemExit:
        pass
    assert "--plot" in capsys.readouterr().out


# --------------------------------------------------------------------------- steps 6 and 7 say how far they got


def test_a_step_reports_at_most_once_per_period_of_its_clock():
    now = [100.0]
    lines = []
    report = _every(10.0, lines.append, clock=lambda: now[0])
    for k in range(1, 31):  # 30 calls 1 s apart: t = 101 .. 130
        now[0] = 100.0 + k
        report(lambda waited: f"after {waited:.0f} s")
    assert lines == ["after 10 s", "after 20 s", "after 30 s"]


def _processed(model, count: int, seed: int = 3) -> SampledData:
    rng = np.random.default_rng(seed)
    n = model.dof
    return SampledData(np.arange(count) * 1e-3, rng.normal(size=(count, n)), rng.normal(size=(count, n)),
                       rng.normal(size=(count, n)), rng.normal(size=(count, n)),
                       tau_friction=rng.normal(0.0, 0.3, size=(count, n)))


def test_the_torque_shares_say_how_far_they_got_and_equal_one_pass_over_all_samples():
    model = load_model("twolink")
    base = base_parameters(model, ColumnSpec())
    d = _processed(model, 1234)
    est = np.random.default_rng(4).normal(size=base.count)
    lines = []
    # the clock reads 4, 8, 12, ...: the report is made at 4, then read once per chunk of 100
    share = torque_shares(model, base, est, d, _every(10.0, lines.append, clock=TickingClock(4.0)), chunk=100)
    # chunks 1..13 report at t = 8, 12, ..., 56; a line at 16, 28, 40 and 52 (12 s apart, after chunks 3, 6, 9, 12)
    assert lines == [f"  torque shares: {300 * k} of 1234 samples after {12 * k} s" for k in (1, 2, 3, 4)]
    # the formula of one pass over all rows (the last chunk is a partial one)
    W = base_rows(model, d, base.spec).reshape(d.count, model.dof, -1)[:, :, base.independent]
    rms = np.sqrt(np.mean((d.tau + d.tau_friction) ** 2, axis=0))
    expected = np.max(np.sqrt(np.mean((W * est) ** 2, axis=0)) / rms[:, None], axis=0)
    assert share.shape == (base.count,)
    np.testing.assert_allclose(share, expected, rtol=1e-12, atol=0)


def test_the_held_out_prediction_says_how_far_it_got_and_equals_one_pass():
    model = load_model("twolink")
    base = base_parameters(model, ColumnSpec())
    d = _processed(model, 950, seed=5)
    est = np.random.default_rng(6).normal(size=base.count)
    lines = []
    pred = predicted_torque(model, base, est, d, _every(10.0, lines.append, clock=TickingClock(6.0)), "held-out",
                            chunk=100)
    # clock: made at 6, chunks 1..10 read at 12, ..., 66; lines at 18 (chunk 2), 30 (4), 42 (6), 54 (8)
    # and 66 (the last, partial chunk)
    assert lines == ([f"  held-out: {200 * k} of 950 samples after {12 * k} s" for k in (1, 2, 3, 4)]
                     + ["  held-out: 950 of 950 samples after 60 s"])
    np.testing.assert_allclose(pred, predict_processed(model, base, est, d) + d.tau_friction, rtol=1e-12, atol=1e-12)
