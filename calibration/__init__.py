"""robodyn.calibration"""
