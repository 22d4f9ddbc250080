"""`robodyn identify-advanced`, `robodyn compare`, `robodyn export-urdf`, `robodyn stepwise-flexible`.

identify-advanced  metaheuristic (wso, pso, ga, icpso: Ni et al. 2024), physically consistent (consistent),
                   or neural-network (nn: Zhong et al. 2023) identification; writes the usual result JSON with
                   the method's extra section (convergence history, seed, feasibility ...).
compare            Ni et al. 2024 Table-4-style comparison (WSO, PSO, GA, OLS, WLS) on an identification and a
                   held-out recording, simulated (--simulate ROBOT) or from files.
export-urdf        a consistent result into a URDF (inertial + dynamics tags), optionally verified in
                   pinocchio and MuJoCo (--verify).
stepwise-flexible  Chen et al. 2021's stepwise identification of the simulated flexible-joint 2-DOF arm.
"""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path

import numpy as np

from robodyn.cli import print_json
from robodyn.papers import cite

from .cli import _floats, _load, add_processing_arguments, processing_from_args

TX40_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "staubli_tx40"

ADVANCED_METHODS = ("wso", "pso", "ga", "icpso", "consistent", "nn")


def register(sub) -> None:
    from .reproduce import register as register_reproduce

    register_reproduce(sub)  # `robodyn reproduce PAPER` (identification/reproduce.py)
    p = sub.add_parser("identify-advanced", help="metaheuristic (WSO/PSO/GA/ICPSO), physically consistent or "
                                                 "neural-network identification")
    p.add_argument("data", nargs="+", metavar="REC_OR_CSV")
    p.add_argument("--robot", required=True)
    p.add_argument("--method", choices=ADVANCED_METHODS, default="wso")
    p.add_argument("--friction", choices=("none", "coulomb-viscous"), default="coulomb-viscous")
    p.add_argument("--no-rotor-inertia", action="store_true")
    p.add_argument("--drive-gains", metavar="K1,...,KN")
    p.add_argument("--weights", default=None, metavar="PSI",
                   help="joint weights psi_j of Ni et al. 2024 eq. 14: comma list, or 'inverse-variance' (1/sigma_j^2 of OLS)")
    p.add_argument("--population", type=int, default=None, help="default: 150 (Ni et al. 2024)")
    p.add_argument("--iterations", type=int, default=None, help="default: Ni et al. 2024's (WSO 3000, PSO 800, GA 460)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reference-weight", type=float, default=None,
                   help="consistent: weight of closeness to the model's CAD values (default 1e-4)")
    p.add_argument("--no-cad", action="store_true", help="consistent: regularise towards zero, not the CAD values")
    p.add_argument("--preprocessed", action="store_true", help="the data already carry exact qd and qdd")
    add_processing_arguments(p)
    p.add_argument("--out", default="result.json")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_identify_advanced)

    p = sub.add_parser("compare", help=f"Table-4 comparison of {cite('wso')}: WSO, PSO, GA, OLS on identification "
                                       "and held-out data (simulated, recorded, or the real TX40 set)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--simulate", metavar="ROBOT", help="simulate both recordings with RNEA + noise (panda: the "
                                                          "Ni et al. 2024 configuration, 48 base parameters)")
    src.add_argument("--ident", nargs="+", metavar="FILE", help="identification recording(s)")
    src.add_argument("--dataset", choices=["tx40"], help="real data: the Staubli TX40 set shipped in "
                                                         "tests/data/staubli_tx40 (split into identification and "
                                                         "held-out parts, --split)")
    p.add_argument("--split", type=float, default=0.5, help="--dataset: fraction of the run that identifies (0.5)")
    p.add_argument("--data-dir", default=None, help="--dataset: directory of the data set (default: the shipped copy)")
    p.add_argument("--plant", default="rnea", help="--simulate: the plant that makes the torques; 'rnea' is the "
                                                   "identifier's own model (an inverse crime, labelled so); other "
                                                   "plants register through metaheuristic.register_plant")
    p.add_argument("--heldout", nargs="+", metavar="FILE", help="held-out recording(s) (with --ident)")
    p.add_argument("--robot", help="model for --ident files")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--rate", type=float, default=100.0, help="simulated sampling rate (Ni et al. 2024: 100 Hz)")
    p.add_argument("--noise", type=float, default=0.5, help="simulated torque noise, N.m")
    p.add_argument("--methods", default="wso,pso,ga")
    p.add_argument("--weights", default=None)
    p.add_argument("--population", type=int, default=150)
    p.add_argument("--iteration-scale", type=float, default=1.0,
                   help="multiply Ni et al. 2024's iteration counts (WSO 3000, PSO 800, GA 460)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", metavar="JSON")
    p.add_argument("--markdown", metavar="MD", help="also write the table as Markdown")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON instead of the table")
    p.set_defaults(handler=cmd_compare)

    p = sub.add_parser("export-urdf", help="write a physically consistent result as URDF")
    p.add_argument("result", help="result JSON of `robodyn identify-advanced --method consistent`")
    p.add_argument("--out", default="robot_identified.urdf")
    p.add_argument("--robot", help="model (default: the one named in the result)")
    p.add_argument("--verify", action="store_true",
                   help="load the URDF in pinocchio and MuJoCo and compare torques on random states")
    p.set_defaults(handler=cmd_export_urdf)

    p = sub.add_parser("stepwise-flexible", help=f"{cite('stepwise')}: the simulated flexible-joint arm")
    p.add_argument("--robot", default="twolink")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sensor-noise", type=float, default=0.02)
    p.add_argument("--motor-noise", type=float, default=1e-4)
    p.add_argument("--out", metavar="JSON")
    p.set_defaults(handler=cmd_stepwise_flexible)


