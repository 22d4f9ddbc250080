"""Benchmark: OLS identification of long 1 kHz recordings, streamed; time and memory against
duration (1, 4, 24 h) and DOF (Panda 7, UR5 6).

A child process writes each recording (simulated robot, Fourier excitation, RNEA torques with
viscous and Coulomb friction plus noise) to .npy files; a second child maps them and identifies
from them through the whole pipeline (windowed zero-phase filtering and differentiation, the
fused regressor and normal equations on two threads, OLS), never building the stacked matrix.
For each recording the identifying process reports:

* ``wall_s`` (from interpreter start to result, imports included), ``identify_s`` and
  ``identify_cpu_s`` (CPU time of all its threads: less inflated than wall time by other jobs);
  with ``--format mcap``, ``load_s`` / ``load_cpu_s``, the part of those spent reading the
  recording, and ``peak_anon_mb_after_load``, the peak working memory when it was read;
* ``peak_rss_mb``: the kernel's peak resident set (ru_maxrss), which counts the pages of the
  memory-mapped recording it has read, so it grows with the file;
* ``peak_anon_mb``: peak anonymous (working) memory, sampled every 5 ms from /proc/self/status;
  this is what must stay flat with duration;
* ``recording_mapped_mb``: file pages of the recording resident at the end;
* the load averages before and after, so a loaded run is recognisable.

Linear growth is checked per robot against its shortest recording: identification CPU time per
hour and peak working memory may not exceed the shortest run's by more than ``--tolerance``
(default 25 %); a violation is printed on stderr and the exit status is 1. CPU time is what the
check uses because wall time on a shared host measures the other jobs too; wall time per hour is
reported beside it. Progress, with an estimate of the time left, goes to stderr.

Goals (issue 46): 1 h at 1 kHz on Panda in <= 5 s wall and <= 600 MB peak RSS; 24 h in <= 24 x the
1 h time with the same peak memory. Recordings are cached in ``--data-dir`` (default: a temporary
directory) so repeated runs time identification only; ``--identify-only DIR`` runs just the
identifying child on a cached recording (for an external timer).

    python bench/identify/run.py [--hours 1] [--robots panda] [--rate 1000] [--data-dir DIR]
    python bench/identify/run.py --hours 1,4,24 --robots panda --data-dir /tmp/robodyn-bench-data --out FILE
    python bench/identify/run.py --trace-temporaries /tmp/robodyn-bench-data/panda-4h-1000hz --out FILE
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GENERATE = r"""
import sys, json, numpy as np
from robodyn.robot.loader import load_model
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.trajectory import FourierTrajectory
out, robot, seconds, rate = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
model = load_model(robot)
rng = np.random.default_rng(0)
n, L = model.dof, 5
a = rng.normal(size=(n, L)) * 0.1; b = rng.normal(size=(n, L)) * 0.1
a[:, -1] = -a[:, :-1].sum(1); l = np.arange(1, L + 1); b[:, -1] = -(b[:, :-1] * l[:-1]).sum(1) / L
lo = np.where(np.isfinite(model.q_min), model.q_min, -np.pi); hi = np.where(np.isfinite(model.q_max), model.q_max, np.pi)
traj = FourierTrajectory(0.5, (lo + hi) / 2, a, b, periods=seconds * 0.5 / (2 * np.pi))
N = int(seconds * rate)
t_all = np.lib.format.open_memmap(out + "/t.npy", "w+", np.float64, (N,))
q_all = np.lib.format.open_memmap(out + "/q.npy", "w+", np.float64, (N, n))
tau_all = np.lib.format.open_memmap(out + "/tau.npy", "w+", np.float64, (N, n))
fr = {"viscous": np.full(n, 0.2), "coulomb": np.full(n, 0.4), "offset": np.zeros(n)}
step = 200000
for s in range(0, N, step):
    e = min(N, s + step)
    t = np.arange(s, e) / rate
    q, qd, qdd, _ = traj.evaluate(t)
    t_all[s:e] = t
    q_all[s:e] = q + rng.normal(scale=1e-5, size=q.shape)
    tau_all[s:e] = inverse_dynamics(model, q, qd, qdd, friction=fr) + rng.normal(scale=0.05, size=q.shape)
