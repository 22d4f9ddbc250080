"""What `robodyn reproduce` states about the papers: each statement pinned to the property of the code
or the data that makes it true (no ranking of methods is asserted). The paper facts are from the
papers themselves: Chen et al. 2021 (T = 5 s at 50 Hz, Table 3), Ni et al. 2024 section 4.3 (150
sharks; PSO 800 and GA 460 iterations, no population), Zhong et al. 2023 sections 3.1-3.3."""

from __future__ import annotations

import numpy as np
import pytest

from robodyn.reproduce.report import Reproduction, origin_word


# --------------------------------------------------------------------------- verdicts


def test_only_the_papers_robot_and_setup_gives_a_reached_or_not_reached_verdict():
    from robodyn.reproduce.report import verdict

    assert verdict(True, True) == "reached" and verdict(False, True) == "not reached"
    assert verdict(True, False) == "ablation" and verdict(False, False) == "ablation"
    rep = Reproduction("calibration", "s")
    from robodyn.reproduce.report import Finding

    rep.findings.append(Finding("c", "r", "e", "cmd", kind="ablation"))
    text = rep.format()
    assert "Ablations" in text and "Reached, with the evidence:" not in text


# --------------------------------------------------------------------------- Chen et al. 2021


def test_both_250_sample_grids_have_248_non_zero_friction_rows():
    from robodyn.reproduce.chen2021 import CHEN_GRID, CHEN_RATE_HZ, friction_floors, friction_nonzero_rows

    # k/50 s holds t = 0 and t = T/2 = 2.5 s, where the shape's velocity vanishes; the spread grid
    # holds t = 0 and t = T but not T/2
    assert friction_nonzero_rows(np.arange(CHEN_GRID) / CHEN_RATE_HZ) == 248
    assert friction_nonzero_rows(np.linspace(0.0, 5.0, CHEN_GRID)) == 248
    assert friction_nonzero_rows(np.array([0.0, 1.0, 2.5, 4.0, 5.0])) == 2
    floors = friction_floors()
    assert floors["nonzero_rows"]["grid_50hz"] == floors["nonzero_rows"]["linspace_with_end"] == 248


def test_denser_grids_put_the_friction_floor_below_all_three_of_the_papers_values():
    from robodyn.reproduce.chen2021 import CHEN_MOVING, CHEN_TABLE_3, friction_finding, friction_floors

    floors = friction_floors()
    assert floors["grid_75hz"] == pytest.approx(3.2828, abs=1e-4)
    assert floors["grid_200hz"] == pytest.approx(3.2797, abs=1e-4)
    paper = [float(v) for v in CHEN_TABLE_3["friction"].values()]
    assert max(floors["grid_75hz"], floors["grid_200hz"]) < min(paper)
    # on the spread grid 3.2883 lies below the floor: that grid is not the paper's either
    assert floors["linspace_with_end"] > min(paper)
    cells = {e: {"cond_scaled": 3.3061, "cond_raw": 7.0} for e in CHEN_MOVING}
    evidence = friction_finding(floors, cells).evidence
    assert "has 248 non-zero rows" in evidence and "has 248:" in evidence
    assert "249 rows" not in evidence and "fit 250 samples" not in evidence
    assert "75 Hz 3.2828" in evidence and "200 Hz 3.2797" in evidence


# --------------------------------------------------------------------------- Ni et al. 2024


def test_the_papers_budgets_state_a_population_for_wso_only():
    from robodyn.reproduce.ni2024 import NI_BUDGETS, equal_budget_table, paper_budgets_text

    assert NI_BUDGETS["wso"] == {"population": "150", "iterations": "3000"}
    assert NI_BUDGETS["pso"]["population"] is None and NI_BUDGETS["ga"]["population"] is None
    text = paper_budgets_text()
    assert "WSO 150 x 3000" in text and "PSO 800 iterations" in text and "GA 460 iterations" in text
    assert "populations not stated" in text and "150 x 800" not in text and "150 x 460" not in text
    title = equal_budget_table({}, {}, 120000, False).title
    assert "not stated" in title and "PSO 150 x 800" not in title


# --------------------------------------------------------------------------- Zhong et al. 2023


def _table(means: dict) -> dict:
    return {f: {m: {"mean": v} for m, v in row.items()} for f, row in means.items()}


