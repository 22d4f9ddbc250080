"""Stepwise identification (Chen et al. 2021) from recordings of a flexible-joint arm: the
identification in the paper's order and the validation of the identified model on held-out
recordings against the measured joint torque and motor current."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robodyn.robot.model import RobotModel

from .base_params import BaseParameters
from .signals import SampledData
from .processing import ProcessingConfig, process, process_windows, resolve_processing
from .stepwise import column_groups, joint_major_regressor, rank_and_cond
from .stepwise_data import (RESULT_FORMAT, RESULT_VERSION, Channels, StepwiseConfig, as_sampled, finite_or_none,
                            fit_subsystem, friction_points, public_subsystem, static_poses, transmission)

# --------------------------------------------------------------------------- recorded flexible-joint data
#
# identify_recorded runs Chen et al. 2021's order (section 2) on recordings of a flexible-joint arm
# (identification.data.FlexibleLog: link and motor encoders, joint torque sensor, motor current):
#
#   1. friction    link side, from constant-speed sweeps found in the recording: at equal positions
#                  forward and backward, half the torque difference cancels gravity, inertia and the
#                  sensor zero (eq. 1's friction terms alone); fitted per joint, [v, 1] [Fv, Fc];
#   2. link        eq. 8 with step 1's friction subtracted: gravity and inertia base parameters
#                  (robodyn's one regressor), each joint's mean removed so the zero M0 does not enter;
#   3. offset      M0 = each joint's mean residual of step 2 (eqs. 6, 11);
#   4. motor       eq. 9 per motor: [qdd_m, qd_m, sgn qd_m] [B, Fv_m, Fc_m] = tau_m - R^-T (tau_s - M0),
#                  with tau_m = k_t i; an unknown k_t joins as a column (-i), the torque sensor fixing
#                  the scale;
#   5. stiffness   eq. 10 per joint: [R^-1 qm - q, 1] [K, c] = tau_s - M0 (c = -K x the encoders' zero
#                  difference).
#
# Motor and stiffness are never stacked (eqs. 13-16); the stacked matrix's condition is reported.
# Every signal goes through the project's one processing (processing.process: one zero-phase low-pass
# for positions and torques alike, gaps never interpolated) with the link and motor channels side by
# side, so the link and drive signals see the same filter.


def identify_recorded(model: RobotModel, recordings, config=None) -> dict:
    """Chen et al. 2021's stepwise identification on recordings of a flexible-joint arm.

    ``recordings``: paths (.csv, .npz, .mcap; the format is identification.data.FLEXIBLE_COLUMNS)
    or :class:`.data.FlexibleLog` objects. The first ``config.identify`` (default 1) identify; any others are held out and the
    identified model is validated on them against what the sensors measured (joint torque sensor,
    motor current). ``config``: a :class:`StepwiseConfig` or a dict of its fields.

    Returns a JSON-ready document: the order, each sub-system's rank, condition number (the paper's
    rule of thumb cond < 10 is reported, not enforced), parameters with standard deviations and
    residuals, and the held-out validation.
    """
    from robodyn.papers import cite

    from .data import load_flexible

    cfg = StepwiseConfig.from_any(config)
    n = model.dof
    if isinstance(recordings, (str, bytes)) or not hasattr(recordings, "__len__"):
        recordings = [recordings]
    if not recordings:
        raise ValueError("recordings: need at least one flexible-joint recording")
    logs = [load_flexible(r, model) for r in recordings]
    if cfg.identify > len(logs):
        raise ValueError(f"identify: {cfg.identify} identification recordings requested, {len(logs)} given")
    kinds = {log.drive for log in logs}
    if len(kinds) > 1:
        raise ValueError(f"recordings: the drive side differs between recordings ({sorted(map(str, kinds))}: "
                         "motor current, motor torque or none); use one kind for all")
    drive = kinds.pop()
    encoders = {log.qm is not None for log in logs}
    if len(encoders) > 1:
        raise ValueError("recordings: some have motor positions (qm or theta columns) and others not; use one kind "
                         "for all")
    has_motor = encoders.pop()
    if drive is not None and not has_motor:
        raise ValueError(f"{logs[0].source}: a drive signal ({drive}) but no motor positions: the motor sub-system "
                         "(eq. 9) needs the motor encoder (columns qm1.. or theta1..)")
    kt = None if cfg.torque_constant is None else np.asarray(cfg.torque_constant, float)
    if kt is not None and kt.size != n:
        raise ValueError(f"torque_constant: expected {n} values (N.m/A per motor), got {kt.size}")
    R = transmission(model, cfg)
    Rinv = np.linalg.inv(R)
    # the motors' rest velocity (their Coulomb term's linear zone) is the link's through the reduction;
    # the motor fit may ask for faster samples (motor_min_velocity), away from the Stribeck region
    motor_rest = cfg.rest_velocity * np.abs(np.diag(R))
    motor_fit_min = motor_rest if cfg.motor_min_velocity is None else np.full(n, float(cfg.motor_min_velocity))
    jm = model.joint_map
    ident, held = logs[:cfg.identify], logs[cfg.identify:]

    raw = [as_sampled(log, n) for log in ident]
    # an automatic cut-off is chosen on the link channels: the motor encoder, N times finer per link
    # radian, meets its noise far higher and would set a cut-off where the link acceleration is noise
    processing = resolve_processing(cfg.processing, [SampledData(log.t, log.q, log.tau, log.qd) for log in ident])
    channels, steps = [], None
    for log, r in zip(ident, raw):
        p = process(r, processing)
        steps = steps or p.steps
        channels.append((log.source, Channels.split(p.data, n, R, cfg.rest_velocity, motor_rest,
                                                        drive is not None)))
    cat = lambda name: np.concatenate([getattr(c, name) for _, c in channels])  # noqa: E731
    q, qd, qdd, tau, coul = cat("q"), cat("qd"), cat("qdd"), cat("tau"), cat("coulomb")
    names_j = list(model.joint_names)
    notes = []

    # ---- 1. friction (link side) from constant-speed sweeps
    points = [p for src, ch in channels for p in friction_points(ch, cfg, src)]
    friction = {"source": "constant-speed sweeps found in the recording(s): half differences of the joint torque "
                          "sensor at equal positions", "points": points, "per_joint": []}
    fv, fc = np.zeros(n), np.zeros(n)
    merged = []
    for j in range(n):
        pts = [p for p in points if p["joint"] == j]
        speeds = np.array([p["speed"] for p in pts])
        if len(pts) < 2 or np.ptp(speeds) < 0.2 * speeds.max():
            merged.append(j)
            friction["per_joint"].append({"joint": names_j[j], "identified": False,
                                          "reason": f"{len(pts)} sweep speed(s) found; at least 2 distinct speeds "
                                                    "are needed to separate viscous from Coulomb friction, so this "
                                                    "joint's friction is identified with the link (step 2)"})
            continue
        sub = fit_subsystem(np.column_stack([speeds, np.ones_like(speeds)]), np.array([p["torque"] for p in pts]),
                         [f"FV{j + 1}", f"FC{j + 1}"], ["N.m.s/rad", "N.m"])
        fv[j], fc[j] = sub["values"]
        friction["per_joint"].append({"joint": names_j[j], "identified": True, "columns": ["qd", "sgn(qd)"],
                                      **public_subsystem(sub)})
    if merged:
        notes.append(f"friction of joint(s) {[names_j[j] for j in merged]} identified with the link sub-system: "
                     "too few constant-speed sweeps (Chen et al. 2021 identify friction first, alone)")

    # ---- 2. link: gravity and inertia (eq. 8), friction subtracted, the sensor zero projected out
    from .base_params import base_parameters
    from .regressor import ColumnSpec

    base = base_parameters(model, ColumnSpec())
    groups = column_groups(model, base)
    qm_, qdm_, qddm_ = jm.to_model(q), jm.velocity_to_model(qd), jm.velocity_to_model(qdd)
    target = jm.torque_to_model(tau - (fv * qd + fc * coul))  # controller joints' friction, in model torques
    N = q.shape[0]
    W = joint_major_regressor(model, base, qm_, qdm_, qddm_).reshape(n, N, base.count)
    cols, names, units = [W], list(base.names), ["SI"] * base.count
    inv_map = jm.inverse_matrix
    for j in merged:  # friction of controller joint j acts on model torques through the joint map
        cols.append(np.stack([np.outer(inv_map[j], qd[:, j]), np.outer(inv_map[j], coul[:, j])], axis=-1))
        names += [f"FV{j + 1}", f"FC{j + 1}"]
        units += ["N.m.s/rad", "N.m"]
    Y = np.concatenate(cols, axis=-1)
    Y_mean, y_mean = Y.mean(axis=1, keepdims=True), target.mean(axis=0)
    Yc, yc = Y - Y_mean, target - y_mean
    link = fit_subsystem(Yc, yc, names, units, dof=n)
    if not link["full_rank"]:
        raise ValueError(f"stepwise: the link sub-system (eq. 8) is rank deficient on these recordings (rank "
                         f"{link['rank']} of {link['columns']}); the excitation does not move the arm enough to "
                         "separate its gravity and inertia parameters")
    p_link = link["values"]
    for j, k in zip(merged, range(base.count, len(names), 2)):
        fv[j], fc[j] = p_link[k], p_link[k + 1]
    link["groups"] = {g: public_subsystem({k: (finite_or_none(v) if isinstance(v, float) else v)
                                  for k, v in rank_and_cond(Yc.reshape(-1, Y.shape[-1])[:, idx]).items()})
                      for g, idx in groups.items() if g in ("gravity", "inertia")}
    link["expressions"] = dict(zip(base.names, base.expressions()))
    E = np.zeros((n, N, n))
    for j in range(n):
        E[:, :, j] = inv_map[j][:, None]
    with_offset = rank_and_cond(np.concatenate([Y, E], axis=-1).reshape(-1, Y.shape[-1] + n))
    link["with_offset_columns"] = {k: (finite_or_none(v) if isinstance(v, float) else v) for k, v in with_offset.items()}

    # ---- 3. offset: M0 = the mean residual (in the sensor's joints)
    resid_mean = y_mean - (Y_mean[:, 0, :] * p_link).sum(axis=1)  # model torques
    M0 = jm.torque_to_controller(resid_mean)
    w_bar = Y_mean[:, 0, :]
    sigma = np.sqrt(np.asarray(link["residual_rms"]) ** 2 * N / max(N - 1, 1))
    var_model = sigma**2 / N + np.einsum("ip,pq,iq->i", w_bar, link["covariance"], w_bar)
    std_M0 = np.sqrt(np.abs(jm.matrix.T) ** 2 @ var_model)
    offset = {"equation": "eqs. 6 and 11: the joint torque sensor's zero", "parameters": [
        {"name": f"M0_{j + 1}", "value": float(M0[j]), "std": float(std_M0[j]), "unit": "N.m"} for j in range(n)]}
    poses = [ch.q[idx].mean(axis=0) for _, ch in channels for idx in static_poses(ch, cfg)]
    if poses:  # eq. 11 at rest: [Y_g, E] on the static poses (Chen et al. 2021 analyse its rank)
        qs = np.array(poses)
        Yg = joint_major_regressor(model, base, jm.to_model(qs), np.zeros_like(qs), np.zeros_like(qs))
        Yg = Yg.reshape(n, len(poses), base.count)[:, :, groups.get("gravity", [])]
        Eg = np.zeros((n, len(poses), n))
        for j in range(n):
            Eg[:, :, j] = inv_map[j][:, None]
        info = rank_and_cond(np.concatenate([Yg, Eg], axis=-1).reshape(n * len(poses), -1))
        offset["static_poses"] = {"poses": len(poses), "gravity_and_offset": {
            k: (finite_or_none(v) if isinstance(v, float) else v) for k, v in info.items()}}
    else:
        offset["static_poses"] = {"poses": 0}

    # ---- 4. motor (eq. 9) and 5. stiffness (eq. 10), per motor / joint, never stacked
    motor_parts, stiff_parts, stacked = [], [], []
    joint_tau = tau - M0
    load = joint_tau @ Rinv  # R^-T tau, per motor
    if has_motor:
        qdmot, qddmot, coul_m, defl = cat("qdm"), cat("qddm"), cat("coulomb_m"), cat("theta") - q
    dr = cat("drive") if drive is not None else None
    motor_values = np.full((n, 4), np.nan)
    for k in range(n if drive is not None else 0):
        moving = np.abs(qdmot[:, k]) >= motor_fit_min[k]
        if moving.sum() < 10:
            raise ValueError(f"stepwise: motor {k + 1} hardly moves (|qdm| >= {motor_fit_min[k]:.3g} rad/s in "
                             f"{int(moving.sum())} samples); its sub-system (eq. 9) cannot be identified")
        cols_m = [qddmot[moving, k], qdmot[moving, k], coul_m[moving, k]]
        nm = [f"B{k + 1}", f"FVm{k + 1}", f"FCm{k + 1}"]
        un = ["kg.m^2", "N.m.s/rad", "N.m"]
        if drive == "taum":
            y = dr[moving, k] - load[moving, k]
        elif kt is not None:
            y = kt[k] * dr[moving, k] - load[moving, k]
        else:
            cols_m.append(-dr[moving, k])
            nm.append(f"KT{k + 1}")
            un.append("N.m/A")
            y = -load[moving, k]
        sub = fit_subsystem(np.column_stack(cols_m), y, nm, un)
        if not sub["full_rank"]:
            raise ValueError(f"stepwise: the motor sub-system (eq. 9) of motor {k + 1} is rank deficient (rank "
                             f"{sub['rank']} of {sub['columns']})")
        motor_values[k, :len(nm)] = sub["values"]
        if not (drive == "current" and kt is None):
            motor_values[k, 3] = np.nan if drive == "taum" else kt[k]
        motor_parts.append({"motor": k + 1, "columns": ["qdd_m", "qd_m", "sgn(qd_m)"] + (["-current"] if len(nm) == 4
                                                                                          else []),
                            "samples_moving": int(moving.sum()), **public_subsystem(sub)})
        # eq. 14: [Y_m, R^-T Y_k] [p_m, p_k] = tau_m -- reported, never solved (eqs. 13-16)
        # (the spring torque of every joint this motor drives: K_j (R^-T)_kj d_j)
        springs = [defl[moving, j] * Rinv[j, k] for j in range(n) if Rinv[j, k] != 0]
        info = rank_and_cond(np.column_stack(cols_m[:3] + springs))
        stacked.append({"motor": k + 1, **{key: (finite_or_none(v) if isinstance(v, float) else v) for key, v in info.items()}})
    for j in range(n if has_motor else 0):
        cols_k = [defl[:, j]] + ([np.ones(N)] if cfg.encoder_offset else [])
        sub = fit_subsystem(np.column_stack(cols_k), joint_tau[:, j], [f"K{j + 1}"] + (["c%d" % (j + 1)] if
                                                                                   cfg.encoder_offset else []),
                         ["N.m/rad", "N.m"][:len(cols_k)])
        if not sub["full_rank"]:
            raise ValueError(f"stepwise: the stiffness sub-system (eq. 10) of joint {j + 1} is rank deficient")
        K, c = sub["values"][0], (sub["values"][1] if cfg.encoder_offset else 0.0)
        part = {"joint": names_j[j], "columns": ["R^-1 qm - q"] + (["1"] if cfg.encoder_offset else []),
                **public_subsystem(sub)}
        if cfg.encoder_offset:
            part["encoder_offset"] = {"value": float(-c / K), "unit": "rad",
                                      "meaning": "motor encoder zero (referred to the link) minus link encoder zero"}
        part["deflection_range"] = [float(defl[:, j].min() - (-c / K)), float(defl[:, j].max() - (-c / K))]
        stiff_parts.append(part)

    listed = lambda v: [finite_or_none(x) for x in v]  # noqa: E731  (NaN: not identified -> null)
    model_doc = {
        "link_friction": {"viscous": fv.tolist(), "coulomb": fc.tolist()},
        "base_parameters": dict(zip(base.names, (float(v) for v in p_link[:base.count]))),
        "sensor_offset": M0.tolist(),
        "motor_inertia": listed(motor_values[:, 0]) if motor_parts else None,
        "motor_viscous": listed(motor_values[:, 1]) if motor_parts else None,
        "motor_coulomb": listed(motor_values[:, 2]) if motor_parts else None,
        "torque_constant": listed(motor_values[:, 3]) if drive == "current" else None,
        "stiffness": [p["parameters"][0]["value"] for p in stiff_parts] if stiff_parts else None,
        "encoder_offset": [p.get("encoder_offset", {}).get("value", 0.0) for p in stiff_parts] if stiff_parts else None,
    }
    skipped_motor = (None if motor_parts else "no drive signal (current1.. or taum1..) in the recordings" if has_motor
                     else "no motor encoder (qm1.. or theta1..) in the recordings")
    skipped_stiffness = None if stiff_parts else "no motor encoder (qm1.. or theta1..) in the recordings"
    order = [
        {"step": 1, "subsystem": "friction", "what": "link friction, alone, from forward/backward sweeps",
         "merged_into_link": [names_j[j] for j in merged]},
        {"step": 2, "subsystem": "link", "what": "gravity and inertia (eq. 8), friction subtracted, each joint's "
                                                 "mean removed so the sensor zero does not enter"},
        {"step": 3, "subsystem": "offset", "what": "sensor zero M0 = mean residual of step 2"},
        {"step": 4, "subsystem": "motor", "what": "eq. 9 per motor with tau = tau_sensor - M0",
         **({"skipped": skipped_motor} if skipped_motor else {})},
        {"step": 5, "subsystem": "stiffness", "what": "eq. 10 per joint with tau = tau_sensor - M0, separately "
                                                      "from the motor (eqs. 13-16)",
         **({"skipped": skipped_stiffness} if skipped_stiffness else {})},
    ]
    table = [{"step": 1, "subsystem": "friction", "unit": pj["joint"],
              **{k: pj.get(k) for k in ("rows", "columns", "rank", "cond", "cond_scaled")}}
             for pj in friction["per_joint"] if pj["identified"]]
    table.append({"step": 2, "subsystem": "link", "unit": "all joints",
                  **{k: link.get(k) for k in ("rows", "columns", "rank", "cond", "cond_scaled")}})
    table.append({"step": 3, "subsystem": "offset (static poses: [Y_g, E])", "unit": "all joints",
                  **{k: offset["static_poses"].get("gravity_and_offset", {}).get(k)
                     for k in ("columns", "rank", "cond", "cond_scaled")}})
    table += [{"step": 4, "subsystem": "motor", "unit": f"motor {pm['motor']}",
               **{k: pm.get(k) for k in ("rows", "columns", "rank", "cond", "cond_scaled")}} for pm in motor_parts]
    table += [{"step": 5, "subsystem": "stiffness", "unit": ps["joint"],
               **{k: ps.get(k) for k in ("rows", "columns", "rank", "cond", "cond_scaled")}} for ps in stiff_parts]
    table += [{"step": "-", "subsystem": "motor + stiffness stacked (eq. 14, not solved)", "unit": f"motor {st['motor']}",
               **{k: st.get(k) for k in ("columns", "rank", "cond", "cond_scaled")}} for st in stacked]
    parameters = [dict(p, subsystem=sub) for sub, parts in
                  (("friction", [pj for pj in friction["per_joint"] if pj["identified"]]), ("link", [link]),
                   ("offset", [offset]), ("motor", motor_parts), ("stiffness", stiff_parts))
                  for part in parts for p in part.get("parameters", [])]
    doc = {
        "format": RESULT_FORMAT, "version": RESULT_VERSION, "method": "stepwise", "reference": cite("stepwise"),
        "robot": model.name, "joints": names_j,
        "recordings": {"identification": [log.source for log in ident], "held_out": [log.source for log in held]},
        "drive": drive, "motor_encoder": has_motor,
        "torque_constant_source": ("given" if kt is not None else
                                   ("identified (motor sub-system)" if drive == "current" else None)),
        "transmission": R.tolist(), "config": cfg.to_dict(), "processing": processing.to_dict(),
        "processing_steps": steps,
        "segments": {"sweep_pairs": len(points), "static_poses": len(poses), "samples": int(N)},
        "order": order, "subsystem_table": table, "parameters": parameters,
        "subsystems": {"friction": friction, "link": public_subsystem(link), "offset": offset,
                       "motor": {"equation": "eq. 9", "per_motor": motor_parts},
                       "stiffness": {"equation": "eq. 10", "per_joint": stiff_parts},
                       "motor_and_stiffness_stacked": {"equation": "eq. 14 (reported, never solved)",
                                                       "per_motor": stacked}},
        "model": model_doc, "notes": notes,
    }
    fitted = _FlexibleModel(model, base, p_link[:base.count], fv, fc, M0, motor_values if motor_parts else None, R,
                            drive, np.array(model_doc["stiffness"]) if stiff_parts else None,
                            np.array(model_doc["encoder_offset"]) if stiff_parts else None)
    doc["validation"] = [fitted.validate(log, processing, cfg, motor_rest) for log in held]
    return doc


@dataclass
class _FlexibleModel:
    """The identified flexible-joint model, as predictions of what the sensors measure."""

    model: RobotModel
    base: BaseParameters
    theta: np.ndarray
    fv: np.ndarray
    fc: np.ndarray
    M0: np.ndarray
    motor: np.ndarray | None  # (n, 4): B, Fv_m, Fc_m, k_t per motor; None: motor not identified
    R: np.ndarray
    drive: str | None
    K: np.ndarray | None  # None: stiffness not identified (no motor encoder)
    encoder_offset: np.ndarray | None

    def sensor_from_link(self, ch: Channels) -> np.ndarray:
        """Joint torque sensor predicted by the link model (eq. 8 + friction + M0)."""
        jm, n, N = self.model.joint_map, self.model.dof, ch.t.size
        W = joint_major_regressor(self.model, self.base, jm.to_model(ch.q), jm.velocity_to_model(ch.qd),
                                  jm.velocity_to_model(ch.qdd))
        tau = jm.torque_to_controller((W @ self.theta).reshape(n, N).T)
        return tau + self.fv * ch.qd + self.fc * ch.coulomb + self.M0

    def sensor_from_spring(self, ch: Channels) -> np.ndarray:
        """Joint torque sensor predicted by the spring (eq. 10) from the two encoders."""
        return self.K * (ch.deflection - self.encoder_offset) + self.M0

    def drive_from(self, ch: Channels, joint_tau: np.ndarray) -> np.ndarray:
        """Motor current (or motor torque) by eq. 9 for a given joint (spring) torque."""
        B, fv, fc, kt = self.motor.T
        taum = B * ch.qddm + fv * ch.qdm + fc * ch.coulomb_m + joint_tau @ np.linalg.inv(self.R)
        return taum if self.drive == "taum" else taum / kt

    def validate(self, log, processing: ProcessingConfig, cfg: StepwiseConfig, motor_rest: np.ndarray) -> dict:
        """Predictions on a held-out recording against what its sensors measured, at the measured
        samples (samples in gaps or dropped edges have no prediction and are left out)."""
        from .pipeline import TorqueMetrics

        n = self.model.dof
        raw = as_sampled(log, n)
        measured_drive = log.current if self.drive == "current" else log.taum
        keys = ["sensor_link"] + (["sensor_spring"] if self.K is not None else []) + (
            ["drive_sensor", "drive_link"] if self.motor is not None else [])
        acc = {k: TorqueMetrics(n) for k in keys}
        samples = 0
        for piece in process_windows(raw, processing, purpose="predict"):
            d = piece.data
            lo = int(np.searchsorted(raw.t, d.t[0] - 1e-9, side="left"))
            hi = int(np.searchsorted(raw.t, d.t[-1] + 1e-9, side="right"))
            t = raw.t[lo:hi]
            same_grid = t.shape[0] == d.count and np.array_equal(t, d.t)
            ch = Channels.split(d, n, self.R, cfg.rest_velocity, motor_rest, self.drive is not None)
            link = self.sensor_from_link(ch)
            preds = {"sensor_link": link}
            if self.K is not None:
                preds["sensor_spring"] = self.sensor_from_spring(ch)
            if self.motor is not None:
                preds["drive_sensor"] = self.drive_from(ch, ch.tau - self.M0)
                preds["drive_link"] = self.drive_from(ch, link - self.M0)
            for key, pred in preds.items():
                if not same_grid:
                    pred = np.stack([np.interp(t, d.t, pred[:, j]) for j in range(n)], axis=1)
                acc[key].add(log.tau[lo:hi] if key.startswith("sensor") else measured_drive[lo:hi], pred)
            samples += t.size
        names = list(self.model.joint_names)
        unit = "A" if self.drive == "current" else "N.m"
        what = "motor current" if self.drive == "current" else "motor torque"
        out = {"recording": log.source, "samples": samples, "against": "the measured signals, at the measured samples",
               "joint_torque_sensor": {"unit": "N.m", "from_link_model": {
                   "predicted_by": "eq. 8 link model + friction + M0 (steps 1-3)", **acc["sensor_link"].result(names)}}}
        if "sensor_spring" in acc:
            out["joint_torque_sensor"]["from_spring"] = {
                "predicted_by": "eq. 10 spring from the motor and link encoders + M0 (step 5)",
                **acc["sensor_spring"].result(names)}
        if "drive_sensor" in acc:
            out["motor"] = {
                "signal": what, "unit": unit,
                "from_measured_joint_torque": {"predicted_by": "eq. 9 motor model driven by the measured joint "
                                                               "torque - M0 (step 4)",
                                               **acc["drive_sensor"].result(names)},
                "from_link_model": {"predicted_by": "eq. 9 driven by the link model's torque (steps 1-4 chained)",
                                    **acc["drive_link"].result(names)}}
        return out
