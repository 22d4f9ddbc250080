"""The Stäubli TX40 data set of LS2N/IRCCyN as redistributed by figaroh-plus (Apache-2.0).

Raw files (shipped gzipped and unchanged beside this module in staubli_tx40/, source and licence noted there):
motor encoder angles and motor-side torques, 45,000 rows at 5 kHz. Conversion (figaroh-plus
config T40X_config.yaml): reductions N = [32, 32, 45, -48, 45, 32]; the wrist couples joints 5
and 6 (motor 6 turns with q5 + q6), so q = inv(R_q) q_motor with R_q = diag(N), R_q[5,4] = N6, and
tau = R_tau tau_motor with R_tau = diag(N), R_tau[4,5] = N6; the MDH URDF needs q2 - pi/2, q3 + pi/2.

Published reference (the authors' script, figaroh-plus): 2075 equations, 60 base parameters,
WLS RMSE 1.118 N.m, relative residual 5.26 %, cond(W_base) 1012.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from robodyn.identification.signals import SampledData
from robodyn.identification.processing import ProcessingConfig

REDUCTION = np.array([32.0, 32.0, 45.0, -48.0, 45.0, 32.0])
SAMPLE_PERIOD = 0.0002  # s
# package data, so that an installed copy has it too (`robodyn compare --dataset tx40`)
DATA_DIR = Path(__file__).resolve().parent / "staubli_tx40"
WRIST_COUPLING = (0.0, 0.0, 0.0, 0.0, 1.0, 1.0)  # motor 6 velocity ~ qd5 + qd6
PUBLISHED = {"equations": 2075, "base_parameters": 60, "wls_rmse": 1.118, "relative_residual": 0.0526,
             "r2": 0.9972, "cond": 1012}

# The authors' processing: 4th-order Butterworth at 100 Hz on q, central differences, two decimations
# by 10 (5 kHz -> 50 Hz), and removal of samples moving too slowly for the Coulomb model.
PROCESSING = ProcessingConfig(resample="never", cutoff_hz=None, q_cutoff_hz=100.0, velocity="differentiate",
                              decimation=100, min_velocity=0.01)


def load(directory: str | Path) -> SampledData:
    directory = Path(directory)
    files = {name: directory / f"{name}.csv.gz" for name in ("pos_read_data", "curr_data")}
    for name, path in files.items():
        if not path.exists():
            plain = directory / f"{name}.csv"
            if not plain.exists():
                raise FileNotFoundError(f"{path}: TX40 raw data not found")
            files[name] = plain
    q_motor = np.loadtxt(files["pos_read_data"], delimiter=",", skiprows=1)
    tau_motor = np.loadtxt(files["curr_data"], delimiter=",", skiprows=1)
    if q_motor.shape != tau_motor.shape or q_motor.shape[1] != 6:
        raise ValueError(f"TX40 data: position {q_motor.shape} and torque {tau_motor.shape} must both be (N, 6)")
    red_q = np.diag(REDUCTION)
    red_q[5, 4] = REDUCTION[5]
    red_tau = np.diag(REDUCTION)
    red_tau[4, 5] = REDUCTION[5]
    q = q_motor @ np.linalg.inv(red_q).T
    tau = tau_motor @ red_tau.T
    q[:, 1] -= np.pi / 2
    q[:, 2] += np.pi / 2
    t = np.arange(q.shape[0]) * SAMPLE_PERIOD
    return SampledData(t, q, tau)
