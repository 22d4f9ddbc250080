"""`robodyn reproduce PAPER`, the Table-4 comparison on real TX40 data, and the plant hook of `compare`
(ur10e: test_ur10e_walkthrough.py)."""

import json
from pathlib import Path

import numpy as np
import pytest

from robodyn import reproduce as R
from robodyn.identification import comparison
from robodyn.identification import comparison_data as cd
from robodyn.papers import cite

TX40 = comparison.TX40_DIR


def test_every_paper_is_reproducible_and_cited_by_authors():
    assert set(R.REPRODUCERS) == set(R.PAPER_KEYS) == {"wso", "stepwise", "icpso", "ur10e", "calibration"}
    rep = R.Reproduction("icpso", "setup", [R.Table("t", [R.Row("x", "1.0", 2.0, "cmd", "plant (p)")])],
                         [R.Finding("claim", "unstated parameter", "evidence", "cmd")])
    text = rep.format()
    assert cite("icpso").split(",")[0] in rep.to_dict()["paper"]
    assert "Not reached, and why:" in text and "unstated parameter" in text
    with pytest.raises(ValueError, match="paper"):
        R.reproduce("no_such_paper")


def test_table4_comparison_on_real_tx40_data():
    table = comparison.tx40_comparison(TX40, population=60, iteration_scale=0.2)
    assert table["inverse_crime"] is False and table["base_parameters"] == 61
    rows = {r["method"]: r for r in table["rows"]}
    assert set(rows) == {"ols", "wls", "wso", "pso", "ga"}
    # eq. 14 is convex: the closed form is the global minimum on real data too
    assert all(rows["ols"]["fitness"] <= r["fitness"] + 1e-9 for r in rows.values())
    # each metaheuristic spent the evaluations its iteration count implies (no ranking is asserted)
    for m in ("wso", "pso", "ga"):
        assert 0 < rows[m]["nfev"] <= 60 * (table["iterations"][m] + 1)
    assert table["equations"]["identification"] > 600 and table["equations"]["held_out"] > 600
    assert len(rows["ols"]["heldout_rmse"]) == 6


