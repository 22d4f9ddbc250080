"""Stepwise identification of flexible joints (Chen et al. 2021) from recordings.

The recordings come from identification.flexible_joints.FlexiblePlant, a plant unlike the identifier's
model: a hardening spring (the identifier fits a linear K), Stribeck friction with position ripple
and load-dependent Coulomb friction (the identifier fits viscous + Coulomb), a torque-sensor zero
that drifts (the identifier fits a constant M0), quantised encoders with different zeros, a noisy
quantised motor current, sampling instants that jitter by up to 20 % of the period, and dropped
bursts of samples. The identified model is judged on a held-out recording against what its sensors
measured (noisy), and its parameters against the plant's where the plant has a matching value.
"""

import json

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.identification import flexible_joints
from robodyn.identification.base_params import base_parameters
from robodyn.identification.data import FlexibleLog, load_flexible, save_flexible
from robodyn.identification.regressor import ColumnSpec, standard_parameter_vector
from robodyn.identification.stepwise_recorded import identify_recorded
from robodyn.robot.loader import load_model

# short enough for the suite: three sweep speeds, four static poses, two excitation periods
EXPERIMENT = {"speeds": (0.15, 0.3, 0.45), "poses": 4, "periods": 2}


@pytest.fixture(scope="module")
def twolink():
    return load_model("twolink")


@pytest.fixture(scope="module")
def plant(twolink):
    return flexible_joints.chen2021_plant(twolink, seed=0)


@pytest.fixture(scope="module")
def recordings(twolink, plant):
    ident = flexible_joints.record_plant(plant, flexible_joints.chen2021_experiment(twolink, seed=0, **EXPERIMENT), seed=0)
    held = flexible_joints.record_plant(plant, flexible_joints.chen2021_experiment(twolink, seed=5, **EXPERIMENT), seed=1)
    return ident, held


@pytest.fixture(scope="module")
def result(twolink, recordings):
    ident, held = recordings
    return identify_recorded(twolink, [ident.log, held.log])


def _params(doc):
    return {p["name"]: p for p in doc["parameters"]}


def test_sub_systems_run_in_the_papers_order_with_rank_and_condition(result):
    steps = [(row["step"], row["subsystem"].split(" ")[0]) for row in result["subsystem_table"]]
    assert steps == [(1, "friction"), (1, "friction"), (2, "link"), (3, "offset"), (4, "motor"), (4, "motor"),
                     (5, "stiffness"), (5, "stiffness"), ("-", "motor"), ("-", "motor")]
    assert [s["subsystem"] for s in result["order"]] == ["friction", "link", "offset", "motor", "stiffness"]
    solved = [row for row in result["subsystem_table"] if row["step"] != "-"]
    assert all(row["rank"] == row["columns"] for row in solved)
    # eqs. 13-16: stacking motor and stiffness makes the observation matrix far worse conditioned
    # than either alone, which is why they are identified separately
    stacked = [row for row in result["subsystem_table"] if row["step"] == "-"]
    for k, row in enumerate(stacked):
        alone = max(r["cond"] for r in solved if r["step"] in (4, 5) and r["unit"] in (f"motor {k + 1}",
                                                                                          f"joint{k + 1}"))
        assert row["cond"] > 100 * alone
    # every parameter carries a standard deviation
    assert all(p["std"] is not None and p["std"] > 0 for p in result["parameters"])


def test_predictions_match_what_the_sensors_measured_on_a_held_out_recording(result, recordings):
    _, held = recordings
    (v,) = result["validation"]
    sensor_floor = held.sensor_noise_floor  # noise and zero drift of the torque sensor
    current_floor = held.current_noise_floor
    assert v["samples"] > 0.9 * held.log.count
    spring = v["joint_torque_sensor"]["from_spring"]
    # the spring (eq. 10) from the two encoders predicts the measured torque to near its noise,
    # although the plant's spring stiffens by 30 % at full load and the identifier's is linear
    assert np.all(np.asarray(spring["rmse"]) < 2.2 * sensor_floor)
    link = v["joint_torque_sensor"]["from_link_model"]
    # the link model misses the plant's Stribeck dip, friction ripple and load friction
    assert np.all(np.asarray(link["rmse"]) < 6.0 * sensor_floor)
    assert min(link["correlation"]) > 0.995
    motor = v["motor"]["from_measured_joint_torque"]
    assert np.all(np.asarray(motor["rmse"]) < 5.0 * current_floor)
    assert min(motor["correlation"]) > 0.99
    chained = v["motor"]["from_link_model"]
    assert np.all(np.asarray(chained["rmse"]) < 7.0 * current_floor)


