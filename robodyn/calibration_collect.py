"""`robodyn calibrate collect` through the acquisition daemon: every planned pose is driven by the
daemon (which validates it like every run), the joints are read at rest, and a measurement is asked
from a source of :mod:`robodyn.calibration.collect` (``file:`` or ``tcp:``). It joins the daemon's
client and the calibration package, so it sits above both (docs/architecture.md).

:class:`SimulatedTrackerServer` is a TCP hook for tests and demonstrations: it reads where the
daemon's arm is and answers with a simulated robot's target positions plus tracker noise, and can
drop chosen poses.
"""

from __future__ import annotations

import socketserver
import threading
import time
from pathlib import Path

import numpy as np

from robodyn.calibration.collect import (POSITION_SCALE, REACH_TOLERANCE, REST_SPREAD, CollectedPose, Collection,
                                         MeasurementSource, open_source)
from robodyn.errors import UserError

TRANSIENT_REFUSALS = ("unavailable", "busy")  # a stale state sample or a run still finishing: ask again
SUBMIT_ATTEMPTS = 5
SUBMIT_BACKOFF_S = 0.5


def joints_at_rest(client, window: float, samples: int) -> tuple[np.ndarray, float, int]:
    """Mean controller joint values over ``window`` seconds of fresh state, their largest spread and
    the number of distinct samples (bounded: at most ``4 * samples`` status calls)."""
    seen, qs = set(), []
    dt = window / max(samples - 1, 1)
    for _ in range(4 * samples):
        st = client.status()["state"]
        if st.get("q") is not None and st.get("seq") not in seen:
            seen.add(st.get("seq"))
            qs.append(np.asarray(st["q"], float))
        if len(qs) >= samples:
            break
        time.sleep(dt)
    if len(qs) < 2:
        raise UserError("collect: the daemon streams no fresh joint state; is the driver running?")
    q = np.array(qs)
    return q.mean(0), float(np.max(q.max(0) - q.min(0))), len(qs)


def collect_plan(client, robot_name: str, q_plan: np.ndarray, ids: list[str], source: MeasurementSource, *,
                 settle: float = 0.5, window: float = 0.5, samples: int = 10, timeout: float = 30.0,
                 run_timeout: float = 600.0, progress=None) -> Collection:
    """Visit the poses (controller joint values) and pair each with a measurement from ``source``."""
    from robodyn.daemon.client import DaemonError
    from robodyn.trajectory import PointToPointTrajectory

    out = Collection()
    for pose_id, q in zip(ids, q_plan):
        pose = CollectedPose(pose_id, np.asarray(q, float))
        out.poses.append(pose)
        hold = PointToPointTrajectory(q, q, max(settle, 0.05))  # the move to it is planned by the daemon
        accepted, refusal = None, None
        for attempt in range(SUBMIT_ATTEMPTS):
            try:
                accepted = client.submit_run(robot_name, hold.to_dict(robot=robot_name),
                                             label=f"calibration pose {pose_id}")
                break
            except DaemonError as exc:
                refusal = exc
                if exc.code not in TRANSIENT_REFUSALS:
                    break
                time.sleep(SUBMIT_BACKOFF_S * (attempt + 1))  # nothing moved: ask again, a bounded number of times
        if accepted is None:
            if refusal.code in ("limit_violation", "invalid_trajectory"):
                pose.skipped = f"refused by the daemon before any motion: {refusal.message}"
                continue
            out.stopped = f"the daemon refused pose {pose_id}: {refusal.message}"
            pose.skipped = out.stopped
            break
        pose.run_id = accepted["run_id"]
        final = client.wait_run(pose.run_id, timeout=run_timeout)
        if final["state"] != "completed":
            reason = final.get("abort_reason")
            out.stopped = f"run {pose.run_id} to pose {pose_id} ended {final['state']}" + (f": {reason}" if reason else "")
            pose.skipped = out.stopped
            break
        q_rest, spread, _ = joints_at_rest(client, window, samples)
        pose.spread = spread
        if spread > REST_SPREAD:
            pose.skipped = f"not at rest: the joint values spread by {np.rad2deg(spread):.4f}° over {window:g} s"
            continue
        miss = float(np.max(np.abs(q_rest - q)))
        if miss > REACH_TOLERANCE:
            pose.skipped = f"stopped {np.rad2deg(miss):.3f}° from the planned angles"
            continue
        pose.q_rest = q_rest
        reading = source.request(pose_id, q_rest, timeout)
        if reading is None or not np.isfinite(reading.points).all(-1).any():
            pose.skipped = getattr(source, "last_reason", "") or "no measurement"
        else:
            pose.points = reading.points
        if progress is not None:
            progress(pose)
    return out


# --------------------------------------------------------------------------- a simulated tracker hook


