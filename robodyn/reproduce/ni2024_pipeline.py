"""Ni et al. 2024's identification pipeline, step by step, on a plant unlike the model: part
``pipeline`` of `robodyn reproduce wso`.

The plant is the realistic Franka-like simulator (identification.realistic_logs: the MuJoCo Panda
with inertial parameters perturbed 15 %, Stribeck friction with viscous part, position ripple and
load dependence, one elastic joint; jittered 1 kHz samples with gaps, noisy torque with drifting
offsets). The steps follow the paper's section 2 and 4:

1. friction experiment (section 2.1): each joint at constant speed forward and backward over one
   angle window, tau_f = (tau(+v) - tau(-v)) / 2, Stribeck model (eq. 2, no viscous term) fitted
   by Nelder-Mead (eq. 6) -- on 6 of the paper's 37 speeds (PIPELINE_SPEEDS; part ``table2``,
   reproduce_table2, runs the 37 of its section 4.1 alone); each joint's fit is judged determined or
   not (stribeck_determinacy);
2. excitation (eqs. 7-8): 5-harmonic Fourier series at wf = 0.1 rad/s, zero velocity and
   acceleration at both ends, cond of the 48-column regressor minimised under the joint limits
   (SLSQP under a time limit, where the paper ran a GA 5 times and fmincon);
3. data (section 4): resampled to 100 Hz, acceleration by central differences, low-pass on q and
   qd, RLOESS (span 0.02) on qdd and tau, the fitted friction subtracted (eq. 9);
4. OLS, the box OLS +- 5|p|, and WSO / PSO / GA at one budget of evaluations over 10 seeds
   (robodyn.reproduce.equal_budget), held out on a random excitation of the same arm.
"""

from __future__ import annotations

import os

import numpy as np

from robodyn.identification.friction import FRICTION_SWEEP_SPEEDS, STRIBECK_STARTS

# the pipeline's friction step: 6 of the paper's 37 speeds (its slow ones take minutes of simulated motion
# each); part table2 runs all 37 (FRICTION_SWEEP_SPEEDS)
PIPELINE_SPEEDS = (0.02, 0.05, 0.1, 0.2, 0.4, 0.8)
QUICK_SPEEDS = (0.05, 0.1, 0.2, 0.4)  # rad/s, --quick only (a smoke run, not the paper's sweep)
# processes simulating joints side by side (the result does not depend on it: each joint's run has its own seeds)
TABLE2_WORKERS = min(7, os.cpu_count() or 1)
TABLE2_HALF_WIDTH = 0.02  # rad: the paper states no window; +- 0.02 keeps the 37 speeds at 28 min of motion
HALF_WIDTH = 0.06  # rad, the friction window around the ready pose
WF = 0.1  # rad/s, the paper's fundamental frequency (period 62.8 s)
DESIGN_SECONDS = 60.0  # SLSQP time limit of the excitation design
PLANT_SEED = 7  # the same arm as the comparison's Franka-like plant
RATE_HZ = 100.0  # the paper's sampling rate
PROCESSING = {"resample": "always", "rate_hz": RATE_HZ, "velocity": "measured", "cutoff_hz": "auto",
              "tau_cutoff_hz": None, "rloess_span": 0.02, "trim_s": 0.5}
COMMAND = "robodyn reproduce wso --part pipeline"


def _joint_points(robot: str, plant: dict, speeds, half_width: float, seed: int, joint: int):
    """One joint's constant-velocity experiment through the plant and the Franka-like sensor: its
    friction points (each joint's run is independent of the others: same plant seed, own sensor seed)."""
    from robodyn.simulation.plant import default_initial_q
    from robodyn.identification.friction import experiment_trajectory, points_from_run, window_within_limits
    from robodyn.identification.realistic_logs import franka_like, run_plant
    from robodyn.robot.loader import load_model

    model = load_model(robot)
    q_hold = default_initial_q(model)
    # around the ready pose, unless the fastest speed's run-up would pass a limit there (joint 2 at 1.8 rad/s)
    low, high = window_within_limits(model, q_hold, joint, half_width, speeds)
    traj, _ = experiment_trajectory(model, q_hold, joint, low, high, speeds)
    signals = run_plant(model.name, traj, 1000.0, PLANT_SEED, plant)
    data, _, _ = franka_like(signals, seed + 100 + joint)
    return points_from_run(traj, data.t, data.q, data.qd, data.tau)


