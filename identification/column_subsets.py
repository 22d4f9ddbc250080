"""Model selection's candidates as column subsets of one regressor: the candidates of one fold
share their processing and differ only in which standard columns they carry (rotor inertia on or
off) and in their friction columns, so the regressor is evaluated once on the union of their base
columns and each candidate's rows and normal equations are a subset of it (selection.py); the
friction residual and the held-out predictions reuse those rows too."""

from __future__ import annotations

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
    from .estimators import NormalEquations, accumulate, enough_samples
    from .regressor import joint_major_regressor_columns
    from .streaming import with_friction_extra

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
        return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("t", "q", "qd", "qdd", "tau"))

    cache_key = (widest.config.processing.processing_key(), spec, tuple(union.tolist()), chunk)
    if shared is not None and cache_key in shared:
        first, first_pieces, reference = shared[cache_key]
    else:
        first = keys[0]
        first_pieces = pieces[first]
        reference = [(d, s, min(d.count, s + chunk), evaluate(d, s, min(d.count, s + chunk)))
                     for d in first_pieces for s in range(0, d.count, chunk)]
        if shared is not None:
            shared[cache_key] = (first, first_pieces, reference)

    def coulomb_columns_hold() -> bool:
        for d, s, e, W in reference:
            fc = coulomb_of(d)[s:e]
            for j, at in coulomb_at:
                expected = np.zeros((dof, e - s))
                expected[j] = fc[:, j]
                if not np.array_equal(W[:, :, at], expected):
                    return False
        return True

    shareable = coulomb_columns_hold()
    rows: dict = {}  # friction-column set -> [(rows on union + its extra columns, torque)]
    for key, own in pieces.items():
        if key != first and not (shareable and len(own) == len(first_pieces)
                                 and all(same_states(a, b) for a, b in zip(own, first_pieces))):
            reuse = None
        else:
            reuse = iter(reference)
        kept = []
        for d in own:
            fc = coulomb_of(d) if reuse is not None and key != first else None
            for s in range(0, d.count, chunk):
                e = min(d.count, s + chunk)
                W = evaluate(d, s, e) if reuse is None else next(reuse)[3]
                extra = None if d.friction_extra is None else d.friction_extra[s:e]
                if reuse is not None and fc is not None:
                    # the rigid-body columns shared, this set's Coulomb signal, in one copy (with
                    # the extra columns appended the rows are a new array already)
                    W = W.copy() if extra is None else with_friction_extra(W, extra)
                    for j, at in coulomb_at:
                        W[j, :, at] = fc[s:e, j]
                else:
                    W = with_friction_extra(W, extra)
                kept.append((W, d.tau[s:e]))
        rows[key] = kept
    grams = {}
    for key, kept in rows.items():
        gram = NormalEquations(dof, union.size + key[1])
        for W, tau in kept:
            gram.add(W, tau)
        grams[key] = gram
    out = []
    for prep, key, columns in zip(preps, keys, wanted):
        take = np.concatenate([np.searchsorted(union, columns), union.size + np.arange(key[1])])
        # take along the last axis writes a C-ordered copy in one pass; W[:, :, take] makes a strided
        # one that then needs a second copy (60 ms against 4 ms for 7 joints x 3793 samples x 79
        # columns, measured on a loaded 2-core host)
        kept = [(W.take(take, axis=2), tau) for W, tau in rows[key]]
        prep.chunks = (lambda kept=kept: iter(kept))
        prep.steps = sources[key].steps
        out.append((prep, enough_samples(grams[key].subset(take))))
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
    rows = list(prep.chunks())
    count = sum(tau.shape[0] for _, tau in rows)
    if count > SCALE_SAMPLES or count != sum(d.count for d in pieces):
        return None
    tau = np.concatenate([tau for _, tau in rows])
    if not np.array_equal(tau, np.concatenate([d.tau for d in pieces])):
        return None
    predicted = np.concatenate([_predict(W, theta, tau.shape[1]) for W, _ in rows])
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
