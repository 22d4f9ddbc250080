"""Per-recording weights of a stacked fit (identification/recording_weights.py), on data whose answer is known.

Two trajectories of the twolink arm, one measured with 40 times the torque noise of the other
(RNEA torques with Coulomb-viscous friction, the identifier's model class: the parameters are known,
so the weighting's effect on them can be measured; the noise is the only thing that differs).

- The default (inverse residual variance) weighs each recording by the inverse of its residual
  variance after the unweighted fit (recomputed here from the processed data), and its parameters
  are close to the quiet recording's own, far closer than the equal-weight fit's, which the noisy
  recording pulls; it predicts a third, noise-free trajectory better. With the weights ignored the
  two fits would coincide.
- Explicit weights are relative (1,1 is the equal fit, 2,2 too) and reach the estimate as weights.
- The command line takes --recording-weights, reports each recording's weight and error, and
  refuses a weight count that does not match the recordings in one line.
"""

import json

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.identification.methods import identification_document
from robodyn.identification.friction import FrictionColumns
from robodyn.identification.pipeline import IdentificationConfig, identify, predict_processed, validate
from robodyn.identification.processing import process_windows
from robodyn.identification.recording_weights import check_spec, normalise
from robodyn.robot.loader import load_model
from tests.identification.conftest import FRICTION, rest_to_rest_fourier, simulate

QUIET, NOISY = 0.01, 0.4
RATE = 200


def recording(model, seed, noise):
    friction = {k: v[: model.dof] for k, v in FRICTION.items()}
    d = simulate(model, rest_to_rest_fourier(model, seed, amplitude=0.3, periods=3), rate=RATE, noise=noise,
                 seed=seed, friction=friction)
    return d.__class__(d.t, d.q, d.tau, d.qd)  # a recording: qdd is not given


@pytest.fixture(scope="module")
def arm():
    model = load_model("twolink")
    data = [recording(model, 11, QUIET), recording(model, 12, NOISY)]
    exact = recording(model, 13, 0.0)  # a third trajectory, no noise: the truth to predict
    return model, data, exact


def fit(model, data, weights, method="ols"):
    return identify(model, data, IdentificationConfig(method=method, recording_weights=weights))


def test_inverse_variance_finds_the_noise_ratio_and_trusts_the_quiet_recording(arm):
    model, data, exact = arm
    weighted = fit(model, data, "inverse-variance")
    equal = fit(model, data, "equal")
    quiet_only = fit(model, data[:1], "equal")
    w = np.asarray(weighted.config.recording_weights)
    assert w.shape == (2, model.dof)
    # each weight is the inverse of that recording's residual variance after the unweighted stacked
    # OLS fit (on the processed torque the fit uses), normalised to a mean of one per sample per joint
    var = []
    for d in data:
        r = [p.data.tau - predict_processed(model, equal.base, equal.values, p.data)
             for p in process_windows(d, equal.config.processing, columns=FrictionColumns())]
        var.append(np.mean(np.concatenate(r) ** 2, axis=0))
    var = np.array(var)
    rows = np.array([d.count for d in data], float)[:, None]
    expected = (1 / var) / ((rows / var).sum(0) / rows.sum())
    assert np.allclose(w, expected, rtol=0.02), (w, expected)
    # processing errors (filter, differentiation) are common to both: the ratio is well below the
    # noise variance ratio, but the noisy recording still counts several times less
    assert np.all(w[0] > 5 * w[1])
    # the weighted estimate is (almost) the quiet recording's own; the equal one is not
    scale = np.abs(quiet_only.values) + 1e-3
    off_weighted = np.max(np.abs(weighted.values - quiet_only.values) / scale)
    off_equal = np.max(np.abs(equal.values - quiet_only.values) / scale)
    assert off_weighted < 0.3 * off_equal, (off_weighted, off_equal)
    # and it predicts a new, noise-free trajectory better than the equal-weight fit (most of what
    # is left there is the processing's, common to both: measured 0.029 against 0.031 N.m)
    err = {name: validate(model, r.to_dict(), [exact])["rmse_sum"] for name, r in
           (("weighted", weighted), ("equal", equal))}
    assert err["weighted"] < 0.95 * err["equal"], err


