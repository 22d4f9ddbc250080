"""What a calibration measures, and the weighted residual that compares it with the model.

At every pose (joint angles q) any of these can be measured, each with its own stated noise:

* **points**: the positions of one or several targets on the flange (SMRs on a nest, a probe tip),
  as a laser tracker or a CMM gives them; σ per coordinate in m;
* **poses**: position and orientation of a target frame (a 6-DOF probe such as a tracker's
  T-Mac, a camera looking at a board, a mocap marker set); σ in m and in rad;
* **planar contacts**: a target held against a plane whose pose is unknown (the touch-probe or
  "planar constraint" calibration without an external sensor); σ in m along the normal.

These are the measurement types of FIGAROH (Nguyen et al., markers with measurable position
and/or orientation, camera poses, planar constraints), expressed in robodyn's own parameter
model. Every observation enters the fit as residual / σ, so a precise tracker point outweighs a
camera's orientation by exactly their stated noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robodyn.robot.kinematics import rotation_error

from .parameters import (GeometricModel, all_target_positions, flange_poses, measurement_jacobians,
                         plane_distance, plane_jacobian, tool_rotation)

DEFAULT_POSITION_SIGMA = 15e-6  # m: a laser tracker (Leica AT960 class, 15 um + 6 um/m) when no noise is stated
ANGLE_LENGTH = 0.5  # m: orientation rows expressed as arc length for identifiability reports


def _per_point(field_name: str, value, shape, default: float) -> np.ndarray:
    if value is None:
        return np.full(shape, default)
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        arr = np.full(shape, float(arr))
    elif arr.ndim == 1 and len(shape) == 2 and arr.shape[0] == shape[0]:
        arr = np.repeat(arr[:, None], shape[1], axis=1)
    if arr.shape != shape:
        raise ValueError(f"{field_name}: expected shape {shape}, got {arr.shape}")
    arr = np.where(np.isnan(arr), default, arr)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{field_name}: a stated noise must be a finite number > 0")
    return arr


class MeasurementSet:
    """Joint angles (model joint variables) and what was measured at them, under one load.

    ``p`` holds target positions, (N, 3) for one target or (N, K, 3) for K, NaN where a target was
    not seen; ``points`` keeps them as (N, K, 3) and ``p`` reads back the first target's (N, 3).
    ``rotation`` (N, K, 3, 3) holds measured orientations of oriented targets (NaN where none);
    ``plane`` (N, K) the index of the plane a target touches (-1: none). ``sigma``,
    ``sigma_rotation`` and ``sigma_plane`` are the stated noise (scalars or (N, K)).
    ``q_controller`` keeps the joint values as the controller reported them, for reports.
    """

    def __init__(self, q, p=None, ids=None, load=None, sigma=None, rotation=None, sigma_rotation=None,
                 plane=None, sigma_plane=None, q_controller=None):
        self.q = np.atleast_2d(np.asarray(q, dtype=float))
        self.ids = list(ids) if ids else []
        self.load = load
        N = self.q.shape[0]
        K = 1
        if p is not None:
            p = np.array(p, dtype=float)
            if p.ndim == 2:
                p = p[:, None, :]
            elif p.ndim == 1:
                p = p[None, None, :]
            K = p.shape[1]
        for other in (rotation, plane):
            if other is not None:
                K = max(K, np.asarray(other).shape[1])
        if p is None:
            p = np.full((N, K, 3), np.nan)
        if p.shape != (N, K, 3):
            raise ValueError(f"measurements.xyz: expected {N} poses of {K} targets with 3 coordinates, got shape "
                             f"{p.shape}")
        self.points = p
        self.rotation = None if rotation is None else np.asarray(rotation, dtype=float)
        if self.rotation is not None and self.rotation.shape != (N, K, 3, 3):
            raise ValueError(f"measurements.rotation: expected shape {(N, K, 3, 3)}, got {self.rotation.shape}")
        self.plane = None if plane is None else np.asarray(plane, dtype=int)
        if self.plane is not None and self.plane.shape != (N, K):
            raise ValueError(f"measurements.plane: expected shape {(N, K)}, got {self.plane.shape}")
        if not self.ids:
            self.ids = [f"P{k + 1:03d}" for k in range(N)]
        if len(self.ids) != N:
            raise ValueError(f"pose_id: {len(self.ids)} labels for {N} poses")
        if not np.all(np.isfinite(self.q)):
            raise ValueError(f"measurements.q: non-finite value in pose {self.ids[int(np.argwhere(~np.isfinite(self.q))[0, 0])]}")
        partial = np.isfinite(p).any(-1) & ~np.isfinite(p).all(-1)
        if partial.any():
            n, k = np.argwhere(partial)[0]
            raise ValueError(f"measurements.xyz: pose {self.ids[n]} target {k + 1} has some coordinates but not all")
        if np.isinf(p).any():
            n = int(np.argwhere(np.isinf(p))[0, 0])
            raise ValueError(f"measurements.xyz: non-finite value in pose {self.ids[n]}")
        seen = self.point_mask.any(1) | self.rotation_mask.any(1) | self.plane_mask.any(1)
        if not seen.all():
            raise ValueError(f"measurements: pose {self.ids[int(np.flatnonzero(~seen)[0])]} has no measurement")
        self.sigma = _per_point("sigma", sigma, (N, K), DEFAULT_POSITION_SIGMA)
        if self.rotation_mask.any() and sigma_rotation is None:
            raise ValueError("sigma_rot: orientation measurements need their stated noise (rad), e.g. from the "
                             "probe's or camera's specification")
        self.sigma_rotation = _per_point("sigma_rot", sigma_rotation, (N, K), 1.0)
        self.sigma_plane = _per_point("sigma_plane", sigma_plane, (N, K), DEFAULT_POSITION_SIGMA)
        self.q_controller = None
        if q_controller is not None:
            self.q_controller = np.atleast_2d(np.asarray(q_controller, dtype=float))
            if self.q_controller.shape != self.q.shape:
                raise ValueError("measurements.q_controller: shape differs from q")

    @property
    def p(self) -> np.ndarray:
        """The first target's positions (N, 3), a view: the single-target case."""
        return self.points[:, 0]

    # ----------------------------------------------------------------- views

    def __len__(self) -> int:
        return int(self.q.shape[0])

    @property
    def target_count(self) -> int:
        return int(self.points.shape[1])

    @property
    def point_mask(self) -> np.ndarray:
        return np.isfinite(self.points).all(-1)

    @property
    def rotation_mask(self) -> np.ndarray:
        if self.rotation is None:
            return np.zeros(self.points.shape[:2], bool)
        return np.isfinite(self.rotation).all((-1, -2))

    @property
    def plane_mask(self) -> np.ndarray:
        if self.plane is None:
            return np.zeros(self.points.shape[:2], bool)
        return self.plane >= 0

    @property
    def controller_q(self) -> np.ndarray:
        return self.q if self.q_controller is None else self.q_controller

    def subset(self, index) -> "MeasurementSet":
        index = np.asarray(index, dtype=int)
        pick = (lambda a: None if a is None else a[index])
        return MeasurementSet(self.q[index], self.points[index], [self.ids[i] for i in index], self.load,
                              self.sigma[index], pick(self.rotation), self.sigma_rotation[index], pick(self.plane),
                              self.sigma_plane[index], pick(self.q_controller))

    def with_q(self, q) -> "MeasurementSet":
        """The same observations at other joint angles (e.g. after the elastic deflection)."""
        return MeasurementSet(q, self.points, list(self.ids), self.load, self.sigma, self.rotation,
                              self.sigma_rotation, self.plane, self.sigma_plane, self.q_controller)

    def with_points(self, p) -> "MeasurementSet":
        return MeasurementSet(self.q, p, list(self.ids), self.load, self.sigma, self.rotation, self.sigma_rotation,
                              self.plane, self.sigma_plane, self.q_controller)

    def structure(self) -> "Structure":
        pm, rm, lm = self.point_mask, self.rotation_mask, self.plane_mask
        pairs = sorted({(int(k), int(self.plane[n, k])) for n, k in np.argwhere(lm)}) if lm.any() else []
        return Structure(tuple(int(k) for k in np.flatnonzero(pm.any(0))),
                         tuple(int(k) for k in np.flatnonzero(rm.any(0))), tuple(pairs))

    def describe(self, gm: GeometricModel | None = None) -> str:
        names = gm.target_names if gm is not None else [f"target {k + 1}" for k in range(self.target_count)]
        parts = []
        pm = self.point_mask
        if pm.any():
            parts.append(f"{int(pm.sum())} points of {', '.join(names[k] for k in np.flatnonzero(pm.any(0)))}")
        if self.rotation_mask.any():
            parts.append(f"{int(self.rotation_mask.sum())} orientations")
        if self.plane_mask.any():
            parts.append(f"{int(self.plane_mask.sum())} planar contacts")
        return f"{len(self)} poses: " + ", ".join(parts)


