"""ROS 2 channels in every recording, so Foxglove and ROS 2 tools open it.

Besides the lossless msgpack block channel (``/robodyn/state``), the recorder writes:

- ``/joint_states``: ``sensor_msgs/msg/JointState`` in CDR, one message per sample (position,
  velocity, effort of every joint; header stamp = robot time, log time = host CLOCK_MONOTONIC);
- ``/tf``: ``tf2_msgs/msg/TFMessage`` with the pose of every link relative to its parent (the
  URDF's joints), every TF_EVERY-th sample (10 Hz at 1 kHz);
- ``/tf_static``: the fixed flange ("tool") frame, once;
- ``/robot_description``: ``std_msgs/msg/String`` with the URDF, once (Foxglove's 3D panel loads
  a URDF from this topic); the URDF is also attached to the file as ``robot.urdf``.

Message definitions are the standard ROS 2 ones (sensor_msgs, std_msgs, geometry_msgs, tf2_msgs,
builtin_interfaces), written in the ``ros2msg`` schema encoding that rosbag2 uses; the payloads
are encoded by the ``mcap-ros2-support`` library (the one Foxglove and ROS 2 users decode with),
except JointState, filled block-wise by :class:`JointStateEncoder` (tested byte for byte against
that library).
The frame transforms come from robodyn's kinematics (the same joint frames the URDF describes).
"""

from __future__ import annotations

import numpy as np

SEPARATOR = "=" * 80
HEADER = "builtin_interfaces/Time stamp\nstring frame_id\n"
TIME = "int32 sec\nuint32 nanosec\n"
DEFINITIONS = {
    "sensor_msgs/msg/JointState": ("std_msgs/Header header\nstring[] name\nfloat64[] position\n"
                                   "float64[] velocity\nfloat64[] effort\n", ["std_msgs/Header",
                                                                               "builtin_interfaces/Time"]),
    "tf2_msgs/msg/TFMessage": ("geometry_msgs/TransformStamped[] transforms\n",
                               ["geometry_msgs/TransformStamped", "std_msgs/Header", "builtin_interfaces/Time",
                                "geometry_msgs/Transform", "geometry_msgs/Vector3", "geometry_msgs/Quaternion"]),
    "std_msgs/msg/String": ("string data\n", []),
}
DEPENDENCIES = {
    "std_msgs/Header": HEADER,
    "builtin_interfaces/Time": TIME,
    "geometry_msgs/TransformStamped": "std_msgs/Header header\nstring child_frame_id\nTransform transform\n",
    "geometry_msgs/Transform": "Vector3 translation\nQuaternion rotation\n",
    "geometry_msgs/Vector3": "float64 x\nfloat64 y\nfloat64 z\n",
    "geometry_msgs/Quaternion": "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n",
}
TF_EVERY = 100  # /tf at a hundredth of the sample rate (10 Hz at 1 kHz): enough to watch the arm move
CDR_LE = b"\x00\x01\x00\x00"  # encapsulation header: plain CDR, little endian


