"""daemon/main_process.py: a worker knows the daemon's main process by the pid multiprocessing
recorded when it was created, so one that was still starting when the main process died notices;
and each worker, finding the main process gone before it reports ready, leaves at once (no run
exists), saying why. The daemon-level test (SIGKILL during the warm-up, workers held in their
start-up) is in tests/daemon/test_warm_up.py."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from robodyn.daemon import main_process
from robodyn.daemon.config import DaemonConfig
from robodyn.tools.testing.local_daemon import free_port
from tests.processes import die_with_parent

# a parent that starts one child the way the daemon starts its workers; the child waits for the
# test before it asks who its main process is, as a worker still importing or connecting would
PARENT = textwrap.dedent("""
    import multiprocessing, os, sys, time
    from pathlib import Path

    def child(folder):
        folder = Path(folder)
        (folder / f"started-{os.getpid()}").touch()
        for _ in range(6000):  # 600 s at most
            if (folder / "go").exists():
                break
            time.sleep(0.1)
        from robodyn.daemon.main_process import main_process_gone, main_process_pid

        pid = main_process_pid()
        (folder / "answer.tmp").write_text(f"{pid} {main_process_gone(pid)} {os.getppid()}")
        (folder / "answer.tmp").rename(folder / "answer")

    if __name__ == "__main__":
        p = multiprocessing.get_context("spawn").Process(target=child, args=(sys.argv[1],))
        p.start()
        print(p.pid, flush=True)
        time.sleep(600)
""")


def wait_for(path, seconds: float = 300.0) -> bool:
    """Outer bound only: a loaded host starts an interpreter slowly."""
    for _ in range(int(seconds / 0.1)):
        if path.exists():
            return True
        time.sleep(0.1)
    return path.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="re-parenting as on Linux")
def test_a_worker_orphaned_before_it_asked_still_knows_its_main_process_is_gone(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    parent = subprocess.Popen([sys.executable, str(script), str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              preexec_fn=die_with_parent)
    child_pid = None
    try:
        child_pid = int(parent.stdout.readline())
        assert wait_for(tmp_path / f"started-{child_pid}")
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
        (tmp_path / "go").touch()
        assert wait_for(tmp_path / "answer")
        pid, gone, ppid = (tmp_path / "answer").read_text().split()
        # its creator, not its adopter: os.getppid() read now would give the adopter's pid
        assert int(pid) == parent.pid and int(ppid) != parent.pid
        assert gone == "True"
    finally:
        parent.kill()
        parent.wait(30)
        (tmp_path / "go").touch()  # the child leaves on its own then


def test_outside_multiprocessing_the_main_process_is_the_parent():
    assert main_process.main_process_pid() == os.getppid()
    assert not main_process.main_process_gone(os.getppid())
    assert main_process.main_process_gone(os.getpid())  # never one's own parent


# --------------------------------------------------------------------------- each worker, before it reports ready


def not_our_parent() -> int:
    return os.getpid()  # a pid that is certainly not this process's parent: "the main process died"


def pipe_at(tmp_path, name: str):
    import zmq

    ctx = zmq.Context()
    pipe = ctx.socket(zmq.PAIR)
    pipe.bind(f"ipc://{tmp_path}/{name}")
    return ctx, pipe


def nothing_sent(pipe) -> bool:
    return not pipe.poll(500)


def test_the_recorder_leaves_before_it_reports_ready_when_the_main_process_died(tmp_path, capfd):
    from robodyn.daemon import recorder as R

    ctx, pipe = pipe_at(tmp_path, "recorder")
    rec = R.Recorder(DaemonConfig(data_dir=str(tmp_path), ros2=False),
                     {"state_ipc": f"ipc://{tmp_path}/state", "recorder_pipe": f"ipc://{tmp_path}/recorder"})
    try:
        rec.parent_pid = not_our_parent()
        rec.run()  # returns: no run exists, nothing to finalize
        assert nothing_sent(pipe)  # never said ready
    finally:
        rec.ctx.destroy(linger=0)
        ctx.destroy(linger=0)
    err = capfd.readouterr().err
    assert f"robodyn recorder: the daemon's main process (pid {os.getpid()}) died; no recording open; exiting" in err


def test_the_publisher_leaves_before_it_reports_ready_when_the_main_process_died(tmp_path, capfd):
    from robodyn.daemon.publisher import Publisher

    ctx, pipe = pipe_at(tmp_path, "publisher")
    pub = Publisher(DaemonConfig(data_dir=str(tmp_path), state=f"tcp://127.0.0.1:{free_port()}"),
                    {"state_ipc": f"ipc://{tmp_path}/state", "publisher_pipe": f"ipc://{tmp_path}/publisher"})
    try:
        pub.parent_pid = not_our_parent()
        pub.run()
        assert nothing_sent(pipe)
    finally:
        pub.close()
        ctx.destroy(linger=0)
    assert f"robodyn publisher: the daemon's main process (pid {os.getpid()}) died; during start-up" in \
        capfd.readouterr().err


class RecordedRobot:
    """The simulator, described as usual, with connect, read and close only recorded (its connect
    would compile the plant's kernels): what the driver process does to the robot, in order."""

    def __init__(self):
        from robodyn.drivers.sim import SimulatedRobot

        self.sim = SimulatedRobot({"seed": 0})
        self.calls = []

    def describe(self):
        return self.sim.describe()

    def connect(self):
        self.calls.append("connect")

    def read(self):
        self.calls.append("read")

    def close(self):
        self.calls.append("close")


def driver_loop(tmp_path, monkeypatch):
    from robodyn.daemon import rtloop
    from robodyn.drivers import registry

    robot = RecordedRobot()
    monkeypatch.setattr(registry, "create_driver", lambda kind, options: robot)
    return rtloop, robot, {"state_ipc": f"ipc://{tmp_path}/state", "driver_pipe": f"ipc://{tmp_path}/driver"}


def test_the_driver_connects_to_no_robot_when_the_main_process_died_during_its_start_up(tmp_path, monkeypatch):
    rtloop, robot, endpoints = driver_loop(tmp_path, monkeypatch)
    monkeypatch.setattr(rtloop, "main_process_pid", not_our_parent)
    with pytest.raises(rtloop.MainProcessGone):
        rtloop.DriverLoop(DaemonConfig(data_dir=str(tmp_path)), endpoints)
    assert robot.calls == []  # not connected, so never read nor commanded


def test_the_driver_leaves_before_its_first_read_and_closes_the_robot_connection(tmp_path, monkeypatch, capfd):
    rtloop, robot, endpoints = driver_loop(tmp_path, monkeypatch)
    ctx, pipe = pipe_at(tmp_path, "driver")
    loop = rtloop.DriverLoop(DaemonConfig(data_dir=str(tmp_path)), endpoints)
    try:
        loop.parent_pid = not_our_parent()  # the main process died after the connect
        loop.run()
        assert robot.calls == ["connect", "close"]  # never read, so never commanded; the connection closed
        assert nothing_sent(pipe)
    finally:
        loop.ctx.destroy(linger=0)
        ctx.destroy(linger=0)
    assert f"robodyn driver: the daemon's main process (pid {os.getpid()}) died; during start-up" in \
        capfd.readouterr().err
