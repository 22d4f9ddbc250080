"""Zhong et al. 2023's neural-network identification: a single-layer linear network with an adaptive
learning rate.

The network is Y = f(X W^T) with identity activation (Zhong et al. 2023 eq. 19): X is a row of the base
regressor, W the weight vector, i.e. the base parameters themselves. It is trained by full-batch
gradient descent on the mean squared torque error; the paper adapts the learning rate from the
torque error without printing the rule, so the classic error-driven rule is used: after a step that
lowers the error the rate grows by ``grow``; a step that raises it is undone and the rate is cut by
``shrink``.

The gradient of the mean squared error is 2 (H w - g) with the sufficient statistics H = sum_j A_j / N,
g = sum_j b_j / N, so an epoch costs O(p^2) whatever the recording length. The network minimises the
same quadratic as OLS; it converges to the OLS estimate and cannot do better. It is offered as one
more estimator for comparison, as in Zhong et al. 2023 (chaotic PSO excitation design for a SCARA).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .estimators import NormalEquations


@dataclass
class NetworkFit:
    theta: np.ndarray
    epochs: int
    loss_history: list[float]
    learning_rate: float
    converged: bool

    def to_dict(self) -> dict:
        return {"theta": self.theta.tolist(), "epochs": self.epochs, "loss_every_10": self.loss_history[::10],
                "final_learning_rate": self.learning_rate, "converged": self.converged}


def train_linear_network(ne: NormalEquations, *, epochs: int = 20000, learning_rate: float | None = None,
                         grow: float = 1.05, shrink: float = 0.5, tol: float = 1e-6, init=None) -> NetworkFit:
    """Train the identity-activation network on the accumulated data (see the module doc).

    Converged means the remaining distance to the minimum, |H^-1 gradient / 2|, is at most tol |w|
    (H is known, so this is exact). A small loss decrease is not convergence: on an ill-conditioned
    regressor gradient descent crawls along the flat directions far from the minimum, and a small
    gradient can still leave an error cond(H) times larger."""
    N = float(ne.rows.max())
    A, b, c = ne.total()
    H, g, c = A / N, b / N, c / N
    w = np.zeros(H.shape[0]) if init is None else np.asarray(init, float).copy()
    Hinv = np.linalg.pinv(H)  # only to measure the distance to the minimum, never to step
    # start with a step that is stable for the largest curvature direction: 1 / lambda_max(H)
    lr = 1.0 / float(np.linalg.eigvalsh(H)[-1]) if learning_rate is None else float(learning_rate)

    def loss(x):
        return float(c - 2 * g @ x + x @ H @ x)

    current = loss(w)
    history = [current]
    converged = False
    epoch = 0
    for epoch in range(1, epochs + 1):
        gradient = 2.0 * (H @ w - g)
        trial = w - lr * gradient
        trial_loss = loss(trial)
        if trial_loss <= current:
            w, current = trial, trial_loss
            lr *= grow
            history.append(current)
            if np.linalg.norm(Hinv @ (H @ w - g)) <= tol * max(np.linalg.norm(w), 1e-300):
                converged = True
                break
        else:
            lr *= shrink
    return NetworkFit(w, epoch, history, lr, converged)