# --------------------------------------------------------------------------- helpers


def parse_weights(text: str | None, ne) -> np.ndarray | None:
    if text is None:
        return None
    if text == "inverse-variance":
        from .estimators import ols

        rss = ne.joint_rss(ols(ne).theta)
        sigma2 = rss / np.maximum(ne.rows - ne.params / ne.dof, 1)
        return 1.0 / np.maximum(sigma2, 1e-30)
    return np.asarray(_floats(text, "weights"))


def result_document(model, base, ne, config, theta: np.ndarray, method: str, sources, extra: dict) -> dict:
    """The pipeline's result JSON for an estimate from this module (validate/export read it)."""
    from robodyn import __version__

    from .estimators import Estimate, ols
    from .pipeline import IdentificationResult

    reference = ols(ne, base.names)
    rss = ne.joint_rss(theta)
    cc = float(ne.c.sum())
    est = Estimate(method, np.asarray(theta, float), np.zeros((base.count, base.count)),
                   np.sqrt(rss / np.maximum(ne.rows - ne.params / ne.dof, 1)), reference.rank, reference.cond,
                   int(ne.rows.sum()), float(np.sqrt(rss.sum() / cc)) if cc > 0 else 0.0,
                   notes=[f"{method}: no covariance is computed for this estimator"])
    provenance = {"recordings": list(sources), "software": f"robodyn {__version__}",
                  "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "model": model.summary()}
    doc = IdentificationResult(model.name, base, est, None, config,
                               {"identification": ne.metrics(theta, model.joint_names)}, [], provenance).to_dict()
    doc.update(extra)
    return doc


# --------------------------------------------------------------------------- handlers


def cmd_identify_advanced(args) -> int:
    from robodyn.robot.loader import load_model

    from .consistent import identify_consistent, nominal_reference
    from .metaheuristic import identify_linear, normal_equations_of, progress_printer, ni2024_options
    from .neural import train_linear_network
    from .pipeline import IdentificationConfig

    model = load_model(args.robot)
    gains = _floats(args.drive_gains, "drive-gains") if args.drive_gains else None
    config = IdentificationConfig(method="ols", friction=args.friction, rotor_inertia=not args.no_rotor_inertia,
                                  processing=processing_from_args(args))
    datasets = _load(args.data, model, gains)
    base, ne = normal_equations_of(model, datasets, config, preprocessed=args.preprocessed)
    if args.method == "consistent":
        kwargs = {} if args.reference_weight is None else {"reference_weight": args.reference_weight}
        res = identify_consistent(ne, base, model.dof, joint_names=list(model.joint_names),
                                  reference=None if args.no_cad else nominal_reference(model, base.spec), **kwargs)
        theta, extra = res.theta, {"consistent": res.to_dict()}
        summary = (f"physically consistent: all links feasible = {res.feasibility['feasible']}; RMSE sum "
                   f"{res.rmse_increase['rmse_sum']:.4f} N.m vs OLS {res.rmse_increase['rmse_sum_ols']:.4f} "
                   f"(+{res.rmse_increase['percent']:.3f} %)")
    elif args.method == "nn":
        fit = train_linear_network(ne)
        theta, extra = fit.theta, {"neural_network": fit.to_dict()}
        summary = f"linear network: {fit.epochs} epochs, converged = {fit.converged}"
    else:
        options = ni2024_options(args.method, args.population or 150, args.iterations)
        res = identify_linear(ne, args.method, weights=parse_weights(args.weights, ne), seed=args.seed,
                              options=options, joint_names=list(model.joint_names), names=base.names,
                              callback=None if args.json else progress_printer(sys.stderr, max(1, options_iterations(options) // 10)))
        theta, extra = res.theta, {"metaheuristic": res.to_dict()}
        summary = f"{args.method}: J = {res.fitness:.6g} after {res.iterations} iterations ({res.elapsed:.2f} s)"
    doc = result_document(model, base, ne, config, theta, args.method, [str(p) for p in args.data], extra)
    Path(args.out).write_text(json.dumps(doc, indent=1))
    if args.json:
        print_json({"out": args.out, "method": args.method, "metrics": doc["metrics"]})
    else:
        from .cli import summary_lines

        print("\n".join(summary_lines(doc)))
        print(summary)
        print(f"result written to {args.out}")
    return 0


def options_iterations(options) -> int:
    return int(getattr(options, "iterations", getattr(options, "generations", 1)))


def cmd_compare(args) -> int:
    from robodyn.robot.loader import load_model

    from .metaheuristic import (ASSUMED_PANDA_ROTOR_INERTIA, PLANTS, NI2024_ITERATIONS, compare_linear,
                                normal_equations_of, tx40_comparison)
    from .pipeline import IdentificationConfig

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if args.dataset:
        table = tx40_comparison(args.data_dir or TX40_DIR, fraction=args.split, methods=methods,
                                population=args.population, iteration_scale=args.iteration_scale, seed=args.seed,
                                weights=None if args.weights is None else np.asarray(_floats(args.weights, "weights")))
        return _print_comparison(table, args)
    if args.simulate:
        model = load_model(args.simulate)
        if args.plant not in PLANTS:
            raise ValueError(f"plant: unknown {args.plant!r}; registered: {sorted(PLANTS)}")
        plant = PLANTS[args.plant]
        rotor = np.array(ASSUMED_PANDA_ROTOR_INERTIA) if model.name == "panda" else model.rotor_inertia
        config = IdentificationConfig(method="ols", friction="none", rotor_inertia=True)
        ident = [plant.simulate(model, seed=args.seed, seconds=args.seconds, rate_hz=args.rate,
                                noise=args.noise, rotor_inertia=rotor)]
        held = [plant.simulate(model, seed=args.seed + 1, seconds=args.seconds, rate_hz=args.rate,
                               noise=args.noise, rotor_inertia=rotor)]
        preprocessed = True
        sources = [f"simulated {model.name}: {plant.description}, {args.noise} N.m noise, {args.seconds} s at "
                   f"{args.rate} Hz, seeds {args.seed} (identification) and {args.seed + 1} (held out)"]
    else:
        if not args.robot or not args.heldout:
            raise ValueError("compare: --ident needs --robot and --heldout")
        model = load_model(args.robot)
        config = IdentificationConfig(method="ols", friction="coulomb-viscous")
        ident, held = _load(args.ident, model, None), _load(args.heldout, model, None)
        preprocessed = False
        sources = list(args.ident) + list(args.heldout)
    base, ne_ident = normal_equations_of(model, ident, config, preprocessed=preprocessed)
    _, ne_held = normal_equations_of(model, held, config, base=base, preprocessed=preprocessed)
    iterations = {m: max(1, int(round(NI2024_ITERATIONS[m] * args.iteration_scale))) for m in methods}
    table = compare_linear(ne_ident, ne_held, list(model.joint_names), methods=methods,
                           weights=parse_weights(args.weights, ne_ident), seed=args.seed, population=args.population,
                           iterations=iterations, names=base.names)
    plant = PLANTS[args.plant] if args.simulate else None
    table.update(robot=model.name, base_parameters=base.count, sources=sources, iterations=iterations,
                 population=args.population, seed=args.seed,
                 plant=plant.description if plant else "recordings", inverse_crime=bool(plant and not plant.differs_from_model))
    return _print_comparison(table, args)


def _print_comparison(table: dict, args) -> int:
    from .metaheuristic import format_table

    text = format_table(table)
    if table.get("inverse_crime"):
        text = ("NOTE: the torques come from the identifier's own model (inverse crime); these numbers show the "
                "optimisers' behaviour, not identification accuracy.\n\n" + text)
    if getattr(args, "json", False):
        print_json(table)
    else:
        print(text)
        for r in table["rows"]:
            print(f"{r['method']:>5}: J = {r['fitness']:.6f} N.m^2 (gap to best {r['fitness_gap_to_best']:.3g}), "
                  f"{r['elapsed_s']:.2f} s")
    if args.out:
        Path(args.out).write_text(json.dumps(table, indent=1))
    if args.markdown:
        Path(args.markdown).write_text(text)
    return 0


def cmd_export_urdf(args) -> int:
    from robodyn.robot.loader import load_model

    from .base_params import BaseParameters
    from .pipeline import load_result
    from .urdf_export import export_urdf, verify_urdf

    doc = load_result(args.result)
    if "consistent" not in doc:
        raise ValueError(f"{args.result}: has no physically consistent parameters; run `robodyn identify-advanced "
                         "--method consistent` first (a URDF needs full, feasible standard parameters)")
    model = load_model(args.robot or doc["robot"])
    base = BaseParameters.from_dict(doc["base"])
    text = export_urdf(model, doc["consistent"], base)
    Path(args.out).write_text(text)
    print(f"URDF written to {args.out}")
    if args.verify:
        from .regressor import sample_states

        q, qd, qdd = sample_states(model, 50, seed=3)
        report = verify_urdf(text, model, base, np.asarray(doc["consistent"]["standard"]), q, qd, qdd)
        print(f"pinocchio max |tau - tau_identified| = {report['pinocchio']['max_abs_error']:.3g} N.m, "
              f"MuJoCo {report['mujoco']['max_abs_error']:.3g} N.m over {report['samples']} random states")
    return 0


def cmd_stepwise_flexible(args) -> int:
    from robodyn.robot.loader import load_model

    from .flexible import demonstrate

    res = demonstrate(load_model(args.robot), seed=args.seed, sensor_noise=args.sensor_noise,
                      motor_noise=args.motor_noise)
    doc = res.to_dict()
    for step in doc["order"]:
        print(f"step {' + '.join(step['groups'])}: {step['reason']}")
    print(f"stiffness K = {np.round(res.stiffness, 1).tolist()} (true {res.truth['stiffness']})")
    print(f"motor inertia B = {res.motor['inertia']} (true {res.truth['motor_inertia']})")
    print(f"sensor offset M0 = {np.round(res.sensor_offset, 4).tolist()} (true {res.truth['sensor_offset']})")
    stacked = [s["cond"] for s in doc["analysis"]["motor_and_stiffness_stacked"]]
    print(f"cond(motor + stiffness stacked, eq. 14) = {[f'{c:.3g}' for c in stacked]} vs motor alone "
          f"{[round(s['cond'], 1) for s in doc['analysis']['motor']]}")
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=1, default=float))
    return 0
