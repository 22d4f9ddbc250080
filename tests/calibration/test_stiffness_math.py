"""calibration/stiffness.py against independent computations.

The compliance regressor of Li et al. 2023 (eq. 20) against the derivative of the fixed-point
deflection model taken by finite differences in the compliances; the compliance fit against
numpy's least squares, the textbook OLS covariance and scipy's non-negative least squares
(Lawson-Hanson, a different algorithm from the bounded solver the fit uses); the gear-play lean and
the deflection branches against hand-evaluated values and their defining fixed-point equations.
"""

import numpy as np
import pytest
from scipy.optimize import nnls

from robodyn.calibration.parameters import Target, geometric_model
from robodyn.calibration.li2023 import LOAD_COM, LOAD_MASS, TABLE3_STIFFNESS
from robodyn.calibration.stiffness import (ComplianceFit, Load, backlash_lean, compliance_regressor,
                                           deflected_positions, holding_torques, identify_compliance,
                                           joint_deflection, payload_holding_torques)
from robodyn.robot.dynamics import gravity_torques

C_TABLE3 = 1.0 / TABLE3_STIFFNESS  # rad/(N m)


@pytest.fixture(scope="module")
def tilted(ur5_robot):
    """Two targets and a base turned and shifted in the measurement frame (as a tracker sees it)."""
    c, s = np.cos(0.7), np.sin(0.7)
    base = np.array([[c, -s, 0.0, 1.2], [s, c, 0.0, -0.4], [0.0, 0.0, 1.0, 0.1], [0.0, 0.0, 0.0, 1.0]])
    tilt = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, np.cos(0.2), -np.sin(0.2), 0.0],
                     [0.0, np.sin(0.2), np.cos(0.2), 0.0], [0.0, 0.0, 0.0, 1.0]])
    return geometric_model(ur5_robot, base=base @ tilt,
                           targets=[Target("ball", (0.04, 0.04, 0.03)), Target("probe", (-0.05, 0.02, 0.15))])


def test_gear_play_lean_is_half_the_play_against_the_holding_torque():
    tau = np.array([[5.0, -1.0, 0.25, 0.0], [-5.0, 1.0, -0.25, 3.0]])
    play = [0.0, 4e-4, 3e-4, 2e-4]
    lean = backlash_lean(tau, play, [1.0, 2.0, 0.5, 1.0])
    t = np.tanh(0.5)
    assert lean[0] == pytest.approx([0.0, 2e-4 * t, -1.5e-4 * t, 0.0], rel=1e-14, abs=0)
    assert lean[1] == pytest.approx([0.0, -2e-4 * t, 1.5e-4 * t, -1e-4 * np.tanh(3.0)], rel=1e-14, abs=0)
    # a zero smoothing width gives the sharp lean of a real gear: the full half play at any torque,
    # however small
    sharp = backlash_lean(np.array([5.0, -1e-6, 1e-6, 0.0]), play, 0.0)
    assert sharp == pytest.approx([0.0, 2e-4, -1.5e-4, 0.0], rel=1e-14, abs=0)
    assert not backlash_lean(tau, None, 1.0).any() and not backlash_lean(tau, [0, 0, 0, 0], 1.0).any()


def test_deflection_with_gear_play_solves_its_fixed_point_equation(ur5_robot):
    robot = ur5_robot
    q = np.random.default_rng(11).uniform(-2.5, 2.5, size=(12, 6))
    load = Load(LOAD_MASS, LOAD_COM)
    play, width = np.array([0.0, 4e-4, 3e-4, 2e-4, 0.0, 0.0]), np.full(6, 0.8)
    d = joint_deflection(robot, q, C_TABLE3, load, backlash=play, backlash_scale=width)
    tau = holding_torques(robot, q + d, load)
    assert np.allclose(d, -C_TABLE3 * tau - 0.5 * play * np.tanh(tau / width), rtol=0, atol=1e-13)
    assert np.max(np.abs(d[:, 1] + C_TABLE3[1] * tau[:, 1])) > 1e-4  # the play moved joint 2 visibly


def test_deflection_by_the_payload_alone_and_by_nothing(ur5_robot):
    robot = ur5_robot
    q = np.random.default_rng(12).uniform(-2.5, 2.5, size=(10, 6))
    load = Load(LOAD_MASS, LOAD_COM)
    d = joint_deflection(robot, q, C_TABLE3, load, links=False)
    assert np.allclose(d, -C_TABLE3 * payload_holding_torques(robot, q + d, load), rtol=0, atol=1e-14)
    assert np.max(np.abs(d)) > 1e-4
    assert np.allclose(holding_torques(robot, q, load, links=False), payload_holding_torques(robot, q, load))
    assert np.array_equal(holding_torques(robot, q), gravity_torques(robot, q))
    assert not joint_deflection(robot, q, C_TABLE3, None, links=False).any()
    assert not joint_deflection(robot, q, C_TABLE3, Load(0.0, (0.0, 0.0, 0.0)), links=False).any()
    # a massless payload adds nothing to the links' own sag
    assert np.array_equal(joint_deflection(robot, q, C_TABLE3, Load(0.0, LOAD_COM)),
                          joint_deflection(robot, q, C_TABLE3, None))
    with pytest.raises(ValueError, match="compliance: expected 6 values"):
        joint_deflection(robot, q, C_TABLE3[:5], load)


