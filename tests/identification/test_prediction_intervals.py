"""Prediction intervals (identification/intervals.py) on data whose answer is known.

- Own-model data with known Gaussian noise (twolink, RNEA torques with Coulomb-viscous friction,
  the identifier's model class): the nominal 95 % interval covers about 95 % of a new trajectory's
  samples; evaluated with twice or half the noise, the computed coverage moves to what a Gaussian
  gives (67 % and 99.99 %).
- The interval's parts: the parameter term is w' C w of the base regressor (checked against the
  regressor directly), inflated by the AR(1) factor of the residual's lag-1 autocorrelation, plus
  the fold covariance's excess over its mean on the identification data.
- A realistic plant unlike the model (UR-like, identification/realistic_logs.py: inertial
  parameters 15 % off, Stribeck friction with position ripple and load-dependent Coulomb, an
  elastic shoulder, drive gains 7 % off, quantised noisy currents one sample late): the interval
  from out-of-fold residuals covers 90-99.9 % of the held-out rest of the run on every rigid
  joint, and so does one calibrated on a held-out stretch; validate's
  coverage is the fraction of predict's CSV rows whose measured torque lies between its
  tau_lower and tau_upper columns; the plant driven beyond the identified range of one joint
  warns for it, with the fraction of samples outside. (Another trajectory of the same plant:
  tests/identification/test_real_data_defaults.py.)
"""

import json

import numpy as np
import pytest
from scipy.stats import norm

from robodyn.cli import main
from robodyn.identification.intervals import Z, _ResidualStats, calibration, predict_with_interval
from robodyn.identification.methods import identification_document
from robodyn.identification.pipeline import IdentificationConfig, base_rows, predict
from robodyn.identification.processing import process_windows
from robodyn.identification.result import as_result
from robodyn.robot.loader import load_model
from tests.identification.conftest import FRICTION, rest_to_rest_fourier, simulate

NOISE = 0.05
RATE = 200


def run(model, seed, noise):
    friction = {k: v[: model.dof] for k, v in FRICTION.items()}
    return simulate(model, rest_to_rest_fourier(model, seed, amplitude=0.3, periods=3), rate=RATE, noise=noise,
                    seed=seed, friction=friction)


@pytest.fixture(scope="module")
def fitted():
    model = load_model("twolink")
    ident = run(model, 1, NOISE)
    raw = ident.__class__(ident.t, ident.q, ident.tau, ident.qd)  # a recording: qdd is not given
    doc, _, _ = identification_document(model, [raw], IdentificationConfig(), "wls")
    return model, doc


def test_residual_model_is_the_noise_of_a_correct_model(fitted):
    model, doc = fitted
    rm = doc["residual_model"]
    assert np.allclose(rm["residual_std"], NOISE, rtol=0.1)
    assert np.all(np.abs(rm["lag1_autocorrelation"]) < 0.1)  # white noise: no inflation to speak of
    assert np.allclose(rm["parameter_inflation"], 1.0, atol=0.25)


@pytest.mark.parametrize("noise", [NOISE, 2 * NOISE, NOISE / 2])
def test_coverage_follows_the_noise_it_is_evaluated_on(fitted, noise):
    model, doc = fitted
    held = run(model, 2, noise)
    cal = calibration(model, doc, [held.__class__(held.t, held.q, held.tau, held.qd)])
    h = np.asarray(doc["residual_model"]["residual_half_width"])
    # a Gaussian residual of std `noise` inside +- h: 2 Phi(h / noise) - 1 (h: the 95 % quantile of
    # the out-of-fold |residual|, about 1.96 NOISE here)
    expected = 2 * norm.cdf(h / noise) - 1
    inside = np.asarray(cal["inside_fraction"])
    assert cal["samples"] > 2000
    assert np.all(np.abs(inside - expected) < 0.03), (inside, expected)
    if noise == NOISE:
        assert np.all((inside > 0.93) & (inside < 0.97))


def test_interval_is_parameter_and_residual_variance(fitted):
    model, doc = fitted
    held = run(model, 3, NOISE)
    raw = held.__class__(held.t, held.q, held.tau, held.qd)
    t, measured, predicted, lower, upper = predict_with_interval(model, doc, raw)
    t2, measured2, predicted2 = predict(model, doc, raw)
    assert np.array_equal(t, t2) and np.allclose(predicted, predicted2, rtol=0, atol=1e-9)
    assert np.all(lower < predicted) and np.all(predicted < upper)
    # the parameter term from the regressor itself, at one sample (no resampling here: same grid)
    result = as_result(doc)
    base = result.base
    piece = next(process_windows(raw, result.processing, purpose="predict", columns=result.friction_columns)).data
    k = 200
    i = int(np.searchsorted(t, piece.t[k]))
    W = base_rows(model, piece.select(slice(k, k + 1)), base.spec)[:, base.independent]  # (n, P)
    C = np.asarray(doc["estimate"]["covariance"])
    rm = doc["residual_model"]
    F = np.asarray(rm["fold_covariance"])  # the jackknife covariance of the out-of-fold refits
    assert F.shape == C.shape and np.allclose(F, F.T) and np.linalg.eigvalsh(F).min() > -1e-9 * np.abs(F).max()
    # the fold term counts beyond its mean over the identification samples (the out-of-fold
    # residuals hold that much already)
    excess = np.maximum(0.0, np.einsum("jp,pq,jq->j", W, F, W) - rm["fold_variance_mean"])
    expected_half = np.sqrt(Z[0.95] ** 2 * (np.einsum("jp,pq,jq->j", W, C, W) * rm["parameter_inflation"] + excess)
                            + np.square(rm["residual_half_width"]))
    assert np.allclose((upper[i] - lower[i]) / 2, expected_half, rtol=1e-6)
    # neither parameter term is negligible by construction: both are there
    assert np.all(np.einsum("jp,pq,jq->j", W, C, W) > 0) and np.all(np.einsum("jp,pq,jq->j", W, F, W) > 0)


