"""Live view of the daemon in Foxglove: `robodyn bridge foxglove`.

A separate process, outside the daemon's real-time loop: it subscribes to the daemon's state
stream (ZeroMQ SUB, through the client library) and polls its `status`, and serves what it sees
over Foxglove's WebSocket protocol (``foxglove.sdk.v1`` and ``foxglove.websocket.v1``, served by
foxglove_ws.py, to holders of the bridge's token; ``foxglove-sdk`` encodes the transforms):

    /joint_states       robodyn.JointState (JSON)   every sample (or --rate HZ): position, velocity,
                                                    effort, the driver's other signals, seq, phase, run
    /robodyn/phase      robodyn.RunPhase (JSON)     on every phase or run change, and once a second
    /robodyn/events     robodyn.RunEvent (JSON)     the daemon's run events (started, phase, done, ...)
    /robodyn/status     robodyn.Status (JSON)       twice a second: arm state, driver and recorder
                                                    health, loop period statistics, run progress, bridge counters
    /robot_description  {"data": URDF} (JSON)       the robot model with a stick geometry, sent to each new subscriber
    /tf                 foxglove.FrameTransforms    link poses from the measured joint positions (--tf-rate HZ)

Read-only by construction: the server advertises no capability (no client publishing, services
or parameters), and the bridge reaches the daemon through :class:`ReadOnlyClient`, which cannot
send a motion, arming or job command.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from robodyn.daemon.readonly import ReadOnlyClient, phase_name, run_progress

from .listen import check_listen_host

JOINT_STATES_TOPIC = "/joint_states"
PHASE_TOPIC = "/robodyn/phase"
EVENTS_TOPIC = "/robodyn/events"
STATUS_TOPIC = "/robodyn/status"
ROBOT_DESCRIPTION_TOPIC = "/robot_description"  # the topic name Foxglove's 3D panel loads a URDF from
TF_TOPIC = "/tf"
DEFAULT_PORT = 8765  # Foxglove's default WebSocket port
PHASE_KEEPALIVE_S = 1.0  # a viewer that subscribes between two phase changes learns the phase within this
SILENCE_NOTE_S = 5.0

_NUMBERS = {"type": "array", "items": {"type": "number"}}
_STAMP = {"type": "object", "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}}}
SCHEMAS = {
    JOINT_STATES_TOPIC: ("robodyn.JointState", {
        "title": "robodyn.JointState", "type": "object",
        "description": "One sample of the daemon's state stream. timestamp: host clock at the driver's read "
                       "(CLOCK_MONOTONIC mapped to wall time when the bridge started); robot_time: the robot's clock, s.",
        "properties": {"timestamp": _STAMP, "seq": {"type": "integer"}, "robot_time": {"type": "number"},
                       "phase": {"type": "string"}, "run": {"type": "integer"},
                       "name": {"type": "array", "items": {"type": "string"}},
                       "position": _NUMBERS, "velocity": _NUMBERS, "effort": _NUMBERS,
                       "signals": {"type": "object", "additionalProperties": _NUMBERS}}}),
    PHASE_TOPIC: ("robodyn.RunPhase", {
        "title": "robodyn.RunPhase", "type": "object",
        "properties": {"timestamp": _STAMP, "phase": {"type": "string"}, "phase_code": {"type": "integer"},
                       "run": {"type": "integer"}, "run_id": {"type": ["string", "null"]},
                       "seq": {"type": "integer"}}}),
    EVENTS_TOPIC: ("robodyn.RunEvent", {
        "title": "robodyn.RunEvent", "type": "object", "additionalProperties": True,
        "properties": {"timestamp": _STAMP, "event": {"type": "string"}, "run": {"type": "integer"},
                       "run_id": {"type": ["string", "null"]}}}),
    STATUS_TOPIC: ("robodyn.Status", {
        "title": "robodyn.Status", "type": "object", "additionalProperties": True,
        "properties": {"timestamp": _STAMP, "connected": {"type": "boolean"}, "armed": {"type": "boolean"},
                       "loop": {"type": "object"}, "run": {"type": ["object", "null"]}, "bridge": {"type": "object"}}}),
    ROBOT_DESCRIPTION_TOPIC: ("std_msgs/String", {
        "title": "std_msgs/String", "type": "object", "properties": {"data": {"type": "string"}}}),
}


@dataclass
class BridgeOptions:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    rate_hz: float = 0.0  # joint-state messages per second; 0: every sample of the stream
    tf_rate_hz: float = 50.0
    status_period_s: float = 0.5
    duration_s: float | None = None  # stop after this long (None: until SIGINT / SIGTERM)
    message_backlog: int = 4096  # per viewer: 4 s of samples at 1 kHz before a slow viewer loses the oldest
    allow_origins: tuple = ()  # browser origins besides the bridge's own (e.g. https://app.foxglove.dev)
    token_dir: object = None  # where the token file goes (None: daemon.access.default_token_dir())


# --------------------------------------------------------------------------- robot model


def check_model_matches(model, describe: dict) -> None:
    """The model the bridge draws must be the one the daemon drives (same joints, same order)."""
    robot = describe.get("robot") or {}
    names = [j["name"] for j in robot.get("joints") or []]
    if names and list(model.joint_names) != names:
        raise ValueError(f"--robot: {model.name!r} has joints {list(model.joint_names)}, but the daemon drives "
                         f"{robot.get('name')!r} with joints {names}; pass the daemon's model file with --robot FILE")


def urdf_with_visuals(model) -> str:
    """The model's URDF (robodyn.robot.urdf.model_to_urdf) with a stick geometry, so that the 3D
    panel shows the arm: a sphere at each link frame and a cylinder from it to the next frame."""
    from robodyn.robot.urdf import _align_z, matrix_rpy, model_to_urdf

    root = ET.fromstring(model_to_urdf(model))
    links = {link.get("name"): link for link in root.findall("link")}
    segments = []
    for joint in root.findall("joint"):
        origin = joint.find("origin")
        xyz = np.array([float(v) for v in (origin.get("xyz") if origin is not None else "0 0 0").split()])
        segments.append((joint.find("parent").get("link"), xyz))
    reach = sum(float(np.linalg.norm(xyz)) for _, xyz in segments)
    radius = float(np.clip(0.03 * reach, 0.01, 0.05))
    for mat, rgba in (("robodyn_link", "0.72 0.74 0.78 1"), ("robodyn_joint", "0.95 0.55 0.15 1")):
        m = ET.SubElement(root, "material", name=mat)
        ET.SubElement(m, "color", rgba=rgba)
    # materials must come before their use in some parsers: move them to the top
    for m in root.findall("material"):
        root.remove(m)
        root.insert(0, m)

    def visual(link, geometry: ET.Element, xyz, rpy, material) -> None:
        v = ET.Element("visual")
        ET.SubElement(v, "origin", xyz=" ".join(repr(float(x)) for x in xyz), rpy=" ".join(repr(float(x)) for x in rpy))
        g = ET.SubElement(v, "geometry")
        g.append(geometry)
        ET.SubElement(v, "material", name=material)
        link.insert(0, v)

    for name, link in links.items():
        visual(link, ET.Element("sphere", radius=repr(1.3 * radius)), (0, 0, 0), (0, 0, 0), "robodyn_joint")
    for parent, xyz in segments:
        length = float(np.linalg.norm(xyz))
        if length < 1e-6 or parent not in links:
            continue
        rpy = matrix_rpy(_align_z(xyz / length))
        visual(links[parent], ET.Element("cylinder", radius=repr(radius), length=repr(length)), xyz / 2, rpy,
               "robodyn_link")
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


class LinkTransforms:
    """Parent -> child transforms of the URDF's joints for a measured q: the joint's fixed origin
    (model.fixed, as written in the URDF) times its motion (robodyn.robot.kinematics.joint_motion)."""

    def __init__(self, model):
        self.model = model
        n = model.dof
        self.parents = ["base_link"] + [f"link{i}" for i in range(1, n)] + [f"link{n}"]
        self.children = [f"link{i + 1}" for i in range(n)] + ["tool"]

    def matrices(self, q: np.ndarray) -> np.ndarray:
        from robodyn.robot.kinematics import joint_motion

        m = self.model
        out = np.empty((m.dof + 1, 4, 4))
        for i in range(m.dof):
            out[i] = m.fixed[i] @ joint_motion(int(m.joint_types[i]), q[i])
        out[m.dof] = m.tool
        return out

    def message(self, q: np.ndarray, stamp_ns: int):
        from foxglove.messages import FrameTransform, FrameTransforms, Quaternion, Timestamp, Vector3
        from scipy.spatial.transform import Rotation

        T = self.matrices(q)
        quats = Rotation.from_matrix(T[:, :3, :3]).as_quat()  # x, y, z, w
        stamp = Timestamp(int(stamp_ns // 1_000_000_000), int(stamp_ns % 1_000_000_000))
        return FrameTransforms(transforms=[
            FrameTransform(timestamp=stamp, parent_frame_id=p, child_frame_id=c,
                           translation=Vector3(x=float(t[0, 3]), y=float(t[1, 3]), z=float(t[2, 3])),
                           rotation=Quaternion(x=float(qq[0]), y=float(qq[1]), z=float(qq[2]), w=float(qq[3])))
            for p, c, t, qq in zip(self.parents, self.children, T, quats)])


# --------------------------------------------------------------------------- the bridge


def _stamp(ns: int) -> dict:
    return {"sec": int(ns // 1_000_000_000), "nsec": int(ns % 1_000_000_000)}


def _jsonable(o):
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    if isinstance(o, np.ndarray):
        return _jsonable(o.tolist())
    if isinstance(o, (np.floating, float)):
        return float(o) if np.isfinite(o) else None
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, bytes):
        return o.decode("utf-8", "replace")
    return o


class _Listener:
    """Counts viewers and notes who asked for the robot description (it is sent again to them)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.subscriptions: dict[int, set[str]] = {}
        self.description_wanted = threading.Event()
        self.watched = threading.Event()  # some viewer is subscribed to something

    def on_subscribe(self, client, channel) -> None:
        with self.lock:
            self.subscriptions.setdefault(client.id, set()).add(channel.topic)
            self.watched.set()
        if channel.topic == ROBOT_DESCRIPTION_TOPIC:
            self.description_wanted.set()

    def on_unsubscribe(self, client, channel) -> None:
        with self.lock:
            topics = self.subscriptions.get(client.id)
            if topics is not None:
                topics.discard(channel.topic)
                if not topics:
                    del self.subscriptions[client.id]
            if not self.subscriptions:
                self.watched.clear()

    def viewers(self) -> int:
        with self.lock:
            return len(self.subscriptions)


