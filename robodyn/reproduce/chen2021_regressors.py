"""Chen et al. 2021, Table 3's rigid-body cells: which observation matrix the paper's eqs. 7-12 allow
comes closest to its printed minimum condition numbers (part ``table3`` of `robodyn reproduce stepwise`).

The paper prints neither its link parameter set nor its units, so its rigid-body (frictionless) cells
can be the minimum cond of several matrices. The choices its text leaves open, each tried here:

- parameterisation of the link (eqs. 4-5 write the centre of mass as a general vector r_1ci):
  ``distal`` (DH frame of link i at its distal joint, robodyn's), ``proximal`` (the same ten
  parameters about the link's own joint axis), each also with the centre of mass on the link axis
  (``-noMY``: the textbook planar arm, first moments along the link only);
- extra columns: ``none`` (the link model of eq. 8 without friction), ``rotor`` (rotor inertia, eq. 2's
  B referred to the link), ``offset`` (the torque sensor's zero M0, eqs. 7 and 11: [Y, E]),
  ``friction`` (eq. 8 as written, [p_g, p_l, p_lf]: viscous and Coulomb columns);
- gravity: ``gravity`` (robodyn's vertical plane: eqs. 4-6 model gravity torques on both joints) or
  ``no-gravity`` (no gravity columns: eq. 7's g'_v = g_v - M_gZ, the link gravity less the moment the
  torque sensor reads, taken as zero; the same columns as a horizontal plane);
- rows: the torques of ``all`` joints, or of the ``moving`` joints only;
- grid: ``250`` rows t = k/50 s, k = 0..249 (N_A = T f_s), or ``251`` (eq. 12 as printed lists
  k = 0..N_A, so t = 0 and t = T both);
- cond: ``raw`` (what the paper says it minimises, cond_2(Y_N)) or ``scaled`` (unit-norm columns).

Each sub-experiment (moving joints; a locked joint holds the 30 deg start) keeps, by robodyn's rule
(excitation.subsystems), the candidate's base parameters of the first moving link and the links it
carries, then only those that stay independent with the other joints locked (the paper keeps only
full-rank systems). Order 8 with position..jerk fixed at both ends leaves one shape, theta_j = 30 deg + A_j s(t),
s = 256 (t/T)^4 (1 - t/T)^4, so each cell's minimum is a search over A within the Table 1 limits
(an exhaustive grid). The cond of every candidate comes from one Gram matrix per amplitude.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

PARAMETERISATIONS = ("distal", "proximal", "distal-noMY", "proximal-noMY")
EXTRAS = ("none", "rotor", "offset", "friction")
GRAVITY = ("gravity", "no-gravity")
ROWS = ("all", "moving")
GRIDS = (250, 251)
CONDS = ("raw", "scaled")
# robodyn's own choice in chen_request: the regressor `robodyn excitation design` uses for Table 3
ROBODYN_CHOICE = ("distal", "none", "gravity", "all", 250, "raw")

PER_JOINT = 14  # 10 inertial, IA, FV, FC, FO (robodyn's ColumnSpec order)
_ZZ, _MX, _MY, _M = 5, 6, 7, 9
_IA, _FV, _FC, _FO = 10, 11, 12, 13


def shape(t, period: float):
    """s, s', s'' of the only admissible order-8 shape: 256 u^4 (1 - u)^4, u = t / T (peak 1 at T/2)."""
    u = np.asarray(t, float) / period
    s = 256 * u ** 4 * (1 - u) ** 4
    ds = 256 * (4 * u ** 3 * (1 - u) ** 4 - 4 * u ** 4 * (1 - u) ** 3) / period
    dds = 256 * (12 * u ** 2 * (1 - u) ** 4 - 32 * u ** 3 * (1 - u) ** 3 + 12 * u ** 4 * (1 - u) ** 2) / period ** 2
    return s, ds, dds


def amplitude_range(model, joint: int, start: float, period: float) -> tuple[float, float]:
    """(lowest, highest) amplitude A (rad) the joint's position, speed and acceleration limits allow."""
    tt = np.linspace(0.0, period, 20001)
    _, ds, dds = shape(tt, period)
    kin = min(model.qd_max[joint] / np.abs(ds).max(), model.qdd_max[joint] / np.abs(dds).max())
    return max(-kin, model.q_min[joint] - start), min(kin, model.q_max[joint] - start)


def _spec():
    from robodyn.identification.regressor import ColumnSpec

    return ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))


