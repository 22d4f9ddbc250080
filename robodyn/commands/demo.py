"""`robodyn demo`: the simulated end-to-end loop (robodyn.demo), its table and its figure."""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

from . import progress as bars
from .common import add_json, add_out, percent, positive_float, positive_int, print_json


def register(sub) -> None:
    p = sub.add_parser("demo", help="run the simulated end-to-end demo (daemon, excitation, friction, "
                                    "identification, validation)")
    add_out(p, "output folder (default ./robodyn-demo)", default="robodyn-demo", metavar="DIR")
    p.add_argument("--time-limit", type=positive_float, default=40.0, metavar="S",
                   help="seconds the excitation design may take (default 40; the held-out trajectory's half of it), "
                        "as `excitation design --time-limit`")
    p.add_argument("--design-time", dest="time_limit", type=positive_float, help=argparse.SUPPRESS)  # the old spelling
    p.add_argument("--periods", type=positive_int, default=3, help="excitation periods recorded (default 3)")
    p.add_argument("--plot", default=None, metavar="PNG",
                   help="also write the held-out figure (predicted vs measured torque above the table) here; "
                        "the README's image is made with --plot docs/img/demo_heldout.png (needs the plot extra)")
    add_json(p, "print the final summary as JSON (no step log)")
    p.set_defaults(handler=cmd_demo)


def cmd_demo(args) -> int:
    from robodyn.demo import run_demo

    t0 = time.monotonic()

    def say(text: str) -> None:  # the step log, on stderr: what is happening, not a result
        if not args.json:
            print(f"[{time.monotonic() - t0:6.1f} s] {text}", file=sys.stderr, flush=True)

    with bars.bar(args, total=100, desc="identification job", unit="%") as b:
        # without a bar the demo's own step log reports the job every 10 s
        summary = run_demo(args.out, design_time=args.time_limit, periods=args.periods, say=say,
                           job_progress=bars.stages(b) if bars.drawn(b) else None)
    lines = table_lines(summary)
    figure = Path(summary["output"]) / "summary.png"
    say(f"  drawing the summary figure {figure}")
    write_figure(figure, Path(summary["held_out_plot"]).read_bytes(), lines)
    summary["figure"] = str(figure)
    if args.plot:
        plot = Path(args.plot)
        plot.parent.mkdir(parents=True, exist_ok=True)
        plot.write_bytes(figure.read_bytes())
        summary["plot"] = str(plot)
    if args.json:
        print_json(summary)
        return 0
    print()
    print("\n".join(lines))
    print(f"report: {summary['report']}")
    print(f"figure: {figure}")
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def table_lines(summary: dict) -> list[str]:
    """The held-out table: per joint the RMSE against the raw measured torque, its ratio to the
    simulated sensor noise, the correlation, and the friction errors against the simulator; a
    number the experiment cannot determine is 'n/a', with the reason below the table."""
    holdout, noise = summary["holdout"], summary["torque_noise_std"]
    friction = summary["friction"]
    lines = [f"{'joint':<8}{'RMSE held-out':>14}{'/ noise σ':>10}{'corr':>9}   {'fc err':>8}{'fs err':>8}"
             f"{'vs err':>8}{'curve err':>10}"]
    reasons: dict[str, list[str]] = {}
    for j, name in enumerate(holdout["joints"]):
        cells = []
        for k in ("fc", "fs", "vs"):
            cell = friction[j][k]
            cells.append(percent(cell["relative_error"], 8))
            if cell["reason"]:
                reasons.setdefault(cell["reason"], []).append(f"{k} of joint {j + 1}")
        corr = holdout["correlation"][j]
        lines.append(f"{name:<8}{holdout['rmse'][j]:>10.4f} N·m{holdout['rmse'][j] / noise:>9.2f}"
                     f"{'n/a' if corr is None else f'{corr:.5f}':>9}   {''.join(cells)}"
                     f"{percent(friction[j]['level_error'], 10)}")
    lines.append(f"{'sum':<8}{holdout['rmse_sum']:>10.4f} N·m   relative error "
                 f"{percent(holdout['relative_error_total'])}")
    for reason, which in reasons.items():
        lines.append(f"n/a ({', '.join(which)}): {reason}")
    lines.append("curve err: the fitted friction curve against the simulated one over the measured speeds (RMS)")
    base = summary["base_parameters"]
    lines.append(f"excitation: condition number of the base regressor {summary['excitation']['cond_raw']:.1f} "
                 f"(unscaled columns); {base['count']} base "
                 f"parameters, {len(base['well_excited'])} carry {base['well_excited_definition']}: "
                 f"max error vs the simulator's truth {percent(base['max_relative_error_well_excited'])}")
    return lines


def write_figure(path: Path, plot_png: bytes, lines: list[str]) -> Path:
    """The held-out plot above the table, one PNG (the README's first screen shows it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    image = plt.imread(io.BytesIO(plot_png))
    height = image.shape[0] / image.shape[1] * 10.0
    text_height = 0.16 * len(lines) + 0.3
    fig = plt.figure(figsize=(10.0, height + text_height), dpi=80)
    ax = fig.add_axes([0.0, text_height / (height + text_height), 1.0, height / (height + text_height)])
    ax.imshow(image)
    ax.axis("off")
    fig.text(0.01, (text_height - 0.15) / (height + text_height), "\n".join(lines), family="monospace",
             fontsize=7.5, va="top")
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
