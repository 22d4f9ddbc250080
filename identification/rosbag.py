"""ROS 2 bags as identification data: a ``sensor_msgs/msg/JointState`` topic, mapped by name.

Accepted (no ROS installation needed; the ``ros2`` extra installs the pure-Python ``rosbags``):

- a rosbag2 directory (``metadata.yaml`` beside its ``.mcap`` or ``.db3`` files), as ``ros2 bag
  record`` writes it with either storage plugin, read with rosbags' reader;
- one ``.mcap`` or ``.db3`` file of such a directory (its directory is read);
- a lone ``.mcap`` or ``.db3`` file without ``metadata.yaml`` (a copied file, a Foxglove
  recording, robodyn's own recordings, which carry ``/joint_states``), read directly.

The messages are decoded with rosbags' CDR deserializer. Samples are stamped with the header
stamp (the publisher's clock), in seconds from the first sample; a topic whose stamps are all zero or go backwards falls back to
the bag's receive time. Joint values are taken by name: every joint of the model must be named in
every message, in any order, by its own name or one the model accepts for it (``RobotModel.log_names``:
a built-in model knows its vendor's published names, such as Franka's panda_joint1; a model file
declares aliases; ``--joint-names`` states them; robodyn/robot/log_names.py). Other names, such as a
gripper's fingers, are left out. Effort is
the joint torque (N.m, N for prismatic joints); velocity is used when every message carries it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from robodyn.robot.log_names import match_log_names

from .signals import SampledData

JOINT_STATE = "sensor_msgs/msg/JointState"
ROBODYN_STATE_TOPIC = "/robodyn/state"


def _rosbag_dir(path: Path) -> Path | None:
    """The rosbag2 directory ``path`` is or lies in (one holding metadata.yaml), else None."""
    if path.is_dir():
        return path if (path / "metadata.yaml").exists() else None
    return path.parent if (path.parent / "metadata.yaml").exists() else None


MCAP_MAGIC = b"\x89MCAP0\r\n"  # the first 8 bytes of every MCAP file (the MCAP specification)


def is_bag(path: str | Path, topic: str | None = None) -> bool:
    """Whether ``path`` is read as a ROS 2 bag: a rosbag2 directory or one of its files, a .db3
    file, or an .mcap file that is not a robodyn recording (a robodyn recording is one when a
    ``topic`` is asked for: its /joint_states channel instead of the lossless block channel)."""
    path = Path(path)
    if _rosbag_dir(path) is not None or path.suffix.lower() == ".db3":
        return True
    if path.suffix.lower() != ".mcap" or not path.is_file():
        return False
    return topic is not None or ROBODYN_STATE_TOPIC not in _mcap_topics(path, stop_at_robodyn=True)


def _mcap_records(path: Path):
    """The records of a lone MCAP file read front to back (chunks expanded), up to a cut-off end:
    a recording cut short by a crash has no summary and no valid footer to seek from."""
    from mcap.stream_reader import StreamReader

    with open(path, "rb") as fh:
        try:
            yield from StreamReader(fh).records
        except Exception:  # the cut-off end of the file: what came before is complete
            return


def _mcap_topics(path: Path, stop_at_robodyn: bool = False) -> dict[str, str]:
    """topic -> message type of a lone MCAP file (from its summary, else by a scan, which ends
    at the robodyn state channel with ``stop_at_robodyn``)."""
    from mcap.reader import make_reader
    from mcap.records import Channel, Schema

    with open(path, "rb") as fh:
        try:
            summary = make_reader(fh).get_summary()
        except Exception:  # a file cut short has no summary: scan it
            summary = None
    if summary is not None:
        return {c.topic: summary.schemas[c.schema_id].name if c.schema_id in summary.schemas else ""
                for c in summary.channels.values()}
    schemas, topics = {}, {}
    for record in _mcap_records(path):
        if isinstance(record, Schema):
            schemas[record.id] = record.name
        elif isinstance(record, Channel):
            topics.setdefault(record.topic, schemas.get(record.schema_id, ""))
            if stop_at_robodyn and record.topic == ROBODYN_STATE_TOPIC:
                break
    return topics


class _Source:
    """One bag's topics and the raw CDR messages of one topic, whatever the container."""

    def __init__(self, path: Path):
        self.path = path
        self.bag_dir = _rosbag_dir(path)
        if self.bag_dir is not None:
            self.kind = "rosbag2"
            from rosbags.rosbag2 import Reader, ReaderError

            try:
                with Reader(self.bag_dir) as reader:
                    self.topics = {c.topic: c.msgtype for c in reader.connections}
            except ReaderError as exc:
                raise ValueError(f"{path}: not a readable rosbag2 bag ({exc})") from None
        elif path.suffix.lower() == ".db3":
            self.kind = "sqlite"
            self.topics = dict(self._sql("SELECT name, type FROM topics"))
        else:
            self.kind = "mcap"
            with open(path, "rb") as fh:
                head = fh.read(len(MCAP_MAGIC))
            if head != MCAP_MAGIC:  # else the scan finds no record at all: "no topics" would mislead
                raise ValueError(f"{path}: not an MCAP file (it does not begin with MCAP's magic bytes)")
            self.topics = _mcap_topics(path)

    def _sql(self, query: str, args=()):
        try:
            con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                return con.execute(query, args).fetchall()
            finally:
                con.close()
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{self.path}: not a rosbag2 SQLite file ({exc})") from None

    def messages(self, topic: str):
        """(receive time ns, raw CDR bytes) of ``topic``, in file order."""
        if self.kind == "rosbag2":
            from rosbags.rosbag2 import Reader

            with Reader(self.bag_dir) as reader:
                conns = [c for c in reader.connections if c.topic == topic]
                for conn, timestamp, raw in reader.messages(connections=conns):
                    yield timestamp, bytes(raw)
        elif self.kind == "sqlite":
            yield from self._sql("SELECT m.timestamp, m.data FROM messages m JOIN topics t ON m.topic_id = t.id "
                                 "WHERE t.name = ? ORDER BY m.timestamp", (topic,))
        else:
            from mcap.records import Channel, Message

            ids = set()
            for record in _mcap_records(self.path):
                if isinstance(record, Channel) and record.topic == topic:
                    ids.add(record.id)
                elif isinstance(record, Message) and record.channel_id in ids:
                    yield record.log_time, record.data