t_all.flush(); q_all.flush(); tau_all.flush()
"""

TO_MCAP = r"""
import sys, numpy as np
from robodyn.drivers.franka_control import FRANKA_FIELDS, SCALARS
from robodyn.recording.writer import RecordingWriter
d = sys.argv[1]
t = np.load(d + "/t.npy", mmap_mode="r"); q = np.load(d + "/q.npy", mmap_mode="r")
tau = np.load(d + "/tau.npy", mmap_mode="r")
N, n = q.shape
signals = [{"name": name, "width": n, "unit": unit} for name, _, unit, _ in FRANKA_FIELDS]
signals += [{"name": s.name, "width": s.width, "unit": s.unit} for s in SCALARS]
width = sum(s["width"] for s in signals)
meta = {"robot": "panda", "run": "bench", "driver": {"driver": "franka", "robot": "panda", "signals": signals}}
w = RecordingWriter(d + "/recording.mcap.part", meta, width, "zstd", block_ms=50.0, capacity=65536)
step = 50  # one 50 ms block per append at 1 kHz, as the daemon's recorder writes them
from robodyn.recording.samples import PHASE_EXECUTE as execute  # the trajectory itself
for s in range(0, N, 4096):
    e = min(N, s + 4096)
    values = np.zeros((e - s, width))
    qd = np.gradient(q[s:e], axis=0) * 1000.0
    for k, (name, _, _, _) in enumerate(FRANKA_FIELDS):  # every field carries data of its kind
        values[:, k * n:(k + 1) * n] = {"q": q[s:e], "qd": qd, "tau": tau[s:e], "q_d": q[s:e], "qd_d": qd,
                                         "theta": q[s:e], "dtheta": qd}.get(name, tau[s:e] * 0.01)
    for a in range(s, e, step):
        b = min(e, a + step)
        w.append(np.arange(a, b, dtype=np.uint64) + 1, np.asarray(t[a:b]), np.zeros(b - a, np.int64),
                 np.full(b - a, execute, np.uint8), values[a - s:b - s])
        w.flush_block()
w.close({"status": "completed", "recorded_samples": N, "expected_samples": N})
import os; os.replace(d + "/recording.mcap.part", d + "/recording.mcap")
"""

IDENTIFY = r"""
import json, os, sys, time, resource, threading
t0 = time.perf_counter()
load_before = os.getloadavg()
peak = [0]
def anon_kb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0
def watch():
    while True:
        peak[0] = max(peak[0], anon_kb())
        time.sleep(0.005)
threading.Thread(target=watch, daemon=True).start()
import numpy as np
from robodyn.robot.loader import load_model
from robodyn.identification.pipeline import IdentificationConfig, identify
from robodyn.identification.signals import SampledData
from robodyn.identification.processing import ProcessingConfig
d, robot, fmt, setup = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
cfg = IdentificationConfig(method="ols", friction="coulomb-viscous", rotor_inertia=True,
                           processing=ProcessingConfig(q_cutoff_hz=20.0, tau_cutoff_hz=20.0))
t1 = time.perf_counter()
c1 = time.process_time()
load_s = load_cpu_s = None
if fmt == "mcap":  # the user's path: the daemon's recording read by identify's loader (timed with the fit)
    from robodyn.identification.data import load_dataset
    data = load_dataset(d + "/recording.mcap")
    load_s, load_cpu_s = time.perf_counter() - t1, time.process_time() - c1
    peak_load = max(peak[0], anon_kb()) / 1024
else:
    data = SampledData(np.load(d + "/t.npy", mmap_mode="r"), np.load(d + "/q.npy", mmap_mode="r"),
                       np.load(d + "/tau.npy", mmap_mode="r"))
if setup == "defaults":  # what `robodyn identify FILE --robot R` does with no option
    from robodyn.identification.methods import identification_result
    res = identification_result(load_model(robot), [data], IdentificationConfig(), "wls",
                                choose_method=True)[0].to_dict()
else:
    res = identify(load_model(robot), [data], cfg).to_dict()
t2 = time.perf_counter()
c2 = time.process_time()
peak[0] = max(peak[0], anon_kb())
mapped = 0
with open("/proc/self/smaps") as fh:
    current = None
    for line in fh:
        if "-" in line.split()[0] and len(line.split()) >= 5:
            current = line.split()[-1] if len(line.split()) >= 6 else ""
        elif line.startswith("Rss:") and current and current.startswith(d):
            mapped += int(line.split()[1])
if len(sys.argv) > 5:
    json.dump(res["estimate"]["values"], open(sys.argv[5], "w"))
