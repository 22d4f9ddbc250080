"""Particle swarms: standard PSO, Zhong et al. 2023's improved chaotic PSO (ICPSO) and its two
baselines APSO and LPSO, with the ICPSO formulas as separate functions the tests check."""

from __future__ import annotations

import numpy as np

from .options import ICPSOOptions
from .problem import INFEASIBLE_OFFSET, _Evaluator, _notify

# --------------------------------------------------------------------------- PSO and ICPSO


def _swarm_init(ev: _Evaluator, x0, pop: int, rng):
    X = ev.bounds.sample(rng, pop)
    if x0 is not None:
        X[0] = x0
    X = ev.prepare(X)
    V = (rng.random(X.shape) - 0.5) * ev.bounds.span * 0.1
    F = ev.ranked(X)
    return X, V, F, X.copy(), F.copy()


def icpso_inertia(t: int, T: int, w_min: float, w_max: float, k1: float, k2: float) -> float:
    """Zhong et al. 2023 eq. 11: w = w_max - (w_max - w_min) tanh(k1 t / T)^k2 (slow, fast, slow)."""
    return w_max - (w_max - w_min) * np.tanh(k1 * t / T) ** k2


def icpso_learning_factors(F: np.ndarray, c_min: float, c_max: float) -> tuple[np.ndarray, np.ndarray]:
    """Zhong et al. 2023 eqs. 12-13, re-derived from the garbled OCR.

    f_low is the mean fitness of the particles at or below the lower quartile, f_avg the
    population mean. A particle at f_low or better gets c1 = c_max, c2 = c_min (trust its own
    memory, keep exploring); one at f_avg or worse gets c1 = c_min, c2 = c_max (follow the
    swarm's best); in between both vary linearly.
    """
    q1 = np.quantile(F, 0.25)
    f_low = float(F[F <= q1].mean())
    f_avg = float(F.mean())
    if f_avg - f_low <= 1e-300:
        r = np.full(F.shape, 0.5)  # all equal: no particle is better than average
    else:
        r = np.clip((F - f_low) / (f_avg - f_low), 0.0, 1.0)
    c1 = c_max - (c_max - c_min) * r
    c2 = c_min + (c_max - c_min) * r
    return c1, c2


def is_premature(F: np.ndarray, best: float, target: float, variance_threshold: float, delta: float) -> bool:
    """Zhong et al. 2023 eqs. 14-15: fitness variance (of the feasible particles) below C while the
    best is still delta above the target."""
    return premature_variance(F) < variance_threshold and best - target > delta


def tent_map_sequence(X01: np.ndarray, steps: int) -> np.ndarray:
    """Zhong et al. 2023 eq. 16 iterated ``steps`` times from each row of X01 (values in [0, 1]):
    X <- 2X if X < 0.5 else 2(1 - X). Returns (steps, *X01.shape)."""
    out = np.empty((steps,) + X01.shape)
    x = np.clip(X01, 0.0, 1.0)
    for m in range(steps):
        x = np.where(x < 0.5, 2.0 * x, 2.0 * (1.0 - x))
        out[m] = x
    return out


def premature_variance(F: np.ndarray) -> float:
    """Eq. 14's fitness variance s^2 (1/Size normalised) over the feasible particles: an infeasible
    particle is ranked at INFEASIBLE_OFFSET + violation, a number that says nothing about how the
    swarm has converged. With fewer than two feasible particles the swarm has not converged: inf."""
    feasible = F[F < INFEASIBLE_OFFSET]
    if feasible.size < 2:
        return float("inf")
    return float(np.mean((feasible - feasible.mean()) ** 2))


