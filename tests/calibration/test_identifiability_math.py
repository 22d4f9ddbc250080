"""calibration/identifiability.py against independent computations.

Each number of an identifiability report is checked against a second way of getting it: finite
differences of the forward kinematics for the rows of a measured structure, the textbook OLS
covariance and the regression definition of the variance inflation factor, the eigenvalues of the
column-correlation matrix, and identities the quantities must satisfy (invariance under a change of
units of one parameter, under a rotation of the measurement frame, under repeating the pose set).
"""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from robodyn.calibration.identifiability import (CHARACTERISTIC_LENGTH, analyse_identifiability, analyse_jacobian,
                                                 generic_configurations, metric_columns, observability_indices,
                                                 observation_jacobian, sequential_redundancies,
                                                 structural_redundancies)
from robodyn.calibration.measurements import Structure
from robodyn.calibration.parameters import (Target, geometric_model, numeric_parameter_jacobian,
                                            target_rotations)


@pytest.fixture(scope="module")
def two_targets(ur5_robot):
    """A ball off the flange axis and an oriented probe (a 6-DOF target) elsewhere on the flange."""
    return geometric_model(ur5_robot, targets=[Target("ball", (0.04, 0.04, 0.03)),
                                                   Target("probe", (-0.03, 0.05, 0.12), oriented=True)])


FREE = ["a2", "alpha3", "d5", "theta6", "base_x", "base_rz", "tool_x", "tool2_y", "tool2_rx"]


def test_rows_of_a_point_measured_on_the_second_target_only_are_its_finite_difference_jacobian(two_targets):
    gm = two_targets
    q = generic_configurations(gm, 7, seed=3)
    idx = gm.indices(FREE)
    J = observation_jacobian(gm, gm.nominal, q, idx, Structure(point_targets=(1,)))
    # every pose has the probe's position: 3 rows per pose, d(probe position)/d(parameter)
    fd = numeric_parameter_jacobian(gm, gm.nominal, q, step=1e-6, target=1)[:, :, idx].reshape(-1, idx.size)
    assert J.shape == (21, len(FREE))
    assert np.allclose(J, fd, atol=1e-8)
    # the ball's own offset does not move the probe
    assert np.all(J[:, FREE.index("tool_x")] == 0.0)


def test_orientation_rows_are_the_finite_difference_of_the_rotation_vector_as_arc_length(two_targets):
    gm = two_targets
    q = generic_configurations(gm, 5, seed=4)
    idx = gm.indices(FREE)
    J = observation_jacobian(gm, gm.nominal, q, idx, Structure(point_targets=(0,), rotation_targets=(1,)))
    assert J.shape == (30, len(FREE))  # 3 position rows of the ball, then 3 orientation rows of the probe
    fd_point = numeric_parameter_jacobian(gm, gm.nominal, q, step=1e-6, target=0)[:, :, idx].reshape(-1, idx.size)
    assert np.allclose(J[:15], fd_point, atol=1e-8)

    # the structure measures the probe's orientation as the identity, so each orientation residual is
    # the rotation vector of the modelled orientation (scipy's log map); in metres at 0.5 m
    def rotvec(p):
        return Rotation.from_matrix(target_rotations(gm, p, q, 1)).as_rotvec()

    assert np.all(np.linalg.norm(rotvec(gm.nominal), axis=1) < 3.0)  # away from the log map's cut at pi
    h = 1e-6
    fd_rot = np.zeros((5, 3, idx.size))
    for col, i in enumerate(idx):
        dp = np.zeros(gm.size)
        dp[i] = h
        fd_rot[:, :, col] = (rotvec(gm.nominal + dp) - rotvec(gm.nominal - dp)) / (2 * h)
    assert np.allclose(J[15:], 0.5 * fd_rot.reshape(-1, idx.size), atol=1e-8)
    # the probe's orientation does not depend on where the ball sits or on the probe's own offset
    assert np.all(J[15:, FREE.index("tool_x")] == 0.0) and np.all(J[15:, FREE.index("tool2_y")] == 0.0)


