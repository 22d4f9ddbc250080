"""Phase blocks keep --select from choosing a friction term that only fits this excitation's
repeats; contiguous blocks choose it, and it predicts a fresh trajectory worse.

Data: plant. The twolink arm's rigid-body dynamics with its rotor inertia and Coulomb + viscous +
offset friction (all in the candidates' model class), plus what no candidate has: a stiff spot on
joint 1 -- above q1 = SPOT rad the joint's friction has a Stribeck bump of DELTA N·m (breakaway
excess sgn(qd) exp(-(qd/VS)^2)); below it, none. Torque noise NOISE N·m, seeded.

The excitation repeats PERIODS times. Joint 1 reverses exactly twice per period, at the top of its
swing (phase 1/4, on the stiff spot: bump) and at the bottom (phase 3/4, off it: no bump), each in
the middle of one of the FOLDS phase blocks. Candidates: Coulomb-viscous (the default) and Stribeck
(one more column per joint, which can only put the same bump at every reversal of a joint).

Why the outcomes are forced, not lucky:

- Contiguous blocks (FOLDS blocks over FOLDS periods: one whole period each): every held-out period
  comes back in the fit, so each fold's score is an in-sample residual. The Stribeck candidate
  nests the default, and half a bump at each reversal leaves less of the top one's bump
  unexplained than none, on every fold alike (the periods differ only by noise, so the standard
  error is tiny): Stribeck wins by far more than one standard error and is chosen.
- Phase blocks: the fold holding out phases [4/6, 5/6) (the bottom reversal) fits Stribeck on the
  other phases, whose only joint-1 reversal is the top one with its bump, so it puts a whole bump
  where the plant has none; the fold holding out the top reversal fits on the bottom one, finds no
  bump and does as well as the default; the other folds hold out no joint-1 reversal, where the
  two differ only through the other friction terms (a little better with Stribeck, whose fit saw
  the bump at both reversals and biased them less). The misplaced whole bump outweighs that, so
  Stribeck's mean is worse than the default's, and the default is kept.
- Fresh trajectory (other periods and amplitudes, inside the identified range of joint 1, reversing
  below the stiff spot): the plant has no bump there; the Stribeck fit adds one at every reversal.

Measured (this file, when it was added): phase blocks, fold of the bottom reversal 0.101 N·m
(default) against 0.159 (Stribeck), means 0.090 against 0.096: default kept; contiguous blocks,
means 0.1106 against 0.1004 with a standard error of 0.0002: Stribeck chosen. On the fresh
trajectory the default predicts 0.063 N·m, the Stribeck choice 0.086 (sum over the two joints of
the per-joint RMSE against the simulated measured torque; noise floor 2 x NOISE = 0.04).
"""

import numpy as np
import pytest

from robodyn.identification import folds, selection
from robodyn.identification.pipeline import IdentificationConfig, validate
from robodyn.identification.signals import SampledData, repeat_period
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.loader import load_model

RATE = 400.0  # Hz
PERIOD = 4.0  # s: 1600 samples, a phase block of 266 (>= folds.MIN_BLOCK)
PERIODS = FOLDS = 6  # phase blocks centred on phases 1/4 and 3/4, where joint 1 reverses
SPOT = 1.70  # rad: joint 1's stiff spot starts here (the excitation's top reversal is at 1.84)
DELTA = 0.8  # N·m: its Stribeck bump
VS = 0.05  # rad/s: the bump's velocity scale (one of friction.SCALE_GRID)
FRICTION = {"coulomb": [0.5, 0.3], "viscous": [0.3, 0.2], "offset": [0.05, -0.03]}
NOISE = 0.02  # N·m
CANDIDATES = {"frictions": ("coulomb-viscous", "stribeck"), "rotor_inertia": (True,), "methods": ("wls",)}


def _plant(model, t, q, qd, qdd, seed):
    tau = inverse_dynamics(model, q, qd, qdd, rotor_inertia=model.rotor_inertia, friction=FRICTION)
    on_spot = 1.0 / (1.0 + np.exp(-(q[:, 0] - SPOT) / 0.02))
    tau[:, 0] += DELTA * on_spot * np.sign(qd[:, 0]) * np.exp(-np.square(qd[:, 0] / VS))
    return SampledData(t, q, tau + np.random.default_rng(seed).normal(0.0, NOISE, tau.shape))


