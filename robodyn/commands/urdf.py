"""`robodyn export-urdf RESULT`: one command writes every URDF robodyn makes, the inertial parameters
of a physically consistent identification or the joint origins of a kinematic calibration (the
old `robodyn calibrate export-urdf` is its deprecated name)."""

from __future__ import annotations

import json
from pathlib import Path

from .common import FORCE_HELP, add_json, add_out, output_path, print_json


DEFAULT_OUT = "robot_identified.urdf"


def register(sub) -> None:
    p = sub.add_parser("export-urdf", help="write an identified model as URDF: the inertial parameters of a "
                                           "physically consistent identification, or the joint origins of a "
                                           "kinematic calibration")
    p.add_argument("result", help="result JSON of `robodyn identify --method consistent`, or a calibration of "
                                  "`robodyn calibrate identify`")
    add_out(p, "URDF file (default: robot_identified.urdf in the current folder for an identification, never "
               "overwritten without --force; a calibration's URDF is printed)", metavar="URDF")
    p.add_argument("--robot", help="identification: model (default: the one named in the result)")
    p.add_argument("--verify", action="store_true",
                   help="identification: load the URDF in pinocchio and MuJoCo and compare torques on random states")
    p.add_argument("--name", default=None, help="calibration: the robot name written in the URDF")
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.add_argument("--accept-failed", action="store_true",
                   help="calibration: use it even if its fit failed (the file's status is 'failed')")
    p.add_argument("--data", metavar="REC",
                   help="identification: the recording the result was identified on: check the file on the states `robodyn predict` "
                        "evaluates it at (processed as at identification) and state, per joint, the size there of "
                        "each identified term the format cannot hold")
    add_json(p)
    p.set_defaults(handler=cmd_export_urdf)


def cmd_export_urdf(args) -> int:
    from robodyn.identification.result import read_result
    from robodyn.identification.urdf_export import export_urdf, verify_urdf
    from robodyn.robot.loader import load_model

    if _is_calibration(args.result):
        from .calibrate import cmd_export_urdf as export_calibration

        args.calibration = args.result
        return export_calibration(args)  # its --out is named or the URDF is printed: nothing overwritten unasked
    result = read_result(args.result)
    if result.consistent is None:
        raise ValueError(f"{args.result}: has no physically consistent parameters; run `robodyn identify --method "
                         "consistent` first (a URDF needs full, feasible standard parameters)")
    model = load_model(args.robot or result.robot_ref or result.robot)
    text = export_urdf(model, result.consistent, result.base)
    args.out = str(output_path(args.out, DEFAULT_OUT, args.force))
    Path(args.out).write_text(text)
    report = None
    if args.verify:
        from robodyn.identification.regressor import sample_states

        q, qd, qdd = sample_states(model, 50, seed=3)
        report = verify_urdf(text, model, result.base, result.standard, q, qd, qdd)
    on_data = None
    if args.data:
        from robodyn.identification.data import load_dataset
        from robodyn.identification.urdf_export import check_urdf_on_states, identification_states

        states = identification_states(model, result, load_dataset(args.data, model=model))
        on_data = check_urdf_on_states(text, model, result, states)
    if args.json:
        print_json({"out": args.out, "verification": report, "on_data": on_data})
        return 0
    print(f"URDF written to {args.out}")
    if report is not None:
        print(f"pinocchio max |tau - tau_identified| = {report['pinocchio']['max_abs_error']:.3g} N.m, "
              f"MuJoCo {report['mujoco']['max_abs_error']:.3g} N.m over {report['samples']} random states")
    if on_data is not None:
        from robodyn.identification.urdf_export import unrepresented_lines

        r = on_data["pinocchio_rnea"]
        print(f"pinocchio RNEA (armature from the file) vs robodyn's rigid-body prediction on the {on_data['samples']} "
              f"processed states of {args.data}: max |difference| {r['max_abs_error']:.3g} N.m, "
              f"{r['max_relative_error']:.2g} of the largest torque")
        print("\n".join(unrepresented_lines(on_data["unrepresented"])))
    return 0


def _is_calibration(path) -> bool:
    """A kinematic calibration file (calibrate identify), not an identification result."""
    from robodyn.calibration.result_file import RESULT_FORMAT

    try:
        return json.loads(Path(path).read_text()).get("format") == RESULT_FORMAT
    except (OSError, ValueError, AttributeError):
        return False  # read_result says what is wrong with it
