import json

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.identification.estimators import NormalEquations, ols
from robodyn.identification.pipeline import IdentificationConfig, identify, validate
from robodyn.identification.regressor import standard_parameter_vector
from robodyn.identification.signals import SampledData
from robodyn.identification.processing import ProcessingConfig

from .conftest import FRICTION, rest_to_rest_fourier, simulate


def true_base(result, model):
    return result.base.base_values(standard_parameter_vector(model, result.base.spec, FRICTION))


def test_exact_accelerations_recover_base_parameters_to_1e6(panda_with_rotors):
    model = panda_with_rotors
    data = simulate(model, rest_to_rest_fourier(model, 1))
    cfg = IdentificationConfig(method="ols", friction="coulomb-viscous")
    result = identify(model, [data], cfg, preprocessed=True)
    truth = true_base(result, model)
    assert result.base.count == 48 + 21
    rel = np.abs(result.values - truth) / np.maximum(np.abs(truth), 1e-3 * np.abs(truth).max())
    assert rel.max() < 1e-6


def test_full_pipeline_noise_free_held_out_error_below_half_percent(panda_with_rotors):
    model = panda_with_rotors
    raw = simulate(model, rest_to_rest_fourier(model, 1))
    raw = SampledData(raw.t, raw.q, raw.tau)  # positions and torques only: the pipeline differentiates
    cfg = IdentificationConfig(method="wls", friction="coulomb-viscous",
                               processing=ProcessingConfig(q_cutoff_hz=20, tau_cutoff_hz=20))
    result = identify(model, [raw], cfg)
    held = simulate(model, rest_to_rest_fourier(model, 5))
    metrics = validate(model, result.to_dict(), [SampledData(held.t, held.q, held.tau)])
    assert metrics["relative_error_total"] <= 0.005
    assert min(metrics["correlation"]) > 0.99, metrics["correlation"]


def test_chunked_normal_equations_equal_one_big_solve(panda_with_rotors):
    model = panda_with_rotors
    data = simulate(model, rest_to_rest_fourier(model, 2), noise=0.2, seed=3)
    small = identify(model, [data], IdentificationConfig(method="ols", chunk_samples=137), preprocessed=True)
    big = identify(model, [data], IdentificationConfig(method="ols", chunk_samples=100000), preprocessed=True)
    # only the summation order differs (cond ~ 3e3)
    assert np.linalg.norm(small.values - big.values) < 1e-9 * np.linalg.norm(big.values)


