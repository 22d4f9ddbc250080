"""`robodyn demo`: the whole loop on a simulated Panda, in a few minutes.

1. a daemon starts with a simulated Panda (MuJoCo plant, sensor noise, seed-000 Stribeck friction);
2. an excitation trajectory is designed (5-harmonic Fourier series, SLSQP on cond(W_base));
3. the friction experiment (constant-velocity sweeps, one run per joint) and the excitation are
   run by the daemon and recorded, plus a second, held-out excitation;
4. Stribeck friction is fitted per joint, then the dynamics are identified by the daemon's worker
   with that friction subtracted (seed 000 eq. 9);
5. the model is validated on the held-out run against the raw measured torque;
6. a table is printed, with the path of the HTML report.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

READY = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])
DEMO_SPEEDS = (0.015, 0.03, 0.045, 0.06, 0.08, 0.1, 0.13, 0.18, 0.3, 0.6)  # rad/s, dense around the Stribeck velocities
SWEEP_HALF_WIDTH = 0.1  # rad around the ready pose
PERIOD_S = 10.0
WELL_EXCITED_SHARE = 0.10  # a base parameter carrying >= 10 % of some joint's RMS torque


def register(sub) -> None:
    p = sub.add_parser("demo", help="run the simulated end-to-end demo (daemon, excitation, friction, "
                                    "identification, validation)")
    p.add_argument("--out", default="robodyn-demo", help="output folder (default ./robodyn-demo)")
    p.add_argument("--design-time", type=float, default=40.0, metavar="S", help="excitation design budget")
    p.add_argument("--periods", type=int, default=3, help="excitation periods recorded")
    p.add_argument("--json", action="store_true", help="print the final summary as JSON")
    p.set_defaults(handler=cmd_demo)


class Progress:
    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.t0 = time.monotonic()

    def __call__(self, text: str, end: str = "\n") -> None:
        if not self.quiet:
            print(f"[{time.monotonic() - self.t0:6.1f} s] {text}", end=end, file=sys.stderr, flush=True)


def _run(client, traj, label: str, say) -> dict:
    reply = client.submit_run("panda", traj.to_dict(robot="panda"), label=label)
    st = client.wait_run(reply["run_id"], timeout=max(600.0, 20 * traj.duration))
    if st["state"] != "completed":
        raise RuntimeError(f"run {reply['run_id']} ({label}) ended {st['state']}: {st.get('reason')}")
    say(f"  {label}: {traj.duration:.1f} s of motion recorded as {reply['run_id']}")
    return reply


def _execute_phase(path):
    from robodyn.daemon.recording import load_recording

    rec = load_recording(path)
    mask = rec.phase_mask("execute")
    t = rec.robot_time[mask]
    return t - t[0], rec.signal("q")[mask], rec.signal("qd")[mask], rec.signal("tau")[mask]


def design(model, seed: int, budget: float, periods: int):
    from robodyn.identification.excitation.designer import DesignRequest, design_excitation
    from robodyn.trajectory import FourierTrajectory

    req = DesignRequest(family="fourier", harmonics=5, wf=2 * math.pi / PERIOD_S, optimizer="slsqp", starts=1,
                        seed=seed, time_limit=budget)
    result = design_excitation(model, req)
    one = result.trajectory
    return FourierTrajectory(one.wf, one.q0, one.a, one.b, periods=periods), result


def cmd_demo(args) -> int:
    from robodyn.identification.base_params import BaseParameters
    from robodyn.identification.friction import experiment_trajectory, fit_friction, model_from_fits, points_from_run
    from robodyn.identification.pipeline import base_rows, predict_processed, validate
    from robodyn.identification.regressor import standard_parameter_vector
    from robodyn.identification.report import torque_plot_png, write_html_report
    from robodyn.identification.signals import ProcessingConfig, SampledData, process
    from robodyn.robot.loader import load_model
    from robodyn.tools.local_daemon import LocalDaemon

    say = Progress(args.json)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    model = load_model("panda")
    say(f"robodyn demo: simulated Panda, output in {out}")

    say("[1/6] starting the daemon (MuJoCo plant, torque noise, encoder quantization, Stribeck friction)")
    with LocalDaemon(out / "daemon", "panda", {"speed": 0.0, "seed": 1}) as daemon:
        plant = daemon.client.describe()["driver"]["info"]  # the simulator's ground truth
        noise = float(plant["torque_noise_std"])
        say(f"  daemon ready at {daemon.control}")

        say(f"[2/6] designing the excitation (5-harmonic Fourier, SLSQP, budget {args.design_time:.0f} s)")
        excitation, result = design(model, 0, args.design_time, args.periods)
        say(f"  raw cond(W_base) {result.metrics['cond_raw']:.1f} (column-scaled {result.metrics['cond_scaled']:.1f}), "
            f"designed in {result.elapsed:.1f} s, within limits: {result.limit_report['ok']}")
        held_out, held_result = design(model, 7, args.design_time / 2, 1)
        (out / "excitation.json").write_text(json.dumps(excitation.to_dict(robot="panda"), indent=1))

        say(f"[3/6] friction experiment: {len(DEMO_SPEEDS)} speeds x 7 joints, one run per joint")
        fits = []
        friction_points = []
        for joint in range(model.dof):
            low, high = READY[joint] - SWEEP_HALF_WIDTH, READY[joint] + SWEEP_HALF_WIDTH
            traj, _ = experiment_trajectory(model, READY, joint, low, high, DEMO_SPEEDS)
            reply = _run(daemon.client, traj, f"friction joint {joint + 1}", say)
            t, q, qd, tau = _execute_phase(reply["recording"])
            points = points_from_run(traj, t, q, qd, tau)
            friction_points.append([(p.measured_speed, p.torque) for p in points])
            fit = fit_friction(np.array([p.measured_speed for p in points]), np.array([p.torque for p in points]),
                               "stribeck", joint=joint)
            fits.append(fit)
        friction = model_from_fits(fits, model.dof)
        (out / "friction.json").write_text(json.dumps({"model": friction.to_dict(), "points": friction_points,
                                                       "fits": [f.__dict__ for f in fits]}, indent=1, default=float))
        say("[3/6] running the excitation and the held-out trajectory")
        ident_run = _run(daemon.client, excitation, "excitation", say)
        t_i, q_i, qd_i, tau_i = _execute_phase(ident_run["recording"])
        ident_data = SampledData(t_i, q_i, tau_i, qd_i)
        held_run = _run(daemon.client, held_out, "held-out", say)

        say("[4/6] identifying on the daemon's worker (WLS, seed-000 Stribeck friction subtracted)")
        processing = {"q_cutoff_hz": 15.0, "tau_cutoff_hz": 15.0, "velocity": "differentiate", "trim_s": 0.5}
        job = daemon.client.identify([ident_run["run_id"]], {"method": "wls", "friction": "stribeck",
                                                             "rotor_inertia": True,
                                                             "friction_model": friction.to_dict(),
                                                             "processing": processing})["job"]
        st = daemon.client.wait_job(job, lambda s: say(f"  job {job}: {s['stage']} {s['progress'] * 100:3.0f} %",
                                                       end="\r"), timeout=900)
        say("")
        if st["state"] != "completed":
            raise RuntimeError(f"identification job failed: {st.get('error')}")
        doc = daemon.client.pull(job)
        (out / "result.json").write_text(json.dumps(doc, indent=1))

        say("[5/6] validating on the held-out run against the raw measured torque")
        t, q, qd, tau = _execute_phase(held_run["recording"])
        raw = SampledData(t, q, tau, qd)
        against_raw = ProcessingConfig(**{**doc["config"]["processing"], "tau_cutoff_hz": None, "trim_s": 0.5})
        holdout = validate(model, doc, [raw], processing=against_raw)
        ident_metrics = doc["metrics"]["identification"]

    base = BaseParameters.from_dict(doc["base"])
    true_model = model.with_inertial(np.asarray(plant["true_inertial"]))
    true_model = true_model.__class__(**{**true_model.__dict__, "rotor_inertia": np.asarray(plant["rotor_inertia"])})
    truth = base.base_values(standard_parameter_vector(true_model, base.spec))
    est = np.asarray(doc["estimate"]["values"])
    # "well excited": the parameter carries at least 10 % of some joint's RMS torque on the excitation
    ident = process(ident_data, ProcessingConfig(**doc["config"]["processing"]), friction).data
    Wb = base_rows(model, ident, base.spec).reshape(ident.count, model.dof, -1)[:, :, base.independent]
    torque_rms = np.sqrt(np.mean((ident.tau + ident.tau_friction) ** 2, axis=0))
    share = np.max(np.sqrt(np.mean((Wb * est) ** 2, axis=0)) / torque_rms[:, None], axis=0)
    well = share >= WELL_EXCITED_SHARE
    rel_err = np.abs(est - truth) / np.maximum(np.abs(truth), 1e-12)
    fr_err = {k: (np.abs(friction.params[k] - np.asarray(plant["friction"][k])) /
                  np.abs(np.asarray(plant["friction"][k]))).tolist() for k in ("fc", "fs", "vs")}
    # a Stribeck velocity inside the linear zone leaves fs and vs without any effect on the torque
    hidden = np.abs(np.asarray(plant["friction"]["vs"])) * 3 < np.asarray(plant["friction"]["qd0"])
    for k in ("fs", "vs"):
        fr_err[k] = [None if h else e for h, e in zip(hidden, fr_err[k])]

    say("[6/6] report")
    processed = process(raw, against_raw, friction).data
    pred = predict_processed(model, base, est, processed) + processed.tau_friction
    png = torque_plot_png(processed.t, processed.tau + processed.tau_friction, pred, model.joint_names,
                          "held-out: predicted vs raw measured")
    report = write_html_report(out / "report.html", doc, [
        {"title": "identification run", "metrics": ident_metrics},
        {"title": "held-out run (raw measured torque)", "metrics": holdout, "png": png}])

    summary = {
        "output": str(out), "report": str(report),
        "excitation": {"cond_raw": result.metrics["cond_raw"], "cond_scaled": result.metrics["cond_scaled"],
                       "design_s": result.elapsed},
        "friction_relative_error": fr_err,
        "base_parameters": {
            "count": base.count, "well_excited_definition": f">= {WELL_EXCITED_SHARE:.0%} of some joint's RMS torque",
            "well_excited": [base.names[i] for i in np.flatnonzero(well)],
            "max_relative_error_well_excited": float(rel_err[well].max()) if well.any() else None,
            "relative_error": {base.names[i]: float(rel_err[i]) for i in range(base.count)},
            "torque_share": {base.names[i]: float(share[i]) for i in range(base.count)}},
        "holdout": holdout, "torque_noise_std": noise,
        "holdout_rmse_over_noise": [r / noise for r in holdout["rmse"]],
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print()
    print(f"{'joint':<8}{'RMSE held-out':>14}{'/ noise σ':>10}{'corr':>9}   {'fc err':>7}{'fs err':>8}{'vs err':>8}")

    def pct(x):
        return "    n/a" if x is None else f"{x * 100:>6.2f}%"

    for j, name in enumerate(model.joint_names):
        print(f"{name:<8}{holdout['rmse'][j]:>11.4f} N·m{holdout['rmse'][j] / noise:>9.2f}"
              f"{holdout['correlation'][j]:>9.5f}   {pct(fr_err['fc'][j])} {pct(fr_err['fs'][j])} {pct(fr_err['vs'][j])}")
    print(f"{'sum':<8}{holdout['rmse_sum']:>11.4f} N·m   relative error {holdout['relative_error_total'] * 100:.2f} %")
    print(f"\nexcitation: raw cond(W_base) {result.metrics['cond_raw']:.1f}; {base.count} base parameters, "
          f"{int(well.sum())} carry >= {WELL_EXCITED_SHARE:.0%} of a joint's torque: max error vs the simulator's "
          f"truth {(rel_err[well].max() * 100 if well.any() else float('nan')):.2f} %")
    for j in np.flatnonzero(hidden):
        print(f"friction n/a: joint {j + 1}'s Stribeck velocity ({plant['friction']['vs'][j]:.2g} rad/s) lies inside the "
              f"{plant['friction']['qd0'][j]:.2g} rad/s linear zone, so its fs and vs never show in the torque and "
              "cannot be identified (its Coulomb level can)")
    print(f"report: {report}")
    return 0
