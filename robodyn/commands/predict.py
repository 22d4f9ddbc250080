"""`robodyn validate` and `robodyn predict`: an identification result on other recordings.

`predict` writes, at every measured sample it predicts, the states the prediction used (q, qd and
qdd after the result's own processing: the same filters and differentiation) beside the measured
and predicted torque, so that another dynamics engine can be checked on exactly those states.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .common import add_joint_names, add_json, add_out, print_json, with_joint_names
from .identify import DRIVE_GAINS_HELP, TOPIC_HELP, _floats, _load, _name, metric_lines

PREDICT_COLUMNS = ("t, q1..n, qd1..n, qdd1..n (the states the prediction used: after the result's processing, in the "
                   "model's joints), tau_measured1..n, tau_predicted1..n, and with a stored residual model "
                   "tau_lower1..n, tau_upper1..n (the nominal 95 %% prediction interval), at the measured samples")

if TYPE_CHECKING:
    from robodyn.identification.result import IdentificationResult


def register(sub) -> None:
    p = sub.add_parser("validate", help="validate an identification result on (held-out) recordings, against the "
                                        "measured torque")
    p.add_argument("result", help="result JSON from `robodyn identify`")
    p.add_argument("data", nargs="+", metavar="REC_OR_CSV", help="recordings (.mcap), .csv or .npz files to "
                                                                 "validate on")
    p.add_argument("--robot", help="model (default: the one named in the result)")
    p.add_argument("--drive-gains", metavar="K1,...,KN", help=DRIVE_GAINS_HELP)
    p.add_argument("--topic", metavar="TOPIC", help=TOPIC_HELP)
    add_joint_names(p)
    p.add_argument("--plot", metavar="PNG", help="write predicted-vs-measured torque plots")
    add_json(p)
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("predict", help="predicted beside measured torque, sample by sample, as CSV, with the "
                                       "processed joint states the prediction used")
    p.add_argument("result", help="result JSON from `robodyn identify`")
    p.add_argument("data", metavar="REC_OR_CSV", help="a recording (.mcap), .csv or .npz file")
    add_out(p, "the CSV written: " + PREDICT_COLUMNS, required=True, metavar="CSV")
    p.add_argument("--robot", help="model (default: the one named in the result)")
    p.add_argument("--drive-gains", metavar="K1,...,KN", help=DRIVE_GAINS_HELP)
    p.add_argument("--topic", metavar="TOPIC", help=TOPIC_HELP)
    add_joint_names(p)
    add_json(p)
    p.set_defaults(handler=cmd_predict)


def _result_model(args, result: IdentificationResult):
    """The model a result was identified with: --robot, else the file or built-in it names; with
    --joint-names, reading its joints from the log under those names."""
    from robodyn.robot.loader import load_model

    ref = args.robot or result.robot_ref or result.robot
    try:
        model = load_model(ref)
    except ValueError as exc:
        raise ValueError(f"{exc} (the result was identified with {ref!r}; pass --robot MODEL)") from None
    return with_joint_names(model, args)


def cmd_validate(args) -> int:
    from robodyn.identification.coverage import result_warnings
    from robodyn.identification.intervals import calibration, calibration_lines
    from robodyn.identification.pipeline import validate
    from robodyn.identification.result import read_result

    result = read_result(args.result)
    model = _result_model(args, result)
    gains = _floats(args.drive_gains, "drive-gains") if args.drive_gains else None
    datasets = _load(args.data, model, gains, result, topic=args.topic, name=_name(args))
    metrics = validate(model, result, datasets)
    metrics["coverage_warnings"] = result_warnings(model, result, datasets)
    metrics["interval"] = calibration(model, result, datasets)
    if args.plot:
        from robodyn.identification.pipeline import predict
        from robodyn.identification.report import torque_plot_png

        t, measured, predicted = predict(model, result, datasets[0])
        Path(args.plot).write_bytes(torque_plot_png(t - t[0], measured, predicted, model.joint_names,
                                                    f"validation on {args.data[0]} (measured torque)"))
        metrics["plot"] = args.plot
    if args.json:
        print_json(metrics)
    else:
        print("\n".join(metric_lines(metrics, "against the measured torque")))
        f = metrics["filtered"]
        print(f"against the processed (low-passed) torque: RMSE sum {f['rmse_sum']:.4f}, total relative error "
              f"{f['relative_error_total']:.4f}")
        print("\n".join(calibration_lines(metrics["interval"])))
        print("\n".join(coverage_lines(metrics["coverage_warnings"], result)))
        if args.plot:
            print(f"plot written to {args.plot}")
    return 0


def coverage_lines(warnings: list[dict], result: IdentificationResult) -> list[str]:
    """One line per joint whose evaluated data leave what the identification saw."""
    if result.coverage is None:
        return ["note: the result records no coverage (made before it was stored): no extrapolation check"]
    return [w["message"] for w in warnings]


def processed_states(model, result: IdentificationResult, raw, t):
    """(q, qd, qdd) at the times ``t`` of the predicted samples: the recording processed exactly as
    the prediction processes it (the result's processing config, through the one processing code),
    in the model's joints. On the recording's own grid these are the very states the prediction
    used; on a resampled grid (jittered timestamps) the prediction is interpolated to the measured
    times, and so are the states, linearly, here."""
    import numpy as np

    from robodyn.identification.processing import process_windows

    pieces = [piece.data for piece in process_windows(raw, result.processing, friction=result.friction_model,
                                                      purpose="predict", columns=result.friction_columns)]
    grid_t = np.concatenate([d.t for d in pieces])
    states = [np.concatenate([getattr(d, name) for d in pieces]) for name in ("q", "qd", "qdd")]
    if grid_t.shape == t.shape and np.array_equal(grid_t, t):
        return tuple(states)
    out = []
    for x in states:  # each piece interpolated within itself: nothing is interpolated across a gap
        y = np.empty((t.shape[0], x.shape[1]))
        for d in pieces:
            inside = (t >= d.t[0] - 1e-9) & (t <= d.t[-1] + 1e-9)
            lo = int(np.searchsorted(grid_t, d.t[0]))
            for j in range(x.shape[1]):
                y[inside, j] = np.interp(t[inside], d.t, x[lo:lo + d.count, j])
        out.append(y)
    return tuple(out)


def cmd_predict(args) -> int:
    import numpy as np

    from robodyn.identification.coverage import result_warnings
    from robodyn.identification.intervals import LEVEL, calibration_note, predict_with_interval
    from robodyn.identification.pipeline import predict, torque_metrics
    from robodyn.identification.result import read_result

    result = read_result(args.result)
    model = _result_model(args, result)
    gains = _floats(args.drive_gains, "drive-gains") if args.drive_gains else None
    raw = _load([args.data], model, gains, result, topic=args.topic, name=_name(args))[0]
    n = model.dof
    interval = None
    if result.residual_model is not None:  # the nominal 95 % prediction interval beside the prediction
        t, measured, predicted, lower, upper = predict_with_interval(model, result, raw)
        bounds = [lower, upper]
        inside = ((measured >= lower) & (measured <= upper)).mean(0)
        interval = {"level": result.residual_model.get("level", LEVEL), "columns": "tau_lower, tau_upper",
                    "inside_fraction": inside.tolist(), "note": calibration_note(result)}
    else:
        t, measured, predicted = predict(model, result, raw)
        bounds = []
    q, qd, qdd = processed_states(model, result, raw, t)
    names = ["q", "qd", "qdd", "tau_measured", "tau_predicted"] + (["tau_lower", "tau_upper"] if bounds else [])
    columns = ["t"] + [f"{name}{j + 1}" for name in names for j in range(n)]
    table = [t, q, qd, qdd, measured, predicted, *bounds]
    np.savetxt(args.out, np.column_stack(table), delimiter=",", header=",".join(columns), comments="", fmt="%.9g")
    metrics = torque_metrics(measured, predicted, model.joint_names)
    warnings = result_warnings(model, result, [raw])
    summary = {"out": args.out, "columns": columns, "samples": int(t.shape[0]), "of": raw.count,
               "against": "measured torque", **metrics, "interval": interval, "coverage_warnings": warnings}
    if args.json:
        print_json(summary)
    else:
        print(f"{t.shape[0]} of {raw.count} samples predicted (the rest lie in gaps or trimmed edges) -> {args.out}")
        print("\n".join(metric_lines(metrics, "against the measured torque")))
        if interval is None:
            print("note: the result stores no residual model (made before intervals were stored): no interval")
        else:
            print(f"{interval['level'] * 100:g} % prediction interval in tau_lower/tau_upper; measured samples inside: "
                  + ", ".join(f"{x * 100:.1f} %" for x in interval["inside_fraction"])
                  + (f"\n{interval['note']}" if interval["note"] else ""))
        print("\n".join(coverage_lines(warnings, result)))
        print("columns: t, q, qd, qdd (processed, as the prediction used them), measured and predicted torque"
              + (", interval" if bounds else "") + f"; written to {args.out}")
    return 0
