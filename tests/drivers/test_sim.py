"""The simulated robot: contract, physics effects, determinism and the command log."""

import math

import numpy as np
import pytest

from robodyn.drivers.base import (JointCommand, LifecycleError, LimitViolation, REQUIRED_SIGNALS,
                                  check_description)
from robodyn.simulation.friction import StribeckFriction, friction_torque
from robodyn.drivers.registry import create_driver
from robodyn.drivers.sim import SimulatedRobot


def make(**opts) -> SimulatedRobot:
    robot = SimulatedRobot(dict({"seed": 1}, **opts))
    robot.connect()
    return robot


def hold(robot, cycles, cmd=None):
    """Read/write `cycles` times in position mode holding `cmd` (default: current position)."""
    st = robot.read()
    if cmd is None:
        cmd = JointCommand(robot.model.dof)
        cmd.q[:] = st.q
    for _ in range(cycles):
        st = robot.read()
        robot.write(cmd)
    return st


def test_description_fits_the_contract():
    robot = create_driver("sim", {"robot": "panda"})
    desc = robot.describe()
    check_description(desc)
    assert desc.rate_hz == 1000.0 and desc.dof == 7
    assert set(REQUIRED_SIGNALS) <= {s.name for s in desc.signals}
    assert {s.name: s.unit for s in desc.signals}["tau"] == "N.m"
    assert desc.columns()[:2] == ["q1", "q2"] and len(desc.columns()) == desc.width
    assert desc.info["friction"]["fc"][0] == pytest.approx(0.2153)  # seed 000 Table 2, joint 1


def test_lifecycle_is_enforced():
    robot = SimulatedRobot({"seed": 0})
    with pytest.raises(LifecycleError):
        robot.read()
    robot.connect()
    with pytest.raises(LifecycleError, match="start"):
        robot.write(JointCommand(7))
    robot.start("position")
    robot.stop()
    robot.close()
    with pytest.raises(LifecycleError):
        robot.read()


def test_braked_robot_never_moves_and_logs_no_command():
    robot = make()
    first = robot.read().q.copy()
    for _ in range(200):
        st = robot.read()
    assert np.array_equal(st.q, first)
    log = robot.diagnostics()["commands"]
    assert log["writes"] == 0 and log["starts"] == 0 and log["path_length"] == 0.0
    assert log["max_displacement"] == 0.0


def test_same_seed_same_run_other_seed_other_noise():
    def trace(seed):
        robot = make(seed=seed, perturbation=0.1)
        robot.start("position")
        cmd = JointCommand(7)
        out = []
        st = robot.read()
        cmd.q[:] = st.q
        for k in range(300):
            cmd.q[0] = robot.initial_q[0] + 0.1 * (1 - math.cos(math.pi * k / 300))
            st = robot.read()
            robot.write(cmd)
            out.append(st.values.copy())
        return np.array(out)

    a, b, c = trace(4), trace(4), trace(5)
    assert np.array_equal(a, b)
    assert not np.allclose(a, c)


def test_position_mode_tracks_a_smooth_move():
    robot = make()
    robot.start("position")
    st = robot.read()
    q0 = st.q.copy()
    cmd = JointCommand(7)
    T, n = 1.0, 1000
    errs = []
    for k in range(n + 300):
        s = min(k / n, 1.0)
        shape = 10 * s**3 - 15 * s**4 + 6 * s**5
        cmd.q[:] = q0 + 0.3 * shape
        cmd.qd[:] = 0.3 * (30 * s**2 - 60 * s**3 + 30 * s**4) / T if k < n else 0.0
        st = robot.read()
        robot.write(cmd)
        errs.append(np.abs(st.q - cmd.q).max())
    assert np.all(np.abs(st.q - (q0 + 0.3)) < 0.01)  # settled at the target (joint 7: K = 50 N.m/rad)
    log = robot.diagnostics()["commands"]
    assert log["writes"] == n + 300 and log["path_length"] == pytest.approx(7 * 0.3, rel=1e-6)


def test_encoder_quantization():
    robot = make(encoder_counts=4096)
    st = robot.read()
    step = 2 * math.pi / 4096
    assert np.allclose(st.q / step, np.round(st.q / step), atol=1e-9)


