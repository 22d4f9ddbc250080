"""The UR driver with the real ur_rtde 1.6.5 against the project's simulated UR controller on
loopback (RTDE 30004, dashboard 29999, script 30003 on a private 127.x.y.z address).

The controller runs with SCHED_FIFO (``--rt-priority``), and so do ur_rtde's receive thread (the
driver's ``rt_priority`` option) and the thread that reads the driver (``realtime`` here; the
daemon's ``[loop] rt_priority`` there): ur_rtde keeps only the newest package, so on a 2-core host
shared with other test runs a reader that waits more than one period loses samples.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rtde_receive", reason="pip install 'robodyn[ur]'")

from robodyn.drivers.base import ConnectionLost, JointCommand, ProtectiveStop  # noqa: E402
from robodyn.drivers.pacing import realtime  # noqa: E402
from robodyn.drivers.registry import create_driver  # noqa: E402
from robodyn.identification.drive_gains import estimate_drive_gains  # noqa: E402

from .conftest import Daemon, disconnect_mid_run, execute_npz, fourier_excitation, run_identify  # noqa: E402
from .peers import free_loopback, start_ur_controller  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "excitation"

pytestmark = pytest.mark.timeout(240)
RT = ("--rt-priority", "20")
READER_PRIORITY = 10


def dashboard(host: str, command: str) -> str:
    with socket.create_connection((host, 29999), timeout=5) as s:
        f = s.makefile("rwb", buffering=0)
        f.readline()
        f.write(command.encode() + b"\n")
        return f.readline().decode().strip()


@pytest.fixture(scope="module")
def ur(tmp_path_factory):
    peer = start_ur_controller(tmp_path_factory.mktemp("ur"), *RT)
    yield peer
    peer.stop()


_open_drivers: list = []


def make(host: str, **options):
    d = create_driver("ur", {"host": host, "rt_priority": READER_PRIORITY, **options})
    _open_drivers.append(d)
    return d


@pytest.fixture(autouse=True)
def _close_drivers():
    """A failed assertion must not leave a control client holding the controller's input registers
    (the next test's control interface would get IN_USE, as on a real UR)."""
    yield
    while _open_drivers:
        d = _open_drivers.pop()
        try:
            d.close()
        except Exception:
            pass


def test_stream_500_hz_without_losing_a_sample(ur):
    d = make(ur.host)
    d.connect()
    times = np.empty(1500)
    # the reading thread is real-time, as the daemon's driver process is ([loop] rt_priority)
    with realtime(READER_PRIORITY) as scheduler:
        for i in range(times.size):
            times[i] = d.read().robot_time
    diag = d.diagnostics()
    assert diag["frequency"] == 500.0 and diag["polyscope"].startswith("5.23")
    steps = np.round(np.diff(times) / 0.002).astype(int)
    # the accounting is exact whatever the host does: no repeats, every gap counted
    assert steps.min() == 1 and diag["stream"]["lost"] == int((steps - 1).sum())
    assert diag["stream"]["received"] == 1500
    load = os.getloadavg()[0]
    if diag["stream"]["lost"] and ("refused" in scheduler or load > os.cpu_count()):
        # ur_rtde keeps only the newest package, so a reader stalled for > 2 ms loses samples. On this
        # VM's kernel (no full preemption) even a SCHED_FIFO reader stalled 6-13 ms when more tasks
        # than cores were runnable (docs/drivers.md); counted exactly above, never silent
        pytest.xfail(f"{diag['stream']['lost']} of 1500 samples lost, all counted: reader on {scheduler}, "
                     f"load {load:.1f} on {os.cpu_count()} cores")
    # judged by the controller's timestamps: consecutive, none repeated, none missing
    assert steps.max() == 1, np.unique(steps, return_counts=True)
    s = d.state
    assert np.allclose(s.tau, d.drive_gains * s.signal("current"))
    assert s.signal("robot_mode")[0] == 7 and s.signal("safety_mode")[0] == 1
    assert np.all(s.signal("temperature") > 20)
    d.close()


def test_a_gap_is_counted_exactly(ur):
    d = make(ur.host)
    d.connect()
    with realtime(READER_PRIORITY):
        for _ in range(50):
            d.read()
        assert dashboard(ur.host, "sim skip 7") == "Skipping 7 packages"
        lost = []
        for _ in range(100):
            lost.append(d.read().signal("lost")[0])
    assert sum(lost) == 7 and max(lost) == 7  # one sample carries the whole gap
    assert d.diagnostics()["stream"]["lost"] == 7
    d.close()


def test_a_stale_stream_is_a_lost_connection(ur):
    """ur_rtde's getters keep answering with the last values; the frozen timestamp gives it away."""
    d = make(ur.host)
    d.connect()
    d.read()
    dashboard(ur.host, "sim freeze 1500")
    t0 = time.monotonic()
    with pytest.raises(ConnectionLost) as e:
        for _ in range(2000):
            d.read()
    assert time.monotonic() - t0 < 1.0 and "stale stream" in str(e.value)
    assert e.value.state["last_states"]
    time.sleep(1.6)
    d.close()


def test_servoj_tracks_and_protective_stop_aborts_with_partial_states(ur):
    with realtime(READER_PRIORITY):
        _servoj_and_protective_stop(ur.host)


def _servoj_and_protective_stop(host: str) -> None:
    d = make(host)
    d.connect()
    d.start("position")
    s = d.read()
    q0 = s.q.copy()
    cmd = JointCommand(6)
    for k in range(500):
        cmd.q[:] = q0
        cmd.q[0] += 0.1 * (1 - np.cos(np.pi * k / 500)) / 2
        d.write(cmd)
        s = d.read()
    assert abs(s.q[0] - q0[0] - 0.1) < 0.01
    dashboard(host, "sim protective stop")
    with pytest.raises(ProtectiveStop) as e:
        for _ in range(100):
            d.write(cmd)
            d.read()
    assert "PROTECTIVE_STOP" in str(e.value) or "protective stop" in str(e.value)
    assert len(e.value.state["last_states"]) == 50
    d.stop()
    assert dashboard(host, "unlock protective stop") == "Protective stop releasing"
    time.sleep(0.05)
    d.read()
    d.start("position")  # the control script is restarted
    cmd.q[:] = d.read().q
    # samples that arrived while nobody read (sleep, script restart) are counted, not hidden
    lost_before = d.diagnostics()["stream"]["lost"]
    assert lost_before > 0
    for _ in range(50):
        d.write(cmd)
        d.read()
    assert d.diagnostics()["stream"]["lost"] == lost_before
    d.stop()
    d.close()


def test_bad_configuration_is_one_sentence(tmp_path, monkeypatch):
    nobody = free_loopback((29999, 30003, 30004))
    with pytest.raises(ConnectionLost) as e:
        make(nobody).connect()
    assert f"cannot reach a UR controller at {nobody}:30004" in str(e.value) and "\n" not in str(e.value)
    off = start_ur_controller(tmp_path, "--robot-mode", "POWER_OFF")
    try:
        with pytest.raises(ValueError) as e:
            make(off.host).connect()
        assert "robot mode POWER_OFF" in str(e.value) and "brake release" in str(e.value)
    finally:
        off.stop()
    with pytest.raises(ValueError) as e:
        create_driver("ur", {"host": "127.0.0.1", "servo_gain": 5})
    assert str(e.value).startswith("driver.servo_gain")
    import sys

    monkeypatch.setitem(sys.modules, "rtde_control", None)
    monkeypatch.delitem(sys.modules, "robodyn.drivers.ur", raising=False)
    with pytest.raises(ValueError) as e:
        create_driver("ur", {})
    assert "pip install 'robodyn[ur]'" in str(e.value)


def _servo_run(host: str, q_ref: np.ndarray) -> dict:
    d = make(host)
    d.connect()
    d.start("position")
    d.read()  # the start state, against which the first target is checked
    cmd = JointCommand(6)
    out = {"q": [], "qd": [], "current": [], "t": []}
    with realtime(READER_PRIORITY):
        for q in q_ref:
            cmd.q[:] = q
            d.write(cmd)
            s = d.read()
            out["q"].append(s.q.copy())
            out["qd"].append(s.qd.copy())
            out["current"].append(s.signal("current").copy())
            out["t"].append(s.robot_time)
    # (the global estimate models each run at its own states and timestamps, so a lost sample only
    # costs a row; completeness has its own test)
    d.stop()
    d.close()
    return {k: np.array(v) for k, v in out.items()}


def test_drive_gains_from_a_load_unload_pair(tmp_path):
    """Same seed -> same true gains on both controllers; one carries a 3 kg payload. The global
    (Gautier-Briot) estimate finds all six; dynamic_calibration's difference is printed beside it
    (it swung by up to 19 % between repetitions while the controller still jumped its target at
    program start; exact since, when the two servo runs match)."""
    from robodyn.identification.drive_gains import difference_drive_gains
    from robodyn.robot.loader import load_model
    from robodyn.trajectory import trajectory_from_dict

    model = load_model("ur5e")
    q0 = np.array([0.0, -1.57, 1.57, -1.57, -1.57, 0.0])
    traj = trajectory_from_dict(fourier_excitation(q0, [0.3, 0.25, 0.25, 0.3, 0.3, 0.3], 4.0, 5, "ur5e"))
    t = np.arange(0, 4.0, 0.002)
    q_ref = traj.evaluate(t)[0]
    runs, truth = [], None
    for payload in ("0", "3.0"):
        peer = start_ur_controller(tmp_path, *RT, "--seed", "3", "--payload-kg", payload, "--payload-com", "0.1,0,0.05")
        try:
            truth = np.array(json.loads(dashboard(peer.host, "sim status"))["drive_gains"])
            runs.append(_servo_run(peer.host, q_ref))
        finally:
            peer.stop()
    est = estimate_drive_gains(model, runs[0], runs[1], 3.0, (0.1, 0.0, 0.05))
    k = np.array(est["gains"])
    rel = np.abs(k - truth) / truth
    n = min(r["q"].shape[0] for r in runs)
    for r in runs:  # the difference method takes accelerations as given
        r["qdd"] = np.gradient(r["qd"], 0.002, axis=0)
    diff = difference_drive_gains(model, *({key: r[key][:n] for key in ("q", "qd", "qdd", "current")} for r in runs),
                                  3.0, (0.1, 0.0, 0.05))
    print("drive gains true", np.round(truth, 3), "\n global", np.round(k, 3), "rel. error", np.round(rel, 4),
          "rel. std", np.round(est["relative_std"], 4), "\n difference", np.round(diff["gains"], 3))
    # measured over ~12 repetitions: 0.01-0.1 % on joints 2-6, 0.6-1 % on joint 1 (the base carries
    # the least payload torque). One repetition under heavy host load (a soak beside it): joint 1
    # reported not identifiable (relative std 2.5 %), joint 2 off by 2 %
    assert np.isfinite(k[1:5]).all(), est["notes"]
    assert np.nanmax(rel) < 0.03, (k, truth)


def test_servoj_excitation_through_the_daemon_record_identify_and_disconnect(tmp_path):
    peer = start_ur_controller(tmp_path, *RT, "--seed", "1")
    daemon = None
    try:
        daemon = Daemon(tmp_path, "ur5e", "ur", {"host": peer.host, "robot": "ur5e"}, rt_priority=10)
        c = daemon.client
        q0 = daemon.q()
        amp = [0.3, 0.25, 0.25, 0.3, 0.3, 0.3]
        recs = []
        # two designed excitations (tests/data/excitation/README.md): one to identify, one held out
        for seed in ("identify", "validate"):
            doc = json.loads((DATA / f"ur5e_{seed}.json").read_text())
            final = c.wait_run(c.submit_run("ur5e", doc, label=f"ur excitation {seed}")["run_id"], timeout=90)
            assert final["state"] == "completed", (final, daemon.log_text()[-3000:])
            s = final["summary"]
            assert s["lost_samples"] == 0 and s["executed_samples"] == s["trajectory_samples"]
            # servoJ tracking in the simulated controller degrades with host load (0.058 rad seen with the
            # whole suite running); 0.1 rad still proves the excitation was followed
            assert s["tracking"]["max_overall_rad"] < 0.1
            from robodyn.daemon.recording import load_recording

            rec = load_recording(s["recording"])
            lost = rec.signal("lost")[:, 0]
            # every controller sample is either recorded or counted where it went missing: the
            # controller clock advances by exactly (1 + lost) periods between recorded samples.
            # (Zero on a quiet host; a 2-core host shared with other test runs can stall the loop.)
            assert np.allclose(np.diff(rec.robot_time), 0.002 * (1 + lost[1:]))
            assert lost.sum() <= 0.005 * lost.size, lost.sum()
            print(f"ur run {seed}: {lost.size} samples recorded, {int(lost.sum())} controller samples lost")
            recs.append(execute_npz(s["recording"], tmp_path / f"ur{seed}.npz"))
        result = tmp_path / "ur5e.json"
        run_identify("identify", "--robot", "ur5e", recs[0], "--out", str(result))
        val = run_identify("validate", str(result), recs[1])
        print("ur held-out validation:", val)
        # nominal drive gains (the controller's true ones differ by ~5 %): held-out error measured 3.5 %
        # (1.6 % with the true gains). 8.4 % in a CI run whose identification recording lost one
        # sample: the simulated controller's servo caught up in one tick and its stiff joint
        # controller answered with a 280 N.m torque spike (it does not model servoJ's lookahead
        # smoothing), an outlier the least-squares fit absorbed
        assert val["relative_error_total"] < 0.15, val

        # a disconnect mid-run: the controller dies; the run ends, the partial recording is kept
        doc = fourier_excitation(q0, amp, duration=6.0, seed=23, robot="ur5e")
        assert 400 < disconnect_mid_run(c, peer, "ur5e", doc) < 3000
    finally:
        if daemon is not None:
            daemon.stop()
        peer.stop()