def friction_step(model, plant: dict, speeds, half_width: float, seed: int = 0, workers: int = 1):
    """The constant-velocity experiment of every joint (the paper moves one joint after another; the
    runs are independent, so ``workers`` processes may simulate them side by side with the same
    result); returns the fitted friction model, the per-joint fits, the number of points and each
    joint's determinacy."""
    import functools

    from robodyn.identification.friction import fit_experiment

    run = functools.partial(_joint_points, model.name, plant, tuple(speeds), half_width, seed)
    if workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(min(workers, model.dof), mp_context=multiprocessing.get_context("fork")) as pool:
            per_joint = list(pool.map(run, range(model.dof)))
    else:
        per_joint = [run(joint) for joint in range(model.dof)]
    points = [p for joint_points in per_joint for p in joint_points]
    friction, fits = fit_experiment(points, "stribeck", model.dof)
    determinacy = [stribeck_determinacy([p for p in points if p.joint == f.joint], f) for f in fits]
    return friction, fits, len(points), determinacy


RELATIVE_STD_LIMIT = 0.5  # a parameter whose standard error exceeds half its value is not determined


def stribeck_determinacy(points, fit) -> dict:
    """Whether the data determine one joint's eq. 2 fit (fc, fs, vs), and why not: every parameter
    positive, vs inside the swept speeds, and each standard error (Gauss-Newton, from the fit's
    residual and the model's Jacobian at the fit) below RELATIVE_STD_LIMIT of its value."""
    from robodyn.robot.friction import stribeck

    v = np.abs(np.array([p.measured_speed for p in points], float))
    y = np.array([p.torque for p in points], float) * np.sign([p.measured_speed for p in points])
    names = ("fc", "fs", "vs")
    x = np.array([fit.params[k] for k in names], float)
    qd0 = fit.extra.get("qd0")

    def model(xx):
        return np.asarray(stribeck(v, xx[0], xx[1], xx[2], 0.0, qd0), float)

    J = np.empty((v.size, 3))
    for k in range(3):
        h = 1e-6 * max(abs(x[k]), 1e-6)
        up, dn = x.copy(), x.copy()
        up[k] += h
        dn[k] -= h
        J[:, k] = (model(up) - model(dn)) / (2 * h)
    dof = max(v.size - 3, 1)  # with 3 points or fewer the fit is exact and says nothing (below)
    s2 = float(np.sum((y - model(x)) ** 2)) / dof
    sv = np.linalg.svd(J, compute_uv=False)
    if sv[-1] <= sv[0] * 1e-12:
        std = np.full(3, np.inf)
    else:
        std = np.sqrt(np.clip(np.diag(s2 * np.linalg.pinv(J.T @ J)), 0.0, None))
    rel = np.where(x != 0, std / np.abs(np.where(x != 0, x, 1.0)), np.inf)
    reasons = []
    if v.size <= 3:
        reasons.append(f"{v.size} points for 3 parameters: no residual to judge the fit by")
    if np.any(x[:2] <= 0):
        reasons.append("a negative friction level (" + ", ".join(f"{k} {val:.3g}" for k, val in zip(names[:2], x[:2])
                                                                  if val <= 0) + ")")
    lo, hi = float(v.min()), float(v.max())
    if x[2] > hi:
        reasons.append(f"vs {x[2]:.3g} rad/s beyond the fastest speed {hi:.3g}: the Stribeck term bends the curve "
                       "upwards in place of the viscous rise eq. 2 lacks")
    elif x[2] < lo:
        reasons.append(f"vs {x[2]:.3g} rad/s below the slowest speed {lo:.3g}")
    loose = [f"{k} +- {100 * r:.0f} %" for k, r in zip(names, rel) if not r <= RELATIVE_STD_LIMIT]
    if loose:
        reasons.append("standard error over half the value: " + ", ".join(loose))
    return {"joint": int(fit.joint), "determined": not reasons, "reasons": reasons,
            "params": dict(zip(names, x.tolist())),
            "std": dict(zip(names, std.tolist())), "relative_std": dict(zip(names, rel.tolist())),
            "speeds": [lo, hi], "points": int(v.size)}