def test_compare_runs_on_a_registered_plant_and_labels_the_inverse_crime(tmp_path, capsys, monkeypatch):
    from robodyn.cli import main

    def with_unmodelled_friction(model, *, seed, seconds, rate_hz, noise, rotor_inertia):
        data = cd.simulated_recording(model, seed=seed, seconds=seconds, rate_hz=rate_hz, noise=noise,
                                      rotor_inertia=rotor_inertia)
        data.tau = data.tau + 0.3 * np.tanh(data.qd / 0.01)  # Coulomb friction the identifier does not model
        return data

    monkeypatch.setitem(cd.PLANTS, "test-friction", cd.Plant("test-friction", with_unmodelled_friction, True,
                                                             "RNEA + unmodelled Coulomb friction"))
    with pytest.raises(ValueError, match="already registered"):
        cd.register_plant(cd.PLANTS["test-friction"])
    args = ["compare", "--simulate", "twolink", "--seconds", "10", "--rate", "50", "--population", "20",
            "--iteration-scale", "0.02"]
    out = tmp_path / "a.json"
    assert main(args + ["--out", str(out)]) == 0
    assert "data origin own-model" in capsys.readouterr().out and json.loads(out.read_text())["inverse_crime"] is True
    assert main(args + ["--plant", "test-friction", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["inverse_crime"] is False and "unmodelled" in doc["plant"]
    assert main(args + ["--plant", "nonexistent"]) == 2


# --------------------------------------------------------------------------- labels and output


def test_a_row_needs_one_of_the_three_origin_words():
    for origin in ("real (TX40 log)", "plant (MuJoCo, perturbed)", "own-model (inverse crime)"):
        assert R.Row("q", None, 1.0, "robodyn x", origin).origin == origin
    for bad in ("", "simulated", "INVERSE CRIME", "realistic plant"):
        with pytest.raises(ValueError, match="origin"):
            R.Row("q", None, 1.0, "robodyn x", bad)
    with pytest.raises(ValueError, match="origin"):
        R.Row("q", "1", 1.0, "robodyn x", "real (r)", paper_origin="the paper")
    with pytest.raises(TypeError, match="printed string"):
        R.Row("q", 3.3003, 1.0, "robodyn x", "real (r)")


def test_a_table_without_the_inverse_crime_refuses_an_own_model_row():
    real, own = R.Row("a", None, 1.0, "robodyn x", "real (r)"), R.Row("b", None, 1.0, "robodyn x", "own-model (m)")
    R.Table("with", [real, own])
    R.Table("without", [real], own_model_allowed=False)
    with pytest.raises(ValueError, match="own-model rows"):
        R.Table("without", [real, own], own_model_allowed=False)


def test_wso_setups_label_robodyn_data_and_the_paper_is_real():
    from robodyn.reproduce import ni2024
    from robodyn.reproduce.report import origin_word

    words = [origin_word(kind) for _, kind, _, _ in ni2024.WSO_SETUPS]
    assert words == ["own-model", "plant", "plant", "real"]
    assert origin_word(ni2024.PAPER_ORIGIN) == "real" and "Franka" in ni2024.PAPER_ORIGIN
    for _, _, full, quick in ni2024.WSO_SETUPS:
        assert full[0].startswith("robodyn ") and quick[0].startswith("robodyn ")


def test_sections_mean_what_their_titles_say():
    rep = R.Reproduction("icpso", "s", [], [R.Finding("a", "r", "e", "c", kind="reached"),
                                            R.Finding("b", "r", "e", "c", kind="not reached"),
                                            R.Finding("z", "r", "e", "c", kind="about the paper")])
    text = rep.format()
    not_reached = text.split("Not reached, and why:")[1].split("\n\n")[0]
    assert "- b:" in not_reached and "- a:" not in not_reached and "- z:" not in not_reached
    assert "- a:" in text.split("Reached, with the evidence:")[1].split("\n\n")[0]
    with pytest.raises(ValueError, match="kind"):
        R.Finding("a", "r", "e", "c", kind="maybe")


def test_paper_values_are_the_papers_printed_strings():
    from robodyn.reproduce import chen2021, li2023, ni2024, zhong2023

    assert chen2021.CHEN_TABLE_3["friction"]["both links"] == "3.3003"
    assert ni2024.NI_TABLE_4["ga"][1] == "1.60" and ni2024.NI_TABLE_4["ga"][5] == "0.60"
    assert zhong2023.ZHONG_COND["joint 3"] == "1.0000"
    assert li2023.PAPER_TABLE5["no_load"]["reduction"] == "75.5 %"
    assert li2023.PAPER_TABLE5["loaded"]["reduction"] == "85.1 %"
    assert li2023.PAPER_TABLE4["no_load"]["geometric"] == ("0.264", "0.520")
    row = R.Row("both links", chen2021.CHEN_TABLE_3["friction"]["both links"], 3.3061, "robodyn x", "own-model (m)")
    assert " 3.3003 " in R.Reproduction("stepwise", "s", [R.Table("t", [row])]).format()


def test_no_reproduction_cites_a_checkout_path_or_an_internal_name():
    src = Path(R.__file__).parent
    for f in src.glob("*.py"):
        text = f.read_text()
        assert ".venv/bin/python" not in text, f.name
        assert "table['against']" not in text, f.name  # the comparison's 'against' names internal keys


def test_correlation_is_clipped_to_its_domain():
    from robodyn.reproduce.report import clip

    assert clip(1.0000000014, -1.0, 1.0) == 1.0 and clip(-1.2, -1.0, 1.0) == -1.0 and clip(0.5, -1, 1) == 0.5


def test_a_stiffness_within_two_standard_errors_of_rigid_is_unidentifiable():
    from robodyn.reproduce.li2023 import stiffness_cell

    # compliance 1e-15 +- 1e-6: the point value would be K = 1e15; the data bound K from below only
    value, note = stiffness_cell({"joint": 4, "compliance_rad_per_Nm": 1e-15, "compliance_std": 1e-6,
                                  "identified": True})
    assert value == "unidentifiable" and "K > 500000" in note
    # a large K whose compliance is well resolved stays a number: the decision is the standard error, not K
    value, _ = stiffness_cell({"joint": 3, "compliance_rad_per_Nm": 1e-6, "compliance_std": 1e-8,
                               "identified": True})
    assert value == pytest.approx(1e6)
    value, _ = stiffness_cell({"joint": 5, "compliance_rad_per_Nm": 1 / 5404, "compliance_std": 1 / 5404,
                               "identified": True})
    assert value == "unidentifiable"


def test_friction_floor_on_the_papers_50hz_grid():
    from robodyn.reproduce.chen2021 import CHEN_GRID, friction_cond_floor

    assert CHEN_GRID == 250
    # t = k/50, k = 1..250 (the paper's N_A samples) and k = 0..249 give the same rows: the same floor
    assert friction_cond_floor(np.arange(1, 251) / 50.0) == pytest.approx(friction_cond_floor(np.arange(250) / 50.0))
    assert friction_cond_floor(np.arange(250) / 50.0) == pytest.approx(3.3061, abs=1e-4)
    assert friction_cond_floor(np.linspace(0.0, 5.0, 250)) == pytest.approx(3.2888, abs=1e-4)


def test_wso_has_the_table_and_the_pipeline_as_parts():
    assert R.PARTS["wso"] == ("table4", "table2", "pipeline", "real_panda")
    with pytest.raises(ValueError, match="part"):
        R.reproduce("wso", part="table9")


def test_li_has_the_ur5_and_the_heavy_arm_as_parts():
    assert R.PARTS["calibration"] == ("ur5", "heavy")
    with pytest.raises(ValueError, match="part"):
        R.reproduce("calibration", part="table9")
    with pytest.raises(ValueError, match="plot: only the part ur5"):
        R.reproduce("calibration", part="heavy", plot="x")


def test_zhong_plant_with_friction_is_unlike_the_networks_model():
    from robodyn.reproduce import zhong2023 as z
    from robodyn.robot.loader import load_model

    model = load_model("scara")
    test, excitation = z.zhong_test_trajectory(model), z.zhong_test_trajectory(model, seed=3)
    own = z.zhong_identify(model, excitation, test, 0.0, epochs=10)
    plant = z.zhong_identify(model, excitation, test, 0.0, epochs=10, friction=True)
    # the model's own noise-free torques give the true p back (the inverse crime); the plant does not
    assert np.allclose(own["p_ols"], z.ZHONG_TRUE_P, atol=2e-3) and own["friction"] is None
    assert np.abs(np.array(plant["p_ols"]) - z.ZHONG_TRUE_P).max() > 0.005  # p2, p4 off by 0.006-0.007
    assert R.report.origin_word(z.PLANT_ORIGIN) == "plant"


def test_wso_first_is_reached_only_when_wso_is_below_pso_and_ga_on_every_plant():
    from robodyn.reproduce.ni2024 import wso_below_pso_and_ga

    def setup(wso, pso, ga):
        return {"rows": [{"method": m, "heldout_sum": v} for m, v in (("ols", 1.0), ("wso", wso), ("pso", pso),
                                                                      ("ga", ga))]}

    results = {"franka-like": setup(2.3, 4.1, 4.5), "ur-like": setup(3.5, 5.3, 15.3)}
    assert wso_below_pso_and_ga(results, ["franka-like", "ur-like"])
    results["ur-like"] = setup(3.5, 5.3, 3.4)  # GA below WSO on one plant: not reached
    assert not wso_below_pso_and_ga(results, ["franka-like", "ur-like"])
    assert wso_below_pso_and_ga(results, ["franka-like"])
    assert not wso_below_pso_and_ga(results, [])  # no plant, no claim
