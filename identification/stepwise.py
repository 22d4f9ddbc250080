"""Stepwise identification (Chen et al. 2021): rank and condition analysis of sub-systems, then the order.

Chen et al. 2021 stack each sub-system's observation matrix over samples (eq. 12) and asks two questions:
is it full rank (can the group be identified on its own?) and is it well conditioned (cond2(Y^T Y) =
cond2(Y)^2, so cond(Y) itself is minimised; rule of thumb cond < 10 after scaling)? Groups that
are rank deficient alone must be identified after (or with) another; groups whose union is badly
conditioned, like the motor and stiffness systems (eqs. 13-16), are identified separately.

Here the groups are columns of a base regressor, classified by what drives them:

- friction : FV, FC columns (velocity-only terms);
- gravity  : base columns that do not vanish at rest (the static regressor W(q, 0, 0));
- inertia  : the remaining inertial columns (zero at rest);
- offset   : FO columns (constant; a torque-sensor zero M0 looks exactly like these).

The proposed order is Chen et al. 2021's: friction -> gravity -> inertia -> offsets, each group estimated on
the data its own experiment isolates, with the groups already known subtracted.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from robodyn.robot.model import RobotModel

from .base_params import BaseParameters
from .regressor import gather_joint_major, regressor

ORDER = ("friction", "gravity", "inertia", "offset")
COND_RULE_OF_THUMB = 10.0


def column_groups(model: RobotModel, base: BaseParameters, samples: int = 64, seed: int = 7) -> dict[str, list[int]]:
    """Base-column indices per group (see module doc); gravity columns are found numerically."""
    from .regressor import sample_states

    q, _, _ = sample_states(model, samples, seed=seed)
    zeros = np.zeros_like(q)
    static = regressor(model, q, zeros, zeros, base.spec)[:, base.independent]
    static_norm = np.linalg.norm(static, axis=0)
    groups = {k: [] for k in ORDER}
    for k, name in enumerate(base.names):
        stem = name.rstrip("R").rstrip("0123456789")
        if stem in ("FV", "FC", "FVM", "FCM"):
            groups["friction"].append(k)
        elif stem == "FO":
            groups["offset"].append(k)
        elif static_norm[k] > 1e-9 * max(static_norm.max(), 1e-300):
            groups["gravity"].append(k)
        else:
            groups["inertia"].append(k)
    return {k: v for k, v in groups.items() if v}


def rank_and_cond(Y: np.ndarray, tol: float = 1e-10) -> dict:
    """Rank, cond2(Y) and cond2 after scaling every column to unit norm (unit-free)."""
    Y = np.asarray(Y, float)
    if Y.size == 0:
        return {"columns": 0, "rank": 0, "full_rank": True, "cond": 1.0, "cond_scaled": 1.0}
    s = np.linalg.svd(Y, compute_uv=False)
    rank = int(np.sum(s > tol * s[0])) if s[0] > 0 else 0
    norms = np.linalg.norm(Y, axis=0)
    scaled = Y / np.where(norms > 0, norms, 1.0)
    ss = np.linalg.svd(scaled, compute_uv=False)
    full = rank == Y.shape[1]
    return {"columns": int(Y.shape[1]), "rank": rank, "full_rank": full,
            "cond": float(s[0] / s[-1]) if full else float("inf"),
            "cond_scaled": float(ss[0] / ss[-1]) if full and ss[-1] > 0 else float("inf")}


def subsystem_analysis(Y: np.ndarray, groups: dict[str, Sequence[int]], order: Sequence[str] = ORDER) -> dict:
    """Rank/cond of each group alone, of the groups accumulated in ``order``, and of all together."""
    alone = {g: rank_and_cond(Y[:, cols]) for g, cols in groups.items()}
    cumulative, cols = [], []
    for g in order:
        if g in groups:
            cols = cols + list(groups[g])
            cumulative.append({"groups": [x for x in order if x in groups][:len(cumulative) + 1],
                               **rank_and_cond(Y[:, cols])})
    return {"alone": alone, "cumulative": cumulative}


def propose_order(analysis: dict, order: Sequence[str] = ORDER) -> list[dict]:
    """Chen et al. 2021's order, with each step's justification from the analysis: a group that is rank
    deficient on its own is merged into the next step (it cannot be identified before it)."""
    steps, pending = [], []
    for g in order:
        if g not in analysis["alone"]:
            continue
        info = analysis["alone"][g]
        pending.append(g)
        if info["full_rank"]:
            note = "full rank alone" + ("" if info["cond_scaled"] < COND_RULE_OF_THUMB else
                                         f"; cond {info['cond_scaled']:.3g} > {COND_RULE_OF_THUMB:g}: excite more")
            steps.append({"groups": pending, "reason": note})
            pending = []
    if pending:
        steps.append({"groups": pending, "reason": "rank deficient alone: identified together"})
    return steps


def joint_major_regressor(model: RobotModel, base: BaseParameters, q, qd, qdd) -> np.ndarray:
    """Stacked base regressor, joints as contiguous blocks (n*N, b)."""
    W = regressor(model, q, qd, qdd, base.spec)
    return gather_joint_major(W, model.dof, base.independent).reshape(-1, base.count)


def least_squares(Y: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Solution of min ||Y x - y|| with a rank check (stepwise steps must be identifiable)."""
    info = rank_and_cond(Y)
    if not info["full_rank"]:
        raise ValueError(f"stepwise: sub-system is rank deficient (rank {info['rank']} of {info['columns']})")
    x, *_ = np.linalg.lstsq(Y, y, rcond=None)
    return x
