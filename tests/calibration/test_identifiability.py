import numpy as np
import pytest

from robodyn.calibration.methods import usable_free_names
from robodyn.calibration.identifiability import (analyse_identifiability, generic_configurations, metric_columns,
                                                 observability_indices, structural_redundancies)
from robodyn.calibration.parameters import (geometric_model, parallel_axis_rows, parameter_jacobian,
                                            preset_free_names)
from robodyn.calibration.planning import sample_poses, select_d_optimal
from robodyn.calibration.simulation import ur5_li2023_truth
from robodyn.robot.loader import load_model

NOISE = 27e-6  # AT960 15 um + 6 um/m at about 2 m


@pytest.fixture(scope="module")
def gm(ur5_robot):
    return geometric_model(ur5_robot, tool_offset=(0.04, 0.04, 0.03))


def test_paper_claim_all_18_identifiable_fails_at_the_nominal_geometry(gm):
    names = preset_free_names(gm, "li2023")
    rep = analyse_identifiability(gm, gm.nominal, generic_configurations(gm, 50), names, NOISE)
    assert rep.rank == 16 and len(names) == 18
    assert rep.condition_number > 1e12
    red = {r.name: r.combination for r in rep.redundant}
    # d along three parallel axes slides the same rest of the arm: d3 and d4 are d2
    assert set(red) == {"d3", "d4"}
    assert red["d3"] == pytest.approx({"d2": 1.0}, abs=1e-6)
    assert red["d4"] == pytest.approx({"d2": 1.0}, abs=1e-6)


def test_at_the_true_geometry_all_18_have_full_rank_but_are_ill_conditioned(gm):
    # seed 004's argument: the tilts (alpha3 = 0.04 deg, alpha4 = -0.24 deg) separate d2, d3, d4 -- barely
    names = preset_free_names(gm, "li2023")
    truth = ur5_li2023_truth(gm)
    q = generic_configurations(gm, 50)
    rep = analyse_identifiability(gm, truth, q, names, NOISE)
    assert rep.rank == 18
    assert rep.condition_number > 1e6
    assert {"d2", "d3", "d4"} <= set(rep.poorly_identifiable)
    std = dict(zip(rep.names, rep.std))
    assert std["d3"] > 0.1  # metres: a d3 "identified" to 0.516 mm (Table 3) means nothing
    usable, dropped, _ = usable_free_names(gm, names)
    after = analyse_identifiability(gm, truth, q, usable, NOISE)
    assert [d.name for d in dropped] == ["d3", "d4"]
    assert after.rank == 16 and after.condition_number < 20 and not after.poorly_identifiable


def test_structural_redundancies_with_base_tool_and_standard_dh(gm):
    everything = preset_free_names(gm, "all", identify_base=True, identify_tool=True)
    red = {r.name for r in structural_redundancies(gm, everything)}
    # base pose vs row 1, tool vs the last row's d/theta, and the parallel-axis d's
    assert {"d3", "d4", "base_x", "base_z", "base_rx", "base_rz", "tool_z"} <= red
    ur = geometric_model(load_model("ur5"), tool_offset=(0.04, 0.04, 0.03))
    red_dh = {r.name for r in structural_redundancies(ur, preset_free_names(ur, "all"))}
    assert red_dh == {"d3", "d4", "theta6"}


def test_hayati_betas_are_independent_where_the_d_columns_are_not(ur5_robot):
    plain = geometric_model(ur5_robot, tool_offset=(0.04, 0.04, 0.03))
    gm = geometric_model(ur5_robot, tool_offset=(0.04, 0.04, 0.03), hayati_rows=parallel_axis_rows(plain))
    names = preset_free_names(gm, "li2023")
    assert {"beta3", "beta4"} <= set(names)
    usable, dropped, _ = usable_free_names(gm, names)
    assert [d.name for d in dropped] == ["d3", "d4"]
    rep = analyse_identifiability(gm, gm.nominal, generic_configurations(gm, 50), usable, NOISE)
    assert rep.rank == len(usable) == 18 and rep.condition_number < 50


def test_d_optimal_selection_beats_random_subsets(gm, ur5_robot, ur5_setup, ur5_cube):
    cube, q_ref = ur5_cube
    pool = sample_poses(ur5_robot, ur5_setup, cube, 150, q_ref, seed=4).q
    usable, _, _ = usable_free_names(gm, preset_free_names(gm, "li2023"))
    idx = gm.indices(usable)
    blocks = metric_columns(parameter_jacobian(gm, gm.nominal, pool)[:, :, idx], gm.angle_mask[idx])
    chosen = select_d_optimal(blocks, 30)
    assert len(set(chosen.tolist())) == 30

    def logdet(sel):
        return observability_indices(blocks[sel].reshape(-1, idx.size), np.zeros(idx.size, bool))["log_det"]

    rng = np.random.default_rng(0)
    random_best = max(logdet(rng.choice(150, 30, replace=False)) for _ in range(20))
    assert logdet(chosen) > random_best


def test_indices_and_standard_deviations_of_a_jacobian_with_known_singular_values():
    import math

    from robodyn.calibration.identifiability import analyse_jacobian, observability_indices

    # two poses (6 rows), orthogonal columns of length 3 and 1 (lengths) and 0.25 (an angle: x 1/0.5 m)
    u = np.linalg.qr(np.random.default_rng(0).standard_normal((6, 3)))[0]
    J = u * np.array([3.0, 0.25, 1.0])
    o = observability_indices(J, np.array([False, True, False]))
    s1, s2 = 3.0, 0.5  # largest and smallest singular values once the angle column is in metres
    assert o["O1"] == pytest.approx((s1 * 1.0 * s2) ** (1 / 3) / math.sqrt(2), rel=1e-12)
    assert o["O2"] == pytest.approx(s2 / s1, rel=1e-12) and o["O3"] == pytest.approx(s2, rel=1e-12)
    assert o["O4"] == pytest.approx(s2 ** 2 / s1, rel=1e-12)
    assert o["log_det"] == pytest.approx(2 * (math.log(s1) + math.log(s2)), rel=1e-12)
    rep = analyse_jacobian(J[:, :2], ["a", "theta"], np.array([False, True]), noise_sigma=1e-4)
    assert rep.rank == 2 and rep.condition_number == pytest.approx(1.0) and rep.poses == 2
    # orthogonal columns: std = sigma / column length; effect = std x length / sqrt(poses)
    assert rep.std == pytest.approx([1e-4 / 3.0, 1e-4 / 0.25], rel=1e-9)
    assert rep.effect_std == pytest.approx([1e-4 / math.sqrt(2)] * 2, rel=1e-9)
    assert rep.vif == pytest.approx([1.0, 1.0]) and rep.poorly_identifiable == []
    # a rank-deficient J reports zero indices
    assert observability_indices(np.zeros((3, 2)), np.array([False, False]))["O1"] == 0.0
