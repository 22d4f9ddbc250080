"""bench/realdata/select_thinning.py: the thinning it forces is the one asked for, and what it
reports of the candidates' scores is measured from the two tables.

Data: the UR-like realistic plant (identification/realistic_logs.py: a simulated plant unlike the
model), standing in for a real split so that the script runs without the corpus."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "realdata"
sys.path.insert(0, str(BENCH))

import select_thinning  # noqa: E402


@pytest.fixture(scope="module")
def split():
    from robodyn.identification.realistic_logs import realistic_log
    from robodyn.robot.loader import load_model

    data = realistic_log("ur", 2, duration=6.0).data
    cut = int(0.6 * data.count)
    return load_model("ur5e"), data.select(slice(0, cut)), data.select(slice(cut, data.count))


def test_the_cap_thins_the_largest_fold_by_exactly_k(split):
    from robodyn.identification import fold_budget
    from robodyn.identification.folds import FOLDS, cross_validation_folds
    from robodyn.identification.pipeline import IdentificationConfig

    _, fit, _ = split
    plan = cross_validation_folds([fit], FOLDS)[0]
    for k in (2, 3, 4, 8):
        saved = fold_budget.SELECTION_SAMPLES
        fold_budget.SELECTION_SAMPLES = select_thinning.fold_cap(fit, k)
        try:
            assert fold_budget.selection_thinning(plan, IdentificationConfig()) == k
        finally:
            fold_budget.SELECTION_SAMPLES = saved


def test_moved_is_measured_from_both_tables():
    whole = {"candidates": {"a": (2.0, 0.1), "b": (4.0, 0.0), "c": (1.0, 0.5), "d": (None, None)}}
    thinned = {"candidates": {"a": (2.1, 0.1), "b": (3.0, 0.0), "d": (5.0, 1.0)}}  # c failed when thinned
    got = select_thinning.moved(whole, thinned)
    assert got == {"mean_moved_relative_max": 0.25, "mean_moved_relative_median": 0.15,
                   "mean_moved_in_standard_errors_max": 1.0}  # b has no standard error: not in units of it


def test_main_reports_each_thinning_against_every_sample(split, tmp_path, monkeypatch):
    model, fit, held = split
    monkeypatch.setattr(select_thinning.loro_choice, "splits",
                        lambda corpus_only, cache: iter([("plant", "time", model, fit, held, ())]))
    out = tmp_path / "thinning.json"
    assert select_thinning.main(["--every", "2,3", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    [row] = doc["splits"]
    assert [t["every"] for t in row["thinned"]] == [2, 3] and row["fit_samples"] == fit.count
    assert [t["fold_fit_samples"] for t in row["thinned"]] == [-(-row["largest_fold_fit"] // k) for k in (2, 3)]
    moved = [abs(t["held_out_rmse_sum"] / row["held_out_rmse_sum"] - 1) * 100 for t in row["thinned"]]
    assert doc["held_out_moved_percent_max"] == round(max(moved), 2)
    assert doc["choice_changed_at_fold_fit_samples"] == sorted(t["fold_fit_samples"] for t in row["thinned"]
                                                               if not t["same_choice"])
    for t in row["thinned"]:
        assert t["same_choice"] == (t["chosen"] == row["chosen"])
        assert t["mean_moved_relative_max"] >= t["mean_moved_relative_median"] >= 0.0
    assert doc["same_choice"] == {str(t["every"]): int(t["same_choice"]) for t in row["thinned"]}


@pytest.mark.parametrize("every", ["2,x", "1,2", "2,-3", ""])
def test_bad_thinnings_get_one_line_and_nothing_written(every, tmp_path, capsys):
    out = tmp_path / "thinning.json"
    assert select_thinning.main(["--every", every, "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == ("select_thinning: --every: expected comma-separated whole numbers of "
                                               f"at least 2, got {every!r}")
    assert not out.exists()
