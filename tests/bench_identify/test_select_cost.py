"""bench/identify/select_cost.py on a short recording of the identify bench's generator: the medians
are those of the runs listed, the ratios are the medians', what a fold keeps is selection's own
count, a length --select refuses for memory is said in its one line with the default still timed,
and bad lengths get one line."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "identify"
sys.path.insert(0, str(BENCH))

import select_cost  # noqa: E402


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return select_cost.recording(tmp_path_factory.mktemp("select_cost"), 8.0, 250.0)


def test_medians_ratios_and_what_a_fold_keeps(recording):
    from robodyn.identification import fold_budget

    row = select_cost.measure(recording, runs=3)
    assert (row["fit_samples"], row["held_samples"]) == (1200, 800)  # 8 s at 250 Hz, the first 60 %
    for name in ("default", "selected"):
        runs = row[name]["runs"]
        assert len(runs) == 3
        assert row[name]["seconds"] == statistics.median(r["seconds"] for r in runs)
        assert row[name]["cpu_seconds"] == statistics.median(r["cpu_seconds"] for r in runs)
    assert row["time_vs_default"] == round(row["selected"]["seconds"] / row["default"]["seconds"], 3)
    assert row["cpu_time_vs_default"] == round(row["selected"]["cpu_seconds"] / row["default"]["cpu_seconds"], 3)
    # 5 contiguous blocks of 1200 samples hold out 240 each: a fold fits 960 samples of 7 joints x 105 columns
    assert row["thinning"] == 1  # far below fold_budget.SELECTION_SAMPLES
    assert row["fold_memory_counted"] == "960 fit samples x 7 joints x 105 columns x 8 bytes"
    assert row["fold_memory_mib"] == round(960 * 7 * 105 * 8 / 2**20, 1)
    assert row["folds_at_once"] == fold_budget.fold_workers(5, 960 * 7 * 105 * 8, fold_budget.available_memory())
    assert "selected_refused" not in row


def test_a_length_select_refuses_is_said_and_the_default_still_timed(recording, monkeypatch):
    from robodyn.identification import fold_budget

    monkeypatch.setattr(fold_budget, "available_memory", lambda: 1 << 20)
    row = select_cost.measure(recording, runs=2)
    assert row["selected_refused"].startswith("select: a fold keeps its fit samples' regressor rows")
    assert "selected" not in row and "time_vs_default" not in row
    assert len(row["default"]["runs"]) == 2


def test_main_writes_one_row_per_length(recording, tmp_path, monkeypatch):
    monkeypatch.setattr(select_cost, "recording", lambda data_dir, seconds, rate: recording)
    out = tmp_path / "cost.json"
    assert select_cost.main(["--seconds", "8,8", "--rate", "250", "--runs", "1", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [r["seconds"] for r in report["lengths"]] == [8.0, 8.0] and report["runs"] == 1
    assert len(report["host"]["loadavg_start"]) == 3


@pytest.mark.parametrize("argv, line", [
    (["--seconds", "60,x"], "select_cost: --seconds: expected comma-separated numbers, got '60,x'"),
    (["--seconds", "60,0"], "select_cost: --runs and every --seconds must be positive"),
])
def test_bad_lengths_get_one_line_and_nothing_written(argv, line, tmp_path, capsys):
    out = tmp_path / "cost.json"
    assert select_cost.main(argv + ["--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == line
    assert not out.exists()
