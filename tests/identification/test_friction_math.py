"""Friction laws, columns, extraction and fits against hand-derived values.

Every expected number here is written out from the formula in the docstring of
identification/friction.py (Stribeck: Ni et al. 2024, eq. 2), not computed by the code under test, so
that a sign, a square or a swapped parameter in the implementation fails a test.
"""
import math

import numpy as np
import pytest

from robodyn.identification.friction import (FRICTION_SWEEP_SPEEDS, FrictionColumns, FrictionFit, choose_friction_scales,
                                             extract_friction, fit_friction, model_from_fits)
from robodyn.robot.friction import (DEFAULT_LINEAR_ZONE, DEFAULT_SIGMOID_VELOCITY, FRANKA_STRIBECK, FrictionModel,
                                    coulomb_viscous, sigmoid, stribeck, stribeck_magnitude)


def test_stribeck_law_equals_hand_evaluated_values_on_both_sides_of_the_linear_zone():
    fc, fs, vs, fv, qd0 = 1.0, 2.0, 0.1, 0.3, 0.01
    # outside the zone: (fc + (fs - fc) exp(-(qd/vs)^2)) sgn(qd) + fv qd
    assert stribeck(0.1, fc, fs, vs, fv, qd0) == pytest.approx(1 + math.exp(-1) + 0.03, rel=1e-12)
    assert stribeck(-0.2, fc, fs, vs, fv, qd0) == pytest.approx(-(1 + math.exp(-4)) - 0.06, rel=1e-12)
    # inside: the line through zero and F(qd0), plus the viscous part
    inside = (1 + math.exp(-0.01)) / 0.01 * 0.004 + 0.3 * 0.004
    assert stribeck(0.004, fc, fs, vs, fv, qd0) == pytest.approx(inside, rel=1e-12)
    assert stribeck(-0.004, fc, fs, vs, fv, qd0) == pytest.approx(-inside, rel=1e-12)
    assert stribeck(0.0, fc, fs, vs, fv, qd0) == 0.0
    # exactly at qd0 the outer formula applies, and it meets the line (continuity)
    at = 1 + math.exp(-0.01) + 0.003
    assert stribeck(qd0, fc, fs, vs, fv, qd0) == pytest.approx(at, rel=1e-12)
    assert stribeck(qd0 * (1 - 1e-9), fc, fs, vs, fv, qd0) == pytest.approx(at, rel=1e-8)
    # vs enters squared: its sign does not matter; vs = 0 leaves pure Coulomb outside the zone
    assert stribeck(0.05, fc, fs, -vs) == pytest.approx(stribeck(0.05, fc, fs, vs), rel=1e-15)
    assert stribeck_magnitude(0.05, fc, fs, 0.0) == pytest.approx(fc)
    assert stribeck_magnitude(0.0, fc, fs, vs) == pytest.approx(fs)
    # the default linear zone is the documented 0.01 rad/s
    assert stribeck(0.005, fc, fs, vs) == pytest.approx((1 + math.exp(-0.01)) / 0.01 * 0.005, rel=1e-12)


def test_coulomb_viscous_and_sigmoid_equal_hand_evaluated_values():
    assert coulomb_viscous(-0.5, 1.5, 0.2, 0.1) == pytest.approx(-1.5 - 0.1 + 0.1)
    assert coulomb_viscous(0.0, 1.5, 0.2, 0.1) == pytest.approx(0.1)  # sgn(0) = 0: only the offset
    assert coulomb_viscous(2.0, 1.5, 0.2) == pytest.approx(1.5 + 0.4)
    assert sigmoid(0.02, 1.5, 0.2, 0.1, 0.02) == pytest.approx(1.5 * math.tanh(1.0) + 0.004 + 0.1, rel=1e-12)
    assert sigmoid(-0.03, 1.5, vt=0.01) == pytest.approx(-1.5 * math.tanh(3.0), rel=1e-12)
    assert sigmoid(DEFAULT_SIGMOID_VELOCITY, 2.0) == pytest.approx(2.0 * math.tanh(1.0), rel=1e-12)


