"""Model selection's shared work gives what each candidate computed on its own would.

Data: the UR-like realistic plant (identification/realistic_logs.py: a simulated plant unlike the
model -- inertial parameters off, Stribeck friction with position ripple, an elastic shoulder,
drive gains off, quantised noisy currents), 4 s of one excitation, and synthetic block-sparse rows
for IRLS. What is checked against a straightforward computation:

- the rotor-inertia candidates of one friction share one regressor and one Gram matrix per fold
  (column_subsets.prepare_column_subsets): each candidate's rows and normal equations are its own columns
  of them, as prepare + accumulate give on a fold's fit recordings (a gap inside);
- the held-out prediction of a candidate with fewer standard columns (rotor inertia off) through
  the widest candidate's regressor (validate_many's ``bases``) is its own prediction;
- select's fold scores are those of a loop that prepares, fits and scores every candidate alone;
- the physically consistent fit's compiled program, re-solved with another fold's data, gives
  what a freshly built program gives;
- IRLS on each joint's reached columns only reaches the plain Huber IRLS fixed point when joints
  reach different columns, and gives the same estimate however its rows are chunked;
- the sigmoid and Stribeck candidates' rows and normal equations over several chunks, their
  friction scales' grid search (against the four-column least squares written out) and the
  Coulomb-viscous residual they are chosen from (taken from the candidate's rows), and select's
  fold scores of those candidates against a loop that prepares each alone.
"""

import dataclasses
import importlib.util

import numpy as np
import pytest

from robodyn.identification import consistent
from robodyn.identification.estimators import accumulate, estimate, huber_weights, irls
from robodyn.identification.column_subsets import prepare_column_subsets
from robodyn.identification.pipeline import IdentificationConfig, ProcessedCache, prepare, validate_many
from robodyn.identification.processing import ProcessingConfig
from robodyn.identification.realistic_logs import realistic_log
from robodyn.identification.folds import blocked_folds, cross_validation_folds, fit_recordings, held_out_masks
from robodyn.identification.selection import select
from robodyn.robot.loader import load_model

CUTOFF = ProcessingConfig(cutoff_hz=8.0)


@pytest.fixture(scope="module")
def plant():
    return load_model("ur5e"), realistic_log("ur", 2, duration=4.0).data


@pytest.fixture(scope="module")
def fold(plant):
    model, data = plant
    plan = blocked_folds([data.count], 4)
    _, fit = fit_recordings([data], plan[1].fit)  # a middle block held out: the fit has a gap
    held, keep = held_out_masks([data], plan[1].held_out)
    return fit, held, keep


def _configs():
    return [IdentificationConfig(rotor_inertia=r, processing=CUTOFF) for r in (True, False)]


def _assert_same_as_alone(model, fit, config, prep, ne):
    alone = prepare(model, fit, config, cache=True)
    own = accumulate(alone.chunks, model.dof, alone.params)
    assert list(prep.names) == list(alone.names)
    for (W, tau), (W0, tau0) in zip(prep.chunks(), alone.chunks()):
        np.testing.assert_array_equal(tau, tau0)
        np.testing.assert_allclose(W, W0, rtol=0, atol=1e-12 * np.abs(W0).max())
    # each entry against its own scale (Cauchy-Schwarz: |A_kl| <= sqrt(A_kk A_ll)), so that a wrong
    # small entry (a friction column's cross term, say) is caught however large the others are
    diagonal = np.sqrt(np.einsum("jkk->jk", own.A))
    np.testing.assert_array_less(np.abs(ne.A - own.A), 1e-12 * diagonal[:, :, None] * diagonal[:, None, :] + 1e-300)
    np.testing.assert_array_less(np.abs(ne.b - own.b), 1e-12 * diagonal * np.sqrt(own.c)[:, None] + 1e-300)
    np.testing.assert_allclose(ne.c, own.c, rtol=1e-12)
    np.testing.assert_array_equal(ne.rows, own.rows)
    np.testing.assert_array_less(np.abs(ne.column_sums - own.column_sums),
                                 1e-12 * diagonal * np.sqrt(own.rows)[:, None] + 1e-300)


