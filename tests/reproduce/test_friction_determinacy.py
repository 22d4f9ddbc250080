"""stribeck_determinacy (robodyn/reproduce/ni2024_pipeline.py): when a friction sweep determines Ni et
al. 2024's eq. 2, on synthetic sweeps whose truth is known. No paper number is asserted."""

from __future__ import annotations

import numpy as np

from robodyn.identification.friction import FRICTION_SWEEP_SPEEDS, FrictionPoint, fit_friction
from robodyn.reproduce.ni2024_pipeline import stribeck_determinacy
from robodyn.robot.friction import stribeck


def _points(speeds, torques):
    return [FrictionPoint(0, v, f, 0.0, 10, v) for v, f in zip(speeds, torques)]


def _judge(speeds, torques):
    pts = _points(speeds, torques)
    fit = fit_friction(np.array([p.measured_speed for p in pts]), np.array([p.torque for p in pts]), "stribeck")
    return fit, stribeck_determinacy(pts, fit)


def test_the_papers_sweep_determines_eq2_when_the_friction_is_eq2():
    v = np.array(FRICTION_SWEEP_SPEEDS)
    rng = np.random.default_rng(0)
    f = np.asarray(stribeck(v, 0.4, 0.6, 0.05), float) + rng.normal(0.0, 0.002, v.size)
    fit, d = _judge(v, f)
    assert d["determined"], d["reasons"]
    assert abs(fit.params["vs"] - 0.05) < 0.01 and abs(fit.params["fc"] - 0.4) < 0.01
    assert all(d["relative_std"][k] < 0.5 for k in ("fc", "fs", "vs"))


def test_a_sweep_above_the_stribeck_velocity_leaves_vs_undetermined():
    # every speed far above vs: the dip is invisible, vs and fs are not pinned by the points
    v = np.array([0.4, 0.6, 0.8, 1.0, 1.2, 1.5, 1.8])
    rng = np.random.default_rng(1)
    f = np.asarray(stribeck(v, 0.4, 0.6, 0.01), float) + rng.normal(0.0, 0.002, v.size)
    _, d = _judge(v, f)
    assert not d["determined"] and d["reasons"]


def test_three_points_for_three_parameters_are_never_a_determination():
    v = np.array([0.05, 0.2, 0.8])
    _, d = _judge(v, np.asarray(stribeck(v, 0.4, 0.6, 0.05), float))
    assert not d["determined"]
    assert any("3 points" in r for r in d["reasons"])


def test_a_viscous_rise_is_what_eq2_cannot_absorb_not_the_number_of_speeds():
    """The plant's own law (Stribeck plus viscous 0.2 N.m s/rad), noise-free on the paper's 37 speeds:
    eq. 2 without a viscous term is not determined (the Stribeck term bends upwards instead), while the
    same points with a viscous term give the law back."""
    v = np.array(FRICTION_SWEEP_SPEEDS)
    f = np.asarray(stribeck(v, 0.4, 0.6, 0.05, 0.2), float)
    _, d = _judge(v, f)
    assert not d["determined"]
    with_viscous = fit_friction(v, f, "stribeck", viscous=True)
    assert abs(with_viscous.params["fv"] - 0.2) < 0.01 and abs(with_viscous.params["fc"] - 0.4) < 0.01


def test_table2_labels_its_rows_as_the_plant_and_states_the_fit_setup(monkeypatch):
    """Part table2's report, with the simulated experiment replaced by eq. 2 points of known truth
    (the report is under test, not the plant): every row is the plant's, beside the paper's printed
    strings labelled real, and the setup names what the paper leaves open (starts, linear zone)."""
    from robodyn.identification.friction import STRIBECK_STARTS, fit_experiment
    from robodyn.reproduce import ni2024_pipeline as pipeline
    from robodyn.reproduce.ni2024 import PAPER_ORIGIN
    from robodyn.reproduce.report import Reproduction, origin_word

    seen = {}

    def experiment(model, plant, speeds, half_width, seed=0, workers=1):
        seen.update(speeds=tuple(speeds), half_width=half_width)
        v = np.array(speeds)
        points = [FrictionPoint(j, s, float(stribeck(s, 0.4, 0.6, 0.05)), 0.0, 10, s)
                  for j in range(model.dof) for s in v]
        friction, fits = fit_experiment(points, "stribeck", model.dof)
        return friction, fits, len(points), [stribeck_determinacy([p for p in points if p.joint == f.joint], f)
                                             for f in fits]

    monkeypatch.setattr(pipeline, "friction_step", experiment)
    rep = Reproduction("wso", "")
    pipeline.reproduce_table2(rep, False, paper_origin=PAPER_ORIGIN)
    assert seen == {"speeds": FRICTION_SWEEP_SPEEDS, "half_width": pipeline.TABLE2_HALF_WIDTH}
    (table,) = rep.tables
    assert len(table.rows) == 7
    for j, row in enumerate(table.rows):
        assert origin_word(row.origin) == "plant" and origin_word(row.paper_origin) == "real"
        assert row.paper == " / ".join(pipeline.NI_TABLE_2[j])  # as printed, e.g. "6.0463 x 10^-4"
        assert row.note.startswith("determined")
        fc, fs, vs = (float(x) for x in row.robodyn.split(" / "))
        assert abs(fc - 0.4) < 1e-3 and abs(fs - 0.6) < 1e-3 and abs(vs - 0.05) < 1e-3
    below = sum(v < 0.01 for v in FRICTION_SWEEP_SPEEDS)
    assert f"from {STRIBECK_STARTS} starting vs" in rep.setup and f"{below} of the speeds lie below it" in rep.setup
    assert rep.findings[0].kind == "reached"
