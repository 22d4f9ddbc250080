"""Every line calibrate prints is true: robust losses say what they down-weighted (and fail when they
set the data aside), a change for the worse is called worse, lumped mode prints no per-joint
stiffness, revolute angles are compared modulo 2π, a CSV that names no target is asked to, the
unknown-model error lists every accepted name, and `calibrate advise` names the model the data support.

Data: the simulated UR5 of Li et al. 2023 (calibration/simulation.py, the model's own physics:
only the messages are judged on it) and the heavy-arm plant (calibration/heavy_arm.py: true masses
off the model's, bending links, a joint tilt beyond DH, AT960-class noise; seeded) on its
single-axis sweep plan, written as 3-SMR CSVs in the tracker's frame. The "no sag" arm is the same
plant with joints and links a million times stiffer."""

import json
from pathlib import Path

import numpy as np
import pytest

from robodyn.calibration.advice import GAIN_STANDARD_ERRORS, GEOMETRIC, LUMPED, advise, without_masses
from robodyn.calibration.heavy_arm import NEST, HeavyArmPlant, HeavyArmTruth, sweep_plan
from robodyn.calibration.measurement_csv import measurement_frame, write_measurements_csv
from robodyn.calibration.measurements import MeasurementSet
from robodyn.calibration.methods import calibrate
from robodyn.calibration.parameters import Target, geometric_model, preset_free_names
from robodyn.calibration.planning import sample_poses
from robodyn.calibration.robots import DATA_DIR, load_robot
from robodyn.calibration.simulation import measure_poses, ur5_li2023_cell
from robodyn.cli import main

STIFF = dict(stiffness=(1e13,) * 6, bending_EI=((2, 1e16), (4, 1e16)))  # no sag: joints and links rigid


