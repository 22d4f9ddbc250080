"""The combined method's standard deviations against the implicit-function theorem.

At convergence the combined method (Li et al. 2023 section 2.1) is the joint root of two sets of
normal equations: the geometry fit to the unloaded positions at the gravity-corrected joint angles
(which depend on the compliances), and the compliance fit to p_F - p_o (which shares the unloaded
noise). The first-order covariance of that root is G Sigma G^T with G = -(dg/dx)^-1 dg/dy. Here
dg/dx is taken by central differences of the full nonlinear models (the fixed-point deflection
through the geometry too), independently of the analytic columns calibrate uses, and the reported
standard deviations must be the square roots of its diagonal: the marginal ones. A geometry-only
covariance (conditional on the compliances, what calibrate reported before) misses the compliances'
error: in this design it is narrower than the marginal by more than 1.5 times on one parameter
(theta2), far outside the tolerance. (Marginal is not always wider than conditional here: the
compliance fit reuses the unloaded noise, and that correlation can narrow a parameter slightly.)

Data: own-model simulation (the UR5 of Li et al. 2023, Table 3 geometry and stiffness, AT960-class
tracker noise); the check is of the propagation's algebra, which an exact model does not flatter.
"""

import numpy as np
import pytest

from robodyn.calibration.geometric import fit_geometry
from robodyn.calibration.li2023 import LOAD_COM, LOAD_MASS, TABLE3_STIFFNESS
from robodyn.calibration.measurements import Residual
from robodyn.calibration.methods import calibrate, pair_loaded
from robodyn.calibration.parameters import preset_free_names, robot_for
from robodyn.calibration.paper_replay import UR5_LI2023_FLOOR_Z
from robodyn.calibration.planning import CellSetup, plan_measurements
from robodyn.calibration.simulation import (DEFAULT_TOOL_OFFSET, DEFAULT_TRACKER_POSITION, measure_poses,
                                            ur5_li2023_cell)
from robodyn.calibration.stiffness import Load, deflected_positions, joint_deflection, loaded_subset

NOLOAD, LOADED = 30, 12  # poses: a smaller design than the paper's 50 + 20, same structure


@pytest.fixture(scope="module")
def combined_case():
    setup = CellSetup(tracker_position=DEFAULT_TRACKER_POSITION, tool_offset=DEFAULT_TOOL_OFFSET,
                      floor_z=UR5_LI2023_FLOOR_Z)
    gm, cell = ur5_li2023_cell(seed=3)
    plan = plan_measurements(gm.robot, setup, NOLOAD, seed=0)
    load = Load(LOAD_MASS, LOAD_COM)
    sub = loaded_subset(gm, plan.q, load, LOADED)
    noload = measure_poses(cell, plan.q, None, plan.ids)
    loaded = measure_poses(cell, plan.q[sub], load, [plan.ids[i] for i in sub])
    free = preset_free_names(gm, "li2023")
    result = calibrate(gm, noload, loaded, method="combined", free_names=free)
    assert not result.failed
    return gm, noload, loaded, result


