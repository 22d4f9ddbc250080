"""Is the base level? The gravity direction checked from the data.

A model takes gravity as given (``[0, 0, -9.81]`` for a robot on a level floor). A mount tilted by
1.5 degrees was measured to double the held-out error of a real 7-DOF arm's identification, and
nothing in the result pointed to it. This finds the gravity direction that best explains the
identification data and reports it when it matters.

The regressor is linear in gravity (RNEA takes gravity as an acceleration of the base), so for
gravity g it is ``Y(g) = Y0 + sum_k g_k D_k`` with ``Y0`` the regressor without gravity and
``D_k = Y(q, 0, 0; e_k) - Y(q, 0, 0; 0)`` (the difference removes the velocity-free columns, such
as torque offsets, that do not depend on gravity). The Gram blocks of ``[Y0, D_1, D_2, D_3]`` with
each other and with the torque are formed once, on at most ``MAX_SAMPLES`` samples spread over the
data; every candidate direction is then a least-squares fit of size P, and its residual is
compared with that of the model's own gravity. Directions are searched by tilting the model's
gravity about two axes perpendicular to it, on a coarse grid refined twice around its best point.
"""

from __future__ import annotations

import re

import numpy as np
import scipy.linalg

MAX_SAMPLES = 5000
GRAM_CHUNK = 500  # samples whose regressor blocks are formed at once
GRAVITY_COLUMN = re.compile(r"^M[XYZ]?\d+$")  # a link's first moments and mass
COARSE_DEG = np.linspace(-6.0, 6.0, 7)
REFINE_STEPS_DEG = (0.5, 0.1)  # two refinements, each a 7 x 7 grid around the best point so far
RIDGE = 1e-9
REPORTED_TILT_DEG = 0.3  # below: a level base, within what the data can tell
REPORTED_GAIN = 0.05  # the residual sum of squares lower by this share at least


