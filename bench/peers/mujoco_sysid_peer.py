"""MuJoCo's system identification (``mujoco.sysid``, mujoco 4.0.1, Apache-2.0) on one log.

Set up as its documentation and its SO-101 arm example (mujoco_playground tasks/sysid/so101) fit an
arm: the model's parameters are changed until rollouts of the recorded controls track the recorded
joint signals, by its Gauss-Newton least squares (``optimize(..., optimizer="mujoco")``). Here:

- the model: robodyn's model of the arm written as URDF and compiled by MuJoCo's own URDF importer
  (no visuals, masses below 1 g raised to 1 g, an inertia that breaks the triangle inequality by
  round-off balanced: ``balanceinertia``, without which the TX40 run stopped with MuJoCo's "inertia
  must satisfy A + B >= C"), one ``<motor>`` per joint (gear 1, unlimited) and a ``jointpos``
  and a ``jointvel`` sensor per joint; time step the log's sample period, kept within 1 to 5 ms;
- the parameters its docs name for arm identification: each link's inertia (``body_inertia_param``,
  ``InertiaType.Pseudo``: mass, centre of mass and rotational inertia through the log-Cholesky
  pseudo-inertia, physically consistent by construction, its default bounds) and each joint's
  ``armature``, ``damping`` and ``frictionloss`` (from 0, bounded to [0, 10], [0, 50], [0, 50]);
- the data: the log's measured torque is the control; the identification part is cut into
  ``WINDOWS`` windows of ``WINDOW_SECONDS`` s spread over it, each rolled out from its measured
  state (the careful plain script's 10 Hz low-passed q and qd: a torque-driven arm drifts, so the
  windows are short), tracking the same low-passed q and qd;
- at most ``MAX_ITERATIONS`` iterations.

Held-out torque: MuJoCo's inverse dynamics (``mj_inverse``) of the fitted model at the held-out
part's states processed as the plain script processes them (10 Hz zero-phase low-pass, qdd
differentiated), against the raw measured torque. Torque offsets have no MuJoCo parameter and
are not fitted.
"""

from __future__ import annotations

import numpy as np

WINDOWS = 16
WINDOW_SECONDS = 0.2
MAX_ITERATIONS = 10
# MuJoCo refuses a moving body without mass (the TX40 URDF's link6): its compiler's floor, 1 g and
# 1e-6 kg m^2, stands in (the fit moves it)
MIN_MASS, MIN_INERTIA = 1e-3, 1e-6
JOINT_BOUNDS = {"armature": 10.0, "damping": 50.0, "frictionloss": 50.0}


def _spec(model):
    """MjSpec of the arm from robodyn's URDF export through MuJoCo's importer, with motors and sensors."""
    import mujoco

    from robodyn.robot.urdf import model_to_urdf

    text = model_to_urdf(model)
    head, rest = text.split("<robot", 1)
    end = rest.index(">") + 1
    xml = (head + "<robot" + rest[:end]
           + '<mujoco><compiler discardvisual="true" balanceinertia="true" fusestatic="false" '
             f'boundmass="{MIN_MASS}" boundinertia="{MIN_INERTIA}"/></mujoco>'
           + rest[end:])
    spec = mujoco.MjSpec.from_string(xml)
    for name in model.joint_names:
        spec.add_actuator(name=f"motor_{name}", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT,
                          ctrllimited=mujoco.mjtLimited.mjLIMITED_FALSE)
    for name in model.joint_names:
        spec.add_sensor(name=f"pos_{name}", type=mujoco.mjtSensor.mjSENS_JOINTPOS, objname=name,
                        objtype=mujoco.mjtObj.mjOBJ_JOINT)
    for name in model.joint_names:
        spec.add_sensor(name=f"vel_{name}", type=mujoco.mjtSensor.mjSENS_JOINTVEL, objname=name,
                        objtype=mujoco.mjtObj.mjOBJ_JOINT)
    spec.option.gravity = np.asarray(model.gravity, float)
    return spec


def _apply_pseudo_inertia(spec, body_name: str, param) -> None:
    """sysid's InertiaType.Pseudo modifier, writing principal moments and axes: its own
    (model_modifier.apply_body_theta_inertia) writes ``fullinertia`` element by element with
    ``inertia`` zeroed and ``iquat`` NaN, which MuJoCo 4.0.1 compiles as zero rotational inertia
    (measured on the Panda: every link's body_inertia 0, NaN inverse dynamics)."""
    import mujoco
    from mujoco.sysid._src import model_modifier

    pi = model_modifier.pi_from_theta(param.value)
    mass, ipos = pi[0], pi[1:4] / pi[0]
    S = model_modifier.skew(ipos)
    about_com = pi[4:].reshape(3, 3) + mass * S @ S
    moments, axes = np.linalg.eigh(about_com)
    if np.linalg.det(axes) < 0:
        axes[:, 0] = -axes[:, 0]
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, axes.ravel())
    body = spec.body(body_name)
    body.explicitinertial = True
    body.mass = mass
    body.ipos = ipos
    body.inertia = moments
    body.iquat = quat
    body.fullinertia = np.full(6, np.nan)


