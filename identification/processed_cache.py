"""Processed recordings kept for reuse within one model selection (selection.py): candidates
that process the same recording the same way share one pass, a friction column set's pieces are
derived from the plain ones (only its own signals filtered), and candidates predicting the same
samples share one regressor evaluation."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np

from robodyn.robot.model import RobotModel

from .friction import FrictionColumns
from .processing import ProcessingConfig, friction_signals, process_windows
from .regressor import ColumnSpec, regressor
from .signals import SampledData, first_nonfinite_row

ROWS_KEPT_BYTES = 256 * 2**20  # regressor rows a ProcessedCache keeps for candidates predicting the same samples


class ProcessedCache:
    """Processed pieces of recordings, kept for reuse within one model selection: candidates that
    process the same recording the same way (same processing, friction columns and purpose; no
    subtracted friction model) share one pass instead of filtering it again. Holds the recordings
    processed whole in memory, so it lives only as long as the selection that made it. Safe to share
    between threads (folds scored at once): one lock guards the store, and a piece missing is
    processed under it, once.

    ``every`` > 1 thins every fit piece to one processed sample in ``every`` after processing (the
    filters ran at the full rate; no anti-alias filter, as decimation would add, because the rows of a
    least-squares fit are not a signal to be reconstructed): model selection's folds on a long
    recording (fold_budget.selection_thinning). Predictions are never thinned."""

    def __init__(self, every: int = 1):
        if int(every) != every or every < 1:
            raise ValueError(f"every: a positive whole number of samples, got {every}")
        self._store: dict = {}
        self._rows: dict = {}
        self._lock = threading.RLock()
        self._every = int(every)

    def sharing_pieces(self) -> "ProcessedCache":
        """A cache over the same processed pieces with regressor rows of its own: a fold of model
        selection predicts samples no other fold predicts, so its rows go when it ends (memory freed
        before the next fold's rows are made is reused at once; fresh memory costs a first touch of
        every page), and folds scored at once do not evict each other's."""
        view = ProcessedCache(self._every)
        view._store, view._lock = self._store, self._lock
        return view

    def rows(self, model: RobotModel, d: SampledData, spec: ColumnSpec, s: int, e: int) -> np.ndarray:
        """Sample-major regressor rows of ``d[s:e]`` with sgn(qd) in the Coulomb columns, evaluated
        once for every candidate that predicts the same samples with the same columns (model
        selection's friction candidates differ only in their Coulomb signal and Stribeck columns:
        :func:`_predict_many` applies those). Keyed by the samples' times and checked on the states."""
        key = (spec, d.count, float(d.t[0]), float(d.t[-1]), s, e)
        with self._lock:
            hit = self._rows.get(key)
        if hit is not None and all(np.array_equal(a, b) for a, b in zip(hit[0], (d.q[s:e], d.qd[s:e], d.qdd[s:e]))):
            return hit[1]
        piece = d.select(slice(s, e))
        rows = regressor(model, piece.q, piece.qd, piece.qdd, spec)
        # the oldest go first beyond a budget: selection predicts one fold's samples for every
        # candidate, then the next fold's, so only the latest few pieces are read again
        with self._lock:
            while self._rows and sum(r.nbytes for _, r in self._rows.values()) + rows.nbytes > ROWS_KEPT_BYTES:
                del self._rows[next(iter(self._rows))]
            self._rows[key] = ((piece.q, piece.qd, piece.qdd), rows)
        return rows

    def pieces(self, raw: SampledData, processing: ProcessingConfig, *, purpose: str = "fit",
               columns: FrictionColumns | None = None) -> list:
        scale = None if columns is None or columns.scale is None else tuple(np.asarray(columns.scale).tolist())
        key = (id(raw), purpose, None if columns is None else (columns.kind, scale),
               processing.processing_key())
        with self._lock:
            return self._pieces(raw, processing, purpose, columns, key)

    def _pieces(self, raw: SampledData, processing: ProcessingConfig, purpose: str, columns, key) -> list:
        hit = self._store.get(key)
        if hit is None or hit[0] is not raw:  # the recording kept with its pieces: an id is not reused
            plain = None if columns is None else self.pieces(raw, processing, purpose=purpose)
            if plain is not None and purpose == "predict":
                # a prediction's friction signals are the sharp functions of the processed velocity
                # (processing.process_windows): every column set's pieces are the plain ones with
                # their own Coulomb and Stribeck signals, not another pass of the filters. Derived
                # on each use, not kept: each fold's sigmoid and Stribeck scales are its own, and
                # kept, they held the whole held-out recording's signals once per fold and set: a
                # selection on four hours at 1 kHz ran a 24 GB host out of memory
                return [dataclasses.replace(p, data=replace_friction_signals(
                    p.data, columns.coulomb(p.data.qd), columns.extra(p.data.qd))) for p in plain]
            if plain is not None and all(p.friction_source is not None for p in plain):
                # a fit's are filtered as its torque was: only they are filtered again
                pieces = _with_friction_signals(plain, columns)
            else:
                pieces = list(process_windows(raw, processing, purpose=purpose, columns=columns))
                if purpose == "fit" and self._every > 1:
                    pieces = [_thinned(p, self._every) for p in pieces]
            hit = (raw, pieces)
            self._store[key] = hit
        return hit[1]


