"""Commands that talk to a running acquisition daemon: `robodyn status | arm | disarm | run | abort |
recordings | export | stream`, and (robodyn.commands.jobs) `submit-identify | jobs | pull`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from robodyn.errors import UserError

from . import progress as bars
from .common import (FORCE_HELP, add_joint_names, add_json, add_out, nonnegative_int, output_path, positive_float,
                     positive_int, print_json, require_file, with_joint_names)


def add_endpoint_arguments(p) -> None:
    p.add_argument("--endpoint", metavar="URL", help="daemon control endpoint "
                                                     "(default $ROBODYN_ENDPOINT or tcp://127.0.0.1:47770)")
    p.add_argument("--timeout", type=positive_float, default=5.0, metavar="S",
                   help="seconds to wait for the daemon to answer (default 5); a daemon that answered may then "
                        "take longer for work it announces on stderr (checking a submitted trajectory, reading "
                        "its recordings)")
    p.add_argument("--client-key", metavar="FILE",
                   help="your secret key file, for an encrypted and authenticated link to a daemon on another host "
                        "(made by `robodyn keys`; the link uses ZeroMQ's CurveZMQ; default $ROBODYN_CLIENT_KEY)")
    p.add_argument("--server-key", metavar="KEY|FILE", help="the remote daemon's public key, which proves it is the "
                                                            "daemon you meant (default $ROBODYN_SERVER_KEY)")


def register(sub) -> None:
    p = sub.add_parser("status", help="daemon, robot, driver loop, recorder and run state; a loop period beyond "
                                      "twice the nominal one (1 / the robot's rate) is flagged LATE")
    add_endpoint_arguments(p)
    add_json(p)
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser("arm", help="enable motion: the operator has checked the robot's workspace")
    add_endpoint_arguments(p)
    p.add_argument("--token-file", metavar="FILE", help="file holding the arming token, when the daemon "
                                                        "is configured with [safety].arm_token_sha256")
    add_json(p)
    p.set_defaults(handler=cmd_arm)

    p = sub.add_parser("disarm", help="disable motion; a run in progress is ramped to rest")
    add_endpoint_arguments(p)
    p.add_argument("--reason", default=None, help="free text kept in the daemon's log and status")
    add_json(p)
    p.set_defaults(handler=cmd_disarm)

    p = sub.add_parser("run", help="submit a trajectory file to the daemon for execution and recording",
                       description="Submit a trajectory file to the daemon, which moves the robot to its start, runs "
                                   "it and records it. With --wait, Ctrl-C aborts the motion: the daemon is asked to "
                                   "stop the run (the robot ramps to rest) and the command exits 130. Without --wait "
                                   "the command returns at once and the run goes on: stop it with `robodyn abort`.")
    add_endpoint_arguments(p)
    p.add_argument("--robot", required=True, metavar="NAME", help="robot the daemon must be driving (e.g. panda)")
    p.add_argument("--trajectory", required=True, metavar="FILE", help="robodyn.trajectory JSON document")
    p.add_argument("--label", default="", help="free text stored in the recording")
    p.add_argument("--mode", default="position", choices=("position", "torque"),
                   help="control mode of the run (torque: the driver's own impedance law plus feedforward "
                        "tracks the trajectory; Franka only)")
    p.add_argument("--wait", action="store_true", help="show progress until the run ends, then print its summary; "
                                                       "Ctrl-C meanwhile aborts the motion (ramp to rest)")
    add_json(p)
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("abort", help="stop the run in progress safely (ramp to rest)")
    add_endpoint_arguments(p)
    p.add_argument("--reason", default=None, help="free text kept in the run's record")
    add_json(p)
    p.set_defaults(handler=cmd_abort)

    p = sub.add_parser("recordings", help="list the daemon's recordings (the newest 100; --all or --offset for more)")
    add_endpoint_arguments(p)
    p.add_argument("--limit", type=positive_int, default=None, metavar="N",
                   help="how many recordings per page (the daemon allows 1..1000; default 100)")
    p.add_argument("--offset", type=nonnegative_int, default=None, metavar="I",
                   help="index of the first recording listed, oldest first (default: the newest page)")
    p.add_argument("--all", action="store_true", help="every recording, fetched page by page")
    add_json(p)
    p.set_defaults(handler=cmd_recordings)

    p = sub.add_parser("export", help="convert a recording (id or .mcap file) or a CSV log to CSV or NPZ")
    add_endpoint_arguments(p)
    p.add_argument("recording", metavar="REC", help="recording id (asks the daemon), .mcap file, or .csv log")
    p.add_argument("--format", required=True, choices=("csv", "npz"), help="CSV (one row per sample) or NumPy NPZ")
    add_out(p, "output file (default: the recording's name with the new suffix, in the current folder, never "
               "overwritten without --force)")
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.add_argument("--output", dest="out", help=argparse.SUPPRESS)  # the old spelling
    p.add_argument("--topic", metavar="TOPIC", help="ROS 2 bag (directory, .mcap or .db3): its sensor_msgs/msg/"
                                                    "JointState topic (default: the only one); writes t, q, qd, tau")
    p.add_argument("--robot", metavar="MODEL", help="ROS 2 bag: order the joints as this model names them "
                                                    "(default: as the bag's first message does)")
    add_joint_names(p, extra="ROS 2 bag, with --robot")
    add_json(p)
    p.set_defaults(handler=cmd_export)

    p = sub.add_parser("stream", help="live view of the state stream: rates, latency, latest values")
    add_endpoint_arguments(p)
    p.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    p.add_argument("--signals", default="q,tau", help="comma list of signals to show (default q,tau)")
    add_json(p, "one JSON object per half-second window (rate, lost samples, latency, latest values) instead "
                "of the live view")
    p.set_defaults(handler=cmd_stream)



def curve_keys(args):
    """The CurveZMQ key pair of --client-key / --server-key, or None for a plain loopback link."""
    from robodyn.daemon.client import CurveKeys

    if not (args.client_key or args.server_key):
        return None
    if not (args.client_key and args.server_key):
        raise UserError("--client-key and --server-key go together (CurveZMQ needs both)")
    return CurveKeys.from_files(args.client_key, args.server_key)


def daemon_client(args):
    """The daemon client of a command's --endpoint, --timeout and key options (a malformed
    endpoint is refused here with one line naming the expected form)."""
    from robodyn.daemon.client import Client

    client = Client(args.endpoint, timeout=args.timeout, curve=curve_keys(args))
    name = getattr(args, "command_prog", None) or f"robodyn {args.command}"
    client.notice = lambda text: print(f"{name}: {text}", file=sys.stderr, flush=True)
    return client


def cmd_arm(args) -> int:
    token = None
    if args.token_file:
        path = require_file(args.token_file)
        token = path.read_text().strip()
    with daemon_client(args) as c:
        res = _daemon_call(lambda: c.arm(token))
    if args.json:
        print_json({"armed": True, **res})
        return 0
    note = "" if res.get("required") else " (this daemon does not require arming)"
    print(f"daemon ARMED: motion is enabled until `robodyn disarm` or any fault{note}")
    return 0


def cmd_disarm(args) -> int:
    with daemon_client(args) as c:
        res = _daemon_call(lambda: c.disarm(args.reason))
    _stop_socket_note(res)
    if args.json:
        print_json({"armed": False, **res})
        return 0
    print("daemon disarmed" + (f"; run {res['aborted']} is being stopped" if res.get("aborted") else "")
          + _served_by_driver(res))
    return 0


def _stop_socket_note(res: dict) -> None:
    """Why the stop socket's answer was not taken (the control endpoint confirmed the stop): on
    stderr, so that it is seen. A stop socket another account made fails the command instead
    (client.StopSocketRefused, through _daemon_call: exit 2)."""
    if res.get("stop_socket"):
        print(f"robodyn: {res['stop_socket']}", file=sys.stderr)


def _served_by_driver(res: dict) -> str:
    """How the stop was served when the driver's loop served it (daemon/stop_socket.py)."""
    stop = res.get("stop") if res.get("served_by") == "driver" else None
    return f" (served by the driver's loop in cycle {stop['acted_seq']})" if stop else ""