def test_the_ranking_finding_places_icpso_as_printed_on_each_function_of_the_papers_claim():
    from robodyn.reproduce import zhong2023 as z

    assert z.ZHONG_ICPSO_BETTER == ("F1", "F2", "F3", "F4")
    means = {f: {"ICPSO": 1.0, "APSO": 2.0, "LPSO": 3.0, "PSO": 4.0} for f in z.ZHONG_ICPSO_BETTER}
    f = z.icpso_ranking_finding(_table(means), "cmd")
    assert f.kind == "reached" and "ranks first on every one" in f.evidence
    means["F4"] = {"ICPSO": 16.8, "APSO": 16.1, "LPSO": 10.8, "PSO": 16.9}
    means["F2"] = {"ICPSO": 1.5, "APSO": 1.0, "LPSO": 2.0, "PSO": 1.2}
    f = z.icpso_ranking_finding(_table(means), "cmd")
    assert f.kind == "not reached"
    assert "F4: ICPSO 16.8 against APSO 16.1, LPSO 10.8 (third of 3)" in f.evidence
    assert "F2: ICPSO 1.5 against APSO 1, LPSO 2 (second of 3)" in f.evidence
    assert "does not rank first on F2, F4" in f.evidence and "above plain PSO on F2" in f.evidence
    assert all(fn in f.claim for fn in z.ZHONG_ICPSO_BETTER)


def test_section_32_designs_with_icpso_as_printed_and_the_tuned_variant_beside_it():
    from robodyn.reproduce import zhong2023 as z

    printed, tuned = z.scara_design_options(False), z.scara_design_options(False, tuned=True)
    assert (printed.chaos_region, printed.chaos_acceptance) == ("box", "always")
    assert (tuned.chaos_region, tuned.chaos_acceptance) == ("best", "improve")
    assert printed.population == tuned.population == 50 and printed.iterations == tuned.iterations == 100
    assert z.scara_design_options(False, True, 37).iterations == 37


def test_the_network_rows_say_the_paper_made_its_torques_from_its_model_plus_a_disturbance():
    from robodyn.reproduce import zhong2023 as z

    assert origin_word(z.NN_PAPER_ORIGIN) == "own-model"
    assert "section 3.3" in z.NN_PAPER_ORIGIN and "disturbance d" in z.NN_PAPER_ORIGIN


def test_a_budget_is_spent_even_when_a_shorter_schedule_spends_less_per_iteration():
    from robodyn.reproduce.equal_budget import MAX_BUDGET_RETRIES, iterations_for_evaluations, spend_budget

    calls = []

    def run(its, stop):
        # spend per iteration grows with the schedule's length, as ICPSO's premature test does
        per = 50 + its // 2
        nfev = 50
        for _ in range(its):  # bounded by the schedule
            nfev += per
            if stop(type("P", (), {"nfev": nfev})()):
                break
        calls.append(its)
        return {"its": its}, nfev

    budget = 6000
    first = iterations_for_evaluations(50 + 100 * 100, 100, budget, 50)  # a pilot at 100 spent 100 per iteration
    assert first == 60
    result, nfev, its = spend_budget(run, first, budget, 50)
    assert budget <= nfev < budget + 50 + its // 2 + 1  # stopped in the iteration that reached it
    assert calls[0] == 60 and len(calls) <= MAX_BUDGET_RETRIES + 1 and result["its"] == its
    with pytest.raises(ValueError, match="budget"):
        iterations_for_evaluations(100, 1, 60, 50)


def test_every_method_of_the_equal_evaluation_table_spends_icpsos_evaluations_run_by_run():
    from robodyn.reproduce import zhong2023 as z

    out = z.icpso_equal_budget(runs=2, functions=("F1", "F4"))
    chaos = z.table2_options("icpso").chaos_steps
    for f in ("F1", "F4"):
        budget = out[f]["ICPSO"]["evaluations"]
        assert set(out[f]) >= {"ICPSO", z.ICPSO_TUNED_LABEL, "APSO", "LPSO", "PSO"}
        for m in (z.ICPSO_TUNED_LABEL, "APSO", "LPSO", "PSO"):
            for spent, b in zip(out[f][m]["evaluations"], budget):
                # the run stops in the iteration that reaches the budget: at most one iteration over,
                # one population plus M chaotic points for each of its particles
                assert b <= spent < b + 50 * (1 + chaos), (f, m, spent, b)
    assert z.COLUMN_HEADS["ICPSO"] == "ICPSO as printed"
    assert z.COLUMN_HEADS[z.ICPSO_TUNED_LABEL].endswith("(ablation)")
    assert z.ICPSO_TUNED_LABEL not in z.TABLE2_METHODS  # the equal-iteration table is the paper's comparison


