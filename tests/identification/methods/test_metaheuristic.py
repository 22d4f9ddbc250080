"""Ni et al. 2024 fitness (eq. 14) through sufficient statistics, the OLS box, and the comparison."""

import numpy as np
import pytest

from robodyn.identification.estimators import ols
from robodyn.robot.friction import stribeck
from robodyn.identification.metaheuristic import (QuadraticFitness, StribeckFitness, identify_linear,
                                                  joint_major_data, naive_fitness, search_box, ni2024_options)
from robodyn.identification.comparison import compare_linear, format_table


def test_base_count_is_ni_2024s_48(panda_statistics):
    base, _ = panda_statistics
    assert base.count == 48


def test_sufficient_statistics_fitness_equals_naive_residuals(panda, panda_recording, panda_statistics):
    base, ne = panda_statistics
    W = joint_major_data(panda, base, panda_recording)
    weights = np.linspace(0.5, 2.0, 7)
    X = search_box(ols(ne).theta).sample(np.random.default_rng(0), 12)
    fast = QuadraticFitness.from_statistics(ne, weights)(X)
    slow = naive_fitness(W, panda_recording.tau, weights)(X)
    assert fast == pytest.approx(slow, rel=1e-9)


def test_search_box_is_ols_plus_minus_five_times_abs():
    box = search_box(np.array([2.0, -1.0, 0.0]))
    assert box.lower[:2] == pytest.approx([-8.0, -6.0]) and box.upper[:2] == pytest.approx([12.0, 4.0])
    assert box.upper[2] > box.lower[2]  # zero estimate still gets a (small) box


def test_wso_gets_close_to_the_ols_optimum_but_not_below(panda, panda_statistics):
    base, ne = panda_statistics
    res = identify_linear(ne, "wso", seed=1, options=ni2024_options("wso", 60, 600), joint_names=panda.joint_names)
    j_ols = float(QuadraticFitness.from_statistics(ne)(ols(ne).theta)[0])
    assert j_ols <= res.fitness < 1.2 * j_ols  # OLS is the global optimum of the unweighted objective
    assert len(res.history) == 600 and res.seed == 1 and res.options["population"] == 60
    assert res.metrics["rmse_sum"] == pytest.approx(sum(res.metrics["rmse"]))


def test_stribeck_fitness_matches_a_direct_evaluation(panda, panda_recording, panda_statistics):
    base, ne = panda_statistics
    d = panda_recording
    W = joint_major_data(panda, base, d)
    fit = StribeckFitness.build(W, d.tau, d.qd)
    rng = np.random.default_rng(2)
    X = np.hstack([search_box(ols(ne).theta).sample(rng, 4), rng.uniform(0.1, 0.5, (4, 14)),
                   rng.uniform(0.01, 0.1, (4, 7))])
    expected = []
    for x in X:
        theta, fc, fs, vs = x[:48], x[48:55], x[55:62], x[62:69]
        r = d.tau - np.einsum("jnp,p->nj", W, theta) - stribeck(d.qd, fc, fs, vs, 0.0, fit.qd0)
        expected.append(np.sum(r ** 2) / d.t.size)
    assert fit(X) == pytest.approx(expected, rel=1e-9)


def test_comparison_rows_and_table(panda, panda_statistics):
    base, ne = panda_statistics
    table = compare_linear(ne, ne, list(panda.joint_names), methods=("wso", "pso", "ga"), population=20,
                           iterations={"wso": 50, "pso": 50, "ga": 50}, names=base.names)
    methods = [r["method"] for r in table["rows"]]
    assert methods == ["ols", "wls", "wso", "pso", "ga"]
    ols_row = table["rows"][0]
    assert ols_row["fitness_gap_to_best"] == pytest.approx(0.0, abs=1e-9)
    assert all(r["fitness"] >= ols_row["fitness"] - 1e-9 for r in table["rows"])
    text = format_table(table)
    assert "**sum**" in text and "held-out" in text
