"""Current-to-torque drive gains of a UR from a load/unload pair of runs (total least squares).

The method of dynamic_calibration's ``estimate_drive_gains`` (Gaz et al.'s UR work): run the same
trajectory twice, once without and once with a known payload. Everything the arm itself needs
(rigid-body torque, friction) is the same in both runs, so per joint j

    k_j (i_load,j - i_unload,j) = tau_payload,j(q, qd, qdd)

where tau_payload is the inverse dynamics of the payload alone, known exactly from its mass and
centre of mass. In practice the two runs do not pass through exactly the same states (the loaded
arm tracks with a different error), so the arm's own torque differs too; that small difference is
predicted with the nominal model's RNEA at the two runs' measured states and added to the
right-hand side (first-order correction; the model only has to be right about a few mrad of
difference, not about the whole torque). Both sides are measured or derived from measurements (currents are noisy, and the
payload torque uses measured q and differentiated qd, qdd), hence total least squares rather than
ordinary least squares: the gain is the direction of the smallest singular vector of [di, tau].
"""

from __future__ import annotations

import numpy as np

from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.model import RobotModel, standard_parameters

# Nominal current-to-torque gains (N.m/A). UR publishes none; these are round figures of the right
# order (size-3 and size-1 joints) used until a load/unload pair has identified the real ones.
NOMINAL_DRIVE_GAINS = {"ur5e": (13.0, 13.0, 13.0, 9.0, 9.0, 9.0), "ur5": (13.0, 13.0, 13.0, 9.0, 9.0, 9.0),
                       "ur10e": (15.0, 15.0, 15.0, 9.5, 9.5, 9.5)}


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


def estimate_drive_gains(model: RobotModel, unload: dict, load: dict, mass: float, com,
                         min_torque: float = 2.0, correct_states: bool = True) -> dict:
    """``unload`` / ``load``: dicts of equal-length arrays q, qd, qdd, current (N, n) sampled along
    the same trajectory. Joints whose payload torque has an RMS below ``min_torque`` N.m are not
    identifiable from this pair (the difference of the two runs' own tracking errors dominates)
    and come back as NaN, with the reason."""
    n = model.dof
    for run in (unload, load):
        for key in ("q", "qd", "qdd", "current"):
            if np.asarray(run[key]).shape != np.asarray(load["q"]).shape:
                raise ValueError(f"drive gains: {key} arrays of the two runs must have the same shape")
    tau = payload_torques(model, load["q"], load["qd"], load["qdd"], mass, com)
    rhs = tau
    if correct_states:
        rotor = model.rotor_inertia
        rhs = tau + (inverse_dynamics(model, load["q"], load["qd"], load["qdd"], rotor_inertia=rotor)
                     - inverse_dynamics(model, unload["q"], unload["qd"], unload["qdd"], rotor_inertia=rotor))
    di = np.asarray(load["current"]) - np.asarray(unload["current"])
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
    return {"gains": gains, "relative_residual": residuals, "notes": notes, "samples": int(tau.shape[0]),
            "payload": {"mass": mass, "com": list(np.asarray(com, float))}}
