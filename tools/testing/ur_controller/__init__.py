"""A protocol-level simulated Universal Robots controller for testing real UR clients on loopback.

The real ``ur_rtde`` library (pinned: ur-rtde 1.6.5) connects to it unchanged: RTDE on 30004,
the dashboard on 29999, the control script on 30003. The arm is the project's simulator
(``drivers/sim.py``, MuJoCo) at the RTDE rate. See docs/drivers.md.
"""

from .plant import PlantConfig, URPlant, nominal_drive_gains, payload_parameters
from .server import ControllerConfig, URController

__all__ = ["ControllerConfig", "PlantConfig", "URController", "URPlant", "nominal_drive_gains",
           "payload_parameters"]
