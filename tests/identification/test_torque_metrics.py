"""The torque metrics: one implementation from running sums (identification/estimators.py
`torque_metrics_from_sums`), fed by the streaming accumulator and by the normal equations, checked
against the direct formulas; and the correlation stays a correlation (rounding used to put a perfect
affine fit past 1: a table printed 1.0000000003)."""

import numpy as np

from robodyn.identification.pipeline import TorqueMetrics


def test_a_perfect_affine_fit_has_correlation_one_not_more():
    rng = np.random.default_rng(0)
    for _ in range(20):  # unclipped, 261 of 300 such draws gave a value above 1
        measured = rng.normal(size=(1000, 3)) * 10 + 50
        metrics = TorqueMetrics(3)
        for m, p in zip(np.array_split(measured, 7), np.array_split(measured * 1.7 + 0.3, 7)):
            metrics.add(m, p)
        corr = np.array(metrics.result(["a", "b", "c"])["correlation"])
        assert np.all(corr <= 1.0) and np.allclose(corr, 1.0, atol=1e-9)
    anti = TorqueMetrics(1)
    anti.add(measured[:, :1], -2.0 * measured[:, :1] + 4.0)
    assert -1.0 <= anti.result(["a"])["correlation"][0] <= -1.0 + 1e-9


def test_streaming_and_normal_equation_metrics_equal_the_direct_formulas():
    """Both running-sum paths against numpy on the whole arrays: RMSE, relative error and Pearson's r."""
    from robodyn.identification.estimators import NormalEquations

    rng = np.random.default_rng(1)
    dof, params, n = 3, 5, 900
    W = rng.normal(size=(dof, n, params)) + rng.normal(size=(dof, 1, params))  # per-joint rows with offsets
    theta = rng.normal(size=params)
    predicted = np.einsum("jnp,p->nj", W, theta)
    measured = predicted * 0.8 + rng.normal(size=(n, dof)) + 3.0
    streaming = TorqueMetrics(dof)
    equations = NormalEquations(dof, params)
    for rows in np.array_split(np.arange(n), 4):
        streaming.add(measured[rows], predicted[rows])
        equations.add(W[:, rows, :], measured[rows])
    error = measured - predicted
    rmse = np.sqrt((error**2).mean(0))
    relative = np.sqrt((error**2).sum(0) / (measured**2).sum(0))
    correlation = [np.corrcoef(measured[:, j], predicted[:, j])[0, 1] for j in range(dof)]
    for got in (streaming.result("abc"), equations.metrics(theta, "abc")):
        assert np.allclose(got["rmse"], rmse, rtol=1e-9)
        assert np.isclose(got["rmse_sum"], rmse.sum(), rtol=1e-9)
        assert np.allclose(got["relative_error"], relative, rtol=1e-9)
        assert np.isclose(got["relative_error_total"], np.sqrt((error**2).sum() / (measured**2).sum()), rtol=1e-9)
        assert np.allclose(got["correlation"], correlation, rtol=1e-9)
        assert got["samples"] == n and got["joints"] == ["a", "b", "c"]


def test_strided_inputs_are_summed_as_contiguous_ones_and_a_shape_mismatch_is_one_line():
    """The one-pass sums read any layout (a transposed or column-sliced array) as its values, and
    equal numpy's axis-0 sums of the row-major arrays (row by row) to the bit; arrays of different
    shapes are refused."""
    import pytest

    rng = np.random.default_rng(2)
    measured = rng.normal(size=(4, 500)).T  # Fortran-ordered
    predicted = rng.normal(size=(500, 8))[:, ::2]  # strided columns
    metrics = TorqueMetrics(4)
    metrics.add(measured, predicted)
    measured, predicted = np.ascontiguousarray(measured), np.ascontiguousarray(predicted)
    e = measured - predicted
    expected = {"m": measured.sum(0), "p": predicted.sum(0), "mm": (measured * measured).sum(0),
                "pp": (predicted * predicted).sum(0), "mp": (measured * predicted).sum(0), "ee": (e * e).sum(0)}
    for key, value in expected.items():
        np.testing.assert_array_equal(metrics.sums[key], value)
    with pytest.raises(ValueError, match=r"measured \(500, 4\) and predicted \(500, 3\)"):
        metrics.add(measured, predicted[:, :3])
