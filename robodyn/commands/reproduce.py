"""`robodyn reproduce PAPER`: a source paper's headline table beside robodyn's, on the paper's setup
(robodyn.reproduce). `robodyn stepwise-flexible` is the old name of
`robodyn reproduce stepwise --part flexible`."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from robodyn.papers import cite

from .common import add_json, add_out, deprecated, nonnegative_float, print_json


def register(sub) -> None:
    from robodyn.reproduce import PAPER_KEYS, PARTS

    lines = "\n".join(f"  {k:<12} {cite(k)}" + (f" (parts: {', '.join(PARTS[k])})" if k in PARTS else "")
                      for k in PAPER_KEYS)
    p = sub.add_parser("reproduce", help="a source paper's headline table beside robodyn's, on the paper's setup",
                       description="Print a paper's headline table beside robodyn's numbers on the paper's setup, "
                                   "with the command behind every number and, where a number is not reached, why.\n\n"
                                   "Papers:\n" + lines, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paper", choices=PAPER_KEYS, metavar="PAPER", help="one of: " + ", ".join(PAPER_KEYS))
    p.add_argument("--part", default=None, metavar="PART",
                   help="one part of a paper that has several (stepwise: table3 = the excitation design of Table 3, "
                        "flexible = the stepwise identification of the simulated flexible-joint arm, recorded = the "
                        "same from recordings of a plant the identifier does not model exactly; wso: table4 = Table 4 on "
                        "substitute data at the paper's and at equal budgets, table2 = the friction experiment on a plant "
                        "unlike the model, pipeline = the paper's pipeline on that plant, real_panda = Table 4 on a real "
                        "Panda's public log (needs --data-dir); calibration: ur5 = Tables 3-5 on the simulated UR5, heavy = the same procedure on "
                        "the heavy-arm plant, an ablation: not the paper's UR5); default all")
    p.add_argument("--quick", action="store_true", help="smaller budgets (a smoke run; numbers differ from the paper "
                                                        "setup's)")
    add_json(p)
    add_out(p, "the JSON report, also written here", metavar="JSON")
    p.add_argument("--plot", default=None, metavar="PREFIX",
                   help="calibration only (part ur5): PNG plots of the held-out position error per pose for every method, "
                        "PREFIX_no_load.png and PREFIX_loaded.png (needs the plot extra: matplotlib)")
    p.add_argument("--data-dir", default=None, metavar="DIR",
                   help="ur10e: a copy of the dynamic_calibration repository (git clone "
                        "https://github.com/shamilmamedov/dynamic_calibration: a checkout, a bare clone or a folder of "
                        "its CSV logs and ur10e.urdf; default the environment variable ROBODYN_UR10E_DATA). wso, part "
                        "real_panda: a checkout of https://github.com/marcocognetti/FrankaEmikaPandaDynModel or its "
                        "rbt_log folder (default ROBODYN_PANDA_DATA)")
    p.set_defaults(handler=cmd_reproduce)

    p = sub.add_parser("stepwise-flexible")  # deprecated: not listed
    p.add_argument("--robot", default="twolink", help="flexible-joint robot to simulate (default twolink)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the simulated noise (default 0)")
    p.add_argument("--sensor-noise", type=nonnegative_float, default=0.02,
                   help="joint torque sensor noise, N.m (default 0.02)")
    p.add_argument("--motor-noise", type=nonnegative_float, default=1e-4,
                   help="motor torque noise, N.m (default 1e-4)")
    add_out(p, "the JSON report, also written here", metavar="JSON")
    add_json(p)
    p.set_defaults(handler=deprecated(cmd_stepwise_flexible, "stepwise-flexible", "reproduce stepwise --part flexible"))


def cmd_reproduce(args) -> int:
    from robodyn.reproduce import json_default, reproduce

    if args.plot:  # refused before the run, not after it
        import importlib.util
        from pathlib import Path

        from robodyn.errors import UserError

        if importlib.util.find_spec("matplotlib") is None:
            raise UserError("plot: matplotlib is not installed; install the plot extra (pip install matplotlib) "
                            "or leave out --plot")
        folder = Path(args.plot).parent
        if not folder.is_dir():
            raise UserError(f"plot: the folder {str(folder)!r} of the prefix {args.plot!r} does not exist")
    rep = reproduce(args.paper, quick=args.quick, part=args.part, plot=args.plot, data_dir=args.data_dir)
    doc = rep.to_dict()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1, default=json_default)
    if args.json:
        print_json(doc)
    else:
        print(rep.format())
    if args.plot:
        print(f"plots: {args.plot}_no_load.png, {args.plot}_loaded.png", file=sys.stderr)
    return 0


def cmd_stepwise_flexible(args) -> int:
    from robodyn.reproduce import stepwise_flexible

    res = stepwise_flexible(args.robot, seed=args.seed, sensor_noise=args.sensor_noise, motor_noise=args.motor_noise)
    doc = res.to_dict()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1, default=float)
    if args.json:
        print_json(doc)
        return 0
    for step in doc["order"]:
        print(f"step {' + '.join(step['groups'])}: {step['reason']}")
    print(f"stiffness K = {np.round(res.stiffness, 1).tolist()} (true {res.truth['stiffness']})")
    print(f"motor inertia B = {res.motor['inertia']} (true {res.truth['motor_inertia']})")
    print(f"sensor offset M0 = {np.round(res.sensor_offset, 4).tolist()} (true {res.truth['sensor_offset']})")
    stacked = [s["cond"] for s in doc["analysis"]["motor_and_stiffness_stacked"]]
    print(f"cond(motor + stiffness stacked, eq. 14) = {[f'{c:.3g}' for c in stacked]} vs motor alone "
          f"{[round(s['cond'], 1) for s in doc['analysis']['motor']]}")
    return 0
