"""The heavy arm with gravity sag (calibration/heavy_arm.py: bending links, true masses off the model's,
a joint tilt no DH parameter expresses): methods that model the deflection under the links' own
weight against those that do not, on held-out poses beyond the identification ranges, side by side."""

import pytest

from robodyn.calibration.heavy_arm import format_comparison, heavy_arm_comparison

WITH_LINK_GRAVITY = ("combined", "combined-gravity")
WITHOUT_LINK_GRAVITY = ("geometric", "geometric-stiffness")


@pytest.fixture(scope="module")
def report():
    return heavy_arm_comparison(seed=0, holdout=40)


def test_the_plant_sags_and_the_held_out_poses_extrapolate(report):
    sc = report["scenario"]
    assert sc["gravity_sag_mm"]["held_out_max"] > 2.0  # a heavy arm: millimetres of sag
    assert sc["held_out_outside_identification_ranges"] >= 10
    assert sc["smrs_per_pose"] == 3


@pytest.mark.parametrize("condition", ["unloaded", "loaded"])
def test_link_gravity_reaches_the_nominal_max_and_beats_the_models_without_it(report, condition):
    rows = report["methods"]
    nominal = rows["nominal"][condition]["max_mm"]
    for m in WITH_LINK_GRAVITY:
        assert rows[m]["models_link_gravity"]
        assert rows[m][condition]["max_mm"] <= nominal
        assert rows[m][condition]["mean_mm"] < 0.15
    best_without = min(rows[m][condition]["max_mm"] for m in WITHOUT_LINK_GRAVITY)
    for m in WITH_LINK_GRAVITY:
        assert rows[m][condition]["max_mm"] < 0.5 * best_without  # the sag the geometry could not absorb
    for m in WITHOUT_LINK_GRAVITY:
        assert not rows[m]["models_link_gravity"]
        assert rows[m][condition]["mean_mm"] > 2 * rows["combined-gravity"][condition]["mean_mm"]


def test_unloaded_data_alone_identify_the_sag(report):
    rows = report["methods"]
    alone = rows["combined-gravity, unloaded data only"]
    assert alone["unloaded"]["max_mm"] < 0.5 * rows["geometric"]["unloaded"]["max_mm"]
    # joint 2 carries the arm: its stiffness comes out of the links' weight alone, within 20 % of the truth
    k2 = alone["stiffness_Nm_per_rad"][1]
    assert k2 == pytest.approx(report["scenario"]["truth"]["stiffness_Nm_per_rad"][1], rel=0.2)


def test_side_by_side_text(report):
    text = format_comparison(report)
    assert "link gravity" in text and "combined-gravity, unloaded data only" in text
    assert len([l for l in text.splitlines() if l.rstrip().endswith(tuple("0123456789"))]) == 6  # one row per method