def test_parameters_against_the_plant(result, plant, recordings, twolink):
    p = _params(result)
    ident, _ = recordings
    # the linear K lies between the plant's small-deflection stiffness and its tangent at full load
    for j in range(2):
        assert plant.stiffness[j] < p[f"K{j + 1}"]["value"] < 1.05 * plant.stiffness[j]
        assert p[f"KT{j + 1}"]["value"] == pytest.approx(plant.torque_constant[j], rel=0.04)
        # the sensor zero drifts: M0 is its mean over the recording, within the drift's spread
        assert p[f"M0_{j + 1}"]["value"] == pytest.approx(ident.sensor_zero[:, j].mean(), abs=0.05)
        # the motor encoder's zero relative to the link encoder's
        assert result["subsystems"]["stiffness"]["per_joint"][j]["encoder_offset"]["value"] == pytest.approx(
            plant.encoder_offset[j], abs=2e-4)
        # Coulomb friction of a Stribeck law: between its Coulomb level and its static peak
        lf, mf = plant.link_friction, plant.motor_friction
        assert lf["fc"][j] < p[f"FC{j + 1}"]["value"] < lf["fs"][j]
        assert 0.9 * mf["fc"][j] < p[f"FCm{j + 1}"]["value"] < mf["fs"][j]
    base = base_parameters(twolink, ColumnSpec())
    truth = dict(zip(base.names, base.projection @ standard_parameter_vector(plant.link, ColumnSpec())))
    for name in ("MX1R", "MX2"):  # the gravity parameters that carry the torque
        assert p[name]["value"] == pytest.approx(truth[name], rel=0.02)
    for name in ("ZZ1R", "ZZ2"):  # inertia: accelerations of 0.7 rad/s^2 against friction ripple
        assert p[name]["value"] == pytest.approx(truth[name], rel=0.25)
    # the rotor inertia drowns in the motor friction's ripple: the result says so rather than hiding it
    assert any(not p[f"B{k}"].get("physical", True) or not p[f"B{k}"].get("significant", True) for k in (1, 2))


def test_recording_format_round_trip_and_clear_errors(recordings, twolink, tmp_path):
    ident, _ = recordings
    log = ident.log
    short = FlexibleLog(log.t[:500], log.q[:500], log.tau[:500], log.qm[:500], current=log.current[:500])
    for suffix in ("csv", "npz"):
        back = load_flexible(save_flexible(short, tmp_path / f"r.{suffix}"), twolink)
        for name in ("t", "q", "tau", "qm", "current"):
            np.testing.assert_allclose(getattr(back, name), getattr(short, name), rtol=1e-10, atol=1e-12)
    text = (tmp_path / "r.csv").read_text().splitlines()
    header = text[0].split(",")
    assert header[:5] == ["t", "q1", "q2", "tau1", "tau2"]

    def write(columns, name):
        keep = [header.index(c) for c in columns]
        rows = [",".join(line.split(",")[k] for k in keep) for line in text]
        path = tmp_path / name
        path.write_text("\n".join(rows) + "\n")
        return path

    with pytest.raises(ValueError, match=r"missing column 'tau1' \(joint torque sensor"):
        load_flexible(write(["t", "q1", "q2", "qm1", "qm2"], "no_tau.csv"), twolink)
    with pytest.raises(ValueError, match=r"missing column 'qm2'"):
        load_flexible(write(["t", "q1", "q2", "tau1", "tau2", "qm1"], "half_qm.csv"), twolink)
    with pytest.raises(ValueError, match=r"3 joints but the robot has 2|missing column"):
        load_flexible(write(["t", "q1", "q2", "tau1", "tau2"], "ok.csv"), load_model("ur5e"))
    bad = short.q.copy()
    bad[7, 1] = np.nan
    with pytest.raises(ValueError, match=r"q2 is NaN or infinite at sample 7"):
        FlexibleLog(short.t, bad, short.tau)
    # Franka reports the motor position on the link side (theta): it goes through the transmission
    theta = short.qm / np.diag(twolink.transmission.matrix)
    path = tmp_path / "theta.npz"
    np.savez(path, t=short.t, q=short.q, tau=short.tau, theta=theta)
    np.testing.assert_allclose(load_flexible(path, twolink).qm, short.qm, rtol=1e-12)


