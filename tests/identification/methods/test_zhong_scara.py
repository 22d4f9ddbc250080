"""Zhong et al. 2023 (chaotic PSO excitation design for a SCARA), eqs. 4-5 and 19-21: the paper's
4-parameter regressor against robodyn's RNEA and 5-parameter base, and the linear network on it."""

import numpy as np
import pytest

from robodyn.reproduce import zhong2023 as R
from robodyn.identification.base_params import base_parameters
from robodyn.identification.estimators import NormalEquations, ols
from robodyn.identification.regressor import ColumnSpec, regressor, sample_states
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.loader import load_model


@pytest.fixture(scope="module")
def scara():
    return load_model("scara")


def test_papers_regressor_is_robodyns_rnea_with_the_papers_true_parameters(scara):
    # eqs. 4-5 re-derived from the OCR; an independent Newton-Euler recursion is the oracle
    q, qd, qdd = sample_states(scara, 400, seed=11)
    tau = inverse_dynamics(scara, q, qd, qdd)
    assert np.abs(R.zhong_regressor(q, qd, qdd) @ np.array(R.ZHONG_TRUE_P) - tau).max() < 1e-12
    # a wrong sign in Y13's Coriolis term would show
    Y = R.zhong_regressor(q, qd, qdd)
    Y[..., 0, 2] = (2 * qdd[:, 0] + qdd[:, 1]) * np.cos(q[:, 1]) + (qd[:, 1] ** 2 + 2 * qd[:, 0] * qd[:, 1]) * np.sin(q[:, 1])
    assert np.abs(Y @ np.array(R.ZHONG_TRUE_P) - tau).max() > 0.1


def test_robodyns_fifth_base_parameter_is_the_first_moment_the_paper_drops(scara):
    base = base_parameters(scara, ColumnSpec())
    assert base.names == ["ZZ1R", "ZZ2R", "MX2R", "MY2R", "M3"]
    q, qd, qdd = sample_states(scara, 300, seed=5)
    Wb = base.base_regressor(regressor(scara, q, qd, qdd))  # (N*3, 5)
    Yp = R.zhong_regressor(q, qd, qdd).reshape(-1, 4)
    # without MY2R, robodyn's base columns span exactly the paper's four columns
    four = np.delete(Wb, base.names.index("MY2R"), axis=1)
    assert np.linalg.matrix_rank(np.hstack([four, Yp]), tol=1e-9) == 4
    # with it, the rank is 5: MY2R is a genuine parameter of a general link 2, zero on this SCARA
    assert np.linalg.matrix_rank(np.hstack([Wb, Yp]), tol=1e-9) == 5
    tau = inverse_dynamics(scara, q, qd, qdd)
    ne = NormalEquations(3, 5)
    ne.add(Wb, tau)
    theta = ols(ne, base.names).theta
    assert abs(theta[base.names.index("MY2R")]) < 1e-10


def test_linear_network_on_the_papers_regressor_recovers_the_true_parameters(scara):
    excitation = R.zhong_test_trajectory(scara, seed=3)
    test = R.zhong_test_trajectory(scara, seed=7)
    clean = R.zhong_identify(scara, excitation, test, noise=0.0, epochs=200_000)
    assert clean["p"] == pytest.approx(list(R.ZHONG_TRUE_P), rel=1e-3)
    assert max(clean["test_vs_true"]["rmse"]) < 1e-3
    noisy = R.zhong_identify(scara, excitation, test, noise=0.05, epochs=200_000)
    assert noisy["p"] == pytest.approx(noisy["p_ols"], rel=1e-3)  # the network tends to least squares
    # measured torque carries the noise: the RMS against it is about the noise level
    assert noisy["test_vs_measured"]["rmse"] == pytest.approx(noisy["noise_sigma"], rel=0.25)
    assert max(np.array(noisy["test_vs_true"]["rmse"]) / np.array(noisy["noise_sigma"])) < 0.5


def test_papers_table4_cannot_give_its_table5_joint3_rms(scara):
    # f3 = p4 (d3dd - g), |d3dd| <= 0.8: the p4 error of Table 4 alone costs >= 0.342 N RMS; Table 5 says 0.1065
    _, q, qd, qdd, _ = R.zhong_samples(scara, R.zhong_test_trajectory(scara))
    error = R.zhong_regressor(q, qd, qdd) @ (np.array(R.ZHONG_TABLE_4) - np.array(R.ZHONG_TRUE_P))
    rms3 = np.sqrt(np.mean(error[:, 2] ** 2))
    assert rms3 >= 0.038 * (9.81 - 0.8) > R.ZHONG_TABLE_5["rms"][2]
    assert np.abs(qdd[:, 2]).max() <= 0.8 + 1e-9
