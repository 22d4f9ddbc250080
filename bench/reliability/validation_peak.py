"""Peak memory of validating one trajectory, in a fresh process (run by run.py).

    python bench/reliability/validation_peak.py CASE [--implementation windowed|one-pass]

CASE: ``fourier:DURATION:HARMONICS`` or ``sampled:DURATION:RATE``. Prints one JSON line: RSS
after imports and parsing, peak RSS (VmHWM) after the daemon's validation (plan_run: the
trajectory and the move to its start), the increase, seconds, the validation cost and the
verdict. ``one-pass`` validates with the validator as it was before windowed validation
(robodyn/limits.py at commit 6f94e21, read from git), the reference the windowed one is compared with.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BEFORE_COMMIT = "6f94e21"
READY_Q = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def build(case: str) -> dict:
    """``fourier:DURATION:HARMONICS``: a Fourier+quintic excitation (rest to rest) of 10 s periods
    repeated over DURATION; ``sampled:DURATION:RATE``: sampled positions at RATE."""
    from robodyn.trajectory import FourierPolyTrajectory, SampledTrajectory

    kind, a, b = case.split(":")
    rng = np.random.default_rng(0)
    if kind == "fourier":
        duration, harmonics = float(a), int(b)
        period = min(duration, 10.0)
        amp = 0.03 / harmonics
        traj = FourierPolyTrajectory(2 * np.pi / period, READY_Q + 0.05, rng.normal(0, amp, (7, harmonics)),
                                     rng.normal(0, amp, (7, harmonics)), periods=max(1, round(duration / period)))
        return traj.to_dict(robot="panda")
    duration, rate = float(a), float(b)
    t = np.arange(int(duration * rate) + 1) / rate
    q = READY_Q + 0.05 * np.sin(np.pi * t / duration)[:, None] ** 2 * np.ones(7)
    return SampledTrajectory(t, q).to_dict(robot="panda")


def one_pass_limits():
    """The validator as it was before windows (for the side-by-side reference)."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{BEFORE_COMMIT}:robodyn/limits.py"], check=True,
                          capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "limits_one_pass.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("limits_one_pass", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["limits_one_pass"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--implementation", choices=("windowed", "one-pass"), default="windowed")
    args = ap.parse_args()
    import msgpack

    from robodyn.daemon import motion
    from robodyn.daemon import protocol as P
    from robodyn.limits import validation_cost
    from robodyn.robot.loader import load_model
    from robodyn.trajectory import trajectory_from_dict

    model = load_model("panda")
    doc = build(args.case)
    frame = msgpack.packb({"v": 1, "id": 1, "cmd": "submit_run", "args": {"robot": "panda", "trajectory": doc}},
                          use_bin_type=True)
    del doc
    if args.implementation == "one-pass":
        motion.check_trajectory = one_pass_limits().check_trajectory
    traj = trajectory_from_dict(P.parse_request(P.unpackb(frame)).args["trajectory"])
    cost = validation_cost(traj, 1000.0)
    # warm the Numba kernels on a tiny case, so their compilation is not counted as validation
    motion.plan_run(model, trajectory_from_dict(build("fourier:10:2")), READY_Q, 1000.0)
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM: the peak from here on
    before = status_kib("VmRSS")
    t0 = time.perf_counter()
    try:
        plan = motion.plan_run(model, traj, READY_Q, 1000.0)
        verdict = "accepted"
        checked = plan.report.samples_checked
    except motion.RunRejected as exc:
        verdict = f"rejected: {exc}"
        checked = exc.report.samples_checked
    seconds = time.perf_counter() - t0
    peak = status_kib("VmHWM")
    print(json.dumps({"case": args.case, "implementation": args.implementation, "request_bytes": len(frame),
                      "cost": cost.to_dict(), "rss_before_mib": before / 1024, "peak_rss_mib": peak / 1024,
                      "increase_mib": (peak - before) / 1024,
                      "seconds": seconds, "samples_checked": checked, "verdict": verdict[:200]}))


if __name__ == "__main__":
    sys.exit(main())
