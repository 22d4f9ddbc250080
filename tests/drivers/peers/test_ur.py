"""The UR driver with the real ur_rtde 1.6.5 against the project's simulated UR controller on
loopback (RTDE 30004, dashboard 29999, script 30003 on a private 127.x.y.z address).

The controller runs with SCHED_FIFO (``--rt-priority``), and so do ur_rtde's receive thread (the
driver's ``rt_priority`` option) and the thread that reads the driver (``realtime`` here; the
daemon's ``[loop] rt_priority`` there): ur_rtde keeps only the newest package, so on a 2-core host
shared with other test runs a reader that waits more than one period loses samples.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rtde_receive", reason="pip install 'robodyn[ur]'")

from robodyn.drivers.base import ConnectionLost, JointCommand, ProtectiveStop  # noqa: E402
from robodyn.drivers.pacing import realtime  # noqa: E402
from robodyn.daemon import protocol as P  # noqa: E402
from robodyn.drivers.registry import create_driver  # noqa: E402
from robodyn.identification.drive_gains import estimate_drive_gains  # noqa: E402

from .conftest import Daemon, disconnect_mid_run, execute_npz, fourier_excitation, run_identify  # noqa: E402
from .peers import free_loopback, start_ur_controller  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data" / "excitation"

# an outer guard only: with numba's caches empty (a fresh clone) the end-to-end tests compile the
# daemon's and the identify command's kernels and took over 240 s on 2 cores
pytestmark = [pytest.mark.timeout(900), pytest.mark.hardware_peer]
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
    # lockstep only engages while a client streams servoJ: the stream tests see a free-running
    # controller, the servo tests one that applies every command on the tick it answers
    peer = start_ur_controller(tmp_path_factory.mktemp("ur"), *RT, "--clock", "lockstep")
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


def sim_status(host: str) -> dict:
    return json.loads(dashboard(host, "sim status"))


def controller_ticks(robot_time: np.ndarray) -> np.ndarray:
    """Controller tick numbers of samples (the controller's timestamp is ticks x 2 ms)."""
    return np.round(np.asarray(robot_time) / 0.002).astype(np.int64)


def reported_lost_ticks(ticks: np.ndarray, lost: np.ndarray) -> set[int]:
    """The ticks the driver says it lost: sample k's ``lost`` counts the ticks just before it."""
    return {int(t) - m for t, n in zip(ticks, lost.astype(int)) for m in range(1, n + 1)}


def outside_lockstep_pauses(ticks: set[int], pauses: list) -> set[int]:
    """The ticks not inside any span the controller ran without lockstep (``sim status``'s
    ``lockstep_pauses``, [first, last], last None while still paused), give or take a tick."""
    return {t for t in ticks
            if not any(first - 1 <= t <= (last if last is not None else t) + 1 for first, last in pauses)}


def test_stream_500_hz_counts_every_sample(ur, record_property):
    """Every controller sample is either received once or counted lost, judged by the controller's
    timestamps. Whether the host loses samples (ur_rtde keeps only the newest package) is not this
    test's to judge: it is a figure here, and bench/drivers measures it with its load beside it."""
    d = make(ur.host)
    d.connect()
    times = np.empty(1500)
    lost = np.empty(1500)
    # the reading thread is real-time where the host allows it, as the daemon's driver process is
    with realtime(READER_PRIORITY) as scheduler:
        for i in range(times.size):
            s = d.read()
            times[i] = s.robot_time
            lost[i] = s.signal("lost")[0]
    diag = d.diagnostics()
    assert diag["frequency"] == 500.0 and diag["polyscope"].startswith("5.23")
    ticks = controller_ticks(times)
    steps = np.diff(ticks)
    # exact accounting: no sample twice, every gap counted where it happened, and the totals agree
    assert steps.min() == 1
    assert np.array_equal(lost[1:], steps - 1)
    assert diag["stream"]["received"] == 1500 and diag["stream"]["lost"] == int(lost.sum())
    host_lost = int(lost[1:].sum())
    record_property("host_lost_samples", host_lost)
    print(f"500 Hz stream: 1500 received, {host_lost} lost to the host (reader on {scheduler}); "
          f"controller {sim_status(ur.host)['overruns']} overruns")
    s = d.state
    assert np.allclose(s.tau, d.drive_gains * s.signal("current"))
    assert s.signal("robot_mode")[0] == 7 and s.signal("safety_mode")[0] == 1
    assert np.all(s.signal("temperature") > 20)
    d.close()


def test_a_gap_is_counted_exactly(ur, record_property):
    """The gap the controller made is the gap the driver reported, tick for tick; a sample the host
    lost besides is counted too, and reported apart from the injected gap."""
    d = make(ur.host)
    d.connect()
    times, lost = [], []
    with realtime(READER_PRIORITY):
        for _ in range(50):
            s = d.read()
            times.append(s.robot_time)
            lost.append(s.signal("lost")[0])
        assert dashboard(ur.host, "sim skip 7") == "Skipping 7 packages"
        for _ in range(100):
            s = d.read()
            times.append(s.robot_time)
            lost.append(s.signal("lost")[0])
    first, last = sim_status(ur.host)["withheld_ticks"][-1]
    injected = set(range(first, last + 1))
    assert len(injected) == 7
    ticks = controller_ticks(times)
    lost = np.array(lost)
    # (the first sample's count covers ticks before this window: the connect)
    reported = reported_lost_ticks(ticks[1:], lost[1:])
    missing = set(range(int(ticks[0]), int(ticks[-1]) + 1)) - set(ticks.tolist())
    assert reported == missing  # every missing tick counted once, at the sample after it
    assert injected <= reported  # the whole injected gap, at the ticks the controller withheld
    assert d.diagnostics()["stream"]["lost"] == int(lost.sum())
    host_lost = len(reported - injected)
    record_property("host_lost_samples", host_lost)
    print(f"gap: controller withheld ticks {first}..{last}, driver reported exactly those; "
          f"{host_lost} more lost to the host")
    d.close()


def test_a_late_controller_says_so(ur):
    """A controller the host starves (here a 60 ms stall of its tick thread) counts the overrun,
    reports it over the dashboard and in every package's actual_execution_time, which the driver
    counts in its diagnostics: degraded timing is never silent."""
    d = make(ur.host)
    d.connect()
    d.start("position")
    cmd = JointCommand(6)
    cmd.q[:] = d.read().q
    before = sim_status(ur.host)
    with realtime(READER_PRIORITY):  # servoing in lockstep: no package can be lost, the stalled one included
        for k in range(120):
            if k == 20:
                assert dashboard(ur.host, "sim stall 60") == "Stalling"
            d.write(cmd)
            d.read()
    d.stop()
    after = sim_status(ur.host)
    assert after["overruns"] > before["overruns"] and after["max_late_ms"] >= 55
    ctl = d.diagnostics()["controller"]
    assert ctl["overruns"] >= 1 and ctl["execution_time_max_ms"] >= 55
    assert "started" in ur.log() and "ms late" in ur.log()
    d.close()


def test_a_stale_stream_is_a_lost_connection(ur):
    """ur_rtde's getters keep answering with the last values; the frozen timestamp gives it away."""
    d = make(ur.host)
    d.connect()
    d.read()
    dashboard(ur.host, "sim freeze 3000")
    t0 = time.monotonic()
    with pytest.raises(ConnectionLost) as e:
        for _ in range(2000):
            d.read()
    # the mechanism, not a speed: without the staleness check the frozen getters keep answering, the
    # reads resume after the freeze and nothing is raised; the message names the frozen timestamp
    assert "stale stream" in str(e.value)
    assert e.value.state["last_states"]
    time.sleep(max(0.0, t0 + 3.1 - time.monotonic()))
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
    pauses_before = len(sim_status(host)["lockstep_pauses"])
    # a sample skipped while nobody read is counted at the next read: one cycle after the status
    # request, so what the controller sent while it was served is counted before the lockstep
    # cycles below, not in them (beside stress-ng --cpu 4 it was counted in them in 1 of 5 runs)
    d.write(cmd)
    d.read()
    # samples that arrived while nobody read (sleep, script restart, the status request) are
    # counted, not hidden
    lost_before = d.diagnostics()["stream"]["lost"]
    assert lost_before > 0
    for _ in range(50):
        d.write(cmd)
        d.read()
    # servoing in lockstep loses nothing, unless the host held this client back past the
    # controller's lockstep wait, which the controller counts as a pause
    lost_after = d.diagnostics()["stream"]["lost"]
    assert lost_after == lost_before or len(sim_status(host)["lockstep_pauses"]) > pauses_before
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


def _servo_run(host: str, q_ref: np.ndarray, stall_s: np.ndarray | None = None,
               read_stall_s: np.ndarray | None = None) -> dict:
    """Stream q_ref by servoJ, one command per controller sample; ``stall_s`` delays each command,
    ``read_stall_s`` each read after it (a slow or preempted client)."""
    d = make(host)
    d.connect()
    d.start("position")
    d.read()  # the start state, against which the first target is checked
    cmd = JointCommand(6)
    out = {"q": [], "qd": [], "current": [], "t": [], "q_d": []}
    with realtime(READER_PRIORITY):
        for k, q in enumerate(q_ref):
            if stall_s is not None:
                time.sleep(stall_s[k])
            cmd.q[:] = q
            d.write(cmd)
            if read_stall_s is not None:
                time.sleep(read_stall_s[k])
            s = d.read()
            out["q"].append(s.q.copy())
            out["qd"].append(s.qd.copy())
            out["current"].append(s.signal("current").copy())
            out["q_d"].append(s.signal("q_d").copy())
            out["t"].append(s.robot_time)
    # (the global estimate models each run at its own states and timestamps, so a lost sample only
    # costs a row; completeness has its own test)
    d.stop()
    d.close()
    return {k: np.array(v) for k, v in out.items()}


def _reference(q0: np.ndarray, duration: float, seed: int, hold: int = 0) -> np.ndarray:
    from robodyn.trajectory import trajectory_from_dict

    traj = trajectory_from_dict(fourier_excitation(q0, [0.3, 0.25, 0.25, 0.3, 0.3, 0.3], duration, seed, "ur5e"))
    q_ref = traj.evaluate(np.arange(0, duration, 0.002))[0]
    return np.vstack([np.repeat(q_ref[:1], hold, axis=0), q_ref])


UR_HOME = np.array([0.0, -1.57, 1.57, -1.57, -1.57, 0.0])


def _tick_aligned_difference(a: dict, b: dict) -> float:
    """Largest |q_d| difference between two runs compared tick by tick (controller time), at the
    tick offset that fits best: where a client's first command lands depends on its timing, and
    the excitation holds its start pose long enough for that not to matter. Only ticks both runs
    reported count, and at least 95 % of them must overlap. (The controller ticks freely until the
    first servoJ, so the runs may start at unrelated tick numbers: offsets are searched around the
    one that aligns the first samples.)"""
    ta, tb = controller_ticks(a["t"]), controller_ticks(b["t"])
    best = np.inf
    for shift in range(ta[0] - tb[0] - 30, ta[0] - tb[0] + 31):
        common, ia, ib = np.intersect1d(ta, tb + shift, return_indices=True)
        if common.size >= 0.95 * min(ta.size, tb.size):
            best = min(best, float(np.abs(a["q_d"][ia] - b["q_d"][ib]).max()))
    return best


def test_lockstep_makes_a_servo_run_independent_of_the_client_timing(tmp_path):
    """Same controller seed, same commands; the second client stalls 0-8 ms before every command
    (as a preempted process would). In lockstep the controller applies every command exactly once,
    one per tick, in order, so both runs track the same targets tick for tick; free-running, the
    stalled client's commands land on later ticks (or are overwritten) and the targets differ."""
    q_ref = _reference(UR_HOME, 2.0, seed=5, hold=25)
    stalls = np.random.default_rng(0).uniform(0.0, 0.008, q_ref.shape[0])
    runs, status = {}, {}
    for clock in ("lockstep", "free"):
        for name, stall in (("prompt", None), ("stalled", stalls)):
            # a generous lockstep wait: a CI host that preempts the client for longer than the
            # default 0.1 s must not turn the comparison into a timing test
            peer = start_ur_controller(tmp_path, *RT, "--clock", clock, "--seed", "3", "--lockstep-wait", "2")
            try:
                runs[clock, name] = _servo_run(peer.host, q_ref, stall)
                status[clock, name] = sim_status(peer.host)
            finally:
                peer.stop()
    lockstep = _tick_aligned_difference(runs["lockstep", "prompt"], runs["lockstep", "stalled"])
    # free-running, the stalled run spans more ticks than the prompt one: no offset aligns them, so
    # its targets are compared command by command
    free = np.abs(runs["free", "prompt"]["q_d"] - runs["free", "stalled"]["q_d"]).max()
    counters = {k: {f: v.get(f) for f in ("lockstep_waits", "lockstep_timeouts", "overruns", "max_late_ms")}
                for k, v in status.items()}
    print(f"largest target difference, prompt vs stalled client: lockstep {lockstep:.2e} rad, free {free:.2e} rad; "
          f"controller counters {counters}")
    assert status["lockstep", "stalled"]["lockstep_waits"] > 0  # the stalls did make the controller wait
    assert status["lockstep", "prompt"]["lockstep_timeouts"] == 0 and status["lockstep", "stalled"]["lockstep_timeouts"] == 0
    assert lockstep < 1e-6, counters
    assert free > 1e-3  # the stalls are large enough to matter: the comparison can fail


def test_lockstep_a_client_one_package_behind_loses_no_package(tmp_path):
    """The first servoJ arrives while the controller still ticks freely. A client that sends it a
    tick late, and its second command a tick after that, answers each package a tick after the one
    it was sent for, one command ahead of the ticks. A lockstep tick that went ahead on that spare
    command would send the next package before the client read the last one, and a client that
    then stalls a few ms loses packages (ur_rtde keeps only the newest) with no pause to explain
    them: the UR end-to-end test's lost samples on loaded hosts. Every tick must wait for the answer
    to the package before it, so no controller sample after the first commands is lost."""
    q_ref = _reference(UR_HOME, 1.0, seed=5, hold=25)
    stalls, read_stalls = np.zeros(q_ref.shape[0]), np.zeros(q_ref.shape[0])
    stalls[0], stalls[1] = 0.003, 0.002  # the first command a tick late, the second after the next tick
    read_stalls[40::20] = 0.005  # then now and then the client reads 2.5 periods after its command
    # a generous wait: no tick may go ahead without the client's command, on any host
    peer = start_ur_controller(tmp_path, *RT, "--clock", "lockstep", "--seed", "3", "--lockstep-wait", "2")
    try:
        run = _servo_run(peer.host, q_ref, stalls, read_stalls)
        status = sim_status(peer.host)
    finally:
        peer.stop()
    counters = {f: status[f] for f in ("lockstep_waits", "lockstep_timeouts", "lockstep_lead", "lockstep_leads")}
    print(f"controller counters {counters}")
    ticks = controller_ticks(run["t"])
    streaming = ticks[4:]  # the first commands reach a free-running controller: losses there are not lockstep's
    lost = sorted(set(range(int(streaming[0]), int(streaming[-1]) + 1)) - set(streaming.tolist()))
    assert status["lockstep_timeouts"] == 0, counters
    assert status["lockstep_waits"] > 0, counters  # the stalls made the controller wait
    assert not lost, (lost[:10], len(lost), counters)


def test_drive_gains_from_a_load_unload_pair(tmp_path):
    """Same seed -> same true gains on both controllers; one carries a 3 kg payload. The global
    (Gautier-Briot) estimate finds all six; dynamic_calibration's difference is printed beside it.
    Both controllers run in lockstep, so the two servo runs (and the estimate) are meant to be the same
    on any host: measured identical to 4 digits idle, with two CPU hogs beside, and without SCHED_FIFO.
    Not always: a fresh-clone run of the whole suite (2026-11-26, 9fef697) found joint 1 at 2.01 %,
    where the idle runs give 0.7-0.9 %. A likely cause, found later and not proven to be this one:
    a client one command ahead of the ticks (test_lockstep_a_client_one_package_behind_loses_no_package)
    let ticks go ahead without waiting, so a client held back lost samples and the runs differed."""
    from robodyn.identification.drive_gains import difference_drive_gains
    from robodyn.robot.loader import load_model

    model = load_model("ur5e")
    q_ref = _reference(UR_HOME, 4.0, seed=5)
    runs, truth = [], None
    for payload in ("0", "3.0"):
        # a generous lockstep wait, as in the lockstep test: with the default 0.1 s a client the
        # host holds back longer lets a tick go ahead without its command, and the two runs differ
        peer = start_ur_controller(tmp_path, *RT, "--clock", "lockstep", "--seed", "3", "--payload-kg", payload,
                                   "--payload-com", "0.1,0,0.05", "--lockstep-wait", "2")
        try:
            truth = np.array(json.loads(dashboard(peer.host, "sim status"))["drive_gains"])
            runs.append(_servo_run(peer.host, q_ref))
            assert sim_status(peer.host)["lockstep_timeouts"] == 0  # every command applied, once, in order
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
    # measured: 0.01-0.06 % on joints 2-6, 0.7-0.9 % on joint 1 (the base carries the least payload
    # torque; its relative std is 0.26 %), once 2.01 % on joint 1 (docstring); joints 2-6 keep 0.3 %
    assert np.isfinite(k).all(), est["notes"]
    assert rel[0] < 0.03 and rel[1:].max() < 0.003, (k, truth)


def test_servoj_excitation_through_the_daemon_record_identify_and_disconnect(tmp_path):
    """Two designed excitations through the daemon (tests/data/excitation/README.md), one to
    identify and one held out, then a disconnect mid-run. The controller runs in lockstep: each
    servoJ command is applied on the tick after the package it answers, so the recordings (and the
    identification on them) are the same on an idle host, a loaded one, or one without SCHED_FIFO,
    up to ticks the controller had to run without a command (counted and checked below)."""
    from robodyn.recording import load_recording
    from robodyn.trajectory import trajectory_from_dict

    peer = start_ur_controller(tmp_path, *RT, "--clock", "lockstep", "--seed", "1")
    daemon = None
    try:
        daemon = Daemon(tmp_path, "ur5e", "ur", {"host": peer.host, "robot": "ur5e"}, rt_priority=10)
        c = daemon.client
        q0 = daemon.q()
        amp = [0.3, 0.25, 0.25, 0.3, 0.3, 0.3]
        recs = []
        for seed in ("identify", "validate"):
            doc = json.loads((DATA / f"ur5e_{seed}.json").read_text())
            final = c.wait_run(c.submit_run("ur5e", doc, label=f"ur excitation {seed}")["run_id"], timeout=120)
            assert final["state"] == "completed", daemon.explain(final)
            s = final["summary"]
            rec = load_recording(s["recording"])
            ex = rec.phase_mask("execute")
            lost = rec.signal("lost").ravel()
            lost_by_phase = {name: int(lost[rec.phase == code].sum()) for code, name in P.PHASE_NAMES.items()}
            assert s["lost_samples"] == 0 and s["executed_samples"] == s["trajectory_samples"], (
                s["lost_samples"], lost_by_phase, sim_status(peer.host))
            # in lockstep a controller sample is lost only while lockstep was paused: the tick went
            # ahead without the driver's command (the controller waited lockstep_wait_s, 0.1 s: the
            # host held the driver back that long) and ran on the wall clock until the next command.
            # The controller records those spans. So every sample the driver counts as lost lies in
            # one, and its count matches the controller's clock sample by sample: a miscounting
            # driver fails either way
            lost_ex = rec.signal("lost")[ex].ravel().astype(int)
            steps = np.diff(controller_ticks(rec.robot_time[ex]))
            assert np.array_equal(steps, 1 + lost_ex[1:]), (steps.max(), lost_ex.sum())
            pauses = sim_status(peer.host)["lockstep_pauses"]
            unexplained = outside_lockstep_pauses(
                reported_lost_ticks(controller_ticks(rec.robot_time[ex]), lost_ex), pauses)
            assert not unexplained, (sorted(unexplained)[:10], pauses[-10:])
            if lost_ex.any():
                print(f"lockstep: {lost_ex.sum()} sample(s) lost in the {seed} run, each at a tick the controller "
                      f"ran without the driver's command (the host held the driver back over 0.1 s)")
            # servoJ follows its target lookahead_time behind (the driver's default 0.1 s): the
            # controller's target trails the command by lookahead x speed, and the arm follows the
            # controller's target within its joint controller's error
            traj = trajectory_from_dict(doc)
            speed = np.abs(traj.evaluate(np.arange(0, traj.duration, 0.002))[1]).max(0)
            assert np.abs(rec.signal("q")[ex] - rec.signal("q_d")[ex]).max() < 0.01
            assert np.all(np.array(s["tracking"]["max_rad"]) < 0.1 * speed * 1.05 + 0.01), (s["tracking"], speed)
            recs.append(execute_npz(s["recording"], tmp_path / f"ur{seed}.npz"))
        # a disconnect mid-run: the controller dies; the run ends, the partial recording is kept
        doc = fourier_excitation(q0, amp, duration=6.0, seed=23, robot="ur5e")
        assert 500 <= disconnect_mid_run(c, peer, "ur5e", doc) < 3000
        # the robot and the daemon are stopped before the identification: with the controller (SCHED_FIFO
        # 20) and the driver (SCHED_FIFO 10) gone, it has both cores, not what those leave over
        daemon.stop()
        daemon = None
        peer.stop()
        result = tmp_path / "ur5e.json"
        run_identify("identify", "--robot", "ur5e", recs[0], "--out", str(result))
        val = run_identify("validate", str(result), recs[1])
        print("ur held-out validation:", val)
        # nominal drive gains (the controller's true ones differ by ~5 %), the simulator's friction
        # and noise: held-out error measured MEASURED_HELD_OUT
        assert val["relative_error_total"] < 0.5, val
    finally:
        if daemon is not None:
            daemon.stop()
        peer.stop()
