"""Estimates no robot can have: the checks a reader of an identified result would make first.

A least-squares fit on a real log can return a negative rotor inertia with a tight error bar (a
real 7-DOF arm's log gave IA3 = -5.85 kg.m^2 at 1.7 % std): the data favour it, physics forbids
it, and a controller or simulator given it misbehaves. Flagged here, per base parameter:

- a base parameter that is one standard parameter of a kind that cannot be negative (a mass,
  a rotor inertia, a diagonal inertia, a viscous or Coulomb friction coefficient), or a regrouped
  ``ZZ`` of a revolute joint (a sum of inertias and of masses times squared distances), negative
  by more than ``SIGNIFICANT_STD`` of its standard deviations;
- a rotor inertia (reflected through the gear: J_motor N^2) above ``ROTOR_PER_LINK_INERTIA`` times
  the largest inertia the nominal model's links present to that joint: no motor outweighs the arm
  it drives by that much (only where the nominal model has link inertias to compare with).

The remedy offered is the physically consistent fit (``--method consistent``), which cannot
return such values, or a richer excitation."""

from __future__ import annotations

import numpy as np

SIGNIFICANT_STD = 2.0
ROTOR_PER_LINK_INERTIA = 10.0
NON_NEGATIVE = ("M", "IA", "XX", "YY", "ZZ", "FV", "FC")
CONFIGURATIONS = 64  # random configurations the nominal link inertia is taken over


def _kind(name: str) -> tuple[str, int | None]:
    """('IA', 3) for 'IA3': the standard parameter's kind and its joint (1-based)."""
    head = name.rstrip("0123456789")
    digits = name[len(head):]
    return head, int(digits) if digits else None


def nominal_link_inertia(model, seed: int = 0) -> np.ndarray | None:
    """Per joint, the largest diagonal of the nominal model's joint-space inertia (links only)
    over random configurations within its limits; None when the model has no link inertias."""
    from robodyn.robot.dynamics import mass_matrix

    if not np.any(np.asarray(model.inertial)[:, 0] > 0):
        return None
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(model.q_min), model.q_min, -np.pi)
    hi = np.where(np.isfinite(model.q_max), model.q_max, np.pi)
    best = np.zeros(model.dof)
    for _ in range(CONFIGURATIONS):
        q = rng.uniform(lo, hi)
        best = np.maximum(best, np.diag(mass_matrix(model, q, rotor_inertia=np.zeros(model.dof))))
    return best


def implausible(names, theta, std, model=None, grouped=None) -> list[dict]:
    """The flags, one per base parameter at fault: ``{"parameter", "value", "std", "why"}``.
    ``grouped[k]``: the k-th base parameter is a combination of standard ones (names then end in
    'R', the regrouping's mark); ``model``: the nominal model, for the rotor bound."""
    theta = np.asarray(theta, float)
    std = np.asarray(std, float)
    flags = []
    link = None
    for k, full in enumerate(names):
        is_grouped = bool(grouped[k]) if grouped is not None else full.endswith("R")
        name = full[:-1] if is_grouped and full.endswith("R") else full
        kind, joint = _kind(name)
        value, sigma = float(theta[k]), float(std[k])
        negative = value < 0 and (not np.isfinite(sigma) or -value > SIGNIFICANT_STD * sigma)
        revolute = model is not None and joint is not None and 1 <= joint <= model.dof \
            and int(model.joint_types[joint - 1]) == 0
        if negative and ((not is_grouped and kind in NON_NEGATIVE) or (is_grouped and kind == "ZZ" and revolute)):
            flags.append({"parameter": full, "value": value, "std": sigma,
                          "why": f"{full} = {value:.4g} (std {sigma:.2g}) is negative: "
                                 + ("a regrouped ZZ of a revolute joint sums inertias and masses times squared "
                                    "distances" if is_grouped else "no body or drive can have that")})
            continue
        if kind == "IA" and not is_grouped and model is not None and joint is not None and 1 <= joint <= model.dof:
            if link is None:
                link = nominal_link_inertia(model)
                if link is None:
                    link = np.zeros(0)
            if link.size and link[joint - 1] > 0 and value > ROTOR_PER_LINK_INERTIA * link[joint - 1]:
                flags.append({"parameter": full, "value": value, "std": sigma,
                              "why": f"{full} = {value:.4g} kg.m^2 is {value / link[joint - 1]:.0f} times the most "
                                     f"the nominal links present to joint {joint} ({link[joint - 1]:.3g} kg.m^2): "
                                     f"no motor outweighs its arm by more than {ROTOR_PER_LINK_INERTIA:g} times"})
    return flags


def warning_line(flags: list[dict]) -> str | None:
    """One line for the result's warnings, or None."""
    if not flags:
        return None
    listed = "; ".join(f["why"] for f in flags[:4]) + (f"; and {len(flags) - 4} more" if len(flags) > 4 else "")
    return (f"physically impossible estimates ({len(flags)}): {listed}. The data favour them, but a controller or "
            "simulator given them misbehaves: identify with --method consistent (physically consistent by "
            "construction), or excite these parameters better")
