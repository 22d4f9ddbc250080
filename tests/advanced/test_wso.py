"""The White Shark Optimizer in the shared optimizer interface (seed 000 eqs. 12-28)."""

import numpy as np
import pytest

from robodyn.identification import optimizers as opt


def test_coefficients_follow_seed000():
    assert opt.wso_constriction(4.125) == pytest.approx(0.7034, abs=1e-4)  # eq. 18
    assert opt.wso_frequency(0.07, 0.75) == pytest.approx(0.07 + 0.68 / 0.82)  # eq. 23
    a1, a2 = opt.wso_weights(0, 3000, 0.5, 1.5)  # eqs. 16-17 at k = 0
    assert (a1, a2) == pytest.approx((2.5, 1.5))
    a1, a2 = opt.wso_weights(3000, 3000, 0.5, 1.5)
    assert a1 == pytest.approx(1.5, abs=1e-6) and a2 == pytest.approx(0.5, abs=1e-6)
    mv = [opt.wso_movement_force(k, 3000, 6.25, 100.0) for k in (0, 1500, 3000)]  # eq. 24
    assert mv[0] < 1e-6 < mv[1] < mv[2] < 1 / 6.25
    assert opt.wso_school_strength(3000, 3000, 0.005) == pytest.approx(1 - np.exp(-0.005))  # eq. 27


def sphere(X):
    return np.sum((X - 0.3) ** 2, axis=1)


def test_wso_minimises_a_shifted_sphere_reproducibly():
    bounds = opt.Bounds(-np.ones(10) * 5, np.ones(10) * 5)
    options = opt.WSOOptions(population=40, iterations=400)
    a = opt.minimize(sphere, bounds, "wso", seed=3, options=options)
    b = opt.minimize(sphere, bounds, "wso", seed=3, options=options)
    assert a.fun < 1e-3
    assert np.array_equal(a.x, b.x) and a.history == b.history
    assert len(a.history) == 400 and np.all(np.diff(a.history) <= 0)
    assert np.all(a.x >= bounds.lower) and np.all(a.x <= bounds.upper)


def test_wso_reports_progress_and_can_be_stopped():
    seen = []

    def callback(p):
        seen.append(p.iteration)
        return p.iteration >= 5

    res = opt.minimize(sphere, opt.Bounds(-np.ones(3), np.ones(3)), "wso", seed=0,
                       options=opt.WSOOptions(population=10, iterations=100), callback=callback)
    assert seen == [1, 2, 3, 4, 5] and res.message == "stopped by callback"


def test_wso_is_listed_with_the_other_methods():
    assert "wso" in opt.ALL_METHODS and isinstance(opt.default_options("wso"), opt.WSOOptions)
    assert opt.default_options("wso").population == 150 and opt.default_options("wso").iterations == 3000