def _rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def _perpendicular_axes(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u = g / np.linalg.norm(g)
    helper = np.array([1.0, 0.0, 0.0]) if abs(u[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    a = np.cross(u, helper)
    a /= np.linalg.norm(a)
    return a, np.cross(u, a)


def _rss(gram: np.ndarray, tau_blocks: np.ndarray, tt: float, c: np.ndarray) -> float:
    """Residual sum of squares of the least-squares fit with the regressor sum_a c_a M_a."""
    return ridge_rss(np.einsum("a,b,abij->ij", c, c, gram), np.einsum("a,ai->i", c, tau_blocks), tt)


def ridge_rss(A: np.ndarray, b: np.ndarray, tt: float) -> float:
    """Residual sum of squares of the least-squares fit with normal equations A x = b and the
    torque's sum of squares ``tt``, on the standard (rank-deficient) columns."""
    d = np.sqrt(np.maximum(np.diag(A), 1e-300))
    As, bs = A / np.outer(d, d), b / d
    # the standard columns are rank deficient (base parameters regroup them): a ridge far below the
    # data's own scale (unit diagonal here) makes the system definite and leaves its fit as it is
    factor = scipy.linalg.cho_factor(As + RIDGE * np.eye(len(bs)))
    x = scipy.linalg.cho_solve(factor, bs)
    return float(max(tt - x @ bs, 0.0))


def check_gravity(model, q, qd, qdd, tau, spec) -> dict:
    """The gravity direction that fits the data best, its tilt from the model's, and the residual
    it saves; ``warning`` is a line for the result when the tilt matters (else None)."""
    from .regressor import parameter_names, regressor

    q, qd, qdd, tau = (np.asarray(x, float) for x in (q, qd, qdd, tau))
    N = q.shape[0]
    pick = np.unique(np.linspace(0, N - 1, min(N, MAX_SAMPLES)).astype(int))
    q, qd, qdd, tau = q[pick], qd[pick], qdd[pick], tau[pick]
    zero = np.zeros_like(q)
    g0 = np.asarray(model.gravity, float)
    if np.linalg.norm(g0) == 0:
        return {"tilt_deg": None, "warning": None, "reason": "the model has no gravity"}
    no_gravity = model.with_gravity([0.0, 0.0, 0.0])
    unit_gravity = [model.with_gravity(e) for e in np.eye(3)]
    P = spec.total(model.dof)
    # at rest only a link's mass and first moments feel gravity: every other column of D_k is zero
    # (inertia tensors multiply angular rates, rotors and friction need motion, offsets cancel)
    moved = np.array([k for k, name in enumerate(parameter_names(model, spec)) if GRAVITY_COLUMN.match(name)])
    at = np.concatenate([np.arange(P)] + [(k + 1) * P + moved for k in range(3)])
    gram, products, tt = np.zeros((at.size, at.size)), np.zeros(at.size), 0.0
    # chunk by chunk: the whole [Y0 D1 D2 D3] of 5000 samples of a 7-joint arm is 90 MB, whose first
    # touch of fresh memory cost up to 0.6 s of system time on a virtual machine; a chunk's is reused
    for s in range(0, q.shape[0], GRAM_CHUNK):
        e = min(q.shape[0], s + GRAM_CHUNK)
        blocks = [regressor(no_gravity, q[s:e], qd[s:e], qdd[s:e], spec)]
        still = regressor(no_gravity, q[s:e], zero[s:e], zero[s:e], spec)[:, moved]
        blocks += [regressor(g, q[s:e], zero[s:e], zero[s:e], spec)[:, moved] - still for g in unit_gravity]
        X = np.concatenate(blocks, axis=1)  # one BLAS product gives every block's Gram
        y = tau[s:e].reshape(-1)
        gram += X.T @ X
        products += X.T @ y
        tt += float(y @ y)
    full, tau_blocks = np.zeros((4 * P, 4 * P)), np.zeros(4 * P)
    full[np.ix_(at, at)], tau_blocks[at] = gram, products
    gram, tau_blocks = full.reshape(4, P, 4, P).transpose(0, 2, 1, 3), tau_blocks.reshape(4, P)
    ax, ay = _perpendicular_axes(g0)

    def gravity_at(a_deg: float, b_deg: float) -> np.ndarray:
        return _rotation(ay, np.radians(b_deg)) @ _rotation(ax, np.radians(a_deg)) @ g0

    def rss_at(a_deg: float, b_deg: float) -> float:
        return _rss(gram, tau_blocks, tt, np.concatenate(([1.0], gravity_at(a_deg, b_deg))))

    level = rss_at(0.0, 0.0)
    best = min(((rss_at(a, b), a, b) for a in COARSE_DEG for b in COARSE_DEG))
    for step in REFINE_STEPS_DEG:
        fine = np.arange(-3, 4) * step
        best = min([best] + [(rss_at(best[1] + a, best[2] + b), best[1] + a, best[2] + b) for a in fine for b in fine])
    rss, a_deg, b_deg = best
    g = gravity_at(a_deg, b_deg)
    tilt = float(np.degrees(np.arccos(np.clip(g @ g0 / (g0 @ g0), -1.0, 1.0))))
    gain = 1.0 - rss / level if level > 0 else 0.0
    warning = None
    if tilt >= REPORTED_TILT_DEG and gain >= REPORTED_GAIN:
        warning = (f"gravity: the data fit {gain:.0%} better (residual sum of squares, {len(pick)} samples) with gravity "
                   f"tilted {tilt:.1f} degrees from the model's, g = [{g[0]:.3f}, {g[1]:.3f}, {g[2]:.3f}] m/s^2 in "
                   "the base frame: if the base is not level, give the model that gravity (a model file's "
                   "`gravity`) and identify again")
    return {"tilt_deg": tilt, "gravity": g.tolist(), "gain": gain, "samples": int(len(pick)),
            "rss_level": level, "rss_best": rss, "warning": warning}
