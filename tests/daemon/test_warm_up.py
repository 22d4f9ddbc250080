"""daemon/warm_up.py: the start-up compile of the validation kernels is waited for while it
progresses (not for a fixed time), its child dies with the daemon however the daemon dies, and a
warm numba cache is recognised so that no child is started at all. Times are a fake clock's; the
only real waits are bounded polls for a process to be gone, or for a real daemon to report its
warm-up (then held open by a child that waits for the test instead of compiling)."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from robodyn.daemon import warm_up
from robodyn.tools.testing.local_daemon import free_port
from tests.processes import die_with_parent


def gone(pid: int) -> bool:
    """No such process, or a zombie (dead, waiting for whoever reaps orphans)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


PARENT = textwrap.dedent("""
    import multiprocessing, os, sys, time
    from robodyn.daemon import warm_up

    def child(parent_pid, mode):
        if mode == "poll":  # as where prctl is missing: the thread that watches the parent's pid
            warm_up.die_with_parent = lambda: False
        warm_up.tie_to_parent(parent_pid)
        print("tied", flush=True)
        time.sleep(600)

    if __name__ == "__main__":
        p = multiprocessing.get_context("spawn").Process(target=child, args=(os.getpid(), sys.argv[1]))
        p.start()
        print(p.pid, flush=True)
        time.sleep(600)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("mode", ["prctl", "poll"])
def test_the_warm_up_child_dies_when_the_daemon_is_killed(tmp_path, mode):
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    parent = subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE, text=True)
    try:
        child_pid = int(parent.stdout.readline())
        assert parent.stdout.readline().strip() == "tied"  # the child printed it on the shared stdout
        assert not gone(child_pid)
        parent.send_signal(signal.SIGKILL)  # no atexit, no multiprocessing clean-up: only the tie
        parent.wait(30)
        for _ in range(200):  # 10 s at most; the watching thread polls every PARENT_POLL_S
            if gone(child_pid):
                break
            time.sleep(0.05)
        assert gone(child_pid)
    finally:
        parent.kill()
        parent.wait(30)


def test_the_child_ties_itself_to_the_daemon_before_it_compiles(monkeypatch):
    calls = []
    monkeypatch.setattr(warm_up, "tie_to_parent", lambda pid: calls.append(("tie", pid)))
    from robodyn.daemon import motion

    monkeypatch.setattr(motion, "warm_up_validation", lambda model, rate: calls.append(("compile", rate)))
    warm_up.warm_up_in_child("a model", 1000.0, 4242)
    assert calls == [("tie", 4242), ("compile", 1000.0)]


class FakeChild:
    pid = 1
    exitcode = None

    def __init__(self):
        self.alive = True
        self.killed = False

    def is_alive(self):
        return self.alive

    def join(self, timeout=None):
        pass

    def kill(self):
        self.killed, self.alive, self.exitcode = True, False, -9


class Fake:
    """A clock and a CPU meter the test moves by hand."""

    def __init__(self):
        self.now = 0.0
        self.cpu_s = 0.0

    def clock(self):
        return self.now

    def cpu(self, pid):
        return self.cpu_s


def watched(fake, limit_s=1800.0):
    lines = []
    w = warm_up.WarmUp(model=None, limit_s=limit_s, marker=warm_up.CacheMarker("none", Path("/nonexistent")),
                       clock=fake.clock, cpu=fake.cpu, status=lines.append)
    child = FakeChild()
    w.watch(child)
    return w, child, lines


def test_a_compile_that_progresses_is_waited_for_beyond_any_fixed_bound_with_a_status_line():
    fake = Fake()
    w, child, lines = watched(fake)
    for _ in range(1000):  # 1000 s, more than three times the old fixed 300 s
        fake.now += 1.0
        fake.cpu_s += 0.05  # a busy host: 5 % of a core still counts as progress
        assert w.poll()
    assert not child.killed and w.outcome == ""
    assert len(lines) == 1000 // warm_up.REPORT_S
    assert lines[-1].startswith("compiling the validation kernels in a child process (1000 s, 50 s of CPU")
    child.alive, child.exitcode = False, 0
    assert not w.poll() and w.outcome == "done"


def test_a_child_that_gains_no_cpu_time_is_given_up_after_the_stall_time():
    fake = Fake()
    w, child, _ = watched(fake)
    fake.now, fake.cpu_s = 10.0, 3.0
    assert w.poll()  # progress at t = 10
    polls = 0
    while w.poll():
        fake.now += 1.0
        polls += 1
        assert polls < 1000
    assert child.killed and w.outcome == "stalled"
    assert fake.now == 10.0 + warm_up.STALL_S + 1.0  # the first poll past the stall time


def test_the_hard_cap_ends_even_a_progressing_compile():
    fake = Fake()
    w, child, _ = watched(fake, limit_s=50.0)
    while w.poll():
        fake.now += 1.0
        fake.cpu_s += 1.0
    assert child.killed and w.outcome == "over the limit" and fake.now == 51.0


def test_a_failed_child_is_reported_and_nothing_is_loaded():
    fake = Fake()
    w, child, _ = watched(fake)
    child.alive, child.exitcode = False, 1
    assert not w.poll() and w.outcome == "failed"
    w.finish()  # logs the failure; the first validation will compile


def test_the_marker_knows_a_warm_cache_and_forgets_it_on_any_change(tmp_path):
    from robodyn.daemon.motion import warm_up_validation
    from robodyn.robot.loader import load_model

    warm_up_validation(load_model("panda"), 1000.0)  # loads (or compiles) the kernels in this process
    marker = warm_up.CacheMarker("panda/7", tmp_path)
    assert not marker.is_warm()  # nothing recorded yet
    assert marker.record()
    assert marker.is_warm()
    doc = json.loads(marker.path.read_text())
    entry = doc["panda/7"]
    assert any(p.endswith("dynamics.py") for p in entry["sources"])
    assert any(p.endswith(".nbi") for p in entry["cache_files"]) and any(p.endswith(".nbc") for p in entry["cache_files"])
    assert warm_up.CacheMarker("ur5/6", tmp_path).is_warm() is False  # another model: its own entry

    def changed(edit) -> bool:
        d = json.loads(json.dumps(doc))
        edit(d["panda/7"])
        marker.path.write_text(json.dumps(d))
        return marker.is_warm()

    first_source = next(iter(entry["sources"]))
    first_file = next(iter(entry["cache_files"]))
    digest, size, mtime = entry["sources"][first_source]
    assert not changed(lambda e: e["sources"].__setitem__(first_source, ["0" * 64, size, mtime]))  # edited
    assert not changed(lambda e: e["sources"].__setitem__(first_source, [digest, size, mtime - 1]))  # touched
    assert not changed(lambda e: e["cache_files"].__setitem__(first_file, [1, 2]))  # numba rewrote a file
    assert not changed(lambda e: e["cache_files"].__setitem__(first_file + ".gone", [1, 2]))  # one was deleted
    assert not changed(lambda e: e["host"].__setitem__("numba", "0.0"))  # another numba
    assert not changed(lambda e: e["host"].__setitem__("cpu", "another-cpu"))  # another CPU
    assert changed(lambda e: None)
    marker.forget()
    assert not marker.is_warm()


def test_a_warm_marker_means_no_child(tmp_path, monkeypatch):
    class Warm:
        def is_warm(self):
            return True

    w = warm_up.WarmUp(model=None, marker=Warm())
    monkeypatch.setattr(warm_up.multiprocessing, "get_context", lambda *_: pytest.fail("a child was started"))
    w.start()
    assert w.skipped and w.outcome == "done" and not w.poll()


# --------------------------------------------------------------------------- a real daemon, stopped while it warms up

# `robodyn daemon` as the command line runs it, except that the warm-up child waits for the test
# instead of compiling: multiprocessing's spawn runs this file again (as __mp_main__) in every child
# the daemon starts, so in the warm-up child too the compile step (motion.warm_up_validation) is the
# wait below, called after the child tied itself to the daemon (warm_up.warm_up_in_child). The real
# compile is no window to aim a signal at: with a warm cache there is no child, or one for a few
# seconds; with a cold one it lasts as long as the host's load makes it. With a file "hold-workers"
# in the folder, each worker (driver, recorder, publisher) also waits, at the start of its start-up
# (before its object's __init__: as while it imports, compiles the simulator's kernels or connects
# to a robot), until the test creates "workers-go".
GATED_DAEMON = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path

    from robodyn.daemon import motion, supervision, warm_up

    FOLDER = Path(FOLDER_TEXT)

    def wait_for_the_test(model, rate_hz):
        (FOLDER / f"waiting-{os.getpid()}").touch()
        for _ in range(6000):  # 600 s at most
            if (FOLDER / "go").exists():
                return
            time.sleep(0.1)

    def held(init):
        def wait_then_init(self, *args, **kwargs):
            (FOLDER / f"held-{os.getpid()}").touch()
            for _ in range(6000):  # 600 s at most
                if (FOLDER / "workers-go").exists():
                    break
                time.sleep(0.1)
            init(self, *args, **kwargs)
        return wait_then_init

    motion.warm_up_validation = wait_for_the_test
    # as with a cold numba cache: the start uses a child; and the real marker is never touched
    warm_up.CacheMarker.is_warm = lambda self: False
    warm_up.CacheMarker.record = lambda self: False
    warm_up.CacheMarker.forget = lambda self: None
    # the test's own outer bounds apply: the workers' 60 s start-up bound ended a start at nice 19
    # beside stress-ng before the warm-up child was even waiting
    supervision.STARTUP_TIMEOUT_S = 600.0
    if (FOLDER / "hold-workers").exists():
        from robodyn.daemon import publisher, recorder, rtloop

        for worker in (rtloop.DriverLoop, recorder.Recorder, publisher.Publisher):
            worker.__init__ = held(worker.__init__)

    if __name__ == "__main__":
        from robodyn.cli import main

        sys.exit(main(["daemon", "--config", sys.argv[1]]))
""")
WARM_UP_PID = re.compile(r"compiling the validation kernels in a child process, pid (\d+)")
WORKER_PID = re.compile(r"started \w+ process pid (\d+)")


def parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def gone_within(pid: int, seconds: float) -> bool:
    for _ in range(int(seconds / 0.05)):
        if gone(pid):
            return True
        time.sleep(0.05)
    return gone(pid)


def start_gated_daemon(folder: Path, hold_workers: bool = False) -> tuple[subprocess.Popen, Path]:
    if hold_workers:
        (folder / "hold-workers").touch()
    script = folder / "gated_daemon.py"
    script.write_text(GATED_DAEMON.replace("FOLDER_TEXT", repr(str(folder))))
    config = folder / "daemon.toml"
    config.write_text(f'[daemon]\ncontrol = "tcp://127.0.0.1:{free_port()}"\nstate = "tcp://127.0.0.1:{free_port()}"\n'
                      f'data_dir = "{folder / "data"}"\n[robot]\nname = "panda"\ndriver = "sim"\n'
                      "[driver]\nspeed = 1.0\nseed = 0\n")  # real time: the simulator idles between steps
    log_path = folder / "daemon.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, str(script), str(config)], stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=die_with_parent)
    return proc, log_path


def warming_up(proc: subprocess.Popen, folder: Path, log_path: Path) -> int:
    """The warm-up child's pid, once the daemon has logged it and the child waits in its compile step."""
    for _ in range(1200):  # 120 s at most: a loaded host starts four interpreters slowly
        assert proc.poll() is None, log_path.read_text()
        found = WARM_UP_PID.search(log_path.read_text())
        if found and (folder / f"waiting-{found.group(1)}").exists():
            return int(found.group(1))
        time.sleep(0.1)
    pytest.fail("the daemon did not report its warm-up in 120 s:\n" + log_path.read_text())


