"""Input a real arm's log may come in: rates up to 5 kHz, and motor currents instead of joint
torques. A 5 kHz log of a motion is identified as its 1 kHz copy (every 5th sample) is: the same
cut-off to within a factor 2 and the same parameters within their standard deviations. A current
log needs the drive gains (their scale cannot come from one run: it is shared with the inertias),
and without them, or with unusable ones, is refused in one line naming the columns and the option.

Data: plant, not the model: the Panda's inertias perturbed by up to 20 %, Stribeck friction the
model's columns lack, torque noise 0.05 N.m (tests/identification/test_torque_sign.plant_torque)."""

from __future__ import annotations

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.identification.config import IdentificationConfig
from robodyn.identification.data import load_dataset, save_dataset
from robodyn.identification.methods import identification_result
from robodyn.identification.signals import SampledData
from robodyn.robot.loader import load_model
from tests.identification.test_gravity_check import motion
from tests.identification.test_torque_sign import plant_torque

GAINS = np.array([9.0, 10.5, 8.5, 9.0, 9.5, 10.0, 11.0])  # N.m/A, one per joint


@pytest.fixture(scope="module")
def panda():
    return load_model("panda")


@pytest.fixture(scope="module")
def log_5khz(panda):
    q, qd, qdd = motion(panda, seconds=12.0, rate=5000.0)
    return SampledData(np.arange(q.shape[0]) / 5000.0, q, plant_torque(panda, q, qd, qdd))


def test_a_5_khz_log_is_identified_as_its_1_khz_copy(panda, log_5khz):
    fast = log_5khz
    slow = fast.select(slice(0, fast.count, 5))  # the same motion and noise, at 1 kHz
    assert 1.0 / np.median(np.diff(slow.t)) == pytest.approx(1000.0)
    results = [identification_result(panda, [d], IdentificationConfig(), "wls", choose_method=True)[0]
               for d in (fast, slow)]
    cutoffs = [r.config.processing.cutoff_hz for r in results]
    # the cut-off belongs to the motion, not to the rate: a rule or a filter design that counted
    # in samples, not seconds, would move it five-fold
    assert 0.5 < cutoffs[0] / cutoffs[1] < 2.0, cutoffs
    assert cutoffs[0] <= 0.4 * 2500.0 and cutoffs[0] < 0.02 * 5000.0, cutoffs
    fit_fast, fit_slow = results
    assert fit_fast.parameter_names() == fit_slow.parameter_names()
    z = (fit_fast.values - fit_slow.values) / np.hypot(fit_fast.estimate.std, fit_slow.estimate.std)
    assert np.all(np.abs(z) < 3.0), (fit_fast.parameter_names()[int(np.argmax(np.abs(z)))], float(np.max(np.abs(z))))


def _current_log(path, data: SampledData, suffix: str):
    """``data``'s torques as the motor currents of drives with GAINS: t, q1.., current1.."""
    current = data.tau / GAINS
    if suffix == ".npz":
        np.savez(path, t=data.t, q=data.q, current=current)
        return path
    names = ["t"] + [f"q{j + 1}" for j in range(data.dof)] + [f"current{j + 1}" for j in range(data.dof)]
    np.savetxt(path, np.column_stack([data.t, data.q, current]), delimiter=",", header=",".join(names),
               comments="", fmt="%.17g")
    return path