_FRICTION_SIGNALS = ("coulomb", "friction_extra")


def _thinned(piece, every: int):
    """A processed fit piece with one sample in ``every`` kept, its friction signals' source (which of
    the filtered window's samples it holds) thinned alike, so another column set's signals derived
    from it (:func:`_with_friction_signals`) are those of the same samples."""
    source = piece.friction_source
    if source is not None:
        source = (source[0], source[1], source[2][::every])
    return dataclasses.replace(piece, data=piece.data.select(slice(0, None, every)), friction_source=source)


def replace_friction_signals(data: SampledData, coulomb, friction_extra) -> SampledData:
    """``data``'s samples with other Coulomb and Stribeck signals (another friction-column set's):
    only the new signals are checked; the rest was checked when ``data`` was made."""
    out = object.__new__(SampledData)
    out.__dict__.update(data.__dict__)
    out.__dict__.update(coulomb=None, friction_extra=None)
    for name, arr in (("coulomb", coulomb), ("friction_extra", friction_extra)):
        if arr is None:
            continue
        arr = np.asarray(arr, float)
        if arr.shape != data.q.shape:
            raise ValueError(f"{name}: expected shape {data.q.shape} to match q, got {arr.shape}")
        row = first_nonfinite_row(arr)
        if row is not None:
            raise ValueError(f"{name}: NaN or infinite value at sample {row} (t={data.t[row]:.6g} s)")
        out.__dict__[name] = arr
    return out


def _with_friction_signals(plain: list, columns: FrictionColumns) -> list:
    """Fit pieces of another friction-column set from the plain ones: the states and the torque are
    the same, the Coulomb and Stribeck signals its own (processing.friction_signals), and the steps
    name the signals filtered beside the torque as processing would."""
    beside = {"coulomb"} | ({"friction_extra"} if columns.kind == "stribeck" else set())
    steps = [dict(step) for step in plain[0].steps]
    for step in steps:
        if step.get("step") == "lowpass_tau":
            step["parallel"] = sorted({k for k in step["parallel"] if k not in _FRICTION_SIGNALS} | beside)
        elif step.get("step") == "rloess":
            step["signals"] = ["qdd"] + sorted({k for k in step["signals"][1:] if k not in _FRICTION_SIGNALS} | beside)
    out = []
    for piece in plain:
        signals = friction_signals(piece, columns)
        out.append(dataclasses.replace(piece, steps=steps, data=replace_friction_signals(
            piece.data, signals["coulomb"], signals["friction_extra"])))
    return out