def _scored_alone(model, data, trial, plan, methods, **options) -> dict:
    """Each method's fold scores with every fold prepared, fitted and scored on its own (no sharing)."""
    reference = {m: [] for m in methods}
    for f in plan:
        _, fit = fit_recordings([data], f.fit)
        held, keep = held_out_masks([data], f.held_out)
        prep = prepare(model, fit, trial, cache=True)
        ne = accumulate(prep.chunks, model.dof, prep.params)
        for m in methods:
            theta = estimate(m, prep.chunks, model.dof, prep.params, statistics=ne, **options)[0].theta
            reference[m].append(validate_many(model, prep, [theta], held, keep)[0]["rmse_sum"])
    return reference


def test_each_rotor_candidate_is_a_column_subset_of_one_regressor_and_gram(plant, fold):
    model, _ = plant
    fit, _, _ = fold
    shared = prepare_column_subsets(model, fit, _configs(), processed=ProcessedCache())
    bases = [prep.base.count for prep, _ in shared]
    assert bases[0] > bases[1]  # the rotor columns really are a different set
    for config, (prep, ne) in zip(_configs(), shared):
        _assert_same_as_alone(model, fit, config, prep, ne)


def test_other_friction_columns_reuse_the_regressor_with_their_own_coulomb_signal(plant, fold):
    model, _ = plant
    fit, _, _ = fold
    processed, regressors = ProcessedCache(), {}
    first = prepare_column_subsets(model, fit, _configs(), processed=processed, shared=regressors)
    assert len(regressors) == 1
    later = [IdentificationConfig(friction=f, rotor_inertia=r, processing=CUTOFF, friction_scales=list(scales))
             for f, scales in (("sigmoid", np.full(model.dof, 0.05)), ("stribeck", np.full(model.dof, 0.1)))
             for r in (True, False)]
    shared = prepare_column_subsets(model, fit, later, processed=processed, shared=regressors)
    assert len(regressors) == 1  # the Coulomb-viscous call's regressor was reused, not evaluated anew
    for config, (prep, ne) in zip(_configs() + later, first + shared):
        _assert_same_as_alone(model, fit, config, prep, ne)
    # the smooth Coulomb signal really differs from sgn(qd): the columns were replaced
    (W_cv, _), (W_sig, _) = next(first[0][0].chunks()), next(shared[0][0].chunks())
    assert np.max(np.abs(W_cv - W_sig)) > 0.1


def test_a_smaller_candidate_predicted_through_the_widest_regressor_is_its_own_prediction(plant, fold):
    model, _ = plant
    fit, held, keep = fold
    (wide, wide_ne), (narrow, narrow_ne) = prepare_column_subsets(model, fit, _configs())
    thetas = [estimate(m, p.chunks, model.dof, p.params, statistics=ne)[0].theta
              for m, (p, ne) in (("ols", (wide, wide_ne)), ("wls", (narrow, narrow_ne)), ("ols", (narrow, narrow_ne)))]
    together = validate_many(model, wide, thetas, held, keep, bases=[wide.base, narrow.base, narrow.base])
    alone = [validate_many(model, wide, thetas[:1], held, keep)[0]] + \
        validate_many(model, narrow, thetas[1:], held, keep)
    assert together[1]["rmse_sum"] != pytest.approx(together[2]["rmse_sum"], rel=1e-9)  # distinct estimates
    for t, a in zip(together, alone):
        np.testing.assert_allclose(t["rmse"], a["rmse"], rtol=1e-10)


def test_select_scores_every_candidate_as_fitting_and_scoring_it_alone_would(plant):
    model, data = plant
    config = IdentificationConfig(processing=CUTOFF)
    methods = ("ols", "wls", "irls")
    result = select(model, [data], config, folds=3, frictions=("coulomb-viscous",), rotor_inertia=(True, False),
                    methods=methods)
    table = {(c["rotor_inertia"], c["method"]): c["fold_scores"] for c in result.selection["candidates"]}
    plan = cross_validation_folds([data], 3)[0]  # as select plans them (phase blocks of a periodic excitation)
    assert [f["held_out"] for f in result.selection["folds"]] == [[list(r) for r in f.held_out] for f in plan]
    for rotor in (True, False):
        trial = dataclasses.replace(config, rotor_inertia=rotor, recording_weights="equal")
        reference = _scored_alone(model, data, trial, plan, methods, tolerance=1e-6)
        for m in methods:
            # IRLS stops at a tolerance of 1e-6 on the fitted torque: its score moves below that. The
            # direct fits agree to rounding: select sums the fold's Gram matrix in the fused kernel's
            # order, the loop over the stored rows, and this 4 s fit's equilibrated normal equations
            # have a condition number near 7e7 (times the 2.2e-16 of a double: 1.6e-8)
            np.testing.assert_allclose(table[(rotor, m)], reference[m], rtol=1e-6 if m == "irls" else 1e-7)


