"""Measurement planning (Li et al. 2023 section 4.1 step 2): random poses in the largest ISO 9283 /
GB/T 12642 test cube inside the workspace that are reachable, away from singularities, free of
self-collision and in the laser tracker's line of sight; optional D-optimal pose selection; the
five ISO 9283 points for the compensation test.

Everything is computed with the nominal model in the robot base frame. A pose is a target-ball
position with the ball's opening (``smr_axis``, in the flange frame) turned towards the tracker
within ``max_tilt_deg`` and a random spin about it; the joint angles come from the inverse
kinematics, taking the valid solution nearest a reference configuration so that consecutive poses
stay on one arm branch.

Checks of a configuration (all vectorised over a batch):
* limits: every joint at least ``joint_margin`` inside its range;
* singularity: the smallest singular value of the 6x6 Jacobian of the ball, angular rows scaled by
  ``CHARACTERISTIC_LENGTH`` to metres, at least ``min_sigma``;
* self-collision proxy: the arm is a chain of capsules of radius ``link_radius`` through the
  joint-frame origins, the flange and the ball, plus the base column; two capsules must not touch
  when the chain between them is longer than three radii (closer ones are one rigid wrist block or
  sit side by side by design, like a UR upper arm beside its base), and no point may come within
  ``link_radius`` of the floor;
* line of sight: the ball's opening faces the tracker within ``acceptance_deg`` and the beam from
  the tracker to the ball clears every capsule but the two that hold the ball.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from robodyn.robot.kinematics import chain_frames, forward_kinematics, geometric_jacobian, rot_z
from robodyn.robot.model import RobotModel

from .ik import ik_solutions, ur_branch, ur_geometry, ur_ik

CHARACTERISTIC_LENGTH = 0.5  # m


@dataclass(frozen=True)
class CellSetup:
    tracker_position: tuple = (2.0, 0.0, 0.2)  # m, robot base frame
    tool_offset: tuple = (0.0, 0.0, 0.0)  # m, target ball in the flange frame
    smr_axis: tuple = (0.0, 0.0, 1.0)  # the ball's opening direction in the flange frame
    acceptance_deg: float = 30.0  # half-angle a reflector accepts the beam (1.5" red-ring reflector)
    max_tilt_deg: float = 20.0  # sampled deviation of the opening from the tracker direction
    link_radius: float = 0.045  # m, capsule radius of the collision proxy
    floor_z: float = 0.0  # m, mounting plane in the base frame
    joint_margin: float = np.deg2rad(5.0)  # rad
    min_sigma: float = 0.05  # m: keeps a UR5 wrist ~9 deg and its elbow ~18 deg from singular

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else float(v)) for k, v in self.__dict__.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "CellSetup":
        kw = {}
        for k, v in d.items():
            if k not in cls.__dataclass_fields__:
                raise ValueError(f"setup.{k}: unknown field")
            kw[k] = tuple(float(x) for x in v) if isinstance(v, list) else float(v)
        return cls(**kw)


@dataclass(frozen=True)
class TestCube:
    center: np.ndarray
    edge: float

    def grid(self, per_axis: int = 3) -> np.ndarray:
        t = np.linspace(-0.5, 0.5, per_axis) * self.edge
        g = np.stack(np.meshgrid(t, t, t, indexing="ij"), axis=-1).reshape(-1, 3)
        return self.center + g

    def to_dict(self) -> dict:
        return {"center": self.center.tolist(), "edge": float(self.edge)}


def iso9283_points(cube: TestCube) -> np.ndarray:
    """P1..P5 of ISO 9283 on the cube's diagonal plane through its (y-, z-) and (y+, z+) edges:
    P1 at the centre, P2..P5 on the plane's diagonals, 10 % of the diagonal length from the corners."""
    h = cube.edge / 2
    corners = cube.center + np.array([[-h, -h, -h], [h, -h, -h], [h, h, h], [-h, h, h]])
    pts = [cube.center] + [c + 0.2 * (cube.center - c) for c in corners]
    return np.array(pts)