def test_refused_command_is_logged_and_not_applied():
    robot = make()
    robot.start("position")
    st = robot.read()
    cmd = JointCommand(7)
    cmd.q[:] = st.q
    cmd.q[3] = robot.model.q_max[3] + 0.1
    with pytest.raises(LimitViolation, match="joint4"):
        robot.write(cmd)
    log = robot.diagnostics()["commands"]
    assert log["refused"] == 1 and log["writes"] == 0 and log["path_length"] == 0.0


def test_a_target_that_jumps_faster_than_the_velocity_limit_never_reaches_the_robot():
    """The driver's last guard (drivers.base.CommandGuard), for scripts that bypass the daemon's
    trajectory validation: from the measured start state, then from period to period."""
    robot = make()
    robot.start("position")
    cmd = JointCommand(7)
    with pytest.raises(LifecycleError, match="read"):
        robot.write(cmd)  # no measured start state yet
    q_start = robot.read().q.copy()  # (the state's arrays are views, refilled by every read)
    step = robot.model.qd_max / robot.describe().rate_hz  # one period at full speed
    cmd.q[:] = q_start
    cmd.q[1] += 0.03  # beyond one period at full speed plus the start tolerance (0.02 rad)
    with pytest.raises(LimitViolation, match=r"joint2 jumps 0.03 from the measured start state"):
        robot.write(cmd)
    cmd.q[:] = q_start
    robot.write(cmd)  # the start state itself: accepted
    robot.read()
    for k in range(1, 50):  # at 90 % of the velocity limit on joint 1: accepted every period
        cmd.q[0] = q_start[0] + 0.9 * step[0] * k
        robot.write(cmd)
        robot.read()
    before = robot.diagnostics()["commands"]
    last = cmd.q.copy()
    cmd.q[0] = last[0] + 1.2 * step[0]  # 120 %: refused, and the robot never sees it
    with pytest.raises(LimitViolation, match=r"joint1 jumps .* from the previous period's target.*nothing was sent"):
        robot.write(cmd)
    after = robot.diagnostics()["commands"]
    assert after["writes"] == before["writes"] and after["refused"] == before["refused"] + 1
    assert after["path_length"] == before["path_length"] and robot.guard_refusals == 2
    # several writes in one period are all measured from the previous period's target: two
    # steps of 90 % cannot add up to 180 % before the robot moves
    cmd.q[0] = last[0] + 0.9 * step[0]
    robot.write(cmd)
    cmd.q[0] = last[0] + 1.8 * step[0]
    with pytest.raises(LimitViolation, match="joint1 jumps"):
        robot.write(cmd)
    # a target the driver itself refused never becomes the reference
    robot.read()
    cmd.q[:] = last
    robot.write(cmd)  # accepted: the reference from the next period on
    robot.read()
    real_write = robot._do_write

    def refuse_once(command):
        robot._do_write = real_write
        raise LimitViolation("refused by the driver")

    robot._do_write = refuse_once
    cmd.q[0] = last[0] + 0.9 * step[0]
    with pytest.raises(LimitViolation, match="refused by the driver"):
        robot.write(cmd)
    robot.read()
    cmd.q[0] = last[0] + 1.8 * step[0]
    with pytest.raises(LimitViolation, match="joint1 jumps"):
        robot.write(cmd)
    reference = last[0]
    cmd.q[0] = reference  # holding the last accepted target (a stop) is always allowed
    robot.write(cmd)
    cmd.q[2] = np.nan
    with pytest.raises(LimitViolation, match="joint3: non-finite"):
        robot.write(cmd)
    with pytest.raises(LimitViolation, match="expected 7 values"):
        robot.write(JointCommand(6))


def test_torque_mode_gravity_compensated_and_perturbed_plant_differs():
    """Torque mode adds the robot's (nominal) gravity compensation: with the true plant equal to
    the nominal model, zero torque holds; a perturbed plant (not known to the robot) sags."""
    def drift(perturbation):
        robot = make(perturbation=perturbation, torque_noise_std=0.0, velocity_noise_std=0.0)
        robot.start("torque")
        cmd = JointCommand(7)
        q0 = robot.read().q.copy()
        for _ in range(500):
            st = robot.read()
            robot.write(cmd)
        return float(np.max(np.abs(st.q - q0)))

    assert drift(0.0) < 1e-3
    assert drift(0.3) > 5e-3


