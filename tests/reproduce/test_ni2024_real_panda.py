"""`robodyn reproduce wso --part real_panda` without the real Panda log (GPL-3.0, never shipped): the
one-line refusals, and the wiring on a log written here in the log's layout from a known model."""

import numpy as np
import pytest

from robodyn.reproduce import ni2024 as N
from robodyn.reproduce import ni2024_real_panda as P


def test_without_the_log_the_command_says_how_to_get_it_in_one_line(monkeypatch, capsys):
    from robodyn.cli import main

    monkeypatch.delenv(P.DATA_ENV, raising=False)
    assert main(["reproduce", "wso", "--part", "real_panda"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "git clone https://github.com/marcocognetti/FrankaEmikaPandaDynModel" in err
    assert "--data-dir" in err and P.DATA_ENV in err


def test_only_part_real_panda_of_wso_takes_a_data_directory():
    with pytest.raises(ValueError, match="data-dir: only part real_panda"):
        N.reproduce_wso(quick=True, part="table4", data_dir="x")


def test_a_folder_without_the_log_is_refused_before_any_part_runs(tmp_path, monkeypatch):
    from robodyn.errors import UserError

    ran = []
    monkeypatch.setattr(N, "_table4", lambda rep, quick: ran.append("table4"))
    with pytest.raises(UserError, match="lacks exciting_traj_time.txt"):
        N.reproduce_wso(quick=True, data_dir=str(tmp_path))
    assert ran == []


def _write_log(folder, seconds=10.0, rate=1000.0):
    """A log in the layout of Gaz et al.'s rbt_log folder whose torques are the Panda model's own, with
    viscous, Coulomb and offset friction: an inverse crime by construction, so it checks wiring only."""
    from robodyn.identification.regressor import ColumnSpec, regressor, standard_parameter_vector
    from robodyn.robot.loader import load_model

    model = load_model("panda")
    spec = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))
    theta = standard_parameter_vector(model, spec, friction={"viscous": np.full(7, 0.5), "coulomb": np.full(7, 0.4),
                                                             "offset": np.full(7, 0.05)})
    t = np.arange(int(seconds * rate)) / rate
    # five harmonics of 0.5 Hz: the identified first 60 % holds whole periods, so the held-out part
    # repeats motion the fit saw and every base parameter's effect on it is determined
    rng = np.random.default_rng(3)
    k = np.arange(1, 6)[:, None]
    a = rng.normal(0.0, 0.25, size=(5, 7)) / k
    w = 2 * np.pi * 0.5 * k
    centre = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8])
    q = centre + (a * np.sin(w * t[:, None, None])).sum(axis=1)
    qd = (a * w * np.cos(w * t[:, None, None])).sum(axis=1)
    qdd = (-a * w * w * np.sin(w * t[:, None, None])).sum(axis=1)
    tau = (regressor(model, q, qd, qdd, spec) @ theta).reshape(q.shape)
    np.savetxt(folder / "exciting_traj_time.txt", t)
    for name, values in (("positions", q), ("velocity", qd), ("torques", tau)):
        np.savetxt(folder / f"exciting_traj_{name}.txt", values)
    return tau


def test_on_a_log_made_from_a_known_model_every_optimiser_ends_at_or_above_the_ols_minimum(tmp_path):
    from robodyn.reproduce.report import origin_word

    tau = _write_log(tmp_path)
    rep = N.reproduce_wso(quick=True, part="real_panda", data_dir=str(tmp_path))
    details = rep.details["real_panda"]
    rows = {r["method"]: r for r in details["paper_budgets"]["rows"]}
    # the closed form is eq. 14's global minimum: no optimiser ends below it
    assert all(rows[m]["fitness"] >= rows["ols"]["fitness"] * (1 - 1e-9) for m in ("wso", "pso", "ga"))
    study = details["equal_budget"]
    assert all(study["methods"][m]["fitness"]["min"] >= study["ols_fitness"] * (1 - 1e-9) for m in ("wso", "pso", "ga"))
    # the known model's torques come back on the held-out 40 % (the processing's filter costs a little)
    scale = float(np.sum(np.sqrt(np.mean(tau ** 2, axis=0))))
    assert rows["ols"]["heldout_sum"] < 0.05 * scale, (rows["ols"]["heldout_sum"], scale)
    # the last 40 % by time is held out
    (a, b), (c, d) = details["log"]["identification_s"], details["log"]["held_out_s"]
    assert a == 0.0 and b < c and abs(c - 0.6 * 9.999) < 2e-3 and d == pytest.approx(9.999)
    tables = [t for t in rep.tables if "real Franka Panda" in t.title or "real Panda" in t.title]
    assert len(tables) == 2 and all(origin_word(r.origin) == "real" for t in tables for r in t.rows)
    per_joint = [r for r in tables[0].rows if "joint" in r.quantity]
    assert [r.paper for r in per_joint] == [v for m in ("wso", "pso", "ga") for v in N.NI_TABLE_4[m]]
    assert details["log"]["samples"] == tau.shape[0]
