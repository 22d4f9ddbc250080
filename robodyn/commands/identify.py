"""`robodyn identify` (every method, one option set), `validate`, `predict`, `drive-gains`;
`identify-advanced` is the old name of `identify` for the methods it offered."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from robodyn.errors import UserError
from robodyn.json_values import document_text
from robodyn.identification.names import CANDIDATES, DESCRIPTIONS, LEAST_SQUARES, METHODS, SELECTABLE
from robodyn.papers import cite

from . import progress as bars
from .common import (add_friction, add_holdout, add_joint_names, add_json, add_out, add_rotor_inertia, deprecated,
                     nonnegative_float, number, output_path, positive_float, positive_int, print_json,
                     with_joint_names)

if TYPE_CHECKING:
    from robodyn.identification.result import IdentificationResult

DEFAULT_RESULT = "result.json"
DRIVE_GAINS_HELP = "motor current to joint torque, N.m/A per joint, for CSV files with current columns"


def _floats(text: str, name: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"{name}: expected comma-separated numbers, got {text!r}") from None


def _cutoff(text: str):
    if text == "auto":
        return "auto"
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--cutoff: expected 'auto' or a frequency in Hz (0 = no low-pass), got {text!r}") from None
    if value < 0:
        raise ValueError(f"--cutoff: must be >= 0 Hz, got {value}")
    return value or None


def add_processing_arguments(p) -> None:
    g = p.add_argument_group("signal processing (the same at identify, validate and predict)")
    g.add_argument("--cutoff", default="auto", metavar="HZ|auto",
                   help="one zero-phase Butterworth low-pass for q, measured qd and tau (0 = off). auto (default): "
                        "twice the frequency where the fastest joint's acceleration spectrum turns from motion to "
                        "noise, not below the commanded trajectory's bandwidth; the choice is recorded")
    g.add_argument("--rloess-span", type=nonnegative_float, default=None, metavar="SPAN",
                   help="also smooth acceleration and torque by a local quadratic fit over a sliding window that "
                        "down-weights outlying samples (robust LOESS): the window as a fraction of the samples (below "
                        f"1) or a sample count; default off ({cite('wso')} uses 0.02)")
    g.add_argument("--decimate", type=positive_int, default=1, metavar="F", help="keep every F-th sample for the fit (after "
                   "an anti-alias low-pass, which prediction applies too)")
    g.add_argument("--min-velocity", type=nonnegative_float, default=None, metavar="RAD_S",
                   help="fit only samples where every joint moves faster than this")
    g.add_argument("--trim", type=nonnegative_float, default=0.0, metavar="S", help="seconds dropped at both ends")
    g.add_argument("--velocity", choices=("auto", "measured", "differentiate"), default="auto",
                   help="use measured velocity when present (auto) or differentiate q")
    g.add_argument("--resample", choices=("auto", "always", "never"), default="auto",
                   help="resample jittered timestamps onto a uniform grid (within each stretch between gaps)")
    g.add_argument("--gap-periods", type=positive_float, default=3.0, metavar="K",
                   help="a step longer than K sampling periods splits the recording; nothing is interpolated "
                        "across it (default 3)")


def processing_from_args(args):
    from robodyn.identification.processing import ProcessingConfig

    return ProcessingConfig(resample=args.resample, cutoff_hz=_cutoff(args.cutoff), velocity=args.velocity,
                            rloess_span=args.rloess_span, decimation=args.decimate, trim_s=args.trim,
                            min_velocity=args.min_velocity, gap_periods=args.gap_periods)


def add_model_arguments(p) -> None:
    """What is identified: friction, rotor inertia, current-to-torque gains, preprocessed data."""
    add_friction(p, extra="identified with the dynamics (the Stribeck and sigmoid velocity scales chosen from the "
                          "data); with --friction-model, the model given is subtracted instead")
    p.add_argument("--friction-model", metavar="FILE",
                   help="friction model to subtract before identification instead of identifying friction: the "
                        "JSON `robodyn friction fit` writes from the constant-velocity friction experiment "
                        "(`robodyn friction design`, then `robodyn run`)")
    add_rotor_inertia(p)
    p.add_argument("--recording-weights", default="inverse-variance", metavar="inverse-variance|equal|W1,...,WR",
                   help="several recordings: weight of each in the stacked fit. inverse-variance (default): within "
                        "each joint, each recording by the inverse of its residual variance after an unweighted "
                        "fit; equal: every sample the same; or one relative weight per recording, in order")
    p.add_argument("--drive-gains", metavar="K1,...,KN", help=DRIVE_GAINS_HELP)
    p.add_argument("--preprocessed", action="store_true",
                   help="the data already carry exact qd and qdd (simulations): no signal processing")


def add_method_options(p, population_default: int | None = None) -> None:
    """Options only some methods read, grouped under the methods that read them."""
    g = p.add_argument_group(f"population searches that try many candidate parameter sets (metaheuristics: wso, pso, "
                             f"ga, icpso; {cite('wso')}): search each parameter within five times its least-squares "
                             "magnitude around the least-squares value, for the smallest weighted torque error")
    g.add_argument("--population", type=positive_int, default=population_default, help="population size (default 150)")
    g.add_argument("--iterations", type=positive_int, default=None,
                   help="iterations or generations (default: Ni et al. 2024's WSO 3000, PSO 800, GA 460, ICPSO 800)")
    g.add_argument("--seed", type=int, default=0, help="random seed (default 0); the result records it")
    g.add_argument("--weights", default=None, metavar="W1,...,WN|inverse-variance",
                   help="how much each joint's torque error counts in the fitness the search minimises: a "
                        "comma list of one weight per joint, or 'inverse-variance' (each joint by 1 / the variance "
                        "of its least-squares residual); Ni et al. 2024 call these weights psi_j")
    g = p.add_argument_group("consistent: physically consistent parameters (semidefinite program)")
    g.add_argument("--reference-weight", type=float, default=None,
                   help="weight of closeness to the model's CAD values (default 1e-4)")
    g.add_argument("--no-cad", action="store_true", help="regularise towards zero, not the CAD values")
    g = p.add_argument_group(f"nn: linear neural network ({cite('icpso')})")
    g.add_argument("--epochs", type=int, default=None, help="training epochs at most (default 20000)")
    g = p.add_argument_group(f"stepwise: flexible joints ({cite('stepwise')}); data are flexible-joint recordings: "
                             "t, q1.., tau1.. (joint torque sensor), [qm1.. motor encoder | theta1.. on the link "
                             "side], [current1.. | taum1..], [qd1..], [qdm1..]; or a daemon recording with q, tau, "
                             "theta, current")
    g.add_argument("--torque-constant", metavar="K1,...,KN", default=None,
                   help="motor torque constants, N.m/A at the motor shaft (default: identified with the motor "
                        "sub-system, the joint torque sensor fixing the scale)")


def method_options(args, method: str):
    from robodyn.identification.methods import MethodOptions

    kt = getattr(args, "torque_constant", None)
    held = getattr(args, "holdout", None)  # held-out recordings (identify and compare)
    held = held if isinstance(held, (list, tuple)) else ()
    return MethodOptions(weights=args.weights, population=args.population,
                         iterations=args.epochs if method == "nn" else args.iterations, seed=args.seed,
                         reference_weight=args.reference_weight, cad_reference=not args.no_cad,
                         torque_constant=_floats(kt, "torque-constant") if kt else None,
                         held_out=[str(p) for p in held])


def config_from_args(args, model, method: str = "ols"):
    """The identification config of the shared options (friction, rotor inertia, processing)."""
    from robodyn.identification.pipeline import IdentificationConfig

    friction_model = None
    if args.friction_model:
        friction_model = json.loads(Path(args.friction_model).read_text())
        friction_model = friction_model.get("model", friction_model)
    return IdentificationConfig(method=method if method in LEAST_SQUARES else "ols",
                                friction=args.friction, rotor_inertia=args.rotor_inertia,
                                friction_model=friction_model, processing=processing_from_args(args),
                                motor_couplings=model.motor_couplings,
                                recording_weights=getattr(args, "recording_weights", "inverse-variance"))


TOPIC_HELP = ("ROS 2 bags: the sensor_msgs/msg/JointState topic to read (default: the bag's only one); joints are "
              "matched to the model by name and effort is the torque")


def add_identify_arguments(p, default_method: str | None = None) -> None:
    """The one option set of `robodyn identify`, for every method."""
    p.add_argument("data", nargs="+", metavar="REC_OR_CSV", help="daemon recordings (.mcap), .csv or .npz files, "
                                                                   "ROS 2 bags (directory, .mcap or .db3)")
    p.add_argument("--robot", required=True, help="built-in model name or model file")
    p.add_argument("--topic", metavar="TOPIC", help=TOPIC_HELP)
    add_joint_names(p)
    p.add_argument("--method", choices=METHODS, default=default_method, metavar="METHOD",
                   help="one of " + "; ".join(f"{m}: {d}" for m, d in DESCRIPTIONS.items())
                        + (f" (default {default_method})" if default_method else
                           " (default: weighted least squares or the physically consistent fit, whichever predicts "
                           "the last quarter of the data, held out, better; with --select, chosen)"))
    add_model_arguments(p)
    p.add_argument("--select", action="store_true",
                   help="choose friction model (Coulomb-viscous, smooth Coulomb tanh, Stribeck), rotor inertia and "
                        f"least-squares estimator ({', '.join(CANDIDATES)}, and the one --method names, one of "
                        f"{', '.join(SELECTABLE)}) by blocked cross-validation: --folds "
                        "blocks (by phase of the period when the excitation repeats, else contiguous), each --holdout recording one more fold; the default is kept unless a "
                        "candidate beats it by more than one standard error (then the simplest within one standard "
                        "error of the best); prints every candidate's mean +- spread")
    p.add_argument("--folds", type=int, default=None, metavar="K",
                   help="with --select: blocks of the cross-validation (default 5)")
    add_holdout(p, "recordings not identified on, only predicted: the result reports the error on them; with "
                   "--select each is one more cross-validation fold; with --method stepwise they validate "
                   "the joint torque and motor current")
    add_processing_arguments(p)
    add_method_options(p)
    add_out(p, f"result file (JSON; the same format for every method); default ./{DEFAULT_RESULT}, "
               "which is never overwritten without --force")
    p.add_argument("--force", action="store_true", help=f"overwrite ./{DEFAULT_RESULT} when --out is not given")
    p.add_argument("--report", metavar="HTML", help="also write an HTML report: the fit's numbers and the predicted "
                                                    "against the measured torque of each joint, as images inside "
                                                    "the file")
    add_json(p, "print the result summary as JSON")


def register(sub) -> None:
    p = sub.add_parser("identify", help="identify base parameters from recordings or CSV files, by any method",
                       description="Identify a robot's dynamic parameters from recordings. Every method reads "
                                   "the same options, processes the data the same way and writes the same result "
                                   "format (validate and predict read it).")
    add_identify_arguments(p)
    p.set_defaults(handler=cmd_identify)

    p = sub.add_parser("identify-advanced")  # deprecated: no help entry, so not listed
    add_identify_arguments(p, default_method="wso")
    p.set_defaults(handler=deprecated(cmd_identify, "identify-advanced", "identify --method METHOD"))

    p = sub.add_parser("drive-gains", help="current-to-torque drive gains from recordings without and with a "
                                           "known payload (UR)")
    p.add_argument("--robot", required=True, help="built-in model name or model file")
    p.add_argument("--unloaded", nargs="+", required=True, metavar="REC", help="daemon recordings without the payload")
    p.add_argument("--loaded", nargs="+", required=True, metavar="REC", help="daemon recordings with the payload")
    p.add_argument("--payload-mass", type=positive_float, required=True, metavar="KG", help="payload mass, kg")
    p.add_argument("--payload-com", required=True, metavar="X,Y,Z", help="payload centre of mass, m, last link frame")
    p.add_argument("--method", choices=("global", "difference"), default="global",
                   help="global (default): the gains and the arm's parameters fitted together from every "
                        "recording (Gautier and Briot 2014); difference: the gains alone from the torque the payload "
                        "adds, one unloaded and one loaded run of the same trajectory, by total least squares (as the "
                        "public UR10e dynamic_calibration repository does)")
    p.add_argument("--max-relative-std", type=positive_float, default=0.02,
                   help="global: a gain whose standard deviation exceeds this fraction of it (default 0.02) is "
                        "reported as not identifiable")
    add_json(p)
    p.set_defaults(handler=cmd_drive_gains)


def _load(paths, model, gains, result: IdentificationResult | None = None, topic: str | None = None,
          name: str = "robodyn"):
    """The datasets (with ``result``, after checking that the model fits it); what the loaders warn
    about (a CSV without a phase column, lost samples, a model of another name) is printed as one
    note line each on stderr, and a read that takes long says which file it is on (``name``: the
    command, in front of that line)."""
    import warnings

    from robodyn.identification.data import load_dataset
    from robodyn.identification.pipeline import check_result_model

    with warnings.catch_warnings(record=True) as caught, bars.Heartbeat(name) as beat:
        warnings.simplefilter("always")
        if result is not None:
            check_result_model(model, result)
        out = []
        for k, p in enumerate(paths):
            beat.text = f"reading {p} ({k + 1} of {len(paths)})"
            out.append(load_dataset(p, drive_gains=gains, model=model, topic=topic))
    for w in caught:
        print(f"note: {w.message}", file=sys.stderr)
    return out


def metric_lines(m: dict, title: str) -> list[str]:
    """Per-joint RMSE, relative error and correlation. A relative error or correlation that does not
    exist (a joint whose measured torque is zero, or constant) is 'n/a', with the reason below."""
    lines = [title, "joint        RMSE [N.m]   rel.err    corr"]
    missing = False
    for j, name in enumerate(m["joints"]):
        rel, corr = m["relative_error"][j], m["correlation"][j]
        missing |= rel is None or corr is None
        lines.append(f"{name:<12} {m['rmse'][j]:10.4f} {number(rel, '.4f', 9)} {number(corr, '.5f', 8)}")
    lines.append(f"{'sum':<12} {m['rmse_sum']:10.4f}   total relative error {m['relative_error_total']:.4f}")
    if missing:
        lines.append("n/a: that joint's measured torque is zero (no relative error) or constant (no correlation)")
    return lines


def processing_lines(result: IdentificationResult) -> list[str]:
    """What the processing chose and did, one line each (cut-off and why, gaps, resampling)."""
    cfg = result.processing
    lines = []
    choice = cfg.cutoff_choice
    if choice:
        lines.append(f"low-pass {cfg.cutoff_hz:g} Hz, chosen from the {choice['source']}: {choice['rule']}")
    elif cfg.cutoff_hz not in (None, "auto"):
        lines.append(f"low-pass {cfg.cutoff_hz:g} Hz (as given)")
    for steps in result.steps or []:
        for st in steps or []:
            if st["step"] == "split_at_gaps":
                dropped = len(st["dropped_short"])
                lines.append(f"split at {st['gap_count']} gap(s) longer than {st['gap_periods']:g} periods into "
                             f"{st['stretches']} stretches" + (f", {dropped} too short to use" if dropped else "")
                             + "; nothing interpolated across a gap")
            elif st["step"] == "resample":
                lines.append(f"resampled to {st['rate_hz']:.6g} Hz within each stretch ({st['reason']})")
    return lines


def summary_lines(result: IdentificationResult) -> list[str]:
    est = result.estimate
    fm = result.friction_model
    friction = f"{fm.kind} friction subtracted (--friction-model)" if fm else f"friction {result.config.friction}"
    lines = [f"{result.robot}: {result.base.count} base parameters, method {est.method}, {friction}",
             f"rows {est.rows}, rank {est.rank}, cond {est.cond:.4g}, relative residual "
             f"{est.relative_residual:.4g}"]
    lines += [f"warning: {note}" for note in est.notes or []] + processing_lines(result)
    metrics = result.metrics
    lines += metric_lines(metrics["identification"], "fit against the processed (low-passed) torque")
    if "measured" in metrics:
        lines += metric_lines(metrics["measured"], "fit against the measured torque")
    for rec in metrics.get("per_recording") or []:
        weight = "" if rec.get("weight") is None else ", weight per joint " + " ".join(f"{w:.3g}" for w in rec["weight"])
        lines.append(f"recording {rec['recording']}: RMSE sum {rec['rmse_sum']:.4f} N.m, total relative error "
                     f"{rec['relative_error_total']:.4f} (against the measured torque){weight}")
    if "held_out" in metrics:
        held = metrics["held_out"]
        lines += metric_lines(held, "held-out recording(s) " + ", ".join(held["recordings"])
                              + ", against the measured torque")
    return lines


def selection_lines(sel: dict, limit: int = 15) -> list[str]:
    """The candidates by mean held-out score (mean +- std over folds, standard error), the rule."""
    lines = [f"model selection: {sel['cross_validation']}; score: {sel['score']}",
             "  rank friction         rotor  cut-off  method  params   mean +- std [N.m]      s.e."]
    for k, c in enumerate(sel["candidates"][:limit]):
        head = (f"  {k + 1:>4} {c['friction']:<16} {'yes' if c['rotor_inertia'] else 'no':<5} "
                f"{c['cutoff_hz'] if c['cutoff_hz'] is not None else 'off':>7}  {c['method']:<6}")
        if c.get("mean") is None:
            lines.append(f"{head}  failed: {(c.get('error') or 'not scored on every fold')[:60]}")
        else:
            lines.append(f"{head}  {c['parameters'] or 0:>6} {c['mean']:>9.4f} +- {c['std']:<8.4f} "
                         f"{c['standard_error']:.4f}")
    if len(sel["candidates"]) > limit:
        lines.append(f"  ... {len(sel['candidates']) - limit} more in the result file (selection.candidates)")
    ch = sel["chosen"]
    lines.append(sel["rule"])
    lines.append(f"chosen: friction {ch['friction']}, rotor inertia {'yes' if ch['rotor_inertia'] else 'no'}, "
                 f"cut-off {ch['cutoff_hz']} Hz, {ch['method']}")
    return lines


def cmd_identify(args) -> int:
    from robodyn.identification.methods import identification_result, iteration_budget
    from robodyn.robot.loader import load_model

    if args.select and args.method is not None and args.method not in SELECTABLE:
        raise UserError(f"--select chooses among the least-squares estimators; it does not run --method "
                        f"{args.method} (drop one of the two)")
    method = args.method or "wls"
    _check_holdout(args)
    args.out = _out_path(args)
    model = with_joint_names(load_model(args.robot), args)
    if method == "stepwise":
        return _identify_stepwise(args, model)
    gains = _floats(args.drive_gains, "drive-gains") if args.drive_gains else None
    config = config_from_args(args, model, method)
    options = method_options(args, method)
    datasets = _load(args.data, model, gains, topic=args.topic, name=_name(args))
    holdout = _load(args.holdout, model, gains, topic=args.topic, name=_name(args)) if args.holdout else []
    budget = iteration_budget(method, options) if method in ("wso", "pso", "ga", "icpso") else None
    with bars.bar(args, total=100, desc="identify", unit="%") as stage_bar, \
            (bars.bar(args, total=budget, desc=method, unit="it") if budget else bars.none()) as it_bar, \
            (bars.none() if bars.drawn(stage_bar) else bars.Heartbeat(_name(args), "starting")) as beat:
        result, details, method_line = identification_result(
            model, datasets, config, method, options=options, select=args.select, holdout=holdout,
            folds=args.folds, sources=[str(p) for p in args.data],
            holdout_sources=[str(p) for p in args.holdout or ()], preprocessed=args.preprocessed,
            progress=bars.stages(stage_bar, beat=None if bars.drawn(stage_bar) else beat),
            iteration_callback=bars.iterations(it_bar, fitness_label="J"),
            choose_method=args.method is None and not args.select)
    # where the model came from, so validate and predict load the same one (a file, or a built-in)
    result.robot_ref = str(Path(args.robot).resolve()) if Path(args.robot).is_file() else args.robot
    doc = result.to_json_dict()  # the file and the --json summary: the edge where the result becomes JSON
    Path(args.out).write_text(document_text(doc))
    if args.report:
        _write_report(args.report, model, result, datasets, holdout, args)
    if args.json:
        print_json({"out": args.out, **({"report": args.report} if args.report else {}), "robot": doc["robot"], "method": doc["estimate"]["method"],
                    "base_count": doc["base"]["count"],
                    "estimate": {k: doc["estimate"][k] for k in ("method", "rank", "cond", "rows", "relative_residual")},
                    "parameters": doc["estimate"]["parameters"], "metrics": doc["metrics"],
                    "processing": doc["config"]["processing"], "coverage": doc["coverage"],
                    **({"selection": doc["selection"]} if args.select else {}),
                    **details})
    else:
        if args.select:
            print("\n".join(selection_lines(result.selection)))
        print("\n".join(summary_lines(result)))
        if method_line:
            print(method_line)
        print(f"result written to {args.out}")
        if args.report:
            print(f"report written to {args.report}")
    return 0


def _name(args) -> str:
    """The command's full name (`robodyn identify`), in front of its progress lines."""
    return getattr(args, "command_prog", None) or f"robodyn {getattr(args, 'command', 'identify')}"


