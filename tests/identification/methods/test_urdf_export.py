"""Exported URDF reproduces the identified torques in pinocchio and MuJoCo."""

import json

import numpy as np
import pytest

from robodyn.identification.consistent import identify_consistent, nominal_reference
from robodyn.identification.regressor import sample_states
from robodyn.identification.urdf_export import export_urdf, joint_extras, verify_urdf

from .conftest import identified_from_npz

pytest.importorskip("pinocchio", reason="pinocchio checks the exported URDF (extra 'test', installed by make test)")
pytest.importorskip("mujoco", reason="MuJoCo loads the exported URDF (extras 'sim' and 'test', installed by make test)")
pytest.importorskip("cvxpy", reason="the consistent fit needs cvxpy (extras 'sdp' and 'test', installed by make test)")


@pytest.fixture(scope="module")
def consistent(panda, panda_statistics):
    base, ne = panda_statistics
    return identify_consistent(ne, base, panda.dof, reference=nominal_reference(panda, base.spec),
                               joint_names=list(panda.joint_names))


def test_urdf_torques_match_the_identified_model(panda, panda_statistics, consistent):
    base, _ = panda_statistics
    text = export_urdf(panda, consistent.to_dict(), base)
    assert np.allclose(joint_extras(text)["IA"], consistent.standard[10::11])
    q, qd, qdd = sample_states(panda, 40, seed=5)
    report = verify_urdf(text, panda, base, consistent.standard, q, qd, qdd)
    assert report["pinocchio"]["max_relative_error"] < 1e-10
    assert report["mujoco"]["max_relative_error"] < 1e-10


def test_export_refuses_infeasible_parameters(panda, panda_statistics, consistent):
    base, _ = panda_statistics
    doc = consistent.to_dict()
    doc["feasibility"] = {**doc["feasibility"], "feasible": False}
    with pytest.raises(ValueError, match="physically consistent"):
        export_urdf(panda, doc, base)


def test_cli_identify_consistent_then_export_with_friction(tmp_path, panda, panda_recording):
    from robodyn.cli import main

    # qdd is not in an npz file: the pipeline differentiates (no filter)
    result, urdf = identified_from_npz(tmp_path, panda_recording, "consistent", friction=True), tmp_path / "robot.urdf"
    doc = json.loads(result.read_text())
    assert doc["consistent"]["feasibility"]["feasible"]
    fv = [doc["consistent"]["parameters"][f"FV{j}"] for j in range(1, 8)]
    assert min(fv) >= 0.0
    assert main(["export-urdf", str(result), "--out", str(urdf), "--verify"]) == 0
    assert "<dynamics damping=" in urdf.read_text()


def test_export_urdf_never_overwrites_its_default_file_unasked(tmp_path, panda, panda_recording, monkeypatch, capsys):
    from robodyn.cli import main

    result = identified_from_npz(tmp_path, panda_recording, "consistent")
    monkeypatch.chdir(tmp_path)
    assert main(["export-urdf", str(result)]) == 0 and "<robot" in (tmp_path / "robot_identified.urdf").read_text()
    (tmp_path / "robot_identified.urdf").write_text("keep me")
    capsys.readouterr()
    assert main(["export-urdf", str(result)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "robot_identified.urdf exists" in err and "--force" in err
    assert (tmp_path / "robot_identified.urdf").read_text() == "keep me"
    assert main(["export-urdf", str(result), "--force"]) == 0
    assert "<robot" in (tmp_path / "robot_identified.urdf").read_text()
