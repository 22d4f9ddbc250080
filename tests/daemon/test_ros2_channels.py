"""Recordings Foxglove and ROS 2 tools open: the ROS 2 channels, decoded with
the library those users rely on (`mcap-ros2-support`'s decoder through the official `mcap`
reader), never with robodyn's loader; the frame transforms checked against pinocchio's forward
kinematics of the URDF attached to the file."""

import numpy as np
import pytest

from robodyn.recording import RecordingWriter, load_recording
from robodyn.drivers.sim import SimulatedRobot
from robodyn.robot.loader import load_model

DESC = SimulatedRobot({"seed": 0}).describe().to_dict()
COLUMNS = [c for s in DESC["signals"] for c in ([s["name"]] if s["width"] == 1 else
                                                 [f"{s['name']}{i + 1}" for i in range(s["width"])])]
WIDTH = len(COLUMNS)
PANDA = load_model("panda")


def record(path, n=1000, block=100, ros2=True):
    from robodyn.robot.urdf import model_to_urdf

    meta = {"run_id": "r1", "driver": DESC, "rate_hz": 1000.0, "columns": COLUMNS, "robot": PANDA.summary(),
            "model_urdf": model_to_urdf(PANDA)}
    w = RecordingWriter(path, meta, WIDTH, "zstd", 50.0, ros2_model=PANDA if ros2 else None)
    rng = np.random.default_rng(1)
    seq = np.arange(1, n + 1, dtype=np.uint64)
    values = rng.normal(0, 0.5, (n, WIDTH))
    robot_time = 12.5 + np.arange(n) * 1e-3
    host = (10**9 + np.arange(n) * 10**6).astype(np.int64)
    for k in range(0, n, block):
        sl = slice(k, k + block)
        w.append(seq[sl], robot_time[sl], host[sl], np.full(block, 2, np.uint8), values[sl])
        w.flush_block()
    w.close({"status": "completed"})
    return values, robot_time, host


def decoded(path, topic):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with open(path, "rb") as fh:
        reader = make_reader(fh, decoder_factories=[DecoderFactory()])
        return [(m.log_time, d) for _s, _c, m, d in reader.iter_decoded_messages(topics=[topic])]


def test_joint_states_decode_with_the_ros2_library_sample_for_sample(tmp_path):
    path = tmp_path / "r.mcap"
    values, robot_time, host = record(path)
    states = decoded(path, "/joint_states")
    assert len(states) == 1000
    q_cols = [COLUMNS.index(f"q{i + 1}") for i in range(7)]
    qd_cols = [COLUMNS.index(f"qd{i + 1}") for i in range(7)]
    tau_cols = [COLUMNS.index(f"tau{i + 1}") for i in range(7)]
    for k in (0, 1, 499, 999):
        log_time, msg = states[k]
        assert log_time == host[k]
        assert list(msg.name) == list(PANDA.joint_names)
        assert np.array_equal(msg.position, values[k, q_cols])  # float64, bit for bit
        assert np.array_equal(msg.velocity, values[k, qd_cols])
        assert np.array_equal(msg.effort, values[k, tau_cols])
        assert msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9 == pytest.approx(robot_time[k], abs=1e-9)
    rec = load_recording(path)  # the lossless channel is still there, unchanged
    assert rec.samples == 1000 and np.array_equal(rec.signal("q"), values[:, q_cols])