# --------------------------------------------------------------------------- geometry helpers


def segment_distance(p1, q1, p2, q2) -> np.ndarray:
    """Smallest distance between segments [p1, q1] and [p2, q2] (broadcast over leading axes)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a = np.sum(d1 * d1, -1)
    e = np.sum(d2 * d2, -1)
    f = np.sum(d2 * r, -1)
    c = np.sum(d1 * r, -1)
    b = np.sum(d1 * d2, -1)
    eps = 1e-12
    denom = a * e - b * b
    s = np.where(denom > eps, np.clip((b * f - c * e) / np.where(denom > eps, denom, 1.0), 0, 1), 0.0)
    s = np.where(a > eps, s, 0.0)
    t = np.where(e > eps, (b * s + f) / np.where(e > eps, e, 1.0), 0.0)
    # clamp t and recompute s for the clamped t
    t_cl = np.clip(t, 0, 1)
    s = np.where(t != t_cl, np.where(a > eps, np.clip((b * t_cl - c) / np.where(a > eps, a, 1.0), 0, 1), 0.0), s)
    t = t_cl
    closest = (p1 + d1 * s[..., None]) - (p2 + d2 * t[..., None])
    return np.linalg.norm(closest, axis=-1)


def _rotation_with_z(direction: np.ndarray) -> np.ndarray:
    """Rotations (..., 3, 3) whose z column is the given unit direction (x chosen deterministically)."""
    z = direction / np.linalg.norm(direction, axis=-1, keepdims=True)
    helper = np.where(np.abs(z[..., 2:3]) < 0.9, np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]))
    x = np.cross(helper, z)
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    y = np.cross(z, x)
    return np.stack([x, y, z], axis=-1)


def flange_targets(setup: CellSetup, ball_positions: np.ndarray, tilt: np.ndarray, tilt_dir: np.ndarray,
                   spin: np.ndarray) -> np.ndarray:
    """Flange poses (M, 4, 4) that put the ball at ``ball_positions`` with its opening towards the
    tracker, tilted by ``tilt`` (rad) in direction ``tilt_dir`` (rad) and spun by ``spin`` (rad)."""
    p = np.atleast_2d(ball_positions)
    to_tracker = np.asarray(setup.tracker_position, float) - p
    R0 = _rotation_with_z(to_tracker)
    tilted = np.stack([np.sin(tilt) * np.cos(tilt_dir), np.sin(tilt) * np.sin(tilt_dir), np.cos(tilt)], -1)
    opening = np.einsum("mij,mj->mi", R0, tilted)
    R_open = _rotation_with_z(opening) @ rot_z(spin)[:, :3, :3]
    R_align = _rotation_with_z(np.asarray(setup.smr_axis, float)[None])[0]  # smr axis -> its frame
    R = R_open @ R_align.T  # flange orientation: R @ smr_axis = opening
    T = np.tile(np.eye(4), (p.shape[0], 1, 1))
    T[:, :3, :3] = R
    T[:, :3, 3] = p - R @ np.asarray(setup.tool_offset, float)
    return T


def _key_points(robot: RobotModel, q: np.ndarray, setup: CellSetup) -> np.ndarray:
    """(K, m, 3): base column foot, joint-frame origins, flange, ball."""
    frames = chain_frames(robot.fixed, robot.joint_types, q)
    flange = frames[:, -1] @ robot.tool
    ball = flange[:, :3, :3] @ np.asarray(setup.tool_offset, float) + flange[:, :3, 3]
    foot = np.zeros((q.shape[0], 1, 3))
    foot[..., 2] = setup.floor_z
    origin = np.zeros((q.shape[0], 1, 3))
    return np.concatenate([foot, origin, frames[:, :, :3, 3], flange[:, None, :3, 3], ball[:, None]], axis=1)


def _distinct_point_index(robot: RobotModel, setup: CellSetup) -> np.ndarray:
    """Key points that do not coincide structurally (e.g. MDH frames 5 and 6 share an origin)."""
    q = np.random.default_rng(0).uniform(-3, 3, size=(4, robot.dof))
    pts = _key_points(robot, q, setup)
    keep = [0]
    for k in range(1, pts.shape[1]):
        if np.max(np.linalg.norm(pts[:, k] - pts[:, keep[-1]], axis=-1)) > 1e-9:
            keep.append(k)
    return np.array(keep)


def check_configurations(robot: RobotModel, q: np.ndarray, setup: CellSetup) -> dict:
    """Boolean arrays (K,) for each check and their conjunction 'valid'.

    Cheap checks run first and the expensive ones only on the survivors ('sigma_min' is nan where it
    was not needed); the per-check arrays are exact for the configurations that reached that check
    and False for the rest.
    """
    q = np.atleast_2d(q)
    K = q.shape[0]
    out = {k: np.zeros(K, dtype=bool) for k in ("limits", "collision_free", "line_of_sight", "nonsingular")}
    out["sigma_min"] = np.full(K, np.nan)
    margin = setup.joint_margin
    alive = np.all((q >= robot.q_min + margin) & (q <= robot.q_max - margin), axis=1)
    out["limits"] = alive.copy()
    idx = np.flatnonzero(alive)
    if idx.size:
        ok_c, ok_v = _collision_and_sight(robot, q[idx], setup)
        out["collision_free"][idx] = ok_c
        out["line_of_sight"][idx] = ok_v
        idx = idx[ok_c & ok_v]
    if idx.size:
        J = geometric_jacobian(robot, q[idx], point_in_tool=np.asarray(setup.tool_offset, float))
        J = np.concatenate([J[:, :3], J[:, 3:] * CHARACTERISTIC_LENGTH], axis=1)
        # smallest singular value from the eigenvalues of J^T J: cheaper than an SVD per pose
        sigma = np.sqrt(np.clip(np.linalg.eigvalsh(np.swapaxes(J, 1, 2) @ J)[:, 0], 0.0, None))
        out["sigma_min"][idx] = sigma
        out["nonsingular"][idx] = sigma >= setup.min_sigma
    out["valid"] = out["limits"] & out["collision_free"] & out["line_of_sight"] & out["nonsingular"]
    return out


def _collision_and_sight(robot: RobotModel, q: np.ndarray, setup: CellSetup) -> tuple[np.ndarray, np.ndarray]:
    pts = _key_points(robot, q, setup)[:, _distinct_point_index(robot, setup)]
    seg_a, seg_b = pts[:, :-1], pts[:, 1:]
    m = seg_a.shape[1]
    r = setup.link_radius
    collision_free = np.all(pts[:, 1:, 2] >= setup.floor_z + r, axis=1)
    lengths = np.linalg.norm(seg_b[0] - seg_a[0], axis=-1)  # rigid: the same for every q
    for i in range(m):
        for j in range(i + 2, m):
            if np.sum(lengths[i + 1:j]) < 3 * r:
                continue
            d = segment_distance(seg_a[:, i], seg_b[:, i], seg_a[:, j], seg_b[:, j])
            collision_free &= d >= 2 * r
    ball = pts[:, -1]
    tracker = np.asarray(setup.tracker_position, float)
    beam = tracker - ball
    flange = forward_kinematics(robot, q)
    opening = flange[:, :3, :3] @ np.asarray(setup.smr_axis, float)
    cos_angle = np.sum(opening * beam, -1) / (np.linalg.norm(opening, axis=-1) * np.linalg.norm(beam, axis=-1))
    visible = cos_angle >= np.cos(np.deg2rad(setup.acceptance_deg))
    for i in range(m - 2):  # the last two segments carry the ball and touch the beam at it
        d = segment_distance(seg_a[:, i], seg_b[:, i], ball, np.broadcast_to(tracker, ball.shape))
        visible &= d >= r
    return collision_free, visible


def _solutions(robot: RobotModel, targets: np.ndarray, q_ref: np.ndarray, *,
               same_branch: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """IK solutions (M, S, n) and a mask (M, S), closed form when available.

    ``same_branch`` keeps only the closed-form branch (shoulder/elbow/wrist) of q_ref: a measurement
    run that flips branches between poses needs long, collision-prone moves, and the poses of one
    run should come from one arm posture family.
    """
    geometry = ur_geometry(robot)
    if geometry is not None:
        q, ok = ur_ik(robot, geometry, targets, q_ref)
        if same_branch:
            keep = np.zeros(ok.shape[1], dtype=bool)
            keep[ur_branch(robot, geometry, q_ref)] = True
            ok = ok & keep
        return q, ok
    sols = [ik_solutions(robot, T, q_ref, attempts=3) for T in targets]
    S = max([s.shape[0] for s in sols] + [1])
    q = np.zeros((len(sols), S, robot.dof))
    ok = np.zeros((len(sols), S), dtype=bool)
    for k, s in enumerate(sols):
        q[k, :s.shape[0]] = s
        ok[k, :s.shape[0]] = True
    return q, ok


def best_configurations(robot: RobotModel, targets: np.ndarray, setup: CellSetup,
                        q_ref: np.ndarray, *, same_branch: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """For each flange target the valid IK solution nearest q_ref: (M, n) and found mask (M,)."""
    q, ok = _solutions(robot, targets, q_ref, same_branch=same_branch)
    M, S, n = q.shape
    flat = q.reshape(-1, n)
    valid = np.zeros(M * S, dtype=bool)
    idx = np.flatnonzero(ok.reshape(-1))
    if idx.size:
        valid[idx] = check_configurations(robot, flat[idx], setup)["valid"]
    valid = valid.reshape(M, S)
    dist = np.where(valid, np.linalg.norm(q - q_ref, axis=-1), np.inf)
    pick = np.argmin(dist, axis=1)
    return q[np.arange(M), pick], np.isfinite(dist[np.arange(M), pick])


# --------------------------------------------------------------------------- the test cube


SPINS = np.deg2rad([0.0, 90.0, 180.0, 270.0])


def _points_reachable(robot, setup, points, q_ref) -> bool:
    """Every point reachable with the ball facing the tracker, for at least one of four spins."""
    M = points.shape[0]
    P = np.repeat(points, SPINS.size, axis=0)
    spin = np.tile(SPINS, M)
    T = flange_targets(setup, P, np.zeros(P.shape[0]), np.zeros(P.shape[0]), spin)
    _, found = best_configurations(robot, T, setup, q_ref)
    return bool(np.all(found.reshape(M, SPINS.size).any(axis=1)))


def reach_radius(robot: RobotModel, setup: CellSetup, samples: int = 2000) -> float:
    q = np.random.default_rng(0).uniform(np.maximum(robot.q_min, -np.pi), np.minimum(robot.q_max, np.pi),
                                         size=(samples, robot.dof))
    pts = _key_points(robot, q, setup)[:, -1]
    return float(np.max(np.linalg.norm(pts, axis=1)))


def largest_test_cube(robot: RobotModel, setup: CellSetup, q_ref: np.ndarray, *,
                      centres: tuple[int, int] = (6, 5), bisections: int = 10) -> TestCube:
    """The largest axis-parallel cube whose 27 grid points are all valid measurement positions.

    Centres are searched on a grid in the vertical half-plane towards the tracker (ISO 9283 puts
    the cube where the robot is used; here, where the tracker can see it); the edge of each
    centre's cube is found by bisection. The winner is re-checked on a 5x5x5 grid and shrunk until
    it passes (bounded).
    """
    R = reach_radius(robot, setup)
    toward = np.asarray(setup.tracker_position, float)[:2]
    u = toward / max(np.linalg.norm(toward), 1e-9)
    best = TestCube(np.zeros(3), 0.0)
    for s in np.linspace(0.25, 0.7, centres[0]) * R:
        for h in np.linspace(-0.2, 0.5, centres[1]) * R:
            c = np.array([u[0] * s, u[1] * s, h])
            # a centre that cannot hold the best cube so far cannot win: one check instead of a bisection
            if not _points_reachable(robot, setup, TestCube(c, best.edge).grid(3), q_ref):
                continue
            lo = cube_edge_at(robot, setup, c, q_ref, best.edge, R, bisections)
            if lo > best.edge:
                best = TestCube(c, lo)
    if best.edge <= 0:
        raise ValueError("setup: no position in front of the robot is reachable with the target ball facing "
                         "the tracker; check tracker_position, tool_offset and smr_axis")
    for _ in range(10):
        if _points_reachable(robot, setup, best.grid(5), q_ref):
            break
        best = TestCube(best.center, best.edge * 0.95)
    return best


def cube_edge_at(robot: RobotModel, setup: CellSetup, centre, q_ref, low: float, high: float, bisections: int = 10) -> float:
    """The largest edge (bisected in ``low``..``high``) of the cube at ``centre`` whose 27 grid points are valid."""
    for _ in range(bisections):
        mid = 0.5 * (low + high)
        if _points_reachable(robot, setup, TestCube(centre, mid).grid(3), q_ref):
            low = mid
        else:
            high = mid
    return low


# --------------------------------------------------------------------------- random poses


@dataclass
class PoseSet:
    q: np.ndarray  # (N, n)
    positions: np.ndarray  # (N, 3) nominal ball positions
    attempts: int = 0


def sample_poses(robot: RobotModel, setup: CellSetup, cube: TestCube, count: int, q_ref: np.ndarray, *,
                 seed: int = 0, max_candidates: int | None = None) -> PoseSet:
    """``count`` valid random poses with the ball uniformly distributed in the cube."""
    if count < 1:
        raise ValueError(f"poses: expected a positive number of poses, got {count}")
    rng = np.random.default_rng(seed)
    limit = max_candidates if max_candidates is not None else 60 * count + 200
    qs, ps = [], []
    tried = 0
    while len(qs) < count and tried < limit:
        batch = min(max(4 * (count - len(qs)), 16), limit - tried)
        tried += batch
        P = cube.center + rng.uniform(-0.5, 0.5, size=(batch, 3)) * cube.edge
        # uniform over the spherical cap of half-angle max_tilt
        cos_max = np.cos(np.deg2rad(setup.max_tilt_deg))
        tilt = np.arccos(rng.uniform(cos_max, 1.0, size=batch))
        T = flange_targets(setup, P, tilt, rng.uniform(-np.pi, np.pi, batch), rng.uniform(-np.pi, np.pi, batch))
        q, found = best_configurations(robot, T, setup, q_ref)
        for k in np.flatnonzero(found):
            if len(qs) < count:
                qs.append(q[k])
                ps.append(P[k])
    if len(qs) < count:
        raise ValueError(f"poses: only {len(qs)} of {count} valid poses found among {tried} random candidates; "
                         "the cube, tracker position or checks leave too little room")
    return PoseSet(np.array(qs), np.array(ps), tried)


def reference_configuration(robot: RobotModel, setup: CellSetup, point: np.ndarray, q_guess=None) -> np.ndarray:
    """A valid configuration with the ball at ``point`` facing the tracker: the most dexterous one."""
    q_guess = np.zeros(robot.dof) if q_guess is None else np.asarray(q_guess, float)
    T = flange_targets(setup, np.repeat(point[None], SPINS.size, 0), np.zeros(SPINS.size), np.zeros(SPINS.size), SPINS)
    q, ok = _solutions(robot, T, q_guess)
    flat = q[ok]
    if flat.shape[0] == 0:
        raise ValueError(f"setup: the position {np.round(point, 4).tolist()} m cannot be reached facing the tracker")
    checks = check_configurations(robot, flat, setup)
    score = np.where(checks["valid"], checks["sigma_min"], -np.inf)
    if not np.isfinite(score.max()):
        raise ValueError(f"setup: no valid configuration at {np.round(point, 4).tolist()} m "
                         "(singular, colliding or out of the tracker's sight)")
    # mirror-image branches are equally dexterous: among the best, take the one with the smallest angles
    best = np.flatnonzero(score >= score.max() * (1 - 1e-6))
    return flat[best[int(np.argmin(np.linalg.norm(flat[best], axis=1)))]]


# --------------------------------------------------------------------------- optimal selection


def _log_det(J_blocks: np.ndarray, chosen, ridge: float) -> float:
    P = J_blocks.shape[2]
    A = np.einsum("mip,miq->pq", J_blocks[list(chosen)], J_blocks[list(chosen)]) + ridge * np.eye(P)
    return float(np.linalg.slogdet(A)[1])


def select_d_optimal(J_blocks: np.ndarray, count: int, ridge: float = 1e-9, *, exchange: bool = True,
                     max_passes: int = 20) -> np.ndarray:
    """D-optimal choice of ``count`` poses from a pool: J_blocks (M, 3, P), columns scaled.

    First a greedy pass adds, one at a time, the pose that most increases log det(J^T J) (the
    determinant lemma det(A + Jk^T Jk) = det(A) det(I + Jk A^-1 Jk^T)). Then, with ``exchange``,
    a DetMax-style exchange (Mitchell 1974, the selection FIGAROH offers) swaps a chosen pose for a
    candidate whenever that raises the determinant, until no swap does or ``max_passes`` passes
    over the chosen poses are done: greedy picks made early, with little information, get a
    second look.
    """
    M, _, P = J_blocks.shape
    if count > M:
        raise ValueError(f"poses: cannot choose {count} poses from a pool of {M}")
    A_inv = np.eye(P) / ridge
    chosen = []
    remaining = np.ones(M, dtype=bool)
    for _ in range(count):
        S = np.einsum("mip,pq,mjq->mij", J_blocks, A_inv, J_blocks) + np.eye(3)
        gain = np.where(remaining, np.linalg.slogdet(S)[1], -np.inf)
        k = int(np.argmax(gain))
        chosen.append(k)
        remaining[k] = False
        Jk = J_blocks[k]
        # Woodbury update of A^-1 for A + Jk^T Jk
        K = A_inv @ Jk.T @ np.linalg.inv(np.eye(3) + Jk @ A_inv @ Jk.T)
        A_inv = A_inv - K @ Jk @ A_inv
    if not exchange or count >= M:
        return np.array(chosen, dtype=int)
    A = np.einsum("mip,miq->pq", J_blocks[chosen], J_blocks[chosen]) + ridge * np.eye(P)
    for _ in range(max_passes):
        improved = False
        for slot in range(count):
            i = chosen[slot]
            Ji = J_blocks[i]
            A_minus = A - Ji.T @ Ji
            sign, logdet_minus = np.linalg.slogdet(A_minus)
            if sign <= 0:
                continue  # pose i carries a direction nothing else does: keep it
            inv_minus = np.linalg.inv(A_minus)
            S = np.einsum("mip,pq,mjq->mij", J_blocks, inv_minus, J_blocks) + np.eye(3)
            gain = np.linalg.slogdet(S)[1]
            gain = np.where(remaining, gain, -np.inf)
            j = int(np.argmax(gain))
            current = float(np.linalg.slogdet(np.eye(3) + Ji @ inv_minus @ Ji.T)[1])
            if gain[j] > current + 1e-9:
                chosen[slot] = j
                remaining[j] = False
                remaining[i] = True
                A = A_minus + J_blocks[j].T @ J_blocks[j]
                improved = True
        if not improved:
            break
    return np.array(chosen, dtype=int)


@dataclass
class Plan:
    robot_name: str
    setup: CellSetup
    cube: TestCube
    q: np.ndarray
    positions: np.ndarray
    iso_points: np.ndarray
    q_ref: np.ndarray
    seed: int
    selection: str = "random"
    info: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"format": "robodyn-calibration-plan/1", "robot": self.robot_name, "seed": self.seed,
                "selection": self.selection, "setup": self.setup.to_dict(), "cube": self.cube.to_dict(),
                "iso9283_points": self.iso_points.tolist(), "q_ref": self.q_ref.tolist(),
                "info": self.info,
                "poses": [{"id": f"P{k + 1:03d}", "q": self.q[k].tolist(), "position": self.positions[k].tolist()}
                          for k in range(self.q.shape[0])]}

    @classmethod
    def from_dict(cls, d: dict) -> "Plan":
        if d.get("format") != "robodyn-calibration-plan/1":
            raise ValueError(f"plan: not a robodyn calibration plan (format {d.get('format')!r})")
        poses = d.get("poses") or []
        if not poses:
            raise ValueError("plan.poses: the plan has no poses")
        try:
            q = np.array([p["q"] for p in poses], dtype=float)
            pos = np.array([p["position"] for p in poses], dtype=float)
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(f"plan.poses: each pose needs 'q' and 'position' lists ({exc})") from exc
        return cls(str(d["robot"]), CellSetup.from_dict(d["setup"]),
                   TestCube(np.array(d["cube"]["center"], float), float(d["cube"]["edge"])), q, pos,
                   np.array(d["iso9283_points"], float), np.array(d["q_ref"], float), int(d.get("seed", 0)),
                   str(d.get("selection", "random")), dict(d.get("info", {})))

    @property
    def ids(self) -> list[str]:
        return [f"P{k + 1:03d}" for k in range(self.q.shape[0])]


def sample_joint_space(robot: RobotModel, setup: CellSetup, count: int, *, seed: int = 0, low=None, high=None,
                       max_candidates: int | None = None) -> PoseSet:
    """``count`` valid poses drawn uniformly in joint space: no inverse kinematics, so it serves any
    arm. Without ``low``/``high`` the model's limits (capped at +-pi) are sampled; with them, the
    *controller's* joint values in ``low``..``high`` (through the robot's joint map). The same checks
    as the cube's poses apply (limits, singularity, self-collision, line of sight)."""
    rng = np.random.default_rng(seed)
    if low is None and high is None:
        lo = np.maximum(robot.q_min + setup.joint_margin, -np.pi)
        hi = np.minimum(robot.q_max - setup.joint_margin, np.pi)
        to_model = (lambda q: q)
    else:
        lo, hi = np.asarray(low, float), np.asarray(high, float)
        to_model = robot.joint_map.to_model
    if np.any(lo >= hi):
        raise ValueError("joint ranges: each low must be below its high")
    limit = max_candidates if max_candidates is not None else 400 * count + 2000
    qs, tried = [], 0
    while len(qs) < count and tried < limit:
        batch = min(max(20 * (count - len(qs)), 200), limit - tried)
        tried += batch
        q = to_model(rng.uniform(lo, hi, size=(batch, robot.dof)))
        ok = check_configurations(robot, q, setup)["valid"]
        qs.extend(q[ok][:count - len(qs)])
    if len(qs) < count:
        raise ValueError(f"poses: only {len(qs)} of {count} valid poses found among {tried} joint-space candidates; "
                         "widen the joint ranges or check the tracker position and the target's opening")
    q = np.array(qs)
    T = forward_kinematics(robot, q)
    positions = T[:, :3, :3] @ np.asarray(setup.tool_offset, float) + T[:, :3, 3]
    return PoseSet(q, positions, tried)


