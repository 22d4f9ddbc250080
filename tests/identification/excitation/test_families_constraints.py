"""Families are linear in their parameters, meet their boundary conditions, and the joint-limit
constraint/repair keep every grid sample inside the limits."""

import numpy as np
import pytest

from robodyn.identification.excitation import InfeasibleDesign, JointLimits, make_family
from robodyn.identification.excitation.constraints import (joint_limit_constraint, repair_population, shape_bounds,
                                                           states_on_grid)
from robodyn.robot.loader import load_model


@pytest.mark.parametrize("name,kw", [("fourier", {"wf": 0.7, "harmonics": 4}), ("fourier-poly", {"wf": 0.5, "harmonics": 3}),
                                     ("poly", {"period": 4.0, "order": 10})])
def test_basis_reproduces_the_shared_trajectory_and_rests_at_both_ends(name, kw):
    fam = make_family(name, 3, **kw)
    rng = np.random.default_rng(0)
    z = rng.normal(size=fam.dim) * 0.3
    traj = fam.build(*fam.split(z))
    t = np.linspace(0, fam.period, 37)
    states = states_on_grid(z[None], fam, fam.basis(t))
    for ours, theirs in zip(states, traj.evaluate(t)):
        assert np.allclose(ours[0], theirs, atol=1e-9)
    _, qd, qdd, _ = traj.evaluate(np.array([0.0, traj.duration]))
    assert np.allclose(qd, 0, atol=1e-10) and np.allclose(qdd, 0, atol=1e-9)
    if name != "fourier":  # these two start at their offset (Chen et al. 2021 a_init, Zhong et al. 2023 q_sf)
        assert np.allclose(traj.evaluate(np.array([0.0]))[0][0], fam.split(z)[0])


def test_bad_family_requests_give_clear_errors():
    with pytest.raises(ValueError, match="harmonics"):
        make_family("fourier", 2, wf=0.1, harmonics=0)
    with pytest.raises(ValueError, match="harmonics"):
        make_family("fourier", 2, wf=0.1, harmonics=1)
    with pytest.raises(ValueError, match="wf"):
        make_family("fourier-poly", 2, wf=-1.0)
    with pytest.raises(ValueError, match="order"):
        make_family("poly", 2, period=5.0, order=7)
    with pytest.raises(ValueError, match="family"):
        make_family("chebyshev", 2, wf=0.1)


def test_repair_and_linear_constraint_agree_on_the_grid():
    model = load_model("panda")
    fam = make_family("fourier", model.dof, wf=0.6, harmonics=5)
    limits = JointLimits.from_model(model, margin=0.02)
    basis = fam.basis(np.arange(100) * fam.period / 100)
    lo, hi = shape_bounds(fam, limits, basis)
    Z = np.random.default_rng(1).uniform(lo, hi, size=(40, fam.dim)) * 3  # mostly far outside the limits
    con = joint_limit_constraint(fam, limits, basis)
    assert np.all(con.violation(Z)[:10] > 0)
    R = repair_population(Z, fam, limits, basis)
    assert np.all(con.violation(R) < 1e-9)
    q, qd, qdd, jerk = states_on_grid(R, fam, basis)
    assert np.all(q >= limits.q_min - 1e-12) and np.all(q <= limits.q_max + 1e-12)
    assert np.all(np.abs(qd) <= limits.derivative_max[0] + 1e-12)
    # a feasible point is left alone
    assert np.allclose(repair_population(R, fam, limits, basis), R)


def test_impossible_limits_are_reported_by_name():
    model = load_model("twolink")
    with pytest.raises(InfeasibleDesign) as err:
        JointLimits.from_model(model, overrides={"qd_max": [1.0, 0.0]})
    assert err.value.report[0]["constraint"] == "qd_max" and err.value.report[0]["joint"] == "joint2"
