"""Drive gains from runs without and with a known payload: the load/unload difference of
dynamic_calibration and the Gautier-Briot global identification, on data from the independent RNEA
(not the regressor), with gains and friction the estimators do not know."""

import numpy as np
import pytest

from robodyn.identification.drive_gains import (difference_drive_gains, estimate_drive_gains, global_drive_gains,
                                                payload_torques)
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.loader import load_model

from .conftest import rest_to_rest_fourier

GAINS = np.array([12.3, 12.2, 13.1, 8.76, 8.33, 10.0])
PAYLOAD = {"mass": 3.0, "com": [0.1, 0.0, 0.05]}
FRICTION = {"viscous": np.array([2.0, 2.5, 1.5, 0.6, 0.5, 0.4]), "coulomb": np.array([3.0, 3.5, 2.0, 1.0, 0.8, 0.7]),
            "offset": np.array([0.1, -0.2, 0.05, 0.0, 0.02, -0.03])}


@pytest.fixture(scope="module")
def ur5e():
    return load_model("ur5e")


def run(model, traj, payload=None, noise=0.0, seed=0):
    t, q, qd, qdd, _ = traj.sample(500)
    tau = inverse_dynamics(model, q, qd, qdd, rotor_inertia=model.rotor_inertia, friction=FRICTION)
    if payload:
        tau = tau + payload_torques(model, q, qd, qdd, payload["mass"], payload["com"])
    current = tau / GAINS + noise * np.random.default_rng(seed).normal(size=tau.shape)
    out = {"t": t, "q": q, "qd": qd, "qdd": qdd, "current": current}
    if payload:
        out["payload"] = payload
    return out


def test_difference_recovers_the_gains_when_both_runs_follow_the_same_trajectory(ur5e):
    traj = rest_to_rest_fourier(ur5e, seed=4, amplitude=0.25)
    est = difference_drive_gains(ur5e, run(ur5e, traj), run(ur5e, traj, PAYLOAD), PAYLOAD["mass"], PAYLOAD["com"])
    k = np.array(est["gains"])
    ok = np.isfinite(k)
    assert ok[1:3].all()  # the payload's weight always loads shoulder and elbow
    assert np.allclose(k[ok], GAINS[ok], rtol=1e-9)
    assert all("not identifiable" in note for note in est["notes"])


def test_global_recovers_every_gain_from_different_trajectories_where_the_difference_cannot(ur5e):
    """The two runs need not match: the arm's own torque is modelled at each run's own states."""
    unload = run(ur5e, rest_to_rest_fourier(ur5e, seed=4, amplitude=0.25), noise=0.002, seed=1)
    load = run(ur5e, rest_to_rest_fourier(ur5e, seed=5, amplitude=0.25), PAYLOAD, noise=0.002, seed=2)
    est = global_drive_gains(ur5e, [unload, load])
    k = np.array(est["gains"])
    assert np.all(np.isfinite(k)), est["notes"]
    assert np.max(np.abs(k - GAINS) / GAINS) < 2e-3, k
    # its stated uncertainty covers the actual error
    assert np.all(np.abs(k - GAINS) / GAINS < 5 * np.array(est["relative_std"]) + 1e-4)
    assert est["runs"] == 2 and est["loaded_runs"] == 1

    pair = {key: load[key][: unload["q"].shape[0]] for key in ("q", "qd", "qdd", "current")}
    diff = np.array(difference_drive_gains(ur5e, unload, pair, PAYLOAD["mass"], PAYLOAD["com"])["gains"])
    assert np.nanmax(np.abs(diff - GAINS) / GAINS) > 0.1  # its assumption broken: far off


def test_global_is_the_default_and_takes_the_pair(ur5e):
    traj = rest_to_rest_fourier(ur5e, seed=6, amplitude=0.25)
    est = estimate_drive_gains(ur5e, run(ur5e, traj), run(ur5e, traj, PAYLOAD), PAYLOAD["mass"], PAYLOAD["com"])
    assert est["method"] == "global"
    assert np.allclose(est["gains"], GAINS, rtol=2e-3)