def _out_path(args) -> str:
    """--out, or the default file when it does not exist yet (or with --force): never a silent overwrite."""
    return str(output_path(args.out, DEFAULT_RESULT, args.force))


def _write_report(path, model, result: IdentificationResult, datasets, holdout, args) -> None:
    """The HTML report: the fit and each held-out recording, each with its torque plot inside the file."""
    from robodyn.identification.pipeline import predict, torque_metrics
    from robodyn.identification.report import torque_plot_png, write_html_report

    sections = []
    for label, sets, names in (("identification data", datasets[:1], args.data[:1]),
                               ("held out", holdout, args.holdout or ())):
        for data, name in zip(sets, names):
            t, measured, predicted = predict(model, result, data)
            title = f"{label}: {name}, against the measured torque"
            sections.append({"title": title, "metrics": torque_metrics(measured, predicted, model.joint_names),
                             "png": torque_plot_png(t - t[0], measured, predicted, model.joint_names, title)})
    write_html_report(path, result, sections)


def _check_holdout(args) -> None:
    """--holdout names recordings; the fraction it once took is now --folds (blocked cross-validation)."""
    if args.folds is not None and not args.select:
        raise UserError("--folds: blocked cross-validation runs with --select; add --select or drop --folds")
    for item in args.holdout or ():
        try:
            float(item)
        except ValueError:
            continue
        if not Path(item).exists():
            raise UserError(f"--holdout: names a recording now, got {item!r}; a held-out fraction of each recording "
                            "is replaced by blocked cross-validation (--select --folds K)")


