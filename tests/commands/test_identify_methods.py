"""`robodyn identify --method M` runs every method through one option set and one processing path,
and writes one result format that `validate` reads.

The data: the two-link arm moved by a Fourier excitation, torques from the independent RNEA plus
Stribeck friction (the identification models viscous + Coulomb only: an effect it lacks) and
Gaussian noise, recorded at 200 Hz with positions only (velocity and acceleration come out of the
processing). A held-out run of another excitation scores each result."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.robot.friction import stribeck
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.loader import load_model
from tests.identification.conftest import rest_to_rest_fourier

NOISE = 0.02  # N.m


def _record(path, model, seed: int) -> None:
    traj = rest_to_rest_fourier(model, seed, wf=0.8, amplitude=0.15, periods=2)
    t, q, qd, qdd, _ = traj.sample(200.0)
    tau = inverse_dynamics(model, q, qd, qdd, rotor_inertia=model.rotor_inertia)
    tau = tau + stribeck(qd, fc=np.array([0.3, 0.2]), fs=np.array([0.45, 0.3]), vs=np.array([0.05, 0.05]),
                         fv=np.array([0.05, 0.04]))
    tau = tau + NOISE * np.random.default_rng(seed + 100).normal(size=tau.shape)
    header = "t,q1,q2,tau1,tau2"
    np.savetxt(path, np.column_stack([t, q, tau]), delimiter=",", header=header, comments="", fmt="%.10g")


def write_recordings(directory):
    """An identification and a held-out recording of the two-link arm (CSV, positions and torques)."""
    model = load_model("twolink")
    ident, held = directory / "ident.csv", directory / "held.csv"
    if not ident.exists():
        _record(ident, model, 3)
        _record(held, model, 4)
    return ident, held


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    return write_recordings(tmp_path_factory.mktemp("twolink"))


SHARED = ["--robot", "twolink", "--cutoff", "8", "--friction", "coulomb-viscous", "--json"]


@pytest.fixture(scope="module")
def results(recordings, tmp_path_factory):
    """ols, wso and consistent, each with the same options; method-specific ones are ignored by the others."""
    ident, _ = recordings
    out_dir = tmp_path_factory.mktemp("results")
    docs = {}
    for method in ("ols", "wso", "consistent"):
        out = out_dir / f"{method}.json"
        code = main(["identify", str(ident), *SHARED, "--method", method, "--population", "30",
                     "--iterations", "150", "--seed", "1", "--out", str(out)])
        assert code == 0
        docs[method] = json.loads(out.read_text())
    return docs


def test_every_method_shares_the_processing_and_the_format(results):
    ols = results["ols"]
    for method, doc in results.items():
        assert doc["format"] == "robodyn.identification" and doc["estimate"]["method"] == method
        assert doc["config"]["processing"] == ols["config"]["processing"]  # the same cut-off, the same steps
        assert doc["base"]["names"] == ols["base"]["names"]
        assert doc["estimate"]["rows"] == ols["estimate"]["rows"]  # the same samples
        assert [p["name"] for p in doc["estimate"]["parameters"]] == [p["name"] for p in ols["estimate"]["parameters"]]
    # the closed form reports a covariance; the others say they have none (null), not a zero
    assert all(p["std"] is not None for p in ols["estimate"]["parameters"])
    assert all(p["std"] is None for p in results["wso"]["estimate"]["parameters"])
    assert results["wso"]["metaheuristic"]["seed"] == 1 and results["wso"]["metaheuristic"]["iterations"] == 150
    assert results["consistent"]["consistent"]["feasibility"]["feasible"]


def test_methods_differ_as_their_math_says(results):
    """Eq. 14 is a convex quadratic whose minimum is OLS: WSO lands at or above it; the consistent
    fit trades a little misfit for physical parameters. Against the measured torque of the fit."""
    fit = {m: d["metrics"]["measured"]["rmse_sum"] for m, d in results.items()}
    ident = {m: d["metrics"]["identification"]["rmse_sum"] for m, d in results.items()}
    assert ident["ols"] <= ident["wso"] + 1e-9 and ident["ols"] <= ident["consistent"] + 1e-9
    assert ident["wso"] < 1.5 * ident["ols"]  # WSO converged to the neighbourhood of the minimum
    assert all(v < 0.5 for v in fit.values())  # N.m: every method explains the torque of the arm
    # the noise floor: nobody fits below the noise of two joints
    assert min(fit.values()) > 1.5 * NOISE


def test_validate_reads_every_method(results, recordings, tmp_path, capsys):
    _, held = recordings
    scores = {}
    for method, doc in results.items():
        path = tmp_path / f"{method}.json"
        path.write_text(json.dumps(doc))
        assert main(["validate", str(path), str(held), "--json"]) == 0
        scores[method] = json.loads(capsys.readouterr().out)["rmse_sum"]
    assert all(s < 0.6 for s in scores.values()), scores
    assert scores["wso"] == pytest.approx(scores["ols"], rel=0.3)


def test_method_options_live_in_groups_under_one_command(capsys):
    assert main(["identify", "--help"]) == 0
    text = capsys.readouterr().out
    for heading in ("signal processing", "metaheuristics: wso, pso, ga, icpso", "consistent:", "nn:"):
        assert heading in text
    for option in ("--cutoff", "--gap-periods", "--select", "--holdout", "--population", "--iterations", "--seed",
                   "--reference-weight", "--epochs"):
        assert option in text
    assert "stribeck" in text and "sigmoid" in text  # the friction choices of every method


def test_stepwise_on_a_rigid_recording_runs_the_steps_its_signals_allow(recordings, tmp_path, capsys):
    """A recording without motor encoders or currents still gets the friction and link steps; the
    result names each step it skipped and the signal that was missing."""
    ident, _ = recordings
    out = tmp_path / "s.json"
    assert main(["identify", str(ident), "--robot", "twolink", "--method", "stepwise", "--cutoff", "8",
                 "--out", str(out)]) == 0
    text = out.read_text()
    skipped = {m.group(1) for m in re.finditer(r'"subsystem": "(\w+)",[^{}]*"skipped": "no motor encoder', text)}
    assert skipped == {"motor", "stiffness"}
    assert '"subsystem": "link"' in text
    capsys.readouterr()


def test_select_refuses_a_method_it_does_not_run(recordings, capsys):
    ident, _ = recordings
    assert main(["identify", str(ident), "--robot", "twolink", "--select", "--method", "wso"]) == 2
    assert "--select" in capsys.readouterr().err


def test_consistent_refuses_columns_without_a_physical_meaning(recordings, tmp_path, capsys):
    ident, _ = recordings
    code = main(["identify", str(ident), "--robot", "twolink", "--method", "consistent", "--friction", "stribeck",
                 "--cutoff", "8", "--out", str(tmp_path / "c.json")])
    assert code == 2 and "friction" in capsys.readouterr().err


def test_compare_any_methods_on_recordings(recordings, tmp_path, capsys):
    ident, held = recordings
    out = tmp_path / "cmp.json"
    assert main(["compare", str(ident), "--robot", "twolink", "--holdout", str(held), "--methods", "ols,nn,pso",
                 "--cutoff", "8", "--population", "20", "--iterations", "40", "--out", str(out)]) == 0
    table = json.loads(out.read_text())
    assert [r["method"] for r in table["rows"]] == ["ols", "nn", "pso"]
    assert table["against"] == "the measured torque" and table["inverse_crime"] is False
    rows = {r["method"]: r for r in table["rows"]}
    assert rows["ols"]["fitness_gap_to_best"] == pytest.approx(0.0, abs=1e-12)
    assert all(r["fitness"] >= rows["ols"]["fitness"] - 1e-9 for r in rows.values())
    assert "held-out trajectory" in capsys.readouterr().out
    # the last quarter of each recording held out instead of a second file
    assert main(["compare", str(ident), "--robot", "twolink", "--holdout-fraction", "0.25", "--methods", "ols,wls",
                 "--cutoff", "8", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][1]["method"] == "wls"
    # the old spelling still works, with its deprecation line
    assert main(["compare", "--ident", str(ident), "--robot", "twolink", "--heldout", str(held), "--methods", "ols",
                 "--cutoff", "8", "--json"]) == 0
    out, err = capsys.readouterr()
    deprecations = [line for line in err.splitlines() if "deprecated" in line]
    assert any("--ident:" in line for line in deprecations) and any("--heldout:" in line for line in deprecations), err
    assert "heldout_rmse" in json.loads(out)["rows"][0]  # the held-out file was used, not dropped
