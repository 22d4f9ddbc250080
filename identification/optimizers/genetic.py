"""The real-coded genetic algorithm (Chen et al. 2021's settings by default)."""

from __future__ import annotations

import numpy as np

from .options import GAOptions
from .problem import _Evaluator, _notify

# --------------------------------------------------------------------------- GA


def _ga(ev: _Evaluator, x0, opts: GAOptions, rng, callback, run, history) -> tuple[int, str]:
    pop, dim = opts.population, ev.bounds.dim
    if pop < 2:
        raise ValueError("ga: population must be >= 2")
    X = ev.bounds.sample(rng, pop)
    if x0 is not None:
        X[0] = x0
    X = ev.prepare(X)
    F = ev.ranked(X)
    span = ev.bounds.span
    for gen in range(1, opts.generations + 1):
        order = np.argsort(F)
        elite = X[order[: opts.elite]]
        # tournament selection: the best of `tournament` random individuals, twice per child pair
        contestants = rng.integers(0, pop, size=(pop, opts.tournament))
        parents = X[contestants[np.arange(pop), np.argmin(F[contestants], axis=1)]]
        p1, p2 = parents[0::2], parents[1::2]
        m = min(len(p1), len(p2))
        p1, p2 = p1[:m], p2[:m]
        u = rng.uniform(-opts.blend, 1 + opts.blend, size=(m, dim))
        cross = rng.random(m) < opts.crossover
        c1 = np.where(cross[:, None], p1 + u * (p2 - p1), p1)
        c2 = np.where(cross[:, None], p2 + u * (p1 - p2), p2)
        children = np.vstack([c1, c2, parents[2 * m:]])[: pop - opts.elite]
        # Gaussian mutation whose width shrinks over the run: exploration first, refinement later
        sigma = span * (0.1 * (1 - gen / opts.generations) + 0.01)
        mutate = rng.random(children.shape) < opts.mutation
        children = children + mutate * rng.normal(size=children.shape) * sigma
        X = ev.prepare(np.vstack([elite, children]))
        F = ev.ranked(X)
        history.append(ev.best_f)
        _notify(callback, "ga", gen, ev, run)
        if ev.out_of_time():
            return gen, "stopped (time limit)"
    return opts.generations, "generation limit reached"