class JointStateEncoder:
    """CDR of ``sensor_msgs/msg/JointState`` for a whole block of samples at once.

    The generic encoder of mcap-ros2-support takes ~0.3-1 ms per message in Python, too slow for
    1 kHz next to the recorder's block deadline; the layout of a JointState with fixed joint names
    and frame id is fixed, so a block is filled in one (N, size) byte array. Tests decode it
    with mcap-ros2-support's decoder and compare it byte for byte with its encoder.

    Layout (offsets after the 4-byte encapsulation header, CDR alignment to the type's size):
    stamp.sec int32, stamp.nanosec uint32, frame_id (uint32 length incl. NUL, bytes, NUL), name
    (uint32 count, then each string), then position, velocity, effort (uint32 count, padding to 8,
    float64 values)."""

    def __init__(self, names: list[str], frame_id: str = ""):
        self.n = len(names)
        body = bytearray()

        def align(k: int) -> None:
            body.extend(b"\0" * (-len(body) % k))

        def string(text: str) -> None:
            align(4)
            raw = text.encode() + b"\0"
            body.extend(np.uint32(len(raw)).tobytes() + raw)

        body.extend(b"\0" * 8)  # stamp, filled per message
        string(frame_id)
        align(4)
        body.extend(np.uint32(self.n).tobytes())
        for name in names:
            string(name)
        self.array_offsets = []
        for _ in range(3):
            align(4)
            body.extend(np.uint32(self.n).tobytes())
            align(8)
            self.array_offsets.append(len(body))
            body.extend(b"\0" * (8 * self.n))
        self.template = np.frombuffer(CDR_LE + bytes(body), np.uint8)

    def encode(self, sec: np.ndarray, nanosec: np.ndarray, arrays: list[np.ndarray]) -> np.ndarray:
        """(N, size) uint8: one message per row. ``arrays``: position, velocity, effort (N, n)."""
        count = sec.shape[0]
        out = np.tile(self.template, (count, 1))
        out[:, 4:8] = np.ascontiguousarray(sec, "<i4").view(np.uint8).reshape(count, 4)
        out[:, 8:12] = np.ascontiguousarray(nanosec, "<u4").view(np.uint8).reshape(count, 4)
        for offset, values in zip(self.array_offsets, arrays):
            start = 4 + offset
            out[:, start:start + 8 * self.n] = np.ascontiguousarray(values, "<f8").view(np.uint8).reshape(count, -1)
        return out


def schema_text(name: str) -> str:
    """The concatenated ros2msg definition (the main one, then each dependency after a separator)."""
    main, deps = DEFINITIONS[name]
    parts = [main]
    for dep in deps:
        parts.append(f"{SEPARATOR}\nMSG: {dep}\n{DEPENDENCIES[dep]}")
    return "\n".join(parts)


