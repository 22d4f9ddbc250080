"""daemon/main_process.py: a worker knows the daemon's main process by the pid multiprocessing
recorded when it was created, so one that was still starting when the main process died notices;
and each worker, finding the main process gone before it reports ready, leaves at once (no run
exists), saying why; one held inside a slow start-up step (a compile, a robot that does not
answer, a C call that holds the GIL) leaves at once all the same, and the start-up watch never
acts after ready. The daemon-level test (SIGKILL during the warm-up, workers held in their
start-up) is in tests/daemon/test_warm_up.py."""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

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


# --------------------------------------------------------------------------- a worker held in a slow start-up step

# A stand-in for the daemon's main process: it starts the real driver process (driver_process_main)
# the way the daemon does (multiprocessing's spawn, from its main thread), with a driver whose slow
# start-up step the test controls. Spawn runs this file again (as __mp_main__) in the child, so the
# driver kind and the compile step are replaced there too. Modes:
#   compile  the simulator's connect, its numba compile replaced by a wait that lets threads run
#            (as numba's does: it is Python, and LLVM is called through ctypes)
#   connect  a robot connect that hangs: a loopback address that accepts and never answers
#   gil      a connect that blocks in C while holding the GIL (as pylibfranka's and ur_rtde's do)
#   quick    a connect that returns at once: the driver reports ready
STAND_IN = textwrap.dedent("""
    import contextlib, ctypes, multiprocessing, os, socket, sys, time
    from pathlib import Path

    from robodyn.drivers import registry, sim

    FOLDER, MODE, PORT = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])

    def mark(name):
        (FOLDER / f"{name}-{os.getpid()}").touch()

    def compiling(dof):
        mark("held")
        for _ in range(1200):  # 120 s at most
            time.sleep(0.1)

    class HeldRobot(sim.SimulatedRobot):
        def connect_step(self):
            if MODE == "compile":
                return super().connect_step()
            return f"while connecting to the robot at 127.0.0.1:{PORT}"

        def _do_connect(self):
            if MODE == "compile":
                super()._do_connect()
            elif MODE == "connect":
                link = socket.create_connection(("127.0.0.1", PORT), timeout=120)
                mark("held")
                link.recv(1)  # no answer comes: the listener never accepts
            elif MODE == "gil":
                with getattr(self, "holding_the_gil", contextlib.nullcontext)():
                    mark("held")
                    ctypes.PyDLL(None).sleep(120)  # libc's sleep, the GIL held throughout

        def _do_read(self):
            time.sleep(0.001)
            self.state.robot_time += 0.001
            return self.state

        def _do_close(self):
            mark("closed")

        def diagnostics(self):
            return {}

    sim.load_kernels = compiling
    registry.create_driver = lambda kind, options: HeldRobot(options)

    if __name__ == "__main__":
        import zmq
        from robodyn.daemon import protocol
        from robodyn.daemon.config import DaemonConfig
        from robodyn.daemon.rtloop import driver_process_main

        endpoints = {"state_ipc": f"ipc://{FOLDER}/state", "driver_pipe": f"ipc://{FOLDER}/driver"}
        pipe = zmq.Context().socket(zmq.PAIR)
        pipe.bind(endpoints["driver_pipe"])
        cfg = DaemonConfig(data_dir=str(FOLDER / "data"), ros2=False)
        worker = multiprocessing.get_context("spawn").Process(target=driver_process_main,
                                                              args=(cfg.to_dict(), endpoints))
        worker.start()
        print(worker.pid, flush=True)
        for _ in range(6000):  # 600 s at most; the test kills this process
            if pipe.poll(100):
                print(protocol.unpackb(pipe.recv()).get("type"), flush=True)  # "ready", or "fatal"
                break
        time.sleep(600)
""")
LEAVE_S = 60.0  # outer bound only: the watch polls a few times a second; a loaded host is slow