def _choose_topic(source: _Source, topic: str | None) -> str:
    states = sorted(t for t, typ in source.topics.items() if typ == JOINT_STATE)
    listing = ", ".join(states) if states else "none"
    if topic is not None:
        if topic not in source.topics:
            raise ValueError(f"{source.path}: no topic {topic!r}; its {JOINT_STATE} topics: {listing}")
        if source.topics[topic] != JOINT_STATE:
            raise ValueError(f"{source.path}: topic {topic!r} is {source.topics[topic]}, not {JOINT_STATE}; "
                             f"its {JOINT_STATE} topics: {listing}")
        return topic
    if len(states) == 1:
        return states[0]
    if not states:
        raise ValueError(f"{source.path}: no {JOINT_STATE} topic (topics: {', '.join(sorted(source.topics)) or 'none'})")
    raise ValueError(f"{source.path}: several {JOINT_STATE} topics ({listing}); choose one with --topic")


def load_bag(path: str | Path, joint_names=None, topic: str | None = None, model_names=None) -> SampledData:
    """The JointState samples of a ROS 2 bag as :class:`SampledData` with the joints in the order
    of ``joint_names`` (the model's joints; None: the order of the first message), by name. An entry
    of ``joint_names`` is a name or a tuple of the names a log may give that joint
    (``model.log_names``); ``model_names`` are the model's own names, for messages.

    Raises ValueError with one line for: no such topic (listing the JointState topics), several
    JointState topics without ``topic``, messages without effort, joint names that do not match."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    try:
        from rosbags.typesys import Stores, get_typestore
    except ImportError:
        raise ValueError(f"{path}: reading ROS 2 bags needs the rosbags library: pip install 'robodyn[ros2]'") from None

    source = _Source(path)
    topic = _choose_topic(source, topic)
    deserialize = get_typestore(Stores.LATEST).deserialize_cdr
    wanted = None if joint_names is None else [(s,) if isinstance(s, str) else tuple(s) for s in joint_names]
    index_for: dict[tuple, np.ndarray] = {}
    stamps, received, pos, vel, eff = [], [], [], [], []
    for timestamp, raw in source.messages(topic):
        msg = deserialize(raw, JOINT_STATE)
        names = tuple(msg.name)
        if wanted is None:
            wanted = [(s,) for s in names]
        idx = index_for.get(names)
        if idx is None:
            idx = index_for[names] = match_log_names(names, wanted, f"{path}: topic {topic!r}", model_names)
        n_names = len(names)
        if len(msg.effort) != n_names:
            raise ValueError(f"{path}: topic {topic!r} carries no effort (joint torque) for its joints "
                             f"({len(msg.effort)} effort values for {n_names} names at t={timestamp * 1e-9:.9g} s); "
                             "identification needs the measured torque")
        if len(msg.position) != n_names:
            raise ValueError(f"{path}: topic {topic!r}: {len(msg.position)} positions for {n_names} joint names "
                             f"at t={timestamp * 1e-9:.9g} s")
        stamps.append(msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec)
        received.append(timestamp)
        pos.append(np.asarray(msg.position, float)[idx])
        eff.append(np.asarray(msg.effort, float)[idx])
        vel.append(np.asarray(msg.velocity, float)[idx] if len(msg.velocity) == n_names else None)
    if len(received) < 2:
        raise ValueError(f"{path}: topic {topic!r} has {len(received)} message(s); identification needs samples")
    # integer nanoseconds from the first sample: epoch seconds in a float64 would lose 0.1 us
    ns = np.asarray(stamps, np.int64)
    if not np.any(ns) or np.any(np.diff(ns) <= 0):  # unset or unordered stamps: the bag's receive time
        ns = np.asarray(received, np.int64)
    t = (ns - ns[0]) * 1e-9
    qd = None if any(v is None for v in vel) else np.vstack(vel)
    return SampledData(t, np.vstack(pos), np.vstack(eff), qd)
