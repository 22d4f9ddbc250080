"""Model selection's candidates as column subsets of one regressor: the candidates of one fold
share their processing and differ only in which standard columns they carry (rotor inertia on or
off) and in their friction columns, so the regressor is evaluated once on the union of their base
columns and each candidate's rows and normal equations are a subset of it (selection.py); the
friction residual and the held-out predictions reuse those rows too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from robodyn.robot.model import RobotModel

from .pipeline import IdentificationConfig, PreparedData, ProcessedCache, prepare
from .signals import SampledData
from .streaming import coulomb_signal


def _column_key(prep: "PreparedData") -> tuple:
    """What a prepared fit's friction columns depend on besides the states: their kind and scales."""
    columns = prep.config.columns
    return (None if columns is None else repr(columns.to_dict()), len(prep.extra_names))


@dataclass(frozen=True)
class _UnionChunk:
    """One chunk of a friction-column set's rows: the regressor on the union of the candidates'
    base columns (joint-major (n, N, u), shared between sets whose states agree), the torque, the
    set's own Coulomb signal where it differs from the one in W (else None) and its Stribeck
    excess columns (N, n) (else None)."""

    W: np.ndarray
    tau: np.ndarray
    coulomb: np.ndarray | None
    extra: np.ndarray | None


class SubsetRows:
    """A candidate's rows, re-iterable as (joint-major rows (n, N, p), torque) chunks as
    ``PreparedData.chunks`` are, held as columns ``take`` of shared union rows (indices past ``u``:
    the set's Stribeck excess columns) with the set's own Coulomb signal in the columns
    ``coulomb_at`` names: nothing is copied until read. IRLS reads each joint's reached columns
    straight from the union rows (:meth:`joint_rows`), and a prediction needs no copy at all
    (:meth:`predicted`)."""

    def __init__(self, chunks: Sequence[_UnionChunk], take: np.ndarray, u: int, coulomb_at, dof: int,
                 starts: Sequence[int]):
        self._chunks, self._take, self._u, self._dof = list(chunks), np.asarray(take, np.int64), u, dof
        # per joint, the first union column its rows can reach (the earlier ones are structurally zero)
        self._starts = [int(k) for k in starts]
        position = {int(k): i for i, k in enumerate(self._take)}
        # (joint, candidate column) of each Coulomb column the candidate carries
        self._coulomb = [(j, position[at]) for j, at in coulomb_at if at in position]

    def _columns(self, c: _UnionChunk, j: int, columns: np.ndarray) -> np.ndarray:
        """Joint j's rows on candidate columns ``columns`` (ascending), as one new array."""
        idx = self._take[columns]
        inside = idx < self._u
        rows = np.zeros((c.tau.shape[0], columns.size))
        rows[:, inside] = c.W[j].take(idx[inside], axis=1)
        for k in np.flatnonzero(~inside):
            if idx[k] - self._u == j:  # joint j's own excess column; the others' are zero in its rows
                rows[:, k] = c.extra[:, j]
        if c.coulomb is not None:
            for jj, at in self._coulomb:
                k = int(np.searchsorted(columns, at))
                if jj == j and k < columns.size and columns[k] == at:
                    rows[:, k] = c.coulomb[:, j]
        return rows

    def __call__(self):
        everything = np.arange(self._take.size)
        for c in self._chunks:
            yield np.stack([self._columns(c, j, everything) for j in range(self._dof)]), c.tau

    def joint_rows(self, reached):
        """Per chunk, ([joint j's rows on its columns ``reached[j]``], torque)."""
        for c in self._chunks:
            yield [self._columns(c, j, np.asarray(cols, np.int64)) for j, cols in enumerate(reached)], c.tau

    def torques(self) -> list[np.ndarray]:
        return [c.tau for c in self._chunks]

    def predicted(self, theta: np.ndarray) -> list[np.ndarray]:
        """Per chunk, the candidate's torque (N, n) for parameters ``theta``: one product with the
        union rows (theta scattered onto them), then the set's own Coulomb and excess columns."""
        inside = self._take < self._u
        spread = np.zeros(self._u)
        spread[self._take[inside]] = theta[inside]
        out = []
        for c in self._chunks:
            tau = np.empty((c.tau.shape[0], self._dof))
            for j, start in enumerate(self._starts):  # each joint's reachable columns only
                tau[:, j] = c.W[j, :, start:] @ spread[start:]
            if c.coulomb is not None:
                for j, at in self._coulomb:
                    tau[:, j] += (c.coulomb[:, j] - c.W[j, :, self._take[at]]) * theta[at]
            for k in np.flatnonzero(~inside):
                j = int(self._take[k]) - self._u
                tau[:, j] += c.extra[:, j] * theta[k]
            out.append(tau)
        return out