def design_step(model, wf: float, seconds: float, seed: int = 0):
    """The paper's excitation: Fourier, 5 harmonics, wf, rest at both ends, min cond of the rigid-body
    + rotor-inertia regressor (friction is subtracted, so it has no columns)."""
    from robodyn.identification.excitation.designer import (
        DesignRequest,
        design_excitation,
    )
    from robodyn.identification.regressor import ColumnSpec

    req = DesignRequest(family="fourier", harmonics=5, wf=wf, objective="cond", optimizer="slsqp", seed=seed,
                        time_limit=seconds, columns=ColumnSpec(rotor_inertia=True, friction=(),
                                                               motor_couplings=tuple(model.motor_couplings)))
    return design_excitation(model, req)


def pipeline_data(quick: bool = False):
    """Every step up to the data the optimisers see: (ComparisonData, what each step measured)."""
    from robodyn.identification.comparison import ComparisonData
    from robodyn.identification.pipeline import IdentificationConfig
    from robodyn.identification.processing import ProcessingConfig
    from robodyn.identification.realistic_logs import (
        default_plant,
        franka_like,
        realistic_log,
        run_plant,
    )
    from robodyn.robot.loader import load_model

    model = load_model("panda")
    plant = default_plant("panda")
    speeds = QUICK_SPEEDS if quick else PIPELINE_SPEEDS
    friction, fits, n_points, determinacy = friction_step(model, plant, speeds, HALF_WIDTH)
    wf = 0.5 if quick else WF
    design = design_step(model, wf, 10.0 if quick else DESIGN_SECONDS)
    signals = run_plant(model.name, design.trajectory, 1000.0, PLANT_SEED, plant)
    ident, _, _ = franka_like(signals, 0)
    held = realistic_log("franka", 1, plant_seed=PLANT_SEED, duration=6.0 if quick else 20.0, robot="panda")
    config = IdentificationConfig(method="ols", friction="stribeck", friction_model=friction.to_dict(),
                                  rotor_inertia=True, processing=ProcessingConfig(**PROCESSING),
                                  motor_couplings=model.motor_couplings)
    description = ("MuJoCo Panda unlike the model (inertia perturbed 15 %, Stribeck friction with viscous part, "
                   "position ripple and load dependence, one elastic joint) through the Franka-like sensor")
    data = ComparisonData(model, config, [ident], [held.data], False,
                          [f"the designed excitation (wf = {wf}, one period, {design.trajectory.duration:.1f} s) "
                           "through the plant", "held out: a random 20 s excitation of the same arm"],
                          {"description": description, "inverse_crime": False})
    truth = {k: plant["friction"][k][0] for k in ("fc", "fs", "vs", "fv")}
    steps = {"friction": {"speeds": list(speeds), "half_width": HALF_WIDTH, "points": n_points,
                          "fitted": friction.to_dict(), "fits": [dict(f.__dict__) for f in fits],
                          "determinacy": determinacy, "repetitions": 1,
                          "plant_truth": {**truth, "ripple": plant["friction_ripple"],
                                          "load": plant["friction_load"]}},
             "excitation": {"wf": wf, "harmonics": 5, "period_s": design.trajectory.duration,
                            "cond_raw": design.metrics.get("cond_raw"),
                            "cond_scaled": design.metrics.get("cond_scaled"),
                            "design_seconds": design.elapsed, "limits_ok": design.limit_report["ok"]},
             "processing": PROCESSING, "noise_floor_heldout": float(np.sum(held.noise_floor)),
             "samples": {"identification_raw": int(ident.t.size), "held_out_raw": int(held.data.t.size)}}
    return data, steps


def equal_budget_rows(study: dict, budget: int, command: str, origin: str, paper_sums: dict, paper_origin: str,
                      ols_note: str) -> list:
    """The rows of one equal-budget study: WSO / PSO / GA mean held-out sums with their spread over the
    seeds, then OLS's."""
    from .report import Row

    rows = []
    for method in ("wso", "pso", "ga"):
        m = study["methods"][method]
        h, j, nfev = m["heldout_sum"], m["fitness"], m["nfev"]
        rows.append(Row(f"{method.upper()} held-out sum (N.m)", paper_sums[method], h["mean"], command, origin,
                        f"mean over {h['n']} optimiser seeds, std {h['std']:.4f} (min {h['min']:.4f}, max "
                        f"{h['max']:.4f}); J {j['mean']:.6g} +- {j['std']:.2g} (OLS {study['ols_fitness']:.6g}); "
                        f"evaluations {nfev['min']:.0f}-{nfev['max']:.0f} of {budget}", paper_origin))
    rows.append(Row("OLS held-out sum (N.m)", None, study["ols_heldout_sum"], command, origin, ols_note))
    return rows