print(json.dumps({"wall_s": t2 - t0, "identify_s": t2 - t1, "identify_cpu_s": c2 - c1,
                  "load_s": load_s, "load_cpu_s": load_cpu_s,
                  "peak_anon_mb_after_load": peak_load if fmt == "mcap" else None,
                  "load_average_before": list(load_before), "load_average_after": list(os.getloadavg()),
                  "rows": res["estimate"]["rows"],
                  "base_parameters": res["base"]["count"], "cond": res["estimate"]["cond"],
                  "rmse_sum": res["metrics"]["identification"]["rmse_sum"],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "peak_anon_mb": peak[0] / 1024, "recording_mapped_mb": mapped / 1024}))
"""


TRACE = r"""
import functools, json, os, sys, time, tracemalloc
import numpy as np
from robodyn.identification import pipeline, processing, signals
from robodyn.identification.signals import SampledData
from robodyn.identification.processing import ProcessingConfig
from robodyn.identification.pipeline import IdentificationConfig, identify
from robodyn.robot.loader import load_model
records = {}
def note(label, above_entry_mb):
    r = records.setdefault(label, {"calls": 0, "peak_above_entry_mb": 0.0})
    r["calls"] += 1
    r["peak_above_entry_mb"] = max(r["peak_above_entry_mb"], above_entry_mb)
def traced(f, label):
    @functools.wraps(f)
    def g(*a, **k):
        entry = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        try:
            return f(*a, **k)
        finally:
            note(label, (tracemalloc.get_traced_memory()[1] - entry) / 2**20)
    return g
for name in ("sampling_report", "split_at_gaps", "choose_cutoff", "noise_crossover"):
    g = traced(getattr(signals, name), "signals." + name)
    for mod in (signals, processing, pipeline):
        if hasattr(mod, name):
            setattr(mod, name, g)
check = SampledData.__post_init__
def checked(self):
    entry = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    check(self)
    note("SampledData checks (over 1e6 samples)" if self.t.shape[0] > 10**6 else "SampledData checks (pieces)",
         (tracemalloc.get_traced_memory()[1] - entry) / 2**20)
SampledData.__post_init__ = checked
pipeline.estimate = traced(pipeline.estimate, "pipeline.estimate (the streamed fit)")
d, robot = sys.argv[1], sys.argv[2]
tracemalloc.start()
data = SampledData(np.load(d + "/t.npy", mmap_mode="r"), np.load(d + "/q.npy", mmap_mode="r"),
                   np.load(d + "/tau.npy", mmap_mode="r"))
cfg = IdentificationConfig(method="ols", friction="coulomb-viscous", rotor_inertia=True,
                           processing=ProcessingConfig(q_cutoff_hz=20.0, tau_cutoff_hz=20.0))
identify(load_model(robot), [data], cfg)
print(json.dumps({"recording": d, "samples": int(data.count), "time_stamps_mb": data.t.nbytes / 2**20,
                  "load_average": list(os.getloadavg()),
                  "measure": "per function: the peak of numpy and Python allocations (tracemalloc) above those "
                             "live at its entry, largest over its calls",
                  "functions": records}))
