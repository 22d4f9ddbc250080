"""The reference robodyn's defaults must never lose to: plain ordinary least squares after a 10 Hz
zero-phase low-pass, the twenty-line script a practitioner writes first.

Deliberately independent of robodyn's processing chain (its own filter, its own differentiation,
np.linalg.lstsq on the full standard regressor): it shares only the regressor, which the
foundation tests prove equal to the RNEA, pinocchio and MuJoCo. Errors are taken against the
measured torque at the measured samples.
"""

from __future__ import annotations

import numpy as np
import scipy.signal

from robodyn.robot.model import RobotModel

from .regressor import ColumnSpec, regressor
from .signals import SampledData


def _states(d: SampledData, cutoff_hz: float):
    rate = 1.0 / float(np.median(np.diff(d.t)))
    sos = scipy.signal.butter(4, cutoff_hz / (rate / 2.0), output="sos")
    low = lambda x: scipy.signal.sosfiltfilt(sos, x, axis=0)  # noqa: E731
    q = low(d.q)
    qd = low(d.qd) if d.qd is not None else np.gradient(q, d.t, axis=0)
    return q, qd, np.gradient(qd, d.t, axis=0), low(d.tau)


def plain_ols(model: RobotModel, fit: SampledData, held_out: SampledData, cutoff_hz: float = 10.0,
              motor_couplings: tuple = ()) -> dict:
    """Fit on ``fit``, predict ``held_out``; per-joint RMSE against the measured torque."""
    spec = ColumnSpec(True, ("viscous", "coulomb", "offset"), tuple(tuple(c) for c in motor_couplings))
    q, qd, qdd, tau = _states(fit, cutoff_hz)
    theta = np.linalg.lstsq(regressor(model, q, qd, qdd, spec), tau.ravel(), rcond=None)[0]
    q, qd, qdd, _ = _states(held_out, cutoff_hz)
    predicted = (regressor(model, q, qd, qdd, spec) @ theta).reshape(held_out.tau.shape)
    rmse = np.sqrt(np.mean(np.square(predicted - held_out.tau), axis=0))
    return {"method": f"plain OLS after a {cutoff_hz:g} Hz zero-phase low-pass of q, qd and tau",
            "rmse": rmse.tolist(), "rmse_sum": float(rmse.sum()),
            "relative_error_total": float(np.sqrt(np.sum(np.square(predicted - held_out.tau))
                                                  / np.sum(np.square(held_out.tau))))}