def test_contacts_with_a_floor_measure_only_the_height_so_horizontal_motions_are_unobservable(ur5_robot):
    # one target touching one horizontal plane (index 0), nothing else measured
    gm = geometric_model(ur5_robot, tool_offset=(0.04, 0.04, 0.03), planes=[("floor", np.eye(4))])
    floor_only = Structure(point_targets=(), plane_pairs=((0, 0),))
    q = generic_configurations(gm, 6, seed=5)
    names = ["theta1", "a2", "a3", "theta2", "base_x", "base_y", "base_z", "base_rx", "base_ry", "base_rz"]
    idx = gm.indices(names)
    J = observation_jacobian(gm, gm.nominal, q, idx, floor_only)
    # the distance from a plane through the origin with normal z is the height: one row per pose,
    # d(z of the target)/d(parameter)
    fd = numeric_parameter_jacobian(gm, gm.nominal, q, step=1e-6)[:, 2, idx]
    assert J.shape == (6, len(names))
    assert np.allclose(J, fd, atol=1e-8)
    # joint 1 turns about the vertical, a2 slides along x1 (the common normal of the vertical joint 1
    # and the horizontal joint 2: horizontal), base_x/base_y slide and base_rz turns the arm about
    # the vertical: none changes a height, so their columns vanish for every pose set; a3 (along x2,
    # which turns with joint 2), tilts and lifts do change heights
    red = {r.name: r for r in structural_redundancies(gm, names, structure=floor_only)}
    assert set(red) == {"theta1", "a2", "base_x", "base_y", "base_rz"}
    assert all(r.combination == {} for r in red.values())
    # with the ball's position measured instead, only base_rz (the same turn as theta1) is lost
    points = structural_redundancies(gm, names)
    assert [r.name for r in points] == ["base_rz"] and points[0].combination == pytest.approx({"theta1": 1.0}, abs=1e-6)


def test_sequential_redundancy_reports_the_combination_of_unit_columns_in_scan_order():
    rng = np.random.default_rng(1)
    a, b, c = rng.standard_normal((3, 12))
    # raw columns: a (length ~3.5), 1000 b (other units), 2 a - 0.003 (1000 b), a zero column, c
    J = np.column_stack([a, 1000.0 * b, 2.0 * a - 3.0 * b, np.zeros(12), c])
    keep, red = sequential_redundancies(J, ["a", "b", "ab", "zero", "c"])
    assert keep.tolist() == [True, True, False, False, True]
    assert [r.name for r in red] == ["ab", "zero"]
    # in unit columns u_x = x / |x|: u_ab = (2 |a| u_a - 3 |b| u_b) / |2a - 3b|
    n_ab = np.linalg.norm(2 * a - 3 * b)
    assert red[0].combination == pytest.approx({"a": 2 * np.linalg.norm(a) / n_ab,
                                                 "b": -3 * np.linalg.norm(b) / n_ab}, rel=1e-9)
    assert red[0].residual < 1e-12 and red[1].combination == {} and red[1].residual == 0.0
    # scanned the other way round the later of the two dependent columns is the one reported
    _, red_rev = sequential_redundancies(J[:, ::-1], ["c", "zero", "ab", "b", "a"])
    assert [r.name for r in red_rev] == ["zero", "a"]
    # a column 1e-5 away from the span of the others is kept (tolerance 1e-7 on unit columns)
    off = 2.0 * a - 3.0 * b + 1e-5 * np.linalg.norm(2 * a - 3 * b) * c / np.linalg.norm(c)
    keep2, red2 = sequential_redundancies(np.column_stack([a, b, off]), ["a", "b", "off"])
    assert keep2.all() and red2 == []


def test_a_reported_combination_reproduces_its_column_even_with_a_small_coefficient():
    rng = np.random.default_rng(8)
    a, b, c = rng.standard_normal((3, 15))
    J = np.column_stack([a, b, c, 3.0 * a + 0.01 * c])  # b takes no part; c only a small one
    _, red = sequential_redundancies(J, ["a", "b", "c", "x"])
    assert [r.name for r in red] == ["x"] and set(red[0].combination) == {"a", "c"}
    unit = {n: J[:, i] / np.linalg.norm(J[:, i]) for i, n in enumerate("abc")}
    rebuilt = sum(coef * unit[n] for n, coef in red[0].combination.items())
    assert np.linalg.norm(rebuilt - J[:, 3] / np.linalg.norm(J[:, 3])) < 1e-12


