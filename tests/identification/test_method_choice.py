"""The default identification tries the physically consistent fit beside its least-squares
estimator on the held-out last quarter that judges the cut-off, and fits with the pair that
predicts it best; an explicitly named method is never replaced. Data: a plant unlike the model (the
Panda's inertias perturbed, Stribeck friction the model's columns lack, noise)."""

import numpy as np
import pytest

from robodyn.identification import selection
from robodyn.identification.config import IdentificationConfig
from robodyn.identification.methods import identification_result
from robodyn.identification.signals import SampledData
from robodyn.robot.loader import load_model
from tests.identification.test_gravity_check import motion
from tests.identification.test_torque_sign import plant_torque


@pytest.fixture(scope="module")
def recording():
    model = load_model("panda")
    q, qd, qdd = motion(model, seconds=40.0, rate=200.0)
    t = np.arange(q.shape[0]) / 200.0
    return model, SampledData(t, q, plant_torque(model, q, qd, qdd))


def test_the_default_fits_with_the_candidate_that_predicted_the_held_out_quarter_best(recording):
    pytest.importorskip("cvxpy")
    model, data = recording
    result = identification_result(model, [data], IdentificationConfig(), "wls", choose_method=True)[0]
    choice = result.config.processing.cutoff_choice
    scored = [c for c in choice["candidates"] if c["rmse_sum"] is not None]
    assert {c["method"] for c in scored} == {"wls", "consistent"}
    assert len(scored) == 2 * len({c["cutoff_hz"] for c in scored})  # every cut-off with both fits
    best = min(scored, key=lambda c: c["rmse_sum"])
    assert (result.method, result.config.processing.cutoff_hz) == (best["method"], best["cutoff_hz"])
    assert any(n.startswith(f"method: {best['method']} chosen") for n in result.estimate.notes)


def test_a_named_method_is_kept_and_only_its_cut_off_judged(recording):
    model, data = recording
    result = identification_result(model, [data], IdentificationConfig(), "wls")[0]
    choice = result.config.processing.cutoff_choice
    assert result.method == "wls" and {c["method"] for c in choice["candidates"]} == {"wls"}
    assert result.config.processing.cutoff_hz == min(
        (c for c in choice["candidates"] if c["rmse_sum"] is not None), key=lambda c: c["rmse_sum"])["cutoff_hz"]


def test_without_the_sdp_extra_the_default_says_the_consistent_fit_was_not_compared(recording, monkeypatch):
    model, data = recording
    monkeypatch.setattr(selection, "consistent_fit_available", lambda: False)
    result = identification_result(model, [data], IdentificationConfig(), "wls", choose_method=True)[0]
    assert result.method == "wls"
    assert any("physically consistent fit was not compared" in n and "robodyn[sdp]" in n
               for n in result.estimate.notes)


def test_select_starts_from_the_defaults_own_choice(recording):
    """--select's reference (kept unless beaten by more than one standard error) is what the
    default fits: its cut-off and its choice between least squares and the consistent fit."""
    pytest.importorskip("cvxpy")
    model, data = recording
    default = identification_result(model, [data], IdentificationConfig(), "wls", choose_method=True)[0]
    chosen = selection.select(model, [data], IdentificationConfig(), frictions=("coulomb-viscous",),
                              rotor_inertia=(True,))
    reference = chosen.selection["reference"]
    assert (reference["method"], reference["cutoff_hz"]) == (default.method, default.config.processing.cutoff_hz)
    assert {c["method"] for c in chosen.selection["candidates"]} >= {"wls", "consistent"}