class FoxgloveBridge:
    """Serves one daemon's state stream, run phases, status and robot model to Foxglove viewers."""

    def __init__(self, client: ReadOnlyClient, model, describe: dict, options: BridgeOptions,
                 status_client: ReadOnlyClient | None = None):
        from foxglove.messages import FrameTransforms

        from .foxglove_ws import FoxgloveServer

        check_listen_host(options.host, "Foxglove bridge")
        self.client = client
        self.status_client = status_client
        self.model = model
        self.describe = describe
        self.options = options
        self.joint_names = list(model.joint_names)
        self.slices: dict[str, slice] = {}
        start = 0
        for s in describe["driver"]["signals"]:
            self.slices[s["name"]] = slice(start, start + int(s["width"]))
            start += int(s["width"])
        missing = [s for s in ("q", "qd", "tau") if s not in self.slices]
        if missing:
            raise ValueError(f"the daemon's driver publishes no {missing} signal(s); it has {list(self.slices)}")
        self.extra_signals = [s for s in self.slices if s not in ("q", "qd", "tau")]
        self.urdf = urdf_with_visuals(model)
        self.transforms = LinkTransforms(model)
        # the stream is stamped with the host's CLOCK_MONOTONIC; viewers show wall time
        self.clock_offset_ns = time.time_ns() - time.monotonic_ns()
        self.listener = _Listener()
        # no capability: viewers cannot publish, call services or set parameters
        self.server = FoxgloveServer(f"robodyn {describe['robot']['name']}", options.host, options.port,
                                     listener=self.listener, backlog=options.message_backlog,
                                     allow_origins=options.allow_origins, token_dir=options.token_dir)
        self.channels = {topic: self.server.add_channel(topic, "json", name, json.dumps(schema), "jsonschema")
                         for topic, (name, schema) in SCHEMAS.items()}
        tf_schema = FrameTransforms.get_schema()
        self.tf_channel = self.server.add_channel(TF_TOPIC, "protobuf", tf_schema.name, tf_schema.data, "protobuf")
        self.port = self.server.port
        self.stats = {"received": 0, "published": 0, "lost": 0, "batches": 0, "events": 0, "tf": 0,
                      "status": 0, "descriptions": 0}
        self.stop_event = threading.Event()
        self._last_seq = None
        self._phase = (None, None)  # (phase code, run number)
        self._phase_sent_ns = 0
        self._run_ids: dict[int, str] = {}
        self._next_sample_ns = 0
        self._next_tf_ns = 0
        self._status_thread = None

    # ------------------------------------------------------------------ publishing

    def _log(self, topic: str, msg: dict, stamp_ns: int) -> None:
        self.channels[topic].log(msg, log_time=stamp_ns)

    def publish_description(self) -> None:
        self._log(ROBOT_DESCRIPTION_TOPIC, {"data": self.urdf}, time.time_ns())
        self.stats["descriptions"] += 1

    def on_batch(self, batch: dict) -> None:
        seq, host_ns, phase, run, values = (batch["seq"], batch["host_time_ns"], batch["phase"], batch["run"],
                                            batch["values"])
        n = int(seq.shape[0])
        if n == 0:
            return
        self.stats["batches"] += 1
        self.stats["received"] += n
        if self._last_seq is not None and int(seq[0]) > self._last_seq + 1:
            self.stats["lost"] += int(seq[0]) - self._last_seq - 1
        self._last_seq = int(seq[-1])
        stamps = host_ns.astype(np.int64) + self.clock_offset_ns
        period_ns = int(1e9 / self.options.rate_hz) if self.options.rate_hz > 0 else 0
        sl = self.slices
        # a bridge left running with nobody watching costs little: no message is built for no one
        relay = self.channels[JOINT_STATES_TOPIC].has_sinks()
        rows = values.tolist() if relay else None
        robot_time = batch["robot_time"].tolist()
        for i in range(n):
            code, number = int(phase[i]), int(run[i])
            if (code, number) != self._phase or stamps[i] - self._phase_sent_ns >= PHASE_KEEPALIVE_S * 1e9:
                self._publish_phase(code, number, int(seq[i]), int(stamps[i]))
            if not relay or (period_ns and stamps[i] < self._next_sample_ns):
                continue
            self._next_sample_ns = int(stamps[i]) + period_ns
            row = rows[i]
            msg = {"timestamp": _stamp(int(stamps[i])), "seq": int(seq[i]), "robot_time": robot_time[i],
                   "phase": phase_name(code), "run": number, "name": self.joint_names,
                   "position": row[sl["q"]], "velocity": row[sl["qd"]], "effort": row[sl["tau"]]}
            if self.extra_signals:
                msg["signals"] = {s: row[sl[s]] for s in self.extra_signals}
            self._log(JOINT_STATES_TOPIC, msg, int(stamps[i]))
            self.stats["published"] += 1
        if stamps[-1] >= self._next_tf_ns and self.options.tf_rate_hz > 0 and self.tf_channel.has_sinks():
            self._next_tf_ns = int(stamps[-1]) + int(1e9 / self.options.tf_rate_hz)
            q = values[-1, sl["q"]]
            self.tf_channel.log(self.transforms.message(q, int(stamps[-1])), log_time=int(stamps[-1]))
            self.stats["tf"] += 1

    def _publish_phase(self, code: int, number: int, seq: int, stamp_ns: int) -> None:
        self._phase = (code, number)
        self._phase_sent_ns = stamp_ns
        self._log(PHASE_TOPIC, {"timestamp": _stamp(stamp_ns), "phase": phase_name(code), "phase_code": code,
                                "run": number, "run_id": self._run_ids.get(number), "seq": seq}, stamp_ns)

    def on_event(self, event: dict) -> None:
        stamp_ns = int(event.get("host_time_ns") or time.monotonic_ns()) + self.clock_offset_ns
        if event.get("run") is not None and event.get("run_id"):
            self._run_ids[int(event["run"])] = str(event["run_id"])
        msg = _jsonable({k: v for k, v in event.items() if k not in ("topic", "type")})
        msg["timestamp"] = _stamp(stamp_ns)
        self._log(EVENTS_TOPIC, msg, stamp_ns)
        self.stats["events"] += 1

    def status_message(self, st: dict | None, error: str | None) -> dict:
        msg = {"timestamp": _stamp(time.time_ns()), "connected": st is not None,
               "bridge": {**self.stats, "viewers": self.listener.viewers(), "dropped": self.server.dropped()}}
        if error:
            msg["error"] = error
        if st is not None:
            drv, rec, safety = st.get("driver") or {}, st.get("recorder") or {}, st.get("safety") or {}
            msg.update(
                armed=bool(safety.get("armed")), arming_required=safety.get("arming_required"),
                driver={k: drv.get(k) for k in ("alive", "ready", "restarts", "telemetry_age_s", "lifecycle",
                                                "scheduler", "error")},
                recorder={"alive": rec.get("alive"), "ready": rec.get("ready"), "restarts": rec.get("restarts"),
                          "stream": rec.get("stream")},
                loop=drv.get("loop") or {}, loop_jitter=(st.get("metrics") or {}).get("loop_jitter_ms"),
                run=run_progress(st.get("run")), last_run=run_progress(st.get("last_run")))
        return _jsonable(msg)

    def _status_loop(self) -> None:
        while not self.stop_event.wait(self.options.status_period_s):
            if not self.channels[STATUS_TOPIC].has_sinks():
                continue
            try:
                st, err = self.status_client.status(), None
            except Exception as exc:  # the daemon is away: say so on the topic, keep serving
                st, err = None, str(exc)
            self._log(STATUS_TOPIC, self.status_message(st, err), time.time_ns())
            self.stats["status"] += 1

    # ------------------------------------------------------------------ main loop

    def run(self, on_silence=None) -> dict:
        """Relay until stopped (``stop_event``) or ``options.duration_s`` has passed; the statistics.

        The state stream is subscribed to only while a viewer is subscribed to something: a bridge
        left running with nobody watching does not even decode the stream."""
        if self.status_client is not None:
            self._status_thread = threading.Thread(target=self._status_loop, name="robodyn-bridge-status",
                                                   daemon=True)
            self._status_thread.start()
        self.publish_description()
        t_end = None if self.options.duration_s is None else time.monotonic() + self.options.duration_s
        endpoint = self.describe["state_endpoint"]
        last_data = time.monotonic()

        def finished() -> bool:
            return self.stop_event.is_set() or (t_end is not None and time.monotonic() >= t_end)

        try:
            while not finished():
                self._serve_description()
                if not self.listener.watched.wait(0.2):
                    last_data = time.monotonic()
                    continue
                # a new subscription: what came before is not a gap, and the phase is sent at once
                self._last_seq, self._phase = None, (None, None)
                stream = self.client.stream(endpoint, timeout=0.5, events=True)
                try:
                    for item in stream:
                        if item.get("topic") == "event":
                            self.on_event(item)
                        else:
                            self.on_batch(item)
                        last_data = time.monotonic()
                        self._serve_description()
                        if finished() or not self.listener.watched.is_set():
                            break
                finally:
                    stream.close()
                if on_silence is not None and time.monotonic() - last_data > SILENCE_NOTE_S:
                    on_silence(time.monotonic() - last_data)
                    last_data = time.monotonic()
        finally:
            self.close()
        return {**self.stats, "viewers": self.listener.viewers()}

    def _serve_description(self) -> None:
        if self.listener.description_wanted.is_set():
            self.listener.description_wanted.clear()
            self.publish_description()

    def close(self) -> None:
        self.stop_event.set()
        if self._status_thread is not None:
            self._status_thread.join(5.0)
        try:
            self.server.stop()
        except Exception as exc:  # already stopped
            print(f"robodyn bridge: stopping the WebSocket server: {exc}", file=sys.stderr)
