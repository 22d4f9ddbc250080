"""The simulated UR controller's servoJ law and tick timing, without a network.

servoj(q, a, v, t, lookahead_time, gain): Universal Robots describe the gain as a proportional
term on the error to the target and the lookahead time as projecting the current position forward
with the current velocity. The controller integrates qdd = gain * (target - (q + lookahead * qd)).
"""

import numpy as np
import pytest

from robodyn.tools.testing.ur_controller.script import CMD_SERVOJ, ControlScript, JointMotion
from robodyn.tools.testing.ur_controller.ticks import MIN_SPACING, TickTiming, next_deadline

DT = 0.002


def servo_stream(motion: JointMotion, targets: np.ndarray, lookahead=0.1, gain=300.0, late=()) -> np.ndarray:
    """Apply one target per tick (a target index in ``late`` arrives one tick late: that tick keeps
    the previous target, the next applies the late one's successor), return q and qdd per tick."""
    q, qdd = [], []
    for k, target in enumerate(targets):
        if k not in late:
            motion.servo(target, DT, lookahead, gain)
        motion.step()
        q.append(motion.q.copy())
        qdd.append(motion.qdd.copy())
    return np.array(q), np.array(qdd)


@pytest.mark.parametrize("lookahead, gain", [(0.1, 300.0), (0.05, 1000.0), (0.2, 100.0)])
def test_a_ramp_is_followed_lookahead_time_behind(lookahead, gain):
    v = 0.5  # rad/s
    t = np.arange(4000) * DT
    targets = (v * t)[:, None] * np.ones(6)
    q, _ = servo_stream(JointMotion(np.zeros(6), DT), targets, lookahead, gain)
    lag = targets[-1] - q[-1]
    # steady state of qdd = G (r - q - L qd) with r = v t: r - q = L v; q is recorded at the end of
    # the tick that applied r, one tick (v dt) further on
    assert np.allclose(lag, (lookahead - DT) * v, rtol=1e-3), lag


def test_step_response_is_damped_as_the_law_says():
    # damping ratio L sqrt(G) / 2 = 0.866 at the defaults: overshoot exp(-pi z / sqrt(1 - z^2)) = 0.43 %
    targets = np.full((1500, 6), 0.1)
    q, _ = servo_stream(JointMotion(np.zeros(6), DT), targets)
    overshoot = q[:, 0].max() / 0.1 - 1
    assert 0.002 < overshoot < 0.007, overshoot
    assert abs(q[-1, 0] - 0.1) < 1e-6


def test_a_late_target_does_not_kick_the_arm():
    """A target that arrives a tick late shifts the acceleration by gain x one tick of motion,
    not by a velocity jump within one tick (which the plant's feedforward would turn into a
    torque spike)."""
    v = 1.0
    t = np.arange(1500) * DT
    targets = (v * (1 - np.cos(t)))[:, None] * np.ones(6)  # starts at rest
    _, smooth = servo_stream(JointMotion(np.zeros(6), DT), targets)
    _, jittery = servo_stream(JointMotion(np.zeros(6), DT), targets, late=set(range(300, 1500, 7)))
    assert np.abs(jittery - smooth).max() < 300.0 * v * DT * 2  # 1.2 rad/s^2
    assert np.abs(jittery).max() < 3.0  # a one-tick velocity jump would be ~ v / DT = 500 rad/s^2


def test_servoj_registers_reach_the_law_and_are_clamped_to_urscript_ranges():
    motion = JointMotion(np.zeros(6), DT)
    script = ControlScript(motion)
    script.start()
    doubles = {i: 0.01 * i for i in range(6)} | {8: DT, 9: 0.05, 10: 1000.0}
    script.tick({0: CMD_SERVOJ}, doubles)
    assert motion.mode == "servo" and motion._lookahead == 0.05 and motion._gain == 1000.0
    assert np.allclose(motion._servo_target, [0.0, 0.01, 0.02, 0.03, 0.04, 0.05])
    script.tick({0: CMD_SERVOJ}, doubles | {9: 0.5, 10: 5000.0})
    assert motion._lookahead == 0.2 and motion._gain == 2000.0


def test_the_servo_stays_within_the_joint_limits():
    motion = JointMotion(np.zeros(6), DT, qd_max=np.full(6, 1.0), qdd_max=np.full(6, 5.0))
    q, qdd = servo_stream(motion, np.full((2000, 6), 2.0), gain=2000.0, lookahead=0.03)
    qd = np.diff(q, axis=0) / DT
    assert np.abs(qd).max() <= 1.0 + 1e-9 and np.abs(qdd).max() <= 5.0 + 1e-9
    assert abs(q[-1, 0] - 2.0) < 1e-3


def test_a_stale_servo_stream_decelerates_to_a_stop():
    motion = JointMotion(np.zeros(6), DT)
    servo_stream(motion, (0.5 * np.arange(500) * DT)[:, None] * np.ones(6))
    assert motion.qd[0] > 0.4
    for _ in range(400):  # no new target: after 10 servo periods the joints stop at 2 rad/s^2
        motion.step()
    assert motion.mode == "hold" and np.all(motion.qd == 0)


def test_tick_timing_counts_late_ticks_and_reports_execution_time():
    timing = TickTiming(DT)
    ms = 1_000_000
    assert timing.add(0, ms // 10, ms // 5) is False  # 0.1 ms late: on time
    assert timing.overruns == 0 and abs(timing.execution_ms - 0.2) < 1e-9
    assert timing.add(0, 60 * ms, 61 * ms) is True  # 60 ms late: announced once
    assert timing.add(0, 2 * ms, 3 * ms) is False  # 2 ms late: counted, not announced again
    s = timing.summary()
    assert s["overruns"] == 2 and s["max_late_ms"] == 60.0 and timing.execution_ms == 3.0


def test_tick_work_does_not_stretch_the_schedule_only_a_late_start_slips_it():
    ms = 1_000_000
    period, gap = 2 * ms, int(MIN_SPACING * 2 * ms)
    # a tick due at 0 that started on time: the next is due one period later, whatever its work took
    assert next_deadline(0, 0, period, gap) == period
    assert next_deadline(0, ms // 10, period, gap) == period
    # started 1.5 ms late: keeping the 2 ms deadline would send two packages 0.5 ms apart; it slips
    assert next_deadline(0, 3 * ms // 2, period, gap) == 3 * ms // 2 + gap


def test_tick_timing_reports_the_controller_clock_against_the_wall_clock():
    ms = 1_000_000
    timing = TickTiming(DT)
    assert timing.summary()["real_time_ratio"] is None
    for k in range(11):  # 10 periods of 2 ms spread over 25 ms of wall time
        timing.add(k * 5 * ms // 2, k * 5 * ms // 2, k * 5 * ms // 2 + ms)
    assert timing.summary()["real_time_ratio"] == 0.8
