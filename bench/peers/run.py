"""Side by side with the tools a lab would use instead, on the same real logs, splits and score.

On every real log of bench/realdata (the TX40 shipped with robodyn, the Panda and UR10e logs when
their repositories are at hand, every corpus arm fetch.py cached), with bench/realdata's splits
(time: first 60 % identifies, last 40 % is held out; cross-run: run A identifies, run B is held
out; the UR10e: its excitation identifies, its point-to-point run is held out), each peer runs in
a process of its own, started by this one:

- ``robodyn``: ``robodyn identify`` with its defaults (``identification.methods.identification_result``,
  the command's own call), scored by ``validate``;
- ``robodyn_select``: the same with ``--select``;
- ``figaroh``: FIGAROH 1.0.2 set up as its examples set up an arm (figaroh_peer.py says exactly how);
- ``mujoco_sysid``: MuJoCo 4.0.1's ``mujoco.sysid`` (mujoco_sysid_peer.py);
- ``plain``: the careful plain least-squares script of bench/realdata/loro.py;
- ``robodyn_cutoff_10hz`` (a diagnostic, not a default): robodyn's defaults with the cut-off fixed at
  the plain script's 10 Hz instead of chosen on held-out blocks, to measure what that choice costs
  in time.

Score: the sum over joints of the per-joint RMSE (N.m) against the raw measured torque of the
held-out part. Per peer and log: that score, the wall time of its process (start to exit: Python
start, imports, reading the log, fitting and predicting), the seconds of fit and prediction alone,
the process's peak resident memory (``os.wait4``'s ru_maxrss) and the number of parameters it
estimates; where a peer cannot run, the one-line reason (its exception). The host's load average
is recorded before and after each process: timings on a shared machine are loaded.

    .venv/bin/python bench/peers/run.py [--peers robodyn,figaroh,plain] [--logs tx40,panda,...]
        [--panda-log DIR] [--ur10e-log DIR] [--dir CORPUS_CACHE] [--out bench/peers/result.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REALDATA = ROOT / "bench" / "realdata"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REALDATA))

PEERS = ("robodyn", "robodyn_select", "figaroh", "mujoco_sysid", "plain", "robodyn_cutoff_10hz")
PANDA_MIRROR = Path("/work/.mirror/marcocognetti+FrankaEmikaPandaDynModel/repo")
UR10E_MIRROR = Path("/work/.mirror/shamilmamedov+dynamic_calibration/repo")


# --------------------------------------------------------------------------- the logs

def _panda_folder(given: Path | None, scratch: Path) -> Path | None:
    """A folder holding the Gaz et al. 2019 Panda log: ``given``, or the four files taken out of a
    bare clone of its repository (never shipped: GPL-3.0)."""
    from robodyn.identification.datasets import gaz2019

    if given is not None:
        return given
    if not PANDA_MIRROR.exists():
        return None
    out = scratch / "panda_log"
    out.mkdir(exist_ok=True)
    for name in gaz2019.FILES:
        blob = f"HEAD:{gaz2019.LOG_FOLDER}/exciting_traj_{name}.txt"
        text = subprocess.run(["git", "--git-dir", str(PANDA_MIRROR), "show", blob], capture_output=True,
                              check=True).stdout
        (out / f"exciting_traj_{name}.txt").write_bytes(text)
    return out


def _realdata_run():
    """bench/realdata/run.py (its UR10e reader), by path: this file is named run.py too."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("realdata_run", REALDATA / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def log_names(args) -> list[str]:
    """tx40, panda, ur10e and every corpus arm's splits as ARM:SPLIT."""
    import corpus

    names = ["tx40", "panda", "ur10e"]
    for arm in corpus.ARMS:
        names += [f"{arm.name}:{s.label}" for s in arm.splits]
    return names


