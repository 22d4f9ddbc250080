"""The friction laws' names, importable without the laws (no numpy or numba): the command line
offers them as choices (robodyn.robot.friction implements them)."""

MODELS = ("coulomb-viscous", "stribeck", "sigmoid")