def _normal_equations(rows, dof: int, params: int):
    from .estimators import NormalEquations

    ne = NormalEquations(dof, params)
    for W, tau in rows:
        ne.add(W, tau)
    return ne


def _union_normal_equations(model: RobotModel, reference, spec, union: np.ndarray):
    """The normal equations of the union rows ``reference`` holds ((data, start, stop, rows) per
    chunk), from the states in one fused pass per chunk (regressor.gram_blocks: each joint's
    products over the columns its row reaches only) instead of a Gram matrix over the stored rows,
    whose other columns are structurally zero in that joint's rows."""
    from .estimators import NormalEquations
    from .regressor import gram_blocks

    G, plan, samples = None, None, 0
    for d, s, e, _ in reference:
        fc = coulomb_signal(d, spec)
        plan, G = gram_blocks(model, d.q[s:e], d.qd[s:e], d.qdd[s:e], d.tau[s:e], spec, union,
                              coulomb=None if fc is None else fc[s:e], G=G)
        samples += e - s
    ne = NormalEquations(model.dof, union.size)
    if plan is not None:
        ne.add_gram(plan.columns, G, samples)
    return ne


def _reach_starts(model: RobotModel, spec, union: np.ndarray) -> list[int]:
    """Per joint, the first of the ``union`` columns its regressor row can reach
    (regressor.structural_rows): a link's columns reach the joints up to its own, so each joint's
    rows are zero before this column, and products with them can skip that part of every row."""
    from .regressor import structural_rows

    reach = structural_rows(model, spec)[:, union]
    return [int(np.argmax(r)) if r.any() else union.size for r in reach]


def _with_own_friction_columns(union, chunks: Sequence[_UnionChunk], coulomb_at, extra_columns: int,
                               starts: Sequence[int]):
    """The normal equations of a friction-column set from those of the union rows it shares: joint
    j's Coulomb column and its Stribeck excess column are non-zero in joint j's rows only, so
    replacing the one and appending the other changes joint j's sums in that row and column alone
    (W_j^T X for the new columns X, their Gram matrix, their products with the torque and their
    sums): a few matrix products instead of a Gram matrix over copied rows."""
    from .estimators import NormalEquations

    replaced = any(c.coulomb is not None for c in chunks)
    if not replaced and not extra_columns:
        return union
    u = union.params
    p = u + extra_columns
    ne = NormalEquations(union.dof, p)
    ne.A[:, :u, :u] = union.A
    ne.b[:, :u] = union.b
    ne.column_sums[:, :u] = union.column_sums
    ne.c[:] = union.c
    ne.rows[:] = union.rows
    ne.torque_sums[:] = union.torque_sums
    at_of = dict(coulomb_at)
    for j in range(union.dof):
        new = ([at_of[j]] if replaced and j in at_of else []) + ([u + j] if extra_columns else [])
        if not new:
            continue
        A = ne.A[j]
        A[new, :] = 0.0
        ne.b[j, new] = ne.column_sums[j, new] = 0.0
        for c in chunks:
            X = np.empty((c.tau.shape[0], len(new)))  # the new columns' values in joint j's rows
            if replaced and j in at_of:
                X[:, 0] = c.W[j, :, at_of[j]] if c.coulomb is None else c.coulomb[:, j]
            if extra_columns:
                X[:, -1] = c.extra[:, j]
            block = np.zeros((len(new), p))
            # the columns before starts[j] are zero in joint j's rows
            block[:, starts[j]:u] = X.T @ c.W[j, :, starts[j]:]
            block[:, new] = X.T @ X  # the new columns against each other (W's own column is stale there)
            A[new, :] += block
            ne.b[j, new] += X.T @ c.tau[:, j]
            ne.column_sums[j, new] += X.sum(axis=0)
        A[:, new] = A[new, :].T
    return ne


