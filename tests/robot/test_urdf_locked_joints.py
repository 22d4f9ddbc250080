"""A vendor URDF with more than the arm (a head on a branch, a gripper whose finger mimics another
joint): the joints off the chain are held at their locked positions, their bodies merged into the
body they hang from. Checked against pinocchio on the same URDF in which those joints are made
fixed at the same positions (an independent oracle: its own parser and RNEA)."""

import math

import numpy as np
import pytest

from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.urdf import model_from_urdf, pinocchio_inverse_dynamics


def link(name: str, mass: float, com: str, ixx: float = 0.02) -> str:
    return (f'<link name="{name}"><inertial><origin xyz="{com}" rpy="0.1 -0.2 0.3"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" ixy="0.001" ixz="0" iyy="{ixx * 1.5}" iyz="0.002" izz="{ixx * 0.7}"/>'
            '</inertial></link>')


def joint(name: str, kind: str, parent: str, child: str, xyz: str, axis: str = "0 0 1", rpy: str = "0 0 0",
          extra: str = "") -> str:
    limit = '<limit lower="-3" upper="3" velocity="2" effort="50"/>' if kind != "fixed" else ""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{limit}{extra}</joint>')


def arm(head_kind: str = "revolute", head_rpy: str = "0 0 0", finger_kind: str = "prismatic",
        finger_xyz: str = "0.02 0 0.05", finger_mimic: bool = True) -> str:
    """Base, three arm joints; a head on a branch off link 1 (about z); a gripper on link 3 with a
    driving finger and a second finger that mimics it."""
    mimic = '<mimic joint="finger_a" multiplier="-1"/>' if finger_mimic else ""
    return ('<robot name="vendor">' + link("base", 5, "0 0 0.05") + link("l1", 3, "0 0.02 0.1")
            + link("l2", 2.5, "0.15 0 0") + link("l3", 1.5, "0.1 0.01 0") + link("head", 1.2, "0.05 0.03 0.02")
            + link("fa", 0.1, "0 0.01 0.02", 0.001) + link("fb", 0.1, "0 -0.01 0.02", 0.001)
            + joint("j1", "revolute", "base", "l1", "0 0 0.2")
            + joint("j2", "revolute", "l1", "l2", "0 0 0.3", axis="0 1 0")
            + joint("j3", "revolute", "l2", "l3", "0.4 0 0", axis="0 1 0")
            + joint("neck", head_kind, "l1", "head", "0.1 0 0.25", rpy=head_rpy)
            + joint("finger_a", finger_kind, "l3", "fa", finger_xyz, axis="1 0 0")
            + joint("finger_b", finger_kind, "l3", "fb", "-0.02 0 0.05", axis="1 0 0", extra=mimic)
            + "</robot>")


def states(dof: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (5, dof)), rng.uniform(-1, 1, (5, dof)), rng.uniform(-2, 2, (5, dof))


@pytest.mark.parametrize("neck, finger", [(0.0, 0.0), (0.7, 0.013)])
def test_joints_off_the_chain_are_held_still_as_pinocchio_holds_their_fixed_twins(neck, finger):
    model = model_from_urdf(arm(), tip_link="l3", locked={"neck": neck, "finger_a": finger, "finger_b": -finger})
    assert model.joint_names == ("j1", "j2", "j3") or list(model.joint_names) == ["j1", "j2", "j3"]
    assert model.sources["locked_joints"] == f"neck={neck:g}, finger_a={finger:g}, finger_b={-finger:g}"
    # the same robot with those joints fixed where they were locked: the neck turned by `neck`
    # about its z axis, the fingers slid along x
    twin = arm(head_kind="fixed", head_rpy=f"0 0 {neck!r}", finger_kind="fixed",
               finger_xyz=f"{0.02 + finger!r} 0 0.05", finger_mimic=False)
    twin = twin.replace('<origin xyz="-0.02 0 0.05"', f'<origin xyz="{-0.02 - finger!r} 0 0.05"')
    q, qd, qdd = states(3)
    ours = inverse_dynamics(model, q, qd, qdd)
    theirs = pinocchio_inverse_dynamics(twin, np.array([0.0, 0.0, -9.81]))(q, qd, qdd)
    assert np.allclose(ours, theirs, rtol=1e-9, atol=1e-9), np.abs(ours - theirs).max()
    # and the lock matters: held elsewhere, the head's weight moves
    other = model_from_urdf(arm(), tip_link="l3", locked={"neck": neck + 1.0})
    assert not np.allclose(inverse_dynamics(other, q, qd, qdd), ours)


def test_what_cannot_be_held_still_is_one_line_naming_it():
    # a mimic finger that follows a joint on the chain moves with the arm
    with pytest.raises(ValueError, match=r"^joint\[finger_b\]: a mimic joint off the chain that follows "
                                         r"'finger_a' on it .*tip_link='l3'"):
        model_from_urdf(arm(), tip_link="fa")
    with pytest.raises(ValueError, match=r"^joint\[finger_b\]: a mimic joint on the chain"):
        model_from_urdf(arm(), tip_link="fb")
    with pytest.raises(ValueError, match=r"^locked: no joint named 'nek'"):
        model_from_urdf(arm(), tip_link="l3", locked={"nek": 0.1})
    with pytest.raises(ValueError, match=r"^locked: joint 'j2' is not off the chain"):
        model_from_urdf(arm(), tip_link="l3", locked={"j2": 0.1})
    with pytest.raises(ValueError, match=r"^joint\[neck\]\.type: a 'floating' joint off the chain"):
        model_from_urdf(arm(head_kind="floating"), tip_link="l3")
    assert math.isfinite(float(model_from_urdf(arm(), tip_link="l3").inertial.sum()))
