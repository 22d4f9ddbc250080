"""Model selection on a periodic excitation holds out phases of the period, not contiguous blocks.

Data: the UR-like realistic plant (identification/realistic_logs.py: a simulated plant unlike the
model -- inertial parameters off, Stribeck friction with position ripple, an elastic shoulder,
drive gains off, quantised noisy currents), driven along its excitation for two periods. With
contiguous blocks a held-out block's motion comes back a period later and stays in the fit, so its
score is in-sample; the selection must hold out the same phase of every period instead, and say so.
"""

import numpy as np
import pytest

from robodyn.identification.pipeline import IdentificationConfig
from robodyn.identification.realistic_logs import realistic_log
from robodyn.identification.selection import select
from robodyn.identification.signals import repeat_period
from robodyn.robot.loader import load_model

FOLDS = 5


@pytest.fixture(scope="module")
def selected():
    log = realistic_log("ur", 1, duration=6.0)  # the excitation runs two periods of 3 s
    data = log.data
    result = select(load_model("ur5e"), [data], IdentificationConfig(), folds=FOLDS,
                    frictions=("coulomb-viscous",), rotor_inertia=(False,), methods=("ols",))
    return data, result.selection


def test_every_fold_holds_out_one_phase_of_every_period_and_the_fit_never_sees_it(selected):
    data, sel = selected
    period = repeat_period(data.t, data.q)
    assert period == pytest.approx(3.0, abs=0.05)
    elapsed = data.t - data.t[0]
    phase = (elapsed % period) / period
    cycle = np.floor(elapsed / period + 1e-9).astype(int)
    periods = set(cycle[elapsed < 2 * period - 1e-6])
    assert len(sel["folds"]) == FOLDS
    seen = np.zeros(data.count, int)
    for fold in sel["folds"]:
        held = np.zeros(data.count, bool)
        for r, s, e in fold["held_out"]:
            assert r == 0
            held[s:e] = True
        seen += held
        # the held-out block reaches into every period ...
        assert periods <= set(cycle[held]), fold
        # ... and its phases are absent from the fit (the complement), a period away or not
        lo, hi = phase[held].min(), phase[held].max()
        assert hi - lo < 1.0 / FOLDS + 0.01
        fit = ~held
        assert not np.any((phase[fit] > lo + 0.005) & (phase[fit] < hi - 0.005)), fold
    assert (seen == 1).all()  # the blocks are disjoint and cover every sample


def test_the_report_names_the_phase_blocks(selected):
    _, sel = selected
    assert "by phase of each recording's repeat period" in sel["cross_validation"]
    assert "contiguous blocks over" not in sel["cross_validation"]
    assert all("phase" in f["name"] for f in sel["folds"])
    assert sel["chosen"]["mean"] is not None and np.isfinite(sel["chosen"]["mean"])