def test_explicit_weights_are_relative_and_reach_the_estimate(arm):
    model, data, _ = arm
    equal = fit(model, data, "equal")
    assert np.allclose(fit(model, data, [1.0, 1.0]).values, equal.values, rtol=1e-9, atol=1e-12)
    assert np.allclose(fit(model, data, [2.0, 2.0]).values, equal.values, rtol=1e-9, atol=1e-12)
    # the default's own weights given back (per recording and joint, scaled): the same estimate
    default = fit(model, data, "inverse-variance")
    w = np.asarray(default.config.recording_weights)
    given = fit(model, data, (3.0 * w).tolist())
    assert np.allclose(given.values, default.values, rtol=1e-9, atol=1e-12)
    assert not np.allclose(given.values, equal.values, rtol=1e-3)
    # one number per recording weighs all its joints: the quiet one 50 times the noisy one
    scalar = fit(model, data, [50.0, 1.0])
    assert np.allclose(scalar.config.recording_weights[0], 50 * np.asarray(scalar.config.recording_weights[1]))
    # WLS and IRLS run on the weighted rows as well: each differs from its equal-weight fit
    for method in ("wls", "irls"):
        assert not np.allclose(fit(model, data, "inverse-variance", method).values,
                               fit(model, data, "equal", method).values, rtol=1e-3)


def test_weight_option_checks():
    assert check_spec("equal") == "equal"
    assert check_spec("1,2.5") == [[1.0], [2.5]]
    for bad in ("0,1", "-1,1", "heavy", "nan,1"):
        with pytest.raises(ValueError, match="recording_weights"):
            check_spec(bad)
    assert np.allclose(normalise(np.array([[2.0], [1.0]]), np.array([[100], [300]])), [[1.6], [0.8]])


def test_cli_reports_each_recordings_weight_and_refuses_a_wrong_count(arm, tmp_path, capsys):
    model, data, _ = arm
    paths = []
    for k, d in enumerate(data):
        p = tmp_path / f"run{k}.csv"
        header = ["t"] + [f"q{j + 1}" for j in range(model.dof)] + [f"qd{j + 1}" for j in range(model.dof)] + \
            [f"tau{j + 1}" for j in range(model.dof)]
        np.savetxt(p, np.column_stack([d.t, d.q, d.qd, d.tau]), delimiter=",", header=",".join(header), comments="")
        paths.append(str(p))
    out = tmp_path / "result.json"
    assert main(["identify", *paths, "--robot", "twolink", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("weight per joint") == 2
    doc = json.loads(out.read_text())
    per = doc["metrics"]["per_recording"]
    assert per[0]["weight"][0] > 5 * per[1]["weight"][0]
    assert doc["config"]["recording_weights"] == [p["weight"] for p in per]
    assert main(["identify", *paths, "--robot", "twolink", "--out", str(out), "--recording-weights", "equal"]) == 0
    capsys.readouterr()
    assert json.loads(out.read_text())["metrics"]["per_recording"][0]["weight"] is None
    code = main(["identify", *paths, "--robot", "twolink", "--out", str(out), "--recording-weights", "1,2,3"])
    err = capsys.readouterr().err
    assert code != 0 and "recording_weights: 3 weights given for 2 recordings" in err
    lines = [line for line in err.strip().splitlines() if not line.startswith("note:")]  # CSVs without phase
    assert len(lines) == 1 and "Traceback" not in err


def test_identification_document_reports_weights_per_recording(arm):
    model, data, _ = arm
    doc, _, _ = identification_document(model, data, IdentificationConfig(), "wls", sources=["a", "b"])
    per = doc["metrics"]["per_recording"]
    assert [p["recording"] for p in per] == ["a", "b"]
    assert per[0]["weight"][1] > per[1]["weight"][1]
    # the noisier recording is fitted worse, in torque units (every sample counted once)
    assert per[1]["rmse_sum"] > 10 * per[0]["rmse_sum"]
