"""The driver stops a moving robot on its own when the daemon's main process, which supervises it,
falls silent (frozen decoding a hostile frame, SIGSTOPped): the main process says it is alive on
the driver's pipe from its loop (daemon/supervision.py), and the driver (daemon/rtloop.py
SupervisorWatch) ramps the robot to rest once it has heard nothing for [safety].supervisor_silence_s
of the main process's own time (its waits for a CPU not counted). Unit tests on a fake clock and a
fake reader of the scheduler statistics; then a simulated daemon whose main process is SIGSTOPped
mid-run."""

from __future__ import annotations

import os
import signal
import time
from types import SimpleNamespace

import numpy as np
import pytest

from robodyn.daemon import protocol as P
from robodyn.daemon.config import DaemonConfig
from robodyn.recording import load_recording
from robodyn.drivers.loop_stats import PeriodHistogram
from robodyn.daemon.rtloop import DriverLoop, RunExecutor
from robodyn.daemon.supervisor_watch import SILENCE_LOOK_FRACTION, SupervisorWatch
from tests.daemon.conftest import READY_Q, DaemonProcess, excitation

from .scenarios import official_read, wait_state

BOUND_S = 0.5
BOUND_NS = 500_000_000
LOOK_NS = BOUND_NS // SILENCE_LOOK_FRACTION


class FakeRunDelay:
    """The main process's run delay (seconds waited runnable for a CPU) as a function of the fake
    clock, counting its reads."""

    def __init__(self, clock: list, starving_share: float = 0.0, since_ns: int = 0, start_s: float = 3.0):
        self.clock, self.share, self.since_ns, self.start_s = clock, starving_share, since_ns, start_s
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.start_s + self.share * max(0, self.clock[0] - self.since_ns) / 1e9


# --------------------------------------------------------------------------- the judgement


def test_a_stopped_supervisor_is_too_long_silent_just_past_the_bound_and_not_at_it():
    clock = [0]
    delay = FakeRunDelay(clock)  # SIGSTOP: not runnable, no wait for a CPU accrues
    watch = SupervisorWatch(BOUND_S, delay, now_ns=0)
    assert not watch.too_long(LOOK_NS)
    assert delay.reads == 0  # short silences cost no read of the statistics
    assert not watch.too_long(LOOK_NS + 1)
    assert delay.reads == 1  # looked into: the count of its starvation starts
    assert not watch.too_long(BOUND_NS)  # at the bound: not more than it
    assert delay.reads == 1  # the wait counted so far excuses this much: no read
    assert watch.too_long(BOUND_NS + 1)
    assert delay.reads == 2 and watch.starved_ns == 0
    reason = watch.reason(BOUND_NS + 1)
    assert reason.startswith("supervisor silent for 0.50 s (bound 0.5 s") and "waiting for a CPU" not in reason
    assert reason.endswith("motion stopped by the driver")


def test_a_starved_supervisor_is_excused_for_its_wait_and_no_more():
    """Runnable but given 90 % less CPU than it wants: the kernel counts that wait, and the silence
    less the wait is what is judged; before the first look, starvation counts against it."""
    clock = [0]
    delay = FakeRunDelay(clock, starving_share=0.9)
    watch = SupervisorWatch(BOUND_S, delay, now_ns=0)
    clock[0] = LOOK_NS + 1
    assert not watch.too_long(clock[0])
    for silence in (BOUND_NS + 1, 2 * BOUND_NS, 4 * BOUND_NS):  # by the wall clock alone: too long
        clock[0] = silence
        assert not watch.too_long(silence), silence
    # counted: silence - 0.9 (silence - look) = 0.1 silence + 0.9 look; over the bound past 7.75 bounds
    clock[0] = 7 * BOUND_NS
    assert not watch.too_long(clock[0])
    clock[0] = 8 * BOUND_NS
    assert watch.too_long(clock[0])
    starved = 0.9 * (8 * BOUND_NS - (LOOK_NS + 1))
    assert abs(watch.starved_ns - starved) < 1e3
    reason = watch.reason(clock[0])
    assert f"{(8 * BOUND_NS - starved) / 1e9:.2f} s" in reason and "waiting for a CPU, not counted" in reason