def recording_file(args, recording: str) -> Path:
    """The file of the daemon's recording ``recording`` (an id), found in the daemon's listing (its
    index: the daemon decodes nothing). The file is read here, so the daemon's data folder must be
    readable on this host."""
    from robodyn.daemon.readonly import ReadOnlyClient

    with ReadOnlyClient(args.endpoint, timeout=args.timeout, curve=curve_keys(args)) as c:
        row = _daemon_call(lambda: next((r for r in c.every("recordings") if r.get("id") == recording), None))
        endpoint = c.endpoint
    if row is None:
        raise UserError(f"{recording}: no such recording on the daemon at {endpoint} (see `robodyn recordings`), "
                        "and no such file here")
    if row.get("status") == "recording":
        raise UserError(f"{recording}: being recorded now; read it when its run has ended")
    path = Path(row["path"])
    if not path.exists():
        raise UserError(f"{recording}: the daemon's file {path} cannot be read on this host; copy it here and "
                        "give its path")
    return path


def local_recording(args, ref: str) -> Path:
    """A recording named on the command line: an .mcap file, or else a daemon's recording id
    (:func:`recording_file`). A file that is not MCAP (by its first bytes, whatever its name says)
    is refused here with one line, before any reader or daemon sees it."""
    from robodyn.identification.rosbag import MCAP_MAGIC

    path = Path(ref)
    if path.suffix.lower() == ".mcap" or path.is_file():
        require_file(path)
        if path.is_file():
            with open(path, "rb") as fh:
                head = fh.read(len(MCAP_MAGIC))
            if head != MCAP_MAGIC:
                raise UserError(f"{path}: not a daemon recording (an MCAP file begins with MCAP's magic bytes; this "
                                "one does not); give the .mcap file the daemon wrote, or its recording id")
        return path
    return recording_file(args, ref)


