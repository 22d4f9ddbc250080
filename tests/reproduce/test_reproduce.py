"""`robodyn reproduce PAPER`, the Table-4 comparison on real TX40 data, and the plant hook of `compare`."""

import json
from pathlib import Path

import numpy as np
import pytest

from robodyn import reproduce as R
from robodyn.identification import comparison
from robodyn.identification import comparison_data as cd
from robodyn.papers import cite

TX40 = Path(__file__).resolve().parents[1] / "data" / "staubli_tx40"


def test_reproduce_ur10e_prints_the_table_with_a_command_behind_every_number(tmp_path, capsys):
    from robodyn.cli import main

    out = tmp_path / "ur10e.json"
    assert main(["reproduce", "ur10e", "--quick", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Mamedov Shamil, Mikhel Stanislav (2020)" in text and "seed 00" not in text
    doc = json.loads(out.read_text())
    rows = [r for t in doc["tables"] for r in t["rows"]]
    assert all(r["command"] for r in rows)
    counts = {r["quantity"]: r for r in rows}
    assert counts["standard parameters"]["paper"] == counts["standard parameters"]["robodyn"] == 70
    assert counts["base parameters"]["paper"] == counts["base parameters"]["robodyn"] == 43
    # the walk-through's < 0.001 N.m, with torques from an independent library and differentiated positions
    assert counts["torque error, identification trajectory, max (N.m)"]["robodyn"] < 1e-3
    assert doc["findings"] and all(f["reason"] and f["evidence"] for f in doc["findings"])


def test_every_paper_is_reproducible_and_cited_by_authors():
    assert set(R.REPRODUCERS) == set(R.PAPER_KEYS) == {"wso", "stepwise", "icpso", "ur10e", "calibration"}
    rep = R.Reproduction("icpso", "setup", [R.Table("t", [R.Row("x", 1.0, 2.0, "cmd")])],
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
    assert rows["wso"]["fitness"] < rows["pso"]["fitness"] and rows["wso"]["fitness"] < rows["ga"]["fitness"]
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
    assert "inverse crime" in capsys.readouterr().out and json.loads(out.read_text())["inverse_crime"] is True
    assert main(args + ["--plant", "test-friction", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["inverse_crime"] is False and "unmodelled" in doc["plant"]
    assert main(args + ["--plant", "nonexistent"]) == 2
