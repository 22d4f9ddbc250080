"""Current-to-torque drive gains from runs with and without a known payload.

Two estimators, both over the same inputs (runs of q, qd, qdd and motor current, one of them
carrying a payload of known mass and centre of mass):

``difference`` -- the method of dynamic_calibration's ``estimate_drive_gains``: run the same
trajectory twice, once without and once with the payload. What the arm itself needs is taken to be
the same in both runs, so per joint j

    k_j (i_load,j - i_unload,j) = tau_payload,j(q, qd, qdd)

solved by total least squares (both sides are measured or derived from measurements). The two runs
never pass through exactly the same states; the arm's own rigid-body torque difference is predicted
with the nominal model at the two runs' measured states, but friction differences are not, and
where the runs cross zero velocity at slightly different times the Coulomb step lands on one side
only. On the simulated UR it is exact when the two runs match and was off by up to 19 % when
they did not.

``global`` (default) -- Gautier and Briot's global identification of drive gains and dynamic
parameters (J. Dyn. Sys., Meas., Control 136(5), 2014): one linear system over every sample of
every run,

    k_j i_r,j(t) - W_r,j(t) theta = tau_payload,r,j(t)

with the arm's base parameters and friction theta unknown alongside the gains. The arm's own
torque is modelled at each run's own states, so the runs need not match sample for sample; the
known payload fixes the scale that k and theta otherwise share. The runs first go through the
identification chain (``processing.process``) with the current in the torque's place: states,
current and sgn(qd) filtered alike, acceleration from the filtered velocity, then decimated.
Solved by weighted least squares
(per-joint weights from the residuals of a first pass); a gain's standard deviation comes from
the covariance of the estimate, and a gain whose relative standard deviation exceeds
``max_relative_std`` is reported as not identifiable from these runs. That covariance treats the
residuals as independent; after filtering and decimation they are not quite, so the stated
deviation is optimistic (on the simulated UR the actual error was within 1-3 of them).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.model import RobotModel, standard_parameters

from .base_params import base_parameters
from .pipeline import base_rows
from .regressor import ColumnSpec
from .signals import SampledData
from .processing import ProcessingConfig, process

GLOBAL_SPEC = ColumnSpec(friction=("viscous", "coulomb", "offset"))
# Without filtering, the noise in the differentiated acceleration biases every gain low (errors in
# the regressor; 10-50 % on the simulated UR). 25 Hz keeps a margin over excitation bands (< 5 Hz)
# and the servo dynamics; the decimation only cuts rows that the filter made redundant.
GLOBAL_PROCESSING = ProcessingConfig(q_cutoff_hz=25.0, qd_cutoff_hz=25.0, tau_cutoff_hz=25.0, decimation=4,
                                     trim_s=0.1)
RUN_KEYS = ("q", "qd", "qdd", "current")


def payload_torques(model: RobotModel, q, qd, qdd, mass: float, com) -> np.ndarray:
    """Joint torques (N, n) of a point-mass payload at ``com`` (last link frame), gravity included."""
    inertial = np.zeros_like(model.inertial)
    inertial[-1] = standard_parameters(mass, np.asarray(com, float), np.zeros((3, 3)))
    return inverse_dynamics(model, q, qd, qdd, inertial=inertial)


def tls_gain(di: np.ndarray, tau: np.ndarray) -> tuple[float, float]:
    """TLS slope of tau = k di through the origin, and the relative residual (0 = perfect line)."""
    A = np.column_stack([di, tau])
    _, s, vt = np.linalg.svd(A, full_matrices=False)
    v = vt[-1]
    if abs(v[1]) < 1e-12:
        return float("nan"), float("inf")
    k = -v[0] / v[1]
    return float(k), float(s[-1] / max(s[0], 1e-12))


def _check_run(model: RobotModel, run: dict, name: str) -> dict:
    out = {}
    for key in RUN_KEYS:
        if key not in run:
            raise ValueError(f"drive gains: {name} has no {key!r} array")
        a = np.ascontiguousarray(run[key], dtype=float)
        if a.ndim != 2 or a.shape[1] != model.dof:
            raise ValueError(f"drive gains: {name}.{key} must have shape (samples, {model.dof}), got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"drive gains: {name}.{key} contains non-finite values")
        out[key] = a
    lengths = {out[k].shape[0] for k in RUN_KEYS}
    if len(lengths) != 1:
        raise ValueError(f"drive gains: {name} arrays differ in length ({sorted(lengths)})")
    return out


def _check_payload(mass: float, com) -> tuple[float, np.ndarray]:
    com = np.asarray(com, float)
    if not (np.isfinite(mass) and mass > 0):
        raise ValueError(f"payload mass: must be > 0 kg, got {mass}")
    if com.shape != (3,) or not np.all(np.isfinite(com)):
        raise ValueError(f"payload com: expected 3 finite coordinates (m, last link frame), got {com.tolist()}")
    return float(mass), com


def difference_drive_gains(model: RobotModel, unload: dict, load: dict, mass: float, com,
                           min_torque: float = 2.0, correct_states: bool = True) -> dict:
    """dynamic_calibration's load/unload difference with TLS (see the module docstring).

    ``unload`` / ``load``: dicts of equal-length arrays q, qd, qdd, current (N, n) sampled along the
    same trajectory. Joints whose payload torque has an RMS below ``min_torque`` N.m are not
    identifiable from this pair and come back as NaN, with the reason."""
    unload, load = _check_run(model, unload, "unload"), _check_run(model, load, "load")
    if unload["q"].shape != load["q"].shape:
        raise ValueError(f"drive gains: the two runs must have the same length for the difference method "
                         f"({unload['q'].shape[0]} vs {load['q'].shape[0]} samples)")
    mass, com = _check_payload(mass, com)
    n = model.dof
    tau = payload_torques(model, load["q"], load["qd"], load["qdd"], mass, com)
    rhs = tau
    if correct_states:
        rotor = model.rotor_inertia
        rhs = tau + (inverse_dynamics(model, load["q"], load["qd"], load["qdd"], rotor_inertia=rotor)
                     - inverse_dynamics(model, unload["q"], unload["qd"], unload["qdd"], rotor_inertia=rotor))
    di = load["current"] - unload["current"]
    gains, residuals, notes = [], [], []
    for j in range(n):
        rms = float(np.sqrt(np.mean(np.square(tau[:, j]))))
        if rms < min_torque:
            gains.append(float("nan"))
            residuals.append(float("nan"))
            notes.append(f"joint {j + 1}: payload torque RMS {rms:.3g} N.m below {min_torque} N.m, not identifiable")
            continue
        k, r = tls_gain(di[:, j], rhs[:, j])
        gains.append(k)
        residuals.append(r)
    return {"method": "difference", "gains": gains, "relative_residual": residuals, "notes": notes,
            "samples": int(tau.shape[0]), "payload": {"mass": mass, "com": com.tolist()}}


def _processed(model: RobotModel, run: dict, name: str, config: ProcessingConfig) -> SampledData:
    """The run through the identification chain with the current as the torque-side signal, so the
    current, sgn(qd) and the states see the same filters (parallel filtering)."""
    if "t" not in run:
        raise ValueError(f"drive gains: {name} has no 't' array (controller timestamps, s)")
    arrays = _check_run(model, {**run, "qdd": run.get("qdd", run["qd"])}, name)
    try:
        raw = SampledData(np.asarray(run["t"], float), arrays["q"], arrays["current"], arrays["qd"])
    except ValueError as exc:
        raise ValueError(f"drive gains: {name}: {exc}") from None
    # the fixed low-pass (GLOBAL_PROCESSING) needs a Nyquist frequency above it; said in the run's
    # terms, not as a cut-off the user never set
    rate = 1.0 / float(np.median(np.diff(raw.t))) if raw.count > 1 else 0.0
    try:
        fastest = max((c for c in (config.cutoff("q"), config.cutoff("qd"), config.cutoff("tau")) if c), default=0.0)
    except ValueError:  # an automatic cut-off is chosen from the run by processing itself
        fastest = 0.0
    if rate <= 2.0 * fastest:
        raise ValueError(f"drive gains: {name} is sampled at {rate:.4g} Hz; the fit low-passes its signals at "
                         f"{fastest:g} Hz and needs a rate above {2.0 * fastest:g} Hz")
    return process(raw, config).data


def global_drive_gains(model: RobotModel, runs: list[dict], spec: ColumnSpec = GLOBAL_SPEC,
                       config: ProcessingConfig = GLOBAL_PROCESSING, max_relative_std: float = 0.02,
                       passes: int = 2) -> dict:
    """Gautier-Briot global identification (see the module docstring).

    ``runs``: dicts of arrays t (N_r,), q, qd, current (N_r, n), each optionally with ``payload`` =
    {"mass": kg, "com": [x, y, z] m in the last link frame}; at least one run must carry one.
    Accelerations come from the filtered measured velocity (``config``); a given qdd is ignored."""
    if not runs:
        raise ValueError("drive gains: no runs given")
    if not max_relative_std > 0:
        raise ValueError(f"max_relative_std: must be > 0, got {max_relative_std}")
    n = model.dof
    base = base_parameters(model, spec)
    A_blocks, b_blocks = [], []
    loaded = 0
    for r, run in enumerate(runs):
        d = _processed(model, run, f"runs[{r}]", config)
        N = d.count
        A = np.zeros((N * n, n + base.count))
        # sample-major rows: row t*n + j is joint j at sample t; its gain column is j
        A[np.arange(N * n), np.tile(np.arange(n), N)] = d.tau.ravel()
        A[:, n:] = -base.base_regressor(base_rows(model, d, spec))
        A_blocks.append(A)
        payload = run.get("payload")
        if payload:
            mass, com = _check_payload(payload.get("mass", float("nan")), payload.get("com", ()))
            b_blocks.append(payload_torques(model, d.q, d.qd, d.qdd, mass, com).ravel())
            loaded += 1
        else:
            b_blocks.append(np.zeros(N * n))
    if not loaded:
        raise ValueError("drive gains: no run carries a payload; without a known load the gains and the arm's "
                         "parameters scale together and cannot be separated")
    A = np.vstack(A_blocks)
    b = np.concatenate(b_blocks)
    joint = np.tile(np.arange(n), A.shape[0] // n)
    weights = np.ones(n)
    for _ in range(max(1, passes)):
        w = weights[joint]
        Aw, bw = A * w[:, None], b * w
        x, *_ = scipy.linalg.lstsq(Aw, bw, lapack_driver="gelsy")
        res = b - A @ x
        sigma = np.array([np.sqrt(np.mean(np.square(res[joint == j]))) for j in range(n)])
        weights = 1.0 / np.maximum(sigma, 1e-12 * max(float(sigma.max()), 1e-300))
    # covariance of the last weighted solve, from its own residual variance
    rw = bw - Aw @ x
    s2 = float(rw @ rw) / max(1, Aw.shape[0] - Aw.shape[1])
    _, sv, vt = np.linalg.svd(Aw, full_matrices=False)
    keep = sv > sv[0] * 1e-12
    cov = (vt[keep].T / np.square(sv[keep])) @ vt[keep] * s2
    std = np.sqrt(np.maximum(np.diag(cov)[:n], 0.0))
    k = x[:n]
    rel_std = np.where(np.abs(k) > 0, std / np.maximum(np.abs(k), 1e-300), np.inf)
    gains, notes = [], []
    for j in range(n):
        if not (k[j] > 0) or rel_std[j] > max_relative_std:
            gains.append(float("nan"))
            notes.append(f"joint {j + 1}: estimate {k[j]:.4g} N.m/A with relative std {rel_std[j]:.2g} "
                         f"(limit {max_relative_std}), not identifiable from these runs")
        else:
            gains.append(float(k[j]))
    return {"method": "global", "gains": gains, "estimate": k.tolist(), "relative_std": rel_std.tolist(),
            "residual_rms_nm": sigma.tolist(), "notes": notes, "samples": int(A.shape[0] // n),
            "processing": config.to_dict(), "base_parameters": dict(zip(base.names, x[n:].tolist())),
            "runs": len(runs), "loaded_runs": loaded}


def estimate_drive_gains(model: RobotModel, unload: dict, load: dict, mass: float, com,
                         method: str = "global", **options) -> dict:
    """Drive gains from a load/unload pair: ``method`` 'global' (default) or 'difference'."""
    allowed = {"difference": ("min_torque", "correct_states"),
               "global": ("spec", "config", "max_relative_std", "passes")}
    if method not in allowed:
        raise ValueError(f"method: expected 'global' or 'difference', got {method!r}")
    unknown = sorted(set(options) - set(allowed[method]))
    if unknown:
        raise ValueError(f"drive gains: option(s) {unknown} do not apply to the {method} method "
                         f"(it takes {list(allowed[method])})")
    if method == "difference":
        return difference_drive_gains(model, unload, load, mass, com, **options)
    return global_drive_gains(model, [dict(unload), {**load, "payload": {"mass": mass, "com": list(com)}}],
                              **options)


def drive_gains_from_recordings(model: RobotModel, unloaded, loaded, payload_mass: float, payload_com,
                                method: str = "global", max_relative_std: float | None = None) -> dict:
    """Drive gains from daemon recordings without (``unloaded``) and with the payload (``loaded``):
    ``difference`` (one recording each, the same trajectory sample for sample) or ``global``.
    The result carries ``driver_config``, the daemon configuration line, when every gain is known."""
    from .data import drive_gain_run

    payload = {"mass": payload_mass, "com": payload_com}
    unloaded = [drive_gain_run(p, model, None) for p in unloaded]
    loaded = [drive_gain_run(p, model, payload) for p in loaded]
    if method == "difference":
        if len(unloaded) != 1 or len(loaded) != 1:
            raise ValueError("--method difference takes exactly one --unloaded and one --loaded recording "
                             "(of the same trajectory)")
        u, lo = unloaded[0], loaded[0]
        if u["trajectory"] != lo["trajectory"]:
            raise ValueError("--method difference: the two recordings ran different trajectories; it needs the "
                             "same trajectory with and without the payload (or use --method global)")
        n = min(u["t"].shape[0], lo["t"].shape[0])
        if abs(u["t"].shape[0] - lo["t"].shape[0]) > 1:
            raise ValueError(f"--method difference: the recordings differ in length ({u['t'].shape[0]} vs "
                             f"{lo['t'].shape[0]} samples); it needs the same trajectory twice, sample for sample")

        def cut(r):
            return {k: r[k][:n] for k in ("q", "qd", "qdd", "current")}

        result = difference_drive_gains(model, cut(u), cut(lo), payload_mass, payload_com)
    else:
        kw = {} if max_relative_std is None else {"max_relative_std": max_relative_std}
        result = global_drive_gains(model, unloaded + loaded, **kw)
        result.pop("base_parameters")
    gains = result["gains"]
    # only a complete set belongs in a daemon configuration
    result["driver_config"] = ("[driver]\ndrive_gains = [" + ", ".join(f"{g:.5g}" for g in gains) + "]"
                               if all(g == g for g in gains) else None)
    return result