def test_lag1_autocorrelation_and_inflation_of_an_ar1_residual():
    rng = np.random.default_rng(0)
    r = np.zeros((20000, 2))
    for k in range(1, r.shape[0]):
        r[k] = np.array([0.8, 0.0]) * r[k - 1] + rng.normal(size=2)
    stats = _ResidualStats(2)
    for part in np.array_split(r, 4):  # pieces: the lag never crosses a gap
        stats.add(part)
    rho = stats.lag1()
    assert abs(rho[0] - 0.8) < 0.02 and abs(rho[1]) < 0.02
    assert stats.pairs == r.shape[0] - 4


def _write_csv(path, d):
    n = d.dof
    header = ",".join(["t"] + [f"{s}{j + 1}" for s in ("q", "qd", "tau") for j in range(n)])
    np.savetxt(path, np.column_stack([d.t, d.q, d.qd, d.tau]), delimiter=",", header=header, comments="")


@pytest.fixture(scope="module")
def ur_plant():
    """One excitation of the UR-like realistic plant (not the model: see the module doc)."""
    from robodyn.simulation.plant import default_initial_q
    from robodyn.identification.realistic_logs import default_plant, run_plant, ur_like
    from robodyn.trajectory import FourierTrajectory

    model = load_model("ur5e")
    base = rest_to_rest_fourier(model, 4, wf=1.2, amplitude=0.08, periods=1)
    traj = FourierTrajectory(base.wf, default_initial_q(model), base.a, base.b, periods=base.periods)
    signals = run_plant("ur5e", traj, 500.0, 7, default_plant("ur5e"))
    data, _, _ = ur_like(signals, 4, "ur5e", gain_seed=7)
    return model, data


ELASTIC = 1  # the plant's elastic shoulder (realistic_logs.default_plant): no rigid model follows it


def test_out_of_fold_interval_covers_held_out_motion_of_a_plant_unlike_the_model(ur_plant):
    """The residual model from out-of-fold residuals (5 contiguous blocks of the first 60 %: one
    period, nothing repeats), evaluated on the last 40 % of the run (never fitted): 90-99.9 % of the
    samples of every rigid joint inside the nominal 95 % interval (measured 98.1-99.6 %, 95.0-99.4 %
    before the fold covariance's term; an interval holding every sample would say nothing). The
    in-sample residual understates the error on unseen motion; a residual model calibrated on
    held-out data (identify --holdout: the 60-80 % stretch) covers the last 20 % within the same
    band. The elastic shoulder is left out: its error on new motion exceeds anything the rigid fit
    saw (measured 78-80 %, docs/identification.md)."""
    model, data = ur_plant
    T = data.t[-1] - data.t[0]
    a, b = data.t[0] + 0.6 * T, data.t[0] + 0.8 * T
    ident, calibrate, later = data.select(data.t < a), data.select((data.t >= a) & (data.t < b)), \
        data.select(data.t >= b)
    doc, _, _ = identification_document(model, [ident], IdentificationConfig(), "wls")
    rm = doc["residual_model"]
    assert rm["out_of_fold"] and not rm["calibrated_on_held_out"]
    # out of fold never fits better than in sample here: the spread grows
    assert np.all(np.asarray(rm["residual_std"]) >= np.asarray(rm["in_sample_residual_std"]))
    rigid = [j for j in range(model.dof) if j != ELASTIC]
    inside = np.asarray(calibration(model, doc, [data.select(data.t >= a)])["inside_fraction"])[rigid]
    assert np.all((inside >= 0.90) & (inside <= 0.999)), inside
    calibrated, _, _ = identification_document(model, [ident], IdentificationConfig(), "wls", holdout=[calibrate])
    assert calibrated["residual_model"]["calibrated_on_held_out"]
    inside = np.asarray(calibration(model, calibrated, [later])["inside_fraction"])[rigid]
    assert np.all((inside >= 0.90) & (inside <= 0.999)), inside


