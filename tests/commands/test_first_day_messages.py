"""What a new user sees: a waited-for run or job named once per progress line, Ctrl-C during
`run --wait` aborting the motion, `status` flagging a loop slower than a stated multiple of its
nominal period, `friction fit` refusing a file that is not a recording in one line, long reads
saying which file they are on, and every written file named.

The daemon is a stand-in object here (the commands' own code runs; tests/daemon drives the real
daemon): these tests are about what the commands print."""

from __future__ import annotations

import json
import threading

import pytest

from robodyn.cli import main
from robodyn.commands import progress as bars
from tests.commands.test_identify_methods import write_recordings


class FakeDaemon:
    """The daemon client's calls the commands make, answered from lists; records abort requests."""

    def __init__(self, statuses=(), status=None, interrupt_after: int | None = None):
        self.statuses = list(statuses)
        self.status_reply = status
        self.interrupt_after = interrupt_after
        self.aborted = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def status(self):
        return self.status_reply

    def submit_run(self, robot, doc, mode, label):
        return {"run_id": "r1", "duration_s": 2.0, "move_duration_s": 1.0, "recording": "r1.mcap"}

    def wait_run(self, run_id, progress=None):
        for k, st in enumerate(self.statuses):
            if self.interrupt_after is not None and k == self.interrupt_after:
                raise KeyboardInterrupt
            progress(st)
        return self.statuses[-1]

    def abort(self, run_id=None, reason=None):
        self.aborted.append((run_id, reason))
        return {"aborted": run_id}

    def identify(self, recordings, config, holdout):
        self.submitted = (recordings, config, holdout)
        return {"job": "j1"}

    def wait_job(self, job, progress=None):
        for st in self.statuses:
            progress(st)
        return self.statuses[-1]

    def pull(self, job):
        return {"robot": "twolink", "base": {"count": 9}, "estimate": {"method": "wls"}, "metrics": {}}


def _run_status(phase, index, total, state="running"):
    key = "move" if phase == "move_to_start" else "trajectory"
    return {"run_id": "r1", "state": state, "duration_s": 2.0,
            "progress": {"phase": phase, f"{key}_index": index, f"{key}_samples": total}}


@pytest.fixture
def trajectory(tmp_path):
    import numpy as np

    from robodyn.trajectory import FourierTrajectory, save_trajectory

    path = tmp_path / "t.json"
    traj = FourierTrajectory(0.6, np.zeros(2), np.array([[0.1, -0.1]] * 2), np.zeros((2, 2)), periods=1)
    save_trajectory(traj, path, robot="twolink")
    return path


@pytest.fixture
def every_line(monkeypatch):
    """Without a bar, every progress report becomes a line (instead of one each 10 s)."""
    monkeypatch.setattr(bars, "QUIET_LINE_EVERY_S", 0.0)


