"""The MuJoCo plant on its own (robodyn.simulation.mujoco_plant) and the simulated driver over it:
the driver adds lifecycle, limits, pacing and telemetry, never physics, and publishes the plant's
options under the plant's names."""

from dataclasses import fields

import numpy as np
import pytest

from robodyn.drivers.base import JointCommand
from robodyn.drivers.sim import SimConfig, SimulatedRobot
from robodyn.simulation.mujoco_plant import POSITION, TORQUE, MujocoPlant, PlantOptionError, PlantOptions

ELASTIC_UR = {"robot": "ur5e", "rate_hz": 500.0, "seed": 3, "perturbation": 0.1, "friction_ripple": 0.2,
              "friction_load": 0.03, "joint_stiffness": {1: 8000.0}, "viscous": 0.05, "encoder_counts": 4096}


def test_the_driver_publishes_every_plant_option_under_its_name_and_default():
    plant = {f.name: f.default for f in fields(PlantOptions)}
    driver = {spec.name: spec.default for spec in SimConfig.schema()}
    assert set(driver) - set(plant) == {"speed"}  # pacing: the driver's own
    assert {name: driver[name] for name in plant} == plant
    cfg = SimConfig.from_dict(dict(ELASTIC_UR, speed=2.0))
    assert cfg.plant_options() == PlantOptions(**ELASTIC_UR)


@pytest.mark.parametrize("mode", [POSITION, TORQUE])
def test_the_driver_adds_no_physics_to_its_plant(mode):
    """Same options, same commands: the driver's state is the plant's sensed state, bit for bit,
    in both modes and braked (before the start and after the stop), noise and elastic joint included."""
    robot = SimulatedRobot(ELASTIC_UR)
    robot.connect()
    plant = MujocoPlant(PlantOptions(**ELASTIC_UR))
    plant.build()
    n = plant.model.dof
    q, qd, tau = np.empty(n), np.empty(n), np.empty(n)

    def same(state):
        plant.step()
        plant.sense(q, qd, tau)
        assert state.q.tobytes() == q.tobytes() and state.qd.tobytes() == qd.tobytes()
        assert state.tau.tobytes() == tau.tobytes()
        assert state.signal("q_d").tobytes() == plant.cmd_q.tobytes()
        assert state.signal("tau_d").tobytes() == plant.tau_cmd.tobytes()

    plant.sense(q, qd, tau)  # the connect's sample
    for _ in range(3):
        same(robot.read())
    robot.start(mode)
    plant.release(mode)
    cmd = JointCommand(n)
    same(robot.read())
    q0 = q.copy()
    for k in range(120):
        if mode == POSITION:
            cmd.q[:] = q0 + 2e-4 * k * np.cos(np.arange(n))
            cmd.qd[:] = 0.1 * np.cos(np.arange(n))
            plant.command_position(cmd.q, cmd.qd, cmd.qdd)
        else:
            cmd.tau[:] = 0.5 * np.sin(k / 20.0 + np.arange(n))
            plant.command_torque(cmd.tau)
        robot.write(cmd)
        same(robot.read())
    moved = np.max(np.abs(q - q0))
    assert moved > 1e-3  # the comparison covers a moving arm
    robot.stop()
    plant.brake()
    for _ in range(3):
        same(robot.read())
    assert [a.tobytes() for a in robot.true_state()] == [a.tobytes() for a in plant.true_state()]


def test_a_plant_option_out_of_range_names_the_option_plain_or_as_the_drivers():
    with pytest.raises(PlantOptionError, match=r"^initial_q: expected 7 positions"):
        MujocoPlant(PlantOptions(initial_q=[0.0] * 6))
    with pytest.raises(PlantOptionError, match=r"^joint_stiffness: joint index 9 outside 0..6"):
        MujocoPlant(PlantOptions(joint_stiffness={9: 100.0}))
    with pytest.raises(PlantOptionError, match=r"^physics_dt: must divide the control period 0.001 s"):
        MujocoPlant(PlantOptions(physics_dt=0.0003))
    with pytest.raises(ValueError, match=r"^driver.initial_q: expected 7 positions"):
        SimulatedRobot({"initial_q": [0.0] * 6})
    with pytest.raises(ValueError, match=r"^driver.physics_dt: must divide the control period 0.001 s"):
        SimConfig.from_dict({"physics_dt": 0.0003})


def test_a_braked_plant_holds_still_and_reads_its_static_load():
    plant = MujocoPlant(PlantOptions(torque_noise_std=0.0, velocity_noise_std=0.0, encoder_counts=2**30))
    plant.build()
    n = plant.model.dof
    q, qd, tau = np.empty(n), np.empty(n), np.empty(n)
    for _ in range(50):
        plant.step()
    plant.sense(q, qd, tau)
    assert np.allclose(q, plant.initial_q, atol=1e-8) and np.all(qd == 0.0)
    assert np.array_equal(tau, plant.data.qfrc_bias)  # gravity, held
    assert np.max(np.abs(tau)) > 1.0
    with pytest.raises(ValueError, match="plant mode"):
        plant.release("velocity")
