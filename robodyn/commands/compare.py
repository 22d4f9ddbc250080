"""`robodyn compare`: any set of identification methods on the same data, side by side.

Every method runs through the same processing and the same normal equations (one preparation for
all of them); each is scored on the identification data and on held-out data: per-joint torque
RMSE (the layout of Table 4 of Ni et al. 2024), the fitness J the metaheuristics minimise (their
eq. 14: the mean squared torque error summed over the joints, each joint weighted by --weights),
and the time taken.

Data: recordings (identification files, with held-out recordings ``--holdout REC ...`` or the
last ``--holdout-fraction`` of each recording), a simulation (``--simulate ROBOT``, with a
registered ``--plant``), or the real Staubli TX40 set robodyn ships (``--dataset tx40``).

Plants: ``rnea`` is the identifier's own rigid-body model plus Gaussian noise, with exact qd and
qdd: the data come from the very model being fitted, so its numbers show how the optimisers
behave, not how accurate an identification is (the table says so). ``franka_like`` and ``ur_like`` are the realistic
simulator (identification/realistic_logs.py): a MuJoCo arm with effects the model lacks, logged through
a Franka-like or UR-like sensor model; their logs go through the shared processing and every
method is scored against the measured torque of a second run of the same arm, beside that run's
noise floor. With recordings, the realistic plants and the TX40 set, the held-out RMSE is against
the measured (unfiltered) torque.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from robodyn.errors import UserError
from robodyn.identification.names import COMPARABLE

from . import progress as bars
from .common import (RATE_WORDS, add_holdout, add_json, add_out, fraction, nonnegative_float, positive_float,
                     print_json, strict_json)
from .identify import (_floats, _load, _name, add_method_options, add_model_arguments, add_processing_arguments,
                       config_from_args, method_options)


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare identification methods side by side on the same data "
                                       "(identification and held-out torque error, fitness, time)",
                       description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", nargs="*", metavar="REC_OR_CSV", help="identification recordings (.mcap, .csv, .npz)")
    p.add_argument("--methods", default="ols,wls,wso,pso,ga", metavar="M1,M2,...",
                   help="comma list of methods, any of " + ", ".join(COMPARABLE) + " (default ols,wls,wso,pso,ga)")
    p.add_argument("--robot", help="model of the recordings (built-in name or model file)")
    src = p.add_argument_group("held-out data (with recordings)")
    add_holdout(src, "held-out recordings: not identified on, only predicted (as in `robodyn identify --holdout`)")
    src.add_argument("--heldout", dest="heldout_old", nargs="+", help=argparse.SUPPRESS)  # the old spelling
    src.add_argument("--holdout-fraction", type=fraction, default=None, metavar="FRACTION",
                     help="instead of --holdout: hold out the last FRACTION of each recording, by time")
    src.add_argument("--ident", nargs="+", metavar="FILE", help=argparse.SUPPRESS)  # the old spelling of DATA
    sim = p.add_argument_group("simulated data (instead of recordings)")
    sim.add_argument("--simulate", metavar="ROBOT", help="simulate an identification and a held-out run of ROBOT "
                                                          "(panda: the Ni et al. 2024 configuration, 48 base "
                                                          "parameters); qd and qdd exact")
    sim.add_argument("--plant", default="rnea", help="the plant that makes the torques; 'rnea' is the identifier's "
                                                     "own model (the data come from the model being fitted: the "
                                                     "table shows the optimisers, not accuracy); franka_like and "
                                                     "ur_like: the realistic simulator, a MuJoCo arm unlike the "
                                                     "model through a Franka-like / UR-like sensor model; other "
                                                     "plants register through comparison_data.register_plant")
    sim.add_argument("--seconds", type=positive_float, default=60.0, help="length of each simulated run (default 60)")
    sim.add_argument("--rate", type=positive_float, default=None, metavar="HZ",
                     help=f"the simulated recordings' {RATE_WORDS} (default, as Ni et al. 2024: 100; a realistic "
                          "plant's sensor fixes its own)")
    sim.add_argument("--noise", type=nonnegative_float, default=None, help="torque noise, N.m (default 0.5; a realistic "
                                                               "plant's sensor model fixes its own)")
    real = p.add_argument_group("a shipped real data set (instead of recordings)")
    real.add_argument("--dataset", choices=["tx40"], help="the Staubli TX40 set robodyn ships (figaroh-plus, Apache-2.0), "
                                                          "processed once and split (--split)")
    real.add_argument("--split", type=fraction, default=0.5, help="fraction of the run that identifies (default 0.5)")
    real.add_argument("--data-dir", default=None, help="directory of the data set (default: the shipped copy)")
    add_model_arguments(p)
    add_processing_arguments(p)
    add_method_options(p, population_default=150)
    p.add_argument("--iteration-scale", type=positive_float, default=1.0,
                   help="multiply Ni et al. 2024's iteration counts (WSO 3000, PSO 800, GA 460, ICPSO 800); "
                        "--iterations sets one count for all instead")
    add_out(p, "write the comparison as JSON", metavar="JSON")
    p.add_argument("--markdown", metavar="MD", help="also write the table as Markdown")
    add_json(p, "print the comparison as JSON instead of the table")
    p.set_defaults(handler=cmd_compare)


def _methods(text: str) -> list[str]:
    methods = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in methods if m not in COMPARABLE]
    if unknown or not methods:
        raise UserError(f"--methods: expected a comma list of {', '.join(COMPARABLE)}; got {text!r}"
                        + (" (stepwise reads its own flexible-joint recordings: `robodyn identify --method "
                           "stepwise`)" if "stepwise" in unknown else ""))
    return list(dict.fromkeys(methods))


def _data(args):
    """The comparison's data from the command line (recordings, --simulate or --dataset)."""
    from robodyn.identification.comparison import recorded_data, simulated_data, tx40_data
    from robodyn.robot.loader import load_model

    if args.heldout_old:
        print("robodyn compare --heldout: deprecated, use --holdout (the old spelling goes in the next release)",
              file=sys.stderr)
        args.holdout = list(args.holdout or []) + list(args.heldout_old)
    if args.ident:
        print("robodyn compare --ident: deprecated, use `robodyn compare FILE ... --robot R --holdout FILE ...` (the "
              "old spelling goes in the next release)", file=sys.stderr)
    files = list(args.data or []) + list(args.ident or [])
    given = [name for name, on in (("recordings", bool(files)), ("--simulate", bool(args.simulate)),
                                   ("--dataset", bool(args.dataset))) if on]
    if len(given) != 1:
        raise UserError("data: give exactly one of recordings (REC_OR_CSV ...), --simulate ROBOT or --dataset tx40"
                        + (f"; got {' and '.join(given)}" if given else ""))
    if args.dataset:
        return tx40_data(args.data_dir, args.split)
    if args.simulate:
        model = load_model(args.simulate)
        return simulated_data(model, config_from_args(args, model), args.plant, seed=args.seed,
                              seconds=args.seconds, rate=args.rate, noise=args.noise)
    if not args.robot:
        raise UserError("--robot: required with recordings (the model the data come from)")
    if bool(args.holdout) == (args.holdout_fraction is not None):
        raise UserError("held-out data: give --holdout REC ... or --holdout-fraction FRACTION (one of the two)")
    for item in args.holdout or ():
        if _is_number(item) and not Path(item).exists():
            raise UserError(f"--holdout: names held-out recordings, got {item!r}; for the last fraction of each "
                            f"recording use --holdout-fraction {item}")
    model = load_model(args.robot)
    gains = _floats(args.drive_gains, "drive-gains") if args.drive_gains else None
    config = config_from_args(args, model)
    datasets = _load(files, model, gains, name=_name(args))
    held = _load(args.holdout, model, gains, name=_name(args)) if args.holdout else None
    return recorded_data(model, config, datasets, files, held_out=held, held_out_sources=args.holdout or (),
                         holdout=args.holdout_fraction, preprocessed=args.preprocessed)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def compare(args) -> dict:
    """Run every method of --methods on the data of ``args``; the comparison table (JSON-ready)."""
    from robodyn.identification.comparison import compare_methods

    methods = _methods(args.methods)
    data = _data(args)
    options = method_options(args, "ols")
    with bars.bar(args, total=100, desc="compare", unit="%") as stage_bar, \
            bars.bar(args, desc="iterations", unit="it") as it_bar:
        return compare_methods(data, methods, options, iteration_scale=args.iteration_scale, epochs=args.epochs,
                               progress=bars.stages(stage_bar),
                               iteration_callback=bars.iterations(it_bar, fitness_label="J"))


