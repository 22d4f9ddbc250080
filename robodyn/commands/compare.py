"""`robodyn compare`: any set of identification methods on the same data, side by side.

Every method runs through the same processing and the same normal equations (one preparation for
all of them); each is scored on the identification data and on held-out data: per-joint torque
RMSE (the layout of Table 4 of Ni et al. 2024), the fitness J of their eq. 14, and the time taken.

Data: recordings (identification files, with held-out files or the last fraction of each
recording), a simulation (``--simulate ROBOT``, with a registered ``--plant``), or the real Staubli
TX40 set shipped with the tests (``--dataset tx40``).

Plants: ``rnea`` is the identifier's own rigid-body model plus Gaussian noise, with exact qd and
qdd (an inverse crime: the table says so). ``franka_like`` and ``ur_like`` are the realistic
simulator (identification/realistic.py): a MuJoCo arm with effects the model lacks, logged through
a Franka-like or UR-like sensor model; their logs go through the shared processing and every
method is scored against the measured torque of a second run of the same arm, beside that run's
noise floor. With recordings, the realistic plants and the TX40 set, the held-out RMSE is against
the measured (unfiltered) torque.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from robodyn.cli import UserError, _strict, print_json
from robodyn.identification.methods import DESCRIPTIONS, METHODS
from robodyn.papers import cite

from . import progress as bars
from .common import add_json
from .identify import (_floats, _load, add_method_options, add_model_arguments, add_processing_arguments,
                       config_from_args, method_options)

TX40_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "staubli_tx40"
COMPARABLE = tuple(m for m in METHODS if m != "stepwise")


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare identification methods side by side on the same data "
                                       "(identification and held-out torque error, fitness, time)",
                       description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", nargs="*", metavar="REC_OR_CSV", help="identification recordings (.mcap, .csv, .npz)")
    p.add_argument("--methods", default="ols,wls,wso,pso,ga", metavar="M1,M2,...",
                   help="comma list of methods, any of " + ", ".join(COMPARABLE) + " (default ols,wls,wso,pso,ga)")
    p.add_argument("--robot", help="model of the recordings (built-in name or model file)")
    src = p.add_argument_group("held-out data (with recordings)")
    src.add_argument("--heldout", nargs="+", metavar="FILE", help="held-out recordings")
    src.add_argument("--holdout", type=float, default=None, metavar="FRACTION",
                     help="instead of --heldout: the last FRACTION of each recording, by time")
    src.add_argument("--ident", nargs="+", metavar="FILE", help=argparse.SUPPRESS)  # the old spelling of DATA
    sim = p.add_argument_group("simulated data (instead of recordings)")
    sim.add_argument("--simulate", metavar="ROBOT", help="simulate an identification and a held-out run of ROBOT "
                                                          "(panda: the Ni et al. 2024 configuration, 48 base "
                                                          "parameters); qd and qdd exact")
    sim.add_argument("--plant", default="rnea", help="the plant that makes the torques; 'rnea' is the identifier's "
                                                     "own model (an inverse crime, labelled so); franka_like and "
                                                     "ur_like: the realistic simulator, a MuJoCo arm unlike the "
                                                     "model through a Franka-like / UR-like sensor model; other "
                                                     "plants register through metaheuristic.register_plant")
    sim.add_argument("--seconds", type=float, default=60.0, help="length of each simulated run (default 60)")
    sim.add_argument("--rate", type=float, default=None, help="sampling rate, Hz (default, as Ni et al. 2024: 100; "
                                                              "a realistic plant's sensor fixes its own)")
    sim.add_argument("--noise", type=float, default=None, help="torque noise, N.m (default 0.5; a realistic "
                                                               "plant's sensor model fixes its own)")
    real = p.add_argument_group("a shipped real data set (instead of recordings)")
    real.add_argument("--dataset", choices=["tx40"], help="the Staubli TX40 set shipped in tests/data/staubli_tx40, "
                                                          "processed once and split (--split)")
    real.add_argument("--split", type=float, default=0.5, help="fraction of the run that identifies (default 0.5)")
    real.add_argument("--data-dir", default=None, help="directory of the data set (default: the shipped copy)")
    add_model_arguments(p)
    add_processing_arguments(p)
    add_method_options(p, population_default=150)
    p.add_argument("--iteration-scale", type=float, default=1.0,
                   help="multiply Ni et al. 2024's iteration counts (WSO 3000, PSO 800, GA 460, ICPSO 800); "
                        "--iterations sets one count for all instead")
    p.add_argument("--out", metavar="JSON", help="write the comparison as JSON")
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
    """(model, config, identification data, held-out data, preprocessed, sources, plant)."""
    from robodyn.identification.metaheuristic import (ASSUMED_PANDA_ROTOR_INERTIA, PLANTS, TX40_PLANT,
                                                      tx40_raw_after, tx40_split)
    from robodyn.robot.loader import load_model

    if args.ident:
        print("robodyn compare --ident: deprecated, use `robodyn compare FILE ... --robot R --heldout FILE ...` (the "
              "old spelling goes in the next release)", file=sys.stderr)
    files = list(args.data or []) + list(args.ident or [])
    given = [name for name, on in (("recordings", bool(files)), ("--simulate", bool(args.simulate)),
                                   ("--dataset", bool(args.dataset))) if on]
    if len(given) != 1:
        raise UserError("data: give exactly one of recordings (REC_OR_CSV ...), --simulate ROBOT or --dataset tx40"
                        + (f"; got {' and '.join(given)}" if given else ""))
    if args.dataset:
        directory = Path(args.data_dir) if args.data_dir else TX40_DIR
        model, config, ident, held = tx40_split(directory, args.split)
        sources = [f"{directory}: the 9 s run processed once; its first {args.split:.0%} identifies, the rest is "
                   "held out and scored against its measured (unfiltered) torque"]
        return model, config, [ident], [held], True, sources, {"description": TX40_PLANT, "inverse_crime": False,
                                                               "measured_heldout": [tx40_raw_after(directory, held)]}
    if args.simulate:
        model = load_model(args.simulate)
        if args.plant not in PLANTS:
            raise ValueError(f"plant: unknown {args.plant!r}; registered: {sorted(PLANTS)}")
        plant = PLANTS[args.plant]
        if plant.sensor is not None:
            return _realistic_data(args, model, plant)
        rate = 100.0 if args.rate is None else args.rate
        noise = 0.5 if args.noise is None else args.noise
        rotor = np.array(ASSUMED_PANDA_ROTOR_INERTIA) if model.name == "panda" else model.rotor_inertia
        runs = [plant.simulate(model, seed=args.seed + k, seconds=args.seconds, rate_hz=rate, noise=noise,
                               rotor_inertia=rotor) for k in (0, 1)]
        config = config_from_args(args, model)
        # the simulated torques carry no friction: identify the rigid body (and rotor inertia) only
        config.friction = "none"
        sources = [f"simulated {model.name}: {plant.description}, {noise} N.m noise, {args.seconds} s at "
                   f"{rate} Hz, seeds {args.seed} (identification) and {args.seed + 1} (held out)"]
        return (model, config, runs[:1], runs[1:], plant.exact_derivatives, sources,
                {"description": plant.description, "inverse_crime": not plant.differs_from_model})
    if not args.robot:
        raise UserError("--robot: required with recordings (the model the data come from)")
    if bool(args.heldout) == (args.holdout is not None):
        raise UserError("held-out data: give --heldout FILE ... or --holdout FRACTION (one of the two)")
    model = load_model(args.robot)
    gains = _floats(args.drive_gains, "drive-gains") if args.drive_gains else None
    config = config_from_args(args, model)
    datasets = _load(files, model, gains)
    if args.heldout:
        ident, held = datasets, _load(args.heldout, model, gains)
        sources = files + list(args.heldout)
    else:
        from robodyn.identification.selection import split_by_time

        pairs = [split_by_time(d, args.holdout) for d in datasets]
        ident, held = [a for a, _ in pairs], [b for _, b in pairs]
        sources = [f"{f} (the last {args.holdout:.0%} held out, by time)" for f in files]
    return model, config, ident, held, args.preprocessed, sources, {"description": "recordings",
                                                                     "inverse_crime": False}


def _realistic_data(args, model, plant):
    """Two runs of one realistic arm (identification/realistic.py): seed S identifies, seed S+1 (a
    second excitation of the same arm, recorded after it) is held out. Raw logs: the shared
    processing, and scores against what the sensor measured."""
    from robodyn.identification.realistic import SENSORS

    for name, value in (("--rate", args.rate), ("--noise", args.noise)):
        if value is not None:
            raise UserError(f"{name}: the {plant.name} plant's {plant.sensor}-like sensor model fixes the sampling "
                            f"rate ({SENSORS[plant.sensor]['rate_hz']:g} Hz) and the noise; drop {name}")
    try:
        logs = [plant.record(model, seed=args.seed + k, seconds=args.seconds) for k in (0, 1)]
    except ValueError as exc:
        raise UserError(f"--simulate: the {plant.name} plant cannot run {model.name}: {exc}") from exc
    config = config_from_args(args, model)
    floor = logs[1].noise_floor
    sources = [f"simulated {model.name}: {plant.description}; {args.seconds} s per run, excitation and sensor seeds "
               f"{args.seed} (identification) and {args.seed + 1} (held out), the same arm (plant seed 7)"]
    return (model, config, [logs[0].data], [logs[1].data], False, sources,
            {"description": plant.description, "inverse_crime": False, "plant_name": plant.name,
             "noise_floor": {"rmse": floor.tolist(), "rmse_sum": float(floor.sum()),
                             "note": "held-out run: RMS of measured torque - the plant's own torque at the measured "
                                     "samples, in the measurement's units (the best any model can do)"}})


def _iterations(args, method: str) -> int | None:
    from robodyn.identification.metaheuristic import METAHEURISTICS, NI2024_ITERATIONS

    if method not in METAHEURISTICS:
        return None
    if args.iterations is not None:
        return args.iterations
    return max(1, int(round(NI2024_ITERATIONS[method] * args.iteration_scale)))


def compare(args) -> dict:
    """Run every method of --methods on the data of ``args``; the comparison table (JSON-ready)."""
    from robodyn.identification.estimators import ols
    from robodyn.identification.metaheuristic import QuadraticFitness, joint_weights
    from robodyn.identification.methods import identify_method, joint_weights_from, prepare_statistics
    from robodyn.identification.pipeline import validate_many

    methods = _methods(args.methods)
    model, config, ident, held, preprocessed, sources, plant = _data(args)
    joints = list(model.joint_names)
    with bars.bar(args, total=len(methods) + 1, desc="compare", unit="step") as overall:
        overall.set_description_str("preparing the data", refresh=True)
        prep, ne = prepare_statistics(model, ident, config, preprocessed=preprocessed)
        held_ne = prepare_statistics(model, held, prep.config, preprocessed=True)[1] if preprocessed else None
        overall.update(1)
        weights = joint_weights_from(args.weights, ne)
        fitness = QuadraticFitness.from_statistics(ne, weights)
        rows, thetas, iterations = [], [], {}
        for method in methods:
            overall.set_description_str(f"{method}: {DESCRIPTIONS[method]}", refresh=True)
            options = method_options(args, method)
            if _iterations(args, method) is not None:
                options.iterations = iterations[method] = _iterations(args, method)
            t0 = time.perf_counter()
            with (bars.bar(args, total=options.iterations, desc=method, unit="it") if method in iterations
                  else bars.none()) as it_bar:
                outcome = identify_method(model, ident, config, method, options=options, prepared=(prep, ne),
                                          iteration_callback=bars.iterations(it_bar, fitness_label="J"))
            elapsed = time.perf_counter() - t0
            theta = outcome.result.estimate.theta
            row = {"method": method, "fitness": float(fitness(theta)[0]), "elapsed_s": elapsed}
            meta = outcome.details.get("metaheuristic")
            if meta:
                row.update(nfev=meta["nfev"], iterations=meta["iterations"], history_every_10=meta["history"][::10])
            if "consistent" in outcome.details:
                row["feasible"] = outcome.details["consistent"]["feasibility"]["feasible"]
            rows.append(row)
            thetas.append(theta)
            overall.update(1)
    if plant.get("measured_heldout"):  # processed once for the fit; held out against the measured torque
        measured = validate_many(model, prep, thetas, plant["measured_heldout"])
        scores = [(ne.metrics(th, joints), out) for th, out in zip(thetas, measured)]
        for row, th in zip(rows, thetas):
            processed = held_ne.metrics(th, joints)
            row.update(heldout_processed_rmse=processed["rmse"], heldout_processed_sum=processed["rmse_sum"])
        against = ("the measured (unfiltered) torque of the held-out part; the identification part against its "
                   "processed torque; heldout_processed_* against the processed torque")
    elif preprocessed:  # exact qd, qdd: the normal equations are the data, sample for sample
        scores = [(ne.metrics(th, joints), held_ne.metrics(th, joints)) for th in thetas]
        against = "the (preprocessed) torque of the data"
    else:  # against what the sensor measured, each piece processed as for the fit
        scores = list(zip(validate_many(model, prep, thetas, ident), validate_many(model, prep, thetas, held)))
        against = "the measured torque"
    for row, (fit, out) in zip(rows, scores):
        row.update(identification_rmse=fit["rmse"], identification_sum=fit["rmse_sum"],
                   heldout_rmse=out["rmse"], heldout_sum=out["rmse_sum"])
    best = min([float(fitness(ols(ne, prep.names).theta)[0])] + [r["fitness"] for r in rows])
    for r in rows:
        r["fitness_gap_to_best"] = r["fitness"] - best
    return {"joints": joints, "weights": joint_weights(weights, ne.dof).tolist(), "rows": rows,
            "robot": model.name, "base_parameters": prep.base.count, "parameters": prep.params,
            "methods": {m: DESCRIPTIONS[m] for m in methods}, "sources": sources, "against": against,
            "iterations": iterations, "population": args.population, "seed": args.seed,
            "plant": plant["description"], "inverse_crime": plant["inverse_crime"],
            **({"noise_floor": plant["noise_floor"]} if "noise_floor" in plant else {}),
            "friction": prep.config.friction, "processing": prep.config.processing.to_dict(),
            "equations": {"identification": int(ne.rows.sum()),
                          "held_out": int(held_ne.rows.sum()) if held_ne is not None else None},
            "cond_identification": float(ols(ne, prep.names).cond),
            "fitness": f"J of {cite('wso')} eq. 14 (N.m^2) on the identification data; the OLS closed form is "
                       "its global minimum"}


def cmd_compare(args) -> int:
    from robodyn.identification.metaheuristic import format_table

    table = compare(args)
    text = format_table(table)
    if table.get("inverse_crime"):
        text = ("NOTE: the torques come from the identifier's own model (inverse crime); these numbers show the "
                "optimisers' behaviour, not identification accuracy.\n\n" + text)
    if args.out:
        Path(args.out).write_text(json.dumps(_strict(table), indent=1, allow_nan=False))
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.json:
        print_json(table)
        return 0
    print(text)
    print(f"RMSE against {table['against']}; J = fitness of eq. 14 on the identification data")
    if "noise_floor" in table:
        floor = table["noise_floor"]
        print("held-out noise floor (measured - the plant's own torque): "
              + ", ".join(f"{x:.4f}" for x in floor["rmse"]) + f" N.m, sum {floor['rmse_sum']:.4f}")
    for r in table["rows"]:
        print(f"{r['method']:>10}: J = {r['fitness']:.6f} N.m^2 (gap to best {r['fitness_gap_to_best']:.3g}), "
              f"{r['elapsed_s']:.2f} s")
    return 0