def load_log(name: str, args, scratch: Path) -> dict:
    """{model, fit, held, couplings, setup, source, split} of one log; ValueError (one line) when it
    is not at hand."""
    import loro

    if name == "tx40":
        from robodyn.identification.datasets import tx40
        from robodyn.robot.urdf import model_from_urdf

        fit, held = loro.split_run(tx40.load(tx40.DATA_DIR))
        return {"model": model_from_urdf(tx40.DATA_DIR / "tx40_mdh_modified.urdf"), "fit": fit, "held": held,
                "couplings": (tx40.WRIST_COUPLING,), "setup": "tx40", "split": "time: first 60 % -> last 40 %",
                "source": "real Stäubli TX40, 5 kHz, identification/datasets/staubli_tx40 (figaroh-plus, Apache-2.0)"}
    if name == "panda":
        from robodyn.identification.datasets import gaz2019
        from robodyn.robot.loader import load_model

        folder = _panda_folder(args.panda_log, scratch)
        if folder is None:
            raise ValueError("panda: no log (pass --panda-log DIR)")
        fit, held = loro.split_run(gaz2019.load(folder))
        return {"model": load_model("panda"), "fit": fit, "held": held, "couplings": (), "setup": "arm",
                "split": "time: first 60 % -> last 40 %",
                "source": "real Franka Panda, 1 kHz, Gaz et al. 2019 excitation log "
                          "(marcocognetti/FrankaEmikaPandaDynModel, GPL-3.0, not shipped)"}
    if name == "ur10e":
        from robodyn.robot.loader import load_model

        realdata_run = _realdata_run()

        directory = args.ur10e_log or (UR10E_MIRROR if UR10E_MIRROR.exists() else None)
        if directory is None:
            raise ValueError("ur10e: no log (pass --ur10e-log DIR)")
        fit, held, split = realdata_run.load_ur10e(directory)
        return {"model": load_model("ur10e"), "fit": fit, "held": held, "couplings": (), "setup": "arm",
                "split": split, "source": "real UR10e, ~94 Hz, motor currents x drive gains "
                                          "(shamilmamedov/dynamic_calibration, no licence, not shipped)"}
    import corpus
    import fetch
    import readers

    arm_name, _, label = name.partition(":")
    arm = corpus.arm(arm_name)
    if not arm.evaluate:
        raise ValueError(f"{arm_name}: not evaluated ({arm.why_not})")
    problems = fetch.cached(args.dir, arm)
    if problems:
        raise ValueError(f"{arm_name}: not in the cache {args.dir}: {problems[0]}")
    split = next((s for s in arm.splits if s.label == label), None)
    if split is None:
        raise ValueError(f"{name}: no such split; {arm_name} has {[s.label for s in arm.splits]}")
    model = readers.load_robot(arm, args.dir)
    if split.kind == "time":
        fit, held = loro.split_run(readers.read_run(arm, split.fit, args.dir))
    else:
        fit, held = readers.read_run(arm, split.fit, args.dir), readers.read_run(arm, split.held, args.dir)
    return {"model": model, "fit": fit, "held": held, "couplings": (), "setup": "arm", "split": split.label,
            "source": f"real {arm.maker} {arm.model}, {arm.repository}@{arm.commit} ({arm.licence}), "
                      f"torque: {arm.torque_source}"}


# --------------------------------------------------------------------------- one peer on one log (child)

def run_peer(peer: str, log: dict) -> dict:
    model, fit, held = log["model"], log["fit"], log["held"]
    if peer in ("robodyn", "robodyn_select", "robodyn_cutoff_10hz"):
        from robodyn.identification.methods import identification_result
        from robodyn.identification.pipeline import IdentificationConfig, validate
        from robodyn.identification.processing import ProcessingConfig

        config = IdentificationConfig(motor_couplings=tuple(log["couplings"]))
        if peer == "robodyn_cutoff_10hz":
            config = IdentificationConfig(motor_couplings=tuple(log["couplings"]),
                                          processing=ProcessingConfig(cutoff_hz=10.0))
        result = identification_result(model, [fit], config, config.method, select=peer == "robodyn_select",
                                       choose_method=peer != "robodyn_select")[0].to_json_dict()
        v = validate(model, result, [held])
        out = {"rmse": v["rmse"], "rmse_sum": v["rmse_sum"], "parameters": len(result["estimate"]["values"]),
               "cutoff_hz": result["config"]["processing"]["cutoff_hz"]}
        if peer == "robodyn_select":
            chosen = result["selection"]["chosen"]
            out["chosen"] = {k: chosen[k] for k in ("friction", "rotor_inertia", "method", "cutoff_hz")}
        return out
    if peer == "plain":
        import loro
        from robodyn.identification.regressor import ColumnSpec

        out = loro.plain_script(model, fit, held, motor_couplings=log["couplings"])
        spec = ColumnSpec(True, ("viscous", "coulomb", "offset"), tuple(tuple(c) for c in log["couplings"]))
        out["parameters"] = spec.total(model.dof)
        out["note"] = "least squares on the full regressor (minimum-norm solution): the count is its columns"
        return out
    if peer == "figaroh":
        import figaroh_peer
        from robodyn.robot.urdf import model_to_urdf

        return figaroh_peer.run(model_to_urdf(model), list(model.joint_names), fit, held, log["setup"])
    if peer == "mujoco_sysid":
        import mujoco_sysid_peer

        return mujoco_sysid_peer.run(model, fit, held)
    raise ValueError(f"peer: expected one of {PEERS}, got {peer!r}")