def test_a_message_restarts_the_count():
    """Starvation during an earlier silence excuses nothing of a later one."""
    clock = [0]
    delay = FakeRunDelay(clock, starving_share=1.0)
    watch = SupervisorWatch(BOUND_S, delay, now_ns=0)
    for clock[0] in (LOOK_NS + 1, 3 * BOUND_NS):
        assert not watch.too_long(clock[0])  # starved all along: excused
    watch.heard(clock[0])
    start = clock[0]
    delay.share, delay.start_s, delay.since_ns = 0.0, delay(), start  # now stopped: all of the new silence counts
    for clock[0] in (start + LOOK_NS + 1, start + BOUND_NS):
        assert not watch.too_long(clock[0])
    assert watch.too_long(start + BOUND_NS + 1)


def test_without_scheduler_statistics_the_wall_clock_is_judged():
    watch = SupervisorWatch(BOUND_S, lambda: None, now_ns=0)
    assert not watch.too_long(BOUND_NS)
    assert watch.too_long(BOUND_NS + 1)


# --------------------------------------------------------------------------- the loop's use of it


class FakeDriver:
    def __init__(self):
        self.commands = []

    def describe(self):
        return SimpleNamespace(dof=7, limits={"qdd_max": [10.0] * 7, "qddd_max": [5000.0] * 7})

    def start(self, mode):
        pass

    def write(self, cmd):
        self.commands.append((cmd.q.copy(), cmd.qd.copy()))

    def stop(self):
        pass


def _loop(clock: list, delay: FakeRunDelay) -> tuple[DriverLoop, list]:
    """A DriverLoop's judgement and stop, with a real run executor on a fake robot, and no sockets."""
    events = []
    loop = DriverLoop.__new__(DriverLoop)
    loop.cfg = DaemonConfig(supervisor_silence_s=BOUND_S)
    loop.executor = RunExecutor(FakeDriver(), 1000.0, 0.01, loop._emit)
    loop.supervisor_watch = SupervisorWatch(BOUND_S, delay, now_ns=clock[0])
    loop.supervisor_stops = 0
    loop.stats_run = PeriodHistogram()
    loop._to_main = events.append
    loop._publish = lambda frames: None
    return loop, events


def _start(loop: DriverLoop, clock: list) -> SimpleNamespace:
    state = SimpleNamespace(q=READY_Q + 0.05, qd=np.zeros(7))
    traj = excitation(5.0)
    loop.supervisor_watch.heard(clock[0])  # the start_run message
    loop.executor.start({"run": 1, "run_id": "r1", "move": traj, "trajectory": traj}, state, 0)
    for seq in range(1, 11):
        loop.executor.tick(state, seq)
    return state


def test_an_idle_driver_ignores_any_silence(capfd):
    clock = [0]
    delay = FakeRunDelay(clock)
    loop, events = _loop(clock, delay)
    assert not loop._check_supervisor(100 * BOUND_NS)
    assert delay.reads == 0 and events == [] and loop.executor.phase == P.PHASE_IDLE


def test_a_moving_run_is_stopped_once_with_the_reason(capfd):
    clock = [0]
    delay = FakeRunDelay(clock)
    loop, events = _loop(clock, delay)
    state = _start(loop, clock)
    assert loop.executor.phase == P.PHASE_MOVE
    assert not loop._check_supervisor(BOUND_NS)
    assert loop.executor.phase == P.PHASE_MOVE
    assert loop._check_supervisor(BOUND_NS + 1)
    assert loop.executor.phase == P.PHASE_STOPPING and loop.supervisor_stops == 1
    silent = [e for e in events if e["event"] == "supervisor_silent"]
    assert len(silent) == 1 and silent[0]["run_id"] == "r1" and silent[0]["starved_s"] == 0.0
    assert [e["event"] for e in events if e["event"] == "aborting"] == ["aborting"]
    assert loop.executor.abort_reason == silent[0]["reason"]
    assert "supervisor silent for 0.50 s" in silent[0]["reason"]
    # ramping to rest: the silence goes on, but there is no second stop
    assert not loop._check_supervisor(10 * BOUND_NS)
    assert len([e for e in events if e["event"] in ("supervisor_silent", "aborting")]) == 2
    seq = 10
    while loop.executor.busy and seq < 100_000:
        seq += 1
        loop.executor.tick(state, seq)
    done = [e for e in events if e["event"] == "done"]
    assert len(done) == 1 and done[0]["aborted"] and done[0]["reason"] == silent[0]["reason"]
    assert np.all(loop.executor.driver.commands[-1][1] == 0.0)  # at rest
    assert "robodyn driver: run r1: supervisor silent for" in capfd.readouterr().err