def stop(proc: subprocess.Popen, folder: Path, pids=()) -> None:
    """Whatever a test left: the gates opened, the daemon killed, its workers waited for (they leave
    when they notice the daemon is gone), then killed if still a spawned child of this test's daemon
    (a worker that failed to notice must not run on beside the next tests)."""
    (folder / "go").touch()
    (folder / "workers-go").touch()
    if proc.poll() is None:
        proc.kill()
    proc.wait(30)
    for _ in range(200):  # 10 s at most for all of them together
        if all(gone(pid) for pid in pids):
            break
        time.sleep(0.05)
    for pid in pids:
        if not gone(pid):
            try:
                if b"multiprocessing" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@contextlib.contextmanager
def gated_warm_up(folder: Path, hold_workers: bool = False):
    """A daemon held in its warm-up: (process, log, warm-up child's pid, every pid of this start);
    whatever is left of them is stopped afterwards. ``hold_workers``: its workers are held too,
    at the start of their start-up (see GATED_DAEMON)."""
    proc, log_path = start_gated_daemon(folder, hold_workers)
    pids = []
    try:
        child = warming_up(proc, folder, log_path)
        pids += [child] + [int(p) for p in WORKER_PID.findall(log_path.read_text())]
        assert parent_of(child) == proc.pid  # the daemon's own warm-up child, in its compile step
        yield proc, log_path, child, pids
    finally:
        stop(proc, folder, pids)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_during_the_warm_up_stops_the_daemon_cleanly_and_leaves_no_child(tmp_path):
    with gated_warm_up(tmp_path) as (proc, log_path, child, pids):
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 0, log_path.read_text()
        text = log_path.read_text()
        assert "start-up abandoned during the validation kernels' warm-up: asked to stop" in text
        assert f"killed the warm-up child, pid {child}" in text
        assert gone_within(child, 10)
        # the workers it had started are stopped as well: nothing of this start is left running
        assert len(pids) == 4 and all(gone_within(pid, 30) for pid in pids[1:]), text