def quaternions(R: np.ndarray) -> np.ndarray:
    """Unit quaternions (x, y, z, w) of rotation matrices (..., 3, 3) (Shepperd's method)."""
    R = np.asarray(R, float)
    shape = R.shape[:-2]
    R = R.reshape(-1, 3, 3)
    q = np.empty((R.shape[0], 4))
    tr = R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2]
    for k in range(R.shape[0]):
        m = R[k]
        if tr[k] > 0:
            s = 2.0 * np.sqrt(tr[k] + 1.0)
            q[k] = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
        elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
            s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
            q[k] = [0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
        elif m[1, 1] > m[2, 2]:
            s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
            q[k] = [(m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
        else:
            s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
            q[k] = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s, (m[1, 0] - m[0, 1]) / s]
    return q.reshape(shape + (4,))


def _stamp(seconds: float) -> dict:
    sec = int(np.floor(seconds))
    return {"sec": sec, "nanosec": int(round((seconds - sec) * 1e9)) % 1_000_000_000}


def _transform(parent: str, child: str, T: np.ndarray, quat: np.ndarray, stamp: dict) -> dict:
    return {"header": {"stamp": stamp, "frame_id": parent}, "child_frame_id": child,
            "transform": {"translation": {"x": float(T[0, 3]), "y": float(T[1, 3]), "z": float(T[2, 3])},
                          "rotation": {"x": float(quat[0]), "y": float(quat[1]), "z": float(quat[2]),
                                       "w": float(quat[3])}}}


class Ros2Channels:
    """Registers the ROS 2 schemas and channels on an mcap Writer and writes each block's samples."""

    def __init__(self, mcap_writer, model_summary: dict, urdf: str, columns: list[str], joint_names: list[str],
                 fixed: np.ndarray, joint_types: np.ndarray, tool: np.ndarray):
        from mcap_ros2._dynamic import serialize_dynamic

        self._w = mcap_writer
        self.joint_names = list(joint_names)
        n = len(self.joint_names)
        index = {c: i for i, c in enumerate(columns)}
        self._cols = {}
        for field, prefix in (("position", "q"), ("velocity", "qd"), ("effort", "tau")):
            cols = [index.get(f"{prefix}{i + 1}") for i in range(n)]
            self._cols[field] = np.array(cols, int) if all(c is not None for c in cols) else None
        self._fixed = np.asarray(fixed, float)
        self._types = np.asarray(joint_types)
        self._encoders, self._channels = {}, {}
        for name in DEFINITIONS:
            text = schema_text(name)
            schema_id = mcap_writer.register_schema(name, "ros2msg", text.encode())
            self._encoders[name] = serialize_dynamic(name, text)[name]
            self._schema_ids = getattr(self, "_schema_ids", {}) | {name: schema_id}
        for topic, name in (("/joint_states", "sensor_msgs/msg/JointState"), ("/tf", "tf2_msgs/msg/TFMessage"),
                            ("/tf_static", "tf2_msgs/msg/TFMessage"), ("/robot_description", "std_msgs/msg/String")):
            meta = {"durability": "transient_local"} if topic in ("/tf_static", "/robot_description") else {}
            self._channels[topic] = mcap_writer.register_channel(topic, "cdr", self._schema_ids[name], meta)
        self._frames = ["base_link"] + [f"link{i + 1}" for i in range(n)]
        self._joint_state = JointStateEncoder(self.joint_names)
        self._tool = np.asarray(tool, float)
        self._urdf = urdf
        self._static_written = False
        self._since_tf = TF_EVERY  # the first sample of a run gets a /tf

    def _write(self, topic: str, schema: str, msg: dict, log_time: int) -> None:
        self._w.add_message(self._channels[topic], log_time=log_time, data=self._encoders[schema](msg),
                            publish_time=log_time, sequence=0)

    def write_static(self, log_time: int) -> None:
        """/robot_description and the fixed tool frame, once, at the start of the recording."""
        if self._static_written:
            return
        self._static_written = True
        self._write("/robot_description", "std_msgs/msg/String", {"data": self._urdf}, log_time)
        quat = quaternions(self._tool[:3, :3])
        self._write("/tf_static", "tf2_msgs/msg/TFMessage",
                    {"transforms": [_transform(self._frames[-1], "tool", self._tool, quat, _stamp(0.0))]}, log_time)

    def write_samples(self, robot_time: np.ndarray, host_ns: np.ndarray, values: np.ndarray) -> None:
        """One JointState per sample; a TFMessage every TF_EVERY samples."""
        n = len(self.joint_names)
        cols = self._cols
        empty = np.zeros((values.shape[0], 0))
        pos = values[:, cols["position"]] if cols["position"] is not None else empty
        vel = values[:, cols["velocity"]] if cols["velocity"] is not None else empty
        eff = values[:, cols["effort"]] if cols["effort"] is not None else empty
        channel = self._channels["/joint_states"]
        sec = np.floor(robot_time).astype(np.int64)
        nanosec = np.round((robot_time - sec) * 1e9).astype(np.int64)
        carry = nanosec >= 1_000_000_000  # rounding up to the next second
        sec, nanosec = sec + carry, np.where(carry, nanosec - 1_000_000_000, nanosec)
        filled = [a if a.shape[1] == n else np.zeros((values.shape[0], n)) for a in (pos, vel, eff)]
        rows = self._joint_state.encode(sec, nanosec, filled)
        add = self._w.add_message
        for k in range(values.shape[0]):
            t = int(host_ns[k])
            add(channel, log_time=t, data=rows[k].tobytes(), publish_time=t, sequence=0)
        if cols["position"] is None:
            return
        # /tf: each link in its parent's frame (the URDF joint's origin, then its motion)
        picks = []
        for k in range(values.shape[0]):
            self._since_tf += 1
            if self._since_tf >= TF_EVERY:
                self._since_tf = 0
                picks.append(k)
        if not picks:
            return
        from robodyn.robot.kinematics import joint_motion

        q = pos[picks]  # (m, n)
        local = np.empty((len(picks), n, 4, 4))
        for i in range(n):
            local[:, i] = self._fixed[i] @ joint_motion(int(self._types[i]), q[:, i])
        quats = quaternions(local[..., :3, :3])
        for m, k in enumerate(picks):
            stamp = _stamp(float(robot_time[k]))
            transforms = [_transform(self._frames[i], self._frames[i + 1], local[m, i], quats[m, i], stamp)
                          for i in range(n)]
            t = int(host_ns[k])
            self._w.add_message(self._channels["/tf"], log_time=t, publish_time=t, sequence=0,
                                data=self._encoders["tf2_msgs/msg/TFMessage"]({"transforms": transforms}))