def _implicit_function_std(gm, noload, loaded, result):
    """sqrt(diag(G Sigma G^T)) over [free geometry, identified compliances], Sigma = chi2 times the
    stated noise, G from the normal equations with central-difference derivatives."""
    idx = gm.indices(result.free_names)
    cj = np.flatnonzero(result.compliance_identified)
    i_o, i_f = pair_loaded(noload, loaded)
    q_pair = noload.q[i_o]
    load = loaded.load
    res = Residual(gm, noload)
    w = res.weights
    x0 = np.concatenate([result.params[idx], result.compliance[cj]])
    ng = idx.size

    def unpack(x):
        p = result.params.copy()
        p[idx] = x[:ng]
        c = result.compliance.copy()
        c[cj] = x[ng:]
        return p, c

    def model_noload(x):  # modelled unloaded positions at the gravity-corrected joint angles
        p, c = unpack(x)
        q_link = noload.q + joint_deflection(robot_for(gm, p), noload.q, c, None, links=True)
        return res.raw(p, q_link) + noload.points[:, 0].reshape(-1)

    def model_delta(x):  # modelled p_F - p_o at the paired poses
        p, c = unpack(x)
        return (deflected_positions(gm, p, q_pair, c, load) - deflected_positions(gm, p, q_pair, c, None)).reshape(-1)

    steps = np.concatenate([np.full(ng, 1e-7), np.full(cj.size, 1e-9)])  # m or rad; rad/(N m) near 2e-5

    def derivative(f):
        cols = []
        for k, h in enumerate(steps):
            e = np.zeros_like(x0)
            e[k] = h
            cols.append((f(x0 + e) - f(x0 - e)) / (2 * h))
        return np.column_stack(cols)

    Mx, Fx = derivative(model_noload), derivative(model_delta)
    Jw = (w[:, None] * Mx)[:, :ng]  # the geometry fit's weighted Jacobian
    Jf = Fx[:, ng:]  # the compliance fit's Jacobian
    # g1 = Jw^T W (m_o(x) - y_o), g2 = Jf^T (f(x) - (y_F - S y_o))
    dg_dx = np.vstack([Jw.T @ (w[:, None] * Mx), Jf.T @ Fx])
    n_o, n_f = 3 * len(noload), 3 * len(loaded)
    S = np.zeros((3 * len(i_o), n_o))
    for r, a in enumerate(i_o):
        S[3 * r:3 * r + 3, 3 * a:3 * a + 3] = np.eye(3)
    F = np.zeros((3 * len(i_o), n_f))
    for r, b in enumerate(i_f):
        F[3 * r:3 * r + 3, 3 * b:3 * b + 3] = np.eye(3)
    dg_dy = np.vstack([np.hstack([-Jw.T * w[None, :], np.zeros((ng, n_f))]),
                       np.hstack([Jf.T @ S, -Jf.T @ F])])
    G = -np.linalg.solve(dg_dx, dg_dy)
    var = result.chi2 * np.concatenate([np.repeat(noload.sigma[:, 0], 3), np.repeat(loaded.sigma[:, 0], 3)]) ** 2
    return np.sqrt(np.diag((G * var[None, :]) @ G.T)), idx, cj


def test_combined_std_is_the_marginal_of_the_implicit_function_covariance(combined_case):
    gm, noload, loaded, result = combined_case
    sd, idx, cj = _implicit_function_std(gm, noload, loaded, result)
    assert cj.size == 5  # joints 2-6: the payload never twists the vertical joint 1
    # second-order terms (the compliance fit's and the link gravity's dependence on the geometry,
    # Gauss-Newton's dropped curvature) are what separate the two
    assert result.std[idx] == pytest.approx(sd[:idx.size], rel=0.02)
    assert result.compliance_std[cj] == pytest.approx(sd[idx.size:], rel=0.02)
    assert np.all(np.isnan(np.delete(result.std, idx)))
    # the case tells marginal from conditional: the geometry-only std, at the compliances found,
    # misses the implicit-function one by far more than the tolerance above
    q_link = noload.q + joint_deflection(robot_for(gm, result.params), noload.q, result.compliance, None, links=True)
    conditional = fit_geometry(gm, q_link, noload, result.free_names, initial=result.params)
    assert np.max(sd[:idx.size] / conditional.std[idx]) > 1.5


def test_known_stiffness_keeps_the_geometry_only_std(combined_case):
    gm, noload, loaded, result = combined_case
    known = 1.0 / np.asarray(TABLE3_STIFFNESS, float)
    given = calibrate(gm, noload, None, method="combined", free_names=result.free_names, known_compliance=known)
    q_link = noload.q + joint_deflection(robot_for(gm, given.params), noload.q, known, None, links=True)
    alone = fit_geometry(gm, q_link, noload, given.free_names, initial=given.params)
    idx = gm.indices(given.free_names)
    assert given.std[idx] == pytest.approx(alone.std[idx], rel=1e-6)
    assert np.all(np.isnan(given.compliance_std))