def reproduce_pipeline(rep, quick: bool, *, budget: int, seeds, paper_sums: dict, paper_origin: str) -> None:
    """Part "pipeline" of `robodyn reproduce wso`: every step on the Franka-like plant, the friction fits
    beside the plant's own friction and Table 4 at equal budgets (10 optimiser seeds)."""
    from .equal_budget import equal_budget_on_data
    from .report import Finding, Row, Table

    data, steps = pipeline_data(quick)
    study = equal_budget_on_data(data, ("wso", "pso", "ga"), budget=budget, seeds=seeds)
    command = COMMAND + (" --quick" if quick else "")
    origin = "plant (" + data.plant["description"] + "; Ni et al.'s pipeline run on it, see the setup)"
    fr, truth = steps["friction"], steps["friction"]["plant_truth"]
    rows = []
    determinacy = {d["joint"]: d for d in fr["determinacy"]}
    for fit in fr["fits"]:
        p, d = fit["params"], determinacy[fit["joint"]]
        verdict = "determined" if d["determined"] else "NOT determined: " + "; ".join(d["reasons"])
        rows.append(Row(f"joint {fit['joint'] + 1} friction fc / fs / vs", None,
                        f"{p.get('fc', float('nan')):.3f} / {p.get('fs', float('nan')):.3f} / {p.get('vs', float('nan')):.3f}",
                        command, origin,
                        f"{verdict}; standard errors " + " / ".join(f"{d['std'][k]:.2g}" for k in ("fc", "fs", "vs"))
                        + f"; plant: fc {truth['fc']}, fs {truth['fs']}, vs {truth['vs']} plus viscous {truth['fv']} "
                        f"N.m s/rad (eq. 2 has none), ripple {truth['ripple']:.0%}, load term; fit RMSE "
                        f"{fit['rmse']:.4f} N.m over {fit['points']} points"))
    ex = steps["excitation"]
    rows.append(Row(f"excitation cond (raw), wf = {ex['wf']}", None, ex["cond_raw"], command, origin,
                    f"column-scaled {ex['cond_scaled']:.4g}; designed in {ex['design_seconds']:.0f} s; within limits: "
                    f"{ex['limits_ok']}"))
    rows += equal_budget_rows(study, budget, command, origin, paper_sums, paper_origin,
                              f"noise floor of the held-out log {steps['noise_floor_heldout']:.4f}")
    rep.tables.append(Table(
        "Ni et al.'s pipeline on a plant unlike the model: friction experiment ("
        + (f"the paper's {len(fr['speeds'])} speeds" if len(fr["speeds"]) == len(FRICTION_SWEEP_SPEEDS)
           else "speeds " + ", ".join(f"{v:g}" for v in fr["speeds"]) + f" of the paper's {len(FRICTION_SWEEP_SPEEDS)}")
        + f", {min(fr['speeds']):g}-{max(fr['speeds']):g} rad/s, once each, over +- {fr['half_width']} rad), "
        f"the wf = {ex['wf']} condition-optimised excitation, 100 Hz, RLOESS 0.02, friction subtracted, then "
        f"WSO / PSO / GA at {budget} evaluations each" + (" [--quick: smoke settings]" if quick else ""),
        rows, own_model_allowed=False))
    order = study["ranking_heldout"]
    rep.findings.append(Finding(
        "Table 4's ranking WSO < PSO < GA, through the paper's whole pipeline", "measured on a plant unlike the model",
        "Held-out RMSE sum, mean +- std over the seeds: " + " < ".join(
            f"{m.upper()} {study['methods'][m]['heldout_sum']['mean']:.4f} +- "
            f"{study['methods'][m]['heldout_sum']['std']:.4f}" for m in order)
        + f"; OLS {study['ols_heldout_sum']:.4f}; noise floor {steps['noise_floor_heldout']:.4f}. "
        + ("The paper's order holds." if order == ["wso", "pso", "ga"] else "The paper's order does not hold.")
        + " The paper's Table 2 (its real Franka's friction) is not comparable with this plant's friction; the "
        "fits are judged against the plant's own values in the table above", command,
        kind="reached" if order == ["wso", "pso", "ga"] else "not reached"))
    rep.setup += (" Part pipeline: the paper's steps on the Franka-like plant (friction experiment on "
                  f"{len(fr['speeds'])} of the {len(FRICTION_SWEEP_SPEEDS)} speeds, eq. 2 fitted by Nelder-Mead from "
                  f"{STRIBECK_STARTS} starting vs, the best kept, the wf = {ex['wf']} excitation "
                  f"designed by SLSQP in {DESIGN_SECONDS:.0f} s instead of GA x 5 + fmincon, 100 Hz, low-pass q "
                  "and qd, RLOESS 0.02 on qdd and tau, fitted friction subtracted), held out on a random 20 s excitation of the same arm.")
    rep.details["pipeline"] = {"command": command, "steps": steps, "equal_budget": study}


