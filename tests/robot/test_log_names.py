"""Aliases beside a URDF: the [aliases] table of a TOML file that names a URDF gives a log's names
per URDF joint, and refuses a name that is not a joint of the chain."""

import pytest

from robodyn.robot.loader import load_model, model_from_toml
from robodyn.robot.urdf import model_to_urdf


def reference(tmp_path, aliases_toml: str):
    (tmp_path / "arm.urdf").write_text(model_to_urdf(load_model("twolink")))
    path = tmp_path / "arm.toml"
    path.write_text('urdf = "arm.urdf"\n' + aliases_toml)
    return path


def test_aliases_beside_a_urdf_are_per_urdf_joint(tmp_path):
    plain = model_from_toml(reference(tmp_path, ""))
    first, second = plain.joint_names
    model = model_from_toml(reference(tmp_path, f'[aliases]\n{second} = ["lower_arm"]\n'))
    assert model.log_names == ((first,), (second, "lower_arm"))
    assert plain.log_names == ((first,), (second,))


def test_aliases_beside_a_urdf_name_joints_of_the_chain(tmp_path):
    with pytest.raises(ValueError, match=r"^aliases\.elbowz: not a joint of the chain; its joints are "):
        model_from_toml(reference(tmp_path, '[aliases]\nelbowz = ["x"]\n'))
    with pytest.raises(ValueError, match=r"^aliases: expected a table"):
        model_from_toml(reference(tmp_path, 'aliases = ["x"]\n'))
