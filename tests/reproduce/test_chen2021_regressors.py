"""Properties of the candidate observation matrices of Chen et al. 2021's rigid-body cells
(robodyn/reproduce/chen2021_regressors.py): the admissible shape, the t = 0 / t = T rows, the
column-scaling invariance of the scaled cond, and agreement of robodyn's own candidate with the
excitation designer's criterion. No paper number is asserted."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robodyn.reproduce import chen2021_regressors as cr


@pytest.fixture(scope="module")
def model():
    from robodyn.robot.loader import load_model

    return load_model("twolink")


def test_the_shape_rests_at_both_ends_and_its_derivatives_are_its_derivatives():
    T = 5.0
    t = np.linspace(0.0, T, 5001)
    s, ds, dds = cr.shape(t, T)
    assert s[0] == 0.0 and abs(s[-1]) < 1e-12 and abs(s[2500] - 1.0) < 1e-12
    for y in (ds, dds):
        assert abs(y[0]) < 1e-12 and abs(y[-1]) < 1e-12
    h = t[1] - t[0]
    # central differences of s and s' reproduce s' and s'' (a wrong factor or sign fails here)
    assert np.allclose(np.gradient(s, h)[2:-2], ds[2:-2], atol=1e-5)
    assert np.allclose(np.gradient(ds, h)[2:-2], dds[2:-2], atol=1e-4)


def test_amplitude_range_respects_every_limit(model):
    start = math.radians(30.0)
    T = 5.0
    t = np.linspace(0.0, T, 2001)
    _, ds, dds = cr.shape(t, T)
    for j in range(model.dof):
        lo, hi = cr.amplitude_range(model, j, start, T)
        for a in (lo, hi):
            assert abs(a) * np.abs(ds).max() <= model.qd_max[j] * (1 + 1e-9)
            assert abs(a) * np.abs(dds).max() <= model.qdd_max[j] * (1 + 1e-9)
            assert model.q_min[j] - 1e-12 <= start + a <= model.q_max[j] + 1e-12  # s peaks at 1
        # the start is joint 1's lower limit: it can only move up
        if j == 0:
            assert lo == pytest.approx(0.0, abs=1e-12) and hi > 0


def test_t0_row_is_the_t_equal_T_row_and_has_no_velocity_terms(model):
    """eq. 12 as printed lists both t = 0 and t = T: on a periodic trajectory they are one state, at
    rest, so the friction columns of that row are zero and the 251-row grid repeats the gravity row."""
    from robodyn.identification.regressor import regressor

    start = math.radians(30.0)
    amps = np.array([[0.3, -0.4]])
    grams = cr.cell_grams(model, (0, 1), amps, start, 50.0, 5.0)
    _, first = grams["gravity"]
    per = cr.PER_JOINT
    for j in range(model.dof):
        for col in (cr._FV, cr._FC):
            assert np.all(first[0, :, j * per + col, :] == 0.0)
    q0, qd0, qdd0 = cr.trajectory(model, {0: 0.3, 1: -0.4}, start, np.array([0.0, 5.0]), 5.0)
    W = regressor(model, q0, qd0, qdd0, cr._spec()).reshape(2, model.dof, -1)
    assert np.allclose(W[0], W[1], atol=1e-12)
    assert np.any(np.abs(W[0]) > 0.1)  # gravity: the repeated row is not empty


def test_scaled_cond_ignores_the_units_of_the_parameters_raw_cond_does_not():
    rng = np.random.default_rng(3)
    W = rng.normal(size=(200, 5))
    G = W.T @ W
    D = np.diag([1.0, 1000.0, 1e-3, 7.0, 1.0])  # e.g. a mass in grams, an inertia in t.m^2
    G2 = D @ G @ D
    raw, scaled = cr._cond_from_gram(np.stack([G, G2]), False), cr._cond_from_gram(np.stack([G, G2]), True)
    assert scaled[0] == pytest.approx(scaled[1], rel=1e-9)
    assert raw[1] > 10 * raw[0]
    assert raw[0] == pytest.approx(np.linalg.cond(W), rel=1e-8)


def test_proximal_parameters_are_the_same_dynamics(model):
    """Each link's parameters about its own joint axis, built from its mass, centre of mass and
    inertia about the centre of mass (parallel axes), map through the transform onto robodyn's
    distal ones and so give the same torques (a wrong sign or factor in the transform fails)."""
    from robodyn.identification.regressor import regressor, standard_parameter_vector

    pi = standard_parameter_vector(model, cr._spec())
    prox = pi.copy()
    for j in range(model.dof):
        o, a = cr.PER_JOINT * j, float(model.dh.a[j])
        m = pi[o + cr._M]
        cx, cy = pi[o + cr._MX] / m, pi[o + cr._MY] / m
        izz_com = pi[o + cr._ZZ] - m * (cx ** 2 + cy ** 2)
        prox[o + cr._MX] = m * (cx + a)  # the joint axis sits at x = -a in the distal frame
        prox[o + cr._ZZ] = izz_com + m * ((cx + a) ** 2 + cy ** 2)
    T, _ = cr._transform(model, "proximal")
    assert np.allclose(T @ prox, pi, atol=1e-12)
    rng = np.random.default_rng(0)
    q = rng.uniform(model.q_min, model.q_max, (20, 2))
    qd, qdd = rng.normal(size=(20, 2)), rng.normal(size=(20, 2))
    W = regressor(model, q, qd, qdd, cr._spec())
    assert np.allclose(W @ T @ prox, W @ pi, atol=1e-9)
    assert not np.allclose(W @ prox, W @ pi, atol=1e-3)  # the two parameter sets do differ


@pytest.mark.parametrize("experiment,moving", [("link 1 alone", (0,)), ("link 2 alone", (1,))])
def test_robodyns_own_candidate_is_the_designers_criterion(model, experiment, moving):
    """The candidate `distal, none, gravity, all rows, 250, raw` at one amplitude equals the raw
    cond the excitation designer reports for the same sub-experiment and trajectory."""
    from robodyn.identification.base_params import base_parameters
    from robodyn.identification.excitation.objectives import excitation_metrics
    from robodyn.identification.excitation.subsystems import SubExperiment
    from robodyn.identification.regressor import ColumnSpec

    start = math.radians(30.0)
    a = 0.4 if moving == (0,) else -0.5
    amps = np.array([[a]])
    grams = cr.cell_grams(model, moving, amps, start, 50.0, 5.0)
    got = cr.evaluate_cell(model, moving, amps, grams, start, [cr.ROBODYN_CHOICE])[cr.ROBODYN_CHOICE][0]
    t = np.arange(250) / 50.0
    q, qd, qdd = cr.trajectory(model, {moving[0]: a}, start, t, 5.0)
    spec = ColumnSpec()
    base = base_parameters(model, spec)
    sel = SubExperiment(moving, "rigid").selection(base.names, model.dof)
    want = excitation_metrics(model, spec, q, qd, qdd, base, sel)["cond_raw"]
    assert got == pytest.approx(want, rel=1e-6)
