"""``robodyn export-mjcf``: a physically consistent result as a MuJoCo model."""

from __future__ import annotations

from pathlib import Path

from .common import FORCE_HELP, add_json, add_out, output_path, print_json


DEFAULT_OUT = "robot_identified.xml"


def register(sub) -> None:
    p = sub.add_parser("export-mjcf", help="write a physically consistent result as a MuJoCo model (MJCF)",
                       description="Write the identified inertials, rotor inertia (armature), viscous friction "
                                   "(damping) and Coulomb friction (frictionloss) into an MJCF file with the robot "
                                   "model's kinematics, one motor per joint and the joint map.")
    p.add_argument("result", help="result JSON of `robodyn identify --method consistent`")
    add_out(p, f"MJCF file to write (default ./{DEFAULT_OUT}, never overwritten without --force)", metavar="FILE.xml")
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.add_argument("--robot", help="model (default: the one named in the result)")
    p.add_argument("--verify", action="store_true",
                   help="load the file in MuJoCo and compare its inverse dynamics with robodyn's prediction on "
                        "random states (needs the mujoco package: pip install 'robodyn[sim]')")
    p.add_argument("--data", metavar="REC",
                   help="the recording the result was identified on: check the file on the states `robodyn predict` "
                        "evaluates it at (processed as at identification) and state, per joint, the size there of "
                        "each identified term the format cannot hold")
    add_json(p)
    p.set_defaults(handler=cmd_export_mjcf)


def cmd_export_mjcf(args) -> int:
    from robodyn.identification.mjcf_export import export_mjcf, verify_mjcf
    from robodyn.identification.result import read_result
    from robodyn.robot.loader import load_model

    result = read_result(args.result)
    model = load_model(args.robot or result.robot_ref or result.robot)
    args.out = str(output_path(args.out, DEFAULT_OUT, args.force))
    text, notes = export_mjcf(model, result)
    Path(args.out).write_text(text)
    report = None
    if args.verify:
        from robodyn.identification.regressor import sample_states

        q, qd, qdd = sample_states(model, 200, seed=3)
        report = verify_mjcf(text, model, result, q, qd, qdd)
    on_data = None
    if args.data:
        from robodyn.identification.data import load_dataset
        from robodyn.identification.mjcf_export import check_mjcf_on_states
        from robodyn.identification.urdf_export import identification_states

        states = identification_states(model, result, load_dataset(args.data, model=model))
        on_data = check_mjcf_on_states(text, model, result, states)
    if args.json:
        print_json({"out": args.out, "notes": notes, "verification": report, "on_data": on_data})
        return 0
    print(f"MJCF written to {args.out} ({model.dof} joints)")
    for note in notes:
        print(f"note: {note}")
    if report is not None:
        w = report["with_frictionloss"]
        # either part is None when every joint sample is saturated, or none is
        saturated = ("" if w["max_abs_error"] is None else f"{w['max_abs_error']:.3g} N.m where its constraint is "
                     f"saturated ({100 * w['saturated_fraction']:.0f}% of joint samples)")
        unsaturated = ("" if w["unsaturated_max_abs_error"] is None else f"up to {w['unsaturated_max_abs_error']:.3g} "
                       "N.m where it is not (there MuJoCo's dry friction holds less than FC)")
        print(f"MuJoCo mj_inverse vs robodyn on {report['samples']} random states: max |difference| "
              f"{report['without_frictionloss']['max_abs_error']:.3g} N.m with frictionloss zeroed and FC sgn(qd) "
              f"added; with frictionloss " + ", ".join(part for part in (saturated, unsaturated) if part))
    if on_data is not None:
        from robodyn.identification.urdf_export import unrepresented_lines

        r, f = on_data["rigid_body"], on_data["with_joint_friction"]
        print(f"MuJoCo mj_inverse vs robodyn on the {on_data['samples']} processed states of {args.data}: rigid body "
              f"(armature; damping and frictionloss zeroed) max |difference| {r['max_abs_error']:.3g} N.m "
              f"({r['max_relative_error']:.2g} of the largest torque)"
              + ("" if f is None else f"; as written, where frictionloss is saturated "
                 f"({100 * on_data['saturated_fraction']:.0f}% of joint samples), {f['max_abs_error']:.3g} N.m"))
        print("\n".join(unrepresented_lines(on_data["unrepresented"])))
    return 0