def test_the_chaos_ablation_runs_every_reading_at_one_evaluation_budget():
    from robodyn.reproduce import zhong2023 as z

    assert z.ABLATION_EVALUATIONS == 50 * 101
    for extra in (z.ICPSO_AS_PRINTED, {}):
        r = z.run_benchmark("F2", "icpso", 2, options=z.table2_options("icpso", **extra),
                            evaluations=z.ABLATION_EVALUATIONS)
        assert r["evaluation_budget"] == z.ABLATION_EVALUATIONS
        assert all(z.ABLATION_EVALUATIONS <= n < z.ABLATION_EVALUATIONS + 550 for n in r["evaluations"]), r


# --------------------------------------------------------------------------- the UR10e walk-through


def _validation(value: float) -> dict:
    return {"relative_error_percent": np.full(6, value), "rmse_Nm": np.full(6, value / 10),
            "measured_rms_Nm": np.full(6, 5.0), "at_rest_fraction": 0.5}


def test_point_to_point_rows_name_the_logs_found_and_mark_a_partial_set():
    from robodyn.identification.datasets.ur10e import POINT_TO_POINT_LOGS
    from robodyn.reproduce.ur10e_walkthrough import point_to_point_rows

    one = {POINT_TO_POINT_LOGS[0]: _validation(113.7)}
    rows, details = point_to_point_rows(one, POINT_TO_POINT_LOGS, "ident.csv", "cmd")
    assert details["point_to_point_found"] == ["p1"] and len(details["point_to_point_missing"]) == 9
    assert rows[0].quantity.startswith("1 of the 10 point-to-point logs (p1)")
    assert "mean over logs" not in rows[0].quantity and "p1..p10" not in rows[0].origin
    assert "INCOMPLETE" in rows[0].note and "p2, p3" in rows[0].note and "INCOMPLETE" in rows[1].note
    two = {POINT_TO_POINT_LOGS[0]: _validation(10.0), POINT_TO_POINT_LOGS[4]: _validation(30.0)}
    rows, _ = point_to_point_rows(two, POINT_TO_POINT_LOGS, "ident.csv", "cmd")
    assert rows[0].quantity.startswith("2 of the 10 point-to-point logs (p1, p5)")
    assert rows[0].robodyn.split(" / ")[0] == "20.0"  # the mean of the two logs found
    every = {n: _validation(10.0) for n in POINT_TO_POINT_LOGS}
    rows, details = point_to_point_rows(every, POINT_TO_POINT_LOGS, "ident.csv", "cmd")
    assert "INCOMPLETE" not in rows[0].note and details["point_to_point_missing"] == []
    assert rows[0].quantity.startswith("10 of the 10")
    assert point_to_point_rows({}, POINT_TO_POINT_LOGS, "ident.csv", "cmd")[0] == []


# --------------------------------------------------------------------------- Li et al. 2023


def _heavy_report(reduction: float) -> dict:
    t5 = {"true": {"max_reduction": reduction}}
    sag = {"total": {"max_mm": 1.0}, "bending": {"max_mm": 0.5}}
    return {"table5_mm": {"no_load": t5, "loaded": t5},
            "table4_mm": {"no_load": {"held_out_true": {"combined": {"mean_mm": 0.1}}}},
            "gravity_sag_held_out_mm": {"no_load": sag},
            # joint 4's compliance within two standard errors of zero: unidentifiable on the heavy arm
            "joint_stiffness": [{"joint": 4, "compliance_rad_per_Nm": 1e-9, "compliance_std": 1e-7, "identified": True}]}


@pytest.mark.parametrize("reduction", [0.99, 0.5])
def test_the_heavy_arm_is_an_ablation_whichever_way_its_numbers_come_out(reduction):
    from robodyn.reproduce import li2023

    rep = Reproduction("calibration", "")
    li2023._heavy_findings(rep, _heavy_report(reduction), "cmd")
    assert [f.kind for f in rep.findings] == ["ablation", "ablation"]
    assert "not on the paper's UR5" in rep.findings[0].reason
    assert li2023.HEAVY_TABLE_PREFIX.startswith("Ablation")
