"""Identification beyond the paper's protocol: base and tool, Hayati tilts, robust loss, bad input."""

import numpy as np
import pytest

from robodyn.calibration.methods import MeasurementSet, calibrate, error_stats, pair_loaded
from robodyn.calibration.geometric import fit_geometry
from robodyn.calibration.parameters import parallel_axis_rows, preset_free_names
from robodyn.calibration.planning import sample_poses
from robodyn.calibration.stiffness import loaded_subset
from robodyn.calibration.li2023 import LOAD_COM, LOAD_MASS
from robodyn.calibration.simulation import SimulatedTracker, TrackerNoise, measure_poses, ur5_li2023_cell
from robodyn.calibration.stiffness import Load

LOAD = Load(LOAD_MASS, LOAD_COM)


@pytest.fixture(scope="module")
def poses(ur5_robot, ur5_setup, ur5_cube):
    cube, q_ref = ur5_cube
    ident = sample_poses(ur5_robot, ur5_setup, cube, 50, q_ref, seed=21).q
    held = sample_poses(ur5_robot, ur5_setup, cube, 100, q_ref, seed=22).q
    return ident, held


def _truth_set(cell, q, load=None):
    return MeasurementSet(q, cell.robot.positions(q, load), load=load)


def test_base_and_tool_errors_need_their_parameters(poses):
    q, held = poses
    base_error = [3e-4, -2e-4, 1e-4, np.deg2rad(0.01), np.deg2rad(-0.02), np.deg2rad(0.03)]
    gm, cell = ur5_li2023_cell(seed=5, base_error=base_error, tool_error=[2e-4, -1e-4, 3e-4])
    noload = measure_poses(cell, q)
    sub = loaded_subset(gm, q, LOAD, 20)
    loaded = measure_poses(cell, q[sub], LOAD)
    truth = _truth_set(cell, held)
    paper = calibrate(gm, noload, loaded, free_names=preset_free_names(gm, "li2023"))
    full = calibrate(gm, noload, loaded, free_names=preset_free_names(gm, "li2023", identify_base=True,
                                                                      identify_tool=True))
    s_paper, s_full = error_stats(paper.errors(truth)), error_stats(full.errors(truth))
    assert s_full["mean_mm"] <= 0.03 and s_full["max_mm"] <= 0.1
    assert s_paper["mean_mm"] > 3 * s_full["mean_mm"]  # a misaligned base is not a DH error


def test_hayati_beta_captures_a_tilt_that_mdh_cannot(poses):
    q, held = poses
    gm_plain, _ = ur5_li2023_cell()
    gm, cell = ur5_li2023_cell(seed=3, hayati_rows=parallel_axis_rows(gm_plain))
    cell.robot.params[gm.index("beta3")] = np.deg2rad(0.05)  # joint 3 leans out of the arm plane
    noload = measure_poses(cell, q)
    truth = _truth_set(cell, held)
    c = cell.robot.compliance
    mdh = calibrate(gm_plain, noload, known_compliance=c)
    hayati = calibrate(gm, noload, known_compliance=c)
    assert error_stats(hayati.errors(truth))["max_mm"] < 0.1
    assert error_stats(mdh.errors(truth))["mean_mm"] > 4 * error_stats(hayati.errors(truth))["mean_mm"]
    assert np.rad2deg(hayati.params[gm.index("beta3")]) == pytest.approx(0.05, abs=0.01)


def test_robust_loss_ignores_gross_outliers(poses):
    q, held = poses
    gm, cell = ur5_li2023_cell(seed=4)
    noload = measure_poses(cell, q)
    noload.p[[3, 17, 30]] += [[0.002, 0, 0], [0, -0.0015, 0.001], [0, 0, 0.003]]  # a lost beam, a bumped nest
    truth = _truth_set(cell, held)
    plain = calibrate(gm, noload, known_compliance=cell.robot.compliance)
    robust = calibrate(gm, noload, known_compliance=cell.robot.compliance, loss="soft_l1")
    assert error_stats(robust.errors(truth))["mean_mm"] <= 0.03
    assert error_stats(plain.errors(truth))["mean_mm"] > 3 * error_stats(robust.errors(truth))["mean_mm"]


def test_parameter_std_devs_match_the_actual_scatter(poses):
    # run the same identification on independent noise: the spread of the estimates should
    # match the reported standard deviations (within the sampling error of 12 repeats)
    q, _ = poses
    gm, cell = ur5_li2023_cell(seed=0)
    estimates, stds = [], []
    free = preset_free_names(gm, "li2023")
    free = [n for n in free if n not in ("d3", "d4")]
    for k in range(12):
        cell.tracker = SimulatedTracker(cell.tracker.position, TrackerNoise(), seed=100 + k)
        p = cell.tracker.measure(_rigid(cell, q))
        fit = fit_geometry(gm, q, p, free)
        estimates.append(fit.params[gm.indices(free)])
        stds.append(fit.std[gm.indices(free)])
    ratio = np.std(estimates, axis=0, ddof=1) / np.mean(stds, axis=0)
    assert 0.5 < np.median(ratio) < 1.6


