"""FIGAROH (figaroh 1.0.2, Apache-2.0) identification on one log, set up as its examples set up an arm.

What is used, and from where (figaroh-examples, examples/ur10 and examples/staubli_TX40, and
figaroh 1.0.2's own defaults):

- a ``BaseIdentification`` subclass whose ``load_trajectory_data`` hands over the log, as each
  example's robot class does (its ``data_source`` argument picks the held-out run, which FIGAROH
  processes through the same pipeline as the identification run);
- the unified configuration of the examples' identification task: ``model_components`` friction,
  joint_offset and actuator_inertia all on (viscous fv qd + Coulomb fs sgn(qd) + offset + rotor
  inertia Ia qdd per joint), ``use_joint_torques``, no external forces, no coupled wrist (the
  TX40's unified example config says ``has_coupled_wrist: false``);
- its signal processing: median filter (5 samples, FIGAROH's default) then a 4th-order zero-phase
  Butterworth low-pass on positions (and logged velocities) at the example's cut-off (SETUPS below);
  velocities differentiated
  from the filtered positions when the log has none, accelerations from the filtered velocities
  (``gradient``); torque unfiltered (the base class's ``process_torque_data``);
- its solver: zero columns eliminated (tolerance 0.001), base parameters by its QR double
  decomposition (tolerance 1e-6), ordinary least squares (wls=False in both examples); decimation
  as each example calls ``solve`` (SETUPS below).

Held-out torque: FIGAROH's base regressor of the processed held-out run times its base parameters
(as its ``_compute_validation_metrics`` computes it), against the raw measured torque.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import numpy as np

MEDIAN_WINDOW = 5  # FIGAROH's _apply_filters default
# The examples' set-ups: the TX40's (examples/staubli_TX40/config/TX40_config.yaml, which its
# identification.py loads: 100 Hz cut-off at 5 kHz, solve(decimate=True), decimation factor 10) for the
# TX40 log; the UR10's (examples/ur10: 50 Hz at 500 Hz, a tenth of the rate, solve(decimate=False)) for
# every other arm, its cut-off capped at the TX40's 100 Hz.
SETUPS = {"tx40": {"example": "examples/staubli_TX40", "cutoff_hz": lambda rate: 100.0, "decimate": True},
          "arm": {"example": "examples/ur10", "cutoff_hz": lambda rate: min(rate / 10.0, 100.0), "decimate": False}}


def _config_text(joints: list[str], rate_hz: float, cutoff: float) -> str:
    import yaml

    n = len(joints)
    config = {
        "robot": {"name": "peer_arm", "properties": {
            "joints": {"active_joints": joints},
            "mechanics": {"friction_coefficients": {"viscous": [0.0] * n, "static": [0.0] * n},
                          "actuator_inertias": [0.0] * n, "joint_offsets": [0.0] * n,
                          "reduction_ratios": [1.0] * n},
            "coupling": {"has_coupled_wrist": False}}},
        "tasks": {"identification": {
            "enabled": True,
            "problem": {"include_external_forces": False, "use_joint_torques": True,
                        "model_components": {"friction": True, "joint_offset": True, "actuator_inertia": True,
                                             "static_regressor": True, "inertia_regressor": True}},
            "signal_processing": {"sampling_frequency": float(rate_hz), "cutoff_frequency": float(cutoff),
                                  "filter_type": "butterworth", "filter_order": 4,
                                  "filter_params": {"med_fil": MEDIAN_WINDOW}},
            "data": {"validation_data_file": "held"}}},
    }
    return yaml.safe_dump(config)


def options(setup: str, rate_hz: float) -> dict:
    """The options this run uses, for the JSON."""
    s = SETUPS[setup]
    return {"as_in": f"figaroh-examples {s['example']}", "model_components":
            ["friction (fv qd + fs sgn qd)", "joint_offset", "actuator_inertia"],
            "filter": f"median {MEDIAN_WINDOW} samples, then Butterworth order 4 zero-phase at "
                      f"{s['cutoff_hz'](rate_hz):.4g} Hz on q (and logged qd)",
            "differentiation": "gradient", "decimate": s["decimate"], "decimation_factor": 10 if s["decimate"] else None,
            "wls": False, "zero_tolerance": 0.001, "qr_tolerance": 1e-6, "torque_filtered": False,
            "coupled_wrist": "no: FIGAROH 1.0.2's base class has no coupled-wrist columns (the TX40 example's own "
                             "robot class adds them)"}


def run(urdf_text: str, joint_names: list[str], fit, held, setup: str = "arm") -> dict:
    """Identify on ``fit`` (SampledData), predict ``held``: per-joint RMSE against its raw torque."""
    from figaroh.identification.base_identification import BaseIdentification
    from figaroh.tools.load_robot import load_robot
    from figaroh.tools.regressor import build_regressor_basic, build_regressor_reduced

    logging.getLogger("figaroh").setLevel(logging.ERROR)
    rate = 1.0 / float(np.median(np.diff(fit.t)))
    runs = {"fit": fit, "held": held}

    class LogIdentification(BaseIdentification):
        def __init__(self, robot, config_file):
            super().__init__(robot, config_file)
            ids = [robot.model.getJointId(j) for j in joint_names]
            joints = [robot.model.joints[i] for i in ids]
            self.identif_config.update(active_joints=joint_names, act_Jid=ids, act_J=joints,
                                       act_idxq=[j.idx_q for j in joints], act_idxv=[j.idx_v for j in joints],
                                       idx_act_joints=[i - 1 for i in ids])

        def load_trajectory_data(self, data_source=None):
            d = runs[data_source or "fit"]
            return {"timestamps": d.t.reshape(-1, 1), "positions": d.q, "velocities": d.qd,
                    "accelerations": None, "torques": d.tau}

        def print_quality_report(self):  # the bench prints nothing of its own
            pass

    with tempfile.TemporaryDirectory() as tmp:
        urdf = Path(tmp) / "arm.urdf"
        urdf.write_text(urdf_text)
        config = Path(tmp) / "identification.yaml"
        config.write_text(_config_text(joint_names, rate, SETUPS[setup]["cutoff_hz"](rate)))
        robot = load_robot(str(urdf), load_by_urdf=True)
        ident = LogIdentification(robot, str(config))
        ident.initialize()
        phi = ident.solve(decimate=SETUPS[setup]["decimate"], decimation_factor=10, plotting=False,
                          save_results=False, wls=False)
        if not ident._val_available:
            raise RuntimeError("FIGAROH did not load the held-out run")
        v = ident._val_processed_data
        W = build_regressor_basic(robot, v["positions"], v["velocities"], v["accelerations"], ident.identif_config)
        Wb = build_regressor_reduced(W, ident._idx_eliminated)[:, ident._base_indices]
        n = ident._val_num_samples
        pred_all = Wb @ phi
        predicted = np.stack([pred_all[i * n:(i + 1) * n] for i in ident.identif_config["act_idxv"]], axis=1)
    if predicted.shape != held.tau.shape:
        raise RuntimeError(f"FIGAROH predicted {predicted.shape} for a held-out torque of {held.tau.shape}")
    rmse = np.sqrt(np.mean(np.square(predicted - held.tau), axis=0))
    return {"rmse": rmse.tolist(), "rmse_sum": float(rmse.sum()), "parameters": int(len(phi)),
            "options": options(setup, rate)}