"""

def recording(root: Path, robot: str, hours: float, rate: float) -> tuple[Path, float | None]:
    """The cached recording for (robot, hours, rate), generated when missing; returns its
    directory and the generation time (None when it was cached)."""
    d = root / f"{robot}-{hours:g}h-{rate:g}hz"
    stamp = d / "complete"
    if stamp.exists():
        return d, None
    d.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", GENERATE, str(d), robot, str(hours * 3600), str(rate)], check=True)
    stamp.write_text("ok")
    return d, time.perf_counter() - t


def check_sampling(d: Path) -> dict:
    """The chunked sampling report and gap split of a cached recording against np.diff, np.median
    and np.std over the whole time vector: which fields are the same float, and the others."""
    import os

    import numpy as np

    from robodyn.identification.signals import sampling_report, split_at_gaps

    t = np.load(d / "t.npy", mmap_mode="r")
    c = time.process_time()
    report = sampling_report(t)
    report_cpu = time.process_time() - c
    stretches = [(s.start, s.stop) for s in split_at_gaps(t, 3.0)]
    dt = np.diff(t)
    med = float(np.median(dt))
    std = float(np.std(dt))
    whole = {"median_period": med, "rate_hz": 1.0 / med, "jitter_std": std, "jitter_relative": float(std / med),
             "max_period": float(dt.max()), "min_period": float(dt.min()), "gaps": int(np.sum(dt > 1.5 * med))}
    cuts = np.flatnonzero(dt > 3.0 * med) + 1
    return {"recording": str(d), "samples": int(t.shape[0]),
            "same_float": [k for k in whole if whole[k] == report[k]],
            "different": {k: {"whole_array": whole[k], "chunked": report[k],
                              "relative": abs(whole[k] - report[k]) / abs(whole[k])}
                          for k in whole if whole[k] != report[k]},
            "split_at_gaps_equal": stretches == [(int(a), int(b)) for a, b in zip(np.r_[0, cuts], np.r_[cuts, t.size])],
            "sampling_report_cpu_s": report_cpu, "load_average": list(os.getloadavg())}


def mcap_recording(d: Path) -> float | None:
    """The cached recording also as a daemon recording (MCAP, the Franka driver's 74 columns in
    50 ms blocks), written when missing; returns the time it took (None when cached)."""
    if (d / "recording.mcap").exists():
        return None
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", TO_MCAP, str(d)], check=True)
    return time.perf_counter() - t


def identify_child(d: Path, robot: str, theta_path: str | None = None, fmt: str = "npy",
                   setup: str = "fixed") -> dict:
    cmd = [sys.executable, "-c", IDENTIFY, str(d), robot, fmt, setup] + ([theta_path] if theta_path else [])
    p = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def growth_violations(rows: list[dict], tolerance: float) -> list[str]:
    """One line per run whose identification CPU time per hour or peak working memory exceeds its
    robot's shortest run by more than ``tolerance`` (a fraction): growth that is not linear."""
    lines = []
    for r in rows:
        first = min((x for x in rows if x["robot"] == r["robot"]), key=lambda x: x["hours"])
        if r is first:
            continue
        cpu = r["identify_cpu_s_per_hour"] / first["identify_cpu_s_per_hour"]
        anon = r["peak_anon_mb"] / first["peak_anon_mb"]
        if cpu > 1.0 + tolerance:
            lines.append(f"{r['robot']} {r['hours']:g} h: identification CPU time per hour is {cpu:.2f} x that of "
                         f"{first['hours']:g} h (limit {1.0 + tolerance:.2f}): growth is not linear")
        if anon > 1.0 + tolerance:
            lines.append(f"{r['robot']} {r['hours']:g} h: peak working memory is {anon:.2f} x that of "
                         f"{first['hours']:g} h (limit {1.0 + tolerance:.2f}): memory grows with the recording")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hours", default="1", help="comma-separated durations in hours")
    ap.add_argument("--robots", default="panda", help="comma-separated robots (panda: 7 DOF, ur5: 6 DOF)")
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--data-dir", default=None, help="cache recordings here (default: a temporary directory)")
    ap.add_argument("--tolerance", type=float, default=0.25,
                    help="allowed excess of CPU time per hour and of peak working memory over the shortest run")
    ap.add_argument("--identify-only", default=None, metavar="DIR",
                    help="only run the identifying child on a cached recording directory and print its JSON")
    ap.add_argument("--robot", default="panda", help="robot of --identify-only")
    ap.add_argument("--save-theta", default=None, help="with --identify-only: write the estimate here (JSON)")
    ap.add_argument("--format", choices=("npy", "mcap"), default="npy",
                    help="npy: identify from the memory-mapped arrays; mcap: from a daemon recording of the same "
                         "samples (the Franka driver's columns), read by identify's loader as a user's run is")
    ap.add_argument("--setup", choices=("fixed", "defaults"), default="fixed",
                    help="fixed: OLS at 20 Hz cut-offs (the streaming path alone); defaults: what `robodyn identify` "
                         "does with no option (the cut-off and the fit validated on the last quarter, the checks, "
                         "the prediction intervals' residual model)")
    ap.add_argument("--out", default=None, help="also write the result JSON to this file")
    ap.add_argument("--check-sampling", default=None, metavar="DIR", nargs="+",
                    help="compare the chunked sampling report and split at gaps with the whole-array numpy "
                         "expressions on cached recordings (needs two whole-log temporaries of memory)")
    ap.add_argument("--trace-temporaries", default=None, metavar="DIR",
                    help="identify a cached recording under tracemalloc and print, per function that reads the "
                         "whole recording, its peak allocation above entry (which temporaries grow with the log)")
    args = ap.parse_args()
    if args.check_sampling:
        text = json.dumps({"command": "python bench/identify/run.py " + " ".join(sys.argv[1:]),
                           "recordings": [check_sampling(Path(d)) for d in args.check_sampling]}, indent=2)
        print(text)
        if args.out:
            Path(args.out).write_text(text + "\n")
        return 0
    if args.trace_temporaries:
        p = subprocess.run([sys.executable, "-c", TRACE, args.trace_temporaries, args.robot], check=True,
                           capture_output=True, text=True)
        text = json.dumps({"command": "python bench/identify/run.py " + " ".join(sys.argv[1:]),
                           **json.loads(p.stdout.strip().splitlines()[-1])}, indent=2)
        print(text)
        if args.out:
            Path(args.out).write_text(text + "\n")
        return 0
    if args.identify_only:
        print(json.dumps(identify_child(Path(args.identify_only), args.robot, args.save_theta, args.format,
                                        args.setup)))
        return 0
    import os

    from robodyn.robot.loader import load_model

    try:
        hours = sorted(float(h) for h in args.hours.split(","))
    except ValueError:
        ap.error(f"--hours: expected comma-separated numbers of hours, got {args.hours!r}")
    if not hours or min(hours) <= 0:
        ap.error(f"--hours: every duration must be > 0 h, got {args.hours!r}")
    robots = [r.strip() for r in args.robots.split(",")]
    tmp = None if args.data_dir else tempfile.TemporaryDirectory(prefix="robodyn-bench-")
    root = Path(args.data_dir or tmp.name)
    rows = []
    total_hours = sum(hours) * len(robots)
    done_hours, spent = 0.0, 0.0
    started = time.perf_counter()
    try:
        for robot in robots:
            dof = load_model(robot).dof
            for h in hours:
                eta = f", about {spent / done_hours * (total_hours - done_hours):.0f} s left" if done_hours else ""
                print(f"bench/identify: {robot} {h:g} h ({done_hours:g} of {total_hours:g} h done{eta})",
                      file=sys.stderr, flush=True)
                t = time.perf_counter()
                d, gen_s = recording(root, robot, h, args.rate)
                mcap_s = mcap_recording(d) if args.format == "mcap" else None
                run = identify_child(d, robot, fmt=args.format, setup=args.setup)
                spent += time.perf_counter() - t
                done_hours += h
                samples = int(h * 3600 * args.rate)
                stacked_gb = samples * dof * (dof * 14) * 8 / 2**30
                rows.append({"robot": robot, "dof": dof, "hours": h, "samples": samples, "rate_hz": args.rate,
                             "format": args.format, "setup": args.setup,
                             "recording_mb": (d / "recording.mcap").stat().st_size / 2**20 if args.format == "mcap"
                             else sum(p.stat().st_size for p in d.glob("*.npy")) / 2**20,
                             "generate_s": gen_s, "write_mcap_s": mcap_s, "load_average_1min": run["load_average_before"][0], **run,
                             "identify_s_per_hour": run["identify_s"] / h,
                             "identify_cpu_s_per_hour": run["identify_cpu_s"] / h,
                             "us_per_sample": run["identify_s"] / samples * 1e6,
                             "reference_full_stacked_regressor_gb": stacked_gb})
                print(f"bench/identify: {robot} {h:g} h identified in {run['identify_s']:.1f} s "
                      f"({run['identify_s'] / h:.1f} s per hour), peak working memory {run['peak_anon_mb']:.0f} MB, "
                      f"load {run['load_average_before'][0]:.1f}", file=sys.stderr, flush=True)
    finally:
        if tmp is not None:
            tmp.cleanup()
    for r in rows:  # growth against the shortest run of the same robot
        first = min((x for x in rows if x["robot"] == r["robot"]), key=lambda x: x["hours"])
        r["identify_s_per_hour_ratio_to_first"] = r["identify_s_per_hour"] / first["identify_s_per_hour"]
        r["identify_cpu_s_per_hour_ratio_to_first"] = r["identify_cpu_s_per_hour"] / first["identify_cpu_s_per_hour"]
        r["peak_anon_mb_ratio_to_first"] = r["peak_anon_mb"] / first["peak_anon_mb"]
    violations = growth_violations(rows, args.tolerance)
    text = json.dumps({"benchmark": "identify", "goal_wall_s_1h_panda": 5.0, "goal_peak_rss_mb_1h_panda": 600.0,
                       "threads": os.cpu_count(), "tolerance": args.tolerance, "linear": not violations,
                       "violations": violations, "bench_s": time.perf_counter() - started,
                       "command": "python bench/identify/run.py " + " ".join(sys.argv[1:]), "runs": rows}, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    for line in violations:
        print(f"bench/identify: FAILED: {line}", file=sys.stderr)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