@pytest.mark.skipif(importlib.util.find_spec("cvxpy") is None, reason="the physically consistent fit needs the sdp extra (cvxpy)")
def test_the_consistent_program_resolved_with_new_data_is_a_fresh_solve(plant, fold):
    model, data = plant
    fit, _, _ = fold
    config = IdentificationConfig(rotor_inertia=False, processing=CUTOFF)
    first = prepare(model, [data], config, cache=True)
    second = prepare(model, fit, config, cache=True)
    reference = consistent.nominal_reference(model, first.base.spec)
    stats = [accumulate(p.chunks, model.dof, p.params) for p in (first, second)]
    consistent._PROGRAMS.clear()
    fresh = [None, None]
    for k in (1, 0):  # each solved by a program built for it
        consistent._PROGRAMS.clear()
        fresh[k] = consistent.identify_consistent(stats[k], first.base, model.dof, reference=reference)
    consistent._PROGRAMS.clear()
    reused = [consistent.identify_consistent(s, first.base, model.dof, reference=reference) for s in stats]
    assert len(consistent._PROGRAMS) == 1  # one program, solved twice
    assert fresh[0].fitness != pytest.approx(fresh[1].fitness, rel=1e-3)  # the data differ
    for a, b in zip(fresh, reused):
        assert b.fitness == pytest.approx(a.fitness, rel=1e-6)
        np.testing.assert_allclose(b.theta, a.theta, rtol=0, atol=1e-4 * np.abs(a.theta).max())


def test_irls_on_reached_columns_reaches_plain_huber_irls_when_joints_reach_different_columns():
    rng = np.random.default_rng(11)
    dof, p, N = 3, 9, 800
    truth = rng.normal(size=p)
    W = rng.normal(size=(dof, N, p))
    W[1, :, :3] = 0.0  # joint 2 does not reach the first three columns, joint 3 the first six
    W[2, :, :6] = 0.0
    tau = (W @ truth).T + 0.05 * rng.standard_t(1.5, size=(N, dof))
    rows = np.concatenate(list(W))
    target = np.concatenate([tau[:, j] for j in range(dof)])
    theta = np.linalg.lstsq(rows, target, rcond=None)[0]
    for _ in range(200):  # Huber IRLS written out: weighted lstsq of the stacked rows
        resid = tau - (W @ theta).T
        scale = 1.4826 * np.median(np.abs(resid - np.median(resid, axis=0)), axis=0)
        root = np.sqrt(np.concatenate([huber_weights(resid, scale)[:, j] for j in range(dof)]))
        theta = np.linalg.lstsq(rows * root[:, None], target * root, rcond=None)[0]
    est = irls(lambda: iter([(W[:, :500], tau[:500]), (W[:, 500:], tau[500:])]), dof, p, tol=1e-12)
    assert not any("stopped" in n for n in est.notes)
    np.testing.assert_allclose(est.theta, theta, rtol=0, atol=1e-7 * np.abs(theta).max())


def test_other_friction_columns_over_several_chunks_are_their_own_rows_and_normal_equations(plant, fold):
    """Over several chunks, the sigmoid and Stribeck candidates' rows (the shared regressor with
    their Coulomb signal written in and the Stribeck columns appended, in one copy) and normal
    equations are what preparing each alone gives."""
    model, _ = plant
    fit, _, _ = fold
    small = CUTOFF
    configs = [IdentificationConfig(rotor_inertia=r, processing=small, chunk_samples=300) for r in (True, False)]
    processed, regressors = ProcessedCache(), {}
    first = prepare_column_subsets(model, fit, configs, processed=processed, shared=regressors)
    later = [IdentificationConfig(friction=f, rotor_inertia=r, processing=small, chunk_samples=300,
                                  friction_scales=list(scales))
             for f, scales in (("sigmoid", np.full(model.dof, 0.05)), ("stribeck", np.full(model.dof, 0.1)))
             for r in (True, False)]
    shared = prepare_column_subsets(model, fit, later, processed=processed, shared=regressors)
    assert len(next(iter(regressors.values()))[2]) > 2  # several chunks were summed
    for config, (prep, ne) in zip(configs + later, first + shared):
        _assert_same_as_alone(model, fit, config, prep, ne)


