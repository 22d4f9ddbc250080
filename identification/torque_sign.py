"""Does each joint's torque have the model's sign? Checked from the data.

A log's torque (or current) can count a joint the other way round from the model: a driver's
convention, a motor mounted reversed, a joint axis that points the other way in the URDF. Least
squares then fits the best it can and the result predicts badly with no word of why. The rigid-body
parameters are shared between joints (a link's mass loads every joint below it), so a joint whose
sign is wrong cannot be absorbed by flipping its own parameters: the fit with that joint's torque
negated is far better than the fit as logged.

One pass: the Gram matrix of the standard regressor and, per joint, its product with that joint's
torque, on at most ``MAX_SAMPLES`` samples spread over the data. Negating joint j's torque changes
only joint j's share of the right-hand side, so every single-joint flip is one more solve of size P.
"""

from __future__ import annotations

import numpy as np

from .gravity_check import ridge_rss

MAX_SAMPLES = 5000
# Report a joint when negating its torque leaves at most this share of the residual sum of squares
# as logged. On the ten real logs of bench/realdata/torque_signs.py, as logged, the best single flip
# leaves 0.96 to 1.03 of it (none reported); a wrong sign there leaves 0.01 to 1.0: a slow or
# narrow excitation cannot tell the signs apart, and then nothing is said.
REPORTED_SHARE = 0.8


def check_torque_signs(model, q, qd, qdd, tau, spec) -> dict:
    """Per joint, the residual sum of squares with that joint's torque negated, as a share of the
    fit as logged (``flipped_share``, below 1: the flip fits better); ``suspect`` the joint whose
    flip fits best when its share is at most REPORTED_SHARE (else empty), ``warning`` a line naming
    it (None when there is none)."""
    from .regressor import regressor

    n = model.dof
    pick = np.unique(np.linspace(0, len(q) - 1, min(len(q), MAX_SAMPLES)).astype(int))
    Y = regressor(model, q[pick], qd[pick], qdd[pick], spec)  # (N*n, P), sample-major
    t = np.asarray(tau, float)[pick]
    Yj = Y.reshape(len(pick), n, -1)
    A = Y.T @ Y
    per_joint = np.einsum("sjp,sj->jp", Yj, t)  # joint j's share of Y' tau
    b = per_joint.sum(axis=0)
    tt = float(np.sum(t * t))
    logged = ridge_rss(A, b, tt)
    if logged <= 0.0:
        shares = np.ones(n)
    else:
        shares = np.array([ridge_rss(A, b - 2.0 * per_joint[j], tt) / logged for j in range(n)])
    # one joint, the best flip: a wrong sign on one joint also makes its neighbours' flips fit
    # somewhat better (they share the links between them), so several shares drop together
    best = int(np.argmin(shares))
    suspect = [best] if shares[best] <= REPORTED_SHARE else []
    warning = None
    if suspect:
        warning = (f"torque sign: the data fit better with the logged torque of {model.joint_names[best]} negated "
                   f"(residual {shares[best]:.0%} of the fit as logged): check that joint's sign convention in "
                   "the log against the model's axis (a driver's convention, a reversed motor, or a URDF axis "
                   "pointing the other way)")
    return {"flipped_share": shares.tolist(), "suspect": suspect, "warning": warning}
