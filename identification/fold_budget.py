"""What one fold of model selection (selection.py) may cost, decided before any fold runs: how many
processed samples it fits and scores on (thinning on a long recording), the memory its regressor
rows take, how many folds run at once in threads within the processors and memory there are, and
whether Numba's threading layer allows that at all."""

from __future__ import annotations

import dataclasses
import os
from typing import Sequence

from robodyn.robot.model import RobotModel

from .folds import Fold
from .pipeline import IdentificationConfig
from .regressor import parameter_names

FOLD_MEMORY_SHARE = 0.25  # of the memory available, what the folds scored at once may hold together
FOLD_MEMORY_BYTES = 1 << 30  # the same where the kernel does not say what is available
MEMORY_SHARE = 0.5  # of the memory available, the most one fold may need before select refuses


# Fit samples a fold's candidates are fitted on at most: beyond them, every fold keeps one processed
# sample in so many (selection_thinning), fit and held out alike, and the chosen candidate is refitted
# on every sample. The rows of a recording low-passed far below its sample rate are nearly copies of
# their neighbours, so the candidates' mean fold scores move little when thinned
# (bench/realdata/select_thinning.py forces one in 2, 4 and 8 on every real split), while a fold's
# rows, its time and its memory stop growing with the recording: an hour at 1 kHz used to be refused
# (9.5 GiB a fold) and a quarter hour cost 3.9 times the default fit (bench/identify/select_cost.py).
# No real log of bench/realdata comes near it (the TX40's 27,000 identification samples the most), so
# their selection is untouched.
SELECTION_SAMPLES = 50_000


def selection_thinning(plan: Sequence[Fold], config: IdentificationConfig) -> int:
    """One processed sample in how many each fold of ``plan`` fits and scores on: the fewest that
    keeps its largest fit (after the config's decimation) within :data:`SELECTION_SAMPLES`. One when
    the periods are averaged: the fit is then one averaged period, however long the recording."""
    if config.processing.average_period_s is not None:
        return 1
    return max(1, -(-_largest_fit(plan, config) // SELECTION_SAMPLES))


def _largest_fit(plan: Sequence[Fold], config: IdentificationConfig) -> int:
    """The samples the largest fit of ``plan`` keeps after the config's decimation."""
    return max(sum(e - s for _, s, e in fold.fit) for fold in plan) // max(int(config.processing.decimation), 1)


def fold_memory(model: RobotModel, config: IdentificationConfig, plan: Sequence[Fold],
                every: int = 1) -> tuple[int, str]:
    """(bytes, how they were counted) a fold of ``plan`` keeps at most: the regressor rows of its
    fit samples (one row per joint and sample, a column per standard parameter of the widest
    candidate, with rotor inertia and a Stribeck column per joint), which its candidates share and
    read. Decimation keeps one sample in so many, and so does thinning (``every``,
    :func:`selection_thinning`)."""
    widest = dataclasses.replace(config, rotor_inertia=True, friction="coulomb-viscous", friction_model=None)
    columns = len(parameter_names(model, widest.spec)) + model.dof
    samples = -(-_largest_fit(plan, config) // every)
    return (samples * model.dof * columns * 8,
            f"{samples} fit samples x {model.dof} joints x {columns} columns x 8 bytes")


def fold_workers(folds: int, fold_bytes: int, available: int | None = None) -> int:
    """How many folds :func:`.selection.select` scores at once, each in its own thread: one per processor this
    process may use, at most one per fold, and no more than :data:`FOLD_MEMORY_SHARE` of the
    ``available`` memory holds at ``fold_bytes`` each (:func:`fold_memory`; :data:`FOLD_MEMORY_BYTES`
    when the memory available is not known). Most of a fold's time is in filters, BLAS and
    compiled kernels that release the GIL. One unless :func:`concurrent_kernels_safe`."""
    if not concurrent_kernels_safe():
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    budget = FOLD_MEMORY_BYTES if available is None else int(FOLD_MEMORY_SHARE * available)
    return max(1, min(cpus, folds, budget // max(int(fold_bytes), 1)))


def concurrent_kernels_safe() -> bool:
    """Whether Numba's threading layer takes parallel kernels launched from two threads at once:
    OpenMP and TBB do; its fallback, workqueue, aborts the process. False before any parallel
    kernel has run (the layer is chosen then)."""
    import numba

    try:
        return numba.threading_layer() in ("omp", "tbb")
    except ValueError:
        return False


def available_memory() -> int | None:
    """Bytes of memory the kernel says are available (MemAvailable), None where it does not say."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
