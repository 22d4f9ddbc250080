"""Logs that name the joints as the robot's driver does: a bag written with Franka's panda_jointN or
UR's shoulder_pan_joint... names reads into the built-in model's joints without a model file, by
name and not by position; aliases in a model file and the command line's mapping do the same for
any robot; names that cannot be matched get one line listing the log's names and the model's.

The samples are the independent RNEA of each model along an excitation (conftest.py): an own-model
set, used here only to check that values land on the right joint."""

import json

import numpy as np
import pytest

pytest.importorskip("rosbags", reason="rosbags reads ROS 2 bags (extras 'ros2' and 'test')")

from robodyn.cli import main
from robodyn.identification.data import load_dataset
from robodyn.robot.loader import load_model, model_from_dict
from robodyn.robot.log_names import match_log_names, parse_log_names

from .conftest import rest_to_rest_fourier, simulate
from .test_rosbag import write_bag

PANDA_DRIVER = [f"panda_joint{k}" for k in range(1, 8)]
UR_DRIVER = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
             "wrist_3_joint"]
FINGERS = ["panda_finger_joint1", "panda_finger_joint2"]


def samples(model, seed=1):
    n = model.dof
    friction = {"viscous": np.full(n, 0.3), "coulomb": np.full(n, 0.5), "offset": np.zeros(n)}
    return simulate(model, rest_to_rest_fourier(model, seed, amplitude=0.2, periods=1), rate=100, friction=friction)


def shuffled_bag(path, data, names, extra=()):
    """The driver's names in a shuffled order, followed by joints the model does not have (a
    gripper's fingers): values must be taken by name, and the extra ones left out."""
    order = np.random.default_rng(7).permutation(len(names))
    pad = np.zeros((data.count, len(extra)))
    write_bag(path, data.t, [names[k] for k in order] + list(extra), np.hstack([data.q[:, order], pad]),
              np.hstack([data.qd[:, order], pad]), np.hstack([data.tau[:, order], pad + 5.0]))