def _daemon_call(fn):
    """Run a client call, turning daemon errors into one-line user errors."""
    from robodyn.daemon.client import DaemonError

    try:
        return fn()
    except DaemonError as exc:
        raise UserError(exc.message + _violation_lines(exc)) from None


def _violation_lines(exc) -> str:
    report = (exc.details or {}).get("report")
    if not report or len(report.get("violations", [])) <= 1:
        return ""
    return "".join(f"\n  {v['message']}" for v in report["violations"][1:8])


# --------------------------------------------------------------------------- status


def _fmt_ms(d: dict | None, key: str) -> str:
    v = (d or {}).get(key)
    return "-" if v is None else f"{v:.3f}"


def cmd_status(args) -> int:
    with daemon_client(args) as c:
        st = _daemon_call(c.status)
    if args.json:
        print_json({**st, "loop_flags": loop_flags(st["robot"].get("rate_hz"), st["driver"].get("loop"))})
        return 0
    print("\n".join(status_lines(st)))
    return 0


# A loop period beyond this multiple of the nominal one (1 / the robot's rate) is flagged by `status`:
# one late cycle of a real-time loop is already a missed command; twice the period means at least one
# command cycle went by without one. The daemon's own watchdog (its config) decides what to stop.
LOOP_FLAG_MULTIPLE = 2.0


def loop_flags(rate_hz, loop: dict | None) -> list[dict]:
    """The loop-period statistics (p50, p99, max) beyond LOOP_FLAG_MULTIPLE times the nominal period."""
    if not rate_hz or not loop:
        return []
    nominal = 1000.0 / float(rate_hz)
    return [{"statistic": key[:-3], "ms": loop[key], "nominal_ms": nominal, "multiple": loop[key] / nominal}
            for key in ("p50_ms", "p99_ms", "max_ms") if loop.get(key) is not None
            and loop[key] > LOOP_FLAG_MULTIPLE * nominal]


