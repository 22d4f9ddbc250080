"""The daemon's identification jobs: `robodyn submit-identify | jobs | pull` (the worker runs them;
robodyn.jobs.identification)."""

from __future__ import annotations

import json
from pathlib import Path

from robodyn.errors import UserError
from robodyn.identification.names import LEAST_SQUARES

from . import progress as bars
from .common import add_friction, add_holdout, add_json, add_out, add_rotor_inertia, print_json
from .daemon_client import _daemon_call, add_endpoint_arguments, daemon_client
from .identify import add_processing_arguments, processing_from_args


def register(sub) -> None:
    p = sub.add_parser("submit-identify", help="identify on the daemon's worker from recording ids")
    add_endpoint_arguments(p)
    p.add_argument("recordings", nargs="+", metavar="REC_ID", help="ids of the daemon's recordings to identify on "
                                                                  "(see `robodyn recordings`)")
    add_holdout(p, "ids of recordings not identified on, only predicted: the result reports the error on them",
                metavar="REC_ID")
    p.add_argument("--method", choices=LEAST_SQUARES, default=None,
                   help="estimator (the daemon's worker runs the least-squares methods; the others: "
                        "`robodyn identify --method ...` on the exported recordings); without it the job "
                        "chooses between weighted least squares and the physically consistent fit as "
                        "`robodyn identify` without --method does")
    add_friction(p, extra="identified with the dynamics; with --friction-model, the model given is subtracted "
                          "instead")
    p.add_argument("--friction-model", metavar="FILE",
                   help="friction model to subtract: the JSON `robodyn friction fit` writes")
    add_rotor_inertia(p)
    add_processing_arguments(p)
    p.add_argument("--wait", action="store_true", help="show progress until the job ends")
    add_json(p)
    p.set_defaults(handler=cmd_submit_identify)

    p = sub.add_parser("jobs", help="list the daemon's identification jobs")
    add_endpoint_arguments(p)
    add_json(p)
    p.set_defaults(handler=cmd_jobs)

    p = sub.add_parser("pull", help="fetch the result of an identification job")
    add_endpoint_arguments(p)
    p.add_argument("job", metavar="JOB", help="job id (printed by `robodyn submit-identify`, listed by "
                                              "`robodyn jobs`)")
    add_out(p, "where to write the result JSON", required=True)
    add_json(p)
    p.set_defaults(handler=cmd_pull)


def cmd_submit_identify(args) -> int:
    processing = processing_from_args(args).to_dict()
    processing.pop("cutoff_choice", None)
    config = {"friction": args.friction, "rotor_inertia": args.rotor_inertia, "processing": processing}
    if args.method:  # named: kept; absent: the job chooses as identify does
        config["method"] = args.method
    if args.friction_model:
        doc = json.loads(Path(args.friction_model).read_text())
        config["friction_model"] = doc.get("model", doc)
    with daemon_client(args) as client:
        reply = _daemon_call(lambda: client.identify(args.recordings, config, args.holdout or []))
        job = reply["job"]
        if not args.wait:
            print_json(reply) if args.json else print(f"job {job} queued")
            return 0
        with bars.bar(args, total=100, desc=f"job {job}", unit="%") as b:
            show = bars.stages(b)  # the bar (or the quiet line) already names the job
            st = _daemon_call(lambda: client.wait_job(job, lambda s: show(*job_stage(s))))
        if st["state"] != "completed":
            raise UserError(f"job {job} failed: {st.get('error')}")
        result = _daemon_call(lambda: client.pull(job))
        if args.json:
            print_json({**st, "metrics": result.get("metrics")})
        else:
            print("\n".join(fit_lines(result)))
            print(f"job {job} completed; fetch it with: robodyn pull {job} --out result.json")
    return 0


def job_stage(status: dict) -> tuple[str, float]:
    """(what a job is doing, fraction done) from its status, without its id (the bar names it)."""
    return f"{status['state']} {status.get('stage') or ''}".strip(), status.get("progress") or 0.0


def fit_lines(doc: dict) -> list[str]:
    """What a job's result says about the model: the fit and the error on held-out recordings."""
    from .identify import metric_lines

    metrics = doc.get("metrics") or {}
    lines = [f"{doc['robot']}: {doc['base']['count']} base parameters ({doc['estimate']['method']})"]
    if "measured" in metrics:
        lines += metric_lines(metrics["measured"], "fit, against the measured torque")
    elif "identification" in metrics:
        lines += metric_lines(metrics["identification"], "fit, against the processed (low-passed) torque")
    held = metrics.get("holdout") or metrics.get("held_out")
    if held:
        names = (doc.get("provenance") or {}).get("holdout") or held.get("recordings") or []
        lines += metric_lines(held, f"held out {', '.join(names)}, against the measured torque")
    else:
        lines.append("no held-out recording: submit with --holdout REC_ID to see the error on a run the fit "
                     "never saw")
    return lines


def cmd_jobs(args) -> int:
    with daemon_client(args) as client:
        jobs = _daemon_call(client.jobs)
    if args.json:
        print_json(jobs)
    elif not jobs:
        print("no jobs")
    else:
        print(f"{'job':<34} {'state':<10} {'stage':<24} {'progress':>7}")
        for j in jobs:
            print(f"{j['job']:<34} {j['state']:<10} {j.get('stage') or '':<24} {(j.get('progress') or 0) * 100:5.1f} %"
                  + (f"  {j['error']}" if j.get("error") else ""))
    return 0


def cmd_pull(args) -> int:
    with daemon_client(args) as client:
        result = _daemon_call(lambda: client.pull(args.job))
    Path(args.out).write_text(json.dumps(result, indent=1))
    if args.json:
        print_json({"job": args.job, "out": args.out, "base_count": result["base"]["count"],
                    "method": result["estimate"]["method"], "metrics": result.get("metrics")})
    else:
        print("\n".join(fit_lines(result)))
        print(f"result of {args.job} -> {args.out}")
    return 0