def _sines(t, period, centre, terms):
    """q, qd, qdd of centre + sum a sin(k w t) over (k, a). Odd about t = 0 and every period, so
    the zero-phase filters' odd extension at a recording edge there is the motion itself: no
    edge transient at the recording's ends (which would make the first and last block differ)."""
    w = 2 * np.pi / period
    q = centre + sum(a * np.sin(k * w * t) for k, a in terms)
    qd = sum(a * k * w * np.cos(k * w * t) for k, a in terms)
    qdd = sum(-a * (k * w) ** 2 * np.sin(k * w * t) for k, a in terms)
    return q, qd, qdd


def _recording(model, t, joint1, joint2, seed):
    return _plant(model, t, *(np.column_stack(pair) for pair in zip(joint1, joint2)), seed=seed)


def _excitation(model):
    """PERIODS periods; joint 1 swings 1.30..1.84 rad and reverses only at phase 1/4 (top, on the
    stiff spot) and 3/4 (bottom), mirror images of each other (the small third harmonic adds no
    reversal); joint 2 three harmonics, reversing wherever they put it (its friction has no spot).
    Sampled half a sample off the reversals, so no sample sits on a friction step."""
    t = (np.arange(int(PERIODS * PERIOD * RATE)) + 0.5) / RATE
    joint1 = _sines(t, PERIOD, 1.57, [(1, 0.25), (3, -0.02)])
    joint2 = _sines(t, PERIOD, 0.0, [(1, 0.3), (2, 0.12), (5, 0.03)])
    return _recording(model, t, joint1, joint2, seed=1)


def _fresh(model):
    """Motion the fit never saw: other periods and amplitudes, not periodic over its 10 s; joint 1
    inside the excitation's range but reversing at 1.32 and 1.58 rad, below the stiff spot."""
    t = (np.arange(int(10.0 * RATE)) + 0.5) / RATE
    joint1 = _sines(t, 3.1, 1.45, [(1, 0.13)])
    joint2 = _sines(t, 2.3, 0.0, [(1, 0.25), (2, 0.1)])
    return _recording(model, t, joint1, joint2, seed=2)


@pytest.fixture(scope="module")
def chosen():
    """The selection on the excitation with the library's folds and with contiguous blocks (the
    fold builder's fallback when nothing repeats, forced by turning the repeat folds off), and
    each choice's error on the fresh trajectory."""
    model = load_model("twolink")
    data, fresh = _excitation(model), _fresh(model)
    out = {"period": repeat_period(data.t, data.q)}
    for name in ("library", "contiguous"):
        with pytest.MonkeyPatch.context() as patch:
            if name == "contiguous":
                patch.setattr(folds, "repeat_folds", lambda *args, **kwargs: None)
            result = selection.select(model, [data], IdentificationConfig(), folds=FOLDS, **CANDIDATES)
        scores = {c["friction"]: c for c in result.selection["candidates"]}
        out[name] = {"selection": result.selection, "scores": scores,
                     "fresh": validate(model, result.to_dict(), [fresh])}
    return out


def test_the_library_folds_are_phase_blocks_and_keep_the_default(chosen):
    assert chosen["period"] == pytest.approx(PERIOD, abs=0.01)
    sel = chosen["library"]["selection"]
    assert sel["chosen"]["friction"] == "coulomb-viscous", sel["rule"]
    assert "kept" in sel["rule"]
    assert "by phase of each recording's repeat period" in sel["cross_validation"]
    default, stribeck = (chosen["library"]["scores"][k]["fold_scores"] for k in ("coulomb-viscous", "stribeck"))
    # the mechanism: holding out the bottom reversal (phase block 5), Stribeck fitted on the top
    # one puts a bump where the plant has none
    assert stribeck[4] > default[4] + 0.01
    assert np.mean(stribeck) > np.mean(default)


def test_contiguous_blocks_score_in_sample_and_choose_the_stribeck_term(chosen):
    sel = chosen["contiguous"]["selection"]
    assert "contiguous blocks" in sel["cross_validation"]
    assert sel["chosen"]["friction"] == "stribeck", sel["rule"]
    assert "beyond" in sel["rule"]
    default, stribeck = (chosen["contiguous"]["scores"][k]["fold_scores"] for k in ("coulomb-viscous", "stribeck"))
    # every held-out period has both reversals and its copy is in the fit: better on every fold
    assert all(s < d for s, d in zip(stribeck, default))


def test_the_phase_block_choice_predicts_the_fresh_trajectory_better(chosen):
    kept, overfit = chosen["library"]["fresh"], chosen["contiguous"]["fresh"]
    assert kept["rmse_sum"] < overfit["rmse_sum"]
    # the difference is joint 1's bumps at its off-spot reversals
    assert overfit["rmse"][0] > 1.2 * kept["rmse"][0]