def prepare_column_subsets(model: RobotModel, datasets: Sequence[SampledData],
                           configs: Sequence[IdentificationConfig], *,
                           processed: ProcessedCache | None = None,
                           shared: dict | None = None) -> list[tuple[PreparedData, object]]:
    """(prepared data kept in memory, normal equations) of each of ``configs``, which share their
    processing and differ in which standard columns they carry (rotor inertia on or off) and in
    their friction columns (Coulomb-viscous, sigmoid or Stribeck, at their scales). The regressor is
    evaluated once, on the union of every config's base columns (named in the widest config's
    standard columns), on the first config's processed data; each config's rows are a column subset
    of it, with the Coulomb columns carrying that config's own (parallel-filtered) Coulomb signal
    and its Stribeck columns appended, and its normal equations the same subset of one Gram matrix
    per friction-column set. This holds because processing gives every friction-column set the same
    samples, states and torque (checked, piece by piece) and a Coulomb column FC_j is joint j's
    Coulomb signal in joint j's rows only (checked on the first config's rows). Equal to
    ``prepare(..., cache=True)`` and ``accumulate`` per config, up to the rounding of the sums'
    order. Weighted recordings (several, not "equal") are prepared one config at a time.
    ``shared`` (a dict kept by the caller for calls on the same ``datasets``) keeps the regressor
    for later calls whose configs come later (model selection fits the sigmoid and Stribeck
    candidates after the Coulomb-viscous one whose residual chooses their scales)."""
    from .estimators import accumulate, enough_samples
    from .regressor import joint_major_regressor_columns

    preps = [prepare(model, datasets, c, processed=processed) for c in configs]
    widest = max(preps, key=lambda p: len(p.base.standard_names))
    index = {name: k for k, name in enumerate(widest.base.standard_names)}
    if (any(p.stacked is not None for p in preps) or len({p.config.processing.processing_key() for p in preps}) > 1
            or any(name not in index for p in preps for name in p.base.standard_names)):
        out = []
        for c in configs:
            prep = prepare(model, datasets, c, cache=True, processed=processed)
            out.append((prep, accumulate(prep.chunks, model.dof, prep.params)))
        return out
    wanted = [np.array([index[p.base.standard_names[i]] for i in p.base.independent], dtype=np.int64) for p in preps]
    union = np.unique(np.concatenate(wanted))
    spec, chunk, dof = widest.config.spec, widest.config.chunk_samples, model.dof
    # the Coulomb columns among the union: (joint, position), joint j's FC_j
    names = [widest.base.standard_names[k] for k in union]
    coulomb_at = [(j, names.index(f"FC{j + 1}")) for j in range(dof) if f"FC{j + 1}" in names]
    starts = _reach_starts(model, spec, union)
    keys = [_column_key(p) for p in preps]
    sources = {}
    for key, prep in zip(keys, preps):
        sources.setdefault(key, prep)
    pieces = {key: list(prep.chunks.source()) for key, prep in sources.items()}

    def evaluate(d: SampledData, s: int, e: int) -> np.ndarray:
        fc = coulomb_signal(d, spec)
        return joint_major_regressor_columns(model, d.q[s:e], d.qd[s:e], d.qdd[s:e], spec, union,
                                             coulomb=None if fc is None else fc[s:e])

    def coulomb_of(d: SampledData) -> np.ndarray:
        fc = coulomb_signal(d, spec)
        return np.sign(d.qd) if fc is None else fc

    def same_states(a: SampledData, b: SampledData) -> bool:
        # pieces derived from the same processing share their state arrays (processed_cache.py)
        return all(getattr(a, f) is getattr(b, f) or np.array_equal(getattr(a, f), getattr(b, f))
                   for f in ("t", "q", "qd", "qdd", "tau"))

    def coulomb_columns_hold(reference) -> bool:
        if not coulomb_at:
            return True
        joints, columns = [j for j, _ in coulomb_at], [at for _, at in coulomb_at]
        for d, s, e, W in reference:
            fc = coulomb_of(d)[s:e]
            got = W[:, :, columns]  # every Coulomb column in one gather: each row's cache line read once
            expected = np.zeros_like(got)
            for k, j in enumerate(joints):
                expected[j, :, k] = fc[:, j]
            if not np.array_equal(got, expected):
                return False
        return True

    cache_key = (widest.config.processing.processing_key(), spec, tuple(union.tolist()), chunk)
    if shared is not None and cache_key in shared:
        first, first_pieces, reference, union_gram, shareable = shared[cache_key]
    else:
        first = keys[0]
        first_pieces = pieces[first]
        reference = [(d, s, min(d.count, s + chunk), evaluate(d, s, min(d.count, s + chunk)))
                     for d in first_pieces for s in range(0, d.count, chunk)]
        union_gram = _union_normal_equations(model, reference, spec, union)
        shareable = coulomb_columns_hold(reference)  # checked once per regressor, on its own rows
        if shared is not None:
            shared[cache_key] = (first, first_pieces, reference, union_gram, shareable)
    sets: dict = {}  # friction-column set -> (its rows over the union, their normal equations)
    for key, own in pieces.items():
        reuse = key == first or (shareable and len(own) == len(first_pieces)
                                 and all(same_states(a, b) for a, b in zip(own, first_pieces)))
        reused = iter(reference)
        chunks = []
        for d in own:
            # a set whose states are the first set's shares its rows and sums: only its own Coulomb
            # signal (parallel filtering) and Stribeck columns differ, and they are applied on use
            fc = coulomb_of(d) if reuse and key != first and coulomb_at else None
            for s in range(0, d.count, chunk):
                e = min(d.count, s + chunk)
                W = next(reused)[3] if reuse else evaluate(d, s, e)
                chunks.append(_UnionChunk(W, d.tau[s:e], None if fc is None else fc[s:e],
                                          None if d.friction_extra is None else d.friction_extra[s:e]))
        base = union_gram if reuse else _normal_equations([(c.W, c.tau) for c in chunks], dof, union.size)
        sets[key] = (chunks, _with_own_friction_columns(base, chunks, coulomb_at, key[1], starts))
    out = []
    for prep, key, columns in zip(preps, keys, wanted):
        take = np.concatenate([np.searchsorted(union, columns), union.size + np.arange(key[1])])
        chunks, gram = sets[key]
        prep.chunks = SubsetRows(chunks, take, union.size, coulomb_at, dof, starts)
        prep.steps = sources[key].steps
        out.append((prep, enough_samples(gram.subset(take))))
    return out