def test_a_starved_supervisor_does_not_stop_a_moving_run(capfd):
    clock = [0]
    delay = FakeRunDelay(clock, starving_share=1.0)  # runnable all along, given no CPU
    loop, events = _loop(clock, delay)
    _start(loop, clock)
    for silence in (LOOK_NS + 1, BOUND_NS + 1, 4 * BOUND_NS):
        clock[0] = silence
        assert not loop._check_supervisor(silence)
    assert loop.executor.phase == P.PHASE_MOVE and not [e for e in events if e["event"] == "supervisor_silent"]


# --------------------------------------------------------------------------- a simulated daemon


def stop_main_process_mid_run(d: DaemonProcess, trajectory: dict, executing_s: float = 0.0) -> dict:
    """SIGSTOP the daemon's main process ``executing_s`` into a run's execution and watch the
    driver's stream (the publisher's: no main process needed) until the run's ``done`` event;
    SIGCONT; then the run's end as the main process reports it, and the recording. Shared with
    bench/reliability/supervisor_silence.py."""
    client = d.client
    driver_pid = client.status()["driver"]["pid"]
    accepted = client.submit_run("panda", trajectory, label="supervisor silence")
    run_id = accepted["run_id"]
    wait_state(client, run_id, ("execute",))
    stream = client.stream(d.state, timeout=30.0, events=True)
    next(stream)  # subscribed
    time.sleep(executing_s)
    events, phases = [], []
    os.kill(d.proc.pid, signal.SIGSTOP)
    stopped_ns = time.monotonic_ns()
    try:
        for item in stream:  # each wait bounded by the stream's time-out; the count by the run's length
            if item["topic"] == "event":
                if item.get("run_id") == run_id:
                    events.append(item)
                    if item["event"] == "done":
                        break
                continue
            phases.append(item["phase"][item["host_time_ns"] >= stopped_ns])
            assert len(phases) < 1_000_000, "the run did not end"
    finally:
        os.kill(d.proc.pid, signal.SIGCONT)
    final = client.wait_run(run_id, timeout=120, poll_s=0.05)
    return {"accepted": accepted, "driver_pid": driver_pid, "stopped_ns": stopped_ns, "events": events,
            "phases_after_stop": np.concatenate(phases) if phases else np.zeros(0, np.uint8), "final": final,
            "status": client.status(), "recording": load_recording(final["recording"])}


def stop_to_first_stopping_sample(r: dict) -> dict:
    """From the SIGSTOP to the first sample of the ramp, in the recording's terms: samples (by
    sequence number, from the first sample read after the SIGSTOP) and host milliseconds."""
    rec = r["recording"]
    stopping = rec.phase_mask("stopping")
    at_stop = int(np.searchsorted(rec.host_time_ns, r["stopped_ns"]))
    first = int(np.flatnonzero(stopping)[0])
    return {"samples": int(rec.seq[first]) - int(rec.seq[at_stop]),
            "ms": (int(rec.host_time_ns[first]) - r["stopped_ns"]) / 1e6}


@pytest.fixture
def realtime_daemon(tmp_path):
    d = DaemonProcess(tmp_path, speed=1.0)
    yield d
    d.stop()


