"""Standard deviations of the combined method (Li et al. 2023 section 2.1) that hold the
compliances' uncertainty: the marginal ones from the covariance of geometry and compliances together."""

from __future__ import annotations

import numpy as np

from .measurements import MeasurementSet, Residual
from .parameters import GeometricModel, robot_for
from .stiffness import compliance_regressor, holding_torques


def deflection_columns(Jq: np.ndarray, tau: np.ndarray, joints) -> np.ndarray:
    """d(residual)/d(compliance c_j) for the joints listed, to first order: a joint deflects by
    -c_j tau_j (tau the holding torque per residual row), so the column is -Jq_j tau_j."""
    return -Jq[:, joints] * tau[:, joints]


def combined_std(gm: GeometricModel, noload: MeasurementSet, loaded: MeasurementSet, params, q_link, free,
                 c_ident, i_o, i_f, chi2) -> tuple[np.ndarray, np.ndarray]:
    """Standard deviations of the combined method's geometry and compliances, each the marginal one
    from the covariance of all of them (first-order propagation of the measurement noise).

    The geometry fit (step 6) sees the compliances through the gravity-corrected joint angles, so
    the compliances' own error moves the geometry: a geometry-only covariance, conditional on the
    compliances, is too narrow. The compliances come from p_F - p_o (step 3), whose unloaded half is
    the same noise the geometry fit sees, so the two errors are correlated too. At the fixed point,
    to first order (u: the unloaded residuals in stated-noise units, v: the loaded positions of
    p_F - p_o in stated-noise units, both of covariance chi2 I):
        dc = P (S_v v - S_u u),        P = pinv(A), A the eq. 20 regressor (unweighted, as fitted)
        dg = H (u - Jc dc),            H = pinv(Jg), Jg, Jc the weighted d(residual)/d(geometry, c)
    with S_v, S_u the stated noise of each position in p_F - p_o. The compliance fit's dependence on
    the geometry (through A) and the geometry fit's on the geometry through the link gravity are
    second order (a payload deflection of about a millimetre times a relative change of 1e-4) and
    left out. Returns (std over gm.names, nan where not free; std per joint, nan where not identified)."""
    idx = gm.indices(free)
    cj = np.flatnonzero(c_ident)
    res = Residual(gm, noload)
    Jg, Jq = res.jacobian(params, q_link, joint=True)
    tau = holding_torques(robot_for(gm, params), q_link, None, links=True)[res.row_pose]
    Jc = deflection_columns(Jq, tau, cj)
    H = np.linalg.pinv(Jg[:, idx])
    # the rows of p_F - p_o in identify_compliance's order: per target, the poses where both are seen
    row_of = {(int(p), int(k)): m for m, (p, k) in enumerate(res.points)}
    loaded_seen = loaded.point_mask[i_f]
    A, u_rows, u_sigma, v_sigma = [], [], [], []
    for k in range(max(noload.target_count, loaded.target_count)):
        on = [p for p in range(len(i_o)) if k < loaded.target_count and k < noload.target_count
              and loaded_seen[p, k] and (int(i_o[p]), k) in row_of]
        if not on:
            continue
        A.append(compliance_regressor(gm, params, noload.q[i_o[on]], loaded.load, k))
        for p in on:
            u_rows += [3 * row_of[(int(i_o[p]), k)] + a for a in range(3)]
            u_sigma += [noload.sigma[i_o[p], k]] * 3
            v_sigma += [loaded.sigma[i_f[p], k]] * 3
    P = np.linalg.pinv(np.vstack(A)[:, cj])
    Su = np.zeros((len(u_rows), res.size))
    Su[np.arange(len(u_rows)), u_rows] = u_sigma
    Gc_u, Gc_v = -P @ Su, P * np.asarray(v_sigma)[None, :]
    G_u = np.vstack([H - H @ Jc @ Gc_u, Gc_u])
    G_v = np.vstack([-H @ Jc @ Gc_v, Gc_v])
    cov = chi2 * (G_u @ G_u.T + G_v @ G_v.T)
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    std = np.full(gm.size, np.nan)
    std[idx] = sd[:idx.size]
    c_std = np.full(gm.dof, np.nan)
    c_std[cj] = sd[idx.size:]
    return std, c_std
