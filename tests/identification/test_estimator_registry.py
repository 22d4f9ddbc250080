"""The estimator table (identification.names.ESTIMATORS) is the one list of the pipeline's
estimators: a new one, registered with one call, is offered by `identify --method`, is a
`--select` candidate, is accepted by the daemon's job check, is refitted by the prediction
intervals and runs; and every registered estimator is reachable from each of those places."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from robodyn.cli import build_parser, main
from robodyn.identification import names
from robodyn.identification.estimators import Estimate, estimate
from robodyn.identification.names import ESTIMATORS, EstimatorSpec, register_estimator, unregister_estimator
from robodyn.identification.pipeline import IdentificationConfig, identify
from robodyn.identification.regressor import regressor

from .conftest import rest_to_rest_fourier, simulate

TOY = "fixed-ridge"
LAMBDA = 50.0  # absolute Tikhonov strength on the unscaled normal equations


def fixed_ridge(ne, names=None) -> Estimate:
    """Ridge with a fixed strength: theta = (A + lambda I)^-1 b, no covariance."""
    A, b, cc = ne.total()
    theta = np.linalg.solve(A + LAMBDA * np.eye(A.shape[0]), b)
    rss = ne.joint_rss(theta)
    p = theta.size
    return Estimate(TOY, theta, np.full((p, p), np.nan), np.sqrt(rss / np.maximum(ne.rows, 1)), p, float("nan"),
                    int(ne.rows.sum()), float(np.sqrt(rss.sum() / cc)))


@pytest.fixture
def toy_estimator():
    register_estimator(EstimatorSpec(TOY, "ridge with a fixed strength (test)", fixed_ridge))
    try:
        yield TOY
    finally:
        unregister_estimator(TOY)


def _subcommand(parser: argparse.ArgumentParser, *words: str) -> argparse.ArgumentParser:
    for word in words:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    return next(a for a in parser._actions if flag in a.option_strings)


def _daemon_job_check():
    from robodyn.jobs.identification import check_config

    return check_config


def _places(name: str) -> dict[str, bool]:
    """Whether each reader of the table sees ``name``."""
    from robodyn.identification import selection
    from robodyn.identification.intervals import _config_of

    parser = build_parser()
    identify_parser = _subcommand(parser, "identify")
    method = _option(identify_parser, "--method")
    submit = _option(_subcommand(parser, "submit-identify"), "--method")
    spec = ESTIMATORS[name]
    return {
        "identify --method choices": name in method.choices,
        "identify --method help": f"{name}: {spec.description}" in method.help,
        "submit-identify --method choices": name in submit.choices,
        "--select candidates": (name in selection.candidate_methods()) == (spec.selectable and spec.candidate),
        # a selectable estimator that is not a candidate is fitted when it is --select's reference
        "--select reference": (name in selection.candidate_methods(name)) == spec.selectable,
        "--select help": (name in _option(identify_parser, "--select").help) == spec.selectable,
        "daemon job config check": _daemon_job_check()({"method": name}) is None,
        "interval refits": (_config_of(name, IdentificationConfig(method=name), 1) is not None)
        == spec.refit_for_intervals,
        "comparison": name in names.COMPARABLE and name in names.DESCRIPTIONS,
        "function": callable(spec.load()),
    }


def test_a_registered_estimator_is_offered_everywhere_and_gives_its_own_solution(toy_estimator, panda_with_rotors):
    missing = [place for place, seen in _places(toy_estimator).items() if not seen]
    assert not missing, missing
    assert _daemon_job_check()({"method": "no-such-estimator"}) is not None

    model = panda_with_rotors
    data = simulate(model, rest_to_rest_fourier(model, 1, periods=1), rate=200, noise=0.05, seed=4)
    config = IdentificationConfig(method=toy_estimator, friction="coulomb-viscous")
    result = identify(model, [data], config, preprocessed=True)
    assert result.estimate.method == toy_estimator and result.config.method == toy_estimator

    # the same solution from the RNEA data directly: base columns of the standard regressor
    W = regressor(model, data.q, data.qd, data.qdd, config.spec)[:, result.base.independent]
    tau = data.tau.reshape(-1)
    expected = np.linalg.solve(W.T @ W + LAMBDA * np.eye(W.shape[1]), W.T @ tau)
    ols = np.linalg.lstsq(W, tau, rcond=None)[0]
    assert np.linalg.norm(expected - ols) > 1e-3 * np.linalg.norm(ols)  # the strength matters here
    assert np.allclose(result.values, expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())


def test_identify_runs_a_registered_estimator_from_the_command_line(toy_estimator, tmp_path, capsys):
    from tests.commands.test_identify_methods import write_recordings

    ident, _ = write_recordings(tmp_path)
    out = tmp_path / "toy.json"
    assert main(["identify", str(ident), "--robot", "twolink", "--cutoff", "8", "--method", toy_estimator,
                 "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    doc = json.loads(out.read_text())
    assert printed["method"] == doc["estimate"]["method"] == doc["config"]["method"] == toy_estimator
    # the prediction intervals refitted it per fold (it is marked refittable), as for every estimator
    assert doc["residual_model"].get("fold_covariance") is not None


def test_every_registered_estimator_is_reachable_from_every_reader():
    assert list(ESTIMATORS) == ["ols", "wls", "irls", "ridge", "tls"]
    for name in ESTIMATORS:
        missing = [place for place, seen in _places(name).items() if not seen]
        assert not missing, (name, missing)


def test_an_estimator_missing_from_a_reader_is_caught(toy_estimator, monkeypatch):
    """The reachability check itself fails when a reader keeps its own list."""
    from robodyn.identification import selection

    monkeypatch.setattr(selection, "candidate_methods", lambda reference=None: ["ols", "wls", "ridge", "tls"])
    places = _places(toy_estimator)
    assert places["--select candidates"] is False and places["--select reference"] is False


def test_an_estimator_that_is_no_candidate_is_fitted_on_every_fold_when_it_is_the_reference():
    """IRLS is selectable but not a default candidate: `--select --method irls` scores it (as the
    reference, on every fold), plain `--select` does not fit it."""
    from robodyn.identification import selection
    from robodyn.identification.realistic_logs import realistic_log
    from robodyn.identification.processing import ProcessingConfig
    from robodyn.robot.loader import load_model

    assert not ESTIMATORS["irls"].candidate and ESTIMATORS["irls"].selectable
    model, data = load_model("ur5e"), realistic_log("ur", 2, duration=4.0).data
    fixed = ProcessingConfig(cutoff_hz=8.0)
    options = dict(folds=3, frictions=("coulomb-viscous",), rotor_inertia=(True,))
    plain = selection.select(model, [data], IdentificationConfig(processing=fixed), **options).selection
    asked = selection.select(model, [data], IdentificationConfig(method="irls", processing=fixed), **options).selection
    assert "irls" not in {c["method"] for c in plain["candidates"]}
    irls = [c for c in asked["candidates"] if c["method"] == "irls"]
    assert len(irls) == 1 and len(irls[0]["fold_scores"]) == 3 and irls[0]["mean"] is not None
    # the reference is what identify --method irls fits: IRLS or the consistent fit, as validated
    assert asked["reference"]["method"] in ("irls", "consistent")


def test_registration_refuses_a_taken_or_malformed_name():
    for bad in ("ols", "wso", "stepwise", "Bad Name", ""):
        with pytest.raises(ValueError, match="estimator name"):
            register_estimator(EstimatorSpec(bad, "x", fixed_ridge))
    assert list(ESTIMATORS) == ["ols", "wls", "irls", "ridge", "tls"]


def test_estimate_refuses_an_unknown_estimator_in_one_line():
    with pytest.raises(ValueError, match=r"method: unknown estimator 'nope'; expected one of \['ols'"):
        estimate("nope", lambda: iter(()), 2, 3)