def _transform(model, parameterisation: str) -> tuple[np.ndarray, list[int]]:
    """(T, kept): the candidate's link parameters pi_c map to robodyn's distal ones by pi = T pi_c
    (so W_c = W T), and the columns ``kept`` (the others are fixed at zero)."""
    n = model.dof
    T = np.eye(PER_JOINT * n)
    if parameterisation.startswith("proximal"):
        if model.dh is None or model.dh.convention != "dh" or np.any(model.dh.alpha) or np.any(model.dh.d):
            raise ValueError("model: the proximal parameterisation is written for a planar standard-DH arm")
        for j in range(n):
            o, a = PER_JOINT * j, float(model.dh.a[j])
            # the link's own joint sits at x = -a in its distal DH frame: MX_D = MX_P - a M,
            # ZZ_D = ZZ_P - 2 a MX_P + a^2 M (parallel axes), MY unchanged
            T[o + _MX, o + _M] = -a
            T[o + _ZZ, o + _MX] = -2 * a
            T[o + _ZZ, o + _M] = a * a
    kept = list(range(PER_JOINT * n))
    if parameterisation.endswith("noMY"):
        kept = [c for c in kept if c % PER_JOINT != _MY]
    return T, kept


def _extra_columns(extra: str) -> tuple[int, ...]:
    return {"none": (), "rotor": (_IA,), "offset": (_FO,), "friction": (_FV, _FC)}[extra]


