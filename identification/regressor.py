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

import math
import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction

import numba
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

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


# --------------------------------------------------------------------------- evaluation plan
#
# Every evaluation (the full regressor, joint-major base columns, the fused normal equations)
# runs the same per-block kernel, ``_block_rows``: it evaluates BLOCK samples at once, with every
# quantity stored lane by lane (structure of arrays) so that each loop over the samples of a block
# is straight-line arithmetic that LLVM vectorises. The kernel writes row (i, column) of each
# sample as one row of a tile Z[row, sample], at the tile row a plan names, or nowhere (-1): the
# zero blocks (joint i never sees links before it; the rotor and friction columns of link j only
# act on joint j) are never computed, and a plan for the normal equations names only the base
# columns a joint's row can touch, in the layout the Gram kernel consumes.

BLOCK = 32  # samples per SIMD block: lanes of every inner loop (a compile-time constant stride)
TILE = 256  # samples per tile of the fused normal equations (multiple of BLOCK; tile stays in L2)
_KF = 14  # kinematic fields per joint slot: c s px py pz wx wy wz dx dy dz ax ay az
_XF = 5  # input fields per joint: q qd qdd sgn-or-filtered-Coulomb tau
EXTRA_CODES = {"IA": 0, "FV": 1, "FC": 2, "FO": 3}


def _pi_over_two_parts() -> tuple[float, float, float]:
    """pi/2 split as P1 + P2 + P3 (P1 and P2 with 30 significant bits, so k*P1 and k*P2 are exact
    for |k| < 2^23): the Cody-Waite reduction x - k pi/2 keeps full precision for |x| <= 1e5."""
    half_pi = Fraction("3.14159265358979323846264338327950288419716939937510582097494459") / 2
    parts = []
    rest = half_pi
    for bits in (30, 30):
        m, e = math.frexp(float(rest))
        part = math.ldexp(math.floor(m * 2**bits) / 2**bits, e)
        parts.append(part)
        rest -= Fraction(part)
    parts.append(float(rest))
    return parts[0], parts[1], parts[2]


_P1, _P2, _P3 = _pi_over_two_parts()
_TWO_OVER_PI = 2.0 / math.pi
_SINCOS_VECTOR_LIMIT = 1.0e5  # beyond this |q| a block falls back to libm (never in practice)
# Taylor coefficients (-1)^k / (2k+1)! and (-1)^k / (2k)!: on |r| <= pi/4 the first omitted
# terms are below 1e-19, so the polynomials are exact to rounding.
_S1, _S2, _S3, _S4, _S5, _S6, _S7, _S8 = (float(Fraction((-1) ** k, math.factorial(2 * k + 1))) for k in range(1, 9))
_C1, _C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9 = (float(Fraction((-1) ** k, math.factorial(2 * k))) for k in range(1, 10))


@njit(cache=True, fastmath={"contract"}, inline="always")
def _sincos(x):
    """sin(x), cos(x) without library calls (so a loop over samples vectorises); |x| <= 1e5."""
    k = np.floor(x * _TWO_OVER_PI + 0.5)
    r = ((x - k * _P1) - k * _P2) - k * _P3
    z = r * r
    sr = r + r * z * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * (_S6 + z * (_S7 + z * _S8)))))))
    cr = 1.0 + z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * (_C6 + z * (_C7 + z * (_C8 + z * _C9))))))))
    quadrant = np.int64(k)
    s = cr if quadrant & 1 else sr
    c = sr if quadrant & 1 else cr
    s = -s if quadrant & 2 else s
    c = -c if (quadrant + 1) & 2 else c
    return s, c


@njit(cache=True)
def _sincos_array(x, s, c):
    """Vector sin/cos of a 1-D array (exposed for the accuracy test)."""
    for k in range(x.shape[0]):
        s[k], c[k] = _sincos(x[k])


@njit(cache=True, fastmath={"contract"}, inline="always")
def _ten(Ox, Oy, Oz, Vx, Vy, Vz, wx, wy, wz, dx, dy, dz, ax, ay, az):
    """The ten inertial columns of one (joint, link) pair from joint i's unit motion (O, V) in
    link j's frame and link j's w, dw, a (module docstring)."""
    bx = Oy * wz - Oz * wy
    by = Oz * wx - Ox * wz
    bz = Ox * wy - Oy * wx
    vw = Vx * wx + Vy * wy + Vz * wz
    ww = wx * wx + wy * wy + wz * wz
    return (Ox * dx + bx * wx,
            Ox * dy + Oy * dx + bx * wy + by * wx,
            Ox * dz + Oz * dx + bx * wz + bz * wx,
            Oy * dy + by * wy,
            Oy * dz + Oz * dy + by * wz + bz * wy,
            Oz * dz + bz * wz,
            (Vy * dz - Vz * dy) + vw * wx - ww * Vx + (ay * Oz - az * Oy),
            (Vz * dx - Vx * dz) + vw * wy - ww * Vy + (az * Ox - ax * Oz),
            (Vx * dy - Vy * dx) + vw * wz - ww * Vz + (ax * Oy - ay * Ox),
            Vx * ax + Vy * ay + Vz * az)


# The helpers below each run one loop over the lanes of a block on flat scratch arrays, indexed by
# unsigned offsets (no views, so no reference counting in the hot loops, and no negative-index
# wrap-around that would turn loads into gathers) with a constant lane stride BLOCK: straight-line
# arithmetic on contiguous lanes that LLVM vectorises. ``nl`` (= BLOCK) is passed at run time so
# the loops are vectorised rather than fully unrolled.

_U = np.uint64


@njit(cache=True, fastmath={"contract"})
def _lanes_sincos(X, xo, K, ko, nl):
    """K[ko + b] = cos(q), K[ko + BLOCK + b] = sin(q) for q = X[xo + b]."""
    big = 0.0
    for b in range(nl):
        big = max(big, abs(X[xo + b]))
    if big <= _SINCOS_VECTOR_LIMIT:
        for b in range(nl):
            sv, cv = _sincos(X[xo + b])
            K[ko + b] = cv
            K[ko + _U(BLOCK) + b] = sv
    else:
        for b in range(nl):
            K[ko + b] = math.cos(X[xo + b])
            K[ko + _U(BLOCK) + b] = math.sin(X[xo + b])


@njit(cache=True, fastmath={"contract"})
def _lanes_fixed_joint_angle(K, ko, nl):
    """A prismatic joint does not rotate: cos = 1, sin = 0."""
    for b in range(nl):
        K[ko + b] = 1.0
        K[ko + _U(BLOCK) + b] = 0.0


