"""The simulated plant's physics, below both halves: friction beyond the rigid bodies
(:mod:`.friction`), the per-physics-step kernels (:mod:`.plant_kernels`), the perturbed inertial
parameters and start pose (:mod:`.plant`), and the nominal drive gains of UR arms (:mod:`.ur_gains`).
The simulated driver (robodyn.drivers.sim) and identification's simulated-data generators share them.
"""
