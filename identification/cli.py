"""`robodyn identify` and `robodyn validate`: local identification from recordings or CSV files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from robodyn.cli import print_json


def _floats(text: str, name: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"{name}: expected comma-separated numbers, got {text!r}") from None


def add_processing_arguments(p) -> None:
    g = p.add_argument_group("signal processing")
    g.add_argument("--cutoff", type=float, default=10.0, metavar="HZ",
                   help="Butterworth filtfilt cut-off for q and tau (0 = off, default 10 Hz)")
    g.add_argument("--rloess-span", type=float, default=None, metavar="SPAN",
                   help="robust LOESS on qdd and tau (seed 000 uses 0.02); fraction or sample count")
    g.add_argument("--decimate", type=int, default=1, metavar="F", help="decimation factor after filtering")
    g.add_argument("--min-velocity", type=float, default=None, metavar="RAD_S",
                   help="drop samples where some joint moves slower than this")
    g.add_argument("--trim", type=float, default=0.0, metavar="S", help="seconds dropped at both ends")
    g.add_argument("--velocity", choices=("auto", "measured", "differentiate"), default="auto",
                   help="use measured velocity when present (auto) or differentiate q")
    g.add_argument("--resample", choices=("auto", "always", "never"), default="auto")


def processing_from_args(args):
    from .signals import ProcessingConfig

    cutoff = args.cutoff if args.cutoff and args.cutoff > 0 else None
    return ProcessingConfig(resample=args.resample, q_cutoff_hz=cutoff, tau_cutoff_hz=cutoff,
                            velocity=args.velocity, rloess_span=args.rloess_span, decimation=args.decimate,
                            trim_s=args.trim, min_velocity=args.min_velocity)


def register(sub) -> None:
    p = sub.add_parser("identify", help="identify base parameters from recordings or CSV files")
    p.add_argument("data", nargs="+", metavar="REC_OR_CSV", help="daemon recordings (.mcap), .csv or .npz files")
    p.add_argument("--robot", required=True, help="built-in model name or model file")
    p.add_argument("--method", choices=("ols", "wls", "irls"), default="wls")
    p.add_argument("--friction", choices=("none", "coulomb-viscous", "stribeck", "sigmoid"),
                   default="coulomb-viscous")
    p.add_argument("--friction-model", metavar="FILE",
                   help="friction fit (JSON from `robodyn friction fit`) to subtract before identification")
    p.add_argument("--no-rotor-inertia", action="store_true", help="omit the rotor inertia columns IA")
    p.add_argument("--drive-gains", metavar="K1,...,KN", help="N.m/A per joint for CSV files with current columns")
    add_processing_arguments(p)
    p.add_argument("--out", default="result.json", help="result file (JSON)")
    p.add_argument("--report", metavar="HTML", help="also write an HTML report with torque plots")
    p.add_argument("--json", action="store_true", help="print the result summary as JSON")
    p.set_defaults(handler=cmd_identify)

    p = sub.add_parser("validate", help="validate an identification result on (held-out) recordings")
    p.add_argument("result", help="result JSON from `robodyn identify`")
    p.add_argument("data", nargs="+", metavar="REC_OR_CSV")
    p.add_argument("--robot", help="model (default: the one named in the result)")
    p.add_argument("--drive-gains", metavar="K1,...,KN")
    p.add_argument("--plot", metavar="PNG", help="write predicted-vs-measured torque plots")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("drive-gains", help="current-to-torque drive gains from recordings without and with a "
                                           "known payload (UR)")
    p.add_argument("--robot", required=True, help="built-in model name or model file")
    p.add_argument("--unloaded", nargs="+", required=True, metavar="REC", help="daemon recordings without the payload")
    p.add_argument("--loaded", nargs="+", required=True, metavar="REC", help="daemon recordings with the payload")
    p.add_argument("--payload-mass", type=float, required=True, metavar="KG")
    p.add_argument("--payload-com", required=True, metavar="X,Y,Z", help="payload centre of mass, m, last link frame")
    p.add_argument("--method", choices=("global", "difference"), default="global",
                   help="global: Gautier-Briot, gains with the arm's parameters (default); difference: "
                        "dynamic_calibration's load-unload TLS (one pair of identical trajectories)")
    p.add_argument("--max-relative-std", type=float, default=0.02,
                   help="global: a gain less certain than this is reported as not identifiable")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_drive_gains)


def _load(paths, model, gains):
    from .data import load_dataset

    return [load_dataset(p, model.dof, gains) for p in paths]


def summary_lines(doc: dict) -> list[str]:
    est = doc["estimate"]
    m = doc["metrics"]["identification"]
    lines = [f"{doc['robot']}: {doc['base']['count']} base parameters, method {est['method']}, "
             f"friction {doc['config']['friction']}",
             f"rows {est['rows']}, rank {est['rank']}, cond {est['cond']:.4g}, relative residual "
             f"{est['relative_residual']:.4g}",
             "joint        RMSE [N.m]   rel.err    corr"]
    for j, name in enumerate(m["joints"]):
        rel = m["relative_error"][j]
        corr = m["correlation"][j]
        lines.append(f"{name:<12} {m['rmse'][j]:10.4f} {'' if rel is None else f'{rel:9.4f}'} "
                     f"{'' if corr is None else f'{corr:8.5f}'}")
    lines.append(f"{'sum':<12} {m['rmse_sum']:10.4f}")
    return lines


def cmd_identify(args) -> int:
    from robodyn.robot.loader import load_model

    from .pipeline import IdentificationConfig, identify

    model = load_model(args.robot)
    gains = _floats(args.drive_gains, "drive-gains") if args.drive_gains else None
    friction_model = None
    if args.friction_model:
        friction_model = json.loads(Path(args.friction_model).read_text())
        friction_model = friction_model.get("model", friction_model)
    config = IdentificationConfig(method=args.method, friction=args.friction, rotor_inertia=not args.no_rotor_inertia,
                                  friction_model=friction_model, processing=processing_from_args(args))
    datasets = _load(args.data, model, gains)

    def progress(stage, fraction):
        if not args.json:
            print(f"  {stage} ({fraction * 100:.0f} %)", file=sys.stderr)

    result = identify(model, datasets, config, sources=[str(p) for p in args.data], progress=progress)
    result.save(args.out)
    doc = result.to_dict()
    if args.report:
        from .report import write_html_report

        write_html_report(args.report, doc, [{"title": "identification data", "metrics": doc["metrics"]["identification"]}])
    if args.json:
        print_json({"out": args.out, "robot": doc["robot"], "base_count": doc["base"]["count"],
                    "estimate": {k: doc["estimate"][k] for k in ("method", "rank", "cond", "rows", "relative_residual")},
                    "parameters": doc["estimate"]["parameters"], "metrics": doc["metrics"]})
    else:
        print("\n".join(summary_lines(doc)))
        print(f"result written to {args.out}")
    return 0


def cmd_validate(args) -> int:
    from robodyn.robot.loader import load_model

    from .pipeline import load_result, validate

    doc = load_result(args.result)
    model = load_model(args.robot or doc["robot"])
    gains = _floats(args.drive_gains, "drive-gains") if args.drive_gains else None
    datasets = _load(args.data, model, gains)
    metrics = validate(model, doc, datasets)
    if args.plot:
        from .base_params import BaseParameters
        from .friction import FrictionModel
        from .pipeline import predict_processed
        from .report import torque_plot_png
        from .signals import ProcessingConfig, process

        import numpy as np

        fm = FrictionModel.from_dict(doc["friction_model"]) if doc.get("friction_model") else None
        d = process(datasets[0], ProcessingConfig(**doc["config"]["processing"]), fm).data
        pred = predict_processed(model, BaseParameters.from_dict(doc["base"]), np.asarray(doc["estimate"]["values"]), d)
        measured = d.tau
        if d.tau_friction is not None:
            pred, measured = pred + d.tau_friction, measured + d.tau_friction
        Path(args.plot).write_bytes(torque_plot_png(d.t - d.t[0], measured, pred, model.joint_names,
                                                    f"validation on {args.data[0]}"))
    if args.json:
        print_json(metrics)
    else:
        print("joint        RMSE [N.m]   rel.err    corr")
        for j, name in enumerate(metrics["joints"]):
            print(f"{name:<12} {metrics['rmse'][j]:10.4f} {metrics['relative_error'][j] or 0:9.4f} "
                  f"{metrics['correlation'][j] or 0:8.5f}")
        print(f"{'sum':<12} {metrics['rmse_sum']:10.4f}   total relative error {metrics['relative_error_total']:.4f}")
    return 0


def _current_run(path: str, model, payload: dict | None) -> dict:
    """The trajectory phase of a daemon recording as a drive-gain run (needs the motor current)."""
    from robodyn.daemon.recording import load_recording

    import numpy as np

    if not Path(path).is_file():
        raise FileNotFoundError(f"{'loaded' if payload else 'unloaded'} recording {path}: no such file")
    rec = load_recording(path)
    if "current" not in rec.signals:
        raise ValueError(f"{path}: no 'current' signal (it has {list(rec.signals)}); drive gains need motor "
                         f"currents, which the UR driver records")
    mask = rec.phase_mask("execute")
    if not mask.any():
        raise ValueError(f"{path}: no samples in the execute phase")
    qd = rec.signal("qd")[mask]
    run = {"t": rec.robot_time[mask], "q": rec.signal("q")[mask], "qd": qd, "current": rec.signal("current")[mask]}
    # the difference method takes accelerations as given; by the timestamps, so a lost sample
    # (a longer step) does not distort them
    run["qdd"] = np.gradient(qd, run["t"], axis=0)
    if rec.signal("q").shape[1] != model.dof:
        raise ValueError(f"{path}: {rec.signal('q').shape[1]} joints, but {model.name} has {model.dof}")
    if payload:
        run["payload"] = payload
    run["trajectory"] = rec.meta.get("trajectory")
    return run


def cmd_drive_gains(args) -> int:
    from robodyn.robot.loader import load_model

    from .drive_gains import difference_drive_gains, global_drive_gains

    model = load_model(args.robot)
    com = _floats(args.payload_com, "payload-com")
    payload = {"mass": args.payload_mass, "com": com}
    unloaded = [_current_run(p, model, None) for p in args.unloaded]
    loaded = [_current_run(p, model, payload) for p in args.loaded]
    if args.method == "difference":
        if len(unloaded) != 1 or len(loaded) != 1:
            raise ValueError("--method difference takes exactly one --unloaded and one --loaded recording "
                             "(of the same trajectory)")
        u, lo = unloaded[0], loaded[0]
        if u["trajectory"] != lo["trajectory"]:
            raise ValueError("--method difference: the two recordings ran different trajectories; it needs the "
                             "same trajectory with and without the payload (or use --method global)")
        n = min(u["t"].shape[0], lo["t"].shape[0])
        if abs(u["t"].shape[0] - lo["t"].shape[0]) > 1:
            raise ValueError(f"--method difference: the recordings differ in length ({u['t'].shape[0]} vs "
                             f"{lo['t'].shape[0]} samples); it needs the same trajectory twice, sample for sample")
        cut = lambda r: {k: r[k][:n] for k in ("q", "qd", "qdd", "current")}  # noqa: E731
        result = difference_drive_gains(model, cut(u), cut(lo), args.payload_mass, com)
    else:
        result = global_drive_gains(model, unloaded + loaded, max_relative_std=args.max_relative_std)
        result.pop("base_parameters")
    gains = result["gains"]
    # only a complete set belongs in a daemon configuration
    result["driver_config"] = ("[driver]\ndrive_gains = [" + ", ".join(f"{g:.5g}" for g in gains) + "]"
                               if all(g == g for g in gains) else None)
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
