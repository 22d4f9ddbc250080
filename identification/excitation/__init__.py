"""Excitation trajectory design: families, constraints, criteria and the designer.

See docs/excitation.md. The optimizers live in robodyn.identification.optimizers, shared with
metaheuristic parameter identification.
"""

from .constraints import CartesianLimits, InfeasibleDesign, JointLimits
from .designer import DesignRequest, DesignResult, design_excitation
from .families import FAMILY_NAMES, Family, make_family
from .objectives import OBJECTIVES, excitation_metrics

__all__ = ["CartesianLimits", "DesignRequest", "DesignResult", "FAMILY_NAMES", "Family", "InfeasibleDesign",
           "JointLimits", "OBJECTIVES", "design_excitation", "excitation_metrics", "make_family"]
