"""The White Shark Optimizer as Ni et al. 2024 eqs. 12-28 give it, each equation a function."""

from __future__ import annotations

import numpy as np

from .options import WSOOptions
from .problem import _Evaluator, _notify

# --------------------------------------------------------------------------- WSO (Ni et al. 2024)


def wso_weights(k: int, K: int, a_min: float, a_max: float) -> tuple[float, float]:
    """Ni et al. 2024 eqs. 16-17: the pulls towards the global best (a1: 2.5 -> 1.5) and towards a
    shark's memory (a2: 1.5 -> 0.5) both decay as exp(-(4k/K)^2)."""
    decay = float(np.exp(-((4.0 * k / K) ** 2)))
    return a_max + (a_max - a_min) * decay, a_min + (a_max - a_min) * decay


def wso_constriction(acceleration: float) -> float:
    """Ni et al. 2024 eq. 18: mu = 2 / |2 - tau - sqrt(tau^2 - 4 tau)| (0.7034 for tau = 4.125)."""
    t = float(acceleration)
    if t * t - 4 * t < 0:
        raise ValueError(f"wso: acceleration tau must be >= 4 (or <= 0) for a real constriction factor, got {t}")
    return 2.0 / abs(2.0 - t - np.sqrt(t * t - 4.0 * t))


def wso_frequency(f_min: float, f_max: float) -> float:
    """Ni et al. 2024 eq. 23: the wavy-motion frequency f = f_min + (f_max - f_min) / (f_max + f_min)."""
    return f_min + (f_max - f_min) / (f_max + f_min)


def wso_movement_force(k: int, K: int, alpha0: float, alpha1: float) -> float:
    """Ni et al. 2024 eq. 24: mv = 1 / (alpha0 + exp((K/2 - k) / alpha1)); ~0 early, 1/(alpha0 + e^-K/2a1) late."""
    return 1.0 / (alpha0 + float(np.exp(min((K / 2.0 - k) / alpha1, 700.0))))


def wso_school_strength(k: int, K: int, a2: float) -> float:
    """Ni et al. 2024 eq. 27: S_s = |1 - exp(-a2 k / K)|."""
    return abs(1.0 - float(np.exp(-a2 * k / K)))


def wso_velocity(V, X, gbest, remembered, a1: float, a2: float, mu: float, c1, c2) -> np.ndarray:
    """Ni et al. 2024 eq. 15: v <- mu [v + a1 (p_gbest - p) c1 + a2 (p_best^nu - p) c2], with c1, c2
    uniform in [0, 1] and p_best^nu the best position remembered by shark nu (the memory term)."""
    return mu * (V + a1 * (gbest - X) * c1 + a2 * (remembered - X) * c2)


def wso_school(X, towards_best, r) -> np.ndarray:
    """Ni et al. 2024 eq. 28, the fish-school move: p <- (p + p~) / (2 rand), p~ the eq. 25 move.
    Dividing by rand (not multiplying) is what throws sharks far out when rand is small."""
    return (X + towards_best) / (2.0 * np.maximum(r, 1e-12))


def _wso(ev: _Evaluator, x0, opts: WSOOptions, rng, callback, run, history) -> tuple[int, str]:
    """White Shark Optimizer, Ni et al. 2024 eqs. 12-28 (re-derived where the OCR is garbled).

    Two readings needed a decision. (i) The memory term of eq. 15 is printed with superscript
    nu_k^i: the best position remembered by a randomly drawn shark nu (the text's gloss says "the
    i-th shark's own best"; the superscript is kept). (ii) eq. 19 prints the re-placement branch for
    rand > mv. The text below it says a large mv *prohibits* search; that holds only when the
    re-placement (which moves in-bounds sharks nowhere) is the rand < mv branch, so that order is used.
    As in the WSO, sharks outside the box are not evaluated and keep their memory until re-placed.
    """
    n, K = opts.population, opts.iterations
    if n < 2 or K < 1:
        raise ValueError("wso: population must be >= 2 and iterations >= 1")
    lo, hi = ev.bounds.lower, ev.bounds.upper
    X = ev.bounds.sample(rng, n)  # eq. 13
    if x0 is not None:
        X[0] = x0
    X = ev.prepare(X)
    V = np.zeros_like(X)
    memory, memory_f = X.copy(), ev.ranked(X)
    g = int(np.argmin(memory_f))
    mu = wso_constriction(opts.acceleration)
    f = wso_frequency(opts.f_min, opts.f_max)
    rows = np.arange(n)
    for k in range(1, K + 1):
        a1, a2 = wso_weights(k, K, opts.a_min, opts.a_max)
        mv = wso_movement_force(k, K, opts.alpha0, opts.alpha1)
        ss = wso_school_strength(k, K, opts.school_a2)
        gbest = memory[g]
        nu = rng.integers(0, n, size=n)
        V = wso_velocity(V, X, gbest, memory[nu], a1, a2, mu, rng.random(X.shape), rng.random(X.shape))  # eq. 15
        above, below = X > hi, X < lo  # eqs. 20-21
        outside = above ^ below  # eq. 22
        replace_rows = rng.random(n) < mv
        replaced = np.where(outside, 0.0, X) + hi * above + lo * below
        X = np.where(replace_rows[:, None], replaced, X + V / f)  # eq. 19
        # eqs. 25-28, per coordinate with probability S_s: shark 1 moves to the best shark (eq. 25),
        # the others average that move with where they are (fish school, eq. 28)
        school = rng.random(X.shape) < ss
        if school.any():
            D = np.abs(rng.random(X.shape) * (gbest - X))  # eq. 26
            towards_best = gbest + rng.random(X.shape) * D * np.sign(rng.random(X.shape) - 0.5)  # eq. 25
            schooled = wso_school(X, towards_best, rng.random(X.shape))  # eq. 28
            schooled[0] = towards_best[0]
            X = np.where(school, schooled, X)
        inside = rows[np.all((X >= lo) & (X <= hi), axis=1)]
        if inside.size:
            Xin = ev.prepare(X[inside])
            X[inside] = Xin
            F = ev.ranked(Xin)
            better = F < memory_f[inside]
            memory[inside[better]], memory_f[inside[better]] = Xin[better], F[better]
            g = int(np.argmin(memory_f))
        history.append(ev.best_f)
        _notify(callback, "wso", k, ev, run)
        if ev.out_of_time():
            return k, "stopped (time limit)"
    return K, "iteration limit reached"
