"""Zhong et al. 2023 (chaotic PSO excitation design for a SCARA): properties of the ICPSO code.

Which optimiser wins on the paper's Table 1 functions is a measurement (`robodyn reproduce`,
bench/papers), never a test: a test that fails unless the paper's ranking holds enforces a wish,
not a property of the code. These tests check what the code controls: the chaotic search runs,
changes the search, never makes a particle worse under the "improve" acceptance, and the printed
"always" acceptance can."""

import numpy as np
import pytest

from robodyn.identification import optimizers as opt
from robodyn.identification.optimizers import swarm
from robodyn.reproduce import zhong2023

RUNS = 3  # a few seeds: these are properties of each run, not statistics


def _chaos_counts(message: str):
    # "...; chaotic search ran in R of T iterations and improved I of P premature particles"
    words = message.split()
    ran = int(words[words.index("ran") + 2])
    improved = int(words[words.index("improved") + 1])
    considered = int(words[words.index("improved") + 3])
    return ran, improved, considered


def test_the_chaotic_search_runs_and_changes_the_search():
    # APSO is ICPSO without its chaotic search: same seeds, same adaptive parameters
    icpso = zhong2023.run_benchmark("F1", "icpso", RUNS)
    apso = zhong2023.run_benchmark("F1", "apso", RUNS)
    ran, improved, considered = _chaos_counts(icpso["messages"][0])
    assert 0 < ran and 0 < improved <= considered, icpso["messages"][0]
    # each chaotic step costs evaluations and moves particles: the runs part ways
    assert icpso["mean_evaluations"] > apso["mean_evaluations"]
    assert all(i != a for i, a in zip(icpso["best"], apso["best"]))
    assert "chaotic" not in apso["messages"][0]


def test_the_printed_acceptance_can_worsen_a_particle_and_improve_never_does():
    # Printed literally (the best chaotic point always replaces the particle), a particle can end
    # worse than it was; the "improve" reading keeps a chaotic point only if it is better.
    bounds = opt.Bounds(np.full(4, -5.0), np.full(4, 5.0))

    def sphere(X):
        return np.sum((X - 1.0) ** 2, axis=1)

    rng = np.random.default_rng(3)
    ev = opt._Evaluator(sphere, bounds, (), None, None)
    X = ev.prepare(bounds.sample(rng, 12))
    F = ev.ranked(X)
    far_best = np.full(4, -4.5)  # chaos around a poor point: its candidates are worse than most
    worse = []
    for acceptance in ("always", "improve"):
        options = opt.ICPSOOptions(chaos_steps=3, chaos_radius=0.01, chaos_acceptance=acceptance)
        X2, F2, _, _ = swarm._chaotic_search(ev, X.copy(), F.copy(), far_best, options, np.random.default_rng(4))
        worse.append(bool(np.any(F2 > F)))
    assert worse == [True, False]


def test_chaotic_search_never_worsens_a_particle_and_searches_near_the_best():
    bounds = opt.Bounds(np.full(4, -5.0), np.full(4, 5.0))

    def sphere(X):
        return np.sum((X - 1.0) ** 2, axis=1)

    ev = opt._Evaluator(sphere, bounds, (), None, None)
    rng = np.random.default_rng(0)
    X = ev.prepare(bounds.sample(rng, 12))
    X[0] = 5.0  # a particle clipped to the bound: its tent orbit would collapse onto 0
    F = ev.ranked(X)
    best = np.full(4, 1.2)
    options = opt.ICPSOOptions(chaos_steps=10, chaos_radius=0.02)
    seen = []
    inner = ev.fitness
    ev.fitness = lambda Z: (seen.append(Z.copy()), inner(Z))[1]
    X2, F2, improved, considered = swarm._chaotic_search(ev, X, F, best, options, rng)
    worst = np.flatnonzero(F > np.quantile(F, 0.75))
    assert considered == worst.size == 3 and improved == 3
    assert np.all(F2 <= F) and np.all(F2[worst] < F[worst])
    points = np.vstack(seen)
    assert points.shape == (10 * 3, 4)
    assert np.all(np.abs(points - best) <= 0.02 * 10.0 + 1e-12)  # inside the box around the best
    assert len(np.unique(points.round(12), axis=0)) == 30  # no collapsed (repeated) tent points


def test_premature_test_ignores_infeasible_particles():
    F = np.array([3.0, 3.1, 3.2, opt.INFEASIBLE_OFFSET + 5.0])
    assert opt.is_premature(F, best=3.0, target=1.0, variance_threshold=10.0, delta=1.0)
    assert not opt.is_premature(np.array([3.0, opt.INFEASIBLE_OFFSET]), 3.0, 1.0, 10.0, 1.0)


def test_baseline_schedules():
    # LPSO: c1 falls 2.5 -> 0.5 and c2 rises 0.5 -> 2.5 linearly; APSO has no chaotic search
    assert opt.default_options("lpso").c_max == 2.5 and opt.default_options("lpso").c_min == 0.5
    res = opt.minimize(opt.schwefel_221, opt.Bounds(-np.ones(5), np.ones(5)), "apso", seed=0,
                       options=opt.APSOOptions(population=10, iterations=5))
    assert "chaotic" not in res.message
    with pytest.raises(ValueError, match="chaos_region"):
        opt.ICPSOOptions(chaos_region="everywhere")
    with pytest.raises(ValueError, match="chaos_radius"):
        opt.ICPSOOptions(chaos_radius=0.0)
