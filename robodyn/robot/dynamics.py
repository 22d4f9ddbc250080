"""Inverse dynamics from standard parameters by the recursive Newton-Euler algorithm (RNEA).

Deliberately independent of the regressor: it works with each link's mass, centre of mass and
inertia about the COM, with full rotation matrices, so the two implementations check each other.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .model import RobotModel, check_states, com_inertia


# Each link's mass, COM and inertia about the COM, per set of standard parameters: converting them
# costs about five times the RNEA kernel on a few poses, and the calibration's deflection solver
# calls inverse dynamics thousands of times on the same parameters. Keyed on the parameters' bytes,
# so a changed array is converted anew; a few sets kept (the fit loops vary the joint angles, not
# these). The kernels only read the arrays.
_LINK_COM_CACHE: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
_LINK_COM_CACHE_MAX = 32


def _link_com_arrays_cached(inertial: np.ndarray):
    key = inertial.tobytes()  # float64 (n, 10): the length gives n
    hit = _LINK_COM_CACHE.get(key)
    if hit is None:
        hit = _link_com_arrays(inertial)
        if len(_LINK_COM_CACHE) >= _LINK_COM_CACHE_MAX:
            _LINK_COM_CACHE.pop(next(iter(_LINK_COM_CACHE)), None)
        _LINK_COM_CACHE[key] = hit
    return hit


def _link_com_arrays(inertial: np.ndarray):
    n = inertial.shape[0]
    mass = np.zeros(n)
    com = np.zeros((n, 3))
    I_c = np.zeros((n, 3, 3))
    for i in range(n):
        m, c, Ic = com_inertia(inertial[i])
        mass[i] = m
        if m > 0:
            com[i] = c
        I_c[i] = Ic
    return mass, com, I_c


@njit(cache=True)
def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _rnea_body(FR, Fp, jtype, g, mass, com, I_c, rotor, fv, fc, fo, q, qd, qdd, tau):
    N, n = q.shape
    z = np.array([0.0, 0.0, 1.0])
    for s in prange(N):  # prange is a plain range in the serial build
        R = np.empty((n, 3, 3))
        p = np.empty((n, 3))
        w = np.zeros((n, 3))
        dw = np.zeros((n, 3))
        a = np.zeros((n, 3))
        F = np.zeros((n, 3))
        Nm = np.zeros((n, 3))
        w_prev = np.zeros(3)
        dw_prev = np.zeros(3)
        a_prev = -g.copy()
        for j in range(n):
            Rz = np.eye(3)
            off = np.zeros(3)
            if jtype[j] == 0:
                c = np.cos(q[s, j])
                sn = np.sin(q[s, j])
                Rz[0, 0] = c
                Rz[0, 1] = -sn
                Rz[1, 0] = sn
                Rz[1, 1] = c
            else:
                off[2] = q[s, j]
            Rj = FR[j] @ Rz
            pj = Fp[j] + FR[j] @ off
            R[j] = Rj
            p[j] = pj
            RT = Rj.T
            wj = RT @ w_prev
            dwj = RT @ dw_prev
            aj = RT @ (a_prev + _cross(dw_prev, pj) + _cross(w_prev, _cross(w_prev, pj)))
            if jtype[j] == 0:
                dwj = dwj + _cross(wj, z * qd[s, j]) + z * qdd[s, j]
                wj = wj + z * qd[s, j]
            else:
                aj = aj + z * qdd[s, j] + 2.0 * _cross(wj, z * qd[s, j])
            w[j] = wj
            dw[j] = dwj
            a[j] = aj
            # Newton-Euler about the centre of mass
            ac = aj + _cross(dwj, com[j]) + _cross(wj, _cross(wj, com[j]))
            F[j] = mass[j] * ac
            Nm[j] = I_c[j] @ dwj + _cross(wj, I_c[j] @ wj)
            w_prev = wj
            dw_prev = dwj
            a_prev = aj
        f_next = np.zeros(3)
        n_next = np.zeros(3)
        for j in range(n - 1, -1, -1):
            if j < n - 1:
                f_child = R[j + 1] @ f_next
                n_child = R[j + 1] @ n_next + _cross(p[j + 1], f_child)
            else:
                f_child = np.zeros(3)
                n_child = np.zeros(3)
            fj = F[j] + f_child
            nj = Nm[j] + _cross(com[j], F[j]) + n_child
            v = qd[s, j]
            sgn = 1.0 if v > 0 else (-1.0 if v < 0 else 0.0)
            extra = rotor[j] * qdd[s, j] + fv[j] * v + fc[j] * sgn + fo[j]
            tau[s, j] = (nj[2] if jtype[j] == 0 else fj[2]) + extra
            f_next = fj
            n_next = nj
    return tau


# Two builds of the same kernel: threads pay off on long batches, but starting the thread pool
# costs milliseconds, which would dominate the one-pose calls of IK, calibration and controllers.
# Both release the GIL (they touch no Python object): the daemon checks a submission's torques on
# a thread, and its main loop must keep answering stops meanwhile.
_rnea_parallel = njit(cache=True, parallel=True, nogil=True)(_rnea_body)
_rnea_serial = njit(cache=True, nogil=True)(_rnea_body)
PARALLEL_THRESHOLD = 256


def inverse_dynamics(model: RobotModel, q, qd, qdd, *, inertial: np.ndarray | None = None,
                     rotor_inertia: np.ndarray | None = None, friction: dict | None = None) -> np.ndarray:
    """Joint torques (N, n) for a batch of states by RNEA.

    ``inertial`` (n, 10) overrides the model's standard parameters; ``rotor_inertia`` (n,) defaults
    to zero (pass ``model.rotor_inertia`` to include it); ``friction`` maps 'viscous', 'coulomb',
    'offset' to per-joint coefficients (tau_f = FV qd + FC sign(qd) + FO).
    """
    q, qd, qdd = check_states(model, q, qd, qdd)
    n = model.dof
    params = np.ascontiguousarray(model.inertial if inertial is None else inertial, dtype=float)
    if params.shape != (n, 10):
        raise ValueError(f"inertial: expected shape ({n}, 10), got {params.shape}")
    mass, com, I_c = _link_com_arrays_cached(params)
    rotor = np.zeros(n) if rotor_inertia is None else np.asarray(rotor_inertia, float).reshape(n)
    friction = friction or {}
    fv, fc, fo = (np.asarray(friction.get(k, np.zeros(n)), float).reshape(n)
                  for k in ("viscous", "coulomb", "offset"))
    tau = np.empty_like(q)
    kernel = _rnea_parallel if q.shape[0] >= PARALLEL_THRESHOLD else _rnea_serial
    return kernel(np.ascontiguousarray(model.fixed[:, :3, :3]), np.ascontiguousarray(model.fixed[:, :3, 3]), model.joint_types.astype(np.int64),
                        np.asarray(model.gravity, float), mass, com, I_c, rotor, fv, fc, fo, q, qd, qdd, tau)


def gravity_torques(model: RobotModel, q, inertial: np.ndarray | None = None) -> np.ndarray:
    q = np.atleast_2d(np.asarray(q, float))
    z = np.zeros_like(q)
    return inverse_dynamics(model, q, z, z, inertial=inertial)


def mass_matrix(model: RobotModel, q, inertial: np.ndarray | None = None,
                rotor_inertia: np.ndarray | None = None) -> np.ndarray:
    """Joint-space inertia matrix (n, n) at one configuration, column by column via RNEA."""
    q = np.asarray(q, float).reshape(1, -1)
    n = model.dof
    no_gravity = model.with_gravity([0.0, 0.0, 0.0])
    qs = np.repeat(q, n, axis=0)
    return inverse_dynamics(no_gravity, qs, np.zeros_like(qs), np.eye(n), inertial=inertial,
                            rotor_inertia=rotor_inertia).T