def test_daemon_recording_with_franka_signals(recordings, twolink, tmp_path):
    """A daemon recording (MCAP) with Franka's signal names: q, tau (tau_J), theta; no motor current,
    so the motor sub-system is skipped and said to be, the rest identified."""
    from robodyn.recording.samples import PHASE_EXECUTE
    from robodyn.recording import RecordingWriter

    ident, _ = recordings
    log = ident.log
    R = np.asarray(twolink.transmission.matrix)
    signals = [{"name": s, "width": 2, "unit": u} for s, u in (("q", "rad"), ("tau", "N.m"), ("theta", "rad"))]
    meta = {"run_id": "flex", "driver": {"driver": "franka", "signals": signals}, "rate_hz": 1000.0,
            "robot": {"name": "twolink"}}
    values = np.hstack([log.q, log.tau, log.qm @ np.linalg.inv(R).T])
    n = values.shape[0]
    path = tmp_path / "flex.mcap"
    w = RecordingWriter(path, meta, values.shape[1])
    seq = np.arange(1, n + 1, dtype=np.uint64)
    w.append(seq, log.t, seq.astype(np.int64) * 1_000_000, np.full(n, PHASE_EXECUTE, np.uint8), values)
    w.close({"status": "completed", "expected_samples": n, "recorded_samples": n, "lost_samples": 0})
    back = load_flexible(path, twolink)
    assert back.drive is None
    np.testing.assert_allclose(back.qm, log.qm, rtol=1e-9, atol=1e-9)
    doc = identify_recorded(twolink, [path])
    steps = {s["subsystem"]: s for s in doc["order"]}
    assert "no drive signal" in steps["motor"]["skipped"] and "skipped" not in steps["stiffness"]
    assert doc["model"]["stiffness"][0] == pytest.approx(3000, rel=0.05)
    # without a torque sensor the method cannot run: the error names the missing signal
    meta["driver"]["signals"] = signals[:1] + signals[2:]
    path2 = tmp_path / "no_tau.mcap"
    w = RecordingWriter(path2, meta, 4)
    w.append(seq, log.t, seq.astype(np.int64) * 1_000_000, np.full(n, PHASE_EXECUTE, np.uint8),
             np.hstack([log.q, values[:, 4:]]))
    w.close({"status": "completed", "expected_samples": n, "recorded_samples": n, "lost_samples": 0})
    with pytest.raises(ValueError, match=r"missing signal 'tau' \(joint torque sensor"):
        load_flexible(path2, twolink)


def test_identify_command_runs_stepwise(recordings, tmp_path, capsys):
    ident, held = recordings
    a = save_flexible(ident.log, tmp_path / "ident.csv")
    b = save_flexible(held.log, tmp_path / "held.npz")
    out = tmp_path / "stepwise.json"
    assert main(["identify", str(a), "--robot", "twolink", "--method", "stepwise", "--holdout", str(b),
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Chen" in text and "rank/cols" in text and "motor + stiffness stacked" in text
    assert "K1" in text and "held out" in text
    doc = json.loads(out.read_text())
    assert doc["method"] == "stepwise" and len(doc["validation"]) == 1
    # the same processing options as every method: a given cut-off is used and recorded
    assert main(["identify", str(a), "--robot", "twolink", "--method", "stepwise", "--cutoff", "20",
                 "--torque-constant", "0.11,0.09", "--json", "--out", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["processing"]["cutoff_hz"] == 20 and doc["torque_constant_source"] == "given"
    assert "KT1" not in {p["name"] for p in doc["parameters"]}
    # options without a meaning for the method are refused, in one line
    assert main(["identify", str(a), "--robot", "twolink", "--method", "stepwise", "--friction", "stribeck",
                 "--out", str(out)]) == 2
    assert "friction" in capsys.readouterr().err
