"""MuJoCo models out: the exported MJCF, loaded by MuJoCo, reproduces robodyn's own prediction of
the same result (own-model: this checks the export, not the model's accuracy)."""

import json

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.identification.mjcf_export import mujoco_inverse, verify_mjcf
from robodyn.identification.urdf_export import joint_columns
from robodyn.identification.base_params import BaseParameters

from ..conftest import rest_to_rest_fourier
from .conftest import identified_from_npz

mujoco = pytest.importorskip("mujoco", reason="MuJoCo loads the exported MJCF (extra 'sim', installed by make test)")
pytest.importorskip("cvxpy", reason="the consistent fit needs cvxpy (extras 'sdp' and 'test', installed by make test)")


@pytest.fixture(scope="module")
def consistent_result(tmp_path_factory, panda_recording):
    """`robodyn identify --method consistent` on the simulated Panda with viscous and Coulomb friction added."""
    return identified_from_npz(tmp_path_factory.mktemp("mjcf"), panda_recording, "consistent", friction=True)


def test_mujoco_inverse_dynamics_reproduces_the_identified_model_on_a_trajectory(tmp_path, panda,
                                                                                  consistent_result, capsys):
    out = tmp_path / "panda.xml"
    assert main(["export-mjcf", str(consistent_result), "--out", str(out)]) == 0
    assert "robodyn_offset" in capsys.readouterr().out  # the offsets MJCF cannot hold are named
    doc = json.loads(consistent_result.read_text())
    text = out.read_text()
    m = mujoco.MjModel.from_xml_path(str(out))
    base = BaseParameters.from_dict(doc["base"])
    standard = np.asarray(doc["consistent"]["standard"])
    cols = joint_columns(standard, base, panda.dof)
    assert cols["FV"].max() > 0.2 and cols["FC"].min() > 0.05  # the friction the data carry was identified
    np.testing.assert_allclose(m.dof_armature, cols["IA"], rtol=1e-12)
    np.testing.assert_allclose(m.dof_damping, cols["FV"], rtol=1e-12)
    np.testing.assert_allclose(m.dof_frictionloss, cols["FC"], rtol=1e-12)
    per = base.spec.per_joint
    np.testing.assert_allclose(m.body_mass[1:], standard[9:per * panda.dof:per], rtol=1e-12)
    assert [m.joint(j).name for j in range(m.njnt)] == list(panda.joint_names)
    assert [m.actuator(a).name for a in range(m.nu)] == list(panda.joint_names)

    t, q, qd, qdd, _ = rest_to_rest_fourier(panda, 7, amplitude=0.25).sample(100)
    report = verify_mjcf(text, panda, doc, q, qd, qdd)
    scale = report["torque_scale"]
    assert scale > 5.0
    # frictionloss zeroed and FC sgn(qd) added: the same model to round-off
    assert report["without_frictionloss"]["max_abs_error"] < 1e-9 * scale
    # as written: where MuJoCo's dry friction is saturated against the motion it is FC sgn(qd) ...
    w = report["with_frictionloss"]
    assert w["saturated_fraction"] > 0.5
    assert w["max_abs_error"] < 1e-9 * scale
    # ... elsewhere (near rest, or decelerating hard) MuJoCo's force lies between -FC and FC
    full, saturated = mujoco_inverse(text, q, qd, qdd)
    bare, _ = mujoco_inverse(text, q, qd, qdd, frictionloss=False)
    friction = full - bare
    assert np.all(np.abs(friction) <= cols["FC"] * (1 + 1e-9))
    np.testing.assert_allclose(friction[saturated], (cols["FC"] * np.sign(qd))[saturated], atol=1e-9)


def test_export_mjcf_refuses_a_base_parameter_result_in_one_line(tmp_path, panda_recording, capsys):
    result = identified_from_npz(tmp_path, panda_recording, "ols", "ols.json")
    capsys.readouterr()
    assert main(["export-mjcf", str(result), "--out", str(tmp_path / "x.xml")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--method consistent" in err and "base parameters only" in err
    assert not (tmp_path / "x.xml").exists()