@pytest.fixture(scope="module")
def short_log(log_5khz):
    return log_5khz.select(slice(0, 6000, 5))  # 6 s at 1 kHz: enough to load, not to identify


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_currents_times_the_given_gains_are_the_torques(tmp_path, panda, short_log, suffix):
    path = _current_log(tmp_path / f"currents{suffix}", short_log, suffix)
    got = load_dataset(path, drive_gains=GAINS.tolist(), model=panda)
    np.testing.assert_allclose(got.tau, short_log.tau, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got.q, short_log.q)


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_a_current_log_without_gains_is_refused_in_one_line(tmp_path, capsys, short_log, suffix):
    path = _current_log(tmp_path / f"currents{suffix}", short_log, suffix)
    assert main(["identify", str(path), "--robot", "panda", "--out", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len([ln for ln in err if not ln.startswith("note:")]) == 1
    line = err[-1]
    assert str(path) in line and "motor currents" in line and "--drive-gains K1,...,K7" in line
    assert ("current1..current7" if suffix == ".csv" else "'current'") in line
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("gains, said", [
    ("9,10", "expected 7 values (N.m/A, one per joint), got 2"),
    ("9,0,8.5,9,9.5,10,11", "joint 2's gain must be a finite, nonzero number of N.m/A, got 0"),
    ("9,10.5,8.5,9,9.5,10,nan", "joint 7's gain must be a finite, nonzero number of N.m/A, got nan"),
])
def test_unusable_gains_are_refused_naming_the_joint(tmp_path, capsys, short_log, gains, said):
    path = _current_log(tmp_path / "currents.csv", short_log, ".csv")
    assert main(["identify", str(path), "--robot", "panda", "--drive-gains", gains,
                 "--out", str(tmp_path / "r.json")]) == 2
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if not ln.startswith("note:")]
    assert len(err) == 1 and said in err[0]


def test_gains_given_for_a_torque_log_are_said_to_be_unused(tmp_path, short_log):
    path = save_dataset(short_log, tmp_path / "torques.csv")
    with pytest.warns(UserWarning, match=r"drive gains not used: it has torque columns tau1\.\.tau7"):
        got = load_dataset(path, drive_gains=GAINS.tolist())
    np.testing.assert_array_equal(got.tau, short_log.tau)  # the torques as they are, not scaled


def _gain_runs(rate: float):
    """An unloaded and a loaded run of a UR5e at ``rate`` (tests/identification/test_drive_gains.py's
    arm: the RNEA with rotor inertia and friction, currents through gains the fit does not know)."""
    from tests.identification.conftest import rest_to_rest_fourier
    from tests.identification.test_drive_gains import FRICTION, GAINS as UR_GAINS, PAYLOAD

    from robodyn.identification.drive_gains import payload_torques
    from robodyn.robot.dynamics import inverse_dynamics

    ur5e = load_model("ur5e")
    runs = []
    for seed, payload in ((4, None), (5, PAYLOAD)):
        t, q, qd, qdd, _ = rest_to_rest_fourier(ur5e, seed=seed, amplitude=0.25).sample(rate)
        tau = inverse_dynamics(ur5e, q, qd, qdd, rotor_inertia=ur5e.rotor_inertia, friction=FRICTION)
        if payload:
            tau = tau + payload_torques(ur5e, q, qd, qdd, payload["mass"], payload["com"])
        noise = 0.002 * np.random.default_rng(seed).normal(size=tau.shape)
        runs.append({"t": t, "q": q, "qd": qd, "qdd": qdd, "current": tau / UR_GAINS + noise,
                     **({"payload": payload} if payload else {})})
    return ur5e, runs, UR_GAINS


def test_drive_gains_from_a_100_hz_pair_and_a_too_slow_one_refused_in_the_runs_terms():
    from robodyn.identification.drive_gains import global_drive_gains

    model, runs, gains = _gain_runs(100.0)
    k = np.array(global_drive_gains(model, runs)["gains"])
    assert np.max(np.abs(k - gains) / gains) < 2e-3, k
    model, runs, _ = _gain_runs(40.0)  # its Nyquist frequency, 20 Hz, lies below the fit's 25 Hz low-pass
    with pytest.raises(ValueError) as err:
        global_drive_gains(model, runs)
    assert str(err.value) == ("drive gains: runs[0] is sampled at 40 Hz; the fit low-passes its signals at 25 Hz "
                              "and needs a rate above 50 Hz")