def test_friction_of_the_plant_opposes_a_small_torque():
    """A torque below the breakaway level only creeps through eq. 2's linear zone:
    speed ~ tau / (F(qd0)/qd0); above it the joint accelerates freely."""
    def joint7_speed(tau):
        robot = make(torque_noise_std=0.0, velocity_noise_std=0.0)
        robot.start("torque")
        cmd = JointCommand(7)
        cmd.tau[6] = tau
        for _ in range(300):
            st = robot.read()
            robot.write(cmd)
        return abs(float(st.qd[6]))

    f = StribeckFriction.franka()
    slope = float(friction_torque(np.full(7, f.qd0[0]), f)[6] / f.qd0[6])
    creep = joint7_speed(0.1)
    assert creep == pytest.approx(0.1 / slope, rel=0.3)
    assert joint7_speed(1.0) > 20 * creep


def test_stribeck_model_matches_ni_2024_eq_2():
    f = StribeckFriction.franka()
    fast = friction_torque(np.full(7, 1.8), f)
    assert np.allclose(fast, f.fc, atol=1e-6)  # far above vs: Coulomb level
    outside = f.vs > f.qd0  # joint 5's vs (6e-4 rad/s) lies inside the linear zone
    at_vs = friction_torque(f.vs.copy(), f)
    assert np.allclose(at_vs[outside], (f.fc + (f.fs - f.fc) * math.exp(-1))[outside])
    assert np.allclose(friction_torque(-f.vs, f), -at_vs)  # odd
    # continuous at the edge of the linear zone
    assert np.allclose(friction_torque(f.qd0 * (1 - 1e-9), f), friction_torque(f.qd0 * (1 + 1e-9), f), atol=1e-6)
    assert f.vs[0] == pytest.approx(0.0729)  # Table 2's negative vs used by magnitude


def test_the_plant_runs_on_the_kernels_it_loaded_when_it_connected():
    """No numba compile after connect: every physics step calls the kernels with the argument types
    they were loaded for at connect. (A broadcast, read-only friction parameter once made numba
    compile a second version at the first step of the first run, inside the control loop.)"""
    from robodyn.simulation import plant_kernels

    kernels = ("drive_and_friction", "applied_forces", "inverse_input", "add_sensed_torque")
    for opts in ({}, {"robot": "ur5e", "rate_hz": 500.0, "friction_ripple": 0.1, "friction_load": 0.05,
                      "joint_stiffness": {"1": 3000.0}, "viscous": 0.1}):
        robot = make(**opts)
        loaded = {k: len(getattr(plant_kernels, k).signatures) for k in kernels}
        assert all(v >= 1 for v in loaded.values()), loaded
        for mode in ("position", "torque"):
            robot.start(mode)
            cmd = JointCommand(robot.model.dof)
            cmd.q[:] = robot.read().q
            for _ in range(20):
                robot.write(cmd)
                robot.read()
            robot.stop()
        assert {k: len(getattr(plant_kernels, k).signatures) for k in kernels} == loaded, opts


def test_the_plant_splits_friction_into_explicit_and_damping_parts_that_add_up_to_the_law():
    """The physics-step kernel hands MuJoCo friction as an explicit torque plus an implicit
    damping coefficient; together they must be eq. 2 at that velocity, with nothing explicit in the
    linear zone (else the integrator sees a stiff explicit term there). Also: the drive torque
    is saturated at tau_max both ways."""
    from robodyn.simulation.plant_kernels import drive_and_friction

    table = StribeckFriction.franka()
    f = StribeckFriction.create(7, table.fc, table.fs, table.vs, fv=0.05)
    slope = (friction_torque(f.qd0, f) - f.fv * f.qd0) / f.qd0  # F(qd0) / qd0
    tau_max = np.full(7, 10.0)
    speeds = (-1.5, -0.08, -0.011, -0.004, 0.0, 0.003, 0.0101, 0.05, 2.0)
    for v in speeds:
        qvel = np.full(7, v)
        tau, explicit, damping = np.zeros(7), np.zeros(7), np.zeros(7)
        ff = np.linspace(-30.0, 30.0, 7)  # beyond tau_max at both ends
        drive_and_friction(tau, explicit, damping, False, np.zeros(7), np.zeros(7), 0.0, np.zeros(7), qvel,
                           False, np.zeros(7), np.zeros(7), np.ones(7), np.ones(7), ff, tau_max,
                           f.fc, f.fs, f.vs, f.fv, f.qd0, slope)
        assert np.allclose(explicit + damping * qvel, friction_torque(qvel, f), rtol=1e-12, atol=1e-15), v
        inside = np.abs(qvel) < f.qd0
        assert np.all(explicit[inside] == 0.0) and np.all(explicit[~inside] != 0.0), v
        assert np.array_equal(tau, np.clip(ff, -tau_max, tau_max))


