"""Exports other engines reproduce: on a small identified result, the exported URDF in pinocchio (RNEA)
and the exported MJCF in MuJoCo (mj_inverse) give robodyn's `predict` torque at the states `predict`
evaluates (the recording processed as at identification), and what each format cannot hold is
stated per joint with its size there.

Data: own-model. A simulated UR5e (RNEA with rotor inertias 0.05 kg m^2, 8 s at 100 Hz, 0.3 N.m
noise) plus viscous 0.3 qd, Coulomb 0.2 sgn(qd) and an offset 0.1 N.m per joint; this checks the
exports, not the model's accuracy."""

import json

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.identification.base_params import BaseParameters
from robodyn.identification.comparison_data import simulated_recording
from robodyn.identification.data import load_dataset
from robodyn.identification.mjcf_export import check_mjcf_on_states
from robodyn.identification.pipeline import predict
from robodyn.identification.urdf_export import check_urdf_on_states, identification_states, joint_columns
from robodyn.robot.loader import load_model

mujoco = pytest.importorskip(
    "mujoco", reason="MuJoCo loads the exported MJCF and URDF (extras 'sim' and 'test', installed by make test)")
pytest.importorskip("pinocchio", reason="pinocchio checks the exported URDF (extra 'test', installed by make test)")
pytest.importorskip("cvxpy", reason="the consistent fit needs cvxpy (extras 'sdp' and 'test', installed by make test)")

OFFSET = 0.1


@pytest.fixture(scope="module")
def identified(tmp_path_factory):
    """(model, recording path, result dict, URDF text, MJCF text) of `robodyn identify --method
    consistent` with a 10 Hz low-pass (the processed states differ from the recorded ones)."""
    folder = tmp_path_factory.mktemp("roundtrip")
    model = load_model("ur5e")
    d = simulated_recording(model, seed=1, seconds=8.0, rate_hz=100.0, noise=0.3,
                            rotor_inertia=np.full(model.dof, 0.05))
    rec = folder / "rec.npz"
    np.savez(rec, t=d.t, q=d.q, qd=d.qd, tau=d.tau + 0.3 * d.qd + 0.2 * np.sign(d.qd) + OFFSET)
    result = folder / "result.json"
    assert main(["identify", str(rec), "--robot", "ur5e", "--method", "consistent", "--cutoff", "10",
                 "--velocity", "measured", "--out", str(result)]) == 0
    assert main(["export-urdf", str(result), "--out", str(folder / "r.urdf")]) == 0
    assert main(["export-mjcf", str(result), "--out", str(folder / "r.xml")]) == 0
    return (model, rec, json.loads(result.read_text()), (folder / "r.urdf").read_text(),
            (folder / "r.xml").read_text())


@pytest.fixture(scope="module")
def states(identified):
    model, rec, doc, _, _ = identified
    return identification_states(model, doc, load_dataset(rec, model=model))


def test_the_states_are_those_predict_evaluates(identified, states):
    model, rec, doc, _, _ = identified
    raw = load_dataset(rec, model=model)
    t, _, predicted = predict(model, doc, raw)
    assert predicted.shape == states["predicted"].shape
    np.testing.assert_allclose(states["predicted"], predicted, rtol=0, atol=1e-12)
    # the low-pass moved the states: the engines are checked on processed, not recorded, values
    assert np.abs(states["q"] - raw.q[:t.shape[0]]).max() > 1e-6


def test_pinocchio_on_the_exported_urdf_gives_the_rigid_body_prediction(identified, states):
    model, _, doc, urdf, _ = identified
    report = check_urdf_on_states(urdf, model, doc, states)
    r = report["pinocchio_rnea"]
    assert r["torque_scale"] > 10.0
    assert r["max_relative_error"] < 1e-9
    base = BaseParameters.from_dict(doc["base"])
    cols = joint_columns(np.asarray(doc["consistent"]["standard"]), base, model.dof)
    assert report["damping_read_back_max_abs_error"] < 1e-12 and cols["FV"].min() > 0.1
    terms = {t["term"].split(" (")[0]: t for t in report["unrepresented"]}
    # the offsets: constant, so their RMS on the data is |FO| itself
    assert np.abs(cols["FO"]).max() > 0.01
    np.testing.assert_allclose(terms["offset FO"]["rms"], np.abs(cols["FO"]), rtol=1e-12)
    np.testing.assert_allclose(terms["rotor inertia IA qdd"]["rms"],
                               np.abs(cols["IA"]) * np.sqrt(np.mean(states["qdd"] ** 2, axis=0)), rtol=1e-12)
    # held by <dynamics damping friction>, or absent from this result
    assert not {"Coulomb FC sgn(qd)", "friction model subtracted before identification"} & set(terms)


def test_mujoco_on_the_exported_mjcf_gives_the_prediction_with_armature_damping_frictionloss(identified, states):
    model, _, doc, _, mjcf = identified
    m = mujoco.MjModel.from_xml_string(mjcf)
    base = BaseParameters.from_dict(doc["base"])
    cols = joint_columns(np.asarray(doc["consistent"]["standard"]), base, model.dof)
    # each of armature, damping and frictionloss moves the torque far beyond the tolerance below
    qd, qdd = states["qd"], states["qdd"]
    assert min(np.abs(cols["IA"] * qdd).max(), np.abs(cols["FV"] * qd).max(), cols["FC"].max()) > 0.01
    np.testing.assert_allclose(m.dof_armature, cols["IA"], rtol=1e-12)
    np.testing.assert_allclose(m.dof_damping, cols["FV"], rtol=1e-12)
    np.testing.assert_allclose(m.dof_frictionloss, cols["FC"], rtol=1e-12)

    report = check_mjcf_on_states(mjcf, model, doc, states)
    assert report["rigid_body"]["max_relative_error"] < 1e-9
    # as written (armature, damping, frictionloss) where the dry-friction constraint is saturated
    assert report["saturated_fraction"] > 0.5
    assert report["with_joint_friction"]["max_relative_error"] < 1e-9
    terms = {t["term"].split(" (")[0]: t for t in report["unrepresented"]}
    np.testing.assert_allclose(terms["offset FO"]["max"], np.abs(cols["FO"]), rtol=1e-12)
    assert "rotor inertia IA qdd" not in terms  # MJCF holds it as armature
    # elsewhere MuJoCo's dry friction lies between -FC and FC: at most 2 FC from FC sgn(qd)
    gap = terms["Coulomb as frictionloss where its constraint is not saturated"]
    assert np.all(np.asarray(gap["max"]) <= 2 * cols["FC"] * (1 + 1e-9))


def test_export_commands_state_per_joint_what_the_file_cannot_hold(identified, tmp_path, capsys):
    model, rec, doc, _, _ = identified
    result = tmp_path / "result.json"
    result.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["export-mjcf", str(result), "--out", str(tmp_path / "r.xml"), "--data", str(rec)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("not in the file: offset FO"))
    assert all(j in line for j in model.joint_names)
    assert "rigid body" in out
    assert main(["export-urdf", str(result), "--out", str(tmp_path / "r.urdf"), "--data", str(rec), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["on_data"]
    assert report["pinocchio_rnea"]["max_relative_error"] < 1e-9
