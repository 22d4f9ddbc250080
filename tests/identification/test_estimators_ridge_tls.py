"""Ridge (GCV) and total least squares against closed forms computed independently from the raw rows."""

import numpy as np
import pytest

from robodyn.identification.estimators import NormalEquations, ols, ridge, tls


def _statistics(W, tau):
    ne = NormalEquations(1, W.shape[1])
    ne.add(W[None], tau[:, None])
    return ne


def test_tls_matches_the_svd_of_the_scaled_augmented_matrix():
    rng = np.random.default_rng(3)
    N, p = 4000, 5
    X = rng.normal(size=(N, p)) * np.array([1.0, 10.0, 0.1, 3.0, 1.0])
    theta = rng.normal(size=p)
    # errors in the regressor as well as in the output: OLS is biased towards zero, TLS is not
    W = X + 0.05 * rng.normal(size=(N, p)) * np.abs(X).mean(0)
    tau = X @ theta + 0.05 * rng.normal(size=N) * np.abs(X @ theta).mean()
    est = tls(_statistics(W, tau))
    d = np.linalg.norm(W, axis=0)
    s = np.linalg.norm(tau)
    v = np.linalg.svd(np.column_stack([W / d, tau / s]))[2][-1]
    expected = -(v[:p] / v[p]) * s / d
    assert np.allclose(est.theta, expected, rtol=1e-8)
    assert est.method == "tls"


def test_ridge_is_ols_on_well_posed_data_and_shrinks_a_collinear_direction():
    rng = np.random.default_rng(4)
    N = 3000
    x = rng.normal(size=(N, 3))
    theta = np.array([1.0, -2.0, 0.5])
    tau = x @ theta + 0.01 * rng.normal(size=N)
    well = _statistics(x, tau)
    assert np.allclose(ridge(well).theta, ols(well).theta, rtol=1e-4)
    # two nearly identical columns: OLS splits their sum wildly, ridge (GCV) keeps it tame
    W = np.column_stack([x[:, 0], x[:, 0] + 1e-4 * rng.normal(size=N), x[:, 1]])
    tau2 = W[:, 0] * 1.0 + W[:, 2] * 2.0 + 0.05 * rng.normal(size=N)
    ne = _statistics(W, tau2)
    r, o = ridge(ne), ols(ne)
    assert abs(r.theta[0] + r.theta[1] - 1.0) < 0.01 and abs(r.theta[2] - 2.0) < 0.01
    assert np.abs(r.theta[:2]).max() < 0.6 * np.abs(o.theta[:2]).max()
    assert "generalised cross-validation" in r.notes[0]


def test_unknown_estimator_names_the_choices():
    from robodyn.identification.estimators import estimate

    with pytest.raises(ValueError, match="ridge"):
        estimate("lasso", lambda: iter(()), 1, 1)


def test_leaving_the_conditioning_out_changes_nothing_else():
    """estimate(..., condition=False), as model selection's candidates call it: the same estimate
    to the bit, with cond NaN; the default still reports cond(W) from the normal matrix."""
    from robodyn.identification.estimators import estimate

    rng = np.random.default_rng(5)
    W = rng.normal(size=(3, 600, 6)) * np.array([1.0, 5.0, 0.2, 1.0, 3.0, 1.0])
    tau = np.einsum("jnp,p->nj", W, rng.normal(size=6)) + 0.1 * rng.normal(size=(600, 3))
    ne = NormalEquations(3, 6)
    ne.add(W, tau)
    A = ne.A.sum(0)
    for method in ("ols", "wls", "ridge", "tls"):
        full, _ = estimate(method, None, 3, 6, statistics=ne)
        lean, _ = estimate(method, None, 3, 6, statistics=ne, condition=False)
        np.testing.assert_array_equal(lean.theta, full.theta)
        assert np.isnan(lean.cond) and np.isfinite(full.cond), method
        if method != "wls":  # WLS reports the weighted matrix's
            eig = np.linalg.eigvalsh(A)
            assert np.isclose(full.cond, np.sqrt(eig.max() / eig.min()), rtol=1e-9), method