def _parameters(spec, compiled, model):
    from mujoco import sysid

    params = sysid.ParameterDict()
    moving = {compiled.jnt_bodyid[compiled.joint(name).id] for name in model.joint_names}
    for b in sorted(moving):
        body = compiled.body(b).name
        params.add(sysid.body_inertia_param(spec, compiled, body, inertia_type=sysid.InertiaType.Pseudo,
                                            modifier=lambda s, p, _body=body: _apply_pseudo_inertia(s, _body, p)))
    for attr, upper in JOINT_BOUNDS.items():
        for name in model.joint_names:
            def modifier(s, p, _name=name, _attr=attr):
                # MuJoCo 4's joint damping is a vector (linear term first; the others stay 0)
                value = [float(p.value[0]), 0.0, 0.0] if _attr == "damping" else float(p.value[0])
                setattr(s.joint(_name), _attr, value)
            params.add(sysid.Parameter(f"{name}_{attr}", 0.0, 0.0, upper, modifier=modifier))
    return params


def options(timestep: float) -> dict:
    return {"parameters": "link inertias (Pseudo, log-Cholesky) + armature, damping, frictionloss per joint",
            "optimizer": "mujoco (Gauss-Newton least squares)", "max_iterations": MAX_ITERATIONS,
            "windows": WINDOWS, "window_seconds": WINDOW_SECONDS, "timestep_s": timestep,
            "tracked": "jointpos and jointvel, 10 Hz low-passed", "model": "robodyn's URDF through MuJoCo's importer"}


def run(model, fit, held) -> dict:
    import logging

    from mujoco import sysid

    import loro

    logging.getLogger("absl").setLevel(logging.ERROR)
    spec = _spec(model)
    spec.option.timestep = float(np.clip(np.median(np.diff(fit.t)), 1e-3, 5e-3))
    compiled = spec.compile()
    params = _parameters(spec, compiled, model)

    q, qd, _ = loro._plain_states(fit, loro.PLAIN_CUTOFF_HZ)
    dt = spec.option.timestep
    steps = int(round(WINDOW_SECONDS / dt))
    if fit.t[-1] - fit.t[0] < 2 * WINDOW_SECONDS:
        raise ValueError(f"identification part: {fit.t[-1] - fit.t[0]:.3g} s, shorter than two {WINDOW_SECONDS} s windows")
    starts = np.linspace(fit.t[0], fit.t[-1] - WINDOW_SECONDS - dt, WINDOWS)
    names = [f"motor_{j}" for j in model.joint_names]
    sensors = [f"pos_{j}" for j in model.joint_names] + [f"vel_{j}" for j in model.joint_names]
    initial, controls, measured, labels = [], [], [], []
    for k, start in enumerate(starts):
        # every window on the same uniform grid of the model's time step (the logs' stamps jitter;
        # sysid stacks the windows' controls, which need equal lengths)
        t = start + dt * np.arange(steps)
        at = lambda x: np.stack([np.interp(t, fit.t, x[:, j]) for j in range(x.shape[1])], axis=1)  # noqa: E731
        initial.append(sysid.create_initial_state(compiled, at(q)[0], at(qd)[0]))
        controls.append(sysid.TimeSeries.from_control_names(t - start, at(fit.tau), compiled, names))
        measured.append(sysid.TimeSeries.from_names(t - start, np.hstack([at(q), at(qd)]), compiled, sensors))
        labels.append(f"window{k}")
    sequences = [sysid.ModelSequences("arm", spec, labels, initial, controls, measured)]
    residual_fn = sysid.build_residual_fn(models_sequences=sequences)

    held_states = loro._plain_states(held, loro.PLAIN_CUTOFF_HZ)
    nominal = _held_out_rmse(sysid.apply_param_modifiers(params, spec), model, held, held_states)
    fitted, _ = sysid.optimize(params, residual_fn, optimizer="mujoco", verbose=False, max_iters=MAX_ITERATIONS)
    rmse = _held_out_rmse(sysid.apply_param_modifiers(fitted, spec), model, held, held_states)
    values = {k: float(fitted[f"{j}_{k}"].value[0]) for k in JOINT_BOUNDS for j in model.joint_names[:1]}
    return {"rmse": rmse.tolist(), "rmse_sum": float(rmse.sum()), "parameters": int(fitted.size),
            "starting_model_rmse_sum": float(nominal.sum()),
            "residual_start_end": [float(np.sum(np.square(np.concatenate(residual_fn(params.as_vector(), params)[0])))),
                                   float(np.sum(np.square(np.concatenate(residual_fn(fitted.as_vector(), fitted)[0]))))],
            "first_joint_fitted": values, "options": options(spec.option.timestep)}


def _held_out_rmse(compiled, model, held, states) -> np.ndarray:
    """Per-joint RMSE of mj_inverse at the held-out states against the raw measured torque."""
    import mujoco

    hq, hqd, hqdd = states
    d = mujoco.MjData(compiled)
    dofs = [compiled.jnt_dofadr[compiled.joint(j).id] for j in model.joint_names]
    qadr = [compiled.jnt_qposadr[compiled.joint(j).id] for j in model.joint_names]
    predicted = np.empty_like(held.tau)
    for k in range(held.count):
        d.qpos[qadr], d.qvel[dofs], d.qacc[dofs] = hq[k], hqd[k], hqdd[k]
        mujoco.mj_inverse(compiled, d)
        predicted[k] = d.qfrc_inverse[dofs]
    return np.sqrt(np.mean(np.square(predicted - held.tau), axis=0))
