"""Nominal current-to-torque gains of UR arms, used until a load/unload pair has identified the
real ones (``robodyn.identification.drive_gains``, ``robodyn drive-gains``)."""

from __future__ import annotations

# N.m/A. UR publishes none; these are round figures of the right order (size-3 and size-1 joints).
NOMINAL_DRIVE_GAINS = {"ur5e": (13.0, 13.0, 13.0, 9.0, 9.0, 9.0), "ur5": (13.0, 13.0, 13.0, 9.0, 9.0, 9.0),
                       "ur10e": (15.0, 15.0, 15.0, 9.5, 9.5, 9.5)}