WORKERS = ("driver", "recorder", "publisher")
LEAVE_S = 120.0  # outer bound only: a worker may first finish a slow step of its start-up


def workers_left_and_said_why(proc: subprocess.Popen, log_path: Path, pids: list[int]) -> str:
    """After the daemon's SIGKILL: every worker of this start (pids[1:]) exits on its own, having
    said on the daemon's log that the main process died; the log's text."""
    assert len(pids) == 4, log_path.read_text()
    for _ in range(int(LEAVE_S / 0.1)):
        if all(gone(pid) for pid in pids[1:]):
            break
        time.sleep(0.1)
    text = log_path.read_text()
    left = [pid for pid in pids[1:] if not gone(pid)]
    assert not left, f"workers {left} still running {LEAVE_S:.0f} s after the daemon was killed:\n{text}"
    for worker in WORKERS:
        assert f"robodyn {worker}: the daemon's main process (pid {proc.pid}) died" in text, text
    return text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_of_the_daemon_during_the_warm_up_leaves_no_warm_up_child_and_no_worker(tmp_path):
    with gated_warm_up(tmp_path) as (proc, log_path, child, pids):
        proc.send_signal(signal.SIGKILL)  # no handler, no clean-up: only the kernel's parent-death signal
        proc.wait(30)
        assert gone_within(child, 10)
        workers_left_and_said_why(proc, log_path, pids)


def wait_until_workers_held(folder: Path, pids: list[int], log_path: Path) -> None:
    """Every worker of this start (pids[1:]) is held at the start of its start-up (GATED_DAEMON)."""
    for _ in range(1200):  # 120 s at most
        if all((folder / f"held-{pid}").exists() for pid in pids[1:]):
            return
        time.sleep(0.1)
    raise AssertionError("workers not held within 120 s:\n" + log_path.read_text())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_still_starting_when_the_daemon_is_sigkilled_notice_it_and_exit(tmp_path):
    """Killed while its workers are still in their start-up (held before their objects are made:
    as while they import, compile or connect), the daemon's workers must still notice. A worker
    that reads its parent's pid only once its start-up is done gets the pid of whoever adopted it,
    and runs on for good (daemon/main_process.py)."""
    with gated_warm_up(tmp_path, hold_workers=True) as (proc, log_path, child, pids):
        wait_until_workers_held(tmp_path, pids, log_path)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert gone_within(child, 10)
        (tmp_path / "workers-go").touch()  # now they go on with their start-up, orphaned
        text = workers_left_and_said_why(proc, log_path, pids)
        # the driver saw it before its first read of the robot: it never reported ready (its start-up
        # watch said so, or, had the gate opened first, its own check before ready)
        said = re.search(rf"robodyn driver: the daemon's main process \(pid {proc.pid}\) died; (during start-up|"
                         r"leaving at once, while .*, before reporting ready)", text)
        assert said, text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_start_abandoned_while_its_workers_still_start_ends_without_waiting_for_them(tmp_path):
    """Stopped while its workers have not yet connected their pipes (held before their objects are
    made: as while they import, compile or connect on a loaded host), the daemon must still exit,
    and leave none of them running. A blocking send of their shutdown on a pipe with no peer waited
    for a worker to connect (seen on a loaded host: a daemon whose driver had failed stayed alive
    minutes after saying so)."""
    with gated_warm_up(tmp_path, hold_workers=True) as (proc, log_path, child, pids):
        wait_until_workers_held(tmp_path, pids, log_path)
        proc.send_signal(signal.SIGTERM)  # the gates stay closed: no worker ever connects
        try:
            code = proc.wait(120)  # outer bound only: the daemon gives each worker 7 s, then stops it
        except subprocess.TimeoutExpired:
            pytest.fail("the daemon did not exit with its workers held in their start-up:\n" + log_path.read_text())
        assert code == 0, log_path.read_text()
        assert (tmp_path / "workers-go").exists() is False
        assert len(pids) == 4 and all(gone_within(pid, 30) for pid in pids[1:]), log_path.read_text()
