"""Model selection on a long recording fits and scores each fold on one processed sample in k.

Data: the UR-like realistic plant (identification/realistic_logs.py: a simulated plant unlike the
model -- inertial parameters off, Stribeck friction with position ripple, an elastic shoulder,
drive gains off, quantised noisy currents), 4 s of one excitation at 500 Hz, with the cap on a
fold's fit samples lowered so that it counts as long. Checked:

- a thinned cache's fit pieces are every k-th sample of the full-rate processing, and another
  friction-column set's signals derived from them are those of the same samples; predictions are
  never thinned;
- how many samples a fold keeps: the fewest k that brings its largest fit (after decimation)
  within the cap, and the memory a fold is counted to need follows;
- select on a recording over the cap fits every candidate on about a k-th of each fold's rows and
  scores it on exactly the held-out samples whose index is a multiple of k, and says so.
"""

import math

import numpy as np
import pytest

from robodyn.identification import fold_budget, selection
from robodyn.identification.folds import blocked_folds
from robodyn.identification.friction import FrictionColumns
from robodyn.identification.pipeline import IdentificationConfig, ProcessedCache
from robodyn.identification.processing import ProcessingConfig
from robodyn.identification.realistic_logs import realistic_log
from robodyn.robot.loader import load_model

CONFIG = IdentificationConfig(processing=ProcessingConfig(cutoff_hz=8.0))
CANDIDATES = dict(folds=3, frictions=("coulomb-viscous", "stribeck"), rotor_inertia=(True, False),
                  methods=("ols", "wls"))


@pytest.fixture(scope="module")
def plant():
    return load_model("ur5e"), realistic_log("ur", 2, duration=4.0).data


def test_a_thinned_cache_holds_every_kth_processed_sample_with_its_own_friction_signals(plant):
    _, data = plant
    full, thin = ProcessedCache(), ProcessedCache(3)
    for columns in (None, FrictionColumns("sigmoid", np.full(6, 0.05)), FrictionColumns("stribeck", np.full(6, 0.1))):
        whole = full.pieces(data, CONFIG.processing, columns=columns)
        kept = thin.pieces(data, CONFIG.processing, columns=columns)
        assert len(kept) == len(whole) and sum(p.data.count for p in whole) > 1000
        for a, b in zip(whole, kept):
            for name in ("t", "q", "qd", "qdd", "tau", "coulomb", "friction_extra"):
                x, y = getattr(a.data, name), getattr(b.data, name)
                if x is None:
                    assert y is None, name
                else:
                    np.testing.assert_array_equal(y, x[::3], err_msg=name)
    # a prediction is scored at the measured samples: never thinned
    predicted = thin.pieces(data, CONFIG.processing, purpose="predict")
    unthinned = full.pieces(data, CONFIG.processing, purpose="predict")
    np.testing.assert_array_equal(predicted[0].data.q, unthinned[0].data.q)
    with pytest.raises(ValueError, match="every: a positive whole number"):
        ProcessedCache(0)


def test_a_fold_keeps_the_fewest_thinning_that_brings_its_fit_within_the_cap(plant, monkeypatch):
    model, _ = plant
    plan = blocked_folds([400_000], 5)  # each fold fits 320,000 samples
    assert fold_budget.selection_thinning(plan, CONFIG) == math.ceil(320_000 / fold_budget.SELECTION_SAMPLES)
    monkeypatch.setattr(fold_budget, "SELECTION_SAMPLES", 80_000)
    assert fold_budget.selection_thinning(plan, CONFIG) == 4
    monkeypatch.setattr(fold_budget, "SELECTION_SAMPLES", 79_999)
    assert fold_budget.selection_thinning(plan, CONFIG) == 5
    decimated = IdentificationConfig(processing=ProcessingConfig(cutoff_hz=8.0, decimation=2))
    assert fold_budget.selection_thinning(plan, decimated) == 3  # 160,000 after decimation
    averaged = IdentificationConfig(processing=ProcessingConfig(cutoff_hz=8.0, average_period_s=10.0))
    assert fold_budget.selection_thinning(plan, averaged) == 1  # the fit is one averaged period
    monkeypatch.setattr(fold_budget, "SELECTION_SAMPLES", 10**9)
    assert fold_budget.selection_thinning(plan, CONFIG) == 1
    # a fold is counted to keep a k-th of its rows
    assert fold_budget.fold_memory(model, CONFIG, plan, 4)[0] == 80_000 * 6 * 90 * 8


def _counted_select(model, data, monkeypatch):
    """select's result, the rows each fold's candidates were fitted on and the held-out samples each
    fold scored (what validate_many was asked to keep)."""
    fitted, scored = [], []
    prepare_column_subsets, validate_many = selection.prepare_column_subsets, selection.validate_many

    def counting_prepare(*args, **kwargs):
        out = prepare_column_subsets(*args, **kwargs)
        fitted.append(int(out[0][1].rows[0]))
        return out

    def counting_validate(model, prep, thetas, held, keep, **kwargs):
        scored.append(int(sum(m.sum() for m in keep)))
        return validate_many(model, prep, thetas, held, keep, **kwargs)

    monkeypatch.setattr(selection, "prepare_column_subsets", counting_prepare)
    monkeypatch.setattr(selection, "validate_many", counting_validate)
    result = selection.select(model, [data], CONFIG, workers=1, **CANDIDATES)
    monkeypatch.undo()
    return result, fitted, scored


def test_select_over_the_cap_fits_and_scores_one_sample_in_k(plant, monkeypatch):
    model, data = plant
    whole, fitted_whole, scored_whole = _counted_select(model, data, monkeypatch)
    assert whole.selection["thinning"] == 1 and "one processed sample in" not in whole.selection["cross_validation"]

    monkeypatch.setattr(fold_budget, "SELECTION_SAMPLES", 500)  # each of 3 folds fits about 1,333 samples: k = 3
    thinned, fitted, scored = _counted_select(model, data, monkeypatch)
    sel = thinned.selection
    assert sel["thinning"] == 3
    assert "one processed sample in 3 (at most 500 fit samples a fold)" in sel["cross_validation"]
    # the fit: a third of each fold's processed rows (each piece thinned from its first sample)
    assert len(fitted) == len(fitted_whole)
    for k, n in zip(fitted, fitted_whole):
        assert n / 3 <= k <= n / 3 + 3
    # the score: exactly the held-out samples whose index is a multiple of 3
    expected = [sum(len(range(s + (-s) % 3, e, 3)) for _, s, e in f["held_out"]) for f in sel["folds"]]
    assert len(scored) == len(scored_whole) and set(scored) <= set(expected) and sum(scored) > 0
    assert sorted(set(scored)) == sorted(set(expected))
    # and the refit of the chosen candidate used every sample
    assert thinned.estimate.rows // model.dof >= 3 * max(fitted)
