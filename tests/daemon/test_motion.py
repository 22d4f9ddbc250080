"""Run planning: rejection before motion, the feeder, the stop ramp."""

import numpy as np
import pytest

from robodyn.daemon.motion import RunRejected, StopRamp, TrajectoryFeeder, feed_length, plan_run
from robodyn.robot.loader import load_model
from robodyn.trajectory import FourierTrajectory, PointToPointTrajectory

PANDA = load_model("panda")
READY = np.array([0.0, -0.785398, 0.0, -2.356194, 0.0, 1.570796, 0.785398])


def test_too_fast_trajectory_is_rejected_naming_limit_joint_and_time():
    fast = PointToPointTrajectory(READY, READY + np.array([0, 0, 0, 0, 0, 0, -2.5]), 0.5)
    with pytest.raises(RunRejected) as e:
        plan_run(PANDA, fast, READY, 1000.0)
    assert e.value.stage == "trajectory"
    v = e.value.report.violations[0]
    assert v.joint == "joint7" and v.limit in ("qd_max", "qdd_max", "qddd_max") and v.time is not None
    assert "joint7" in str(e.value) and "t=" in str(e.value)


def test_move_to_start_is_validated_against_the_current_position():
    traj = PointToPointTrajectory(READY + 0.1, READY + 0.2, 2.0)
    plan = plan_run(PANDA, traj, READY, 1000.0)
    assert np.allclose(plan.move.q_start, READY) and np.allclose(plan.move.q_end, READY + 0.1)
    assert plan.move_report.ok and plan.report.ok
    outside = READY.copy()
    outside[3] = PANDA.q_max[3] + 0.5  # a robot reported outside its range: the move must not start
    with pytest.raises(RunRejected) as e:
        plan_run(PANDA, traj, outside, 1000.0)
    assert e.value.stage == "move to the start"


def test_feeder_hands_out_every_sample_across_blocks():
    rng = np.random.default_rng(0)
    traj = FourierTrajectory(2.0, READY, rng.normal(0, 0.02, (7, 3)), rng.normal(0, 0.02, (7, 3)))
    f = TrajectoryFeeder(traj, 1000.0, block=64)
    assert f.count == feed_length(traj, 1000.0) == int(np.floor(traj.duration * 1000)) + 1
    q, qd, qdd = np.zeros(7), np.zeros(7), np.zeros(7)
    got = []
    while not f.done:
        f.next_into(q, qd, qdd)
        got.append(q.copy())
    ref = traj.evaluate(np.arange(f.count) / 1000.0)[0]
    assert np.allclose(np.array(got), ref)


def test_stop_ramp_comes_to_rest_within_half_the_limits():
    v0 = np.array([1.0, -0.8, 0.5, 0.2, -2.0, 1.5, 2.4])
    ramp = StopRamp(READY, v0, PANDA.qdd_max, PANDA.qddd_max, 1000.0)
    q, qd, qdd = np.zeros(7), np.zeros(7), np.zeros(7)
    qs, qdds = [], []
    while not ramp.done:
        ramp.next_into(q, qd, qdd)
        qs.append(q.copy())
        qdds.append(qdd.copy())
    assert np.allclose(qd, 0.0, atol=1e-12)
    assert np.all(np.abs(np.array(qdds)).max(axis=0) <= 0.5 * PANDA.qdd_max * (1 + 1e-9))
    assert np.allclose(qs[-1] - READY, v0 * ramp.duration / 2)  # travel v0 T / 2
    jerk = np.diff(np.array(qdds), axis=0) * 1000.0
    assert np.all(np.abs(jerk).max(axis=0) <= 0.5 * PANDA.qddd_max * 1.05)


def test_the_start_up_warm_up_runs_every_validation_kernel_in_a_fresh_process():
    """The daemon compiles validation's numba kernels in a child at start-up (daemon/supervision.py):
    the warm-up must reach both RNEA builds (batches above and below the parallel threshold), or the
    first submission would still compile one in the validation thread and hold the main loop. Run
    in a fresh interpreter, where no kernel has been compiled or loaded yet."""
    import subprocess
    import sys

    code = ("from robodyn.robot.loader import load_model\n"
            "from robodyn.robot import dynamics\n"
            "from robodyn.daemon.motion import warm_up_validation\n"
            "assert not dynamics._rnea_parallel.signatures and not dynamics._rnea_serial.signatures\n"
            "warm_up_validation(load_model('panda'), 1000.0)\n"
            "print(len(dynamics._rnea_parallel.signatures), len(dynamics._rnea_serial.signatures))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1"]


def test_the_torque_kernels_of_validation_release_the_gil():
    """The daemon checks a submission's predicted torques on a thread while its main loop answers
    stops; a kernel that held the GIL would stall the loop for a whole window of samples. Both
    RNEA builds are compiled without the GIL, and give the same torques as each other."""
    from robodyn.robot import dynamics

    assert dynamics._rnea_parallel.targetoptions.get("nogil") is True
    assert dynamics._rnea_serial.targetoptions.get("nogil") is True
    rng = np.random.default_rng(0)
    q, qd, qdd = (rng.normal(0, 0.5, (dynamics.PARALLEL_THRESHOLD + 1, 7)) for _ in range(3))
    long_batch = dynamics.inverse_dynamics(PANDA, q, qd, qdd)
    one_by_one = np.vstack([dynamics.inverse_dynamics(PANDA, q[i:i + 1], qd[i:i + 1], qdd[i:i + 1])
                            for i in range(0, q.shape[0], 37)])
    assert np.allclose(long_batch[::37], one_by_one, rtol=0, atol=1e-9)