def status_lines(st: dict) -> list[str]:
    """`robodyn status` as text: one line per part of the daemon, a flagged loop period said outright."""
    d, r, drv, rec = st["daemon"], st["robot"], st["driver"], st["recorder"]
    lines = [f"daemon   robodyn {d['version']} (protocol {d['protocol']}), pid {d['pid']}, up {d['uptime_s']:.0f} s",
             f"         control {d['control']}   state {d['state']}   data {d['data_dir']}",
             f"robot    {r['name']} ({r['dof']} joints) via {r['driver']} driver at {r['rate_hz']} Hz"]
    loop = drv.get("loop") or {}
    lines.append(f"driver   pid {drv['pid']} {'alive' if drv['alive'] else 'DOWN'}, {drv.get('lifecycle')}, "
                 f"{drv.get('scheduler')}; loop period p50 {_fmt_ms(loop, 'p50_ms')} p99 {_fmt_ms(loop, 'p99_ms')} "
                 f"max {_fmt_ms(loop, 'max_ms')} ms over {loop.get('count', 0)} cycles")
    flags = loop_flags(r.get("rate_hz"), loop)
    if flags:
        lines.append("LATE     loop period " + ", ".join(f"{f['statistic']} {f['ms']:.3f} ms ({f['multiple']:.3g} x)"
                                                         for f in flags)
                     + f" beyond {LOOP_FLAG_MULTIPLE:g} x the nominal {flags[0]['nominal_ms']:.3f} ms "
                       f"({r['rate_hz']} Hz): the loop misses its cycles")
    stream = rec.get("stream") or {}
    lines.append(f"recorder pid {rec['pid']} {'alive' if rec['alive'] else 'DOWN'}, received {stream.get('received', 0)} "
                 f"samples, lost {stream.get('lost', 0)}, files written {rec.get('written_runs', 0)}")
    safety = st.get("safety") or {}
    if safety:
        lines.append("safety   " + ("ARMED by " + str(safety.get("armed_by")) if safety.get("armed") else
                                    f"disarmed ({safety.get('disarm_reason')})")
                     + ("" if safety.get("arming_required") else "; arming not required (simulator)"))
    metrics = st.get("metrics") or {}
    thr = metrics.get("recorder_throughput") or {}
    queues = metrics.get("queues") or {}
    if metrics:
        lines.append(f"metrics  lost {metrics['lost_samples']['stream']} samples on the stream, recorder backlog "
                     f"{queues.get('recorder_backlog_samples')} samples, writing {thr.get('samples_per_s', 0):.0f} "
                     f"samples/s ({thr.get('bytes_per_s', 0) / 1e3:.0f} kB/s)")
    q = st["state"].get("q")
    if q:
        lines.append("q        " + " ".join(f"{v:+.4f}" for v in q))
    run = st.get("run")
    if run:
        lines.append(f"run      {run['run_id']}: {run['state']} {_progress_text(run)}")
    elif st.get("last_run"):
        lr = st["last_run"]
        lines.append(f"last run {lr['run_id']}: {lr['state']}"
                     f"{' (' + lr['abort_reason'] + ')' if lr['abort_reason'] else ''}")
    return lines


# --------------------------------------------------------------------------- run


def _progress_text(run: dict) -> str:
    p = run.get("progress") or {}
    if "trajectory_samples" in p and p.get("phase") in ("execute", "settle", "stopping"):
        frac = p["trajectory_index"] / max(1, p["trajectory_samples"])
        return f"{100 * frac:5.1f} % of {run['duration_s']:.1f} s"
    if "move_samples" in p and p.get("phase") == "move_to_start":
        frac = p["move_index"] / max(1, p["move_samples"])
        return f"moving to start {100 * frac:5.1f} %"
    return ""


def cmd_run(args) -> int:
    from robodyn.daemon.client import run_stage
    from robodyn.trajectory import trajectory_from_dict

    path = require_file(args.trajectory)
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON: {exc}") from None
    trajectory_from_dict(doc)  # fail here, before contacting the daemon, on a malformed document
    with daemon_client(args) as c:
        accepted = _daemon_call(lambda: c.submit_run(args.robot, doc, mode=args.mode, label=args.label))
        if not args.wait:
            if args.json:
                print_json(accepted)
            else:
                print(f"run {accepted['run_id']} accepted: {accepted['duration_s']:.2f} s trajectory after a "
                      f"{accepted['move_duration_s']:.2f} s move to the start; recording {accepted['recording']}")
            return 0
        with bars.bar(args, total=100, desc=f"run {accepted['run_id']}", unit="%") as b:
            show = bars.stages(b)
            try:
                # run_stage has no run id in its label: the bar (or the quiet line) already names the run
                final = _daemon_call(lambda: c.wait_run(accepted["run_id"], progress=lambda st: show(*run_stage(st))))
            except KeyboardInterrupt:
                c.abort(accepted["run_id"], "interrupted at the client")
                sys.stderr.write("\ninterrupted: abort requested\n")
                raise
    if args.json:
        print_json(final)
    else:
        _print_summary(final)
    return 0 if final["state"] == "completed" else 1


