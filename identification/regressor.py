"""The dynamics regressor Y(q, qd, qdd), evaluated by Numba over a batch of samples.

tau = Y(q, qd, qdd) · pi, with pi the standard parameters of every joint in blocks of

    XX XY XZ YY YZ ZZ MX MY MZ M [IA] [FV] [FC] [FO]

(inertia and first moments about the joint frame origin, mass, then the optional rotor
inertia and viscous / Coulomb / offset friction columns the caller selects).

The output is stacked sample-major: rows ``s*n + i`` hold joint i of sample s, i.e.
``Y.reshape(N, n, P)[s]`` is the n x P regressor of sample s.

Derivation (why it is cheap): joint i's torque is the projection of the wrench that link
j >= i exerts, onto joint i's axis. Carrying joint i's unit motion (Omega, V) out to frame j
gives one row per (i, j) pair directly from link j's velocity, acceleration and
linear acceleration, with no 6x10 matrix products:

    inertia  cols: Omega^T L(dw) + (Omega x w)^T L(w)
    MX MY MZ cols: V x dw + (V.w) w - (w.w) V + a x Omega
    M        col : V . a
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

from robodyn.robot.model import INERTIAL_NAMES, RobotModel, check_states

FRICTION_KINDS = ("viscous", "coulomb", "offset")
FRICTION_COLUMN = {"viscous": "FV", "coulomb": "FC", "offset": "FO"}


@dataclass(frozen=True)
class ColumnSpec:
    """Which optional per-joint columns follow the 10 inertial ones."""

    rotor_inertia: bool = False
    friction: tuple[str, ...] = ()
    # Motors shared by several joints (a coupled wrist): each entry is the vector c with
    # motor velocity proportional to c . qd. Each adds three columns after all joint blocks:
    # its inertia IAMk (c . qdd) c, viscous FVMk (c . qd) c and Coulomb FCMk sgn(c . qd) c.
    motor_couplings: tuple[tuple[float, ...], ...] = ()

    def __post_init__(self):
        bad = [f for f in self.friction if f not in FRICTION_KINDS]
        if bad:
            raise ValueError(f"friction: unknown kind(s) {bad}; expected any of {list(FRICTION_KINDS)}")
        # canonical order, no duplicates
        object.__setattr__(self, "friction", tuple(k for k in FRICTION_KINDS if k in self.friction))
        couplings = tuple(tuple(float(x) for x in c) for c in self.motor_couplings)
        for k, c in enumerate(couplings):
            if not c or not all(np.isfinite(c)) or not any(c):
                raise ValueError(f"motor_couplings[{k}]: expected a non-zero finite vector, got {c}")
        object.__setattr__(self, "motor_couplings", couplings)

    @property
    def per_joint(self) -> int:
        return 10 + int(self.rotor_inertia) + len(self.friction)

    def total(self, dof: int) -> int:
        """Number of regressor columns for a robot with ``dof`` joints."""
        for k, c in enumerate(self.motor_couplings):
            if len(c) != dof:
                raise ValueError(f"motor_couplings[{k}]: has {len(c)} entries for a {dof}-joint robot")
        return self.per_joint * dof + 3 * len(self.motor_couplings)

    def joint_names(self) -> list[str]:
        names = list(INERTIAL_NAMES)
        if self.rotor_inertia:
            names.append("IA")
        names += [FRICTION_COLUMN[k] for k in self.friction]
        return names

    @classmethod
    def parse(cls, rotor_inertia: bool = False, friction: str | None = None) -> "ColumnSpec":
        """From CLI-style input: friction as a comma list such as 'viscous,coulomb,offset'."""
        kinds: tuple[str, ...] = ()
        if friction:
            kinds = tuple(s.strip() for s in friction.split(",") if s.strip())
        return cls(rotor_inertia=rotor_inertia, friction=kinds)


def parameter_names(model: RobotModel, spec: ColumnSpec) -> list[str]:
    names = [f"{base}{i + 1}" for i in range(model.dof) for base in spec.joint_names()]
    for k in range(len(spec.motor_couplings)):
        names += [f"IAM{k + 1}", f"FVM{k + 1}", f"FCM{k + 1}"]
    return names


def standard_parameter_vector(model: RobotModel, spec: ColumnSpec, friction: dict | None = None) -> np.ndarray:
    """The model's nominal standard parameters in regressor column order.

    ``friction`` optionally maps 'viscous'/'coulomb'/'offset' to per-joint arrays (default 0).
    """
    friction = friction or {}
    blocks = []
    for i in range(model.dof):
        row = list(model.inertial[i])
        if spec.rotor_inertia:
            row.append(model.rotor_inertia[i])
        for k in spec.friction:
            row.append(float(np.asarray(friction.get(k, np.zeros(model.dof)), float)[i]))
        blocks.append(row)
    coupled = np.zeros(3 * len(spec.motor_couplings))  # no nominal values for shared motors
    return np.concatenate([np.asarray(blocks, float).ravel(), coupled])


@njit(cache=True, inline="always")
def _rotate_transpose(FR, j, c, s, jt, ux, uy, uz):
    """R_j^T u with R_j = FR_j · Rz(q_j) (revolute) or FR_j (prismatic)."""
    x = FR[j, 0, 0] * ux + FR[j, 1, 0] * uy + FR[j, 2, 0] * uz
    y = FR[j, 0, 1] * ux + FR[j, 1, 1] * uy + FR[j, 2, 1] * uz
    z = FR[j, 0, 2] * ux + FR[j, 1, 2] * uy + FR[j, 2, 2] * uz
    if jt == 0:
        return c * x + s * y, -s * x + c * y, z
    return x, y, z


@njit(cache=True)
def _sample_kinematics(FR, Fp, jtype, g, q, qd, qdd, s, cs, sn, pos, w, dw, acc):
    """Forward recursion for one sample: per joint frame, (cos, sin), origin offset, w, dw, a."""
    n = jtype.shape[0]
    pwx = 0.0
    pwy = 0.0
    pwz = 0.0
    pdx = 0.0
    pdy = 0.0
    pdz = 0.0
    pax = -g[0]
    pay = -g[1]
    paz = -g[2]
    for j in range(n):
        jt = jtype[j]
        qj = q[s, j]
        if jt == 0:
            c = np.cos(qj)
            sj = np.sin(qj)
        else:
            c = 1.0
            sj = 0.0
        cs[j] = c
        sn[j] = sj
        px = Fp[j, 0]
        py = Fp[j, 1]
        pz = Fp[j, 2]
        if jt != 0:
            px += FR[j, 0, 2] * qj
            py += FR[j, 1, 2] * qj
            pz += FR[j, 2, 2] * qj
        pos[j, 0] = px
        pos[j, 1] = py
        pos[j, 2] = pz
        # a_prev + dw_prev x p + w_prev x (w_prev x p), in the previous frame
        t1x = pwy * pz - pwz * py
        t1y = pwz * px - pwx * pz
        t1z = pwx * py - pwy * px
        ux = pax + (pdy * pz - pdz * py) + (pwy * t1z - pwz * t1y)
        uy = pay + (pdz * px - pdx * pz) + (pwz * t1x - pwx * t1z)
        uz = paz + (pdx * py - pdy * px) + (pwx * t1y - pwy * t1x)
        ax, ay, az = _rotate_transpose(FR, j, c, sj, jt, ux, uy, uz)
        wx, wy, wz = _rotate_transpose(FR, j, c, sj, jt, pwx, pwy, pwz)
        dwx, dwy, dwz = _rotate_transpose(FR, j, c, sj, jt, pdx, pdy, pdz)
        qdj = qd[s, j]
        qddj = qdd[s, j]
        if jt == 0:
            # dw += w_in x (qd z) + qdd z ; w += qd z
            dwx += wy * qdj
            dwy -= wx * qdj
            dwz += qddj
            wz += qdj
        else:
            # a += qdd z + 2 w x (qd z)
            ax += 2.0 * wy * qdj
            ay -= 2.0 * wx * qdj
            az += qddj
        w[j, 0] = wx
        w[j, 1] = wy
        w[j, 2] = wz
        dw[j, 0] = dwx
        dw[j, 1] = dwy
        dw[j, 2] = dwz
        acc[j, 0] = ax
        acc[j, 1] = ay
        acc[j, 2] = az
        pwx, pwy, pwz = wx, wy, wz
        pdx, pdy, pdz = dwx, dwy, dwz
        pax, pay, paz = ax, ay, az


@njit(cache=True, parallel=True)
def _regressor_kernel(FR, Fp, jtype, g, q, qd, qdd, has_ia, has_fv, has_fc, has_fo, out, n_chunks):
    N = q.shape[0]
    n = jtype.shape[0]
    block = 10 + has_ia + has_fv + has_fc + has_fo
    for chunk in prange(n_chunks):
        start = (chunk * N) // n_chunks
        stop = ((chunk + 1) * N) // n_chunks
        # scratch owned by this chunk: no allocation per sample
        cs = np.empty(n)
        sn = np.empty(n)
        pos = np.empty((n, 3))
        w = np.empty((n, 3))
        dw = np.empty((n, 3))
        acc = np.empty((n, 3))
        for s in range(start, stop):
            _sample_kinematics(FR, Fp, jtype, g, q, qd, qdd, s, cs, sn, pos, w, dw, acc)
            for i in range(n):
                row = s * n + i
                for k in range(block * i):
                    out[row, k] = 0.0
                # joint i's unit motion, at the origin of frame i
                if jtype[i] == 0:
                    Ox, Oy, Oz, Vx, Vy, Vz = 0.0, 0.0, 1.0, 0.0, 0.0, 0.0
                else:
                    Ox, Oy, Oz, Vx, Vy, Vz = 0.0, 0.0, 0.0, 0.0, 0.0, 1.0
                for j in range(i, n):
                    if j > i:
                        # carry the motion from frame j-1 to frame j
                        px = pos[j, 0]
                        py = pos[j, 1]
                        pz = pos[j, 2]
                        vx = Vx + (Oy * pz - Oz * py)
                        vy = Vy + (Oz * px - Ox * pz)
                        vz = Vz + (Ox * py - Oy * px)
                        Ox, Oy, Oz = _rotate_transpose(FR, j, cs[j], sn[j], jtype[j], Ox, Oy, Oz)
                        Vx, Vy, Vz = _rotate_transpose(FR, j, cs[j], sn[j], jtype[j], vx, vy, vz)
                    wx = w[j, 0]
                    wy = w[j, 1]
                    wz = w[j, 2]
                    dx = dw[j, 0]
                    dy = dw[j, 1]
                    dz = dw[j, 2]
                    ax = acc[j, 0]
                    ay = acc[j, 1]
                    az = acc[j, 2]
                    bx = Oy * wz - Oz * wy
                    by = Oz * wx - Ox * wz
                    bz = Ox * wy - Oy * wx
                    c0 = block * j
                    out[row, c0 + 0] = Ox * dx + bx * wx
                    out[row, c0 + 1] = Ox * dy + Oy * dx + bx * wy + by * wx
                    out[row, c0 + 2] = Ox * dz + Oz * dx + bx * wz + bz * wx
                    out[row, c0 + 3] = Oy * dy + by * wy
                    out[row, c0 + 4] = Oy * dz + Oz * dy + by * wz + bz * wy
                    out[row, c0 + 5] = Oz * dz + bz * wz
                    vw = Vx * wx + Vy * wy + Vz * wz
                    ww = wx * wx + wy * wy + wz * wz
                    out[row, c0 + 6] = (Vy * dz - Vz * dy) + vw * wx - ww * Vx + (ay * Oz - az * Oy)
                    out[row, c0 + 7] = (Vz * dx - Vx * dz) + vw * wy - ww * Vy + (az * Ox - ax * Oz)
                    out[row, c0 + 8] = (Vx * dy - Vy * dx) + vw * wz - ww * Vz + (ax * Oy - ay * Ox)
                    out[row, c0 + 9] = Vx * ax + Vy * ay + Vz * az
                    k = c0 + 10
                    if has_ia:
                        out[row, k] = qdd[s, j] if j == i else 0.0
                        k += 1
                    if has_fv:
                        out[row, k] = qd[s, j] if j == i else 0.0
                        k += 1
                    if has_fc:
                        v = qd[s, j]
                        out[row, k] = (1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)) if j == i else 0.0
                        k += 1
                    if has_fo:
                        out[row, k] = 1.0 if j == i else 0.0
                        k += 1
    return out


@njit(cache=True, parallel=True)
def _gather_kernel(W, dof, columns, out):
    N = out.shape[1]
    for j in prange(dof):
        for s in range(N):
            row = s * dof + j
            for k in range(columns.shape[0]):
                out[j, s, k] = W[row, columns[k]]
    return out


def gather_joint_major(W: np.ndarray, dof: int, columns: np.ndarray) -> np.ndarray:
    """Selected columns of sample-major rows (N*n, P) as contiguous per-joint blocks (n, N, k),
    in one pass (the layout BLAS wants for per-joint normal equations)."""
    N = W.shape[0] // dof
    out = np.empty((dof, N, len(columns)))
    return _gather_kernel(W, dof, np.ascontiguousarray(columns, dtype=np.int64), out)


def _model_arrays(model: RobotModel):
    FR = np.ascontiguousarray(model.fixed[:, :3, :3])
    Fp = np.ascontiguousarray(model.fixed[:, :3, 3])
    jtype = np.ascontiguousarray(model.joint_types.astype(np.int64))
    g = np.ascontiguousarray(model.gravity, dtype=np.float64)
    return FR, Fp, jtype, g


def regressor(model: RobotModel, q, qd, qdd, spec: ColumnSpec = ColumnSpec(), *,
              out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray:
    """Stacked regressor (N*n, P) for N samples (rows sample-major).

    ``out`` may be a preallocated (N*n, P) float64 C-contiguous array to fill. ``threads``
    limits the Numba threads used (default: all configured threads).
    """
    q, qd, qdd = check_states(model, q, qd, qdd)
    N, n = q.shape
    P = spec.total(n)
    if out is None:
        out = np.empty((N * n, P))
    elif out.shape != (N * n, P) or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out: expected a C-contiguous float64 array of shape {(N * n, P)}, got "
                         f"{out.shape} {out.dtype}")
    FR, Fp, jtype, g = _model_arrays(model)
    nthreads = numba.get_num_threads() if threads is None else max(1, int(threads))
    n_chunks = max(1, min(N, nthreads * 4 if nthreads > 1 else 1))
    previous = numba.get_num_threads()
    try:
        if nthreads != previous:
            numba.set_num_threads(min(nthreads, numba.config.NUMBA_NUM_THREADS))
        _regressor_kernel(FR, Fp, jtype, g, q, qd, qdd, int(spec.rotor_inertia),
                          int("viscous" in spec.friction), int("coulomb" in spec.friction),
                          int("offset" in spec.friction), out, n_chunks)
    finally:
        if nthreads != previous:
            numba.set_num_threads(previous)
    if spec.motor_couplings:
        _coupling_columns(spec, qd, qdd, out.reshape(N, n, P)[:, :, spec.per_joint * n:])
    return out


def _coupling_columns(spec: ColumnSpec, qd: np.ndarray, qdd: np.ndarray, view: np.ndarray) -> None:
    """Fill the shared-motor columns (N, n, 3 * couplings) in place."""
    for k, c in enumerate(spec.motor_couplings):
        c = np.asarray(c)
        motor_v = qd @ c
        motor_a = qdd @ c
        view[:, :, 3 * k] = np.outer(motor_a, c)
        view[:, :, 3 * k + 1] = np.outer(motor_v, c)
        view[:, :, 3 * k + 2] = np.outer(np.sign(motor_v), c)


def sample_states(model: RobotModel, count: int, seed: int = 0, scale: float = 1.0):
    """Random states for structural analysis: q uniform in the limits (or +-pi where a limit
    is infinite), qd and qdd uniform in +-scale (times the limit where one is finite)."""
    rng = np.random.default_rng(seed)
    n = model.dof
    lo = np.where(np.isfinite(model.q_min), model.q_min, -np.pi)
    hi = np.where(np.isfinite(model.q_max), model.q_max, np.pi)
    q = rng.uniform(lo, hi, size=(count, n))
    vmax = np.where(np.isfinite(model.qd_max), model.qd_max, 1.0)
    amax = np.where(np.isfinite(model.qdd_max), model.qdd_max, 1.0)
    qd = rng.uniform(-1, 1, size=(count, n)) * vmax * scale
    qdd = rng.uniform(-1, 1, size=(count, n)) * amax * scale
    return q, qd, qdd


def default_threads() -> int:
    return int(os.environ.get("NUMBA_NUM_THREADS", numba.config.NUMBA_NUM_THREADS))
