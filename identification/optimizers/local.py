"""Optimizers for small, smooth or low-dimensional problems: scipy's SLSQP with population-evaluated
forward differences, and the exhaustive zooming grid for at most three free coordinates."""

from __future__ import annotations

import math
import warnings

import numpy as np

from .options import GridOptions, SLSQPOptions
from .problem import INFEASIBLE_OFFSET, Bounds, LinearConstraint, OutOfTime, _Evaluator, _notify, _Stop

# --------------------------------------------------------------------------- SLSQP


def _slsqp(ev: _Evaluator, x0, opts: SLSQPOptions, rng, callback, run, history) -> tuple[int, str]:
    import scipy.optimize

    lo, hi = ev.bounds.lower, ev.bounds.upper
    x0 = ev.prepare(ev.bounds.sample(rng, 1) if x0 is None else x0)[0]
    last: dict = {}  # the most recent point and its fitness: SLSQP asks for jac at the point it just evaluated

    def steps(x):
        # forward steps that stay inside the bounds (step backwards at an upper bound)
        h = opts.fd_step * np.maximum(1.0, np.abs(x))
        return np.where(x + h > hi, -h, h)

    def value(x) -> float:
        key = x.tobytes()
        if last.get("key") != key:
            ev.checkpoint()
            f = float(np.asarray(ev.fitness(x[None]), float)[0])
            ev.nfev += 1
            last.update(key=key, f=f if np.isfinite(f) else INFEASIBLE_OFFSET)
        return last["f"]

    def fun(x):
        f = value(x)
        if f < ev.best_f and ev.is_feasible(x):
            ev.best_f, ev.best_raw, ev.best_x = f, f, x.copy()
        return f

    def jac(x):
        f0 = value(x)
        h = steps(x)
        ev.checkpoint()
        F = np.asarray(ev.fitness(x + np.diag(h)), float)  # the dim perturbed points in one call
        ev.nfev += x.size
        F = np.where(np.isfinite(F), F, INFEASIBLE_OFFSET)
        return (F - f0) / h

    cons = []
    for c in ev.constraints:
        if isinstance(c, LinearConstraint):
            A, ub = c.A, c.ub
            cons.append({"type": "ineq", "fun": lambda x, A=A, ub=ub: ub - A @ x, "jac": lambda x, A=A: -A})
        else:
            def g(x, c=c):
                ev.checkpoint()
                return -np.asarray(c.fun(x[None]), float)[0]

            def g_jac(x, c=c):
                ev.checkpoint()
                h = steps(x)
                X = np.vstack([x, x + np.diag(h)])
                G = np.asarray(c.fun(X), float)
                return -(G[1:] - G[0]).T / h

            cons.append({"type": "ineq", "fun": g, "jac": g_jac})
    it = [0]

    def on_iteration(xk):
        it[0] += 1
        history.append(float(fun(xk)))
        _notify(callback, "slsqp", it[0], ev, run)
        if ev.out_of_time():
            raise OutOfTime

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            res = scipy.optimize.minimize(fun, x0, jac=jac, method="SLSQP",
                                          bounds=list(zip(lo, hi)) if opts.box_constraints else None,
                                          constraints=cons, callback=on_iteration,
                                          options={"maxiter": opts.max_iter, "ftol": opts.ftol})
        fun(res.x)  # let the final iterate compete for the incumbent
        return int(res.nit), str(res.message)
    except OutOfTime:
        return it[0], "stopped (time limit)"
    except _Stop:
        return it[0], "stopped (callback)"



# --------------------------------------------------------------------------- exhaustive grid


def free_coordinates(bounds: Bounds) -> np.ndarray:
    """Indices of coordinates whose box has a real width (a pinned one spans <= 1e-7 relative)."""
    scale = np.maximum(1.0, np.maximum(np.abs(bounds.lower), np.abs(bounds.upper)))
    return np.flatnonzero(bounds.span > 1e-7 * scale)


def _grid(ev: _Evaluator, x0, opts: GridOptions, rng, callback, run, history) -> tuple[int, str]:
    free = free_coordinates(ev.bounds)
    d = free.size
    if d > opts.max_free:
        raise ValueError(f"grid: {d} free coordinates; the exhaustive search is for at most {opts.max_free}")
    center = (ev.bounds.lower + ev.bounds.upper) / 2.0
    if d == 0:
        ev.ranked(ev.prepare(center[None]))
        return 1, "no free coordinate: the only point was evaluated"
    k = int(max(2, min(opts.points, math.floor(opts.max_evaluations ** (1.0 / d) + 1e-9))))
    lo, hi = ev.bounds.lower[free], ev.bounds.upper[free]
    batches = [0]

    def evaluate(axes):
        mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, d)
        for start in range(0, mesh.shape[0], opts.batch):
            X = np.broadcast_to(center, (min(opts.batch, mesh.shape[0] - start), center.size)).copy()
            X[:, free] = mesh[start:start + opts.batch]
            ev.ranked(ev.prepare(X))
            batches[0] += 1
            history.append(ev.best_f)
            _notify(callback, "grid", batches[0], ev, run)
            if ev.out_of_time():
                raise OutOfTime

    try:
        evaluate([np.linspace(lo[i], hi[i], k) for i in range(d)])
        cell = (hi - lo) / (k - 1)
        for _ in range(opts.refine_rounds):
            best = ev.best_x[free]
            evaluate([np.linspace(max(lo[i], best[i] - 2 * cell[i]), min(hi[i], best[i] + 2 * cell[i]),
                                  opts.refine_points) for i in range(d)])
            cell = cell * 4.0 / (opts.refine_points - 1)
    except OutOfTime:
        return batches[0], "stopped (time limit)"
    except _Stop:
        return batches[0], "stopped (callback)"
    return batches[0], f"grid of {k} points per free coordinate ({d} free), {opts.refine_rounds} refinements"