def test_friction_model_dispatches_each_kind_with_its_own_zone_and_velocity_scale():
    qd = np.array([[0.02, -0.004, 0.5]])
    st = FrictionModel("stribeck", {"fc": [1, 2, 3], "fs": [2, 3, 4], "vs": [0.1, 0.2, 0.3], "fv": [0.1, 0, 0]},
                       qd0=0.005)
    expect = [stribeck(0.02, 1, 2, 0.1, 0.1, 0.005), stribeck(-0.004, 2, 3, 0.2, 0.0, 0.005),
              stribeck(0.5, 3, 4, 0.3, 0.0, 0.005)]
    assert np.allclose(st.torque(qd), [expect], rtol=1e-14)
    # -0.004 lies inside a 0.005 zone: the line value, not the outer formula
    assert st.torque(qd)[0, 1] == pytest.approx(-(2 + math.exp(-(0.005 / 0.2) ** 2)) / 0.005 * 0.004)
    sg = FrictionModel("sigmoid", {"fc": [1, 2, 3], "fv": [0, 0.5, 0], "fo": [0, 0, 0.2]}, vt=0.04)
    assert np.allclose(sg.torque(qd), [[math.tanh(0.5), 2 * math.tanh(-0.1) - 0.002, 3 * math.tanh(12.5) + 0.2]])
    cv = FrictionModel("coulomb-viscous", {"fc": [1, 2, 3]})  # fv and fo default to zero
    assert np.allclose(cv.torque(qd), [[1, -2, 3]])
    assert cv.dof == 3 and cv.params["fv"].tolist() == [0, 0, 0] and cv.params["fo"].shape == (3,)


def test_friction_model_round_trips_and_refuses_bad_parameters():
    st = FrictionModel("stribeck", {"fc": [1, 2], "fs": [2, 3], "vs": [0.1, 0.2], "fv": [0, 1]}, qd0=0.02, vt=0.3)
    back = FrictionModel.from_dict(st.to_dict())
    assert back.kind == "stribeck" and back.qd0 == 0.02 and back.vt == 0.3
    assert all(np.array_equal(back.params[k], st.params[k]) for k in st.params)
    old = FrictionModel.from_dict({"kind": "sigmoid", "params": {"fc": [1.0]}})
    assert old.qd0 == DEFAULT_LINEAR_ZONE and old.vt == DEFAULT_SIGMOID_VELOCITY
    with pytest.raises(ValueError, match="friction.fs: non-finite"):
        FrictionModel("stribeck", {"fc": [1, 2], "fs": [np.nan, 1], "vs": [1, 1]})
    with pytest.raises(ValueError, match=r"friction.fv: expected 2 values, got shape \(3,\)"):
        FrictionModel("coulomb-viscous", {"fc": [1, 2], "fv": [1, 2, 3]})
    with pytest.raises(ValueError, match="unknown model 'coulomb'"):
        FrictionModel("coulomb", {"fc": [1]})


def test_the_experiment_speeds_are_the_published_37():
    # Ni et al. 2024 section 4.1, rad/s
    assert FRICTION_SWEEP_SPEEDS == (0.001, 0.005, 0.01, 0.012, 0.014, 0.016, 0.018, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07,
                              0.08, 0.09, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.23, 0.26, 0.29, 0.32, 0.36, 0.4,
                              0.45, 0.5, 0.56, 0.62, 0.7, 0.8, 1.0, 1.2, 1.5, 1.8)


def test_franka_preset_is_the_published_table():
    # Ni et al. 2024 Table 2 (Franka Panda joints 1..7), as printed
    m = FrictionModel.franka_stribeck()
    assert m.kind == "stribeck" and m.dof == 7
    assert m.params["fc"][4] == 0.6047 and m.params["fs"][0] == 0.3834 and m.params["vs"][4] == 6.0463e-4
    assert m.params["fv"].tolist() == [0.0] * 7
    printed = {"fc": [0.2153, 0.1691, 0.2195, 0.1056, 0.6047, 0.2996, 0.1883],
               "fs": [0.3834, 0.2567, 0.3760, 0.0790, 0.3062, 0.3823, 0.3854],
               "vs": [0.0729, 0.0603, 0.0474, 0.0892, 6.0463e-4, 0.0510, 0.0938]}
    assert {k: m.params[k].tolist() for k in printed} == printed
    assert FrictionModel.franka_stribeck(viscous=np.arange(7)).params["fv"].tolist() == list(range(7))