class SimulatedTrackerServer:
    """A TCP measurement hook on loopback that plays a laser tracker watching the daemon's arm.

    On ``MEASURE pose_id ...`` it reads the joint values the daemon reports (its own client: the
    tracker sees the arm, it does not trust the request), computes the targets of ``robot`` (a
    :class:`robodyn.calibration.simulation.SimulatedRobot`: the arm's true geometry and joint
    compliance) and adds tracker noise. Poses listed in ``drop`` get no reply at all, like a beam
    that never returns.
    """

    def __init__(self, endpoint: str, robot, tracker, *, load=None, drop=(), units: str = "m"):
        from robodyn.daemon.client import Client

        self.robot = robot
        self.tracker = tracker
        self.load = load
        self.drop = set(drop)
        self.scale = 1.0 / POSITION_SCALE[units]
        self.client = Client(endpoint, timeout=10.0)
        self.robot.points(np.zeros((1, robot.gm.dof)), load)  # compile the dynamics now, not on the first request
        self.lock = threading.Lock()
        self.requests: list[str] = []
        outer = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                for raw in self.rfile:
                    parts = raw.decode().split()
                    if len(parts) < 2 or parts[0] != "MEASURE":
                        continue
                    reply = outer.answer(parts[1])
                    if reply is not None:
                        self.wfile.write((reply + "\n").encode())
                        self.wfile.flush()

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def answer(self, pose_id: str) -> str | None:
        with self.lock:
            self.requests.append(pose_id)
            if pose_id in self.drop:
                return None
            q_model = self.robot.gm.robot.joint_map.to_model(np.asarray(self.client.status()["state"]["q"], float))
            points = self.tracker.measure(self.robot.points(q_model[None], self.load)[0])
        return " ".join([pose_id] + [repr(float(v * self.scale)) for v in points.reshape(-1)])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def collect_to_csv(plan_path, out, *, client, source: str, request_file=None, source_units: str = "m",
                   robot_ref: str | None = None, targets: str | None = None, load=None, subset: str | None = None,
                   settle: float = 0.5, window: float = 0.5, timeout: float = 30.0, units: str = "m",
                   progress=None) -> tuple[dict, Collection]:
    """Visit a plan's poses (all, or its loaded subset) with the robot of the daemon ``client``
    talks to (a :class:`robodyn.daemon.client.Client`, closed here), read a measurement per pose
    from ``source`` ('file:PATH' or 'tcp:HOST:PORT', waiting up to ``timeout`` s for each) and write
    the poses collected as a measurement CSV ``out``. ``progress(pose, total)`` is called after
    every pose. Returns the report and the collection."""
    from robodyn.calibration.measurement_csv import targets_from_metadata, write_measurements_csv
    from robodyn.calibration.measurements import MeasurementSet
    from robodyn.calibration.planning import Plan
    from robodyn.calibration.result_file import load_json
    from robodyn.calibration.robots import load_robot
    from robodyn.calibration.workflow import plan_subset

    doc = load_json(plan_path, "plan")
    plan = Plan.from_dict(doc)
    robot_ref = robot_ref or plan.robot_name
    robot = load_robot(robot_ref)
    if plan.q.shape[1] != robot.dof:
        raise ValueError(f"plan.poses: {plan.q.shape[1]} joint values per pose but robot {robot_ref!r} has {robot.dof} joints")
    subset, index = plan_subset(doc, plan, load, subset)
    meta = {"targets": targets} if targets else {"tool_offset_m": ",".join(map(str, plan.setup.tool_offset))}
    target_list = targets_from_metadata(meta)
    for name, value in (("settle", settle), ("window", window), ("measure-timeout", timeout)):
        if not value > 0:
            raise ValueError(f"--{name}: must be > 0 s, got {value}")
    q_controller = robot.joint_map.to_controller(plan.q[index])
    ids = [plan.ids[i] for i in index]
    reader = None
    try:
        status = client.status()
        daemon_robot = status["robot"]["name"]
        if int(status["robot"]["dof"]) != robot.dof:
            raise UserError(f"--endpoint: the daemon drives {daemon_robot!r} with {status['robot']['dof']} joints, the "
                            f"plan's robot {robot_ref!r} has {robot.dof}")
        reader = open_source(source, len(target_list), source_units, request_file)
        step = None if progress is None else (lambda pose: progress(pose, len(ids)))
        result = collect_plan(client, daemon_robot, q_controller, ids, reader, settle=settle, window=window,
                              timeout=timeout, progress=step)
    finally:
        if reader is not None:
            reader.close()
        client.close()
    got = result.collected
    if got:
        q_rest = np.array([p.q_rest for p in got])
        meas = MeasurementSet(robot.joint_map.to_model(q_rest), np.array([p.points for p in got]),
                              [p.pose_id for p in got], load, q_controller=q_rest)
        write_measurements_csv(out, meas, robot=robot_ref, unit=units, targets=target_list,
                               note=f"collect through the daemon at {client.endpoint}, {subset} poses of "
                                    f"{Path(plan_path).name}; joint values at rest over {window:g} s")
    report = {"out": out if got else None, "planned": len(ids), "collected": len(got),
              "skipped": [{"pose": p.pose_id, "reason": p.skipped} for p in result.skipped],
              "stopped": result.stopped or None,
              "runs": {p.pose_id: p.run_id for p in result.poses if p.run_id}}
    return report, result
