"""bench/realdata/select_command_cost.py: farm-bench's report read into figures (every row it needs,
medians and spread), a report without one of them refused in one line, and no farm-bench on PATH
said in one line with nothing written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "realdata"
sys.path.insert(0, str(BENCH))

import select_command_cost  # noqa: E402

REPORT = """farm-bench 3 | 2026-12-07, 2c/24GiB | AMD EPYC | not pinned (no --pin CPUS) | quote the median
                     min      median         max   n: A 5, B 5; whole process
A user s           5.100       5.200       5.900
A cpu s            5.300       5.400       6.000
A wall s           4.900       5.000       5.500
A peak MiB         610.0       612.5       620.0
B cpu s            3.300       3.400       3.900
B wall s           3.000       3.100       3.300
B peak MiB         500.0       501.0       505.5
A/B cpu           1.5000      1.5882      1.7000
A/B wall          1.5500      1.6129      1.7500
"""


def test_the_report_s_medians_and_spread_are_read_row_by_row():
    figures = select_command_cost.parse(REPORT)
    assert figures["select_wall_s"] == {"min": 4.9, "median": 5.0, "max": 5.5}
    assert figures["default_wall_s"]["median"] == 3.1 and figures["default_cpu_s"]["median"] == 3.4
    assert figures["wall_ratio"]["median"] == 1.6129 and figures["cpu_ratio"]["max"] == 1.7
    assert figures["select_peak_mib"]["median"] == 612.5 and figures["default_peak_mib"]["min"] == 500.0
    assert set(figures) == set(select_command_cost.ROWS.values())


def test_a_report_without_a_row_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"^farm-bench's report has no row for wall_ratio$"):
        select_command_cost.parse(REPORT.replace("A/B wall", "A/B nothing"))


def test_without_farm_bench_one_line_and_nothing_written(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(select_command_cost.shutil, "which", lambda name: None)
    out = tmp_path / "cost.json"
    assert select_command_cost.main(["--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == "select_command_cost: farm-bench is not on PATH; nothing measured"
    assert not out.exists()