def test_rates_and_rotor_inertia_options():
    robot = make(rate_hz=500, rotor_inertia=[0.3] * 7)
    assert robot.describe().rate_hz == 500 and robot.substeps == 8
    assert np.allclose(robot.plant.mj.dof_armature, 0.3)
    st = robot.read()
    assert st.robot_time == pytest.approx(0.002)  # one 500 Hz cycle after connect
    with pytest.raises(ValueError, match="1000"):
        SimulatedRobot({"rate_hz": 250})
    with pytest.raises(ValueError, match="unknown sim option"):
        SimulatedRobot({"sped": 1})


def test_unknown_and_missing_drivers_give_one_sentence(monkeypatch):
    from robodyn.drivers import registry

    with pytest.raises(ValueError, match="unknown kind"):
        create_driver("kuka", {})
    options = "robodyn.drivers.sim:SimConfig"
    monkeypatch.setitem(registry._REGISTRY, "ghost", registry.DriverSpec(
        "ghost", "robodyn.drivers.ghost_driver:Ghost", options, "ghost", "a driver not installed"))
    with pytest.raises(ValueError, match="not part of this installation"):
        create_driver("ghost", {})
    monkeypatch.setitem(registry._REGISTRY, "ghost", registry.DriverSpec(
        "ghost", "robodyn_missing_client_lib.driver:Ghost", options, "ghost", "a driver whose extra is missing"))
    with pytest.raises(ValueError, match=r"pip install 'robodyn\[ghost\]'"):
        create_driver("ghost", {})


def test_friction_effects_ripple_with_position_and_grow_with_load():
    from robodyn.simulation.friction import FrictionEffects

    fx = FrictionEffects.create(2, ripple=0.2, cycles=2.0, load=0.05, seed=3)
    base = np.array([1.0, 1.0])  # explicit friction of the base law, moving forwards
    q = np.linspace(0, np.pi, 50)[:, None] * np.ones(2)
    extra = np.array([fx.explicit(qk, np.array([1.0, 1.0]), base, np.zeros(2), np.zeros(2)) for qk in q])
    assert np.allclose(extra, 0.2 * np.sin(2.0 * q + fx.phase))  # the level ripples with position
    loaded = fx.explicit(np.zeros(2), np.array([1.0, -1.0]), np.zeros(2), np.zeros(2), np.array([40.0, 40.0]))
    assert np.allclose(loaded, [2.0, -2.0], rtol=1e-3)  # 5 % of the transmitted torque, against the motion
    with pytest.raises(ValueError, match="ripple must be in"):
        FrictionEffects.create(2, ripple=1.5)


def test_an_elastic_joint_reads_its_deflection_on_the_encoder():
    """The encoder sits on the motor side of the spring: measured q = link q + tau / k."""
    k = 5000.0
    sim = SimulatedRobot({"robot": "panda", "seed": 2, "torque_noise_std": 0.0, "velocity_noise_std": 0.0,
                          "encoder_counts": 2**30, "joint_stiffness": {1: k}})
    sim.connect()
    sim.start("position")
    cmd = JointCommand(7)
    s = sim.read()
    cmd.q[:] = s.q
    for _ in range(1500):  # settle under gravity
        sim.write(cmd)
        s = sim.read()
    link_q, _ = sim.true_state()
    deflection = s.q[1] - link_q[1]
    assert abs(deflection - s.tau[1] / k) < 2e-4 * abs(s.tau[1] / k) + 1e-6
    assert abs(deflection) > 1e-4  # a visible effect: 0.35 mrad under the ready pose's 1.8 N.m
    assert np.allclose(s.q[[0, 2, 3, 4, 5, 6]], link_q[[0, 2, 3, 4, 5, 6]], atol=1e-8)  # rigid joints read the link
    assert sim.describe().info["joint_stiffness"] == {"1": k}
    sim.stop()
    sim.close()