def candidate_columns(model, parameterisation: str, extra: str) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(C, names, joints): the candidate's column map over robodyn's extended columns (W_c = W_ext C),
    the columns' names and their 0-based joints: the link columns and the ``extra`` columns."""
    from robodyn.identification.regressor import parameter_names

    T, kept = _transform(model, parameterisation)
    names = parameter_names(model, _spec())
    cols = [c for c in kept if c % PER_JOINT < 10 or c % PER_JOINT in _extra_columns(extra)]
    return T[:, cols], [names[c] for c in cols], np.array([c // PER_JOINT for c in cols])


def trajectory(model, amplitudes: dict, start: float, t: np.ndarray, period: float):
    """q, qd, qdd (N, n): the moving joints (amplitudes {joint: A}) on the shape, the others at the start."""
    s, ds, dds = shape(t, period)
    q = np.full((t.size, model.dof), start)
    qd = np.zeros_like(q)
    qdd = np.zeros_like(q)
    for j, a in amplitudes.items():
        q[:, j] += a * s
        qd[:, j] = a * ds
        qdd[:, j] = a * dds
    return q, qd, qdd


def _random_states(model, moving, start: float, rng, count: int = 96):
    q = np.full((count, model.dof), start)
    qd = np.zeros_like(q)
    qdd = np.zeros_like(q)
    for j in moving:
        q[:, j] = rng.uniform(model.q_min[j], model.q_max[j], count)
        qd[:, j] = rng.uniform(-1, 1, count) * model.qd_max[j]
        qdd[:, j] = rng.uniform(-1, 1, count) * model.qdd_max[j]
    return q, qd, qdd


def cell_base(model, C: np.ndarray, names, joints, moving, rows: str, start: float, seed: int = 0) -> np.ndarray:
    """Indices (into C's columns) of a sub-experiment's base parameters, by robodyn's rule
    (subsystems.SubExperiment): the candidate's base parameters of the whole arm (every joint moving)
    that belong to the first moving link or a link it carries; then, on random states of the moving
    joints (the locked ones at the start), only the columns that stay independent (full rank)."""
    from robodyn.identification.base_params import base_parameters_from_regressor
    from robodyn.identification.regressor import regressor

    rng = np.random.default_rng(seed)
    spec = _spec()
    q, qd, qdd = _random_states(model, range(model.dof), start, rng)
    whole = base_parameters_from_regressor(regressor(model, q, qd, qdd, spec) @ C, list(names)).independent
    keep = np.array([i for i in whole if joints[i] >= min(moving)], int)
    q, qd, qdd = _random_states(model, moving, start, rng)
    W = regressor(model, q, qd, qdd, spec) @ C[:, keep]
    if rows == "moving":
        W = W.reshape(q.shape[0], model.dof, -1)[:, list(moving)].reshape(-1, W.shape[1])
    return keep[base_parameters_from_regressor(W, [names[i] for i in keep]).independent]


def _cond_from_gram(G: np.ndarray, scaled: bool) -> np.ndarray:
    """cond_2 of W from its Gram matrices G (..., k, k) = W^T W (sqrt of the eigenvalue ratio)."""
    if scaled:
        d = np.sqrt(np.clip(np.einsum("...ii->...i", G), 1e-300, None))
        G = G / d[..., :, None] / d[..., None, :]
    lam = np.linalg.eigvalsh(G)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.sqrt(lam[..., -1] / lam[..., 0])
    return np.where(lam[..., 0] > lam[..., -1] * 1e-24, c, np.inf)


def cell_grams(model, moving, amps: np.ndarray, start: float, rate: float, period: float):
    """Gram blocks of robodyn's extended regressor for every amplitude row of ``amps`` (P, len(moving)):
    {(gravity, rows_joint_set, grid): (P, K, K)}; the rows of each joint kept apart so that the
    'moving' candidate sums only its own, and the t = 0 row apart so that the 251 grid adds it."""
    from robodyn.identification.regressor import regressor

    t = np.arange(int(round(rate * period))) / rate
    spec = _spec()
    K = spec.total(model.dof)
    out = {}
    for gravity in GRAVITY:
        m = model if gravity == "gravity" else model.with_gravity([0.0, 0.0, -9.81])
        per_joint = np.zeros((len(amps), model.dof, K, K))
        first_row = np.zeros((len(amps), model.dof, K, K))
        for p, a in enumerate(amps):
            q, qd, qdd = trajectory(m, dict(zip(moving, a)), start, t, period)
            W = regressor(m, q, qd, qdd, spec).reshape(t.size, model.dof, K)
            per_joint[p] = np.einsum("nji,njk->jik", W, W)
            first_row[p] = np.einsum("ji,jk->jik", W[0], W[0])
        out[gravity] = (per_joint, first_row)
    return out


def candidates():
    return list(itertools.product(PARAMETERISATIONS, EXTRAS, GRAVITY, ROWS, GRIDS, CONDS))


def evaluate_cell(model, moving, amps, grams, start: float, choices=None) -> dict:
    """{candidate: (min cond, best amplitudes in deg, base parameter names)} for one sub-experiment."""
    out = {}
    cache = {}
    for cand in choices or candidates():
        par, extra, gravity, rows, grid, cond = cand
        key = (par, extra, gravity, rows)
        if key not in cache:
            C, names, joints = candidate_columns(model, par, extra)
            m = model if gravity == "gravity" else model.with_gravity([0.0, 0.0, -9.81])
            idx = cell_base(m, C, names, joints, moving, rows, start)
            Cb = C[:, idx]
            per_joint, first_row = grams[gravity]
            sel = list(moving) if rows == "moving" else list(range(model.dof))
            G250 = np.einsum("ik,pjil,lm->pkm", Cb, per_joint[:, sel], Cb)
            G0 = np.einsum("ik,pjil,lm->pkm", Cb, first_row[:, sel], Cb)
            cache[key] = (G250, G0, [names[i] for i in idx])
        G250, G0, base_names = cache[key]
        G = G250 if grid == 250 else G250 + G0
        c = _cond_from_gram(G, cond == "scaled")
        best = int(np.argmin(c))
        out[cand] = (float(c[best]), [math.degrees(x) for x in amps[best]], base_names)
    return out


def amplitude_grid(model, moving, start: float, period: float, points: int) -> np.ndarray:
    axes = [np.linspace(*amplitude_range(model, j, start, period), points) for j in moving]
    axes = [ax[np.abs(ax) > 1e-9] for ax in axes]  # A = 0 leaves the joint still: not a sub-experiment
    return np.array(list(itertools.product(*axes)))


def distance(values: dict, paper: dict) -> float:
    """Mean |ln(cond / paper)| over the cells: 0 when every cell matches; scale-free."""
    return float(np.mean([abs(math.log(values[c] / float(paper[c]))) for c in paper]))


def rigid_candidates(paper: dict, cells_moving: dict, period: float, rate: float, start_deg: float,
                     points_single: int = 241, points_both: int = 61) -> dict:
    """Every candidate's rigid-body cells (``cells_moving``: {cell: moving joints}; minimum over the
    amplitudes) and its distance to the ``paper``'s printed values {cell: string}, sorted closest
    first; robodyn's own choice marked."""
    from robodyn.robot.loader import load_model

    model = load_model("twolink")
    start = math.radians(start_deg)
    cells = {}
    for experiment, moving in cells_moving.items():
        pts = points_both if len(moving) > 1 else points_single
        amps = amplitude_grid(model, moving, start, period, pts)
        grams = cell_grams(model, moving, amps, start, rate, period)
        cells[experiment] = evaluate_cell(model, moving, amps, grams, start)
    rows = []
    for cand in candidates():
        values = {e: cells[e][cand][0] for e in cells_moving}
        finite = all(math.isfinite(v) for v in values.values())
        rows.append({"candidate": dict(zip(("parameters", "extra", "gravity", "rows", "grid", "cond"), cand)),
                     "label": describe(cand), "cells": values,
                     "amplitudes_deg": {e: cells[e][cand][1] for e in cells_moving},
                     "base_parameters": {e: cells[e][cand][2] for e in cells_moving},
                     "distance": distance(values, paper) if finite else float("inf"),
                     "robodyn_choice": cand == ROBODYN_CHOICE})
    rows.sort(key=lambda r: r["distance"])
    return {"paper": dict(paper), "candidates": rows, "count": len(rows),
            "grid_points": {"single": points_single, "both": points_both},
            "distance": "mean over the three cells of |ln(cond / paper)|"}


def describe(cand) -> str:
    par, extra, gravity, rows, grid, cond = cand
    return f"{par}, {extra}, {gravity}, {rows} rows, {grid} samples, {cond} cond"