def test_friction_columns_equal_the_linear_in_parameters_form():
    qd = np.array([[0.05, -0.2], [0.0, 0.01]])
    s = np.array([0.1, 0.02])
    st = FrictionColumns("stribeck", s)
    assert np.array_equal(st.coulomb(qd), [[1, -1], [0, 1]])
    assert np.allclose(st.extra(qd), [[math.exp(-0.25), -math.exp(-100)], [0.0, math.exp(-0.25)]], rtol=1e-14)
    # fc sgn + (fs - fc) * extra reproduces the Stribeck law outside the linear zone
    fc, fs = 1.2, 1.9
    law = stribeck(qd[0, 0], fc, fs, s[0], qd0=1e-9)
    assert fc * st.coulomb(qd)[0, 0] + (fs - fc) * st.extra(qd)[0, 0] == pytest.approx(law, rel=1e-14)
    assert st.extra_names(2) == ["FSX1", "FSX2"] and "vs = 0.02 rad/s" in st.extra_expressions(2)[1]
    sg = FrictionColumns("sigmoid", s)
    assert np.allclose(sg.coulomb(qd), np.tanh(qd / s)) and sg.extra(qd) is None
    assert sg.extra_names(2) == [] and sg.extra_expressions(2) == []
    cv = FrictionColumns()
    assert cv.kind == "coulomb-viscous" and np.array_equal(cv.coulomb(qd), np.sign(qd)) and cv.extra(qd) is None
    assert FrictionColumns.from_dict(None).kind == "coulomb-viscous"
    back = FrictionColumns.from_dict(st.to_dict())
    assert back.kind == "stribeck" and np.array_equal(back.scale, s)
    with pytest.raises(ValueError, match="need a velocity scale"):
        FrictionColumns("sigmoid")
    with pytest.raises(ValueError, match="must be > 0"):
        FrictionColumns("stribeck", [0.1, 0.0])
    with pytest.raises(ValueError, match="unknown model"):
        FrictionColumns("tanh", [0.1])


def test_scale_choice_finds_the_scale_that_shaped_the_residual():
    rng = np.random.default_rng(4)
    qd = rng.uniform(-0.6, 0.6, (3000, 2))
    # what a Coulomb-viscous fit left over: a shape of known scale plus some Coulomb-viscous part
    residual = np.column_stack([
        0.7 * np.tanh(qd[:, 0] / 0.05) - 0.3 * np.sign(qd[:, 0]) + 0.1 * qd[:, 0],
        0.4 * np.tanh(qd[:, 1] / 0.2) + 0.05])
    assert choose_friction_scales("sigmoid", qd, residual).tolist() == [0.05, 0.2]
    excess = np.column_stack([0.5 * np.sign(qd[:, 0]) * np.exp(-np.square(qd[:, 0] / 0.02)),
                              0.3 * np.sign(qd[:, 1]) * np.exp(-np.square(qd[:, 1] / 0.1)) + 0.2 * qd[:, 1]])
    assert choose_friction_scales("stribeck", qd, excess + 0.001 * rng.standard_normal(qd.shape)).tolist() == [0.02, 0.1]
    with pytest.raises(ValueError, match="only sigmoid and stribeck"):
        choose_friction_scales("coulomb-viscous", qd, residual)


def _sweep(speed, low, high, gravity, friction, n_fwd=301, n_bwd=257):
    """A forward pass at +speed and a backward pass at -speed over [low, high] at different sample
    positions, with ramps at the wrong speed (and nonsense torque) before each pass."""
    qf = np.linspace(low, high, n_fwd)
    qb = np.linspace(high, low, n_bwd)
    ramp_q = np.linspace(low - 0.05, low, 20)
    q = np.concatenate([ramp_q, qf, ramp_q[::-1] + (high - low) + 0.05, qb])
    qd = np.concatenate([np.full(20, 0.3 * speed), np.full(n_fwd, speed), np.full(20, -0.3 * speed),
                         np.full(n_bwd, -speed)])
    tau = gravity(q) + np.concatenate([np.full(20, 50.0), np.full(n_fwd, friction), np.full(20, -50.0),
                                       np.full(n_bwd, -friction)])
    return q[:, None], qd[:, None], tau[:, None]