def test_a_stopped_main_process_gets_the_run_stopped_by_the_driver(realtime_daemon, figure):
    """SIGSTOP of the daemon's main process mid-run: the driver ramps the robot to rest and ends the
    run; when the main process runs again the run is aborted with the driver's reason, the daemon
    disarmed, and the recording holds the ramp, ends at rest and names the reason."""
    r = stop_main_process_mid_run(realtime_daemon, excitation(60.0))
    events, accepted = r["events"], r["accepted"]
    kinds = [e["event"] for e in events]
    assert "supervisor_silent" in kinds and kinds[-1] == "done", kinds
    done = events[-1]
    silent = events[kinds.index("supervisor_silent")]
    assert done["aborted"] and done["reason"] == silent["reason"]
    assert "supervisor silent for" in done["reason"] and "motion stopped by the driver" in done["reason"]
    assert done["executed_samples"] < done["trajectory_samples"]
    # the stream after the SIGSTOP: executing, then the ramp, then the hold at rest
    phases = r["phases_after_stop"]
    stopping = np.flatnonzero(phases == P.PHASE_STOPPING)
    assert stopping.size > 0 and set(np.unique(phases[stopping[0]:])) <= {P.PHASE_STOPPING, P.PHASE_SETTLE,
                                                                          P.PHASE_IDLE}

    final, st = r["final"], r["status"]
    assert final["state"] == "aborted" and final["abort_reason"] == done["reason"], final
    assert st["safety"]["armed"] is False and "supervisor silent for" in st["safety"]["disarm_reason"], st["safety"]
    # the driver kept running through its own stop and the main process's freeze: not judged hung
    assert st["driver"]["restarts"] == 0 and st["driver"]["pid"] == r["driver_pid"] and st["driver"]["alive"]

    rec = r["recording"]
    assert not rec.truncated and rec.summary["status"] == "aborted", rec.summary
    assert rec.summary["reason"] == done["reason"]
    assert any(e.get("event") == "supervisor_silent" and e.get("reason") == done["reason"] for e in rec.events)
    assert rec.phase_mask("stopping").sum() > 0
    assert float(np.abs(rec.signal("qd_d")[-1]).max()) == 0.0  # ends at rest, commanded
    assert rec.gaps() == []
    # the samples after the SIGSTOP: the rest of the trajectory was not executed
    after = int((rec.host_time_ns >= r["stopped_ns"]).sum())
    remaining = accepted["trajectory_samples"] - done["executed_samples"]
    assert after < remaining and rec.samples < accepted["move_samples"] + accepted["trajectory_samples"]
    official = official_read(final["recording"])
    assert official["ok"] and official["samples"] == rec.samples, official
    # said by the driver itself, on the daemon's log, while the main process could write nothing
    assert f"robodyn driver: run {accepted['run_id']}: {done['reason']}" in realtime_daemon.log_text()

    figure("main process SIGSTOPped mid-run: the driver ramped the robot to rest on its own",
           bound_s=silent["bound_s"], silent_s=round(silent["silent_s"], 3), starved_s=silent["starved_s"],
           stop_to_first_stopping_samples=stop_to_first_stopping_sample(r)["samples"],
           stopping_samples=int(rec.phase_mask("stopping").sum()), samples_after_stop=after)


def test_the_alive_beacon_is_heard_once_per_bump_and_only_then(tmp_path):
    """The main loop's word in shared memory: the driver's side sees each bump once, nothing
    without one, and a reader attached after bumps sees the present count as news once."""
    from robodyn.daemon.supervisor_watch import AliveBeacon

    writer = AliveBeacon(str(tmp_path / "alive"), writer=True)
    reader = AliveBeacon(str(tmp_path / "alive"), writer=False)
    try:
        assert reader.changed() and not reader.changed()
        writer.bump()
        assert reader.changed() and not reader.changed()
        for _ in range(3):
            writer.bump()
        assert reader.changed() and not reader.changed()
        late = AliveBeacon(str(tmp_path / "alive"), writer=False)
        assert late.changed() and not late.changed()
        late.close()
    finally:
        reader.close()
        writer.close()