def run(capsys, *argv):
    code = main(["calibrate", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def massless_model_file(path: Path) -> Path:
    """heavy6.toml without its [joints.link] tables: the arm as a lab without mass data has it (its
    model name stays heavy6)."""
    out, skip = [], False
    for line in (DATA_DIR / "heavy6.toml").read_text().splitlines():
        if line.startswith("["):
            skip = line.strip() == "[joints.link]"
        if not skip:
            out.append(line)
    path.write_text("\n".join(out) + "\n")
    return path


def heavy_sets(truth: HeavyArmTruth):
    """(identification set, held-out set) of the plant on the sweep plan, in the tracker's frame."""
    robot = load_robot("heavy6")
    plant = HeavyArmPlant(robot, truth)
    jm = robot.joint_map
    q_id, q_held = sweep_plan()
    ident = MeasurementSet(jm.to_model(q_id), plant.points(q_id), q_controller=q_id)
    held = MeasurementSet(jm.to_model(q_held), plant.points(q_held), q_controller=q_held)
    return robot, ident, held


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    d = tmp_path_factory.mktemp("heavy")
    robot, ident, held = heavy_sets(HeavyArmTruth(seed=0))
    targets = [Target(n, o) for n, o in NEST]
    write_measurements_csv(d / "sweeps.csv", ident, robot="heavy6", targets=targets, note="heavy-arm plant, seed 0")
    write_measurements_csv(d / "held.csv", held, robot="heavy6", targets=targets)
    text = (d / "held.csv").read_text().splitlines()
    (d / "held_no_targets.csv").write_text("\n".join(l for l in text if not l.startswith("# targets")) + "\n")
    model = massless_model_file(d / "heavy6_without_masses.toml")
    return d, model


@pytest.fixture(scope="module")
def ur5(tmp_path_factory, ur5_robot, ur5_setup, ur5_cube):
    d = tmp_path_factory.mktemp("ur5")
    cube, q_ref = ur5_cube
    q = sample_poses(ur5_robot, ur5_setup, cube, 40, q_ref, seed=41).q
    gm, cell = ur5_li2023_cell(seed=6)
    meas = measure_poses(cell, q)
    tool = np.array(gm.targets[0].offset)
    write_measurements_csv(d / "clean.csv", meas, robot="ur5_li2023", tool=tool)
    bad = MeasurementSet(meas.q, meas.p.copy(), meas.ids)
    bad.p[4] += [0.0015, 0.0, 0.0]  # two readings off the reflector
    bad.p[17] += [0.0, -0.001, 0.0012]
    write_measurements_csv(d / "outliers.csv", bad, robot="ur5_li2023", tool=tool)
    assert main(["calibrate", "identify", str(d / "clean.csv"), "--robot", "ur5_li2023", "--out",
                 str(d / "calib.json")]) == 0
    turned = MeasurementSet(meas.q[:6].copy(), meas.p[:6], meas.ids[:6])
    turned.q[:, 5] += 2 * np.pi  # J6 one turn on: the same physical pose
    turned.q[1, 3] -= 2 * np.pi
    write_measurements_csv(d / "turned.csv", turned, robot="ur5_li2023", tool=tool)
    return d


# --------------------------------------------------------------------------- robust losses


def test_a_robust_loss_names_the_poses_it_down_weighted(ur5, capsys):
    code, out, _ = run(capsys, "identify", str(ur5 / "outliers.csv"), "--robot", "ur5_li2023", "--loss", "cauchy",
                       "--out", str(ur5 / "c.json"), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["status"] == "ok"
    robust = doc["robust_loss"]
    # the two bad readings (one coordinate of P005 off, two of P018) lose the most weight; a pose's
    # weight is the mean over its three coordinates, so P005 keeps its two good ones
    assert list(robust["weights"])[:2] == ["P018", "P005"] and robust["poses"] == 40
    assert robust["weights"]["P018"] < robust["weights"]["P005"] < 0.9
    assert all(w > robust["weights"]["P005"] for p, w in robust["weights"].items() if p not in ("P005", "P018"))
    assert robust["removed_weight_share"] < 0.2
    note = next(n for n in doc["notes"] if n.startswith("the cauchy loss down-weighted"))
    assert f"{robust['downweighted']} of 40 poses" in note and "P005" in note


def test_a_robust_loss_that_changes_nothing_says_so(ur5, capsys):
    code, out, _ = run(capsys, "identify", str(ur5 / "clean.csv"), "--robot", "ur5_li2023", "--loss", "huber",
                       "--out", str(ur5 / "h.json"))
    assert code == 0
    line = next(l for l in out.splitlines() if "huber" in l)
    assert line.startswith("note: the huber loss changed nothing") and "least-squares fit" in line


def test_a_robust_fit_that_sets_the_data_aside_is_a_failure(heavy):
    """The heavy arm's sag is no outlier: arctan at three times the tracker's 15 um down-weights most
    of the sweep; that is a failed fit, not status ok."""
    d, model = heavy
    _, ident, _ = heavy_sets(HeavyArmTruth(seed=0))
    robot = load_robot(str(model))
    base, _, _ = measurement_frame(geometric_model(robot, targets=[Target(n, o) for n, o in NEST]), ident)
    gm = geometric_model(robot, targets=[Target(n, o) for n, o in NEST], base=base)
    free = preset_free_names(gm, "all", identify_base=True, identify_tool=True)
    stated = float(np.median(ident.sigma[ident.point_mask]))
    tight = calibrate(gm, ident, None, method="geometric", free_names=free, loss="arctan", f_scale=3 * 5e-6 / stated)
    assert tight.failed and "removed" in tight.failure and "least-squares weight" in tight.failure
    assert tight.robust["removed_weight_share"] > 0.2 and tight.robust["downweighted"] > len(ident) / 2
    plain = calibrate(gm, ident, None, method="geometric", free_names=free, loss="huber")
    assert not plain.failed and plain.robust["removed_weight_share"] <= 0.2


# --------------------------------------------------------------------------- evaluate


def test_worse_than_nominal_is_called_worse_with_a_warning(ur5, capsys):
    doc = json.loads((ur5 / "calib.json").read_text())
    doc["parameters"]["d1"]["identified"] += 0.004  # a calibration that moved the shoulder 4 mm the wrong way
    (ur5 / "spoiled.json").write_text(json.dumps(doc))
    code, out, _ = run(capsys, "evaluate", str(ur5 / "spoiled.json"), str(ur5 / "clean.csv"), "--json")
    rep = json.loads(out)
    assert rep["after"]["max_mm"] > rep["before"]["max_mm"]
    code, out, _ = run(capsys, "evaluate", str(ur5 / "spoiled.json"), str(ur5 / "clean.csv"))
    assert "reduced by -" not in out
    worse = 100 * (rep["after"]["max_mm"] / rep["before"]["max_mm"] - 1)
    assert f"max error {worse:.1f} % worse" in out
    assert any(l.startswith("warning: calibration made the worst point worse than the nominal model") for l in
               out.splitlines())
    code, out, _ = run(capsys, "evaluate", str(ur5 / "calib.json"), str(ur5 / "clean.csv"))
    assert "max error reduced by" in out and "worse" not in out


def test_a_joint_one_turn_on_is_no_extrapolation(ur5, capsys):
    code, out, _ = run(capsys, "evaluate", str(ur5 / "calib.json"), str(ur5 / "turned.csv"))
    assert code == 0 and "outside the identification" not in out


def test_revolute_ranges_compare_modulo_a_turn_prismatic_do_not():
    from robodyn.calibration.checks import outside_range

    deg = np.deg2rad
    lo, hi, tol = deg(np.array([-90.0, -90.0])), deg(np.array([90.0, 90.0])), deg(np.array([0.5, 0.5]))
    q = deg(np.array([[360.0, 0.0], [-360.0, 0.0], [89.0, 0.0], [91.0, 0.0], [260.0, 0.0], [450.0, 0.0],
                      [-271.0, 0.0], [0.0, 360.0]]))
    got = outside_range(q, lo, hi, tol, np.array([False, True]))
    assert got[:, 0].tolist() == [False, False, False, True, True, False, False, False]
    assert got[:, 1].tolist() == [False] * 7 + [True]  # a prismatic joint's value is a length: no turns
    full = outside_range(q, deg(np.array([-180.0, -1.0])), deg(np.array([180.0, 1.0])), tol, np.array([False, True]))
    assert not full[:, 0].any()  # a range of a whole turn holds every angle


def test_a_csv_that_names_no_target_is_asked_to(heavy, capsys):
    d, model = heavy
    code, _, _ = run(capsys, "identify", str(d / "sweeps.csv"), "--robot", str(model), "--identify-base",
                     "--identify-tool", "--out", str(d / "geo.json"))
    assert code == 0
    code, _, err = run(capsys, "evaluate", str(d / "geo.json"), str(d / "held_no_targets.csv"), "--units", "m")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "does not say which target" in err and "# targets = NAME: x, y, z" in err and "SMR1" in err


# --------------------------------------------------------------------------- robots


def test_the_unknown_model_error_lists_every_accepted_name(ur5, capsys):
    code, _, err = run(capsys, "identify", str(ur5 / "clean.csv"), "--robot", "ur5_li2032", "--out",
                       str(ur5 / "x.json"))
    assert code == 2 and "unknown model 'ur5_li2032'" in err
    for name in ("ur5_li2023", "heavy6", "ur5", "panda"):
        assert name in err


def test_a_model_file_is_known_by_its_model_name(heavy, capsys):
    """sweeps.csv says robot heavy6; the model file heavy6_without_masses.toml is named heavy6 inside."""
    d, model = heavy
    code, _, err = run(capsys, "identify", str(d / "sweeps.csv"), "--robot", str(model), "--identify-base",
                       "--out", str(d / "g.json"))
    assert code == 0, err
    code, _, err = run(capsys, "identify", str(d / "sweeps.csv"), "--robot", "ur5", "--out", str(d / "u.json"))
    assert code == 2 and "was measured on 'heavy6'" in err


# --------------------------------------------------------------------------- lumped mode


def test_lumped_mode_prints_no_per_joint_stiffness(heavy, capsys):
    d, model = heavy
    code, out, _ = run(capsys, "identify", str(d / "sweeps.csv"), "--robot", str(model), "--identify-base",
                       "--method", "combined-gravity", "--out", str(d / "lumped.json"))
    assert code == 0
    assert "no stiffness per joint" in out
    assert "joint stiffness (N·m/rad)" not in out and "(prior)" not in out


# --------------------------------------------------------------------------- advice


def _advice(truth):
    robot, ident, held = heavy_sets(truth)
    meas = MeasurementSet(np.vstack([ident.q, held.q]), np.concatenate([ident.points, held.points]),
                          ident.ids + [f"H{k + 1}" for k in range(len(held))],
                          q_controller=np.vstack([ident.controller_q, held.controller_q]))
    targets = [Target(n, o) for n, o in NEST]
    base, _, _ = measurement_frame(geometric_model(robot, targets=targets), meas)
    gm = without_masses(geometric_model(robot, targets=targets, base=base))
    return advise(gm, meas, preset_free_names(gm, "all", identify_base=True, identify_tool=True))


def test_advice_names_lumped_gravity_on_an_arm_that_sags():
    rep = _advice(HeavyArmTruth(seed=0))
    rows = rep["candidates"]
    assert rep["winner"] == LUMPED and rep["held_out_rms_mm"] == rows[LUMPED]["held_out_rms_mm"]
    assert rows[LUMPED]["held_out_rms_mm"] < rows[GEOMETRIC]["held_out_rms_mm"]
    assert rows[LUMPED]["gain_over_geometric_standard_errors"] > GAIN_STANDARD_ERRORS
    ev = rep["evidence"]
    # what decided is measured: gravity directions express the geometric model's held-out errors
    assert ev["gravity_share"] > 2 * ev["gravity_share_by_chance"] and ev["dominant_joint"] == 2
    assert f"from {rows[GEOMETRIC]['held_out_rms_mm']:.4f} to {rows[LUMPED]['held_out_rms_mm']:.4f} mm" in rep["sentence"]
    assert "combined-gravity" in rep["sentence"]


def test_advice_names_geometric_on_an_arm_without_sag():
    rep = _advice(HeavyArmTruth(seed=0, **STIFF))
    assert rep["winner"] == GEOMETRIC
    assert rep["candidates"][LUMPED]["gain_over_geometric_standard_errors"] <= GAIN_STANDARD_ERRORS
    assert rep["evidence"]["max_deflection_mm"] < 0.01
    assert rep["sentence"].startswith("use geometric (--method geometric)")


def test_advise_command(heavy, capsys):
    d, model = heavy
    code, out, _ = run(capsys, "advise", str(d / "sweeps.csv"), "--robot", str(model), "--identify-base",
                       "--identify-tool", "--json")
    rep = json.loads(out)
    assert code == 0 and rep["folds"] == 4 and rep["poses"] == 28 and set(rep["candidates"]) == {GEOMETRIC, LUMPED}
    assert rep["winner"] == LUMPED and "--method combined-gravity" in rep["sentence"]
    code, out, _ = run(capsys, "advise", str(d / "sweeps.csv"), "--robot", str(model), "--identify-base",
                       "--identify-tool", "--folds", "1")
    assert code == 2


@pytest.mark.parametrize("loss", ["huber", "soft_l1", "cauchy", "arctan"])
def test_loss_weights_are_the_derivative_of_the_loss(loss):
    """A pose's weight is rho'(z), z = (r / f_scale)^2, of the objective robust_cost minimises:
    checked against a central difference of that objective, residual by residual."""
    from robodyn.calibration.geometric import loss_weights, robust_cost

    scale = 3.0
    r = np.array([0.1, 1.0, 2.9, 3.1, 6.0, 30.0])
    w = loss_weights(r, loss, scale)
    for k, rk in enumerate(r):
        z = (rk / scale) ** 2
        h = 1e-6 * max(z, 1.0)

        def rho(zz):  # robust_cost = 0.5 f^2 rho(z) for one residual r = f sqrt(z)
            return robust_cost(np.array([scale * np.sqrt(zz)]), loss, scale) / (0.5 * scale ** 2)

        assert w[k] == pytest.approx((rho(z + h) - rho(z - h)) / (2 * h), rel=1e-5, abs=1e-9)
    assert np.all(loss_weights(r, "linear", None) == 1.0)
