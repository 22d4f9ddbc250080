"""The default pipeline on data nobody here tuned it to, judged against the measured torque:

- the real Stäubli TX40 log (identification/datasets/staubli_tx40), split by time: the first 60 % identifies,
  the last 40 % is held out;
- realistic simulated Franka-like and UR-like logs (identification/realistic_logs.py) whose plant has
  effects the identifier's model lacks (perturbed parameters, rippling and load-dependent Stribeck
  friction, an elastic joint) and whose sensors misbehave as real ones do.

The reference is the plain OLS script (identification/baseline.py): 10 Hz low-pass on q, qd and
tau, least squares, nothing else.
"""

from pathlib import Path

import numpy as np
import pytest

from robodyn.identification.baseline import plain_ols
from robodyn.identification.datasets import tx40
from robodyn.identification.pipeline import IdentificationConfig, identify, validate
from robodyn.identification.realistic_logs import realistic_log
from robodyn.identification.selection import split_by_time
from robodyn.robot.loader import load_model
from robodyn.robot.urdf import model_from_urdf

TX40_DIR = tx40.DATA_DIR


@pytest.fixture(scope="module")
def tx40_split():
    model = model_from_urdf(TX40_DIR / "tx40_mdh_modified.urdf")
    fit, held = split_by_time(tx40.load(TX40_DIR), 0.4)
    return model, fit, held


def test_tx40_default_is_never_worse_than_plain_ols(tx40_split):
    model, fit, held = tx40_split
    coupling = (tx40.WRIST_COUPLING,)
    default = identify(model, [fit], IdentificationConfig(motor_couplings=coupling)).to_dict()
    ours = validate(model, default, [held])
    plain = plain_ols(model, fit, held, motor_couplings=coupling)
    print(f"TX40 held-out RMSE sum against the measured torque: default {ours['rmse_sum']:.3f} "
          f"(cut-off {default['config']['processing']['cutoff_hz']} Hz), plain OLS {plain['rmse_sum']:.3f}")
    # measured: default 21.3, plain OLS 27.1 N.m (the measured 5 kHz motor torque is noisy)
    assert ours["rmse_sum"] < plain["rmse_sum"]
    assert ours["against"] == "measured torque" and ours["filtered"]["rmse_sum"] < ours["rmse_sum"]


def test_tx40_model_selection_reports_its_folds_and_follows_the_one_standard_error_rule(tx40_split):
    from robodyn.identification.selection import one_standard_error_choice, select

    model, fit, held = tx40_split
    coupling = (tx40.WRIST_COUPLING,)
    config = IdentificationConfig(motor_couplings=coupling)
    # a reduced grid (the full one takes minutes at 5 kHz): the properties checked do not depend on it
    chosen = select(model, [fit], config, folds=3, frictions=("coulomb-viscous", "sigmoid"),
                    methods=("ols", "wls")).to_dict()
    default = validate(model, identify(model, [fit], config).to_dict(), [held])
    ours = validate(model, chosen, [held])
    sel = chosen["selection"]
    print(f"TX40 selected {sel['chosen']}: held-out {ours['rmse_sum']:.3f} vs default {default['rmse_sum']:.3f}; "
          f"{sel['rule']}")
    scored = [c for c in sel["candidates"] if c["mean"] is not None]
    assert all(len(c["fold_scores"]) == 3 for c in scored) and len(sel["folds"]) == 3
    assert {c["method"] for c in scored} == {"ols", "wls"}
    assert {c["friction"] for c in scored} == {"coulomb-viscous", "sigmoid"}
    assert {c["rotor_inertia"] for c in scored} == {True, False}
    # the choice is the rule's, applied to the table the result carries
    reference = sel["candidates"].index(next(c for c in sel["candidates"] if all(
        c[k] == sel["reference"][k] for k in sel["reference"])))
    index, _ = one_standard_error_choice(sel["candidates"], reference)
    assert all(sel["candidates"][index][k] == sel["chosen"][k] for k in ("friction", "rotor_inertia", "method"))
    assert chosen["config"]["friction"] == sel["chosen"]["friction"]
    assert chosen["estimate"]["method"] == sel["chosen"]["method"]