def _print_summary(run: dict) -> None:
    s = run.get("summary") or {}
    print(f"run {run['run_id']} {run['state']}" + (f": {run['abort_reason']}" if run.get("abort_reason") else ""))
    print(f"  recording   {s.get('recording')}")
    print(f"  samples     {s.get('samples')} recorded of {s.get('expected_samples')} expected, "
          f"lost {s.get('lost_samples')}; trajectory {s.get('executed_samples')} of {s.get('trajectory_samples')}")
    loop = s.get("loop") or {}
    print(f"  loop period p50 {_fmt_ms(loop, 'p50_ms')} p99 {_fmt_ms(loop, 'p99_ms')} max {_fmt_ms(loop, 'max_ms')} ms")
    tr = s.get("tracking") or {}
    if tr.get("samples"):
        print(f"  tracking    rms {tr['rms_overall_rad']:.2e} rad, max {tr['max_overall_rad']:.2e} rad")


def cmd_abort(args) -> int:
    with daemon_client(args) as c:
        res = _daemon_call(lambda: c.abort(reason=args.reason))
    _stop_socket_note(res)
    if args.json:
        print_json(res)
        return 0
    print((f"abort requested for run {res['aborted']}" if res["aborted"] else "no run in progress")
          + _served_by_driver(res))
    return 0


# --------------------------------------------------------------------------- recordings / export


def cmd_recordings(args) -> int:
    if args.all and args.offset is not None:
        raise UserError("--all and --offset: give one of them")
    with daemon_client(args) as c:
        if args.all:  # oldest first, one bounded page per request
            page = _daemon_call(lambda: c.recordings_page(args.limit or 1000, 0))
            rows = list(page["recordings"])
            while page.get("next_offset") is not None and len(rows) < page["total"]:
                page = _daemon_call(lambda: c.recordings_page(args.limit or 1000, page["next_offset"]))
                if not page["recordings"]:
                    break
                rows += page["recordings"]
        else:
            page = _daemon_call(lambda: c.recordings_page(args.limit, args.offset))
            rows = page["recordings"]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("no recordings")
        return 0
    if len(rows) < page["total"]:
        first = 0 if args.all else page["offset"]
        print(f"recordings {first + 1}..{first + len(rows)} of {page['total']} (oldest first; --all or --offset "
              f"for the others)")
    print(f"{'recording':<26} {'status':<22} {'samples':>8} {'lost':>6} {'duration [s]':>12}  label")
    for r in rows:
        print(f"{r['id']:<26} {str(r.get('status')):<22} {r.get('samples', '-')!s:>8} {r.get('lost', '-')!s:>6} "
              f"{r.get('duration_s', 0.0):12.2f}  {r.get('label', '')}")
    return 0


def cmd_export(args) -> int:
    from robodyn.recording import export_csv, export_npz, import_csv, load_recording

    from robodyn.identification.rosbag import is_bag

    src = Path(args.recording)
    if is_bag(src, args.topic):
        return _export_bag(args, src)
    if src.suffix.lower() == ".csv":
        rec = import_csv(src)
    else:  # an .mcap file, or a recording id: the daemon knows where it is
        src = local_recording(args, args.recording)
        rec = load_recording(src)
    out = output_path(args.out, Path.cwd() / f"{src.stem}.{args.format}", args.force)
    if out.resolve() == src.resolve():
        raise UserError(f"output {out} would overwrite the input")
    (export_csv if args.format == "csv" else export_npz)(rec, out)
    recovered = bool(getattr(rec, "truncated", False) and src.suffix == ".mcap")
    if args.json:
        print_json({"out": str(out), "format": args.format, "samples": int(rec.samples), "gaps": len(rec.gaps()),
                    "recovered_from_incomplete_file": recovered})
        return 0
    note = " (recovered from an incomplete file)" if recovered else ""
    print(f"{out}: {rec.samples} samples, {len(rec.gaps())} gaps{note}")
    return 0