def cmd_compare(args) -> int:
    from robodyn.identification.comparison import format_table

    table = compare(args)
    text = format_table(table)
    if table.get("inverse_crime"):
        text = ("NOTE: data origin own-model: the torques were made by the very model being fitted, so these "
                "numbers show how the optimisers behave, not how accurate an identification is.\n\n" + text)
    if args.out:
        Path(args.out).write_text(json.dumps(strict_json(table), indent=1, allow_nan=False))
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.json:
        print_json(table)
        return 0
    written = [f"{what} written to {path}" for what, path in (("comparison", args.out), ("table", args.markdown)) if path]
    print(text)
    print(f"RMSE against {table['against']}; J = mean squared torque error summed over the joints (weighted by "
          "--weights; Ni et al. 2024 eq. 14) on the identification data")
    if "noise_floor" in table:
        floor = table["noise_floor"]
        print("held-out noise floor (measured - the plant's own torque): "
              + ", ".join(f"{x:.4f}" for x in floor["rmse"]) + f" N.m, sum {floor['rmse_sum']:.4f}")
    for r in table["rows"]:
        print(f"{r['method']:>10}: J = {r['fitness']:.6f} N.m^2 (gap to best {r['fitness_gap_to_best']:.3g}), "
              f"{r['elapsed_s']:.2f} s")
    for line in written:
        print(line)
    return 0