def test_extraction_cancels_a_position_dependent_load_and_reports_the_measured_speed():
    q, qd, tau = _sweep(0.2, -0.5, 0.5, lambda q: 4.0 + 6.0 * q, friction=0.37)
    pt = extract_friction(q, qd, tau, 0, 0.2, -0.5, 0.5, bins=10)
    assert pt.torque == pytest.approx(0.37, abs=1e-12)  # (tau(+v) - tau(-v)) / 2 at equal positions
    assert pt.std == pytest.approx(0.0, abs=1e-12) and pt.pairs == 10
    assert pt.joint == 0 and pt.speed == 0.2 and pt.measured_speed == pytest.approx(0.2)
    assert extract_friction(q, qd, tau, 0, 0.2, -0.5, 0.5).pairs == 20  # 20 position bins by default
    # a lagging robot: the real speed is what is reported
    q, qd, tau = _sweep(0.2, -0.5, 0.5, lambda q: 4.0 + 6.0 * q, friction=0.37)
    qd = np.where(qd > 0, 0.19, np.where(qd < -0.1, -0.21, qd))
    assert extract_friction(q, qd, tau, 0, 0.2, -0.5, 0.5).measured_speed == pytest.approx(0.2)
    # the window: outside [low, high] nothing is paired
    q, qd, tau = _sweep(0.1, -1.0, 1.0, lambda q: 2.0 * q, friction=0.5)
    tau = tau + np.where(np.abs(q) > 0.5, 10.0 * np.sign(qd), 0.0)
    assert extract_friction(q, qd, tau, 0, 0.1, -0.5, 0.5).torque == pytest.approx(0.5, abs=1e-12)


def test_extraction_spread_is_over_position_bins():
    # friction that changes with position (+0.1 in the upper half): the mean is the average, the
    # spread the standard deviation of the per-bin means
    q, qd, tau = _sweep(0.2, 0.0, 1.0, lambda q: 0 * q, friction=0.0, n_fwd=2001, n_bwd=2001)
    bump = np.where(q[:, 0] >= 0.5, 0.1, 0.0) * np.sign(qd[:, 0])
    tau = tau + bump[:, None]
    pt = extract_friction(q, qd, tau, 0, 0.2, 0.0, 1.0, bins=2)
    assert pt.pairs == 2 and pt.torque == pytest.approx(0.05, abs=2e-3) and pt.std == pytest.approx(0.05, abs=2e-3)


def test_two_samples_each_way_are_enough_to_pair():
    q = np.array([0.1, 0.3, 0.4, 0.0])[:, None]
    qd = np.array([0.2, 0.2, -0.2, -0.2])[:, None]
    tau = np.where(qd > 0, 1.0, -1.0) + 2.0 * q  # friction 1 N.m on a linear load
    pt = extract_friction(q, qd, tau, 0, 0.2, 0.0, 0.4, bins=2)
    assert pt.torque == pytest.approx(1.0) and pt.pairs == 2
    # but one forward sample inside the backward pass's range is not enough
    q = np.array([0.1, 0.45, 0.4, 0.0])[:, None]
    with pytest.raises(ValueError, match="sweep joint 1 at 0.2 rad/s: forward and backward passes do not overlap"):
        extract_friction(q, qd, tau, 0, 0.2, 0.0, 0.5)


def test_extraction_refuses_sweeps_it_cannot_pair():
    q, qd, tau = _sweep(0.2, -0.5, 0.5, lambda q: q, friction=0.1)
    with pytest.raises(ValueError, match=r"sweep joint 1 at 0.4 rad/s: too few constant-speed samples \(\d+ forward, \d+ backward\)"):
        extract_friction(q, qd, tau, 0, 0.4, -0.5, 0.5)
    # forward samples only above 0.1 rad, backward ones only below -0.1 rad: nothing to pair
    q = np.concatenate([np.linspace(0.1, 0.5, 50), np.linspace(-0.1, -0.5, 50)])[:, None]
    qd = np.concatenate([np.full(50, 0.2), np.full(50, -0.2)])[:, None]
    with pytest.raises(ValueError, match="do not overlap"):
        extract_friction(q, qd, np.zeros_like(q), 0, 0.2, -0.5, 0.5)


