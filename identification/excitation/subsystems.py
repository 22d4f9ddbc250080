"""Sub-experiments of a stepwise identification (Chen et al. 2021, Table 3): which joints move and
which part of the model the experiment is designed for.

Chen et al. 2021 identify friction first, each link moving alone, then the inertial parameters
link by link, and design one excitation per step. A sub-experiment restricts the excitation
criterion to the rows (joint torques) and columns (base parameters) of that step:

- ``part="rigid"``: the inertial and gravity base parameters of the first moving link and of every
  link it carries (a locked joint nearer the base only sees the constant gravity of the links
  before it, which carries no information), on the torques of every joint;
- ``part="friction"``: the friction columns (FV, FC, FO) of the moving joints, on their own torques.

Joints that do not move are held at the design's fixed start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

PARTS = ("rigid", "friction")
FRICTION_KINDS = ("FV", "FC", "FO")
_NAME = re.compile(r"^([A-Z]+?)(\d+)R?$")


def parameter_joint(name: str) -> tuple[str, int]:
    """('ZZ', 1) for 'ZZ1R', ('FV', 2) for 'FV2': the kind and the 1-based joint of a base parameter.
    Parameters of shared motors (IAM1, FVM1 ...) have no single joint: ('IAM', 0)."""
    m = _NAME.match(name)
    if m is None:
        raise ValueError(f"base parameter {name!r}: cannot tell which joint it belongs to")
    kind, joint = m.group(1), int(m.group(2))
    if kind.endswith("M") and kind[:-1] in ("IA", "FV", "FC"):
        return kind, 0
    return kind, joint


@dataclass(frozen=True)
class SubExperiment:
    """``moving``: 0-based joints that move (None: all); ``part``: "rigid" or "friction"."""

    moving: tuple[int, ...] | None = None
    part: str = "rigid"

    def __post_init__(self):
        if self.part not in PARTS:
            raise ValueError(f"part: expected one of {list(PARTS)}, got {self.part!r}")
        if self.moving is not None:
            moving = tuple(sorted({int(j) for j in self.moving}))
            if not moving or moving[0] < 0:
                raise ValueError(f"moving: expected one or more 0-based joint indices, got {self.moving!r}")
            object.__setattr__(self, "moving", moving)

    def moving_joints(self, dof: int) -> tuple[int, ...]:
        moving = tuple(range(dof)) if self.moving is None else self.moving
        if moving[-1] >= dof:
            raise ValueError(f"moving: joint {moving[-1] + 1} does not exist on a {dof}-joint robot")
        return moving

    def label(self, dof: int) -> str:
        moving = self.moving_joints(dof)
        who = "all links" if len(moving) == dof else " + ".join(f"link {j + 1}" for j in moving) + " alone"
        return f"{who}, {'friction' if self.part == 'friction' else 'rigid-body'} model"

    def selection(self, names: list[str], dof: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cols): the joints whose torques enter and the base parameters the step identifies."""
        moving = self.moving_joints(dof)
        kinds = [parameter_joint(n) for n in names]
        if self.part == "friction":
            cols = [k for k, (kind, j) in enumerate(kinds) if kind in FRICTION_KINDS and j - 1 in moving]
            rows = list(moving)
            if not cols:
                raise ValueError("part: friction needs friction columns (ColumnSpec friction viscous/coulomb)")
        else:
            first = moving[0]
            cols = [k for k, (kind, j) in enumerate(kinds)
                    if kind not in FRICTION_KINDS and not kind.endswith("M") and j - 1 >= first]
            rows = list(range(dof))
        return np.asarray(rows, int), np.asarray(cols, int)

    def to_dict(self) -> dict:
        return {"moving": None if self.moving is None else [j + 1 for j in self.moving], "part": self.part}