def test_redundancy_agrees_with_the_svd_rank_on_columns_as_ill_conditioned_as_parallel_axes():
    # polynomial columns 1, x, ..., x^9 on [0, 1]: unit-column condition number ~2e6, like the d
    # parameters along nearly parallel axes; then one column that is exactly a combination of them
    x = np.linspace(0.0, 1.0, 40)
    V = np.vander(x, 10, increasing=True)
    J = np.column_stack([V, V @ np.random.default_rng(0).standard_normal(10)])
    assert 1e6 < np.linalg.cond(V / np.linalg.norm(V, axis=0)) < 1e7
    names = [f"c{i}" for i in range(11)]
    keep, red = sequential_redundancies(J, names)
    s = np.linalg.svd(J / np.linalg.norm(J, axis=0), compute_uv=False)
    assert int(np.sum(s > 1e-9 * s[0])) == keep.sum() == 10
    assert [r.name for r in red] == ["c10"] and red[0].residual < 1e-12


def test_a_parameter_without_effect_is_redundant_and_the_rest_is_analysed_without_it():
    J = _correlated_jacobian()
    J0 = np.column_stack([J[:, :2], np.zeros(J.shape[0]), J[:, 2:]])  # e.g. a tool offset no row sees
    angle = np.zeros(6, bool)
    rep = analyse_jacobian(J0, list("abzcde"), angle, 1e-5)
    ref = analyse_jacobian(J, list("abcde"), np.zeros(5, bool), 1e-5)
    assert rep.rank == 5 and [(r.name, r.combination) for r in rep.redundant] == [("z", {})]
    assert rep.singular_values[:5] == pytest.approx(ref.singular_values, rel=1e-12)
    assert rep.singular_values[5] < 1e-15 and rep.condition_number > 1e15  # zero to rounding
    assert np.delete(rep.std, 2) == pytest.approx(ref.std, rel=1e-12) and np.isnan(rep.std[2])


def _ols_reference(J, sigma):
    """Textbook least squares on the raw J: cov = sigma^2 (J^T J)^-1, and VIF_k = |x_k|^2 / RSS_k
    where RSS_k is the residual of regressing column k on all the others (uncentred: 1 / (1 - R^2))."""
    cov = sigma ** 2 * np.linalg.inv(J.T @ J)
    vif = []
    for k in range(J.shape[1]):
        others = np.delete(J, k, axis=1)
        coef, *_ = np.linalg.lstsq(others, J[:, k], rcond=None)
        rss = np.sum((J[:, k] - others @ coef) ** 2)
        vif.append(np.sum(J[:, k] ** 2) / rss)
    return np.sqrt(np.diag(cov)), np.array(vif)