@pytest.fixture(scope="module")
def logs():
    """Two excitations of the same simulated arm per sensor: 10 s Franka-like, 6 s UR-like."""
    return {sensor: [realistic_log(sensor, seed, duration=duration) for seed in (1, 2)]
            for sensor, duration in (("franka", 10.0), ("ur", 6.0))}


@pytest.mark.parametrize("sensor", ["franka", "ur"])
def test_default_on_realistic_logs_beats_plain_ols_near_the_noise_floor(logs, sensor):
    A, B = logs[sensor]
    model = load_model("panda" if sensor == "franka" else "ur5e")
    doc = identify(model, [A.data], IdentificationConfig()).to_dict()
    ours = validate(model, doc, [B.data])
    plain = plain_ols(model, A.data, B.data)
    floor = float(np.sqrt(np.sum(np.square(B.noise_floor))))
    factor = float(np.sqrt(np.sum(np.square(ours["rmse"])))) / floor
    print(f"{sensor}-like: held-out RMSE sum {ours['rmse_sum']:.3f} vs plain OLS {plain['rmse_sum']:.3f}; "
          f"{factor:.2f} x the noise floor ({floor:.3f} N.m); cut-off {doc['config']['processing']['cutoff_hz']} Hz")
    assert ours["rmse_sum"] <= plain["rmse_sum"]
    # the plant's elastic joint, friction ripple and load-dependent friction are not in the model:
    # held-out error measured at 6.0x (Franka-like, 10 s logs) and 3.2x (UR-like, 6 s) the floor
    # (4.2x and 3.7x on 20 s logs)
    assert factor < {"franka": 7.5, "ur": 4.5}[sensor]


def test_sensor_models_show_the_effects_they_claim(logs):
    franka, ur = logs["franka"][0], logs["ur"][0]
    dt = np.diff(franka.data.t)
    assert 0.12 < np.std(dt[dt < 1.5e-3]) / 1e-3 < 0.25  # jittered sampling
    assert np.sum(dt > 3e-3) >= 1 and franka.data.count < 9950  # dropped packets, a burst
    noise = franka.data.tau - franka.ideal_tau
    assert np.all(np.abs(noise.mean(0)) > 0) and np.all(franka.noise_floor > 0.04)  # offsets and noise
    gains = np.array(ur.notes["true_drive_gains"]) / np.array(ur.notes["nominal_drive_gains"])
    assert np.abs(gains - 1).max() > 0.02  # the user's nominal gains are wrong
    # one sample late: the measured torque lines up with the plant's a period later
    lagged = np.corrcoef(ur.data.tau[1:, 1], ur.ideal_tau[1:, 1])[0, 1]
    assert lagged > 0.999 and ur.notes["delay_samples"] == 1


ELASTIC = 1  # the plant's elastic shoulder (realistic_logs.default_plant)


def test_the_interval_covers_another_trajectory_of_a_plant_unlike_the_model(logs):
    """Identified on one excitation of the UR-like plant (two periods of 3 s), the nominal 95 %
    interval holds at least 90 % of every rigid joint's samples of another excitation of the same
    arm, never seen: the out-of-fold blocks cut by phase of the period are motion the fit never saw,
    and the fold covariance widens the interval where the new motion leans on what the data
    determined least (identification/intervals.py). With contiguous blocks, each of which the
    second period repeats, the same interval held 59-92 % per joint on 10 s logs
    (bench/realdata/interval_coverage.md). The elastic shoulder is left out (no rigid model
    follows it)."""
    from robodyn.identification.intervals import calibration
    from robodyn.identification.methods import identification_document

    A, B = logs["ur"]
    model = load_model("ur5e")
    doc, _, _ = identification_document(model, [A.data], IdentificationConfig(), "wls")
    rm = doc["residual_model"]
    assert rm["out_of_fold"] and "phase" in rm["of"] and rm["fold_covariance"] is not None
    cal = calibration(model, doc, [B.data])
    inside = np.delete(np.asarray(cal["inside_fraction"]), ELASTIC)
    print(f"UR-like, another trajectory: inside {np.round(np.asarray(cal['inside_fraction']) * 100, 1)} %")
    assert np.all(inside >= 0.90), inside
    assert cal["note"] is not None and "only on out-of-fold blocks of the identification data" in cal["note"]