@dataclass(frozen=True)
class Structure:
    """Which kinds of rows a data set has: targets with points, targets with orientations, and
    (target, plane) contact pairs. Used to test identifiability on generic poses."""

    point_targets: tuple[int, ...] = (0,)
    rotation_targets: tuple[int, ...] = ()
    plane_pairs: tuple[tuple[int, int], ...] = ()


# --------------------------------------------------------------------------- residuals


class Residual:
    """The weighted residual (model - measured) / σ of one measurement set and its Jacobian."""

    def __init__(self, gm: GeometricModel, meas: MeasurementSet):
        if meas.target_count > len(gm.targets):
            raise ValueError(f"targets: the data have {meas.target_count} targets but the model {len(gm.targets)}")
        if meas.plane_mask.any() and int(meas.plane.max()) >= len(gm.planes):
            raise ValueError(f"planes: the data name plane {int(meas.plane.max()) + 1} but the model has "
                             f"{len(gm.planes)}")
        self.gm = gm
        self.meas = meas
        self.points = np.argwhere(meas.point_mask)  # (M, 2): pose, target
        self.rotations = np.argwhere(meas.rotation_mask)
        self.contacts = np.argwhere(meas.plane_mask)
        self.targets = sorted({int(k) for k in np.concatenate([self.points[:, 1], self.rotations[:, 1],
                                                                self.contacts[:, 1]])})
        self.slot = {k: s for s, k in enumerate(self.targets)}
        w_p = 1.0 / meas.sigma[self.points[:, 0], self.points[:, 1]]
        w_r = 1.0 / meas.sigma_rotation[self.rotations[:, 0], self.rotations[:, 1]]
        w_c = 1.0 / meas.sigma_plane[self.contacts[:, 0], self.contacts[:, 1]]
        self.weights = np.concatenate([np.repeat(w_p, 3), np.repeat(w_r, 3), w_c])
        self.kind = np.concatenate([np.zeros(3 * len(w_p), int), np.ones(3 * len(w_r), int), np.full(len(w_c), 2)])
        self.row_pose = np.concatenate([np.repeat(self.points[:, 0], 3), np.repeat(self.rotations[:, 0], 3),
                                        self.contacts[:, 0]]).astype(int)

    @property
    def size(self) -> int:
        return int(self.weights.size)

    def _predicted_positions(self, params, q) -> np.ndarray:
        return all_target_positions(self.gm, params, q)

    def raw(self, params: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
        """Unweighted residual (model - measured): m for points and contacts, rad for orientations."""
        gm, meas = self.gm, self.meas
        q = meas.q if q is None else q
        pos = self._predicted_positions(params, q)
        parts = [(pos[self.points[:, 0], self.points[:, 1]] - meas.points[self.points[:, 0], self.points[:, 1]]).reshape(-1)]
        if len(self.rotations):
            T = flange_poses(gm, params, q[self.rotations[:, 0]])
            R_model = np.stack([T[m, :3, :3] @ tool_rotation(gm, params, int(k))
                                for m, k in enumerate(self.rotations[:, 1])])
            R_meas = meas.rotation[self.rotations[:, 0], self.rotations[:, 1]]
            parts.append(rotation_error(R_model, R_meas).reshape(-1))  # rotates the measurement onto the model
        else:
            parts.append(np.zeros(0))
        if len(self.contacts):
            dist = np.empty(len(self.contacts))
            for m, (n, k) in enumerate(self.contacts):
                dist[m] = plane_distance(gm, params, pos[n, k][None], int(meas.plane[n, k]))[0]
            parts.append(dist)
        else:
            parts.append(np.zeros(0))
        return np.concatenate(parts)

    def __call__(self, params: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
        return self.raw(params, q) * self.weights

    def jacobian(self, params: np.ndarray, q: np.ndarray | None = None, *, joint: bool = False):
        """Weighted d(residual)/d(parameters) (M, P); with ``joint`` also d(residual)/dq per row (M, n)."""
        gm, meas = self.gm, self.meas
        q = meas.q if q is None else q
        Jp, Jr = measurement_jacobians(gm, params, q, self.targets)
        s = self.slot
        rows = [Jp[self.points[:, 0], [s[int(k)] for k in self.points[:, 1]]].reshape(-1, gm.size)]
        if len(self.rotations):
            Jrot = Jr[self.rotations[:, 0], [s[int(k)] for k in self.rotations[:, 1]]]  # (M, 3, P)
            r = self.raw(params, q)[3 * len(self.points):3 * len(self.points) + 3 * len(self.rotations)]
            Jrot = np.einsum("mij,mjp->mip", _inverse_left_jacobian(r.reshape(-1, 3)), Jrot)
            rows.append(Jrot.reshape(-1, gm.size))
        else:
            rows.append(np.zeros((0, gm.size)))
        if len(self.contacts):
            pos = self._predicted_positions(params, q)
            Jc = np.zeros((len(self.contacts), gm.size))
            for m, (n, k) in enumerate(self.contacts):
                j = int(meas.plane[n, k])
                F = _plane_normal(gm, params, j)
                Jc[m] = F @ Jp[n, s[int(k)]]
                Jc[m, gm.indices(gm.plane_names(j))] = plane_jacobian(gm, params, pos[n, k][None], j)[0]
            rows.append(Jc)
        else:
            rows.append(np.zeros((0, gm.size)))
        J = np.vstack(rows) * self.weights[:, None]
        if not joint:
            return J
        return J, self.joint_jacobian(params, q)

    def joint_jacobian(self, params: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Weighted d(residual)/d(joint angles), (M, n): for deflection models."""
        from robodyn.robot.kinematics import geometric_jacobian

        from .parameters import base_transform, robot_for, tool_offset

        gm, meas = self.gm, self.meas
        robot = robot_for(gm, params)
        R_B = base_transform(gm, params)[:3, :3]
        n = gm.dof
        per_target = {}
        for k in self.targets:
            J6 = geometric_jacobian(robot, q, point_in_tool=tool_offset(gm, params, k))
            per_target[k] = (np.einsum("ij,njk->nik", R_B, J6[:, :3]), np.einsum("ij,njk->nik", R_B, J6[:, 3:]))
        rows = [np.stack([per_target[int(k)][0][nn] for nn, k in self.points]).reshape(-1, n)
                if len(self.points) else np.zeros((0, n))]
        if len(self.rotations):
            Jw = np.stack([per_target[int(k)][1][nn] for nn, k in self.rotations])
            r = self.raw(params, q)[3 * len(self.points):3 * len(self.points) + 3 * len(self.rotations)]
            rows.append(np.einsum("mij,mjk->mik", _inverse_left_jacobian(r.reshape(-1, 3)), Jw).reshape(-1, n))
        else:
            rows.append(np.zeros((0, n)))
        if len(self.contacts):
            Jc = np.zeros((len(self.contacts), n))
            for m, (nn, k) in enumerate(self.contacts):
                Jc[m] = _plane_normal(gm, params, int(meas.plane[nn, k])) @ per_target[int(k)][0][nn]
            rows.append(Jc)
        return np.vstack(rows) * self.weights[:, None]

    def metric_jacobian(self, params: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
        """Unweighted Jacobian with orientation rows as arc length at ANGLE_LENGTH (all rows in m)."""
        J = self.jacobian(params, q) / self.weights[:, None]
        J[self.kind == 1] *= ANGLE_LENGTH
        return J

    # ----------------------------------------------------------------- reports

    def point_errors(self, params: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
        """Distance model - measured of every measured point (M,), m."""
        r = self.raw(params, q)
        return np.linalg.norm(r[:3 * len(self.points)].reshape(-1, 3), axis=1)

    def rotation_errors(self, params: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
        r = self.raw(params, q)
        a = 3 * len(self.points)
        return np.linalg.norm(r[a:a + 3 * len(self.rotations)].reshape(-1, 3), axis=1)

    def contact_errors(self, params: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
        r = self.raw(params, q)
        return np.abs(r[3 * len(self.points) + 3 * len(self.rotations):])

    def point_labels(self) -> list[str]:
        names = self.gm.target_names
        multi = self.meas.target_count > 1
        return [self.meas.ids[n] + (f" {names[k]}" if multi else "") for n, k in self.points]


def _inverse_left_jacobian(phi: np.ndarray) -> np.ndarray:
    """J_l^-1 of SO(3) for rotation vectors (M, 3): how log(exp(dw) R) moves with a small world-frame
    rotation dw of R, so the orientation rows stay exact away from a zero residual."""
    theta = np.linalg.norm(phi, axis=1)
    K = np.zeros((len(phi), 3, 3))
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -phi[:, 2], phi[:, 1], -phi[:, 0]
    K[:, 1, 0], K[:, 2, 0], K[:, 2, 1] = phi[:, 2], -phi[:, 1], phi[:, 0]
    small = theta < 1e-6
    t = np.where(small, 1.0, theta)
    coef = np.where(small, 1.0 / 12.0, 1.0 / t ** 2 - (1.0 + np.cos(t)) / (2.0 * t * np.sin(t)))
    return np.eye(3) - 0.5 * K + coef[:, None, None] * (K @ K)


def _plane_normal(gm: GeometricModel, params: np.ndarray, j: int) -> np.ndarray:
    from .parameters import plane_frame

    return plane_frame(gm, params, j)[:3, 2]


def plane_from_points(points: np.ndarray) -> np.ndarray:
    """The best plane through points (M, 3) as a frame (z = normal, origin = centroid)."""
    c = points.mean(0)
    _, _, Vt = np.linalg.svd(points - c)
    n = Vt[2]
    helper = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, n)
    x /= np.linalg.norm(x)
    F = np.eye(4)
    F[:3, :3] = np.column_stack([x, np.cross(n, x), n])
    F[:3, 3] = c
    return F
