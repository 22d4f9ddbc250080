"""The test functions of Zhong et al. 2023 Table 1 (F1-F5), for checking the optimizers."""

from __future__ import annotations

import numpy as np

from .problem import Bounds, PopulationFitness

# --------------------------------------------------------------------------- benchmark functions


def ackley(X: np.ndarray) -> np.ndarray:
    d = X.shape[1]
    return (-20.0 * np.exp(-0.2 * np.sqrt(np.sum(X ** 2, axis=1) / d))
            - np.exp(np.sum(np.cos(2.0 * np.pi * X), axis=1) / d) + 20.0 + np.e)


def griewank(X: np.ndarray) -> np.ndarray:
    i = np.arange(1, X.shape[1] + 1)
    return np.sum(X ** 2, axis=1) / 4000.0 - np.prod(np.cos(X / np.sqrt(i)), axis=1) + 1.0


def schwefel_222(X: np.ndarray) -> np.ndarray:
    a = np.abs(X)
    return a.sum(axis=1) + a.prod(axis=1)


def schwefel_221(X: np.ndarray) -> np.ndarray:
    return np.abs(X).max(axis=1)


def quartic_with_noise(rng: np.random.Generator) -> PopulationFitness:
    def f(X: np.ndarray) -> np.ndarray:
        i = np.arange(1, X.shape[1] + 1)
        return np.sum(i * X ** 4, axis=1) + rng.random(X.shape[0])

    return f


# Zhong et al. 2023 Table 1: name, search range [-r, r] per variable; theoretical optimum 0 for all.
BENCHMARK_FUNCTIONS = {"F1": ("Ackley", 32.768), "F2": ("Griewank", 600.0), "F3": ("Schwefel 2.22", 10.0),
                       "F4": ("Schwefel 2.21", 100.0), "F5": ("Quartic with noise", 1.28)}


def benchmark(name: str, dim: int = 30, rng: np.random.Generator | None = None) -> tuple[PopulationFitness, Bounds]:
    """Fitness and bounds of one of the Table 1 functions F1..F5 in ``dim`` dimensions (F5 draws its
    noise from ``rng``)."""
    if name not in BENCHMARK_FUNCTIONS:
        raise ValueError(f"benchmark: unknown function {name!r}; expected one of {list(BENCHMARK_FUNCTIONS)}")
    r = BENCHMARK_FUNCTIONS[name][1]
    fitness = {"F1": ackley, "F2": griewank, "F3": schwefel_222, "F4": schwefel_221}.get(name)
    if fitness is None:
        fitness = quartic_with_noise(np.random.default_rng() if rng is None else rng)
    return fitness, Bounds(np.full(dim, -r), np.full(dim, r))