def test_bad_input_names_the_field(ur5e):
    traj = rest_to_rest_fourier(ur5e, seed=6, amplitude=0.25)
    a, b = run(ur5e, traj), run(ur5e, traj, PAYLOAD)
    with pytest.raises(ValueError, match="no run carries a payload"):
        global_drive_gains(ur5e, [a, {k: v for k, v in b.items() if k != "payload"}])
    with pytest.raises(ValueError, match=r"runs\[0\] has no 't'"):
        global_drive_gains(ur5e, [{k: v for k, v in a.items() if k != "t"}, b])
    with pytest.raises(ValueError, match=r"runs\[1\]\.current must have shape"):
        global_drive_gains(ur5e, [a, {**b, "current": b["current"][:, :5]}])
    with pytest.raises(ValueError, match="payload mass: must be > 0"):
        difference_drive_gains(ur5e, a, b, -1.0, PAYLOAD["com"])
    with pytest.raises(ValueError, match="same length"):
        difference_drive_gains(ur5e, a, {k: v[:-5] for k, v in b.items() if k != "payload"}, 3.0, PAYLOAD["com"])
    bad = dict(a)
    bad["current"] = a["current"].copy()
    bad["current"][10, 2] = np.nan
    with pytest.raises(ValueError, match=r"runs\[0\]\.current contains non-finite"):
        global_drive_gains(ur5e, [bad, b])
    with pytest.raises(ValueError, match="method: expected"):
        estimate_drive_gains(ur5e, a, b, 3.0, PAYLOAD["com"], method="magic")


def _write_recording(path, data: dict, trajectory):
    """A daemon recording of a UR-like driver (q, qd, tau, current) carrying ``data``."""
    from robodyn.recording.samples import PHASE_EXECUTE
    from robodyn.recording import RecordingWriter

    signals = [{"name": s, "width": 6, "unit": u} for s, u in
               (("q", "rad"), ("qd", "rad/s"), ("tau", "N.m"), ("current", "A"))]
    meta = {"run_id": path.stem, "driver": {"driver": "ur", "signals": signals}, "rate_hz": 500.0,
            "robot": {"name": "ur5e"}, "trajectory": trajectory.to_dict(robot="ur5e")}
    values = np.hstack([data["q"], data["qd"], data["current"] * 13.0, data["current"]])
    n = values.shape[0]
    w = RecordingWriter(path, meta, values.shape[1])
    seq = np.arange(1, n + 1, dtype=np.uint64)
    w.append(seq, data["t"], seq.astype(np.int64) * 2_000_000, np.full(n, PHASE_EXECUTE, np.uint8), values)
    w.close({"status": "completed", "expected_samples": n, "recorded_samples": n, "lost_samples": 0})


def test_drive_gains_command_reads_daemon_recordings(ur5e, tmp_path, capsys):
    import json

    from robodyn.cli import main

    first, second = (rest_to_rest_fourier(ur5e, seed=s, amplitude=0.25) for s in (4, 5))
    _write_recording(tmp_path / "unloaded.mcap", run(ur5e, first), first)
    _write_recording(tmp_path / "loaded.mcap", run(ur5e, second, PAYLOAD), second)
    args = ["drive-gains", "--robot", "ur5e", "--unloaded", str(tmp_path / "unloaded.mcap"),
            "--loaded", str(tmp_path / "loaded.mcap"), "--payload-mass", "3", "--payload-com", "0.1,0,0.05"]
    assert main(args + ["--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["method"] == "global" and np.allclose(doc["gains"], GAINS, rtol=2e-3)
    assert doc["driver_config"].startswith("[driver]\ndrive_gains = [12.")
    # the difference method refuses recordings of different trajectories
    assert main(args + ["--method", "difference"]) != 0
    assert "ran different trajectories" in capsys.readouterr().err
    _write_recording(tmp_path / "loaded-same.mcap", run(ur5e, first, PAYLOAD), first)
    args[args.index("--loaded") + 1] = str(tmp_path / "loaded-same.mcap")
    assert main(args + ["--method", "difference", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    k = np.array([np.nan if g is None else g for g in doc["gains"]])  # NaN is null in the JSON
    assert np.allclose(k[1:3], GAINS[1:3], rtol=1e-6)
