"""Streaming a recording into per-joint normal equations: the regressor evaluated and reduced in
one pass, on several threads, with memory bounded by a few windows whatever the duration.

:class:`RegressorChunks` is the re-iterable chunk source the estimators consume (joint-major base
regressor rows and torques, for passes that need the rows themselves, such as IRLS residuals),
and it also reduces the whole source to :class:`~.estimators.NormalEquations` directly:

* the source's processed windows are split into parts of a fixed number of samples;
* each part is reduced by :func:`~.regressor.gram_blocks` on a worker thread (the kernel releases
  the GIL), while the calling thread produces the next window (signal processing);
* part results are summed in the order of the parts, so the statistics do not depend on the
  number of threads or on their timing;
* at most ``2 * threads`` parts are in flight, so memory does not grow with the recording;
* ``progress``, when set, is called with the samples reduced so far each time a part's sums are
  added (in part order, on the calling thread), so a command can show progress and an estimate of
  the time left on a recording of any length.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator

import numpy as np

from robodyn.robot.model import RobotModel

from .base_params import BaseParameters
from .estimators import NormalEquations
from .regressor import ColumnSpec, default_threads, gram_blocks, joint_major_regressor_columns
from .signals import SampledData

PART_SAMPLES = 65536  # samples per unit of parallel work (fixed: results do not depend on threads)


def coulomb_signal(d: SampledData, spec: ColumnSpec):
    """The filtered sgn(qd) a processed piece carries for the Coulomb columns (parallel filtering),
    or None for sgn(qd) itself."""
    return d.coulomb if "coulomb" in spec.friction and d.coulomb is not None else None


def with_friction_extra(Wj: np.ndarray, extra: np.ndarray | None) -> np.ndarray:
    """Joint-major rows (n, N, p) with one Stribeck excess column per joint appended (n, N, p + n):
    joint j's column is nonzero in its own rows only."""
    if extra is None:
        return Wj
    n, N, p = Wj.shape
    out = np.zeros((n, N, p + n))
    out[:, :, :p] = Wj
    for j in range(n):
        out[j, :, p + j] = extra[:, j]
    return out


class RegressorChunks:
    """A re-iterable source of (joint-major base regressor rows (n, N, b), torque (N, n)) chunks of
    at most ``chunk`` samples, and the one-pass reduction of the same data to normal equations."""

    def __init__(self, model: RobotModel, source: Callable[[], Iterator[SampledData]], spec: ColumnSpec,
                 base: BaseParameters, chunk: int, threads: int | None = None, extra: int = 0,
                 progress: Callable[[int], None] | None = None):
        self.model = model
        self.source = source
        self.spec = spec
        self.base = base
        self.chunk = int(chunk)
        self.extra = int(extra)  # Stribeck excess columns the pieces carry (0 or one per joint)
        self.threads = default_threads() if threads is None else max(1, int(threads))
        self.progress = progress  # called with the samples reduced so far (normal_equations)

    def __call__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for d in self.source():
            for s in range(0, d.count, self.chunk):
                e = min(d.count, s + self.chunk)
                fc = coulomb_signal(d, self.spec)
                W = joint_major_regressor_columns(self.model, d.q[s:e], d.qd[s:e], d.qdd[s:e], self.spec,
                                                  self.base.independent, coulomb=None if fc is None else fc[s:e])
                extra = None if d.friction_extra is None else d.friction_extra[s:e]
                yield with_friction_extra(W, extra), d.tau[s:e]

    def normal_equations(self) -> NormalEquations:
        """Per-joint normal equations of the whole source on the base columns, in one pass. A
        source whose pieces carry Stribeck excess columns is reduced from its rows instead (the
        fused kernel knows the rigid-body and linear friction columns only)."""
        done = 0
        if self.extra:
            ne = NormalEquations(self.model.dof, self.base.count + self.extra)
            for W, tau in self():
                ne.add(W, tau)
                done += tau.shape[0]
                if self.progress is not None:
                    self.progress(done)
            return ne
        model, spec, columns = self.model, self.spec, self.base.independent
        ne = NormalEquations(model.dof, self.base.count)
        plan = None

        def reduce(q, qd, qdd, tau, fc):
            return gram_blocks(model, q, qd, qdd, tau, spec, columns, coulomb=fc)

        def collect(future, count):
            nonlocal plan, done
            plan, G = future.result()
            ne.add_gram(plan.columns, G, count)
            done += count
            if self.progress is not None:
                self.progress(done)

        pending: deque = deque()
        with ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="robodyn-gram") as pool:
            try:
                for d in self.source():
                    fc = coulomb_signal(d, spec)
                    for s in range(0, d.count, PART_SAMPLES):
                        e = min(d.count, s + PART_SAMPLES)
                        while len(pending) >= 2 * self.threads:
                            collect(*pending.popleft())
                        pending.append((pool.submit(reduce, d.q[s:e], d.qd[s:e], d.qdd[s:e], d.tau[s:e],
                                                    None if fc is None else fc[s:e]), e - s))
                while pending:
                    collect(*pending.popleft())
            finally:
                for future, _ in pending:
                    future.cancel()
        return ne