def _export_bag(args, src: Path) -> int:
    """A ROS 2 bag's JointState topic as CSV or NPZ in the identification convention (t, q, qd, tau)."""
    from robodyn.identification.data import save_dataset
    from robodyn.identification.rosbag import load_bag
    from robodyn.robot.loader import load_model

    if args.joint_names is not None and not args.robot:
        raise UserError("--joint-names: names the joints of the model given with --robot MODEL, in its joint "
                        "order; add --robot")
    model = with_joint_names(load_model(args.robot), args) if args.robot else None
    with bars.Heartbeat(getattr(args, "command_prog", None) or "robodyn export", f"reading {src}"):
        data = (load_bag(src, None, args.topic) if model is None
                else load_bag(src, model.log_names, args.topic, model_names=model.joint_names))
    out = output_path(args.out, Path.cwd() / f"{src.stem}.{args.format}", args.force)
    if out.resolve() == src.resolve():
        raise UserError(f"output {out} would overwrite the input")
    save_dataset(data, out)
    if args.json:
        print_json({"out": str(out), "format": args.format, "samples": data.count, "gaps": 0,
                    "recovered_from_incomplete_file": False})
    else:
        print(f"{out}: {data.count} samples of {data.dof} joints")
    return 0


# --------------------------------------------------------------------------- stream


def cmd_stream(args) -> int:
    import numpy as np

    with daemon_client(args) as c:
        desc = _daemon_call(c.describe)
        offsets, start = {}, 0
        for s in desc["driver"]["signals"]:
            offsets[s["name"]] = (start, start + s["width"], s["unit"])
            start += s["width"]
        wanted = [s.strip() for s in args.signals.split(",") if s.strip()]
        unknown = [s for s in wanted if s not in offsets]
        if unknown:
            raise UserError(f"unknown signal(s) {unknown}; available: {list(offsets)}")
        t_end = None if args.duration is None else time.monotonic() + args.duration
        window_start, n, lost, last_seq, lat = time.monotonic(), 0, 0, 0, []
        tty = sys.stdout.isatty()
        for batch in c.stream(desc["state_endpoint"], timeout=max(2.0, args.timeout)):
            seq = batch["seq"]
            if last_seq and int(seq[0]) > last_seq + 1:
                lost += int(seq[0]) - last_seq - 1
            last_seq = int(seq[-1])
            n += seq.shape[0]
            lat.append((batch["recv_ns"] - batch["host_time_ns"]) / 1e6)
            now = time.monotonic()
            if now - window_start >= 0.5:
                l = np.concatenate(lat)
                head = (f"seq {last_seq}  {n / (now - window_start):7.1f} samples/s  lost {lost}  "
                        f"latency p50 {np.percentile(l, 50):.3f} ms max {l.max():.3f} ms  "
                        f"phase {int(batch['phase'][-1])}")
                vals = batch["values"][-1]
                body = [f"  {name:<6}" + " ".join(f"{v:+9.4f}" for v in vals[offsets[name][0]:offsets[name][1]])
                        + f"  {offsets[name][2]}" for name in wanted]
                text = "\n".join([head] + body)
                if args.json:  # one object per window, one line each: for a log or a script
                    text = json.dumps({
                        "seq": last_seq, "samples_per_s": n / (now - window_start), "lost": lost,
                        "latency_ms": {"p50": float(np.percentile(l, 50)), "max": float(l.max())},
                        "phase": int(batch["phase"][-1]),
                        "values": {name: [float(v) for v in vals[offsets[name][0]:offsets[name][1]]] for name in wanted},
                        "units": {name: offsets[name][2] for name in wanted}})
                    sys.stdout.write(text + "\n")
                elif tty:
                    sys.stdout.write("\x1b[H\x1b[J" + text + "\n")
                else:
                    sys.stdout.write(text + "\n")
                sys.stdout.flush()
                window_start, n, lat = now, 0, []
            if t_end is not None and now >= t_end:
                break
        else:
            raise UserError("no state received within the timeout; is the daemon running?")
    return 0
