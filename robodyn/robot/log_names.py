"""The names a log gives a model's joints.

A model names its joints (``joint1``, ``shoulder_pan``); the driver that wrote a log may call
them otherwise: Franka's ROS drivers publish ``panda_joint1``..``panda_joint7`` (or ``fr3_jointN``),
UR's driver ``shoulder_pan_joint``..``wrist_3_joint``. A model therefore carries, per joint, the
names a log may give it (``RobotModel.log_names``): its own name first, then the aliases its file
declares (``aliases = [...]`` in a ``[[joints]]`` table, ``[aliases]`` beside a URDF; FORMAT.md).
A user may instead state the log's names on the command line (:func:`parse_log_names`), which
replaces the model's list for that run.

:func:`match_log_names` finds each model joint among a log's names; what cannot be matched is
refused with one line that lists the log's names and the model's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def check_log_names(joint_names: Sequence[str], log_names) -> tuple[tuple[str, ...], ...]:
    """Per joint, the names a log may give it, validated: one non-empty tuple of non-empty
    strings per joint, and no name accepted for two joints (a log would be ambiguous)."""
    n = len(joint_names)
    if log_names is None or len(log_names) == 0:
        log_names = [(name,) for name in joint_names]
    if len(log_names) != n:
        raise ValueError(f"log_names: expected {n} entries (one per joint), got {len(log_names)}")
    entries = [(names,) if isinstance(names, str) else tuple(names) for names in log_names]
    for i, names in enumerate(entries):
        if not names or not all(isinstance(s, str) and s for s in names):
            raise ValueError(f"joints[{i}].aliases: expected a list of non-empty names, got {list(names)!r}")
    out = []
    owner: dict[str, int] = {}
    for i, names in enumerate(entries):  # each joint's first name is its own: an alias clashing with it is at fault
        owner.setdefault(names[0], i)
    for i, names in enumerate(entries):
        for s in names:
            if owner.get(s, i) != i:
                raise ValueError(f"joints[{i}].aliases: name {s!r} is already a name of joint "
                                 f"{joint_names[owner[s]]!r}; a log name must pick one joint")
            owner[s] = i
        out.append(tuple(dict.fromkeys(names)))  # order kept, repeats dropped
    return tuple(out)


def with_aliases(joint_names: Sequence[str], aliases: Sequence[Sequence[str]]) -> tuple[tuple[str, ...], ...]:
    """A model's own names followed by each joint's aliases, validated."""
    return check_log_names(joint_names, [(name, *extra) for name, extra in zip(joint_names, aliases)])


def parse_log_names(text: str, n: int) -> tuple[tuple[str, ...], ...]:
    """``NAME1,NAME2,...``: the log's names of the model's joints, in the model's joint order (the
    command line's mapping). One name per joint, all different."""
    names = [s.strip() for s in str(text).split(",")]
    if len(names) != n or not all(names):
        raise ValueError(f"--joint-names: expected {n} comma-separated names (the log's names of the model's "
                         f"{n} joints, in the model's order), got {len([s for s in names if s])} in {text!r}")
    repeated = sorted({s for s in names if names.count(s) > 1})
    if repeated:
        raise ValueError(f"--joint-names: name {repeated[0]!r} given for more than one joint")
    return tuple((s,) for s in names)


def _listing(names) -> str:
    return "[" + ", ".join(names) + "]"


def match_log_names(log_names: Sequence[str], accepted: Sequence[Sequence[str]], where: str = "log",
                    joint_names: Sequence[str] | None = None) -> np.ndarray:
    """Index into ``log_names`` of each model joint (``accepted[i]``: the names joint i may have;
    ``joint_names``: the model's own names, for the message, default each joint's first name).

    Names of the log that no joint accepts (a gripper's fingers) are left out. Raises ValueError
    with one line listing the log's names and the model's when a joint is missing or two of a
    joint's names are both in the log."""
    own = [names[0] for names in accepted] if joint_names is None else list(joint_names)
    where_of = {}
    for k, name in enumerate(log_names):
        where_of.setdefault(name, k)
    index = []
    missing, doubled = [], []
    for name, names in zip(own, accepted):
        found = [s for s in names if s in where_of]
        if not found:
            missing.append(name)
        elif len(found) > 1:
            doubled.append((name, found))
        else:
            index.append(where_of[found[0]])
    if missing or doubled:
        # a joint the log may name otherwise shows those names: a (elbow) or a (a, panda_a)
        shown = [name if tuple(names) == (name,) else f"{name} ({', '.join(names)})"
                 for name, names in zip(own, accepted)]
        what = (f"the model's joints {_listing(missing)} are not among them" if missing
                else f"it names joint {doubled[0][0]!r} twice, as {_listing(doubled[0][1])}")
        raise ValueError(f"{where} names joints {_listing(log_names)}; {what}; model joints (and the names a log "
                         f"may give them): {_listing(shown)}; give the log's names in the model's joint order with "
                         "--joint-names NAME1,NAME2,... or as aliases in a model file (robodyn/robot/data/FORMAT.md)")
    return np.asarray(index, int)
