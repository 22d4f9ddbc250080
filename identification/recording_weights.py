"""Several recordings in one fit: each processed on its own, stacked, and weighted.

The stacked least-squares problem over recordings r = 1..R is

    minimise  sum_r sum_j w_rj || tau_rj - W_rj theta ||^2

with one weight per recording and joint. Weighting the rows of recording r by sqrt(w_rj) is the
same as scaling its per-joint normal equations by w_rj, so every estimator (OLS, Gautier's WLS,
IRLS, ridge, TLS, the metaheuristics) sees the weighted problem unchanged: the normal equations of
each recording are accumulated once and summed with their weights (:class:`StackedChunks`).

Weights (``IdentificationConfig.recording_weights``):

- ``"inverse-variance"`` (the default): within each joint, each recording weighted by the inverse
  of its residual variance after an unweighted least-squares fit of all of them (feasible
  generalised least squares). Why this default: recordings of one arm made on different days,
  with different payloads, sensors or sampling rates differ in noise (and in how well the model
  class fits them); with equal per-sample weights the noisiest recording pulls the estimate as
  hard as the cleanest, and the fit is no longer the minimum-variance one (Gauss-Markov needs
  equal variances). Weighting by the inverse variance is the best linear unbiased estimate for
  independent recordings of different noise, and costs nothing here: the per-recording residual
  sums of squares follow from each recording's normal equations (no second pass over the data).
  Weights are per joint so that one noisy sensor does not drown a recording's good joints; they
  are normalised per joint to a mean of one per sample, which leaves the per-joint scale to the
  estimator (Gautier's WLS weights joints; this weights recordings within a joint). Recordings
  of equal noise get weights near one, i.e. the plain stacked fit;
- ``"equal"``: every sample counts the same (the plain stacked fit);
- numbers, one per recording (or one list of per-joint numbers per recording): relative weights
  the user chose, normalised as above. The covariance the estimators report is then the
  weighted-least-squares one, right only when the weights are proportional to the inverse noise
  variance.

The result stores the weights used (per recording and joint) in its config, like the cut-off.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from .estimators import NormalEquations, ols

RECORDING_WEIGHTS = ("inverse-variance", "equal")
DEFAULT = "inverse-variance"


def check_spec(spec, recordings: int | None = None):
    """The weights option as given: one of RECORDING_WEIGHTS, or numbers per recording (positive)."""
    if isinstance(spec, str):
        if spec in RECORDING_WEIGHTS:
            return spec
        try:
            spec = [float(x) for x in spec.split(",")]
        except ValueError:
            raise ValueError(f"recording_weights: expected {' or '.join(RECORDING_WEIGHTS)} or one number per "
                             f"recording, got {spec!r}") from None
    values = [np.asarray(w, float).ravel().tolist() for w in spec]
    flat = np.concatenate([np.asarray(v, float) for v in values]) if values else np.zeros(0)
    if not np.all(np.isfinite(flat)) or np.any(flat <= 0):
        raise ValueError(f"recording_weights: every weight must be a positive number, got {spec!r}")
    if recordings is not None and len(values) != recordings:
        raise ValueError(f"recording_weights: {len(values)} weights given for {recordings} recordings "
                         "(one per recording, in the order the recordings are given)")
    return values


def scaled(ne: NormalEquations, w: np.ndarray) -> NormalEquations:
    """Normal equations of the same rows weighted by w_j per joint (rows scaled by sqrt(w_j)); the
    row counts stay sample counts."""
    w = np.asarray(w, float)
    return NormalEquations(ne.dof, ne.params, ne.A * w[:, None, None], ne.b * w[:, None], ne.c * w, ne.rows.copy(),
                           ne.column_sums * w[:, None], ne.torque_sums * w)


def normalise(weights: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per-joint weights (R, n) scaled so that, in each joint, the mean weight per sample is one."""
    weights = np.asarray(weights, float)
    rows = np.asarray(rows, float)  # (R, n) samples per recording and joint
    mean = (weights * rows).sum(0) / np.maximum(rows.sum(0), 1.0)
    return weights / np.where(mean > 0, mean, 1.0)


def inverse_variance(parts: Sequence[NormalEquations], names=None) -> tuple[np.ndarray, np.ndarray]:
    """Per recording and joint: (weights normalised as above, residual variance after the unweighted
    stacked OLS fit). Exact data (a residual of zero) keep equal weights."""
    total = parts[0]
    for ne in parts[1:]:
        total = total.merge(ne)
    theta = ols(total, names).theta
    rows = np.array([ne.rows for ne in parts], float)
    var = np.array([ne.joint_rss(theta) for ne in parts]) / np.maximum(rows, 1.0)
    top = var.max(0)
    floor = np.where(top > 0, top * 1e-12, 1.0)
    w = np.where(top > 0, 1.0 / np.maximum(var, floor), 1.0)
    return normalise(w, rows), var


class StackedChunks:
    """The chunk source of several recordings, each recording's rows weighted: re-iterable
    (joint-major rows, torque) chunks scaled by sqrt(w_rj), and normal equations that sum each
    recording's own (accumulated once, in the fused pass of its RegressorChunks) with weights."""

    def __init__(self, parts: Sequence, spec, names=None):
        self.parts = list(parts)
        self.spec = check_spec(spec, len(self.parts))
        self.names = names
        self._ne: list | None = None
        self._weights: np.ndarray | None = None
        self.residual_variance: np.ndarray | None = None

    def part_statistics(self) -> list[NormalEquations]:
        if self._ne is None:
            self._ne = [part.normal_equations() for part in self.parts]
        return self._ne

    @property
    def weights(self) -> np.ndarray:
        """(R, n): the weight of each recording and joint."""
        if self._weights is None:
            parts = self.part_statistics()
            dof = parts[0].dof
            rows = np.array([ne.rows for ne in parts], float)
            if self.spec == "equal":
                self._weights = np.ones((len(parts), dof))
            elif self.spec == "inverse-variance":
                self._weights, self.residual_variance = inverse_variance(parts, self.names)
            else:
                given = np.array([np.broadcast_to(np.asarray(v, float), (dof,)) if len(v) in (1, dof) else
                                  _wrong_length(v, dof) for v in self.spec])
                self._weights = normalise(given, rows)
        return self._weights

    def normal_equations(self) -> NormalEquations:
        parts = self.part_statistics()
        total = None
        for ne, w in zip(parts, self.weights):
            s = scaled(ne, w)
            total = s if total is None else total.merge(s)
        return total

    def unweighted_statistics(self) -> NormalEquations:
        """The plain sum (for metrics in torque units: every sample counts once)."""
        parts = self.part_statistics()
        total = parts[0]
        for ne in parts[1:]:
            total = total.merge(ne)
        return total

    def __call__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for part, w in zip(self.parts, self.weights):
            root = np.sqrt(w)
            for W, tau in part():
                yield W * root[:, None, None], tau * root[None, :]


def _wrong_length(v, dof: int):
    raise ValueError(f"recording_weights: a recording's weights are one number or {dof} (one per joint), got {len(v)}")
