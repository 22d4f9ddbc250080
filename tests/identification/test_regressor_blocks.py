"""The block kernel of the regressor: its own sin/cos, partial blocks, the filtered Coulomb
signal and the joint-major base columns (equality with the RNEA and pinocchio is in
test_dynamics.py)."""

import math

import numpy as np
import pytest

from robodyn.identification.base_params import base_parameters
from robodyn.identification.regressor import (BLOCK, ColumnSpec, _sincos_array, gather_joint_major,
                                              joint_major_regressor_columns, regressor, sample_states,
                                              standard_parameter_vector)
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.loader import load_model

ALL = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))


def ulps(got, ref):
    return np.abs(got - ref) / np.spacing(np.maximum(np.abs(ref), 2.0**-1022))


def test_vectorised_sincos_is_within_one_ulp_of_libm_on_joint_ranges_and_two_up_to_1e5():
    rng = np.random.default_rng(0)
    for bound, limit in ((4.0, 1.0), (1e5, 2.0)):
        x = np.concatenate([rng.uniform(-bound, bound, 200_000), np.arange(-4, 5) * (np.pi / 4), [0.0, 1e-300]])
        s = np.empty_like(x)
        c = np.empty_like(x)
        _sincos_array(x, s, c)
        assert ulps(s, np.array([math.sin(v) for v in x])).max() <= limit
        assert ulps(c, np.array([math.cos(v) for v in x])).max() <= limit


def test_angles_beyond_the_vector_range_fall_back_to_libm():
    model = load_model("ur5")  # continuous joints may wind up
    q, qd, qdd = sample_states(model, 40, seed=9)
    q[5, 0] = 3.0e5
    tau = inverse_dynamics(model, q, qd, qdd)
    got = (regressor(model, q, qd, qdd) @ standard_parameter_vector(model, ColumnSpec())).reshape(q.shape)
    assert np.allclose(got, tau, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("count", [1, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 5])
@pytest.mark.parametrize("name", ["panda", "scara"])
def test_partial_blocks_equal_samples_evaluated_one_by_one(name, count):
    model = load_model(name)
    q, qd, qdd = sample_states(model, count, seed=count)
    batch = regressor(model, q, qd, qdd, ALL).reshape(count, model.dof, -1)
    for s in range(count):
        alone = regressor(model, q[s:s + 1], qd[s:s + 1], qdd[s:s + 1], ALL)
        assert np.array_equal(batch[s], alone)
    tau = inverse_dynamics(model, q, qd, qdd)
    plain = (regressor(model, q, qd, qdd) @ standard_parameter_vector(model, ColumnSpec())).reshape(q.shape)
    assert np.allclose(plain, tau, rtol=1e-10, atol=1e-9)


def test_an_out_buffer_full_of_garbage_gets_its_zeros():
    model = load_model("panda")
    q, qd, qdd = sample_states(model, 70, seed=3)
    clean = regressor(model, q, qd, qdd, ALL)
    dirty = np.full_like(clean, 7.0)
    regressor(model, q, qd, qdd, ALL, out=dirty, threads=1)
    assert np.array_equal(clean, dirty)


def test_filtered_coulomb_signal_replaces_only_the_coulomb_columns():
    model = load_model("ur5")
    q, qd, qdd = sample_states(model, 90, seed=4)
    filtered = np.tanh(5.0 * qd) * 0.9
    plain = regressor(model, q, qd, qdd, ALL).reshape(90, 6, -1)
    swapped = regressor(model, q, qd, qdd, ALL, coulomb=filtered).reshape(90, 6, -1)
    fc = [ALL.per_joint * j + 12 for j in range(6)]
    others = np.setdiff1d(np.arange(plain.shape[2]), fc)
    assert np.array_equal(plain[:, :, others], swapped[:, :, others])
    for j in range(6):
        assert np.array_equal(swapped[:, j, fc[j]], filtered[:, j])
        assert np.array_equal(plain[:, j, fc[j]], np.sign(qd[:, j]))
    with pytest.raises(ValueError, match="coulomb: expected shape"):
        regressor(model, q, qd, qdd, ALL, coulomb=filtered[:, :5])


def test_joint_major_base_columns_equal_the_gathered_full_regressor():
    model = load_model("panda")
    spec = ColumnSpec(True, ("viscous", "coulomb", "offset"), ((0.0,) * 5 + (1.0, 1.0),))
    base = base_parameters(model, spec)
    q, qd, qdd = sample_states(model, 333, seed=6)
    direct = joint_major_regressor_columns(model, q, qd, qdd, spec, base.independent)
    gathered = gather_joint_major(regressor(model, q, qd, qdd, spec), 7, base.independent)
    assert np.array_equal(direct, gathered)


def test_column_names_follow_the_documented_order_with_coupled_motors_last():
    from robodyn.identification.regressor import parameter_names

    model = load_model("scara")
    spec = ColumnSpec(rotor_inertia=True, friction=("coulomb", "viscous"), motor_couplings=((0, 0, 1, 1), (0, 0, 0, 1)))
    names = parameter_names(model, spec)
    per_joint = ["XX", "XY", "XZ", "YY", "YZ", "ZZ", "MX", "MY", "MZ", "M", "IA", "FV", "FC"]
    assert names[:13] == [f"{n}1" for n in per_joint] and names[13:26] == [f"{n}2" for n in per_joint]
    assert names[-6:] == ["IAM1", "FVM1", "FCM1", "IAM2", "FVM2", "FCM2"]
    assert len(names) == 13 * model.dof + 6
