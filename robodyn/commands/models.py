"""`robodyn models` and `robodyn model NAME|FILE`."""

from __future__ import annotations

import sys

from .common import LegacyFrictionColumns, add_friction, add_json, add_rotor_inertia, print_json


def register(sub) -> None:
    p = sub.add_parser("models", help="list the built-in robot models")
    add_json(p)
    p.set_defaults(handler=cmd_models)

    p = sub.add_parser("model", help="print a robot model: joints, limits, standard and base parameters")
    p.add_argument("robot", metavar="NAME|FILE", help="built-in model name, or a .toml / .urdf file")
    add_rotor_inertia(p, default=False, extra="with it, the base parameters show where it merges into the link "
                                              "inertia")
    add_friction(p, default="none", legacy_columns=True,
                 extra="every law but none adds three parameters per joint (viscous, Coulomb, offset)")
    add_json(p)
    p.set_defaults(handler=cmd_model)

    p = sub.add_parser("drivers", help="list the robot drivers the daemon can run, or one driver's options")
    p.add_argument("name", nargs="?", metavar="NAME", help="a driver: list its options (name, default, "
                                                          "accepted values, what it does)")
    add_json(p)
    p.set_defaults(handler=cmd_drivers)


def cmd_drivers(args) -> int:
    from robodyn.drivers.registry import drivers_help, get_spec, listing, options_help
    from robodyn.errors import UserError

    if args.name is not None:
        try:
            get_spec(args.name)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    if args.json:
        rows = listing()
        print_json([r for r in rows if args.name is None or r["name"] == args.name])
    elif args.name is None:
        print(drivers_help())
    else:
        print(options_help(args.name))
    return 0


def cmd_models(args) -> int:
    from robodyn.robot.loader import builtin_model_names, load_model

    rows = []
    for name in builtin_model_names():
        m = load_model(name)
        rows.append({"name": name, "dof": m.dof, "description": m.description,
                     "convention": m.dh.convention if m.dh else "urdf"})
    if args.json:
        print_json(rows)
    else:
        print(f"{'model':<10} {'joints':>6}  {'frames':<6} description")
        for r in rows:
            print(f"{r['name']:<10} {r['dof']:>6}  {r['convention']:<6} {r['description']}")
    return 0


def cmd_model(args) -> int:
    from robodyn.identification.base_params import base_parameters
    from robodyn.identification.config import IdentificationConfig
    from robodyn.identification.regressor import ColumnSpec, parameter_names

    from robodyn.robot.loader import load_model

    model = load_model(args.robot)
    if isinstance(args.friction, LegacyFrictionColumns):  # the old spelling: a comma list of columns
        print(f"robodyn model --friction {','.join(args.friction)}: deprecated, use --friction LAW (none, "
              "coulomb-viscous, stribeck or sigmoid; the old spelling goes in the next release)", file=sys.stderr)
        spec = ColumnSpec(args.rotor_inertia, tuple(args.friction))
    else:  # the columns an identification with these options fits
        spec = IdentificationConfig(friction=args.friction, rotor_inertia=args.rotor_inertia).spec
    base = base_parameters(model, spec)
    report = model.summary()
    report["parameters"] = {
        "columns": {"rotor_inertia": spec.rotor_inertia, "friction": list(spec.friction)},
        "standard_count": len(parameter_names(model, spec)),
        "base_count": base.count,
        "unidentifiable": [base.standard_names[i] for i in base.unidentifiable],
        "base": [{"name": n, "expression": e} for n, e in zip(base.names, base.expressions())],
    }
    if args.json:
        print_json(report)
        return 0
    print(f"{model.name}: {model.description}  ({model.dof} joints, gravity {model.gravity.tolist()})")
    print(f"{'joint':<10}{'type':<10}{'q_min':>9}{'q_max':>9}{'qd_max':>9}{'qdd_max':>9}{'jerk_max':>10}{'tau_max':>9}")
    for j in report["joints"]:
        print(f"{j['name']:<10}{j['type']:<10}" + "".join(
            f"{_fmt(j[f]):>9}" if f != "qddd_max" else f"{_fmt(j[f]):>10}"
            for f in ("q_min", "q_max", "qd_max", "qdd_max", "qddd_max", "tau_max")))
    par = report["parameters"]
    cols = "inertial" + (" + rotor inertia" if spec.rotor_inertia else "") + \
        (f" + friction ({', '.join(spec.friction)})" if spec.friction else "")
    print(f"\nstandard parameters: {par['standard_count']} ({cols})")
    print(f"base parameters:     {par['base_count']}")
    print(f"unidentifiable:      {len(par['unidentifiable'])} ({' '.join(par['unidentifiable'])})")
    print()
    for b in par["base"]:
        print("  " + b["expression"])
    return 0


def _fmt(v) -> str:
    return v if isinstance(v, str) else f"{v:.4g}"