def _identify_stepwise(args, model) -> int:
    """Chen et al. 2021's stepwise identification of flexible joints, through identification.methods
    with the shared processing options."""
    from robodyn.identification.methods import identify_stepwise

    if args.preprocessed:
        raise UserError("--preprocessed: stepwise identification differentiates the motor and link encoders "
                        "itself; it takes raw recordings")
    if args.drive_gains:
        raise UserError("--drive-gains: stepwise identification reads the motor current; give its torque constant "
                        "with --torque-constant (N.m/A at the motor shaft) or let it be identified")
    if args.report:
        raise UserError("--report: stepwise identification prints its own validation; drop --report")
    doc = identify_stepwise(model, [str(p) for p in args.data], config_from_args(args, model, "ols"),
                            method_options(args, "stepwise"))
    doc["robot_ref"] = str(Path(args.robot).resolve()) if Path(args.robot).is_file() else args.robot
    Path(args.out).write_text(document_text(doc))
    if args.json:
        print_json({"out": args.out, **doc})
    else:
        print("\n".join(stepwise_lines(doc)))
        print(f"result written to {args.out}")
    return 0


def stepwise_lines(doc: dict) -> list[str]:
    """The sub-systems in the order they were identified (rank, condition), the parameters with
    their standard deviations, and the held-out validation against the measured signals."""
    lines = [f"{doc['robot']}: stepwise identification, {doc['reference']}",
             f"recordings: {len(doc['recordings']['identification'])} identifying, "
             f"{len(doc['recordings']['held_out'])} held out; {doc['segments']['samples']} samples, "
             f"{doc['segments']['sweep_pairs']} sweep pairs, {doc['segments']['static_poses']} static poses"]
    for st in doc["order"]:
        if st.get("skipped"):
            lines.append(f"step {st['step']} {st['subsystem']}: skipped ({st['skipped']})")
    lines.append("step  sub-system                       unit        rank/cols   cond      cond (scaled)")
    for row in doc["subsystem_table"]:
        rank = "-" if row.get("rank") is None else f"{row['rank']}/{row['columns']}"
        lines.append(f"{row['step']!s:<5} {row['subsystem'][:32]:<32} {row['unit'][:11]:<11} {rank:<11} "
                     f"{number(row.get('cond'), '.4g', 9)} {number(row.get('cond_scaled'), '.4g', 9)}")
    lines.append("parameter      sub-system        value          std            unit")
    for p in doc["parameters"]:
        flag = "" if p.get("significant", True) and p.get("physical", True) else "  (" + ", ".join(
            w for w, ok in (("not significant", p.get("significant", True)),
                            ("not physical", p.get("physical", True))) if not ok) + ")"
        lines.append(f"{p['name']:<14} {p['subsystem']:<17} {p['value']:<14.6g} {number(p.get('std'), '.3g', 14)} "
                     f"{p.get('unit', '')}{flag}")
    for v in doc["validation"]:
        lines.append(f"held out {v['recording']}: RMSE against the measured signals")
        sensor = v["joint_torque_sensor"]
        for key, label in (("from_link_model", "joint torque sensor, link model"),
                           ("from_spring", "joint torque sensor, spring")):
            if key in sensor:
                lines.append(f"  {label:<36} " + ", ".join(f"{x:.4g}" for x in sensor[key]["rmse"]) + " N.m")
        if "motor" in v:
            for key, label in (("from_measured_joint_torque", "motor, from measured joint torque"),
                               ("from_link_model", "motor, from the link model")):
                lines.append(f"  {label:<36} " + ", ".join(f"{x:.4g}" for x in v["motor"][key]["rmse"])
                             + f" {v['motor']['unit']}")
    for note in doc["notes"]:
        lines.append(f"note: {note}")
    return lines


def cmd_drive_gains(args) -> int:
    from robodyn.identification.drive_gains import drive_gains_from_recordings
    from robodyn.robot.loader import load_model

    model = load_model(args.robot)
    result = drive_gains_from_recordings(model, args.unloaded, args.loaded, args.payload_mass,
                                         _floats(args.payload_com, "payload-com"), args.method,
                                         args.max_relative_std)
    gains = result["gains"]
    if args.json:
        print_json(result)
    else:
        print(f"{model.name}: drive gains ({result['method']}), N.m/A")
        for j, name in enumerate(model.joint_names):
            g = gains[j]
            extra = f"  (relative std {result['relative_std'][j]:.2g})" if "relative_std" in result else ""
            print(f"  {name:<14} {'not identifiable' if g != g else f'{g:.5g}'}{extra}")
        for note in result["notes"]:
            print(f"  note: {note}")
        if result["driver_config"]:
            print("daemon configuration:\n" + result["driver_config"])
    return 0