def child(args) -> int:
    """One peer on one log in this process; the JSON to --child-out."""
    import warnings

    warnings.simplefilter("ignore")
    out: dict = {}
    with tempfile.TemporaryDirectory() as scratch:
        try:
            log = load_log(args.log, args, Path(scratch))
            out.update(source=log["source"], split=log["split"], fit_samples=log["fit"].count,
                       held_samples=log["held"].count, dof=log["model"].dof,
                       rate_hz=round(1.0 / float(np.median(np.diff(log["fit"].t))), 3))
            t0 = time.perf_counter()
            out.update(run_peer(args.child, log))
            out["fit_and_predict_seconds"] = round(time.perf_counter() - t0, 3)
        except Exception as exc:  # noqa: BLE001 - one line per failure is the finding
            out["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
    Path(args.child_out).write_text(json.dumps(out))
    return 0


# --------------------------------------------------------------------------- the parent

def measure(peer: str, log: str, args) -> dict:
    """Run one peer on one log in a child process: its JSON, wall time and peak memory."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", peer, "--log", log, "--child-out", str(out),
               "--dir", str(args.dir)]
        if args.panda_log:
            cmd += ["--panda-log", str(args.panda_log)]
        if args.ur10e_log:
            cmd += ["--ur10e-log", str(args.ur10e_log)]
        load_before = os.getloadavg()
        err = Path(tmp) / "stderr.txt"
        t0 = time.perf_counter()
        with err.open("w") as stderr:
            # robodyn's own runs get what the robodyn command sets for itself (robodyn/cli.py: one
            # OpenBLAS thread); the other peers run as their users would start them
            env = dict(os.environ, OPENBLAS_NUM_THREADS="1") if peer.startswith("robodyn") else None
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
            timer = threading.Timer(args.timeout, proc.kill) if args.timeout else None
            if timer is not None:
                timer.start()
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own resource use, peak memory included
            wall = time.perf_counter() - t0
            if timer is not None:
                timer.cancel()
        code = proc.returncode = os.waitstatus_to_exitcode(status)
        tail = err.read_text().strip().splitlines()[-1:] if err.exists() else []
        row = json.loads(out.read_text()) if out.exists() else \
            {"error": f"the process exited {code}" + (f" (killed after --timeout {args.timeout} s)" if code < 0 and
                                                      args.timeout else "") + (f": {tail[0]}" if tail else "")}
        row["peak_rss_mb"] = round(usage.ru_maxrss / 1024.0, 1)  # Linux reports KiB
    row.update(wall_seconds=round(wall, 2), loadavg_before=[round(x, 2) for x in load_before],
               loadavg_after=[round(x, 2) for x in os.getloadavg()])
    return row


def main(argv=None) -> int:
    import fetch

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--peers", default=",".join(PEERS), help=f"comma list of {PEERS}")
    p.add_argument("--logs", help="comma list of logs (default all: tx40, panda, ur10e, ARM:SPLIT of the corpus)")
    p.add_argument("--panda-log", type=Path, help="folder of the Gaz et al. 2019 Panda log (default: its bare clone "
                                                   f"under {PANDA_MIRROR.parent.parent} when present)")
    p.add_argument("--ur10e-log", type=Path, help="dynamic_calibration checkout or bare clone (default: "
                                                   f"{UR10E_MIRROR} when present)")
    p.add_argument("--dir", type=Path, default=fetch.DEFAULT_CACHE, help="the corpus cache fetch.py filled")
    p.add_argument("--timeout", type=float, default=None, help="seconds one peer may take on one log")
    p.add_argument("--out", type=Path, default=HERE / "result.json")
    p.add_argument("--merge", action="store_true", help="keep the rows of an existing --out not run now")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--log", help=argparse.SUPPRESS)
    p.add_argument("--child-out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return child(args)
    peers = [x.strip() for x in args.peers.split(",") if x.strip()]
    bad = [x for x in peers if x not in PEERS]
    if bad:
        p.error(f"--peers: unknown {bad}; expected any of {list(PEERS)}")
    logs = [x.strip() for x in args.logs.split(",")] if args.logs else log_names(args)
    rows = {}
    if args.merge and args.out.exists():
        rows = {(r["log"], r["peer"]): r for r in json.loads(args.out.read_text())["rows"]}
    for log in logs:
        for peer in peers:
            row = {"log": log, "peer": peer, **measure(peer, log, args)}
            rows[(log, peer)] = row
            print(json.dumps({k: row.get(k) for k in ("log", "peer", "rmse_sum", "wall_seconds",
                                                     "peak_rss_mb", "parameters", "error")}), flush=True)
            write(args.out, rows)
    return 0


def write(path: Path, rows: dict) -> None:
    path.write_text(json.dumps({
        "benchmark": "peers", "score": "sum over joints of per-joint RMSE (N.m) against the raw measured torque on "
                                       "the held-out part, which no fit saw",
        "host": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "command": "bench/peers/run.py", "rows": list(rows.values())}, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