def test_wls_weights_noisy_joints_down_and_irls_resists_outliers(panda_with_rotors):
    model = panda_with_rotors
    traj = rest_to_rest_fourier(model, 4)
    data = simulate(model, traj, noise=0.0)
    rng = np.random.default_rng(0)
    sigma = np.array([0.05, 0.05, 0.05, 0.05, 2.0, 0.05, 0.05])  # joint 5 is very noisy
    tau = data.tau + rng.normal(size=data.tau.shape) * sigma
    noisy = SampledData(data.t, data.q, tau, data.qd, data.qdd)
    o = identify(model, [noisy], IdentificationConfig(method="ols"), preprocessed=True)
    w = identify(model, [noisy], IdentificationConfig(method="wls"), preprocessed=True)
    truth = true_base(o, model)
    assert np.linalg.norm(w.values - truth) < 0.8 * np.linalg.norm(o.values - truth)
    assert w.estimate.weights[4] < 0.01 * w.estimate.weights[0]
    # outliers: 2 % of the samples get +-30 N.m spikes
    spiky = data.tau + rng.normal(size=data.tau.shape) * 0.05
    idx = rng.choice(data.count, size=data.count // 50, replace=False)
    spiky[idx] += rng.choice([-30.0, 30.0], size=(idx.size, 7))
    out = SampledData(data.t, data.q, spiky, data.qd, data.qdd)
    o2 = identify(model, [out], IdentificationConfig(method="ols"), preprocessed=True)
    r2 = identify(model, [out], IdentificationConfig(method="irls"), preprocessed=True)
    assert np.linalg.norm(r2.values - truth) < 0.2 * np.linalg.norm(o2.values - truth)


def test_statistics_give_residuals_without_keeping_rows():
    rng = np.random.default_rng(1)
    W = rng.normal(size=(600, 5))
    tau = rng.normal(size=(200, 3))
    ne = NormalEquations(3, 5)
    ne.add(W, tau)
    theta = rng.normal(size=5)
    direct = ((tau - (W @ theta).reshape(200, 3)) ** 2).sum(axis=0)
    assert np.allclose(ne.joint_rss(theta), direct)
    est = ols(ne)
    assert np.allclose(est.theta, np.linalg.lstsq(W, tau.ravel(), rcond=None)[0])


def test_rank_deficient_excitation_is_fitted_where_excited_and_says_what_to_do(panda_with_rotors):
    """Joints 3..7 never move: the fit is the least-squares one in the excited directions (its
    predictions those of numpy's lstsq on the same rows), and a note names what is not identified."""
    from robodyn.identification.pipeline import base_rows

    model = panda_with_rotors
    traj = rest_to_rest_fourier(model, 1)
    traj.a[2:] = 0.0  # joints 3..7 never move
    traj.b[2:] = 0.0
    data = simulate(model, traj)
    for method in ("ols", "wls"):
        result = identify(model, [data], IdentificationConfig(method=method), preprocessed=True)
        est = result.estimate
        assert est.rank < len(est.theta)
        note = next(n for n in est.notes if n.startswith("excitation: the data do not excite"))
        assert f"{len(est.theta) - est.rank} of the {len(est.theta)} parameter directions" in note
        assert "richer excitation" in note and np.all(np.isfinite(est.theta)) and np.all(np.isfinite(est.std))
    W = result.base.base_regressor(base_rows(model, data, result.config.spec))
    tau = data.tau.ravel()
    ols_result = identify(model, [data], IdentificationConfig(method="ols"), preprocessed=True)
    lstsq = np.linalg.lstsq(W, tau, rcond=None)[0]
    assert np.allclose(W @ ols_result.estimate.theta, W @ lstsq, atol=1e-6 * np.abs(tau).max())


def test_bad_recordings_are_named(panda_with_rotors, tmp_path):
    model = panda_with_rotors
    data = simulate(model, rest_to_rest_fourier(model, 1))
    with pytest.raises(ValueError, match="only 20 samples"):
        identify(model, [SampledData(data.t[:20], data.q[:20], data.tau[:20])])
    tau = data.tau.copy()
    tau[77, 3] = np.nan
    with pytest.raises(ValueError, match="tau: NaN or infinite value at sample 77"):
        SampledData(data.t, data.q, tau)
    with pytest.raises(ValueError, match="recording 0: has 6 joints"):
        identify(model, [SampledData(data.t, data.q[:, :6], data.tau[:, :6])])
    with pytest.raises(ValueError, match="friction: expected one of"):
        IdentificationConfig(friction="lugre")
    with pytest.raises(ValueError, match="cutoff_hz: must be > 0 Hz"):
        ProcessingConfig(cutoff_hz=-5)


@pytest.mark.parametrize("field, value, says", [
    ("trim_s", -0.5, "trim_s: must be >= 0.0"), ("trim_s", float("nan"), "trim_s: must be >= 0.0"),
    ("min_velocity", -1, "min_velocity: must be >= 0.0"), ("rate_hz", 0, "rate_hz: must be > 0.0"),
    ("average_period_s", -2.0, "average_period_s: must be > 0.0"), ("filter_order", 0, "filter_order: must be >= 1"),
    ("rloess_iterations", -1, "rloess_iterations: must be >= 0"), ("jitter_tolerance", -0.1, "jitter_tolerance"),
    ("rloess_span", 1.0, "rloess_span: a fraction"), ("rloess_span", 0.0, "rloess_span: a fraction"),
    ("trim_s", True, "trim_s: must be"),
])
def test_processing_values_without_meaning_are_refused_naming_the_field(field, value, says):
    with pytest.raises(ValueError, match=says):
        ProcessingConfig(**{field: value})


def test_processing_values_at_their_limits_are_accepted():
    c = ProcessingConfig(trim_s=0.0, min_velocity=0.0, rate_hz=1e-3, average_period_s=0.5, filter_order=1,
                         rloess_iterations=0, jitter_tolerance=0.0, rloess_span=0.02)
    assert (c.trim_s, c.min_velocity, c.filter_order, c.rloess_span) == (0.0, 0.0, 1, 0.02)
    assert ProcessingConfig(min_velocity=None, rate_hz=None, average_period_s=None, rloess_span=None).rate_hz is None


def _write_csv(path, data, with_velocity=False, drop=None):
    n = data.dof
    cols = {"t": data.t[:, None], **{f"q{j + 1}": data.q[:, j:j + 1] for j in range(n)}}
    if with_velocity:
        cols.update({f"qd{j + 1}": data.qd[:, j:j + 1] for j in range(n)})
    cols.update({f"tau{j + 1}": data.tau[:, j:j + 1] for j in range(n)})
    if drop:
        cols.pop(drop)
    header = ",".join(cols)
    np.savetxt(path, np.hstack(list(cols.values())), delimiter=",", header=header, comments="")


def test_cli_identify_and_validate_from_csv(panda_with_rotors, tmp_path, capsys):
    model = panda_with_rotors
    ident = simulate(model, rest_to_rest_fourier(model, 1), noise=0.05, seed=1)
    held = simulate(model, rest_to_rest_fourier(model, 8), noise=0.05, seed=2)
    _write_csv(tmp_path / "ident.csv", ident, with_velocity=True)
    _write_csv(tmp_path / "held.csv", held)
    out = tmp_path / "result.json"
    # the panda built-in has zero nominal rotor inertia; identification does not need it
    assert main(["identify", str(tmp_path / "ident.csv"), "--robot", "panda", "--out", str(out), "--cutoff", "20",
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["base_count"] == 69 and summary["estimate"]["rank"] == 69
    doc = json.loads(out.read_text())
    assert doc["provenance"]["recordings"] == [str(tmp_path / "ident.csv")]
    assert doc["config"]["processing"]["cutoff_hz"] == 20
    assert main(["validate", str(out), str(tmp_path / "held.csv"), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["relative_error_total"] < 0.02


def test_cli_reports_a_missing_column(tmp_path, capsys, panda_with_rotors):
    model = panda_with_rotors
    data = simulate(model, rest_to_rest_fourier(model, 1))
    _write_csv(tmp_path / "bad.csv", data, drop="tau4")
    assert main(["identify", str(tmp_path / "bad.csv"), "--robot", "panda"]) == 2
    err = capsys.readouterr().err
    assert "3 tau columns for 7 joints" in err and "Traceback" not in err
