"""ROS 2 bags in: bags written by rosbags' Writer (what `ros2 bag record` writes, both storage
plugins) and robodyn's own recordings, read through the one loader every command uses. The data
are the independent RNEA of a model along an excitation (tests/identification/conftest.py), so
identifying from the bag and from the same samples as CSV must give the same numbers."""

import json

import numpy as np
import pytest

pytest.importorskip("rosbags", reason="rosbags reads ROS 2 bags (extras 'ros2' and 'test')")

from robodyn.cli import main
from robodyn.identification.data import load_dataset
from robodyn.robot.loader import load_model

from .conftest import rest_to_rest_fourier, simulate

TWOLINK = load_model("twolink")
FRICTION = {"viscous": np.array([0.3, 0.2]), "coulomb": np.array([0.5, 0.4]), "offset": np.zeros(2)}


def write_bag(path, t, names, q, qd, tau, storage="mcap", topic="/joint_states", extra_topics=()):
    """A rosbag2 bag with one JointState per sample, stamped with t (the publisher's clock)."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.LATEST)
    JointState, Header, Time = (ts.types[k] for k in ("sensor_msgs/msg/JointState", "std_msgs/msg/Header",
                                                       "builtin_interfaces/msg/Time"))
    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    ns = np.round(np.asarray(t) * 1e9).astype(np.int64) + 10**18
    with Writer(path, version=9, storage_plugin=plugin) as w:
        conn = w.add_connection(topic, "sensor_msgs/msg/JointState", typestore=ts)
        for other in extra_topics:
            w.add_connection(other, "sensor_msgs/msg/JointState", typestore=ts)
        for k in range(len(ns)):
            msg = JointState(header=Header(stamp=Time(sec=int(ns[k] // 10**9), nanosec=int(ns[k] % 10**9)),
                                           frame_id=""), name=list(names), position=np.ascontiguousarray(q[k], float),
                             velocity=np.ascontiguousarray([] if qd is None else qd[k], float),
                             effort=np.ascontiguousarray([] if tau is None else tau[k], float))
            w.write(conn, int(ns[k]), ts.serialize_cdr(msg, "sensor_msgs/msg/JointState"))
    return ns


@pytest.fixture(scope="module")
def samples():
    data = simulate(TWOLINK, rest_to_rest_fourier(TWOLINK, 3, amplitude=0.3), rate=200, friction=FRICTION)
    return data


def reversed_bag(path, data, storage):
    """The bag names the joints in reverse order: values must be taken by name, not position."""
    ns = write_bag(path, data.t, ["joint2", "joint1"], data.q[:, ::-1], data.qd[:, ::-1], data.tau[:, ::-1], storage)
    return ns


def write_csv(path, t, data):
    header = "t,q1,q2,qd1,qd2,tau1,tau2"
    np.savetxt(path, np.column_stack([t, data.q, data.qd, data.tau]), delimiter=",", header=header, comments="",
               fmt="%.17g")


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_identify_from_a_bag_equals_identify_from_the_same_samples_as_csv(tmp_path, samples, storage, capsys):
    bag = tmp_path / "bag"
    ns = reversed_bag(bag, samples, storage)
    t = (ns - ns[0]) * 1e-9  # the header stamps as the loader reads them
    write_csv(tmp_path / "same.csv", t, samples)
    files = sorted(p.name for p in bag.iterdir())
    assert "metadata.yaml" in files and any(f.endswith(".mcap" if storage == "mcap" else ".db3") for f in files)
    outs = {}
    for name, src in (("bag", bag), ("csv", tmp_path / "same.csv")):
        out = tmp_path / f"{name}.json"
        assert main(["identify", str(src), "--robot", "twolink", "--method", "ols", "--out", str(out), "--json"]) == 0
        outs[name] = json.loads(out.read_text())
    capsys.readouterr()
    bag_values, csv_values = (np.asarray(outs[k]["estimate"]["values"]) for k in ("bag", "csv"))
    assert bag_values.shape == csv_values.shape and bag_values.size >= 8
    np.testing.assert_allclose(bag_values, csv_values, rtol=1e-9, atol=1e-12)
    # and the numbers are the plant's: the viscous and Coulomb friction of joint 1 come back
    value = {p["name"]: p["value"] for p in outs["bag"]["estimate"]["parameters"]}
    assert value["FV1"] == pytest.approx(0.3, rel=0.05) and value["FC2"] == pytest.approx(0.4, rel=0.05), value


def test_one_file_of_a_bag_and_a_lone_db3_file_read_the_same(tmp_path, samples):
    bag = tmp_path / "bag"
    reversed_bag(bag, samples, "sqlite3")
    db3 = next(bag.glob("*.db3"))
    whole = load_dataset(bag, model=TWOLINK)
    np.testing.assert_array_equal(load_dataset(db3, model=TWOLINK).tau, whole.tau)
    lone = tmp_path / "copied.db3"
    lone.write_bytes(db3.read_bytes())  # without metadata.yaml: read with sqlite directly
    alone = load_dataset(lone, model=TWOLINK)
    np.testing.assert_array_equal(alone.q, whole.q)
    np.testing.assert_array_equal(alone.tau, samples.tau)
    np.testing.assert_array_equal(alone.qd, samples.qd)
    np.testing.assert_allclose(alone.t, samples.t - samples.t[0], atol=1e-9)


def test_validate_predict_and_export_read_a_bag(tmp_path, samples, capsys):
    bag = tmp_path / "bag"
    reversed_bag(bag, samples, "mcap")
    result = tmp_path / "r.json"
    assert main(["identify", str(bag), "--robot", "twolink", "--method", "ols", "--out", str(result), "--json"]) == 0
    capsys.readouterr()
    assert main(["validate", str(result), str(bag), "--topic", "/joint_states", "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["relative_error_total"] < 0.05
    pred = tmp_path / "p.csv"
    assert main(["predict", str(result), str(bag), "--out", str(pred)]) == 0
    rows = np.loadtxt(pred, delimiter=",", skiprows=1, ndmin=2)
    # t, then per joint q, qd, qdd, measured, predicted, lower, upper
    assert rows.shape[1] == 1 + 7 * 2 and rows.shape[0] > 100
    out = tmp_path / "exported.csv"
    assert main(["export", str(bag), "--format", "csv", "--robot", "twolink", "--out", str(out)]) == 0
    header = out.read_text().splitlines()[0].split(",")
    table = np.loadtxt(out, delimiter=",", skiprows=1, ndmin=2)
    np.testing.assert_array_equal(table[:, header.index("tau2")], samples.tau[:, 1])  # by name, not bag order
    np.testing.assert_array_equal(table[:, header.index("q1")], samples.q[:, 0])




def test_robodyn_recordings_read_through_their_joint_states_channel(tmp_path):
    from robodyn.recording import load_recording
    from tests.daemon.test_ros2_channels import COLUMNS, PANDA, record

    path = tmp_path / "run.mcap"
    values, robot_time, _host = record(path, n=300)
    panda = load_model("panda")
    via_topic = load_dataset(path, model=panda, topic="/joint_states")
    lossless = load_dataset(path, model=panda)  # without --topic: the lossless block channel
    rec = load_recording(path)
    assert via_topic.count == lossless.count == rec.samples == 300
    np.testing.assert_array_equal(via_topic.q, values[:, [COLUMNS.index(f"q{i + 1}") for i in range(7)]])
    np.testing.assert_array_equal(via_topic.tau, lossless.tau)
    np.testing.assert_array_equal(via_topic.qd, lossless.qd)
    np.testing.assert_allclose(via_topic.t, robot_time - robot_time[0], atol=1e-9)
    assert PANDA.joint_names == panda.joint_names
    # a recording cut short by a crash (no summary, no footer) reads the same way, up to the cut
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(path.read_bytes()[:path.stat().st_size // 2])
    cut_topic, cut_lossless = load_dataset(cut, model=panda, topic="/joint_states"), load_dataset(cut, model=panda)
    assert 0 < cut_topic.count == cut_lossless.count < 300
    np.testing.assert_array_equal(cut_topic.tau, via_topic.tau[:cut_topic.count])


def bad(tmp_path, capsys, argv):
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    return err


def test_bad_bags_get_one_line_naming_what_is_wrong(tmp_path, samples, capsys):
    good = tmp_path / "good"
    write_bag(good, samples.t, ["joint1", "joint2"], samples.q, samples.qd, samples.tau, "mcap",
              extra_topics=("/arm/joint_states",))
    err = bad(tmp_path, capsys, ["identify", str(good), "--robot", "twolink", "--out", str(tmp_path / "x.json"),
                                 "--topic", "/nope"])
    assert "no topic '/nope'" in err and "/arm/joint_states, /joint_states" in err
    err = bad(tmp_path, capsys, ["identify", str(good), "--robot", "twolink", "--out", str(tmp_path / "x.json")])
    assert "several" in err and "--topic" in err  # two JointState topics: the user must choose

    no_effort = tmp_path / "no_effort"
    write_bag(no_effort, samples.t, ["joint1", "joint2"], samples.q, samples.qd, None, "sqlite3")
    err = bad(tmp_path, capsys, ["identify", str(no_effort), "--robot", "twolink", "--out", str(tmp_path / "x.json")])
    assert "no effort" in err and "'/joint_states'" in err

    wrong = tmp_path / "wrong_names"
    write_bag(wrong, samples.t, ["shoulder", "joint2"], samples.q, samples.qd, samples.tau, "mcap")
    err = bad(tmp_path, capsys, ["identify", str(wrong), "--robot", "twolink", "--out", str(tmp_path / "x.json")])
    # the log's names and the model's, and the two ways to map them
    assert "names joints [shoulder, joint2]" in err and "[joint1] are not among them" in err
    assert "model joints (and the names a log may give them): [joint1, joint2]" in err and "--joint-names" in err

    garbage = tmp_path / "garbage.mcap"
    garbage.write_bytes(b"not a bag at all" * 100)
    err = bad(tmp_path, capsys, ["identify", str(garbage), "--robot", "twolink", "--topic", "/joint_states",
                                 "--out", str(tmp_path / "x.json")])
    assert "not an MCAP file" in err