# Ni et al. 2024 Table 2 as printed (its real Franka; the paper's unit column reads N.m/deg.s^-1 for all three)
NI_TABLE_2 = (("0.2153", "0.3834", "-0.0729"), ("0.1691", "0.2567", "0.0603"), ("0.2195", "0.3760", "0.0474"),
              ("0.1056", "0.0790", "0.0892"), ("0.6047", "0.3062", "6.0463 x 10^-4"), ("0.2996", "0.3823", "-0.0510"),
              ("0.1883", "0.3854", "0.0938"))
TABLE2_COMMAND = "robodyn reproduce wso --part table2"


def _windows(model, speeds, half_width: float):
    """Each joint's sweep window (the one _joint_points runs) and the joints whose window is not
    centred at the ready pose, with its centre."""
    from robodyn.simulation.plant import default_initial_q
    from robodyn.identification.friction import window_within_limits

    q_hold = default_initial_q(model)
    windows = [window_within_limits(model, q_hold, j, half_width, speeds) for j in range(model.dof)]
    moved = [(j, (lo + hi) / 2) for j, (lo, hi) in enumerate(windows) if abs((lo + hi) / 2 - q_hold[j]) > 1e-9]
    return [list(w) for w in windows], moved


def reproduce_table2(rep, quick: bool, *, paper_origin: str) -> None:
    """Part "table2" of `robodyn reproduce wso`: the paper's friction experiment (section 4.1, all 37
    speeds as printed, once each) on the Franka-like plant, eq. 2 fitted by Nelder-Mead per joint, and
    whether the sweep determines each joint's fc, fs, vs."""
    from robodyn.identification.realistic_logs import FRANKA_SENSOR, default_plant
    from robodyn.robot.friction import DEFAULT_LINEAR_ZONE
    from robodyn.robot.loader import load_model

    from .report import Finding, Row, Table

    model = load_model("panda")
    plant = default_plant("panda")
    speeds = QUICK_SPEEDS if quick else FRICTION_SWEEP_SPEEDS
    friction, fits, n_points, determinacy = friction_step(model, plant, speeds, TABLE2_HALF_WIDTH,
                                                          workers=TABLE2_WORKERS)
    command = TABLE2_COMMAND + (" --quick" if quick else "")
    windows, moved = _windows(model, speeds, TABLE2_HALF_WIDTH)
    truth = {k: plant["friction"][k][0] for k in ("fc", "fs", "vs", "fv")}
    origin = ("plant (MuJoCo Panda unlike the model: Stribeck friction fc {fc}, fs {fs}, vs {vs} plus viscous {fv} "
              "N.m s/rad, level rippling {r:.0%} with position and rising with load, through the Franka-like sensor)"
              ).format(**truth, r=plant["friction_ripple"])
    rows = []
    for fit, d in zip(fits, determinacy):
        p = fit.params
        rows.append(Row(f"joint {fit.joint + 1} fc / fs / vs", " / ".join(NI_TABLE_2[fit.joint]),
                        f"{p['fc']:.4g} / {p['fs']:.4g} / {p['vs']:.4g}", command, origin,
                        ("determined" if d["determined"] else "NOT determined: " + "; ".join(d["reasons"]))
                        + "; standard errors " + " / ".join(f"{d['std'][k]:.2g}" for k in ("fc", "fs", "vs"))
                        + f"; fit RMSE {fit.rmse:.4f} N.m over {fit.points} speeds", paper_origin))
    rep.tables.append(Table(
        f"Table 2: Stribeck friction per joint (eq. 2, Nelder-Mead, eq. 6) from the friction experiment of section "
        f"4.1 on {len(speeds)} speeds ({min(speeds):g}-{max(speeds):g} rad/s), each joint forward and backward over "
        f"+- {TABLE2_HALF_WIDTH} rad; the paper measured its real Franka, robodyn a plant whose friction it knows"
        + (" [--quick: smoke settings]" if quick else ""), rows, own_model_allowed=False))
    settled = [d["joint"] + 1 for d in determinacy if d["determined"]]
    loose = [d for d in determinacy if not d["determined"]]
    rep.findings.append(Finding(
        f"Table 2: eq. 2's fc, fs, vs of every joint from the {len(speeds)}-speed sweep",
        "measured on a plant unlike the model",
        f"The sweep ({min(speeds):g}-{max(speeds):g} rad/s, once each where the paper repeats it 6 times) determines "
        + (f"eq. 2 on joint(s) {', '.join(map(str, settled))} of {len(determinacy)}" if settled
           else f"eq. 2 on none of the {len(determinacy)} joints") + " (every "
        f"parameter positive, vs within the swept speeds, each standard error under {RELATIVE_STD_LIMIT:.0%} of its "
        "value)" + ("" if not loose else "; not on " + "; ".join(
            f"joint {d['joint'] + 1}: " + ", ".join(d["reasons"]) for d in loose))
        + f". The plant's friction has a viscous part ({truth['fv']} N.m s/rad) and a position ripple that eq. 2 "
        "(no viscous term: the paper neglects it for the Franka) cannot follow", command,
        kind="reached" if not loose else "not reached"))
    rep.findings.append(Finding(
        "Table 2's vs of joints 1 and 6 (-0.0729, -0.0510) and its fs below fc on joints 4 and 5",
        "about the paper's own numbers",
        "vs enters eq. 2 squared, so its sign carries nothing (robodyn reports |vs|); with fs < fc (joint 4: 0.0790 "
        "< 0.1056, joint 5: 0.3062 < 0.6047) the curve rises from fs to fc, no Stribeck dip; and the unit column "
        "gives N.m/deg.s^-1 for all three, where fc and fs are torques and vs a speed", "robodyn reproduce wso --part "
        "table2", kind="about the paper"))
    rep.setup += (f" Part table2: the paper's friction experiment (section 4.1) on the Franka-like plant, logged by "
                  f"its sensor at {FRANKA_SENSOR['rate_hz']:.0f} Hz (the paper samples at {RATE_HZ:.0f} Hz), its "
                  f"{len(speeds)} speeds once each over +- {TABLE2_HALF_WIDTH} rad per joint (the paper states no "
                  "window and repeats the sweep 6 times) around the ready pose"
                  + (", except joint(s) " + ", ".join(f"{j + 1} (around {c:.3f} rad)" for j, c in moved)
                     + f", where the {max(speeds):g} rad/s sweep's run-up would pass the joint's limit" if moved else "")
                  + ", tau_f = (tau(+v) - tau(-v)) / 2 at equal positions, eq. 2 "
                  f"fitted by Nelder-Mead from {STRIBECK_STARTS} starting vs spread over the swept speeds, the best "
                  f"kept (the paper states no start), with the linear zone qd0 = {DEFAULT_LINEAR_ZONE:g} rad/s (the "
                  f"paper gives none; {sum(v < DEFAULT_LINEAR_ZONE for v in speeds)} of the speeds lie below it).")
    rep.details["table2"] = {"command": command, "speeds": list(speeds), "half_width": TABLE2_HALF_WIDTH,
                             "windows": windows,
                             "points": n_points, "fitted": friction.to_dict(),
                             "fits": [dict(f.__dict__) for f in fits], "determinacy": determinacy,
                             "repetitions": 1, "plant_truth": {**truth, "ripple": plant["friction_ripple"],
                                                               "load": plant["friction_load"]}}
