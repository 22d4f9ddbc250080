"""`robodyn demo`: the main job on a fresh machine.

Today it prints the simulated Panda's dynamic model (joints, limits, the 48 base parameters
of seed 000 Table 3). It grows into the full simulated loop (daemon, excitation, recording,
identification, validation) as those parts land.
"""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("demo", help="run the simulated end-to-end demo")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_demo)


def cmd_demo(args) -> int:
    from robodyn.robot.cli import cmd_model

    class ModelArgs:
        robot = "panda"
        rotor_inertia = True
        friction = ""
        json = args.json

    return cmd_model(ModelArgs)