@njit(cache=True, fastmath={"contract"})
def _lanes_link(K, kp, X, xo, nl, r00, r01, r02, r10, r11, r12, r20, r21, r22, fx, fy, fz, rj):
    """Link j's origin, w, dw and a (frame j) from link j-1's (slot kp) into slot kp + _KF*BLOCK."""
    pj = 1.0 - rj
    kc = kp + _U(_KF * BLOCK)
    for b in range(nl):
        qj = X[xo + b]
        v = X[xo + _U(BLOCK) + b]
        a = X[xo + _U(2 * BLOCK) + b]
        c = K[kc + b]
        sn = K[kc + _U(BLOCK) + b]
        # origin of frame j in frame j-1 (a prismatic joint slides along its z axis)
        px = fx + pj * r02 * qj
        py = fy + pj * r12 * qj
        pz = fz + pj * r22 * qj
        pwx = K[kp + _U(5 * BLOCK) + b]
        pwy = K[kp + _U(6 * BLOCK) + b]
        pwz = K[kp + _U(7 * BLOCK) + b]
        pdx = K[kp + _U(8 * BLOCK) + b]
        pdy = K[kp + _U(9 * BLOCK) + b]
        pdz = K[kp + _U(10 * BLOCK) + b]
        # a_prev + dw_prev x p + w_prev x (w_prev x p), in frame j-1
        t1x = pwy * pz - pwz * py
        t1y = pwz * px - pwx * pz
        t1z = pwx * py - pwy * px
        ux = K[kp + _U(11 * BLOCK) + b] + (pdy * pz - pdz * py) + (pwy * t1z - pwz * t1y)
        uy = K[kp + _U(12 * BLOCK) + b] + (pdz * px - pdx * pz) + (pwz * t1x - pwx * t1z)
        uz = K[kp + _U(13 * BLOCK) + b] + (pdx * py - pdy * px) + (pwx * t1y - pwy * t1x)
        # R_j^T u with R_j = FR_j Rz(q_j) (c = 1, s = 0 for a prismatic joint)
        x = r00 * ux + r10 * uy + r20 * uz
        y = r01 * ux + r11 * uy + r21 * uz
        az = r02 * ux + r12 * uy + r22 * uz
        ax = c * x + sn * y
        ay = c * y - sn * x
        x = r00 * pwx + r10 * pwy + r20 * pwz
        y = r01 * pwx + r11 * pwy + r21 * pwz
        wz = r02 * pwx + r12 * pwy + r22 * pwz
        wx = c * x + sn * y
        wy = c * y - sn * x
        x = r00 * pdx + r10 * pdy + r20 * pdz
        y = r01 * pdx + r11 * pdy + r21 * pdz
        dwz = r02 * pdx + r12 * pdy + r22 * pdz
        dwx = c * x + sn * y
        dwy = c * y - sn * x
        K[kc + _U(2 * BLOCK) + b] = px
        K[kc + _U(3 * BLOCK) + b] = py
        K[kc + _U(4 * BLOCK) + b] = pz
        # revolute: dw += w x (qd z) + qdd z, w += qd z; prismatic: a += 2 w x (qd z) + qdd z
        K[kc + _U(5 * BLOCK) + b] = wx
        K[kc + _U(6 * BLOCK) + b] = wy
        K[kc + _U(7 * BLOCK) + b] = wz + rj * v
        K[kc + _U(8 * BLOCK) + b] = dwx + rj * (wy * v)
        K[kc + _U(9 * BLOCK) + b] = dwy - rj * (wx * v)
        K[kc + _U(10 * BLOCK) + b] = dwz + rj * a
        K[kc + _U(11 * BLOCK) + b] = ax + pj * (2.0 * wy * v)
        K[kc + _U(12 * BLOCK) + b] = ay - pj * (2.0 * wx * v)
        K[kc + _U(13 * BLOCK) + b] = az + pj * a


@njit(cache=True, fastmath={"contract"}, inline="always")
def _lanes_unit_ten(W, K, kc, nl, ri):
    """Joint i's own link (j = i): unit motion O = z (revolute) or V = z (prismatic) at frame i's
    origin into W[0:6 BLOCK], its ten columns into W[6 BLOCK: 16 BLOCK]."""
    pi_ = 1.0 - ri
    for b in range(nl):
        W[b] = 0.0
        W[_U(BLOCK) + b] = 0.0
        W[_U(2 * BLOCK) + b] = ri
        W[_U(3 * BLOCK) + b] = 0.0
        W[_U(4 * BLOCK) + b] = 0.0
        W[_U(5 * BLOCK) + b] = pi_
        y0, y1, y2, y3, y4, y5, y6, y7, y8, y9 = _ten(
            0.0, 0.0, ri, 0.0, 0.0, pi_,
            K[kc + _U(5 * BLOCK) + b], K[kc + _U(6 * BLOCK) + b], K[kc + _U(7 * BLOCK) + b],
            K[kc + _U(8 * BLOCK) + b], K[kc + _U(9 * BLOCK) + b], K[kc + _U(10 * BLOCK) + b],
            K[kc + _U(11 * BLOCK) + b], K[kc + _U(12 * BLOCK) + b], K[kc + _U(13 * BLOCK) + b])
        W[_U(6 * BLOCK) + b] = y0
        W[_U(7 * BLOCK) + b] = y1
        W[_U(8 * BLOCK) + b] = y2
        W[_U(9 * BLOCK) + b] = y3
        W[_U(10 * BLOCK) + b] = y4
        W[_U(11 * BLOCK) + b] = y5
        W[_U(12 * BLOCK) + b] = y6
        W[_U(13 * BLOCK) + b] = y7
        W[_U(14 * BLOCK) + b] = y8
        W[_U(15 * BLOCK) + b] = y9