def _pso(ev: _Evaluator, x0, opts, rng, callback, run, history, variant: str) -> tuple[int, str]:
    """PSO (eq. 10 of Zhong et al. 2023) with the parameter schedule of ``variant``: "pso"
    (linear w, constant c), "lpso" (linear w and c), "apso" (eqs. 11-13) or "icpso" (eqs. 11-13
    plus the premature test and chaotic search of eqs. 14-18)."""
    pop, T = opts.population, opts.iterations
    X, V, F, P, PF = _swarm_init(ev, x0, pop, rng)
    vmax = opts.v_max * ev.bounds.span
    g = int(np.argmin(PF))
    chaos_events = improved = premature_particles = 0  # reported: is the chaotic search doing anything?
    for t in range(1, T + 1):
        if variant in ("icpso", "apso"):
            w = icpso_inertia(t, T, opts.w_min, opts.w_max, opts.k1, opts.k2)
            c1, c2 = icpso_learning_factors(F, opts.c_min, opts.c_max)
            c1, c2 = c1[:, None], c2[:, None]
        elif variant == "lpso":
            w = opts.w_max - (opts.w_max - opts.w_min) * t / T
            c1 = opts.c_max - (opts.c_max - opts.c_min) * t / T
            c2 = opts.c_min + (opts.c_max - opts.c_min) * t / T
        else:
            w = opts.w_max - (opts.w_max - opts.w_min) * t / T
            c1, c2 = opts.c1, opts.c2
        r1, r2 = rng.random(X.shape), rng.random(X.shape)
        V = np.clip(w * V + c1 * r1 * (P - X) + c2 * r2 * (P[g] - X), -vmax, vmax)  # eq. 10
        X = ev.prepare(X + V)
        F = ev.ranked(X)
        better = F < PF
        P[better], PF[better] = X[better], F[better]
        g = int(np.argmin(PF))
        if variant == "icpso" and opts.chaos_steps > 0 and is_premature(
                F, float(PF[g]), opts.target, opts.variance_threshold, opts.delta):
            chaos_events += 1
            X, F, moved, considered = _chaotic_search(ev, X, F, P[g], opts, rng)
            improved += moved
            premature_particles += considered
            better = F < PF
            P[better], PF[better] = X[better], F[better]
            g = int(np.argmin(PF))
        history.append(ev.best_f)
        _notify(callback, variant, t, ev, run)
        if ev.out_of_time():
            return t, "stopped (time limit)"
    msg = "iteration limit reached"
    if variant == "icpso":
        msg += (f"; chaotic search ran in {chaos_events} of {T} iterations and improved {improved} of "
                f"{premature_particles} premature particles")
    return T, msg


def _chaotic_search(ev: _Evaluator, X: np.ndarray, F: np.ndarray, best: np.ndarray, opts: ICPSOOptions, rng):
    """Zhong et al. 2023 eqs. 16-18 for the particles whose fitness is above the upper quartile.

    Each such particle is mapped to [0, 1] over the variables' domain (eq. 17) and iterated M
    times by the tent map (eq. 16); eq. 18 maps the sequence back and the best point replaces the
    particle. Printed literally (the whole domain, unconditional replacement) this is a random
    restart of a quarter of the swarm: on the paper's 30-dimensional benchmarks 98-100 % of the
    replaced particles got worse (bench/icpso/run.py --ablation), and the ICPSO lost to its own
    parameter strategy without chaos. Two readings fix that and are the defaults:

    - acceptance ("improve"): the sequence starts at X^0, the particle itself (eq. 17), so its best
      point is never worse than the particle; "always" keeps the printed reading;
    - region ("best"): eq. 18 maps back into a box of half-width ``chaos_radius`` x span around
      the swarm's best position instead of the whole domain: a chaotic *local* search where the
      swarm stalled, as in the chaotic PSOs the paper builds on (its refs. 5-6). "box" is the
      printed whole-domain map.

    Tent orbits in floating point collapse onto 0 from dyadic values (a particle clipped to a
    bound maps to exactly 0 or 1); such points are re-seeded uniformly so that M distinct points
    are tried. Returns (X, F, particles the sequence improved, particles considered).
    """
    worst = np.flatnonzero(F > np.quantile(F, 0.75))
    steps = opts.chaos_steps
    if worst.size == 0 or steps < 1:
        return X, F, 0, 0
    lo, span = ev.bounds.lower, ev.bounds.span
    z = np.clip((X[worst] - lo) / span, 0.0, 1.0)  # eq. 17
    seq = np.empty((steps,) + z.shape)
    for m in range(steps):
        stuck = (z <= 0.0) | (z >= 1.0)
        if stuck.any():
            z = np.where(stuck, rng.random(z.shape), z)
        z = np.where(z < 0.5, 2.0 * z, 2.0 * (1.0 - z))  # eq. 16
        seq[m] = z
    if opts.chaos_region == "box":
        points = lo + seq * span  # eq. 18 as printed
    else:
        radius = opts.chaos_radius * span
        points = best + radius * (2.0 * seq - 1.0)  # eq. 18 into the neighbourhood of the best
    candidates = ev.prepare(points.reshape(-1, X.shape[1]))
    Fc = ev.ranked(candidates).reshape(steps, worst.size)
    pick = np.argmin(Fc, axis=0)
    cols = np.arange(worst.size)
    newX = candidates.reshape(steps, worst.size, -1)[pick, cols]
    newF = Fc[pick, cols]
    improves = newF < F[worst]
    accept = improves if opts.chaos_acceptance == "improve" else np.ones(worst.size, bool)
    X, F = X.copy(), F.copy()
    X[worst[accept]], F[worst[accept]] = newX[accept], newF[accept]
    return X, F, int(np.count_nonzero(improves)), int(worst.size)
