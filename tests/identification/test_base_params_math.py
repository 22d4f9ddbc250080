"""Base parameters of a regressor whose column dependencies are known by construction
(Gautier 1991 QR reduction). The expected grouping, beta, names and expressions
are written out by hand from how the columns were built, not computed by the code under test."""
import numpy as np
import pytest

from robodyn.identification.base_params import BaseParameters, base_parameters_from_regressor
from robodyn.identification.regressor import ColumnSpec

NAMES = ["A", "B", "C", "D", "E", "F"]


def _regressor(rows=40, seed=0, scale_b=1.0):
    rng = np.random.default_rng(seed)
    a, b, f = rng.standard_normal((3, rows))
    b = scale_b * b
    # C = A + B, D never acts, E = -A + 0.5 B (B as scaled), F independent
    return np.column_stack([a, b, a + b, np.zeros(rows), -a + 0.5 * b, f])


def test_known_dependencies_are_grouped_into_the_earlier_columns():
    bp = base_parameters_from_regressor(_regressor(), NAMES)
    assert bp.count == 3 and bp.independent.tolist() == [0, 1, 5]
    assert bp.dependent.tolist() == [2, 4] and bp.unidentifiable.tolist() == [3]
    # W_C = W_A + W_B, W_E = -W_A + 0.5 W_B: beta columns are (1, 1, 0) and (-1, 0.5, 0)
    assert bp.beta == pytest.approx(np.array([[1.0, -1.0], [1.0, 0.5], [0.0, 0.0]]), abs=1e-12)
    assert bp.beta[2].tolist() == [0.0, 0.0]  # below sqrt(eps): exactly zero
    assert bp.names == ["AR", "BR", "F"]
    assert bp.expressions() == ["AR = A + C - E", "BR = B + C + 0.5*E", "F = F"]
    assert 0.0 <= bp.residual < 1e-12
    # pi_b = P pi by hand: A + C - E, B + C + 0.5 E, F
    pi = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert bp.base_values(pi) == pytest.approx([1 + 3 - 5, 2 + 3 + 2.5, 6.0])
    P = np.array([[1, 0, 1, 0, -1, 0], [0, 1, 1, 0, 0.5, 0], [0, 0, 0, 0, 0, 1.0]])
    assert bp.projection == pytest.approx(P, abs=1e-12)
    W = _regressor(rows=7, seed=9)
    assert bp.base_regressor(W).tolist() == W[:, [0, 1, 5]].tolist()
    assert bp.base_regressor(W) @ bp.base_values(pi) == pytest.approx(W @ pi)


def test_coefficients_print_with_sign_and_precision():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 30))
    bp = base_parameters_from_regressor(np.column_stack([a, b, -2.5 * a + 1.0 / 3.0 * b]), ["X", "Y", "Z"])
    assert bp.expressions() == ["XR = X - 2.5*Z", "YR = Y + 0.333333*Z"]
    assert bp.expressions(precision=3) == ["XR = X - 2.5*Z", "YR = Y + 0.333*Z"]
    no_dep = base_parameters_from_regressor(np.column_stack([a, b]), ["X", "Y"])
    assert no_dep.names == ["X", "Y"] and no_dep.expressions() == ["X = X", "Y = Y"]
    assert no_dep.beta.shape == (2, 0) and no_dep.residual == 0.0 and no_dep.projection.tolist() == [[1, 0], [0, 1]]


def test_column_scale_does_not_change_the_choice_but_the_tolerance_does():
    big = base_parameters_from_regressor(_regressor(scale_b=1e6), NAMES)
    assert big.independent.tolist() == [0, 1, 5] and big.unidentifiable.tolist() == [3]
    # a column at 1e-10 of the largest counts as zero at the default tolerance 1e-8, not at 1e-12
    W = _regressor()
    W[:, 3] = 1e-10 * W[:, 5]
    assert base_parameters_from_regressor(W, NAMES).unidentifiable.tolist() == [3]
    fine = base_parameters_from_regressor(W, NAMES, tolerance=1e-12)
    # now D counts, and in the natural column order it comes first: F = 1e10 D is grouped into it
    assert fine.unidentifiable.tolist() == [] and fine.independent.tolist() == [0, 1, 3]
    assert fine.dependent.tolist() == [2, 4, 5] and fine.beta[2, 2] == pytest.approx(1e10, rel=1e-6)
    assert fine.tolerance == 1e-12


def test_bad_regressors_are_refused_with_the_reason():
    with pytest.raises(ValueError, match=r"W: expected shape \(rows, 6\)"):
        base_parameters_from_regressor(np.ones((5, 4)), NAMES)
    W = _regressor()
    W[2, 1] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        base_parameters_from_regressor(W, NAMES)
    with pytest.raises(ValueError, match="all columns are zero"):
        base_parameters_from_regressor(np.zeros((5, 6)), NAMES)
    with pytest.raises(ValueError, match="no parameter is identifiable"):
        base_parameters_from_regressor(np.zeros((5, 0)), [])
    # a tolerance so coarse that a column with a 1e-3 independent part is called dependent: its fit
    # leaves a relative residual of 1e-3 / sqrt(1 + 1e-6), and that is refused
    a, c = np.linalg.qr(np.random.default_rng(3).standard_normal((30, 2)))[0].T
    with pytest.raises(ValueError, match=r"not reproduced \(relative residual 1.00e-03 > 1e-6\)"):
        base_parameters_from_regressor(np.column_stack([a, a + 1e-3 * c]), ["A", "B"], tolerance=1e-2)
    bp = base_parameters_from_regressor(_regressor(), NAMES)
    with pytest.raises(ValueError, match="pi: expected 6 standard parameters"):
        bp.base_values(np.ones(5))
    with pytest.raises(ValueError, match="W: expected 6 columns, got 5"):
        bp.base_regressor(np.ones((3, 5)))


def test_dict_round_trip_keeps_everything_that_defines_the_base():
    spec = ColumnSpec(rotor_inertia=False, friction=("viscous",))
    bp = base_parameters_from_regressor(_regressor(), NAMES, spec)
    d = bp.to_dict()
    assert d["count"] == 3 and d["unidentifiable"] == ["D"] and d["names"] == ["AR", "BR", "F"]
    assert d["columns"] == {"rotor_inertia": False, "friction": ["viscous"], "motor_couplings": []}
    back = BaseParameters.from_dict(d)
    assert back.independent.tolist() == [0, 1, 5] and back.dependent.tolist() == [2, 4]
    assert np.array_equal(back.beta, bp.beta) and back.spec == spec and back.tolerance == bp.tolerance
    assert back.expressions() == bp.expressions() and back.unidentifiable.tolist() == [3]