def residual_on_rows(prep, theta: np.ndarray, fit: Sequence[SampledData], processed: ProcessedCache):
    """What :func:`.pipeline.friction_residual` returns for the Coulomb-viscous fit ``theta`` of
    ``prep``, from the regressor rows ``prep`` already holds instead of evaluating them again: (qd,
    torque - rows theta) over the processed fit samples, whose pieces ``processed`` holds as the
    residual reads them (the same friction columns, so the same processing). None, and the caller
    computes it, when the rows are not those samples in that order (their torque is compared) or
    are more than the residual reads."""
    from .estimators import _predict
    from .friction import FrictionColumns
    from .pipeline import SCALE_SAMPLES

    if prep.stacked is not None or prep.config.friction != "coulomb-viscous" or prep.extra_names:
        return None
    pieces = [p.data for raw in fit for p in processed.pieces(raw, prep.config.processing, columns=FrictionColumns())]
    if isinstance(prep.chunks, SubsetRows):  # no copy of the rows: one product with the shared ones
        torques = prep.chunks.torques()
        predicted = prep.chunks.predicted(theta)
    else:
        rows = list(prep.chunks())
        torques = [tau for _, tau in rows]
        predicted = [_predict(W, theta, tau.shape[1]) for W, tau in rows]
    count = sum(tau.shape[0] for tau in torques)
    if count > SCALE_SAMPLES or count != sum(d.count for d in pieces):
        return None
    tau = np.concatenate(torques)
    if not np.array_equal(tau, np.concatenate([d.tau for d in pieces])):
        return None
    predicted = np.concatenate(predicted)
    return np.concatenate([d.qd for d in pieces]), tau - predicted


def shared_predictions(fitted: list) -> list[list]:
    """The candidates of one friction and cut-off (rotor, prepared data, thetas) in groups whose
    held-out torque is one regressor product: the same friction columns and processing, base columns
    named within the widest one's standard columns. Others stand alone."""
    groups: list[list] = []
    for item in fitted:
        prep = item[1]
        key = (repr(None if prep.config.columns is None else prep.config.columns.to_dict()), len(prep.extra_names),
               prep.config.processing.processing_key(), prep.friction is None)
        for group in groups:
            if group[0] == key:
                group[1].append(item)
                break
        else:
            groups.append((key, [item]))
    out = []
    for _, items in groups:
        widest = max((p for _, p, _ in items), key=lambda p: len(p.base.standard_names))
        names = set(widest.base.standard_names)
        if all(set(p.base.standard_names) <= names for _, p, _ in items):
            out.append(items)
        else:
            out += [[item] for item in items]
    return out