def test_run_wait_names_the_run_once_per_line(monkeypatch, trajectory, every_line, capsys):
    fake = FakeDaemon([_run_status("move_to_start", 50, 100), _run_status("execute", 1, 100),
                       {**_run_status("execute", 100, 100, "completed"), "summary": {}}])
    monkeypatch.setattr("robodyn.commands.daemon_client.daemon_client", lambda args: fake)
    assert main(["run", "--robot", "twolink", "--trajectory", str(trajectory), "--wait"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["run r1: moving to start 50%", "run r1: running 1%", "run r1: completed 100%"]


def test_ctrl_c_during_run_wait_aborts_the_motion_and_exits_130(monkeypatch, trajectory, capsys):
    fake = FakeDaemon([_run_status("execute", 1, 100)] * 5, interrupt_after=2)
    monkeypatch.setattr("robodyn.commands.daemon_client.daemon_client", lambda args: fake)
    assert main(["run", "--robot", "twolink", "--trajectory", str(trajectory), "--wait"]) == 130
    assert fake.aborted == [("r1", "interrupted at the client")]
    assert capsys.readouterr().err.strip().splitlines()[-1] == "robodyn run: interrupted"


def test_run_help_says_ctrl_c_aborts_the_motion(capsys):
    assert main(["run", "--help"]) == 0
    assert "Ctrl-C aborts the motion" in " ".join(capsys.readouterr().out.split())


def test_a_waited_job_is_named_once_per_line(monkeypatch, every_line, capsys):
    fake = FakeDaemon([{"state": "queued", "progress": 0.0}, {"state": "running", "stage": "fit", "progress": 0.5},
                       {"state": "completed", "stage": "done", "progress": 1.0}])
    monkeypatch.setattr("robodyn.commands.jobs.daemon_client", lambda args: fake)
    assert main(["submit-identify", "rec1", "--holdout", "rec2", "--wait"]) == 0
    assert capsys.readouterr().err.splitlines() == ["job j1: queued 0%", "job j1: running fit 50%",
                                                    "job j1: completed done 100%"]
    assert fake.submitted[2] == ["rec2"] and fake.submitted[1]["rotor_inertia"] is True
    assert main(["submit-identify", "rec1", "--no-rotor-inertia", "--friction", "stribeck"]) == 0
    assert fake.submitted[1]["rotor_inertia"] is False and fake.submitted[1]["friction"] == "stribeck"
    assert fake.submitted[2] == []


def _status(rate_hz, p50, p99, top):
    return {"daemon": {"version": "0", "protocol": 1, "pid": 1, "uptime_s": 5, "control": "tcp://127.0.0.1:1",
                       "state": "ready", "data_dir": "/tmp"},
            "robot": {"name": "panda", "dof": 7, "driver": "sim", "rate_hz": rate_hz},
            "driver": {"pid": 2, "alive": True, "lifecycle": "active", "scheduler": "other",
                       "loop": {"p50_ms": p50, "p99_ms": p99, "max_ms": top, "count": 100}},
            "recorder": {"pid": 3, "alive": True}, "state": {}}


def test_status_flags_a_loop_period_beyond_twice_the_nominal(monkeypatch, capsys):
    from robodyn.commands.daemon_client import LOOP_FLAG_MULTIPLE

    assert LOOP_FLAG_MULTIPLE == 2.0
    for (p50, p99, top), flagged in [((1.0, 1.5, 2.0), None),  # at the multiple: not beyond it
                                     ((1.0, 1.5, 2.001), "max 2.001 ms (2 x)"),
                                     ((1.0, 2138.0, 2138.0), "p99 2138.000 ms (2.14e+03 x), max 2138.000 ms")]:
        monkeypatch.setattr("robodyn.commands.daemon_client.daemon_client",
                            lambda args, st=_status(1000, p50, p99, top): FakeDaemon(status=st))
        assert main(["status"]) == 0
        late = [line for line in capsys.readouterr().out.splitlines() if line.startswith("LATE")]
        if flagged is None:
            assert late == []
        else:
            assert len(late) == 1 and flagged in late[0] and "nominal 1.000 ms (1000 Hz)" in late[0], late
        assert main(["status", "--json"]) == 0
        flags = json.loads(capsys.readouterr().out)["loop_flags"]
        assert [f["statistic"] for f in flags] == ([] if flagged is None else
                                                   ["max"] if top < 3 else ["p99", "max"])


def test_friction_fit_refuses_a_file_that_is_not_a_recording_in_one_line(tmp_path, capsys):
    for name, content in (("bag.mcap", b"\r\x0e!not an mcap file at all"), ("points.csv", b"t,q1\n0,0\n"),
                          ("empty.mcap", b"")):
        path = tmp_path / name
        path.write_bytes(content)
        assert main(["friction", "fit", str(path), "--robot", "twolink", "--out", str(tmp_path / "f.json"),
                     "--endpoint", "tcp://127.0.0.1:9", "--timeout", "0.5"]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith(f"robodyn friction fit: error: {path}: not a daemon recording"), err
        assert "InvalidMagic" not in err[0] and "daemon at" not in err[0]


def test_a_long_read_says_which_file_it_is_on_and_a_short_one_nothing(capsys):
    class Scripted(bars.Heartbeat):
        """Two intervals pass, then the block ends: the waits are answered, not slept."""

        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.waited = 0
            self.third_wait = threading.Event()

        def _wait(self):
            self.waited += 1
            if self.waited < 3:
                return False
            self.third_wait.set()
            return self._stop.wait()

    ticks = iter([0.0, 10.0, 20.0])
    with Scripted("robodyn identify", "reading big.mcap (1 of 2)", clock=lambda: next(ticks)) as beat:
        assert beat.third_wait.wait(timeout=60)
    assert beat.lines == 2
    assert capsys.readouterr().err.splitlines() == ["robodyn identify: reading big.mcap (1 of 2) (10 s)",
                                                    "robodyn identify: reading big.mcap (1 of 2) (20 s)"]
    with bars.Heartbeat("robodyn identify", "reading small.csv", every=3600) as quiet:
        pass
    assert quiet.lines == 0 and capsys.readouterr().err == ""


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    return write_recordings(tmp_path_factory.mktemp("first-day"))


def test_identify_names_every_file_it_writes(recordings, tmp_path, capsys):
    ident, held = recordings
    out, report = tmp_path / "r.json", tmp_path / "r.html"
    assert main(["identify", str(ident), "--robot", "twolink", "--cutoff", "8", "-o", str(out),
                 "--report", str(report)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2:] == [f"result written to {out}", f"report written to {report}"]
    assert out.is_file() and report.is_file()
    assert main(["identify", str(ident), "--robot", "twolink", "--cutoff", "8", "-o", str(out), "--report",
                 str(report), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["out"] == str(out) and doc["report"] == str(report)


def test_identify_stages_are_the_heartbeat_text_and_print_nothing_themselves(capsys):
    beat = bars.Heartbeat("robodyn identify", "starting")  # not entered: its thread never runs here
    show = bars.stages(bars.bar(None, total=100, desc="identify"), clock=lambda: 1e9, beat=beat)
    show("processing", 0.1)
    show("fit", 0.4)
    assert beat.text == "fit 40%" and capsys.readouterr().err == ""