def gone(pid: int) -> bool:
    """No such process, or a zombie (dead, waiting for whoever reaps orphans)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def gone_within(pid: int, seconds: float) -> bool:
    for _ in range(int(seconds / 0.1)):
        if gone(pid):
            return True
        time.sleep(0.1)
    return gone(pid)


class StandIn:
    """The stand-in main process and its driver process; both killed afterwards if still there."""

    def __init__(self, folder, mode: str, port: int):
        script = folder / "stand_in.py"
        script.write_text(STAND_IN)
        self.folder = folder
        self.log = folder / "stand_in.log"  # the worker inherits its stderr: the daemon's log
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([sys.executable, str(script), str(folder), mode, str(port)],
                                         stdout=subprocess.PIPE, stderr=log, text=True, preexec_fn=die_with_parent)
        self.worker = int(self.proc.stdout.readline())

    def kill_main_process(self) -> None:
        self.proc.send_signal(signal.SIGKILL)  # no handler, no clean-up
        self.proc.wait(30)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        if not gone(self.worker):  # a worker that failed to notice must not run on beside the next tests
            try:
                if b"multiprocessing" in Path(f"/proc/{self.worker}/cmdline").read_bytes():
                    os.kill(self.worker, signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture
def silent_robot():
    """A loopback address that accepts a connection (the kernel's backlog) and never answers."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield listener.getsockname()[1]
    listener.close()


def held_then_orphaned(tmp_path, mode: str, port: int) -> StandIn:
    stand_in = StandIn(tmp_path, mode, port)
    assert wait_for(tmp_path / f"held-{stand_in.worker}"), stand_in.log.read_text()
    stand_in.kill_main_process()
    return stand_in


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="re-parenting as on Linux")
@pytest.mark.parametrize("mode, step", [
    ("compile", "while building the simulated robot and compiling its numba kernels"),
    ("connect", "while connecting to the robot at 127.0.0.1:{port}")])
def test_a_driver_held_in_a_slow_start_up_step_leaves_at_once_when_the_main_process_is_killed(
        tmp_path, silent_robot, mode, step):
    """Without the start-up watch it would finish the step first: 120 s here, minutes for a cold
    compile on a busy host, never for a robot that does not answer."""
    stand_in = held_then_orphaned(tmp_path, mode, silent_robot)
    try:
        assert gone_within(stand_in.worker, LEAVE_S), stand_in.log.read_text()
        line = (f"robodyn driver: the daemon's main process (pid {stand_in.proc.pid}) died; leaving at once, "
                f"{step.format(port=silent_robot)}, before reporting ready (no run existed)")
        assert line in stand_in.log.read_text().splitlines()
    finally:
        stand_in.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_driver_held_in_a_call_that_holds_the_gil_is_ended_by_the_kernel(tmp_path, silent_robot):
    """No Python thread runs while a C call holds the GIL: the kernel's parent-death signal, armed
    for that call only, ends the process, which cannot say why (no line from the watch)."""
    stand_in = held_then_orphaned(tmp_path, "gil", silent_robot)
    try:
        assert gone_within(stand_in.worker, LEAVE_S), stand_in.log.read_text()
        assert "leaving at once" not in stand_in.log.read_text()  # the watch thread never ran
    finally:
        stand_in.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="re-parenting as on Linux")
def test_after_ready_the_watch_never_fires_and_the_driver_leaves_through_its_loop(tmp_path, silent_robot):
    """Ready sent, then the main process killed: the driver's own loop notices (it would bring any
    motion to rest first), closes the robot connection and exits; the start-up watch, handed over
    before ready, does nothing."""
    stand_in = StandIn(tmp_path, "quick", silent_robot)
    try:
        assert stand_in.proc.stdout.readline().strip() == "ready", stand_in.log.read_text()
        stand_in.kill_main_process()
        assert gone_within(stand_in.worker, LEAVE_S), stand_in.log.read_text()
        text = stand_in.log.read_text()
        assert (f"robodyn driver: the daemon's main process (pid {stand_in.proc.pid}) died; no run in progress; "
                "exiting") in text.splitlines()
        assert "leaving at once" not in text
        assert (tmp_path / f"closed-{stand_in.worker}").exists()  # left through its loop's end: driver.close()
    finally:
        stand_in.close()


WATCH = textwrap.dedent("""
    import os, sys
    from robodyn.daemon.main_process import StartupWatch

    watch = StartupWatch("driver", os.getpid(), "while testing the hand-over")  # "the main process is gone"
    if sys.argv[1] == "handed-over":
        watch.hand_over()  # as right before ready
    watch.start()
    watch._thread.join(60)  # outer bound: it polls every POLL_S, then leaves or, handed over, ends
    watch.leave()  # a late call (a thread that lost the race for the lock) does nothing either
    print("still running", flush=True)
""")


@pytest.mark.parametrize("handed_over", [False, True])
def test_the_watch_ends_the_process_before_the_hand_over_and_never_after(tmp_path, handed_over):
    script = tmp_path / "watch.py"
    script.write_text(WATCH)
    done = subprocess.run([sys.executable, str(script), "handed-over" if handed_over else "watching"],
                          capture_output=True, text=True, timeout=120)
    if handed_over:
        assert done.stdout == "still running\n" and "leaving at once" not in done.stderr
    else:  # ended at once (os._exit), with the one line
        assert done.stdout == "" and done.returncode == 0
        assert re.fullmatch(r"robodyn driver: the daemon's main process \(pid \d+\) died; leaving at once, while "
                            r"testing the hand-over, before reporting ready \(no run existed\)\n", done.stderr)
