"""stribeck_determinacy (robodyn/reproduce/ni2024_pipeline.py): when a friction sweep determines Ni et
al. 2024's eq. 2, on synthetic sweeps whose truth is known. No paper number is asserted."""

from __future__ import annotations

import numpy as np

from robodyn.identification.friction import FRICTION_SWEEP_SPEEDS, FrictionPoint, fit_friction
from robodyn.reproduce.ni2024_pipeline import stribeck_determinacy
from robodyn.robot.friction import stribeck


def _points(speeds, torques):
    return [FrictionPoint(0, v, f, 0.0, 10, v) for v, f in zip(speeds, torques)]


def _judge(speeds, torques):
    pts = _points(speeds, torques)
    fit = fit_friction(np.array([p.measured_speed for p in pts]), np.array([p.torque for p in pts]), "stribeck")
    return fit, stribeck_determinacy(pts, fit)


def test_the_papers_sweep_determines_eq2_when_the_friction_is_eq2():
    v = np.array(FRICTION_SWEEP_SPEEDS)
    rng = np.random.default_rng(0)
    f = np.asarray(stribeck(v, 0.4, 0.6, 0.05), float) + rng.normal(0.0, 0.002, v.size)
    fit, d = _judge(v, f)
    assert d["determined"], d["reasons"]
    assert abs(fit.params["vs"] - 0.05) < 0.01 and abs(fit.params["fc"] - 0.4) < 0.01
    assert all(d["relative_std"][k] < 0.5 for k in ("fc", "fs", "vs"))


def test_a_sweep_above_the_stribeck_velocity_leaves_vs_undetermined():
    # every speed far above vs: the dip is invisible, vs and fs are not pinned by the points
    v = np.array([0.4, 0.6, 0.8, 1.0, 1.2, 1.5, 1.8])
    rng = np.random.default_rng(1)
    f = np.asarray(stribeck(v, 0.4, 0.6, 0.01), float) + rng.normal(0.0, 0.002, v.size)
    _, d = _judge(v, f)
    assert not d["determined"] and d["reasons"]


def test_three_points_for_three_parameters_are_never_a_determination():
    v = np.array([0.05, 0.2, 0.8])
    _, d = _judge(v, np.asarray(stribeck(v, 0.4, 0.6, 0.05), float))
    assert not d["determined"]
    assert any("3 points" in r for r in d["reasons"])


def test_a_viscous_rise_is_what_eq2_cannot_absorb_not_the_number_of_speeds():
    """The plant's own law (Stribeck plus viscous 0.2 N.m s/rad), noise-free on the paper's 37 speeds:
    eq. 2 without a viscous term is not determined (the Stribeck term bends upwards instead), while the
    same points with a viscous term give the law back."""
    v = np.array(FRICTION_SWEEP_SPEEDS)
    f = np.asarray(stribeck(v, 0.4, 0.6, 0.05, 0.2), float)
    _, d = _judge(v, f)
    assert not d["determined"]
    with_viscous = fit_friction(v, f, "stribeck", viscous=True)
    assert abs(with_viscous.params["fv"] - 0.2) < 0.01 and abs(with_viscous.params["fc"] - 0.4) < 0.01
