"""Names and defaults of the identification library that the command line offers and checks its
arguments against: the estimator table, the other methods with their one-line descriptions, the
friction experiment's defaults. Importable without the methods themselves (no numpy, scipy or
numba), so that building the command line's parser imports none of them: `robodyn abort` sends its
stop without first loading the identification library.

The estimator table (:data:`ESTIMATORS`) is the one list of the pipeline's estimators: the
functions that turn the data's normal equations into base parameters. `identify --method`, its
help text, `--select`'s candidates, the prediction intervals' refits and the daemon's job check
all read it, so an estimator is added by writing its function and registering it here (an entry
below, or :func:`register_estimator` from the module that defines it). The name tuples below are
live views of the table, not copies: a reader that took one at import sees later registrations."""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Callable, Union


@dataclass(frozen=True)
class EstimatorSpec:
    """One estimator of the pipeline.

    ``function`` is the callable or "module:attribute" (imported on first use, so the table costs
    the command line no numpy). It is called ``function(statistics, names)`` with the normal
    equations (estimators.NormalEquations) and the parameter names, or, when ``passes`` is set,
    ``function(chunks, dof, params, names, statistics=statistics)`` for an estimator that passes
    over the data again (chunks() yields (W, tau) afresh); it returns an estimators.Estimate."""

    name: str
    description: str  # one line, for help texts and comparison tables
    function: Union[str, Callable]
    passes: bool = False
    selectable: bool = True  # `identify --select` may fit, score and choose it (with --method NAME, its reference)
    # `identify --select` fits it on every fold without being asked (a selectable estimator that is
    # not a candidate is fitted when it is the reference, `--select --method NAME`)
    candidate: bool = True
    # the prediction intervals refit it on each cross-validation block (intervals.out_of_fold_refits)
    refit_for_intervals: bool = True

    def load(self) -> Callable:
        if callable(self.function):
            return self.function
        module, _, attribute = self.function.partition(":")
        return getattr(importlib.import_module(module), attribute)


ESTIMATORS: dict[str, EstimatorSpec] = {}
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")


def register_estimator(spec: EstimatorSpec) -> EstimatorSpec:
    """Add an estimator to the table; ValueError for a name already taken (by an estimator or
    another method) or not a short lower-case word."""
    if not isinstance(spec.name, str) or not _NAME.fullmatch(spec.name):
        raise ValueError(f"estimator name: expected a lower-case word of at most 32 characters, got {spec.name!r}")
    if spec.name in ESTIMATORS or spec.name in _OTHER_METHODS:
        raise ValueError(f"estimator name: {spec.name!r} is already a method")
    ESTIMATORS[spec.name] = spec
    return spec


def unregister_estimator(name: str) -> None:
    """Remove an estimator from the table (a test's toy estimator); KeyError when there is none."""
    del ESTIMATORS[name]


def estimator_names() -> tuple[str, ...]:
    return tuple(ESTIMATORS)


def selectable_estimators() -> tuple[str, ...]:
    return tuple(n for n, s in ESTIMATORS.items() if s.selectable)


def candidate_estimators() -> tuple[str, ...]:
    return tuple(n for n, s in ESTIMATORS.items() if s.selectable and s.candidate)


class _LiveNames(Sequence):
    """A tuple of names recomputed from the table on every use (argparse choices, `in` checks)."""

    def __init__(self, names: Callable[[], tuple]):
        self._names = names

    def __getitem__(self, k):
        return self._names()[k]

    def __len__(self):
        return len(self._names())

    def __contains__(self, name):
        return name in self._names()

    def __iter__(self):
        return iter(self._names())

    def __add__(self, other):
        return tuple(self) + tuple(other)

    def __eq__(self, other):
        return tuple(self) == (tuple(other) if isinstance(other, (tuple, list, _LiveNames)) else other)

    def __hash__(self):
        return hash(tuple(self))

    def __repr__(self):
        return repr(tuple(self))


METAHEURISTICS = ("wso", "pso", "ga", "icpso")  # robodyn.identification.metaheuristic
OTHER = ("consistent", "nn")
# stepwise: Chen et al. 2021 on flexible-joint recordings (methods.identify_stepwise)
_OTHER_DESCRIPTIONS = {
    "wso": "white shark optimizer", "pso": "particle swarm", "ga": "genetic algorithm",
    "icpso": "improved chaotic particle swarm", "consistent": "physically consistent (semidefinite program)",
    "nn": "linear neural network",
    "stepwise": "stepwise identification of flexible joints (link/motor encoders, torque sensor, current)",
}
_OTHER_METHODS = tuple(_OTHER_DESCRIPTIONS)

# the pipeline's estimators (robodyn.identification.estimators), in table order
LEAST_SQUARES = _LiveNames(estimator_names)
# what `identify --select` may choose (and take as its reference with --method), and what it fits
# on every fold without being asked
SELECTABLE = _LiveNames(selectable_estimators)
CANDIDATES = _LiveNames(candidate_estimators)
METHODS = _LiveNames(lambda: estimator_names() + METAHEURISTICS + OTHER + ("stepwise",))
# stepwise reads its own flexible-joint recordings: it has no place in a rigid-body comparison
COMPARABLE = _LiveNames(lambda: tuple(m for m in METHODS if m != "stepwise"))


class _Descriptions(Mapping):
    """Method name -> one-line description: the estimators' from the table, then the others."""

    def _all(self) -> dict:
        return {**{n: s.description for n, s in ESTIMATORS.items()}, **_OTHER_DESCRIPTIONS}

    def __getitem__(self, name):
        return self._all()[name]

    def __iter__(self):
        return iter(self._all())

    def __len__(self):
        return len(self._all())


DESCRIPTIONS = _Descriptions()

for _spec in (
    EstimatorSpec("ols", "ordinary least squares", "robodyn.identification.estimators:ols"),
    EstimatorSpec("wls", "weighted least squares (Gautier)", "robodyn.identification.estimators:wls"),
    # not a --select candidate unless asked for: it passes over the data once per reweighting (30 fits
    # of 10-20 passes each was a third of --select's time), and on no split of the real logs of
    # bench/realdata was it the best candidate or did leaving it out change the choice
    # (bench/realdata/select_candidates.py)
    EstimatorSpec("irls", "Huber-reweighted least squares", "robodyn.identification.estimators:irls", passes=True,
                  candidate=False),
    EstimatorSpec("ridge", "ridge, strength by generalised cross-validation", "robodyn.identification.estimators:ridge"),
    EstimatorSpec("tls", "total least squares", "robodyn.identification.estimators:tls"),
):
    register_estimator(_spec)

# `robodyn friction design` and `robodyn demo`: ten speeds, dense around the Franka's Stribeck
# velocities (0.05-0.09 rad/s), over a window of +- 0.1 rad: about 1.5 min of motion per joint
# (robodyn.identification.friction)
EXPERIMENT_SPEEDS = (0.015, 0.03, 0.045, 0.06, 0.08, 0.1, 0.13, 0.18, 0.3, 0.6)
EXPERIMENT_HALF_WIDTH = 0.1  # rad
