"""daemon/warm_up.py: the start-up compile of the validation kernels is waited for while it
progresses (not for a fixed time), its child dies with the daemon however the daemon dies, and a
warm numba cache is recognised so that no child is started at all. Times are a fake clock's; the
only real waits are bounded polls for a killed process to be gone."""

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from robodyn.daemon import warm_up


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