@pytest.mark.parametrize("target", [0, 1])
def test_compliance_regressor_is_the_derivative_of_the_deflected_position_in_each_compliance(tilted, target):
    # eq. 20 is the first-order term of the fixed-point model: its column j is d(position)/d(c_j) at
    # c = 0, here by central differences of the payload-only deflection (no link gravity)
    gm = tilted
    q = np.random.default_rng(13).uniform(-2.5, 2.5, size=(6, 6))
    load = Load(LOAD_MASS, LOAD_COM)
    A = compliance_regressor(gm, gm.nominal, q, load, target)
    h = 1e-7
    fd = np.zeros_like(A)
    for j in range(6):
        c = np.zeros(6)
        c[j] = h
        fd[:, j] = ((deflected_positions(gm, gm.nominal, q, c, load, links=False, target=target)
                     - deflected_positions(gm, gm.nominal, q, -c, load, links=False, target=target))
                    / (2 * h)).reshape(-1)
    assert np.allclose(A, fd, rtol=0, atol=1e-6 * np.max(np.abs(A)))
    assert np.max(np.abs(A[:, 1:])) > 1.0  # m per rad/(N m): joints 2-6 are twisted by the payload


def _measured(gm, q, c, load, noise, seed):
    """Loaded-minus-unloaded positions of both targets from the full fixed-point model (link gravity
    and the payload), with tracker noise."""
    with_load = np.stack([deflected_positions(gm, gm.nominal, q, c, load, target=k) for k in (0, 1)], axis=1)
    without = np.stack([deflected_positions(gm, gm.nominal, q, c, None, target=k) for k in (0, 1)], axis=1)
    return with_load - without + np.random.default_rng(seed).normal(scale=noise, size=with_load.shape)


def test_linear_compliance_fit_is_the_least_squares_solution_with_its_ols_covariance(tilted):
    gm = tilted
    load = Load(LOAD_MASS, LOAD_COM)
    q = np.random.default_rng(14).uniform(-2.5, 2.5, size=(20, 6))
    delta = _measured(gm, q, C_TABLE3, load, 5e-6, 15)
    delta[::3, 1] = np.nan  # the probe was not seen at every third pose
    prior = np.full(6, 1 / 50000.0)
    fit = identify_compliance(gm, gm.nominal, q, delta, load, prior, refine=False)
    seen = np.isfinite(delta[:, 1, 0])
    A = np.vstack([compliance_regressor(gm, gm.nominal, q, load, 0),
                   compliance_regressor(gm, gm.nominal, q[seen], load, 1)])
    b = np.concatenate([delta[:, 0].reshape(-1), delta[seen, 1].reshape(-1)])
    norms = np.linalg.norm(A, axis=0)
    assert fit.excitation == pytest.approx(norms / norms.max(), rel=1e-12)
    # a vertical payload never twists the vertical joint 1: its prior stays
    assert fit.identified.tolist() == [False] + [True] * 5 and fit.compliance[0] == prior[0]
    Ai = A[:, 1:]
    c, *_ = np.linalg.lstsq(Ai, b, rcond=None)
    assert np.all(c > 0)  # the bound is inactive: the bounded fit is the plain least-squares one
    assert fit.compliance[1:] == pytest.approx(c, rel=1e-8)
    resid = b - Ai @ c
    sigma2 = resid @ resid / (b.size - 5)
    assert fit.std[1:] == pytest.approx(np.sqrt(sigma2 * np.diag(np.linalg.inv(Ai.T @ Ai))), rel=1e-6)
    assert np.isnan(fit.std[0])
    assert fit.rms_residual == pytest.approx(np.sqrt(np.mean(resid ** 2)), rel=1e-6)
    # the refined fit on the full model explains the data at least as well as the linear one does
    refined = identify_compliance(gm, gm.nominal, q, delta, load, prior)
    assert refined.rms_residual <= fit.rms_residual
    assert refined.rms_residual == pytest.approx(5e-6, rel=0.15)  # down to the tracker noise


def test_compliances_are_held_at_zero_where_the_unbounded_fit_goes_negative(tilted):
    # a plant whose joint 3 gives way against the load (negative compliance, e.g. an encoder offset
    # that follows the load): the fit keeps c3 = 0, which is scipy's non-negative least squares
    gm = tilted
    load = Load(LOAD_MASS, LOAD_COM)
    q = np.random.default_rng(16).uniform(-2.5, 2.5, size=(15, 6))
    A = np.vstack([compliance_regressor(gm, gm.nominal, q, load, k) for k in (0, 1)])
    c_plant = C_TABLE3 * np.array([1.0, 1.0, -3.0, 1.0, 1.0, 1.0])
    b = A @ c_plant + np.random.default_rng(17).normal(scale=2e-6, size=A.shape[0])
    rows = b.reshape(2, 15, 3).transpose(1, 0, 2)  # (poses, targets, 3) in the order of A's rows
    fit = identify_compliance(gm, gm.nominal, q, rows, load, np.full(6, 2e-5), refine=False)
    ref, _ = nnls(A[:, 1:], b)
    assert ref[1] == 0.0 and fit.compliance[2] == 0.0
    assert fit.compliance[1:] == pytest.approx(ref, rel=1e-6, abs=1e-15)
    assert np.linalg.lstsq(A[:, 1:], b, rcond=None)[0][1] < 0  # the bound is active here


def test_stiffness_is_the_inverse_compliance_and_infinite_where_the_compliance_is_zero():
    fit = ComplianceFit(np.array([2e-5, 0.0, 1e-4]), np.ones(3, bool), np.zeros(3), 0.0, np.ones(3))
    assert fit.stiffness == pytest.approx([50000.0, np.inf, 10000.0], rel=1e-15)


def test_load_round_trip_and_an_empty_load():
    load = Load(LOAD_MASS, LOAD_COM)
    assert Load.from_dict(load.to_dict()) == load
    assert load.to_dict() == {"mass_kg": 4.678, "com_m": [0.0, -0.03686, 0.02985]}
    assert Load.from_dict(None) is None and Load.from_dict({}) is None

