"""Names and defaults of the identification library that the command line offers and checks its
arguments against: the methods with their one-line descriptions, the friction experiment's
defaults. Importable without the methods themselves (no numpy, scipy or numba), so that building
the command line's parser imports none of them: `robodyn abort` sends its stop without first
loading the identification library."""

from __future__ import annotations

LEAST_SQUARES = ("ols", "wls", "irls", "ridge", "tls")  # robodyn.identification.estimators
METAHEURISTICS = ("wso", "pso", "ga", "icpso")  # robodyn.identification.metaheuristic
OTHER = ("consistent", "nn")
# stepwise: Chen et al. 2021 on flexible-joint recordings (methods.identify_stepwise)
METHODS = LEAST_SQUARES + METAHEURISTICS + OTHER + ("stepwise",)
# stepwise reads its own flexible-joint recordings: it has no place in a rigid-body comparison
COMPARABLE = tuple(m for m in METHODS if m != "stepwise")
DESCRIPTIONS = {
    "ols": "ordinary least squares", "wls": "weighted least squares (Gautier)",
    "irls": "Huber-reweighted least squares", "ridge": "ridge, strength by generalised cross-validation",
    "tls": "total least squares", "wso": "white shark optimizer", "pso": "particle swarm", "ga": "genetic algorithm",
    "icpso": "improved chaotic particle swarm", "consistent": "physically consistent (semidefinite program)",
    "nn": "linear neural network",
    "stepwise": "stepwise identification of flexible joints (link/motor encoders, torque sensor, current)",
}

# `robodyn friction design` and `robodyn demo`: ten speeds, dense around the Franka's Stribeck
# velocities (0.05-0.09 rad/s), over a window of +- 0.1 rad: about 1.5 min of motion per joint
# (robodyn.identification.friction)
EXPERIMENT_SPEEDS = (0.015, 0.03, 0.045, 0.06, 0.08, 0.1, 0.13, 0.18, 0.3, 0.6)
EXPERIMENT_HALF_WIDTH = 0.1  # rad
