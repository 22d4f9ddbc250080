"""The simulated plant, below both halves: the MuJoCo arm with its drive and sensors
(:mod:`.mujoco_plant`), friction beyond the rigid bodies (:mod:`.friction`), the per-physics-step
kernels (:mod:`.plant_kernels`), the perturbed inertial parameters and start pose (:mod:`.plant`),
and the nominal drive gains of UR arms (:mod:`.ur_gains`). The simulated driver (robodyn.drivers.sim)
runs the plant behind the driver interface; identification's simulated-data generators use it directly.
"""
