"""The whole loop on a simulated Panda, in a few minutes (the library behind `robodyn demo`).

1. a daemon starts with a simulated Panda (MuJoCo plant, sensor noise, Ni et al. 2024 Stribeck friction);
2. an excitation trajectory is designed (5-harmonic Fourier series, SLSQP on cond(W_base)), and a
   second one for the held-out run;
3. the friction experiment (constant-velocity sweeps, one run per joint) is run by the daemon and
   recorded, and Stribeck friction is fitted per joint;
4. the excitation and the held-out trajectory are run and recorded;
5. the dynamics are identified by the daemon's worker with that friction subtracted (Ni et al. 2024
   eq. 9);
6. the model is validated on the held-out run against the raw measured torque, and the estimate
   compared with the simulator's parameters;
7. the summary (the command line prints it as a table), the held-out plot and an HTML report.

Each step starts with a ``[k/7]`` line and says what it is doing; a step that can take longer than
a few seconds also says how far it got every :data:`REPORT_S` (:func:`_every`: a run's stage, the
job's, the samples of a pass of the regressor).

A number the experiment cannot determine is reported as missing with its reason, never as a
value: the friction errors carry ``None`` and a reason where a Stribeck parameter leaves no trace
in the measured torque (:func:`friction_errors`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from robodyn.identification.friction import EXPERIMENT_HALF_WIDTH, EXPERIMENT_SPEEDS

READY = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])
DEMO_SPEEDS = EXPERIMENT_SPEEDS  # rad/s, dense around the Stribeck velocities (`robodyn friction design`'s)
SWEEP_HALF_WIDTH = EXPERIMENT_HALF_WIDTH  # rad around the ready pose
WELL_EXCITED_SHARE = 0.10  # a base parameter carrying >= 10 % of some joint's RMS torque
# a fitted friction parameter whose local standard deviation exceeds half its value is not
# determined by the friction experiment; its error is not a number worth printing
DETERMINED_RELATIVE_STD = 0.5
STRIBECK = ("fc", "fs", "vs")
REPORT_S = 10.0  # a step that runs longer says how far it got this often
# samples per pass of the regressor in steps 6 and 7: a pass is a small part of REPORT_S, so a
# step over a long recording says how far it got on time
CHUNK_SAMPLES = 5000


def _run(client, traj, label: str, say, report_s: float = REPORT_S) -> dict:
    from robodyn.daemon.client import run_stage

    reply = client.submit_run("panda", traj.to_dict(robot="panda"), label=label)
    report = _every(report_s, say)  # a run takes minutes on a busy host: say how far it got

    def progress(st: dict) -> None:
        stage, fraction = run_stage(st)
        report(lambda waited: f"  {label}: {stage}, {100 * fraction:.0f} % after {waited:.0f} s")

    st = client.wait_run(reply["run_id"], progress, timeout=max(600.0, 20 * traj.duration))
    if st["state"] != "completed":
        raise RuntimeError(f"run {reply['run_id']} ({label}) ended {st['state']}: {st.get('reason')}")
    say(f"  {label}: {traj.duration:.1f} s of motion recorded as {reply['run_id']}")
    return reply


def _every(report_s: float, say, clock=time.monotonic):
    """``report(text_of_waited_s)``: says the text at most once per ``report_s`` of ``clock``, the
    first time ``report_s`` after this call (the step's own header line covers the start)."""
    started = clock()
    next_at = [started + report_s]

    def report(text) -> None:
        now = clock()
        if now >= next_at[0]:
            next_at[0] = now + report_s
            say(text(now - started))

    return report


def _in_chunks(count: int, work, report, what: str, chunk: int = CHUNK_SAMPLES) -> None:
    """``work(start, stop)`` over ``count`` samples, ``chunk`` at a time; after each chunk ``report``
    (an :func:`_every`) hears how far it got, so a long pass says so every REPORT_S."""
    for start in range(0, count, chunk):
        stop = min(count, start + chunk)
        work(start, stop)
        report(lambda waited, done=stop: f"  {what}: {done} of {count} samples after {waited:.0f} s")


def torque_shares(model, base, est: np.ndarray, d, report, what: str = "torque shares",
                  chunk: int = CHUNK_SAMPLES) -> np.ndarray:
    """Per base parameter: the largest, over the joints, of the RMS torque it carries on the
    processed data ``d`` (its column of W_base times its estimate) relative to that joint's RMS
    torque, friction included. Summed chunk by chunk (:func:`_in_chunks`), never all N·n rows of
    the standard columns at once."""
    from robodyn.identification.pipeline import base_rows

    squares = np.zeros((model.dof, base.count))

    def add(start: int, stop: int) -> None:
        rows = base_rows(model, d.select(slice(start, stop)), base.spec).reshape(stop - start, model.dof, -1)
        squares[:] += np.sum((rows[:, :, base.independent] * est[: base.count]) ** 2, axis=0)

    _in_chunks(d.count, add, report, what, chunk)
    tau = d.tau if d.tau_friction is None else d.tau + d.tau_friction
    torque_rms = np.sqrt(np.mean(tau ** 2, axis=0))
    return np.max(np.sqrt(squares / d.count) / torque_rms[:, None], axis=0)


def predicted_torque(model, base, est: np.ndarray, d, report, what: str = "prediction",
                     chunk: int = CHUNK_SAMPLES) -> np.ndarray:
    """The model's torque (N, n) on the processed data ``d``, friction included, chunk by chunk
    (:func:`_in_chunks`)."""
    from robodyn.identification.pipeline import predict_processed

    out = np.empty((d.count, model.dof))

    def predict(start: int, stop: int) -> None:
        out[start:stop] = predict_processed(model, base, est, d.select(slice(start, stop)))

    _in_chunks(d.count, predict, report, what, chunk)
    return out if d.tau_friction is None else out + d.tau_friction


def _execute_phase(path):
    from robodyn.recording import load_recording

    rec = load_recording(path)
    mask = rec.phase_mask("execute")
    t = rec.robot_time[mask]
    return t - t[0], rec.signal("q")[mask], rec.signal("qd")[mask], rec.signal("tau")[mask]


def design(model, seed: int, budget: float, periods: int, say=None):
    from robodyn.identification.excitation.designer import DesignRequest, design_excitation
    from robodyn.trajectory import FourierTrajectory

    # the designer's defaults otherwise: its frequency (a 10 s period) and the columns identify fits
    req = DesignRequest(family="fourier", harmonics=5, optimizer="slsqp", starts=1, seed=seed, time_limit=budget)
    result = design_excitation(model, req, progress=None if say is None else (lambda text: say(f"  {text}")))
    one = result.trajectory
    return FourierTrajectory(one.wf, one.q0, one.a, one.b, periods=periods), result


def design_time_line(result, budget: float) -> str:
    """Where a design's time went, against its budget: the search is bounded by it, preparing the
    criterion (numba kernels) and proving the result at the validator's rate are not."""
    search = float(result.optimizer["elapsed"])
    prepared = float(result.optimizer.get("preparation_s", 0.0))
    rest = max(0.0, result.elapsed - search - prepared)
    return (f"designed in {result.elapsed:.1f} s: the search {search:.1f} s of its {budget:.0f} s budget "
            f"({result.optimizer['message']}), preparing the criterion {prepared:.1f} s, the limit check {rest:.1f} s")


def run_demo(out, design_time: float = 40.0, periods: int = 3, say=None, job_progress=None) -> dict:
    """Run the demo into the folder ``out``; returns the summary (also written to summary.json).
    ``say(text)`` reports each step; ``job_progress(stage, fraction)`` the identification job."""
    from robodyn.identification.base_params import BaseParameters
    from robodyn.identification.friction import experiment_trajectory, fit_experiment, points_from_run
    from robodyn.identification.pipeline import validate
    from robodyn.identification.regressor import standard_parameter_vector
    from robodyn.identification.report import torque_plot_png, write_html_report
    from robodyn.identification.signals import SampledData
    from robodyn.identification.processing import ProcessingConfig, process
    from robodyn.robot.loader import load_model
    from robodyn.tools.testing.local_daemon import LocalDaemon

    say = say or (lambda text: None)
    job_progress = job_progress or (lambda stage, fraction: None)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    model = load_model("panda")
    say(f"robodyn demo: simulated Panda, output in {out}")

    say("[1/7] starting the daemon (MuJoCo plant, torque noise, encoder quantization, Stribeck friction)")
    with LocalDaemon(out / "daemon", "panda", {"speed": 0.0, "seed": 1}, say=say) as daemon:
        plant = daemon.client.describe()["driver"]["info"]  # the simulator's ground truth
        noise = float(plant["torque_noise_std"])
        say(f"  daemon ready at {daemon.control}")

        say(f"[2/7] designing the excitation (5-harmonic Fourier, SLSQP, budget {design_time:.0f} s)")
        excitation, result = design(model, 0, design_time, periods, say)
        say(f"  raw cond(W_base) {result.metrics['cond_raw']:.1f} (column-scaled {result.metrics['cond_scaled']:.1f}), "
            f"within limits: {result.limit_report['ok']}; {design_time_line(result, design_time)}")
        say(f"  designing the held-out trajectory (another start, budget {design_time / 2:.0f} s)")
        held_out, held_result = design(model, 7, design_time / 2, 1, say)
        (out / "excitation.json").write_text(json.dumps(excitation.to_dict(robot="panda"), indent=1))

        say(f"[3/7] friction experiment: {len(DEMO_SPEEDS)} speeds x 7 joints, one run per joint")
        all_points = []
        friction_points = []
        for joint in range(model.dof):
            low, high = READY[joint] - SWEEP_HALF_WIDTH, READY[joint] + SWEEP_HALF_WIDTH
            traj, _ = experiment_trajectory(model, READY, joint, low, high, DEMO_SPEEDS)
            reply = _run(daemon.client, traj, f"friction joint {joint + 1}", say)
            t, q, qd, tau = _execute_phase(reply["recording"])
            points = points_from_run(traj, t, q, qd, tau)
            friction_points.append([(p.measured_speed, p.torque) for p in points])
            all_points += points
        # the fit of `robodyn friction fit`
        friction, fits = fit_experiment(all_points, "stribeck", model.dof)
        (out / "friction.json").write_text(json.dumps({"model": friction.to_dict(), "points": friction_points,
                                                       "fits": [f.__dict__ for f in fits]}, indent=1, default=float))
        say("[4/7] running the excitation and the held-out trajectory")
        ident_run = _run(daemon.client, excitation, "excitation", say)
        t_i, q_i, qd_i, tau_i = _execute_phase(ident_run["recording"])
        ident_data = SampledData(t_i, q_i, tau_i, qd_i)
        held_run = _run(daemon.client, held_out, "held-out", say)

        say("[5/7] identifying on the daemon's worker (WLS, Ni et al. 2024 Stribeck friction subtracted)")
        processing = {"q_cutoff_hz": 15.0, "tau_cutoff_hz": 15.0, "velocity": "differentiate", "trim_s": 0.5}
        job = daemon.client.identify([ident_run["run_id"]], {"method": "wls", "friction": "stribeck",
                                                             "rotor_inertia": True,
                                                             "friction_model": friction.to_dict(),
                                                             "processing": processing})["job"]
        report = _every(REPORT_S, say)

        def on_job(s: dict) -> None:
            stage, fraction = s.get("stage") or s["state"], s.get("progress") or 0.0
            job_progress(f"job {job}: {stage}", fraction)
            report(lambda waited: f"  job {job}: {stage}, {100 * fraction:.0f} % after {waited:.0f} s")

        st = daemon.client.wait_job(job, on_job, timeout=900)
        if st["state"] != "completed":
            raise RuntimeError(f"identification job failed: {st.get('error')}")
        doc = daemon.client.pull(job)
        (out / "result.json").write_text(json.dumps(doc, indent=1))

        say("[6/7] validating on the held-out run against the raw measured torque")
        t, q, qd, tau = _execute_phase(held_run["recording"])
        raw = SampledData(t, q, tau, qd)
        against_raw = ProcessingConfig(**{**doc["config"]["processing"], "tau_cutoff_hz": None, "trim_s": 0.5})
        say(f"  held-out run: processing and predicting {raw.count} samples")
        holdout = validate(model, doc, [raw], processing=against_raw)
        ident_metrics = doc["metrics"]["identification"]
        say("  stopping the daemon")

    base = BaseParameters.from_dict(doc["base"])
    true_model = model.with_inertial(np.asarray(plant["true_inertial"]))
    true_model = true_model.__class__(**{**true_model.__dict__, "rotor_inertia": np.asarray(plant["rotor_inertia"])})
    truth = base.base_values(standard_parameter_vector(true_model, base.spec))
    est = np.asarray(doc["estimate"]["values"])
    # "well excited": the parameter carries at least 10 % of some joint's RMS torque on the excitation
    ident = process(ident_data, ProcessingConfig(**doc["config"]["processing"]), friction).data
    say(f"  the estimate against the simulator's parameters: torque shares on the excitation ({ident.count} samples)")
    share = torque_shares(model, base, est, ident, _every(REPORT_S, say), "torque shares")
    well = share >= WELL_EXCITED_SHARE
    # a parameter whose simulated value is zero has no relative error (the absolute one is in result.json)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_err = np.where(truth != 0.0, np.abs(est - truth) / np.abs(truth), np.nan)
    scored = well & np.isfinite(rel_err)
    friction_report = friction_errors(friction.params, plant["friction"], friction_points)

    say("[7/7] report")
    processed = process(raw, against_raw, friction).data
    say(f"  predicting the held-out torque for the plot ({processed.count} samples)")
    pred = predicted_torque(model, base, est, processed, _every(REPORT_S, say), "held-out prediction")
    say("  drawing the held-out plot")
    png = torque_plot_png(processed.t, processed.tau + processed.tau_friction, pred, model.joint_names,
                          "held-out: predicted vs raw measured")
    say("  writing the HTML report")
    report = write_html_report(out / "report.html", doc, [
        {"title": "identification run", "metrics": ident_metrics},
        {"title": "held-out run (raw measured torque)", "metrics": holdout, "png": png}])

    summary = {
        "output": str(out), "report": str(report),
        "excitation": {"cond_raw": result.metrics["cond_raw"], "cond_scaled": result.metrics["cond_scaled"],
                       "design_s": result.elapsed},
        "friction": friction_report,
        "friction_relative_error": {k: [j[k]["relative_error"] for j in friction_report] for k in STRIBECK},
        "base_parameters": {
            "count": base.count, "well_excited_definition": f">= {WELL_EXCITED_SHARE:.0%} of some joint's RMS torque",
            "well_excited": [base.names[i] for i in np.flatnonzero(well)],
            "max_relative_error_well_excited": float(rel_err[scored].max()) if scored.any() else None,
            "relative_error": {base.names[i]: float(rel_err[i]) if np.isfinite(rel_err[i]) else None
                               for i in range(base.count)},
            "relative_error_missing": "null where the simulated value is zero (no relative scale)",
            "torque_share": {base.names[i]: float(share[i]) for i in range(base.count)}},
        "holdout": holdout, "torque_noise_std": noise,
        "holdout_rmse_over_noise": [r / noise for r in holdout["rmse"]],
    }
    summary["held_out_plot"] = str(out / "held_out.png")
    (out / "held_out.png").write_bytes(png)
    summary["well_excited_count"] = int(well.sum())
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _sensitivity_std(speeds: np.ndarray, torques: np.ndarray, params: dict, qd0: float) -> dict:
    """Local standard deviation of each fitted Stribeck parameter (fc, fs, vs) from the friction
    points: sigma^2 (J^T J)^-1 with J the curve's derivatives at the measured speeds and sigma the
    fit's residual. A parameter the measured speeds do not constrain (its column of J vanishes or
    repeats another) gets an infinite one."""
    from robodyn.robot.friction import stribeck

    v = np.abs(np.asarray(speeds, float))
    y = np.abs(np.asarray(torques, float))
    x = np.array([params[k] for k in STRIBECK], float)

    def curve(z):
        return stribeck(v, z[0], z[1], abs(z[2]), 0.0, qd0)

    J = np.empty((v.size, 3))
    for k in range(3):
        h = 1e-6 * max(abs(x[k]), 1e-6)
        up, down = x.copy(), x.copy()
        up[k] += h
        down[k] -= h
        J[:, k] = (curve(up) - curve(down)) / (2 * h)
    dof = max(v.size - 3, 1)
    sigma2 = float(np.sum((y - curve(x)) ** 2)) / dof
    scale = np.maximum(np.linalg.norm(J, axis=0), 1e-300)
    Js = J / scale
    sv = np.linalg.svd(Js, compute_uv=False)
    if sv[-1] < 1e-8 * sv[0]:  # a direction of (fc, fs, vs) the speeds do not see at all
        _, _, vt = np.linalg.svd(Js)
        free = np.abs(vt[-1]) > 0.1
        cov = np.linalg.pinv(Js.T @ Js) / np.outer(scale, scale) * sigma2
        std = np.sqrt(np.maximum(np.diag(cov), 0.0))
        std[free] = np.inf
    else:
        cov = np.linalg.inv(Js.T @ Js) / np.outer(scale, scale) * sigma2
        std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    return dict(zip(STRIBECK, std.tolist()))


def friction_errors(fitted: dict, truth: dict, points: list) -> list[dict]:
    """Per joint: the relative error of each fitted Stribeck parameter against the simulator's
    value, or None with the reason when the number does not exist:

    - the simulated Stribeck velocity lies inside the linear zone (vs < qd0 / 3), so fs and vs never
      show in the torque at any speed;
    - the fitted parameter is not determined by the measured speeds (local relative standard
      deviation above DETERMINED_RELATIVE_STD: e.g. fc and fs trade off when the fit puts the
      whole level in one of them);
    - the true value is zero (no relative scale).

    ``level_error`` is always defined: the RMS difference between the fitted and the true friction
    curve over the measured speeds, relative to the true curve's RMS there."""
    from robodyn.robot.friction import stribeck

    qd0_all = np.asarray(truth["qd0"], float) * np.ones(len(points))
    fv_all = np.asarray(truth.get("fv", 0.0), float) * np.ones(len(points))  # a scalar or one per joint
    out = []
    for j, pts in enumerate(points):
        speeds = np.array([p[0] for p in pts], float)
        torques = np.array([p[1] for p in pts], float)
        qd0 = float(qd0_all[j])
        est = {k: float(np.asarray(fitted[k])[j]) for k in STRIBECK}
        true = {k: float(np.asarray(truth[k])[j]) for k in STRIBECK}
        fv_true = float(fv_all[j])
        std = _sensitivity_std(speeds, torques, est, qd0)
        hidden = abs(true["vs"]) * 3 < qd0
        row = {}
        for k in STRIBECK:
            reason = None
            if hidden and k in ("fs", "vs"):
                reason = (f"the simulated Stribeck velocity ({abs(true['vs']):.2g} rad/s) lies inside the "
                          f"{qd0:.2g} rad/s linear zone: fs and vs never show in the torque")
            elif not np.isfinite(std[k]) or std[k] > DETERMINED_RELATIVE_STD * max(abs(est[k]), 1e-12):
                rel = "unbounded" if not np.isfinite(std[k]) else f"{std[k] / max(abs(est[k]), 1e-12):.0%}"
                reason = (f"the measured speeds do not determine the fitted {k} (relative standard deviation "
                          f"{rel})")
            elif true[k] == 0.0:
                reason = f"the simulated {k} is zero: no relative scale"
            error = None if reason else abs(est[k] - true[k]) / abs(true[k])
            row[k] = {"relative_error": error, "reason": reason, "fitted": est[k], "simulated": true[k],
                      "std": std[k] if np.isfinite(std[k]) else None}
        v = np.abs(speeds)
        fitted_curve = stribeck(v, est["fc"], est["fs"], abs(est["vs"]), 0.0, qd0)
        true_curve = stribeck(v, true["fc"], true["fs"], abs(true["vs"]), fv_true, qd0)
        rms_true = float(np.sqrt(np.mean(true_curve ** 2)))
        row["level_error"] = (float(np.sqrt(np.mean((fitted_curve - true_curve) ** 2))) / rms_true
                              if rms_true > 0 else None)
        out.append(row)
    return out