@pytest.mark.parametrize("robot, names, extra", [("panda", PANDA_DRIVER, FINGERS), ("ur5", UR_DRIVER, ())])
def test_a_bag_with_the_drivers_names_identifies_with_the_built_in_model(tmp_path, capsys, robot, names, extra):
    model = load_model(robot)
    data = samples(model)
    bag = tmp_path / "bag"
    shuffled_bag(bag, data, names, extra)
    loaded = load_dataset(bag, model=model)
    np.testing.assert_array_equal(loaded.q, data.q)
    np.testing.assert_array_equal(loaded.tau, data.tau)
    np.testing.assert_array_equal(loaded.qd, data.qd)
    out = tmp_path / "fit.json"
    assert main(["identify", str(bag), "--robot", robot, "--method", "ols", "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    assert len(json.loads(out.read_text())["estimate"]["values"]) > model.dof


def model_doc(aliases=None, names=("a", "b")):
    """A two-joint planar arm as a model file; ``aliases`` per joint if given."""
    joints = []
    for k, name in enumerate(names):
        j = {"name": name, "type": "revolute", "alpha": 0.0, "a": 0.0 if k == 0 else 0.4, "d": 0.0, "theta": 0.0,
             "q_min": -3.0, "q_max": 3.0, "qd_max": 3.0, "qdd_max": 10.0, "qddd_max": 100.0, "tau_max": 50.0,
             "link": {"mass": 2.0 - k, "com": [0.2, 0.0, 0.0]}}
        if aliases is not None:
            j["aliases"] = aliases[k]
        joints.append(j)
    return {"name": "arm", "convention": "mdh", "gravity": [0.0, -9.81, 0.0], "joints": joints}


def test_aliases_in_a_model_file_and_the_command_lines_mapping_take_values_by_name(tmp_path):
    plain = model_from_dict(model_doc())
    data = samples(plain)
    bag = tmp_path / "bag"
    # the log calls joint a "elbow" and joint b "shoulder": a mapping by position would swap them
    write_bag(bag, data.t, ["shoulder", "elbow"], data.q[:, ::-1], data.qd[:, ::-1], data.tau[:, ::-1])
    with pytest.raises(ValueError, match=r"names joints \[shoulder, elbow\]; the model's joints \[a, b\]"):
        load_dataset(bag, model=plain)
    aliased = model_from_dict(model_doc([["elbow"], ["shoulder"]]))
    assert aliased.log_names == (("a", "elbow"), ("b", "shoulder"))
    mapped = plain.with_log_names(parse_log_names("elbow, shoulder", plain.dof))
    for model in (aliased, mapped):
        loaded = load_dataset(bag, model=model)
        np.testing.assert_array_equal(loaded.q, data.q)
        np.testing.assert_array_equal(loaded.tau, data.tau)
    # the command line's names replace the model's: the model's own names no longer match
    with pytest.raises(ValueError, match=r"joints \[a, b\] are not among them; .*: \[a \(elbow\), b \(shoulder\)\]"):
        match_log_names(["a", "b"], mapped.log_names, joint_names=mapped.joint_names)


def test_names_that_cannot_be_matched_get_one_line_with_both_lists():
    panda = load_model("panda")
    with pytest.raises(ValueError) as err:
        match_log_names(["fr3_joint1", "fr3_joint2"], panda.log_names, where="x.mcap: topic '/joint_states'")
    text = str(err.value)
    assert "\n" not in text
    assert "names joints [fr3_joint1, fr3_joint2]" in text
    assert "model joints (and the names a log may give them): [joint1 (joint1, panda_joint1, fer_joint1), " in text
    assert "joint7 (joint7, panda_joint7, fer_joint7)]" in text and "--joint-names" in text
    # a log that gives one joint two of its names is ambiguous, not silently resolved
    with pytest.raises(ValueError, match=r"names joint 'joint1' twice, as \[joint1, panda_joint1\]"):
        match_log_names(["joint1", "panda_joint1"] + PANDA_DRIVER[1:], panda.log_names)
    # the index is the position of each joint's name in the log
    assert match_log_names(["x", "b2", "a1"], [("a", "a1"), ("b2",)]).tolist() == [2, 1]


@pytest.mark.parametrize("aliases, message", [
    ([["b"], []], "joints[0].aliases: name 'b' is already a name of joint 'b'"),
    ([["same"], ["same"]], "joints[1].aliases: name 'same' is already a name of joint 'a'"),
    ([["ok"], "notalist"], "joints[1].aliases: expected a list of non-empty names"),
    ([[""], []], "joints[0].aliases: expected a list of non-empty names"),
])
def test_aliases_that_would_make_a_log_ambiguous_are_refused(aliases, message):
    with pytest.raises(ValueError) as err:
        model_from_dict(model_doc(aliases))
    assert str(err.value).startswith(message)


def test_the_command_line_mapping_names_each_joint_once():
    assert parse_log_names("p1,p2", 2) == (("p1",), ("p2",))
    with pytest.raises(ValueError, match=r"--joint-names: expected 2 comma-separated names .* got 3"):
        parse_log_names("p1,p2,p3", 2)
    with pytest.raises(ValueError, match=r"--joint-names: expected 2 .* got 1"):
        parse_log_names("p1,", 2)
    with pytest.raises(ValueError, match=r"--joint-names: name 'p1' given for more than one joint"):
        parse_log_names("p1,p1", 2)


def test_vendor_names_of_the_built_in_models():
    assert [names[1:] for names in load_model("panda").log_names] == [
        (f"panda_joint{k}", f"fer_joint{k}") for k in range(1, 8)]
    assert [names[1:] for names in load_model("fr3").log_names] == [(f"fr3_joint{k}",) for k in range(1, 8)]
    for ur in ("ur5", "ur5e", "ur10e"):
        assert [names[1] for names in load_model(ur).log_names] == UR_DRIVER
