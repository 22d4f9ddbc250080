"""robodyn: learn what a robot arm really is (dynamics identification and kinematic calibration)."""

__version__ = "0.1.0"
