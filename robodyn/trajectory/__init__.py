"""Joint trajectories: one representation shared by the excitation designer, the daemon's
validator and the drivers. Every family evaluates q, qd, qdd and jerk at any time.

Families (serialised as documented JSON, see ``to_dict`` / ``trajectory_from_dict``):

- ``fourier``        finite Fourier series, Ni et al. 2024 eq. 7
                     q_i(t) = q0_i + sum_l a_il/(wf l) sin(wf l t) - b_il/(wf l) cos(wf l t)
- ``fourier_poly``   modified Fourier plus a 5th-order polynomial per period, Zhong et al. 2023 eqs. 6-7:
                     the polynomial makes q = q_start and qd = qdd = 0 at both ends of each period
- ``periodic_poly``  periodic polynomial, Chen et al. 2021 eqs. 17-18: theta = sum_k a_k (t mod T)^k with
                     theta(0) = theta(T) = a_0 and zero 1st..3rd derivatives at both ends
- ``point_to_point`` quintic rest-to-rest move (used for the move to the start)
- ``sweep``          constant-velocity forward/backward sweep of one joint (Ni et al. 2024 friction experiment)
- ``sampled``        arrays t, q (optional qd, qdd) interpolated by a quintic spline
- ``sequence``       several of the above back to back, each starting where the previous ended

JSON document::

    {"format": "robodyn.trajectory", "version": 1, "family": "...", "dof": n,
     "params": {...family parameters...}, "robot": "panda" (optional), "meta": {...}}

Parsing is strict: a field the family does not know is refused (naming the closest accepted
one), and every number is checked against a physical range before any arithmetic (``schema``).

Modules: ``base`` (the Trajectory interface), ``periodic`` (fourier, fourier_poly, periodic_poly),
``moves`` (point_to_point, sweep), ``sampled`` (sampled, sequence), ``schema`` (the fields of each
family and their ranges), ``documents`` (JSON).
"""

from .base import FORMAT, VERSION, Trajectory
from .documents import FAMILIES, load_trajectory, save_trajectory, trajectory_from_dict
from .moves import PointToPointTrajectory, SweepTrajectory
from .periodic import FourierPolyTrajectory, FourierTrajectory, PeriodicPolyTrajectory, periodic_poly_basis
from .sampled import SampledTrajectory, SequenceTrajectory

__all__ = ["FAMILIES", "FORMAT", "VERSION", "FourierPolyTrajectory", "FourierTrajectory", "PeriodicPolyTrajectory",
           "PointToPointTrajectory", "SampledTrajectory", "SequenceTrajectory", "SweepTrajectory", "Trajectory",
           "load_trajectory", "periodic_poly_basis", "save_trajectory", "trajectory_from_dict"]