def plan_measurements(robot: RobotModel, setup: CellSetup, count: int, *, seed: int = 0,
                      cube: TestCube | None = None, q_ref=None, optimal_from: int = 0,
                      jacobian_blocks=None, joint_space: bool = False, joint_low=None, joint_high=None,
                      progress=None) -> Plan:
    """Plan ``count`` poses. With ``optimal_from`` > count, draw that many candidates and keep the
    D-optimal subset (``jacobian_blocks(q) -> (M, 3, P)`` gives the scaled identification Jacobian).

    ``joint_space`` draws the candidates uniformly in joint space instead of in the ISO 9283 cube
    (fast for arms without a closed-form inverse kinematics); the plan's cube is then only the
    bounding cube of the poses. ``progress(stage, fraction)`` is told each step."""
    report = progress or (lambda stage, fraction: None)
    if joint_space:
        report(f"drawing {max(optimal_from, count)} poses in joint space", 0.0)
        draw = (lambda n: sample_joint_space(robot, setup, n, seed=seed, low=joint_low, high=joint_high))
        pool = draw(max(optimal_from, count))
        info: dict = {"cube": "bounding cube of the poses (joint-space sampling), not an ISO 9283 test cube"}
        selection = "random (joint space)"
        chosen = np.arange(count)
        if optimal_from and optimal_from > count:
            if jacobian_blocks is None:
                raise ValueError("optimal: D-optimal selection needs the identification Jacobian")
            report("identification Jacobians of the candidates", 0.4)
            blocks = jacobian_blocks(pool.q)
            report("D-optimal selection (greedy, then DetMax exchange)", 0.6)
            greedy = select_d_optimal(blocks, count, exchange=False)
            chosen = select_d_optimal(blocks, count)
            selection = f"d-optimal (greedy + DetMax exchange) from {optimal_from} (joint space)"
            info["log_det"] = {"greedy": _log_det(blocks, greedy, 1e-9), "exchange": _log_det(blocks, chosen, 1e-9),
                               "first_drawn": _log_det(blocks, range(count), 1e-9)}
        q, pos = pool.q[chosen], pool.positions[chosen]
        lo_p, hi_p = pos.min(0), pos.max(0)
        box = TestCube(0.5 * (lo_p + hi_p), float(np.max(hi_p - lo_p)))
        info["candidates_tried"] = pool.attempts
        return Plan(robot.name, setup, box, q, pos, iso9283_points(box), q[0].copy(), seed, selection, info)
    if cube is None:
        report("the largest ISO 9283 test cube", 0.0)
        q0 = reference_configuration(robot, setup, _default_probe(robot, setup)) if q_ref is None else np.asarray(q_ref, float)
        cube = largest_test_cube(robot, setup, q0)
    q_ref = reference_configuration(robot, setup, cube.center, q_ref) if q_ref is None else np.asarray(q_ref, float)
    selection = "random"
    info: dict = {}
    if optimal_from and optimal_from > count:
        if jacobian_blocks is None:
            raise ValueError("optimal: D-optimal selection needs the identification Jacobian")
        report(f"drawing {optimal_from} candidate poses in the cube", 0.2)
        pool = sample_poses(robot, setup, cube, optimal_from, q_ref, seed=seed)
        report("identification Jacobians of the candidates", 0.5)
        blocks = jacobian_blocks(pool.q)
        report("D-optimal selection (greedy, then DetMax exchange)", 0.7)
        greedy = select_d_optimal(blocks, count, exchange=False)
        chosen = select_d_optimal(blocks, count)
        poses = PoseSet(pool.q[chosen], pool.positions[chosen], pool.attempts)
        selection = f"d-optimal (greedy + DetMax exchange) from {optimal_from}"
        info["log_det"] = {"greedy": _log_det(blocks, greedy, 1e-9), "exchange": _log_det(blocks, chosen, 1e-9),
                           "first_drawn": _log_det(blocks, range(count), 1e-9)}
    else:
        report(f"drawing {count} poses in the cube", 0.2)
        poses = sample_poses(robot, setup, cube, count, q_ref, seed=seed)
    info["candidates_tried"] = poses.attempts
    return Plan(robot.name, setup, cube, poses.q, poses.positions, iso9283_points(cube), q_ref, seed, selection, info)


def _default_probe(robot: RobotModel, setup: CellSetup) -> np.ndarray:
    """A point in front of the robot, towards the tracker, at half reach: where the search starts."""
    R = reach_radius(robot, setup)
    toward = np.asarray(setup.tracker_position, float)[:2]
    u = toward / max(np.linalg.norm(toward), 1e-9)
    for s in (0.5, 0.4, 0.6, 0.3):
        for h in (0.0, 0.1, 0.2, -0.1):
            p = np.array([u[0] * s * R, u[1] * s * R, h * R])
            try:
                reference_configuration(robot, setup, p)
                return p
            except ValueError:
                continue
    raise ValueError("setup: no valid measurement position found in front of the robot; check the tracker "
                     "position, tool offset and ball orientation")