def test_linear_fit_recovers_coulomb_viscous_and_reports_rmse_and_r2_by_their_definitions():
    v = np.array([-0.8, -0.4, -0.1, 0.1, 0.3, 0.6, 0.9])
    noise = np.array([0.01, -0.02, 0.015, -0.01, 0.02, -0.005, 0.0])
    f = 0.8 * np.sign(v) + 0.5 * v + 0.05 + noise
    fit = fit_friction(v, f, "coulomb-viscous", joint=2)
    # the normal equations, written out
    A = np.column_stack([np.sign(v), v, np.ones_like(v)])
    coef = np.linalg.solve(A.T @ A, A.T @ f)
    assert [fit.params[k] for k in ("fc", "fv", "fo")] == pytest.approx(coef.tolist(), rel=1e-10)
    resid = f - A @ coef
    assert fit.rmse == pytest.approx(math.sqrt(np.mean(resid ** 2)), rel=1e-10)
    assert fit.r2 == pytest.approx(1 - np.sum(resid ** 2) / np.sum((f - f.mean()) ** 2), rel=1e-10)
    assert fit.joint == 2 and fit.points == 7 and fit.converged and fit.extra == {}
    flat = fit_friction(np.array([0.1, 0.2, 0.3]), np.array([1.0, 1.0, 1.0]), "coulomb-viscous")
    assert flat.r2 == 1.0  # constant data: no variance to explain


def test_stribeck_and_sigmoid_fits_recover_the_published_curve_from_both_directions():
    p = {k: FRANKA_STRIBECK[k][0] for k in ("fc", "fs", "vs")}  # Franka joint 1, Ni et al. 2024 Table 2
    v = np.array([0.005, 0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 0.8])
    v = np.concatenate([v, -v[::2]])
    f = stribeck(v, p["fc"], p["fs"], p["vs"], 0.0, 0.004)
    fit = fit_friction(v, f, "stribeck", joint=0, qd0=0.004)
    assert fit.params["fc"] == pytest.approx(p["fc"], rel=1e-4)
    assert fit.params["fs"] == pytest.approx(p["fs"], rel=1e-4)
    assert fit.params["vs"] == pytest.approx(p["vs"], rel=1e-4)
    assert fit.rmse < 1e-6 and fit.r2 > 1 - 1e-9 and fit.extra == {"qd0": 0.004}
    visc = fit_friction(v, f + 0.2 * v, "stribeck", qd0=0.004, viscous=True)
    assert visc.params["fv"] == pytest.approx(0.2, rel=1e-3) and visc.params["fc"] == pytest.approx(p["fc"], rel=1e-3)
    g = 0.6 * np.tanh(v / 0.03) + 0.25 * v
    sg = fit_friction(v, g, "sigmoid", vt=0.03)
    assert sg.params == pytest.approx({"fc": 0.6, "fv": 0.25}, rel=1e-5) and sg.extra == {"vt": 0.03}


def test_fit_refuses_bad_points():
    for v, f in ((np.ones(4), np.ones(5)), (np.ones(5), np.ones(4)), (np.ones((4, 1)), np.ones((4, 1))), (1.0, 1.0)):
        with pytest.raises(ValueError, match="two equal 1-D arrays"):
            fit_friction(v, f)
    with pytest.raises(ValueError, match="unknown model"):
        fit_friction(np.ones(4), np.ones(4), "lugre")


def test_per_joint_fits_assemble_into_one_model():
    fits = [FrictionFit(2, "stribeck", {"fc": 1.0, "fs": 2.0, "vs": 0.1}, 0, 1, 1, True, 5, extra={"qd0": 0.02}),
            FrictionFit(0, "stribeck", {"fc": 3.0, "fs": 4.0, "vs": 0.3}, 0, 1, 1, True, 5, extra={"qd0": 0.02})]
    m = model_from_fits(fits, 4)
    assert m.kind == "stribeck" and m.qd0 == 0.02 and m.dof == 4
    assert m.params["fc"].tolist() == [3, 0, 1, 0] and m.params["vs"].tolist() == [0.3, 0, 0.1, 0]
    sg = model_from_fits([FrictionFit(0, "sigmoid", {"fc": 1.0, "fv": 0.1}, 0, 1, 1, True, 5, extra={"vt": 0.5})], 1)
    assert sg.vt == 0.5
    with pytest.raises(ValueError, match="mixed friction models"):
        model_from_fits([fits[0], FrictionFit(1, "sigmoid", {"fc": 1.0}, 0, 1, 1, True, 5)], 3)