@njit(cache=True, fastmath={"contract"}, inline="always")
def _lanes_carry_ten(W, K, kc, nl, r00, r01, r02, r10, r11, r12, r20, r21, r22):
    """Carry the unit motion (O, V) in W from frame j-1 to frame j (slot kc), then link j's ten
    columns into W[6 BLOCK: 16 BLOCK]."""
    for b in range(nl):
        ox = W[b]
        oy = W[_U(BLOCK) + b]
        oz = W[_U(2 * BLOCK) + b]
        px = K[kc + _U(2 * BLOCK) + b]
        py = K[kc + _U(3 * BLOCK) + b]
        pz = K[kc + _U(4 * BLOCK) + b]
        vx = W[_U(3 * BLOCK) + b] + (oy * pz - oz * py)
        vy = W[_U(4 * BLOCK) + b] + (oz * px - ox * pz)
        vz = W[_U(5 * BLOCK) + b] + (ox * py - oy * px)
        c = K[kc + b]
        sn = K[kc + _U(BLOCK) + b]
        x = r00 * ox + r10 * oy + r20 * oz
        y = r01 * ox + r11 * oy + r21 * oz
        Oz = r02 * ox + r12 * oy + r22 * oz
        Ox = c * x + sn * y
        Oy = c * y - sn * x
        x = r00 * vx + r10 * vy + r20 * vz
        y = r01 * vx + r11 * vy + r21 * vz
        Vz = r02 * vx + r12 * vy + r22 * vz
        Vx = c * x + sn * y
        Vy = c * y - sn * x
        W[b] = Ox
        W[_U(BLOCK) + b] = Oy
        W[_U(2 * BLOCK) + b] = Oz
        W[_U(3 * BLOCK) + b] = Vx
        W[_U(4 * BLOCK) + b] = Vy
        W[_U(5 * BLOCK) + b] = Vz
        y0, y1, y2, y3, y4, y5, y6, y7, y8, y9 = _ten(
            Ox, Oy, Oz, Vx, Vy, Vz,
            K[kc + _U(5 * BLOCK) + b], K[kc + _U(6 * BLOCK) + b], K[kc + _U(7 * BLOCK) + b],
            K[kc + _U(8 * BLOCK) + b], K[kc + _U(9 * BLOCK) + b], K[kc + _U(10 * BLOCK) + b],
            K[kc + _U(11 * BLOCK) + b], K[kc + _U(12 * BLOCK) + b], K[kc + _U(13 * BLOCK) + b])
        W[_U(6 * BLOCK) + b] = y0
        W[_U(7 * BLOCK) + b] = y1
        W[_U(8 * BLOCK) + b] = y2
        W[_U(9 * BLOCK) + b] = y3
        W[_U(10 * BLOCK) + b] = y4
        W[_U(11 * BLOCK) + b] = y5
        W[_U(12 * BLOCK) + b] = y6
        W[_U(13 * BLOCK) + b] = y7
        W[_U(14 * BLOCK) + b] = y8
        W[_U(15 * BLOCK) + b] = y9


@njit(cache=True, inline="always")
def _lanes_copy(dst, do, src, so, nl):
    for b in range(nl):
        dst[do + b] = src[so + b]


@njit(cache=True, inline="always")
def _lanes_fill(dst, do, value, nl):
    for b in range(nl):
        dst[do + b] = value


@njit(cache=True)
def _lanes_axpy(dst, do, a, src, so, nl):
    for b in range(nl):
        dst[do + b] += a * src[so + b]


@njit(cache=True)
def _lanes_scaled(dst, do, a, src, so, nl):
    for b in range(nl):
        dst[do + b] = a * src[so + b]


@njit(cache=True)
def _lanes_sign(dst, do, src, so, nl):
    for b in range(nl):
        v = src[so + b]
        dst[do + b] = np.float64(v > 0.0) - np.float64(v < 0.0)


@njit(cache=True)
def _load_inputs(q, qd, qdd, fc, tau, use_fc, use_tau, s0, nb, X):
    """Samples s0 .. s0+nb-1 into lanes, X[(j * _XF + f) * BLOCK + b]; lanes past nb are zero."""
    n = q.shape[1]
    for b in range(nb):
        s = s0 + b
        for j in range(n):
            base = j * _XF * BLOCK + b
            X[base] = q[s, j]
            X[base + BLOCK] = qd[s, j]
            X[base + 2 * BLOCK] = qdd[s, j]
            if use_fc:
                X[base + 3 * BLOCK] = fc[s, j]
            if use_tau:
                X[base + 4 * BLOCK] = tau[s, j]
    for j in range(n):
        base = j * _XF * BLOCK
        for f in range(_XF):
            for b in range(nb, BLOCK):
                X[base + f * BLOCK + b] = 0.0
        if not use_fc:
            _lanes_sign(X, _U(base + 3 * BLOCK), X, _U(base + BLOCK), _U(BLOCK))


@njit(cache=True, inline="always")
def _emit_tile(Z, zo, T, to, dest, row, nl):
    """Tile rows d = dest[row, k] (>= 0), lanes from offset zo, get T[to + k * BLOCK: ...]."""
    for k in range(dest.shape[1]):
        d = dest[row, k]
        if d >= 0:
            _lanes_copy(Z, _U(d) * _U(TILE) + zo, T, to + _U(k * BLOCK), nl)


@intrinsic
def _transpose_4x4(typingctx, S, so, stride, T, to):
    """S[so + r * stride + c] = T[to + c * BLOCK + r] for r, c < 4: four lanes of four consecutive
    columns turned into four rows by four vector loads, eight shuffles and four vector stores
    (a quarter of the stores, which bound the scalar transposition)."""
    sig = types.void(S, so, stride, T, to)

    def codegen(context, builder, signature, args):
        quad = ir.VectorType(ir.DoubleType(), 4)
        dst = context.make_array(signature.args[0])(context, builder, args[0]).data
        src = context.make_array(signature.args[3])(context, builder, args[3]).data
        so_, stride_, to_ = args[1], args[2], args[4]
        cols = [builder.load(builder.bitcast(builder.gep(src, [builder.add(to_, ir.Constant(to_.type, c * BLOCK))]),
                                             quad.as_pointer()), align=8) for c in range(4)]
        mask = lambda *m: ir.Constant(ir.VectorType(ir.IntType(32), 4), list(m))  # noqa: E731
        even01 = builder.shuffle_vector(cols[0], cols[1], mask(0, 4, 2, 6))  # lanes 0 and 2 of columns 0, 1
        odd01 = builder.shuffle_vector(cols[0], cols[1], mask(1, 5, 3, 7))
        even23 = builder.shuffle_vector(cols[2], cols[3], mask(0, 4, 2, 6))
        odd23 = builder.shuffle_vector(cols[2], cols[3], mask(1, 5, 3, 7))
        rows = (builder.shuffle_vector(even01, even23, mask(0, 1, 4, 5)),
                builder.shuffle_vector(odd01, odd23, mask(0, 1, 4, 5)),
                builder.shuffle_vector(even01, even23, mask(2, 3, 6, 7)),
                builder.shuffle_vector(odd01, odd23, mask(2, 3, 6, 7)))
        at = so_
        for r in range(4):
            builder.store(rows[r], builder.bitcast(builder.gep(dst, [at]), quad.as_pointer()), align=8)
            at = builder.add(at, stride_)
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True)
def _emit_rows(S, stride, wo, T, to, dest, row):
    """Block image of output rows: S[b * stride + wo + dest[row, k]] = T[to + k * BLOCK + b]
    for every lane b and every k with dest[row, k] >= 0. A run of at least four columns bound for
    consecutive places (a link's inertial columns in the full regressor) goes four columns by four
    lanes at a time through a register transposition, its last four columns overlapping the
    previous four when the run is not a multiple of four (the same values written twice); other
    columns one by one, lanes the inner loop. Lanes past the block's samples land in rows of S
    that are never copied out."""
    cols = dest.shape[1]
    k = 0
    while k < cols:
        d = dest[row, k]
        if d < 0:
            k += 1
            continue
        run = 1
        while k + run < cols and dest[row, k + run] == d + run:
            run += 1
        if run >= 4:
            for c in range(0, run, 4):
                c = min(c, run - 4)
                for b in range(0, BLOCK, 4):
                    _transpose_4x4(S, _U(wo + d + c) + _U(b) * stride, stride, T, to + _U((k + c) * BLOCK + b))
        else:
            for c in range(run):
                src = to + _U((k + c) * BLOCK)
                dst = _U(wo + d + c)
                for b in range(BLOCK):
                    S[dst + _U(b) * stride] = T[src + _U(b)]
        k += run