def test_tf_and_urdf_show_the_arm_where_pinocchio_puts_it(tmp_path):
    import pinocchio as pin
    from mcap.reader import make_reader

    path = tmp_path / "r.mcap"
    values, _rt, _host = record(path)
    with open(path, "rb") as fh:
        reader = make_reader(fh)
        urdf = {a.name: a.data for a in reader.iter_attachments()}["robot.urdf"].decode()
    assert decoded(path, "/robot_description")[0][1].data == urdf
    model = pin.buildModelFromXML(urdf)
    data = model.createData()
    static = decoded(path, "/tf_static")[0][1].transforms
    assert [(t.header.frame_id, t.child_frame_id) for t in static] == [("link7", "tool")]
    tfs = decoded(path, "/tf")
    assert 9 <= len(tfs) <= 11  # every 100th sample
    q_cols = [COLUMNS.index(f"q{i + 1}") for i in range(7)]
    for log_time, msg in tfs[::2]:
        k = int((log_time - 10**9) // 10**6)
        chain = np.eye(4)
        frames = ["base_link"] + [f"link{j}" for j in range(1, 8)]
        for i, t in enumerate(msg.transforms):  # base_link -> link1 -> ... -> link7, composed
            assert (t.header.frame_id, t.child_frame_id) == (frames[i], frames[i + 1])
            r = t.transform.rotation
            T = np.eye(4)
            T[:3, :3] = pin.Quaternion(r.w, r.x, r.y, r.z).toRotationMatrix()
            T[:3, 3] = [t.transform.translation.x, t.transform.translation.y, t.transform.translation.z]
            chain = chain @ T
        q = values[k, q_cols]
        pin.framesForwardKinematics(model, data, q)
        oMf = data.oMf[model.getFrameId("link7")]
        assert np.allclose(chain[:3, 3], oMf.translation, atol=1e-9)
        assert np.allclose(chain[:3, :3], oMf.rotation, atol=1e-9)


def test_without_ros2_channels_the_file_has_only_robodyns(tmp_path):
    from mcap.reader import make_reader

    record(tmp_path / "plain.mcap", ros2=False)
    with open(tmp_path / "plain.mcap", "rb") as fh:
        topics = {c.topic for c in make_reader(fh).get_summary().channels.values()}
    assert topics == {"/robodyn/state", "/robodyn/events"}


def test_a_cut_file_with_ros2_channels_is_repaired_and_still_decodes(tmp_path):
    """A block is one chunk holding the msgpack block, its JointStates and TFs: a crash cuts
    whole blocks, and the repaired file decodes with the ROS 2 library up to the last one."""
    from robodyn.recording import repair_recording

    full = tmp_path / "full.mcap"
    values, _rt, _host = record(full, n=600)
    data = full.read_bytes()
    for fraction in (0.3, 0.55, 0.8):
        cut = tmp_path / f"cut{fraction}.mcap"
        cut.write_bytes(data[:int(len(data) * fraction)])
        before = load_recording(cut)
        assert repair_recording(cut, "test") is not None
        states = decoded(cut, "/joint_states")
        assert len(states) == before.samples > 0  # one JointState per lossless sample kept
        q_cols = [COLUMNS.index(f"q{i + 1}") for i in range(7)]
        assert np.array_equal(states[-1][1].position, values[before.samples - 1, q_cols])


def test_the_block_joint_state_encoder_matches_the_ros2_library_byte_for_byte():
    from mcap_ros2._dynamic import serialize_dynamic

    from robodyn.recording.ros2_channels import JointStateEncoder, schema_text

    name = "sensor_msgs/msg/JointState"
    reference = serialize_dynamic(name, schema_text(name))[name]
    rng = np.random.default_rng(5)
    for names in (list(PANDA.joint_names), ["a", "bb", "ccc"], ["shoulder_pan_joint"]):
        n = len(names)
        enc = JointStateEncoder(names)
        sec, nsec = rng.integers(0, 2**31 - 1, 4), rng.integers(0, 10**9, 4)
        arrays = [rng.normal(size=(4, n)) for _ in range(3)]
        rows = enc.encode(sec, nsec, arrays)
        for k in range(4):
            expected = reference({"header": {"stamp": {"sec": int(sec[k]), "nanosec": int(nsec[k])}, "frame_id": ""},
                                  "name": names, "position": arrays[0][k].tolist(),
                                  "velocity": arrays[1][k].tolist(), "effort": arrays[2][k].tolist()})
            assert rows[k].tobytes() == bytes(expected)