def test_irls_gives_the_same_estimate_however_the_rows_are_chunked():
    """IRLS keeps each joint's rows of every chunk in one block: the chunking of the data changes
    nothing (a torque misaligned with its rows across chunks would)."""
    rng = np.random.default_rng(5)
    dof, p, N = 3, 8, 900
    W = rng.normal(size=(dof, N, p))
    W[2, :, :4] = 0.0
    W[:, :, 7] = W[:, :, 6]  # an unexcited direction: the rank-deficient solve
    tau = (W @ rng.normal(size=p)).T + 0.05 * rng.standard_t(1.5, size=(N, dof))
    ne = accumulate(lambda: iter([(W, tau)]), dof, p)
    whole = irls(lambda: iter([(W, tau)]), dof, p, statistics=ne, tol=1e-10)
    cuts = [0, 100, 450, 451, N]
    pieces = [(W[:, a:b], tau[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    chunked = irls(lambda: iter(pieces), dof, p, statistics=ne, tol=1e-10)
    assert whole.rank == p - 1 and whole.iterations > 3
    assert chunked.iterations == whole.iterations
    np.testing.assert_allclose(chunked.theta, whole.theta, rtol=0, atol=1e-12 * np.abs(whole.theta).max())


def test_friction_scales_are_the_least_squares_choice_over_the_grid():
    """choose_friction_scales projects the Coulomb-viscous columns out once for every grid scale:
    its choice is the grid scale whose four-column least-squares fit (written out here) leaves the
    least, also for a joint moving one way only (sgn(qd) is the ones column), one at rest, and one
    always fast, whose tanh(qd / 0.002) is sgn(qd) to the last bit (lstsq drops that column)."""
    from robodyn.identification.friction import SCALE_GRID, choose_friction_scales

    rng = np.random.default_rng(3)
    shapes: dict = {}
    for trial in range(12):
        N = 1500 if trial < 6 else 24  # few samples: a direction wrongly projected out matters
        qd = rng.normal(scale=[0.02, 0.3, 0.1, 1.0, 1.0], size=(N, 5))
        qd[:, 2] = np.abs(qd[:, 2])  # one way only
        qd[:, 3] = 0.0 if trial % 2 else qd[:, 3]  # at rest
        qd[:, 4] = rng.uniform(0.05, 0.5, N)  # one way, always fast
        # both shapes of the same velocities (they share the Coulomb-viscous span), each with two
        # residuals (the search keeps what depends on the velocities alone)
        for kind in ("sigmoid", "stribeck"):
            for _ in range(2):
                true = rng.choice(SCALE_GRID, 5)
                shape = np.tanh(qd / true) if kind == "sigmoid" else np.sign(qd) * np.exp(-np.square(qd / true))
                residual = 0.4 * shape + 0.1 * qd + 0.05 * rng.standard_normal((N, 5))
                residual[:, 4] = 0.05 * rng.standard_normal(N)  # nothing for a shape to explain
                chosen = choose_friction_scales(kind, qd.copy(), residual, shapes=shapes).tolist()
                for j in range(5):
                    v, r = qd[:, j], residual[:, j]
                    rss = []
                    for s in SCALE_GRID:
                        column = np.tanh(v / s) if kind == "sigmoid" else np.sign(v) * np.exp(-np.square(v / s))
                        X = np.column_stack([column, np.sign(v), v, np.ones_like(v)])
                        coef = np.linalg.lstsq(X, r, rcond=None)[0]
                        rss.append(float(np.sum(np.square(r - X @ coef))))
                    # the least, or a scale tied with it to rounding (24 samples can make two equal)
                    best = min(rss)
                    assert rss[SCALE_GRID.index(chosen[j])] <= best * (1 + 1e-12), (kind, trial, j, chosen[j], rss)


def test_the_friction_residual_from_the_candidates_rows_is_the_one_evaluated_anew(plant, fold):
    """The sigmoid and Stribeck scales come from the Coulomb-viscous candidate's residual, taken
    from the rows it already holds (column_subsets.residual_on_rows): it is what friction_residual
    evaluates from the processed data."""
    from robodyn.identification.pipeline import friction_residual
    from robodyn.identification.column_subsets import residual_on_rows

    model, _ = plant
    fit, _, _ = fold
    processed = ProcessedCache()
    (prep, ne), _ = prepare_column_subsets(model, fit, _configs(), processed=processed)
    theta = estimate("ols", prep.chunks, model.dof, prep.params, statistics=ne)[0].theta
    stored = len(processed._store)
    shortcut = residual_on_rows(prep, theta, fit, processed)
    assert shortcut is not None  # the shortcut was taken
    assert len(processed._store) == stored  # on the pieces the candidate was prepared from, not processed again
    qd, residual = friction_residual(model, fit, _configs()[0], processed=ProcessedCache(), fitted=(prep.base, theta))
    np.testing.assert_array_equal(shortcut[0], qd)
    np.testing.assert_allclose(shortcut[1], residual, rtol=0, atol=1e-10 * np.abs(residual).max())
    assert np.abs(residual).max() > 1e-3  # a fit that leaves something: the comparison means something


def test_select_scores_smooth_and_stribeck_candidates_as_preparing_them_alone_would(plant):
    """With their velocity scales chosen from the shared Coulomb-viscous fit and their normal
    equations from the shared regressor, the sigmoid and Stribeck candidates score as a loop that
    prepares each alone (prepare chooses the scales itself from friction_residual) would."""
    model, data = plant
    config = IdentificationConfig(processing=CUTOFF)
    methods = ("ols", "wls")
    frictions = ("coulomb-viscous", "sigmoid", "stribeck")
    result = select(model, [data], config, folds=3, frictions=frictions, rotor_inertia=(True, False),
                    methods=methods)
    table = {(c["friction"], c["rotor_inertia"], c["method"]): c["fold_scores"] for c in result.selection["candidates"]}
    plan = cross_validation_folds([data], 3)[0]
    for friction in frictions[1:]:
        for rotor in (True, False):
            trial = dataclasses.replace(config, friction=friction, rotor_inertia=rotor, recording_weights="equal")
            reference = _scored_alone(model, data, trial, plan, methods)
            # the shared sums are taken in another order than a candidate's own (they agree entry
            # by entry to 1e-12 of their scale: _assert_same_as_alone); the fits' conditioning
            # carries that rounding into the scores at about 1e-8 relative here
            for m in methods:
                np.testing.assert_allclose(table[(friction, rotor, m)], reference[m], rtol=1e-6)


@pytest.mark.parametrize("purpose", ["fit", "predict"])
@pytest.mark.parametrize("processing", [CUTOFF, ProcessingConfig(cutoff_hz=8.0, decimation=2, rloess_span=0.05),
                                        ProcessingConfig(cutoff_hz=8.0, min_velocity=0.02)],
                         ids=["lowpass", "antialias-rloess", "slow-samples-dropped"])
def test_any_friction_columns_are_the_plain_processing_with_their_own_signals(plant, fold, processing, purpose):
    """ProcessedCache derives a column set's pieces from the plain ones: for a prediction its
    Coulomb and Stribeck signals are sharp functions of the processed velocity, for a fit they are
    filtered alone as the torque was, over the same windows, the same samples kept. The same
    arrays and steps, to the bit, as processing the recording for that set, on a whole recording and
    on a fold's fit recording with a gap (two pieces)."""
    from robodyn.identification.friction import FrictionColumns
    from robodyn.identification.processing import process_windows

    _, whole = plant
    for data in (whole, fold[0][0]):
        cache = ProcessedCache()
        for columns in (FrictionColumns("sigmoid", np.linspace(0.01, 0.06, 6)),
                        FrictionColumns("stribeck", np.linspace(0.02, 0.2, 6)), FrictionColumns("coulomb-viscous")):
            derived = cache.pieces(data, processing, purpose=purpose, columns=columns)
            anew = list(process_windows(data, processing, purpose=purpose, columns=columns))
            assert len(derived) == len(anew) == (1 if data is whole else 2)
            for a, b in zip(derived, anew):
                for name in ("t", "q", "qd", "qdd", "tau", "coulomb", "friction_extra", "tau_friction"):
                    x, y = getattr(a.data, name), getattr(b.data, name)
                    assert (x is None) == (y is None), name
                    assert x is None or np.array_equal(x, y), name
                assert a.steps == b.steps and a.spans == b.spans
            assert derived[0].data.coulomb is not None
