"""Every marked figure in README.md and docs/*.md equals the committed output of the command named
beside it, and no new unmarked figure appears (bench/docs_figures.py explains the markers)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("docs_figures", ROOT / "bench" / "docs_figures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["docs_figures"] = module
    spec.loader.exec_module(module)
    return module


figures = _load()


def test_every_marked_figure_matches_its_committed_json():
    report = figures.check()
    assert report.checked > 50, "the docs lost their markers"
    assert not report.problems, "figures that disagree with their command's JSON:\n" + "\n".join(
        map(str, report.problems))


def test_no_new_unmarked_figure_and_no_stale_baseline():
    new, gone = figures.baseline_diff()
    msg = []
    if new:
        msg.append("unmarked figures (add `<!-- fig SOURCE PATH -->` after each, see bench/docs_figures.py):")
        msg += [f"  {f}:{i}: {n}   ... {c}" for f, i, n, c in new]
    if gone:
        msg.append("listed in tests/docs/unmarked_figures.txt but gone (bench/docs_figures.py --update-baseline):")
        msg += [f"  {k}" for k in gone]
    assert not msg, "\n".join(msg)


def test_every_source_names_a_command_and_committed_json():
    for name, src in figures.SOURCES.items():
        assert src.command.split()[0] in ("python", "robodyn"), name
        assert (ROOT / src.json).exists(), f"{name}: {src.json} is not committed (run `{src.command}`)"
        assert src.rerun_minutes is not None or src.why_not, f"{name}: say why docs-check does not rerun it"


# ---------------------------------------------------------------- the checker catches what it must

def _docs(tmp_path: Path, text: str, data: dict) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(text)
    for src in figures.SOURCES.values():
        p = tmp_path / src.json
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(data))
    return tmp_path


@pytest.mark.parametrize("printed, value, ok", [
    ("20.22", 20.219101, True), ("20.22", 20.226, False), ("18.00", 17.99993, True), ("4e-8", 4.4e-8, True),
    ("4e-8", 3.4e-8, False), ("10.4", 10.46, False), ("43", 43, True), ("43", 44, False),
    ("6.4e-14", 6.43e-14, True), ("−0.2", -0.2, True), ("34 000", 34_000.3, True), ("34 000", 33_990, False), ("1.12", 1.1249, True)])
def test_rounding_as_printed(printed, value, ok):
    assert figures.agrees(printed, value) is ok


def test_a_ratio_written_with_x_is_read_whole(tmp_path):
    root = _docs(tmp_path, "speedup **1.20x**<!-- fig scaleout a -->, 0.66x<!-- fig scaleout b -->\n", {"a": 1.6, "b": 0.66})
    problems = figures.check(root).problems
    assert len(problems) == 1 and problems[0].text.startswith("1.20 but")


def test_a_stale_figure_is_reported_with_its_command(tmp_path):
    data = {"runs": [{"robot": "ur5", "t": 9.0}, {"robot": "panda", "t": 22.46, "mb": 1150.0}]}
    root = _docs(tmp_path, "OLS in 22.5 s<!-- fig identify runs[robot=panda].t --> and "
                           "1.12 GB<!-- fig identify {runs[1].mb} / 1024 -->; 9.5 s<!-- fig identify runs[0].t -->\n",
                 data)
    report = figures.check(root)
    assert report.checked == 3
    assert len(report.problems) == 1 and "9.5" in report.problems[0].text
    assert "python bench/identify/run.py" in report.problems[0].text


def test_timing_figures_are_not_compared_after_a_rerun(tmp_path):
    root = _docs(tmp_path, "took 3.0 s<!-- fig~ regressor t -->\n", {"t": 3.0})
    assert not figures.check(root).problems
    assert not figures.check(root, json_override={"regressor": {"t": 5.0}}, timing=False).problems
    assert figures.check(root, json_override={"regressor": {"t": 5.0}}).problems


def test_a_bound_holds_the_value_below_it(tmp_path):
    root = _docs(tmp_path, "agree to 1e-13<!-- fig< consistent a -->, and to 1e-14<!-- fig< consistent b -->\n",
                 {"a": 7.1e-14, "b": 1.7e-14})
    problems = figures.check(root).problems
    assert len(problems) == 1 and problems[0].text.startswith("bound 1e-14")


def test_table_rows_and_includes_are_checked(tmp_path):
    data = {"rows": [{"v": 3.482}, {"v": "2.423 / 3.738"}]}
    text = ("<!-- table papers rows column=robodyn field=v -->\n\n| q | robodyn |\n|---|---|\n| a | 3.482 |\n"
            "| b | 2.423 / 3.739 |\n\n<!-- include bench/x.md -->\n| j | 1.0 |\n<!-- end include -->\n")
    root = _docs(tmp_path, text, data)
    (root / "bench" / "x.md").write_text("head\n| j | 1.5 |\n")
    problems = [p.text for p in figures.check(root).problems]
    assert len(problems) == 2
    assert any("row 2" in p for p in problems) and any("differs from bench/x.md" in p for p in problems)


def test_bullets_rendered_from_findings_are_checked(tmp_path):
    data = {"f": [{"claim": "cond 4.26", "evidence": "minimum 19.97 at 0.995"}, {"claim": "F1 10.9", "evidence": "1.77"}]}
    text = ("<!-- list papers f fields=claim,evidence -->\n\n- **cond 4.26**: minimum 19.97 at 0.995. `cmd 3`\n"
            "- **F1 10.9**: 1.78\n")
    problems = figures.check(_docs(tmp_path, text, data)).problems
    assert len(problems) == 1 and problems[0].line == 4


def test_unmarked_measurements_are_found_and_constants_allowed(tmp_path):
    root = _docs(tmp_path, "Measured: 0.79 µs per sample, 12 % faster, recorded at 1 kHz in 2024 (eq. 14).\n"
                           "The RMSE is 1.2 N·m<!-- fig tx40 a -->; order 8<!-- const --> design.\n"
                           "```\nmeasured 3.3 s\n```\n", {"a": 1.2})
    found = [(n, line) for _, line, n, _ in figures.unmarked(root)]
    assert found == [("0.79", 1), ("12", 1)]


def test_every_cited_file_and_test_exists():
    missing = figures.dangling()
    assert not missing, "README.md, docs/*.md or bench/ cite what does not exist:\n" + "\n".join(map(str, missing))
