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


# 3-vectors as tuples of floats (values on the stack): the kernel allocates nothing per joint. With
# an array per intermediate vector it spent about 12 us per sample of a 6-joint arm on allocation.
@njit(cache=True, inline="always")
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(cache=True, inline="always")
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(cache=True, inline="always")
def _mul(M, i, v):
    """M[i] @ v for a stack of 3x3 matrices M."""
    return (M[i, 0, 0] * v[0] + M[i, 0, 1] * v[1] + M[i, 0, 2] * v[2],
            M[i, 1, 0] * v[0] + M[i, 1, 1] * v[1] + M[i, 1, 2] * v[2],
            M[i, 2, 0] * v[0] + M[i, 2, 1] * v[1] + M[i, 2, 2] * v[2])


@njit(cache=True, inline="always")
def _mul_t(M, i, v):
    """M[i].T @ v for a stack of 3x3 matrices M."""
    return (M[i, 0, 0] * v[0] + M[i, 1, 0] * v[1] + M[i, 2, 0] * v[2],
            M[i, 0, 1] * v[0] + M[i, 1, 1] * v[1] + M[i, 2, 1] * v[2],
            M[i, 0, 2] * v[0] + M[i, 1, 2] * v[1] + M[i, 2, 2] * v[2])


RNEA_CHUNK = 64  # samples per work unit of the parallel build, each with its own scratch arrays


def _rnea_body(FR, Fp, jtype, g, mass, com, I_c, rotor, fv, fc, fo, q, qd, qdd, tau):
    N, n = q.shape
    chunks = (N + RNEA_CHUNK - 1) // RNEA_CHUNK
    for c in prange(chunks):  # prange is a plain range in the serial build
        R = np.empty((n, 3, 3))  # joint j's frame in its parent's
        p = np.empty((n, 3))  # joint j's origin in its parent's frame
        F = np.empty((n, 3))  # force and moment about the centre of mass, link frame
        Nm = np.empty((n, 3))
        for s in range(c * RNEA_CHUNK, min(N, (c + 1) * RNEA_CHUNK)):
            w_prev = (0.0, 0.0, 0.0)
            dw_prev = (0.0, 0.0, 0.0)
            a_prev = (-g[0], -g[1], -g[2])
            for j in range(n):
                # R[j] = FR[j] @ Rz(q) (revolute) or FR[j] (prismatic, offset along its z)
                if jtype[j] == 0:
                    cq = np.cos(q[s, j])
                    sq = np.sin(q[s, j])
                    for r in range(3):
                        R[j, r, 0] = FR[j, r, 0] * cq + FR[j, r, 1] * sq
                        R[j, r, 1] = FR[j, r, 1] * cq - FR[j, r, 0] * sq
                        R[j, r, 2] = FR[j, r, 2]
                        p[j, r] = Fp[j, r]
                else:
                    for r in range(3):
                        R[j, r, 0] = FR[j, r, 0]
                        R[j, r, 1] = FR[j, r, 1]
                        R[j, r, 2] = FR[j, r, 2]
                        p[j, r] = Fp[j, r] + FR[j, r, 2] * q[s, j]
                pj = (p[j, 0], p[j, 1], p[j, 2])
                wj = _mul_t(R, j, w_prev)
                dwj = _mul_t(R, j, dw_prev)
                aj = _mul_t(R, j, _add(_add(a_prev, _cross(dw_prev, pj)), _cross(w_prev, _cross(w_prev, pj))))
                v = qd[s, j]
                if jtype[j] == 0:  # z x (0, 0, v) terms written out
                    dwj = (dwj[0] + wj[1] * v, dwj[1] - wj[0] * v, dwj[2] + qdd[s, j])
                    wj = (wj[0], wj[1], wj[2] + v)
                else:
                    aj = (aj[0] + 2.0 * wj[1] * v, aj[1] - 2.0 * wj[0] * v, aj[2] + qdd[s, j])
                # Newton-Euler about the centre of mass
                cj = (com[j, 0], com[j, 1], com[j, 2])
                ac = _add(_add(aj, _cross(dwj, cj)), _cross(wj, _cross(wj, cj)))
                Iw = _mul(I_c, j, wj)
                Idw = _mul(I_c, j, dwj)
                nm = _add(Idw, _cross(wj, Iw))
                for r in range(3):
                    F[j, r] = mass[j] * ac[r]
                    Nm[j, r] = nm[r]
                w_prev = wj
                dw_prev = dwj
                a_prev = aj
            f_next = (0.0, 0.0, 0.0)
            n_next = (0.0, 0.0, 0.0)
            for j in range(n - 1, -1, -1):
                Fj = (F[j, 0], F[j, 1], F[j, 2])
                cj = (com[j, 0], com[j, 1], com[j, 2])
                if j < n - 1:
                    f_child = _mul(R, j + 1, f_next)
                    n_child = _add(_mul(R, j + 1, n_next), _cross((p[j + 1, 0], p[j + 1, 1], p[j + 1, 2]), f_child))
                else:
                    f_child = (0.0, 0.0, 0.0)
                    n_child = (0.0, 0.0, 0.0)
                fj = _add(Fj, f_child)
                nj = _add(_add((Nm[j, 0], Nm[j, 1], Nm[j, 2]), _cross(cj, Fj)), n_child)
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