def test_each_sweep_of_a_run_is_cut_out_at_its_own_start_and_end():
    # two sweeps at the same speed whose friction differs (the joint warmed up in between): each
    # friction point must come from its own sweep's samples only, [start, end] inclusive
    from robodyn.identification.friction import experiment_trajectory, points_from_run, sweep_plan, sweep_spans
    from robodyn.robot.loader import load_model

    model = load_model("panda")
    home = np.array([0.0, 0.0, 0.0, -1.5, 0.0, 1.5, 0.0])
    traj, spans = experiment_trajectory(model, home, 1, -0.2, 0.2, (0.1, 0.1))
    (_, s0, e0), (_, s1, e1) = spans
    assert [(j, v, lo, hi) for j, v, lo, hi, *_ in sweep_spans(traj)] == [(1, 0.1, -0.2, 0.2)] * 2
    assert np.allclose([se[4:] for se in sweep_spans(traj)], [(s0, e0), (s1, e1)])
    t, q, qd, _, _ = traj.sample(500.0)
    warm = np.where(t > e0, 0.5, 0.3)[:, None]  # Coulomb friction 0.3 N.m, then 0.5 N.m
    tau = 7.0 * q + warm * np.sign(qd)
    first, second = points_from_run(traj, t, q, qd, tau)
    # a lone sweep starts at 0; the documented 0.3 s settle is the default
    lone = sweep_plan(model, home, 1, -0.2, 0.2, (0.1,))[0]
    assert sweep_spans(lone) == [(1, 0.1, -0.2, 0.2, 0.0, pytest.approx(lone.duration))]
    assert lone.duration == pytest.approx(sweep_plan(model, home, 1, -0.2, 0.2, (0.1,), settle=0.3)[0].duration)
    assert spans == experiment_trajectory(model, home, 1, -0.2, 0.2, (0.1, 0.1), settle=0.3)[1]
    assert first.torque == pytest.approx(0.3, abs=1e-9) and second.torque == pytest.approx(0.5, abs=1e-9)


def test_a_sweep_past_a_joint_limit_is_refused_and_the_window_moves_inside_the_limits():
    """Ni et al. 2024's fastest speed (1.8 rad/s) around the Panda's ready pose runs joint 2 past its
    limit in the run-up; the plan refuses it in one line, and the chosen window keeps every sweep's
    whole travel (run-up and run-out, evaluated densely) inside the limits, centred at the ready pose
    where the range allows."""
    from robodyn.simulation.plant import default_initial_q
    from robodyn.identification.friction import sweep_extent, sweep_plan, window_within_limits
    from robodyn.robot.loader import load_model

    model = load_model("panda")
    q_hold = default_initial_q(model)
    with pytest.raises(ValueError, match=r"runs joint 2 over .* outside its limits"):
        sweep_plan(model, q_hold, 1, q_hold[1] - 0.02, q_hold[1] + 0.02)
    moved = 0
    for joint in range(model.dof):
        low, high = window_within_limits(model, q_hold, joint, 0.02)
        assert high - low == pytest.approx(0.04)
        if abs((low + high) / 2 - q_hold[joint]) > 1e-12:
            moved += 1
        for sweep in sweep_plan(model, q_hold, joint, low, high)[-3:]:  # the fastest reach farthest
            q = sweep.evaluate(np.linspace(0.0, sweep.duration, 20001))[0][:, joint]
            first, last = sweep_extent(sweep)
            assert q.min() == pytest.approx(first, abs=1e-6) and q.max() == pytest.approx(last, abs=1e-6)
            assert first >= model.q_min[joint] + 0.01 - 1e-9 and last <= model.q_max[joint] - 0.01 + 1e-9
    assert moved >= 1  # joint 2 at least; joint 1 (range +- 2.9 rad) stays centred at the ready pose
    assert np.mean(window_within_limits(model, q_hold, 0, 0.02)) == pytest.approx(q_hold[0])