@njit(cache=True)
def _motor_lanes(C, X, E, n):
    """Each shared motor's c.qdd, c.qd and sgn(c.qd), lane by lane, into the second half of E."""
    nm = C.shape[0]
    for m in range(nm):
        o = _U((3 * nm + 2 + 3 * m) * BLOCK)
        _lanes_fill(E, o, 0.0, _U(2 * BLOCK))
        for j in range(n):
            _lanes_axpy(E, o, C[m, j], X, _U((j * _XF + 2) * BLOCK), _U(BLOCK))
            _lanes_axpy(E, o + _U(BLOCK), C[m, j], X, _U((j * _XF + 1) * BLOCK), _U(BLOCK))
        _lanes_sign(E, o + _U(2 * BLOCK), E, o + _U(BLOCK), _U(BLOCK))


@njit(cache=True)
def _block_rows(FR, Fp, rev, g, C, q, qd, qdd, fc, tau, use_fc, s0, nb, dest, extra_kind, edest, last,
                X, K, W, E, Z, zo, O, w, lane_step, joint_step):
    """Evaluate samples s0 .. s0+nb-1 (nb <= BLOCK).

    dest[i * n + j, :]: where the columns of link j's block in joint i's row go (-1: nowhere);
    extra_kind[k-10]: IA / FV / FC / FO for the columns after the ten inertial ones;
    edest[i, :]: where joint i's shared-motor columns (IAMm FVMm FCMm for each motor m), its
    torque and a column of ones go; last[i]: the last link joint i's row needs (-1: none).
    Tile mode (w == 0): "where" is a row of the flat tile Z (TILE lanes a row), lanes at offset zo.
    Row mode (w > 0): a column of O, the image of this block's output rows (rows of w), lane b's
    row of joint i from O[b * lane_step + i * joint_step]: sample-major (lane_step n*w, joint_step
    w) or joint-major (lane_step w, joint_step BLOCK*w); positions no plan entry names are never
    written, so they keep the zeros the caller put there once (the structural zeros are never
    computed nor rewritten).
    Lanes nb..BLOCK-1 are evaluated on zero states (finite; in row mode they land in rows of the
    image that are never copied out).
    """
    n = rev.shape[0]
    per = dest.shape[1]
    # BLOCK lanes, but a count LLVM cannot see: with a constant count of 32 it unrolls the inlined
    # lane loops (the tile copies among them) into scalar code instead of vectorising them
    # (measured: 0.04 us a sample of the base layout's 0.24)
    nl = _U(W.shape[0] // (6 + per))
    _load_inputs(q, qd, qdd, fc, tau, use_fc, edest[0, edest.shape[1] - 2] >= 0, s0, nb, X)
    _motor_lanes(C, X, E, n)
    # base slot: at rest, accelerating against gravity
    _lanes_fill(K, _U(5 * BLOCK), 0.0, _U(6 * BLOCK))
    _lanes_fill(K, _U(11 * BLOCK), -g[0], nl)
    _lanes_fill(K, _U(12 * BLOCK), -g[1], nl)
    _lanes_fill(K, _U(13 * BLOCK), -g[2], nl)
    for j in range(n):
        kc = _U((j + 1) * _KF * BLOCK)
        xo = _U(j * _XF * BLOCK)
        if rev[j] != 0.0:
            _lanes_sincos(X, xo, K, kc, nl)
        else:
            _lanes_fixed_joint_angle(K, kc, nl)
        _lanes_link(K, _U(j * _KF * BLOCK), X, xo, nl,
                    FR[j, 0, 0], FR[j, 0, 1], FR[j, 0, 2], FR[j, 1, 0], FR[j, 1, 1], FR[j, 1, 2],
                    FR[j, 2, 0], FR[j, 2, 1], FR[j, 2, 2], Fp[j, 0], Fp[j, 1], Fp[j, 2], rev[j])
    nm = C.shape[0]
    for i in range(n):
        xo = _U(i * _XF * BLOCK)
        for j in range(i, last[i] + 1):
            kc = _U((j + 1) * _KF * BLOCK)
            if j == i:
                _lanes_unit_ten(W, K, kc, nl, rev[i])
                # rotor inertia and friction columns act on joint i only
                for k in range(10, per):
                    kind = extra_kind[k - 10]
                    if kind == 3:  # offset
                        _lanes_fill(W, _U((6 + k) * BLOCK), 1.0, nl)
                    else:  # IA: qdd, FV: qd, FC: sgn(qd) or its filtered stand-in
                        f = 2 if kind == 0 else (1 if kind == 1 else 3)
                        _lanes_copy(W, _U((6 + k) * BLOCK), X, xo + _U(f * BLOCK), nl)
            else:
                _lanes_carry_ten(W, K, kc, nl, FR[j, 0, 0], FR[j, 0, 1], FR[j, 0, 2], FR[j, 1, 0], FR[j, 1, 1],
                                 FR[j, 1, 2], FR[j, 2, 0], FR[j, 2, 1], FR[j, 2, 2])
            if w > 0:
                _emit_rows(O, lane_step, i * joint_step, W, _U(6 * BLOCK), dest, i * n + j)
            else:
                _emit_tile(Z, zo, W, _U(6 * BLOCK), dest, i * n + j, nl)
        # shared motors: IAMm = (c.qdd) c_i, FVMm = (c.qd) c_i, FCMm = sgn(c.qd) c_i; then tau, ones
        for m in range(nm):
            ci = C[m, i]
            _lanes_scaled(E, _U(3 * m * BLOCK), ci, E, _U((3 * nm + 2 + 3 * m) * BLOCK), _U(3 * BLOCK))
        _lanes_copy(E, _U(3 * nm * BLOCK), X, xo + _U(4 * BLOCK), nl)
        _lanes_fill(E, _U((3 * nm + 1) * BLOCK), 1.0, nl)
        if w > 0:
            _emit_rows(O, lane_step, i * joint_step, E, _U(0), edest, i)
        else:
            _emit_tile(Z, zo, E, _U(0), edest, i, nl)


# Writing the dense output. Its rows interleave values and structural zeros; writing them where
# they are computed scatters 8-byte stores over the block's 175 kB of output (Panda), and zeroing
# the rows first is a burst of stores to lines not in cache, which stalls the core on the reads for
# ownership (measured: the zero fill cost 0.7 us a sample, three times the arithmetic). So each
# block is assembled in a cache-resident image of its output rows, whose zeros are written once per
# call, and copied out contiguously. Outputs larger than the caches are copied with non-temporal
# stores: whole 64-byte lines go to memory without first being read into the cache (about twice
# the bandwidth of ordinary stores, and the caller cannot find such an output in cache anyway).

_STREAM_BYTES = 1 << 24  # outputs at least this large bypass the cache


@intrinsic
def _stream_line(typingctx, dst, d, src, s):
    """dst[d: d + 8] = src[s: s + 8] as one non-temporal 64-byte store (&dst[d] 64-byte aligned)."""
    sig = types.void(dst, d, src, s)

    def codegen(context, builder, signature, args):
        line = ir.VectorType(ir.DoubleType(), 8)
        to = context.make_array(signature.args[0])(context, builder, args[0])
        frm = context.make_array(signature.args[2])(context, builder, args[2])
        value = builder.load(builder.bitcast(builder.gep(frm.data, [args[3]]), line.as_pointer()), align=8)
        store = builder.store(value, builder.bitcast(builder.gep(to.data, [args[1]]), line.as_pointer()), align=64)
        store.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _store_fence(typingctx):
    """Order the non-temporal stores before everything after (they bypass the usual ordering)."""
    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@njit(cache=True)
def _copy_out(O, o, S, so, count, stream):
    """O[o: o + count] = S[so: so + count]; with ``stream``, the whole 64-byte lines by non-temporal
    stores (ordinary stores for the partial lines at both ends, which neighbouring blocks share).
    An output whose doubles are off 8-byte boundaries (numpy allows it) has no whole lines of them."""
    k = 0
    if stream and O.ctypes.data % 8 == 0:
        k = min(count, ((64 - (O.ctypes.data + 8 * o) % 64) % 64) // 8)
        for c in range(k):
            O[o + c] = S[so + c]
        while k + 8 <= count:
            _stream_line(O, o + k, S, so + k)
            k += 8
    for c in range(k, count):
        O[o + c] = S[so + c]


@njit(cache=True, parallel=True, nogil=True)
def _rows_kernel(FR, Fp, rev, g, C, q, qd, qdd, fc, use_fc, dest, extra_kind, edest, last, out, n_chunks, stream,
                 joint_major):
    """Rows of w columns into out, sample-major (N*n, w) or, with ``joint_major``, as contiguous
    per-joint blocks (n, N, w); samples split into n_chunks ranges run in parallel. The block image
    has the output's layout, so a block leaves it as one contiguous run (sample-major) or as one
    run of nb*w values per joint, at (i*N + s0)*w (joint-major): no second pass transposes it."""
    N = q.shape[0]
    n = rev.shape[0]
    w = out.shape[out.ndim - 1]
    lane_step = _U(w) if joint_major else _U(n * w)
    joint_step = BLOCK * w if joint_major else w
    O = out.reshape(out.size)
    no_tile = np.zeros(1)
    for chunk in prange(n_chunks):
        start = (chunk * N) // n_chunks
        stop = ((chunk + 1) * N) // n_chunks
        # scratch owned by this chunk: nothing is allocated per sample
        X = np.zeros(n * _XF * BLOCK)
        K = np.zeros((n + 1) * _KF * BLOCK)
        W = np.zeros((6 + dest.shape[1]) * BLOCK)
        E = np.zeros((6 * C.shape[0] + 2) * BLOCK)
        S = np.zeros(BLOCK * n * w)  # the block's output rows; its structural zeros stay zero
        for s0 in range(start, stop, BLOCK):
            nb = min(BLOCK, stop - s0)
            _block_rows(FR, Fp, rev, g, C, q, qd, qdd, fc, qdd, use_fc, s0, nb, dest, extra_kind,
                        edest, last, X, K, W, E, no_tile, _U(0), S, w, lane_step, joint_step)
            if joint_major:
                for i in range(n):
                    _copy_out(O, (i * N + s0) * w, S, i * joint_step, nb * w, stream)
            else:
                _copy_out(O, s0 * n * w, S, 0, nb * n * w, stream)
        if stream:  # by the thread that stored, before the caller reads the output
            _store_fence()
    return out


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _gram_update(Z, rows, m, nt, G, i):
    """Upper triangle of G[:m, :m] += Zi Zi^T, Zi = tile rows rows .. rows+m-1, first nt lanes:
    sixteen running sums per pair of row quadruples, eight loads feeding sixteen fused multiply-adds
    per lane (a register-blocked SYRK). The kernel is bound by the multiply-adds, so a diagonal
    block takes only its upper triangle's ten (the consumers read G's upper triangle), and the rows
    past the last whole quadruple go one at a time rather than padded with zero rows to four."""
    full = m - m % 4
    for p in range(0, full, 4):
        a0 = _U(rows + p) * _U(TILE)
        s00 = s01 = s02 = s03 = 0.0
        s11 = s12 = s13 = 0.0
        s22 = s23 = 0.0
        s33 = 0.0
        for t in range(nt):
            x0 = Z[a0 + t]
            x1 = Z[a0 + _U(TILE) + t]
            x2 = Z[a0 + _U(2 * TILE) + t]
            x3 = Z[a0 + _U(3 * TILE) + t]
            s00 += x0 * x0
            s01 += x0 * x1
            s02 += x0 * x2
            s03 += x0 * x3
            s11 += x1 * x1
            s12 += x1 * x2
            s13 += x1 * x3
            s22 += x2 * x2
            s23 += x2 * x3
            s33 += x3 * x3
        G[i, p, p] += s00
        G[i, p, p + 1] += s01
        G[i, p, p + 2] += s02
        G[i, p, p + 3] += s03
        G[i, p + 1, p + 1] += s11
        G[i, p + 1, p + 2] += s12
        G[i, p + 1, p + 3] += s13
        G[i, p + 2, p + 2] += s22
        G[i, p + 2, p + 3] += s23
        G[i, p + 3, p + 3] += s33
        for r in range(p + 4, full, 4):
            b0 = _U(rows + r) * _U(TILE)
            s00 = s01 = s02 = s03 = 0.0
            s10 = s11 = s12 = s13 = 0.0
            s20 = s21 = s22 = s23 = 0.0
            s30 = s31 = s32 = s33 = 0.0
            for t in range(nt):
                x0 = Z[a0 + t]
                x1 = Z[a0 + _U(TILE) + t]
                x2 = Z[a0 + _U(2 * TILE) + t]
                x3 = Z[a0 + _U(3 * TILE) + t]
                y0 = Z[b0 + t]
                y1 = Z[b0 + _U(TILE) + t]
                y2 = Z[b0 + _U(2 * TILE) + t]
                y3 = Z[b0 + _U(3 * TILE) + t]
                s00 += x0 * y0
                s01 += x0 * y1
                s02 += x0 * y2
                s03 += x0 * y3
                s10 += x1 * y0
                s11 += x1 * y1
                s12 += x1 * y2
                s13 += x1 * y3
                s20 += x2 * y0
                s21 += x2 * y1
                s22 += x2 * y2
                s23 += x2 * y3
                s30 += x3 * y0
                s31 += x3 * y1
                s32 += x3 * y2
                s33 += x3 * y3
            G[i, p, r] += s00
            G[i, p, r + 1] += s01
            G[i, p, r + 2] += s02
            G[i, p, r + 3] += s03
            G[i, p + 1, r] += s10
            G[i, p + 1, r + 1] += s11
            G[i, p + 1, r + 2] += s12
            G[i, p + 1, r + 3] += s13
            G[i, p + 2, r] += s20
            G[i, p + 2, r + 1] += s21
            G[i, p + 2, r + 2] += s22
            G[i, p + 2, r + 3] += s23
            G[i, p + 3, r] += s30
            G[i, p + 3, r + 1] += s31
            G[i, p + 3, r + 2] += s32
            G[i, p + 3, r + 3] += s33
        for r in range(full, m):
            b0 = _U(rows + r) * _U(TILE)
            s00 = s10 = s20 = s30 = 0.0
            for t in range(nt):
                y0 = Z[b0 + t]
                s00 += Z[a0 + t] * y0
                s10 += Z[a0 + _U(TILE) + t] * y0
                s20 += Z[a0 + _U(2 * TILE) + t] * y0
                s30 += Z[a0 + _U(3 * TILE) + t] * y0
            G[i, p, r] += s00
            G[i, p + 1, r] += s10
            G[i, p + 2, r] += s20
            G[i, p + 3, r] += s30
    for p in range(full, m):
        a0 = _U(rows + p) * _U(TILE)
        for r in range(p, m):
            b0 = _U(rows + r) * _U(TILE)
            s00 = 0.0
            for t in range(nt):
                s00 += Z[a0 + t] * Z[b0 + t]
            G[i, p, r] += s00


@njit(cache=True, nogil=True)
def _gram_kernel(FR, Fp, rev, g, C, q, qd, qdd, fc, tau, use_fc, dest, extra_kind, edest, last, joint_off,
                 joint_rows, G, accumulate):
    """G[i] += Z_i Z_i^T over all samples, Z_i = joint i's tile rows (its base columns, then tau
    and ones): one pass, the regressor never leaves the tile. ``accumulate=False`` only fills
    the tiles (bench/regressor times the regressor in this layout alone)."""
    N = q.shape[0]
    n = rev.shape[0]
    rows = joint_off[n - 1] + joint_rows[n - 1]
    X = np.zeros(n * _XF * BLOCK)
    K = np.zeros((n + 1) * _KF * BLOCK)
    W = np.zeros((6 + dest.shape[1]) * BLOCK)
    E = np.zeros((6 * C.shape[0] + 2) * BLOCK)
    Z = np.zeros(rows * TILE)  # rows never written (padding) stay zero
    no_rows = np.zeros(1)
    for t0 in range(0, N, TILE):
        nt = min(TILE, N - t0)
        for b0 in range(0, nt, BLOCK):
            _block_rows(FR, Fp, rev, g, C, q, qd, qdd, fc, tau, use_fc, t0 + b0, min(BLOCK, nt - b0), dest, extra_kind,
                        edest, last, X, K, W, E, Z, _U(b0), no_rows, 0, _U(0), 0)
        if accumulate:
            for i in range(n):
                # joint i's block ends with its ones row; the tile rows after it are padding
                _gram_update(Z, joint_off[i], edest[i, edest.shape[1] - 1] - joint_off[i] + 1, _U(nt), G, i)
    return G


def structural_rows(model: RobotModel, spec: ColumnSpec) -> np.ndarray:
    """(n, P) bool: column k can be non-zero in joint i's row. Inertial columns of link j reach
    joints i <= j; a link's rotor and friction columns only its own joint; a shared motor's
    columns the joints its coupling vector touches."""
    n = model.dof
    per = spec.per_joint
    P = spec.total(n)
    mask = np.zeros((n, P), dtype=bool)
    for i in range(n):
        for j in range(i, n):
            mask[i, per * j: per * j + 10] = True
        mask[i, per * i + 10: per * (i + 1)] = True
    for m, c in enumerate(spec.motor_couplings):
        for i in range(n):
            if c[i] != 0.0:
                mask[i, per * n + 3 * m: per * n + 3 * m + 3] = True
    return mask


@dataclass(frozen=True)
class RowPlan:
    """Where each (joint row, column) of the regressor goes (-1: nowhere), for the block kernel."""

    dest: np.ndarray  # (n * n, per) int64: link j's block in joint i's row at i * n + j
    extra_kind: np.ndarray  # (per - 10,) int64: IA FV FC FO codes
    edest: np.ndarray  # (n, 3 * motors + 2) int64: shared-motor columns, then tau and ones
    last: np.ndarray  # (n,) int64: last link whose columns joint i's row needs (-1: none)
    couplings: np.ndarray  # (motors, n) float64
    joint_off: np.ndarray  # (n,) int64: first tile row of joint i's block (gram layout)
    joint_rows: np.ndarray  # (n,) int64: rows of joint i's block, a multiple of 4 (gram layout)
    columns: tuple  # per joint: the selected columns (positions in the selection) its block holds

    @classmethod
    def build(cls, model: RobotModel, spec: ColumnSpec, selected: np.ndarray | None = None,
              layout: str = "rows") -> "RowPlan":
        """``layout='rows'``: the destination is the column's position in the selection (a
        sample-major output row). ``layout='gram'``: joint i's block of tile rows holds only the
        selected columns its row can touch, then tau and ones, padded to a multiple of 4."""
        n = model.dof
        per = spec.per_joint
        P = spec.total(n)
        selected = np.arange(P) if selected is None else np.asarray(selected, dtype=np.int64)
        position = np.full(P, -1, dtype=np.int64)
        position[selected] = np.arange(selected.size)
        reach = structural_rows(model, spec)
        motors = len(spec.motor_couplings)
        couplings = np.array(spec.motor_couplings, dtype=np.float64).reshape(motors, n)
        target = np.full((n, P), -1, dtype=np.int64)
        edest = np.full((n, 3 * motors + 2), -1, dtype=np.int64)
        joint_off = np.zeros(n, dtype=np.int64)
        joint_rows = np.zeros(n, dtype=np.int64)
        columns = []
        offset = 0
        for i in range(n):
            cols = [k for k in selected if reach[i, k]]
            columns.append(tuple(int(position[k]) for k in cols))
            if layout == "rows":
                for k in cols:
                    target[i, k] = position[k]
            elif layout == "gram":
                for r, k in enumerate(cols):
                    target[i, k] = offset + r
                edest[i, 3 * motors] = offset + len(cols)
                edest[i, 3 * motors + 1] = offset + len(cols) + 1
                joint_off[i] = offset
                joint_rows[i] = -(-(len(cols) + 2) // 4) * 4
                offset += joint_rows[i]
            else:
                raise ValueError(f"layout: expected 'rows' or 'gram', got {layout!r}")
        dest = np.stack([target[:, per * j: per * (j + 1)] for j in range(n)], axis=1).reshape(n * n, per).copy()
        edest[:, : 3 * motors] = target[:, per * n:]
        last = np.array([max([j for j in range(n) if np.any(dest[i * n + j] >= 0)], default=-1) for i in range(n)],
                        dtype=np.int64)
        extra_kind = np.array([EXTRA_CODES[name] for name in spec.joint_names()[10:]], dtype=np.int64)
        return cls(dest, extra_kind, edest, last, couplings, joint_off, joint_rows, tuple(columns))


def _model_arrays(model: RobotModel):
    FR = np.ascontiguousarray(model.fixed[:, :3, :3])
    Fp = np.ascontiguousarray(model.fixed[:, :3, 3])
    rev = np.ascontiguousarray((model.joint_types == 0).astype(np.float64))
    g = np.ascontiguousarray(model.gravity, dtype=np.float64)
    return FR, Fp, rev, g


def _coulomb_input(coulomb, shape):
    """The signal that replaces sgn(qd) in the Coulomb columns (None: sgn(qd) itself)."""
    if coulomb is None:
        return np.zeros((1, 1)), False
    fc = np.ascontiguousarray(coulomb, dtype=np.float64)
    if fc.shape != shape:
        raise ValueError(f"coulomb: expected shape {shape} to match q, got {fc.shape}")
    if not np.all(np.isfinite(fc)):
        raise ValueError("coulomb: contains NaN or infinite values")
    return fc, True


@contextmanager
def signals_deferred():
    """Run a compiled kernel with the Python-level SIGINT handler held back until it returns.

    A Numba kernel calls back into Python while it runs (a parallel one asks for its thread count;
    returning an array unpickles its dtype). A Ctrl-C that arrived during the native work is handled
    in the first such callback, and the KeyboardInterrupt raised there makes the dispatcher fail
    with "SystemError: ... returned a result with an exception set". Here the signal is only
    recorded while the kernel runs and handed to the previous handler once it has returned, so
    Ctrl-C surfaces as the KeyboardInterrupt it is, between kernel calls. Only the main thread
    receives Python signal handlers, so elsewhere (and when nested) this does nothing.
    """
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if not callable(previous) or getattr(previous, "_robodyn_deferring", False):
        yield
        return
    pending: list = []

    def record(signum, frame):
        pending.append((signum, frame))

    record._robodyn_deferring = True
    signal.signal(signal.SIGINT, record)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if pending:
            previous(*pending[0])


def _run_rows(model, plan: RowPlan, q, qd, qdd, fc, use_fc, out, threads, joint_major=False):
    FR, Fp, rev, g = _model_arrays(model)
    N = q.shape[0]
    nthreads = numba.get_num_threads() if threads is None else max(1, int(threads))
    n_chunks = max(1, min(-(-N // BLOCK), nthreads * 4 if nthreads > 1 else 1))
    previous = numba.get_num_threads()
    try:
        if nthreads != previous:
            numba.set_num_threads(min(nthreads, numba.config.NUMBA_NUM_THREADS))
        with signals_deferred():
            _rows_kernel(FR, Fp, rev, g, plan.couplings, q, qd, qdd, fc, use_fc, plan.dest, plan.extra_kind,
                         plan.edest, plan.last, out, n_chunks, out.nbytes >= _STREAM_BYTES, joint_major)
    finally:
        if nthreads != previous:
            numba.set_num_threads(previous)


_PLANS: dict = {}


def _plan(model: RobotModel, spec: ColumnSpec, selected=None, layout: str = "rows") -> RowPlan:
    """Plans are small and pure functions of the model's structure and the columns: memoised."""
    key = (model.dof, model.joint_types.tobytes(), spec, None if selected is None else np.asarray(selected).tobytes(),
           layout)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = RowPlan.build(model, spec, selected, layout)
    return plan


def regressor(model: RobotModel, q, qd, qdd, spec: ColumnSpec = ColumnSpec(), *,
              out: np.ndarray | None = None, threads: int | None = None, coulomb=None) -> np.ndarray:
    """Stacked regressor (N*n, P) for N samples (rows sample-major).

    ``out`` may be a preallocated (N*n, P) float64 C-contiguous array to fill (an output of
    _STREAM_BYTES or more is written around the caches, see _copy_out). ``threads``
    limits the Numba threads used (default: all configured threads). ``coulomb`` (N, n), when
    given, replaces sgn(qd) in the Coulomb columns (a filtered sign, see pipeline.base_rows).
    """
    q, qd, qdd = check_states(model, q, qd, qdd)
    N, n = q.shape
    P = spec.total(n)
    if out is None:
        out = np.empty((N * n, P))
    elif out.shape != (N * n, P) or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out: expected a C-contiguous float64 array of shape {(N * n, P)}, got "
                         f"{out.shape} {out.dtype}")
    fc, use_fc = _coulomb_input(coulomb, q.shape)
    _run_rows(model, _plan(model, spec), q, qd, qdd, fc, use_fc, out, threads)
    return out


def joint_major_regressor_columns(model: RobotModel, q, qd, qdd, spec: ColumnSpec, columns, *, coulomb=None,
                                  threads: int | None = None) -> np.ndarray:
    """The selected columns of the regressor as contiguous per-joint blocks (n, N, k), evaluated
    directly on those columns and written by the kernel in that layout (neither the full
    regressor nor its sample-major rows are ever built)."""
    q, qd, qdd = check_states(model, q, qd, qdd)
    N, n = q.shape
    columns = np.ascontiguousarray(columns, dtype=np.int64)
    out = np.empty((n, N, columns.size))
    fc, use_fc = _coulomb_input(coulomb, q.shape)
    _run_rows(model, _plan(model, spec, columns), q, qd, qdd, fc, use_fc, out, threads, joint_major=True)
    return out


def gram_blocks(model: RobotModel, q, qd, qdd, tau, spec: ColumnSpec, columns, *, coulomb=None,
                G: np.ndarray | None = None, accumulate: bool = True) -> tuple[RowPlan, np.ndarray]:
    """Per-joint augmented Gram matrices of the selected columns, in one pass over the samples on
    the calling thread (the kernel releases the GIL, so callers may run several at once).

    Returns the plan and G (n, m, m), accumulated into ``G`` when given: for joint i with
    r = len(plan.columns[i]) structurally non-zero selected columns, the upper triangle of
    G[i, :r+2, :r+2] is that of [W_i tau_i 1]^T [W_i tau_i 1] (W_i^T W_i, W_i^T tau_i, the column
    sums; tau_i^T tau_i, sum tau_i; the sample count). ``accumulate=False`` evaluates the
    regressor into the tiles without the products (for timing the two apart; G stays as given).
    """
    q, qd, qdd = check_states(model, q, qd, qdd)
    n = model.dof
    tau = np.ascontiguousarray(tau, dtype=np.float64)
    if tau.shape != q.shape:
        raise ValueError(f"tau: expected shape {q.shape} to match q, got {tau.shape}")
    if not np.all(np.isfinite(tau)):
        raise ValueError("tau: contains NaN or infinite values")
    fc, use_fc = _coulomb_input(coulomb, q.shape)
    plan = _plan(model, spec, columns, "gram")
    m = int(plan.joint_rows.max())
    if G is None:
        G = np.zeros((n, m, m))
    elif G.shape != (n, m, m):
        raise ValueError(f"G: expected shape {(n, m, m)}, got {G.shape}")
    FR, Fp, rev, g = _model_arrays(model)
    with signals_deferred():
        _gram_kernel(FR, Fp, rev, g, plan.couplings, q, qd, qdd, fc, tau, use_fc, plan.dest, plan.extra_kind,
                     plan.edest, plan.last, plan.joint_off, plan.joint_rows, G, bool(accumulate))
    return plan, G


@njit(cache=True, parallel=True, nogil=True)
def _gather_kernel(W, dof, runs, out, n_chunks):
    """out[j, s, runs[r, 1] + c] = W[s * dof + j, runs[r, 0] + c] for c < runs[r, 2]: samples split
    into n_chunks ranges run in parallel, each read once in order (W's rows sample by sample) and
    written to the dof joints' blocks. A run of consecutive columns is one contiguous copy; long
    runs go as slice copies, short ones element by element (measured on N=20000 UR5e rows: one
    58-column run copied element by element took twice the time of slice copies; the base columns
    of the full regressor, runs of 1 to 7, about a tenth longer as slices)."""
    N = out.shape[1]
    P = W.shape[1]
    k = out.shape[2]
    Wf = W.reshape(W.size)
    O = out.reshape(out.size)
    for chunk in prange(n_chunks):
        start = (chunk * N) // n_chunks
        stop = ((chunk + 1) * N) // n_chunks
        for s in range(start, stop):
            for j in range(dof):
                src = (s * dof + j) * P
                dst = (j * N + s) * k
                for r in range(runs.shape[0]):
                    a = src + runs[r, 0]
                    b = dst + runs[r, 1]
                    length = runs[r, 2]
                    if length >= 8:
                        O[b:b + length] = Wf[a:a + length]
                    else:
                        for c in range(length):
                            O[b + c] = Wf[a + c]
    return out


def _column_runs(columns: np.ndarray) -> np.ndarray:
    """(r, 3) int64: (first source column, first destination position, length) of each run of
    consecutive source columns in ``columns``."""
    starts = np.flatnonzero(np.r_[True, np.diff(columns) != 1]) if columns.size else np.zeros(0, np.int64)
    lengths = np.diff(np.r_[starts, columns.size])
    return np.ascontiguousarray(np.stack([columns[starts], starts, lengths], axis=1), dtype=np.int64).reshape(-1, 3)


def gather_joint_major(W: np.ndarray, dof: int, columns: np.ndarray) -> np.ndarray:
    """Selected columns of sample-major rows (N*n, P) as contiguous per-joint blocks (n, N, k),
    in one pass (the layout BLAS wants for per-joint normal equations)."""
    W = np.ascontiguousarray(W, dtype=np.float64)
    columns = np.ascontiguousarray(columns, dtype=np.int64).reshape(-1)
    if W.ndim != 2 or W.shape[0] % dof:
        raise ValueError(f"W: expected sample-major rows (N*{dof}, P), got shape {W.shape}")
    if columns.size and (columns.min() < 0 or columns.max() >= W.shape[1]):
        raise ValueError(f"columns: expected indices in [0, {W.shape[1]}), got {columns.min()} .. {columns.max()}")
    N = W.shape[0] // dof
    out = np.empty((dof, N, columns.size))
    threads = numba.get_num_threads()
    n_chunks = max(1, min(N, threads * 4 if threads > 1 else 1))
    with signals_deferred():
        _gather_kernel(W, dof, _column_runs(columns), out, n_chunks)
    return out


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