def test_on_a_realistic_plant_validate_counts_what_predict_writes(ur_plant, tmp_path, capsys):
    model, data = ur_plant
    half = data.t[0] + 0.6 * (data.t[-1] - data.t[0])
    _write_csv(tmp_path / "ident.csv", data.select(data.t < half))
    _write_csv(tmp_path / "held.csv", data.select(data.t >= half))
    result, out = tmp_path / "r.json", tmp_path / "p.csv"
    assert main(["identify", str(tmp_path / "ident.csv"), "--robot", "ur5e", "--out", str(result)]) == 0
    capsys.readouterr()
    assert main(["validate", str(result), str(tmp_path / "held.csv"), "--json"]) == 0
    cal = json.loads(capsys.readouterr().out)["interval"]
    assert main(["predict", str(result), str(tmp_path / "held.csv"), "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    header = out.read_text().splitlines()[0].split(",")
    table = np.loadtxt(out, delimiter=",", skiprows=1)
    col = {name: k for k, name in enumerate(header)}
    n = model.dof
    pick = lambda stem: table[:, [col[f"{stem}{j + 1}"] for j in range(n)]]  # noqa: E731
    m, lo, hi = pick("tau_measured"), pick("tau_lower"), pick("tau_upper")
    counted = ((m >= lo) & (m <= hi)).mean(0)
    assert np.all(lo <= pick("tau_predicted")) and np.all(pick("tau_predicted") <= hi)
    # the CSV holds 9 significant digits: a sample on a bound may flip
    assert np.allclose(counted, cal["inside_fraction"], atol=3 / table.shape[0])
    assert np.allclose(counted, summary["interval"]["inside_fraction"], atol=3 / table.shape[0])
    assert len(cal["inside_fraction"]) == n and cal["samples"] == table.shape[0]


def test_several_recordings_give_one_result_with_each_ones_fit():
    """Two trajectories of the same arm, one with twice the noise: one fit, and each recording's
    own error against its measured torque (the noisier one's RMSE about twice the other's)."""
    model = load_model("twolink")
    quiet, noisy = (run(model, seed, noise) for seed, noise in ((5, NOISE), (6, 2 * NOISE)))
    quiet, noisy = (d.__class__(d.t, d.q, d.tau, d.qd) for d in (quiet, noisy))
    doc, _, _ = identification_document(model, [quiet, noisy], IdentificationConfig(), "wls",
                                        sources=["quiet.csv", "noisy.csv"])
    per = doc["metrics"]["per_recording"]
    assert [p["recording"] for p in per] == ["quiet.csv", "noisy.csv"]
    ratio = np.asarray(per[1]["rmse"]) / np.asarray(per[0]["rmse"])
    assert np.all(np.abs(ratio - 2.0) < 0.25), ratio
    # the stacked residual model holds both: between the two noise levels
    assert np.all((np.asarray(doc["residual_model"]["residual_std"]) > NOISE)
                  & (np.asarray(doc["residual_model"]["residual_std"]) < 2 * NOISE))


def test_a_result_without_a_residual_model_gets_a_note_not_an_interval(fitted):
    from robodyn.identification.intervals import calibration_lines

    model, doc = fitted
    old = {k: v for k, v in doc.items() if k != "residual_model"}
    held = run(model, 2, NOISE)
    assert calibration(model, old, [held]) is None
    assert calibration_lines(None) == ["note: the result stores no residual model (made before intervals were "
                                       "stored): no interval"]


def test_a_plant_run_beyond_the_identified_range_warns_for_the_joint_that_leaves_it(ur_plant):
    """The UR-like plant driven along the identification excitation with the wrist-2 joint's
    Fourier coefficients tripled: that joint's positions leave the identified range on a large
    share of the samples (the excitation's range is about a third of the new one), and the result
    says so in one warning line naming it, with the fraction outside."""
    from robodyn.simulation.plant import default_initial_q
    from robodyn.identification.coverage import result_warnings
    from robodyn.identification.realistic_logs import default_plant, run_plant, ur_like
    from robodyn.trajectory import FourierTrajectory

    model, data = ur_plant
    doc, _, _ = identification_document(model, [data], IdentificationConfig(), "wls")
    base = rest_to_rest_fourier(model, 4, wf=1.2, amplitude=0.08, periods=1)
    wide = 4  # wrist_2
    a, b = base.a.copy(), base.b.copy()
    a[wide] *= 3.0
    b[wide] *= 3.0
    traj = FourierTrajectory(base.wf, default_initial_q(model), a, b, periods=base.periods)
    moved, _, _ = ur_like(run_plant("ur5e", traj, 500.0, 7, default_plant("ur5e")), 5, "ur5e", gain_seed=7)
    warnings = result_warnings(model, doc, [moved])
    by_joint = {w["joint"]: w for w in warnings}
    name = model.joint_names[wide]
    assert name in by_joint, warnings
    # the fraction outside is that of the raw positions beyond the identified ones (processing
    # barely moves a position), a large share
    q, q_ident = moved.q[:, wide], data.q[:, wide]
    expected = float(np.mean((q < q_ident.min()) | (q > q_ident.max())))
    assert expected > 0.3
    assert by_joint[name]["outside"]["q"]["fraction"] == pytest.approx(expected, abs=0.02)
    assert by_joint[name]["message"].startswith(f"warning: joint {name}:") and "outside the identified range" in \
        by_joint[name]["message"]
    # the same run as identified warns about nothing
    assert result_warnings(model, doc, [data]) == []