def _rigid(cell, q):
    from robodyn.calibration.parameters import target_positions

    return target_positions(cell.robot.gm, cell.robot.params, q)  # geometry only: no sag to model


def test_too_few_poses_is_refused(poses):
    q, _ = poses
    gm, cell = ur5_li2023_cell()
    few = measure_poses(cell, q[:7])
    with pytest.raises(ValueError, match=r"poses: 7 poses give 21 equations for 16 parameters; at least 24 equations \(8 poses"):
        calibrate(gm, few, method="geometric")


def test_singular_pose_sets_are_refused(poses):
    q, _ = poses
    gm, cell = ur5_li2023_cell()
    same = measure_poses(cell, np.repeat(q[:1], 20, axis=0))
    with pytest.raises(ValueError, match="poses: the identification Jacobian has rank"):
        calibrate(gm, same, method="geometric")
    only_base_joint = np.repeat(q[:1], 20, axis=0)
    only_base_joint[:, 0] = np.linspace(-1, 1, 20)
    with pytest.raises(ValueError, match="cannot be told apart"):
        calibrate(gm, measure_poses(cell, only_base_joint), method="geometric")


def test_loaded_set_must_pair_with_unloaded_poses(poses):
    q, _ = poses
    gm, cell = ur5_li2023_cell()
    noload = measure_poses(cell, q)
    stray = measure_poses(cell, q[:10] + 0.01, LOAD)
    with pytest.raises(ValueError, match="loaded: pose 'P001' has no unloaded measurement"):
        pair_loaded(noload, stray)
    with pytest.raises(ValueError, match="loaded: the combined method identifies joint stiffness"):
        calibrate(gm, noload, None, method="combined")
    with pytest.raises(ValueError, match="measurements: the first set must be measured without payload"):
        calibrate(gm, measure_poses(cell, q, LOAD), method="geometric")
    with pytest.raises(ValueError, match="method"):
        calibrate(gm, noload, method="magic")


def _one_more_pass(gm, result, noload, loaded):
    """Steps 3-6 of the combined method once more, starting from its result: (length, angle) change."""
    from robodyn.calibration.methods import _change
    from robodyn.calibration.parameters import robot_for
    from robodyn.calibration.stiffness import identify_compliance, joint_deflection

    i_o, i_f = pair_loaded(noload, loaded)
    prior = np.full(gm.dof, 1 / 50000.0)
    cf = identify_compliance(gm, result.params, noload.q[i_o], loaded.p[i_f] - noload.p[i_o], LOAD, prior)
    q_link = noload.q + joint_deflection(robot_for(gm, result.params), noload.q, cf.compliance, None, links=True)
    again = fit_geometry(gm, q_link, noload, result.free_names, initial=result.params)
    return _change(gm, again.params, result.params), cf.compliance


def test_combined_method_iterates_to_its_fixed_point(poses):
    # section 2.1 step 7: the combined method stops where one more pass changes nothing. Cut short
    # (one iteration), the geometry still moves by micrometres and microradians on the next pass.
    q, _ = poses
    gm, cell = ur5_li2023_cell(seed=8)
    noload = measure_poses(cell, q)
    sub = loaded_subset(gm, q, LOAD, 20)
    loaded = measure_poses(cell, q[sub], LOAD)
    free = preset_free_names(gm, "li2023")
    result = calibrate(gm, noload, loaded, method="combined", free_names=free)
    assert result.converged and result.iterations >= 2
    (dl, da), compliance = _one_more_pass(gm, result, noload, loaded)
    assert dl < 1e-6 and da < 1e-6, (dl, da)
    assert np.allclose(compliance, result.compliance, rtol=1e-3)
    short = calibrate(gm, noload, loaded, method="combined", free_names=free, max_iterations=1)
    (dl1, da1), _ = _one_more_pass(gm, short, noload, loaded)
    assert max(dl1, da1) > 10 * max(dl, da, 1e-9)  # the test can tell a cut-short iteration


def test_joint_angles_of_the_wrong_shape_are_refused():
    from robodyn.calibration.geometric import check_positions

    for q in (np.zeros(6), np.zeros((2, 6, 1)), np.zeros((2, 5))):
        with pytest.raises(ValueError, match=r"measurements.q: expected joint angles of shape \(N, 6\)"):
            check_positions(q, np.zeros((2, 3)), 6)
