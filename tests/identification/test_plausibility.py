"""Flags on estimates no robot can have (identification/plausibility.py)."""

import numpy as np

from robodyn.identification.plausibility import implausible, nominal_link_inertia, warning_line
from robodyn.robot.loader import load_model


def test_a_significantly_negative_inertia_mass_or_friction_is_flagged_and_noise_is_not():
    names = ["IA3", "M2", "FV1", "FC4", "XX2R", "ZZ2R", "MX3", "IA5", "FO2"]
    theta = np.array([-5.85, -0.4, -0.3, -0.01, -0.2, -63.2, -1.0, -0.001, -3.0])
    std = np.array([0.1, 0.1, 0.1, 0.01, 0.01, 1.0, 0.01, 0.01, 0.1])
    model = load_model("panda")
    flagged = [f["parameter"] for f in implausible(names, theta, std, model)]
    # FC4 is negative by one std only, IA5 within its noise; XX2R (XX - YY) and MX3, FO2 (an offset)
    # may be negative; ZZ2R of a revolute joint may not
    assert flagged == ["IA3", "M2", "FV1", "ZZ2R"]
    assert implausible(["IA3"], [-5.85], [3.0], model) == []  # within two std
    assert implausible(["IA3"], [-5.85], [2.9], model)[0]["parameter"] == "IA3"


def test_a_rotor_inertia_the_arm_could_not_have_is_flagged_against_the_nominal_links():
    model = load_model("panda")
    link = nominal_link_inertia(model)
    assert link.shape == (7,) and np.all(link > 0) and link[0] > link[6]
    bound = 10.0 * link[5]
    ok = implausible(["IA6"], [0.9 * bound], [0.01], model)
    bad = implausible(["IA6"], [1.1 * bound], [0.01], model)
    assert ok == [] and bad[0]["parameter"] == "IA6" and "times the most the nominal links" in bad[0]["why"]
    line = warning_line(bad)
    assert line.startswith("physically impossible estimates (1): IA6") and "--method consistent" in line
    assert warning_line([]) is None
