"""IRLS forms each iteration's weighted normal equations as the unweighted ones less the share
(1 - w) of the down-weighted rows, and extrapolates its iterates (Anderson acceleration); this
checks that it reaches the fixed point of Huber IRLS written out plainly (a weighted least-squares
solve of the stacked rows each iteration, iterated to convergence), on heavy-tailed data in both row
layouts."""

import numpy as np
import pytest

from robodyn.identification.estimators import huber_weights, irls


def _plain_irls(W, tau, iterations, k=1.345):
    """Huber IRLS by weighted lstsq of the stacked rows: W (n, N, p), tau (N, n)."""
    dof = tau.shape[1]
    rows = np.concatenate([W[j] for j in range(dof)])
    target = np.concatenate([tau[:, j] for j in range(dof)])
    theta = np.linalg.lstsq(rows, target, rcond=None)[0]
    for _ in range(iterations):
        resid = tau - (W @ theta).T
        scale = 1.4826 * np.median(np.abs(resid - np.median(resid, axis=0)), axis=0)
        w = huber_weights(resid, scale, k)
        root = np.sqrt(np.concatenate([w[:, j] for j in range(dof)]))
        theta = np.linalg.lstsq(rows * root[:, None], target * root, rcond=None)[0]
    return theta


@pytest.mark.parametrize("layout", ["joint-major", "sample-major"])
def test_irls_matches_weighted_least_squares_written_out(layout):
    rng = np.random.default_rng(7)
    dof, p, N = 3, 10, 600
    truth = rng.normal(size=p)
    W = rng.normal(size=(dof, N, p))
    tau = (W @ truth).T + 0.05 * rng.standard_t(1.5, size=(N, dof))  # heavy tails: many rows down-weighted
    halves = [(W[:, :300], tau[:300]), (W[:, 300:], tau[300:])]
    if layout == "sample-major":
        halves = [(np.ascontiguousarray(w.transpose(1, 0, 2).reshape(-1, p)), t) for w, t in halves]
    est = irls(lambda: iter(halves), dof, p)
    reference = _plain_irls(W, tau, iterations=200)
    ols = np.linalg.lstsq(np.concatenate(list(W)), np.concatenate([tau[:, j] for j in range(dof)]), rcond=None)[0]
    assert np.max(np.abs(reference - ols)) > 1e-3  # the weights matter on these data
    assert not any("stopped" in n for n in est.notes)
    np.testing.assert_allclose(est.theta, reference, rtol=0, atol=1e-7 * np.max(np.abs(reference)))
