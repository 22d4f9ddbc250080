"""`robodyn validate` and `predict` warn, one line per joint, when the evaluated data leave what the
identification saw; `identify --holdout` takes recordings, never a fraction.

Data: the two-link arm of test_identify_methods (Fourier excitation, RNEA + Stribeck friction +
noise, 200 Hz CSV). The out-of-range run is the identification run with joint 2's position moved
3 rad beyond anything identified for its second half: joint 2 leaves the range on about half of
its samples, joint 1's signals are untouched."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robodyn.cli import main
from tests.commands.test_identify_methods import write_recordings


@pytest.fixture(scope="module")
def identified(tmp_path_factory):
    directory = tmp_path_factory.mktemp("coverage")
    ident, held = write_recordings(directory)
    result = directory / "r.json"
    assert main(["identify", str(ident), "--robot", "twolink", "--cutoff", "8", "--out", str(result),
                 "--json"]) == 0
    data = np.loadtxt(ident, delimiter=",", skiprows=1)
    half = data.shape[0] // 2
    data[half:, 2] += np.ptp(data[:, 2]) + 3.0
    moved = directory / "moved.csv"
    np.savetxt(moved, data, delimiter=",", header="t,q1,q2,tau1,tau2", comments="", fmt="%.10g")
    return ident, held, moved, result, half / data.shape[0]


def test_the_result_stores_what_the_fit_saw(identified):
    _, _, _, result, _ = identified
    cov = json.loads(result.read_text())["coverage"]
    assert [j["joint"] for j in cov["joints"]] == ["joint1", "joint2"]
    for j in cov["joints"]:
        assert all(j[k][0] < j[k][1] for k in ("q", "qd", "qdd", "tau"))
        assert j["moving_positive_fraction"] > 0.1 and j["moving_negative_fraction"] > 0.1


def test_data_inside_the_range_give_no_warning(identified, capsys):
    ident, _, _, result, _ = identified
    capsys.readouterr()
    assert main(["validate", str(result), str(ident), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["coverage_warnings"] == []


def test_leaving_the_range_warns_per_joint_with_the_fraction_outside(identified, tmp_path, capsys):
    _, _, moved, result, fraction = identified
    capsys.readouterr()
    assert main(["validate", str(result), str(moved), "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["coverage_warnings"]
    assert [w["joint"] for w in warnings] == ["joint2"]
    # the position step is filtered, so a few samples around it fall back inside the range
    assert warnings[0]["outside"]["q"]["fraction"] == pytest.approx(fraction, abs=0.02)
    assert main(["predict", str(result), str(moved), "--out", str(tmp_path / "p.csv")]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("warning: joint joint2:") and "outside the identified range" in lines[0]
    assert main(["predict", str(result), str(moved), "--out", str(tmp_path / "p.csv"), "--json"]) == 0
    assert [w["joint"] for w in json.loads(capsys.readouterr().out)["coverage_warnings"]] == ["joint2"]


def test_holdout_names_a_recording_and_refuses_a_fraction(identified, tmp_path, capsys):
    ident, held, _, _, _ = identified
    out = tmp_path / "h.json"
    assert main(["identify", str(ident), "--robot", "twolink", "--cutoff", "8", "--holdout", str(held),
                 "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["metrics"]["held_out"]["recordings"] == [str(held)] and doc["metrics"]["held_out"]["rmse_sum"] > 0
    capsys.readouterr()
    assert main(["identify", str(ident), "--robot", "twolink", "--select", "--holdout", "0.25"]) == 2
    assert "--holdout" in capsys.readouterr().err
    assert main(["identify", str(ident), "--robot", "twolink", "--folds", "3"]) == 2
    assert "--folds" in capsys.readouterr().err
