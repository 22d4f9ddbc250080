"""`robodyn calibrate collect`: the plan is driven through a real daemon process (simulated robot,
loopback only), each pose is settled, read at rest and paired with a measurement from a tracker
hook; a measurement that never arrives skips its pose, reported, never guessed."""

import json
import socket
import threading
import time

import numpy as np
import pytest

from robodyn.calibration.collect import FileSource, TcpSource
from robodyn.calibration_collect import SimulatedTrackerServer
from robodyn.calibration.measurement_csv import load_measurements
from robodyn.calibration.robots import UR5_LI2023_MODEL
from robodyn.calibration.simulation import TrackerNoise, ur5_li2023_cell
from robodyn.cli import main
from robodyn.tools.testing.local_daemon import LocalDaemon


def test_file_source_waits_for_its_line_and_times_out(tmp_path):
    results = tmp_path / "tracker.csv"
    requests = tmp_path / "requests.csv"
    source = FileSource(results, targets=2, units="mm", request_file=requests, poll_s=0.01)

    def tracker():  # the tracker software: answers the first request, ignores the second
        for _ in range(500):
            if requests.exists() and requests.read_text().startswith("P001,"):
                results.write_text("# point, x1, y1, z1, x2, y2, z2 (mm)\nP000, 1, 2, 3, 4, 5,\n"
                                   "P001, 100, 200, 300, , ,\n")
                return
            time.sleep(0.01)

    thread = threading.Thread(target=tracker)
    thread.start()
    reading = source.request("P001", np.zeros(6), timeout=5.0)
    thread.join()
    assert np.allclose(reading.points[0], [0.1, 0.2, 0.3]) and np.isnan(reading.points[1]).all()
    assert source.request("P002", np.ones(6), timeout=0.2) is None
    assert "no line for P002" in source.last_reason
    assert source.request("P000", np.ones(6), timeout=0.2) is None  # a half-written target is not a reading
    assert "target 2 has some coordinates but not all" in source.last_reason
    assert requests.read_text().splitlines()[1].startswith("P002,1.0,")


def test_tcp_source_skips_late_replies_and_reports_refusals():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]

    def hook():
        conn, _ = server.accept()
        with conn:
            f = conn.makefile("rwb")
            f.readline()  # MEASURE A ...: answered too late, after B was asked
            f.readline()
            f.write(b"A 1 2 3\nB NONE beam blocked\n")
            f.flush()
            f.readline()
            f.write(b"C 0.5 0.6 0.7\n")
            f.flush()
            time.sleep(0.2)

    thread = threading.Thread(target=hook)
    thread.start()
    source = TcpSource("127.0.0.1", port, units="m")
    assert source.request("A", np.zeros(6), timeout=0.2) is None
    assert source.request("B", np.zeros(6), timeout=2.0) is None
    assert source.last_reason == "the hook has no measurement: beam blocked"
    assert np.allclose(source.request("C", np.zeros(6), timeout=2.0).points, [[0.5, 0.6, 0.7]])
    source.close()
    thread.join()
    server.close()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = LocalDaemon(tmp_path_factory.mktemp("collect"), robot=str(UR5_LI2023_MODEL), driver_options={"speed": 0.0})
    yield d
    d.stop()


def test_collect_through_the_daemon_with_a_dropped_measurement(daemon, tmp_path, capsys):
    plan = tmp_path / "plan.json"
    assert main(["calibrate", "plan", "--robot", "ur5_li2023", "--poses", "6", "--seed", "3", "--out", str(plan)]) == 0
    gm, cell = ur5_li2023_cell(seed=4, noise=TrackerNoise(15e-6, 6e-6))
    out = tmp_path / "collected.csv"
    capsys.readouterr()
    with SimulatedTrackerServer(daemon.control, cell.robot, cell.tracker, drop={"P003"}) as tracker:
        code = main(["calibrate", "collect", str(plan), "--endpoint", daemon.control, "--source",
                     f"tcp:127.0.0.1:{tracker.port}", "--measure-timeout", "8", "--settle", "0.3", "--window", "0.3",
                     "--out", str(out), "--json"])
        asked = list(tracker.requests)
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert code == 0, (captured.err, report)
    assert report["planned"] == 6 and report["collected"] == 5
    assert report["skipped"] == [{"pose": "P003", "reason": "no reply for P003 within 8 s"}]
    assert asked == ["P001", "P002", "P003", "P004", "P005", "P006"]  # every pose was visited and asked for
    assert len(report["runs"]) == 6 and report["stopped"] is None
    meas, info = load_measurements(out, gm)
    assert meas.ids == ["P001", "P002", "P004", "P005", "P006"] and info["joint_values"] == "controller"
    planned = np.array([p["q"] for p in json.loads(plan.read_text())["poses"]])
    # the joint angles at rest, as the daemon read them, are where the plan sent the arm
    assert np.max(np.abs(meas.q - planned[[0, 1, 3, 4, 5]])) < 2e-3
    # and each measurement is the tracker's reading of the arm there, not a guess
    truth = cell.robot.positions(meas.q)
    assert np.max(np.linalg.norm(meas.p - truth, axis=1)) < 2e-4
    assert not any(np.allclose(meas.p[k], truth[j]) for k in range(5) for j in range(5) if j != k)
    # a daemon run is what moved the arm: the daemon's own log of runs has them, validated and completed
    runs = {r["run_id"]: r for r in daemon.client.runs()}
    assert all(runs[r]["state"] == "completed" for r in report["runs"].values())


def test_collect_stops_and_writes_nothing_when_no_pose_is_measured(daemon, tmp_path, capsys):
    plan = tmp_path / "plan.json"
    assert main(["calibrate", "plan", "--robot", "ur5_li2023", "--poses", "1", "--seed", "5", "--out", str(plan)]) == 0
    results = tmp_path / "never.csv"
    # (--daemon: the old spelling of --endpoint, hidden from the help and still taken)
    code = main(["calibrate", "collect", str(plan), "--daemon", daemon.control, "--source", f"file:{results}",
                 "--measure-timeout", "0.3", "--settle", "0.2", "--window", "0.2", "--out", str(tmp_path / "x.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "no pose was measured" in err and not (tmp_path / "x.csv").exists()
