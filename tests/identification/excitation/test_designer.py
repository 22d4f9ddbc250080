"""End-to-end design on the small paper robots, proofs with the daemon's validator, and
infeasible requests that must name the constraint."""

import json

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.identification import optimizers as opt
from robodyn.identification.excitation import (CartesianLimits, DesignRequest, InfeasibleDesign, design_excitation,
                                               excitation_metrics)
from robodyn.identification.regressor import ColumnSpec
from robodyn.limits import check_trajectory
from robodyn.robot.loader import load_model
from robodyn.trajectory import load_trajectory


@pytest.fixture(scope="module")
def scara():
    return load_model("scara")


def quick_scara(**kw):
    base = dict(family="fourier-poly", wf=0.2, harmonics=5, optimizer="icpso", columns=ColumnSpec(),
                objective="cond_scaled", options=opt.ICPSOOptions(population=20, iterations=30, target=1.0),
                start=np.zeros(3), seed=3)
    base.update(kw)
    return DesignRequest(**base)


def test_scara_design_is_well_conditioned_and_within_limits(scara):
    r = design_excitation(scara, quick_scara())
    assert r.metrics["cond_scaled"] < 1.2  # Zhong et al. 2023 reports 1.0039; a short run gets close
    assert check_trajectory(scara, r.trajectory, rate_hz=500).ok
    q0 = r.trajectory.evaluate(np.array([0.0]))[0][0]
    assert np.allclose(q0, 0.0)  # the fixed start q_sf
    # the reported criterion is the trajectory's own, recomputed from its samples
    t, q, qd, qdd, _ = r.trajectory.sample(100.0)
    m = excitation_metrics(scara, ColumnSpec(), q[:-1], qd[:-1], qdd[:-1])
    assert m["cond_scaled"] == pytest.approx(r.metrics["cond_scaled"], rel=1e-6)


def test_optimising_beats_a_random_feasible_trajectory(scara):
    short = design_excitation(scara, quick_scara(options=opt.ICPSOOptions(population=4, iterations=1, target=1.0)))
    longer = design_excitation(scara, quick_scara())
    assert longer.metrics["cond_scaled"] < short.metrics["cond_scaled"]


def test_twolink_periodic_polynomial_with_ga():
    model = load_model("twolink")
    req = DesignRequest(family="poly", period=5.0, order=10, optimizer="ga", columns=ColumnSpec(),
                        objective="cond_scaled", options=opt.GAOptions(generations=40), grid=100, seed=0)
    r = design_excitation(model, req)
    assert r.limit_report["ok"] and r.trajectory.family == "periodic_poly"
    assert r.metrics["rank"] == r.metrics["base_parameters"]
    _, qd, qdd, jerk = r.trajectory.evaluate(np.array([0.0, 5.0]))
    assert np.allclose(np.hstack([qd, qdd, jerk]), 0, atol=1e-9)  # Chen et al. 2021 eq. 18


def test_cartesian_floor_is_kept_or_reported(scara):
    panda = load_model("panda")
    req = DesignRequest(wf=0.6, harmonics=3, grid=60, options=opt.SLSQPOptions(max_iter=15, box_constraints=False),
                        cartesian=CartesianLimits(floor_z=0.3), seed=1)
    r = design_excitation(panda, req)
    from robodyn.robot.kinematics import forward_kinematics

    _, q, *_ = r.trajectory.sample(50.0)
    assert forward_kinematics(panda, q)[:, 2, 3].min() >= 0.3 - 1e-3
    with pytest.raises(InfeasibleDesign) as err:
        design_excitation(panda, DesignRequest(wf=0.6, harmonics=3, grid=60, optimizer="pso",
                                               options=opt.PSOOptions(population=10, iterations=5),
                                               cartesian=CartesianLimits(floor_z=2.0)))
    assert err.value.report[0]["constraint"] == "cartesian_floor"


def test_infeasible_start_and_torque_are_named(scara):
    with pytest.raises(InfeasibleDesign) as err:
        design_excitation(scara, quick_scara(start=np.array([0.0, 0.0, 0.5])))
    assert err.value.report[0]["constraint"] == "start_position" and err.value.report[0]["joint"] == "joint3"
    # the quill must hold m3 g = 9.7 N against gravity: a 1 N limit cannot be met by any motion
    weak = scara.__class__(**{**scara.__dict__, "tau_max": np.array([20.0, 10.0, 1.0])})
    with pytest.raises(InfeasibleDesign) as err:
        design_excitation(weak, quick_scara(torque_limits=True))
    assert any(r["constraint"] == "tau_max" and r["joint"] == "joint3" for r in err.value.report)


def test_cli_design_check_sample_plot(tmp_path, capsys):
    out = tmp_path / "traj.json"
    code = main(["excitation", "design", "--robot", "scara", "--family", "fourier-poly", "--harmonics", "5",
                 "--wf", "0.2", "--optimizer", "icpso", "--objective", "cond-scaled", "--friction", "none",
                 "--iterations", "10", "--population", "10", "--start", "0,0,0", "--out", str(out), "--json",
                 "--quiet"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and doc["objective_optimised"] == "cond_scaled" and doc["limits_ok"]
    assert {"cond_raw", "cond_scaled", "logdet"} <= set(doc["criteria"])
    traj = load_trajectory(out)
    assert traj.family == "fourier_poly" and traj.dof == 3

    assert main(["excitation", "check", str(out), "--robot", "scara", "--json", "--friction", "none"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["excitation"]["cond_scaled"] == pytest.approx(doc["criteria"]["cond_scaled"],
                                                                                 rel=1e-3)
    csv = tmp_path / "s.csv"
    assert main(["excitation", "sample", str(out), "--rate", "50", "--out", str(csv)]) == 0
    header = csv.read_text().splitlines()[0].split(",")
    assert header == ["t", "q1", "q2", "q3", "qd1", "qd2", "qd3", "qdd1", "qdd2", "qdd3"]
    data = np.loadtxt(csv, delimiter=",", skiprows=1)
    assert data.shape == (int(traj.duration * 50) + 1, 10)
    png = tmp_path / "t.png"
    assert main(["excitation", "plot", str(out), "--out", str(png), "--robot", "scara"]) == 0
    assert png.stat().st_size > 10_000
    capsys.readouterr()
    assert main(["excitation", "design", "--robot", "scara", "--harmonics", "0", "--out", str(out)]) == 2
    assert "harmonics" in capsys.readouterr().err
    assert main(["excitation", "design", "--robot", "scara", "--family", "poly", "--period", "5", "--start",
                 "3,0,0", "--out", str(out), "--quiet"]) == 1
    assert "start_position" in capsys.readouterr().err