def _correlated_jacobian(rows=24, seed=2):
    """Five columns in mixed units; columns 3 and 4 nearly parallel (like d along parallel axes)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, 5)) * np.array([0.3, 2.0, 0.05, 1.0, 1.0])
    X[:, 4] = X[:, 3] + 0.002 * rng.standard_normal(rows)
    return X


def test_standard_deviations_and_vif_equal_the_ols_covariance_and_the_regression_definition():
    J = _correlated_jacobian()
    sigma = 2e-5
    rep = analyse_jacobian(J, list("abcde"), np.array([False, True, False, False, False]), sigma)
    std, vif = _ols_reference(J, sigma)
    assert rep.rank == 5 and rep.redundant == [] and rep.poses == 8
    assert rep.std == pytest.approx(std, rel=1e-7)
    assert rep.vif == pytest.approx(vif, rel=1e-7)
    norms = np.linalg.norm(J, axis=0)
    assert rep.effect_std == pytest.approx(std * norms / np.sqrt(8), rel=1e-7)
    # the two nearly parallel columns move the points by more than the noise; the others do not
    assert rep.poorly_identifiable == [n for n, e in zip("abcde", std * norms / np.sqrt(8)) if e > sigma] == ["d", "e"]
    # singular values: square roots of the eigenvalues of the column-correlation matrix
    G = J.T @ J
    corr = G / np.sqrt(np.outer(np.diag(G), np.diag(G)))
    eig = np.sort(np.linalg.eigvalsh(corr))[::-1]
    assert rep.singular_values == pytest.approx(np.sqrt(eig), rel=1e-7)
    assert rep.condition_number == pytest.approx(np.sqrt(eig[0] / eig[-1]), rel=1e-7)
    # observability of the Jacobian with the angle column as arc length at 0.5 m
    Jm = J.copy()
    Jm[:, 1] /= CHARACTERISTIC_LENGTH
    s = np.linalg.svd(Jm, compute_uv=False)
    assert rep.observability["O1"] == pytest.approx(np.prod(s) ** (1 / 5) / np.sqrt(8), rel=1e-9)
    assert rep.observability["O3"] == pytest.approx(s[-1], rel=1e-9)


def test_a_parameter_is_poorly_identifiable_exactly_when_its_vif_exceeds_the_pose_count():
    # effect = sigma sqrt(diag (J^T J)^-1) |x_k| / sqrt(poses) = sigma sqrt(VIF_k / poses): with 8
    # poses a pair of columns with correlation rho has VIF 1 / (1 - rho^2) on both
    u = np.linalg.qr(np.random.default_rng(4).standard_normal((24, 6)))[0]

    def pair(i, vif):
        rho = np.sqrt(1.0 - 1.0 / vif)
        return [u[:, i], rho * u[:, i] + np.sqrt(1.0 - rho ** 2) * u[:, i + 1]]

    J = np.column_stack(pair(0, 6.0) + pair(2, 12.0) + [0.3 * u[:, 4], 7.0 * u[:, 5]])
    rep = analyse_jacobian(J, ["c", "d", "e", "f", "a", "b"], np.zeros(6, bool), noise_sigma=1e-5)
    assert rep.vif == pytest.approx([6.0, 6.0, 12.0, 12.0, 1.0, 1.0], rel=1e-9)
    assert rep.effect_std == pytest.approx(1e-5 * np.sqrt(np.array([6, 6, 12, 12, 1, 1]) / 8.0), rel=1e-9)
    assert rep.poorly_identifiable == ["e", "f"]  # 1.22 sigma; c and d move the points by 0.87 sigma


def test_unit_change_of_one_parameter_changes_only_its_own_standard_deviation():
    J = _correlated_jacobian()
    angle = np.array([False, True, False, False, False])
    rep = analyse_jacobian(J, list("abcde"), angle, 1e-5)
    # parameter c given in millimetres instead of metres: its column shrinks 1000 times
    mm = J * np.array([1.0, 1.0, 1e-3, 1.0, 1.0])
    rep_mm = analyse_jacobian(mm, list("abcde"), angle, 1e-5)
    assert rep_mm.singular_values == pytest.approx(rep.singular_values, rel=1e-9)
    assert rep_mm.condition_number == pytest.approx(rep.condition_number, rel=1e-9)
    assert rep_mm.vif == pytest.approx(rep.vif, rel=1e-9)
    assert rep_mm.effect_std == pytest.approx(rep.effect_std, rel=1e-9)
    assert rep_mm.std == pytest.approx(rep.std * np.array([1.0, 1.0, 1e3, 1.0, 1.0]), rel=1e-9)


def test_a_redundant_column_is_left_out_of_std_vif_and_observability():
    J = _correlated_jacobian()
    J = np.column_stack([J[:, :3], J[:, 0] - 0.5 * J[:, 2], J[:, 3]])  # column 3 = a - c / 2
    angle = np.array([False, True, False, False, True])
    rep = analyse_jacobian(J, list("abcde"), angle, 1e-5)
    assert rep.rank == 4 and not rep.identifiable and rep.condition_number > 1e12
    assert [r.name for r in rep.redundant] == ["d"]
    assert np.isnan(rep.std[3]) and rep.vif[3] == np.inf and "d" not in rep.poorly_identifiable
    kept = [0, 1, 2, 4]
    std, vif = _ols_reference(J[:, kept], 1e-5)
    assert rep.std[kept] == pytest.approx(std, rel=1e-7) and rep.vif[kept] == pytest.approx(vif, rel=1e-7)
    assert rep.observability == pytest.approx(observability_indices(J[:, kept], angle[kept]), rel=1e-12, abs=0)


def test_observability_indices_under_a_frame_rotation_and_a_repeated_pose_set():
    J = _correlated_jacobian(rows=30, seed=7)
    angle = np.array([True, False, False, True, False])
    o = observability_indices(J, angle)
    metric = J * np.where(angle, 1.0 / CHARACTERISTIC_LENGTH, 1.0)
    assert o["O2"] == pytest.approx(1.0 / np.linalg.cond(metric), rel=1e-10, abs=0)
    # rotating the measurement frame rotates each pose's 3 rows: singular values stay
    R = Rotation.from_rotvec([0.3, -1.1, 0.7]).as_matrix()
    rotated = np.einsum("ij,njp->nip", R, J.reshape(10, 3, 5)).reshape(30, 5)
    assert observability_indices(rotated, angle) == pytest.approx(o, rel=1e-10, abs=0)
    # measuring every pose twice multiplies every singular value by sqrt(2) and doubles the poses:
    # O1 (geometric mean / sqrt(poses)) and O2 (inverse condition number) stay, O3 and O4 grow by
    # sqrt(2), log det by 5 log 2
    twice = observability_indices(np.vstack([J, J]), angle)
    assert twice["O1"] == pytest.approx(o["O1"], rel=1e-12, abs=0)
    assert twice["O2"] == pytest.approx(o["O2"], rel=1e-12, abs=0)
    assert twice["O3"] == pytest.approx(np.sqrt(2) * o["O3"], rel=1e-12, abs=0)
    assert twice["O4"] == pytest.approx(np.sqrt(2) * o["O4"], rel=1e-12, abs=0)
    assert twice["log_det"] == pytest.approx(o["log_det"] + 5 * np.log(2), rel=1e-12, abs=0)
    # the angle columns in metres: the same indices as the plain Jacobian with those columns doubled
    doubled = J * np.where(angle, 2.0, 1.0)
    assert metric_columns(J, angle) == pytest.approx(doubled, rel=1e-15)
    assert observability_indices(doubled, np.zeros(5, bool)) == pytest.approx(o, rel=1e-12, abs=0)


def test_an_extra_column_equal_to_a_geometric_one_is_reported_as_that_parameter(two_targets):
    gm = two_targets
    q = generic_configurations(gm, 8, seed=6)
    names = ["a2", "a3", "d5"]
    base = analyse_identifiability(gm, gm.nominal, q, names, 1e-5)
    J = numeric_parameter_jacobian(gm, gm.nominal, q, step=1e-6)[:, :, gm.indices(names)].reshape(-1, 3)
    # a non-geometric parameter that moves the ball exactly like 2 x a3 (in m per unit)
    rep = analyse_identifiability(gm, gm.nominal, q, names, 1e-5, extra_columns={"scale": 2.0 * J[:, 1]})
    assert rep.names == names + ["scale"] and rep.rank == 3
    assert [(r.name, r.combination) for r in rep.redundant] == [("scale", pytest.approx({"a3": 1.0}, abs=1e-6))]
    assert rep.std[:3] == pytest.approx(base.std, rel=1e-6)
    # without the duplicate the three lengths are the OLS standard deviations of the finite-difference J
    assert base.std == pytest.approx(_ols_reference(J, 1e-5)[0], rel=1e-5)


def test_extra_columns_are_not_angles_in_the_observability_indices(two_targets):
    gm = two_targets
    q = generic_configurations(gm, 8, seed=6)
    names = ["alpha2", "a3", "theta4"]
    J = numeric_parameter_jacobian(gm, gm.nominal, q, step=1e-6)[:, :, gm.indices(names)].reshape(-1, 3)
    extra = np.random.default_rng(3).standard_normal(J.shape[0]) * 1e-3  # e.g. a scale, m per unit
    rep = analyse_identifiability(gm, gm.nominal, q, names, 1e-5, extra_columns={"scale": extra})
    assert rep.rank == 4 and rep.redundant == []
    # the two angles as arc length at 0.5 m, the length and the extra column as they are
    plain = np.column_stack([J[:, 0] / 0.5, J[:, 1], J[:, 2] / 0.5, extra])
    s = np.linalg.svd(plain, compute_uv=False)
    assert rep.observability["O3"] == pytest.approx(s[-1], rel=1e-5)
    assert rep.observability["O1"] == pytest.approx(np.prod(s) ** 0.25 / np.sqrt(8), rel=1e-5)
