"""The main loop just under the driver's real-time loop (daemon/priority.py), and arming judged on
the newest robot state the driver sent.

A stop the loop would answer at once otherwise waits until the host's scheduler runs the loop
again; with ``[loop].rt_priority = P`` the loop thread, ZeroMQ's I/O thread and the Python threads
alive at start run SCHED_FIFO P - 1, and nothing they start inherits it. A host that refuses says so in
one line and the daemon runs on.

This file runs a SCHED_FIFO driver: run it alone, not beside other real-time tests."""

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from robodyn.daemon.client import DaemonError

from tests.daemon.conftest import DaemonProcess

DRIVER_PRIORITY = 10
RT_CONFIG = f"[loop]\nrt_priority = {DRIVER_PRIORITY}\n"
REFUSED_LINE = "main loop on the default scheduler"


def _need_root() -> None:
    if os.geteuid() != 0:
        line = "granting and dropping CAP_SYS_NICE needs root; run as root to test the main loop's priority"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(line, pytrace=False)
        pytest.skip(line)


def _policy(tid: int) -> tuple[int, bool, int]:
    """(policy, reset-on-fork flag, priority) of a thread or process."""
    raw = os.sched_getscheduler(tid)
    return raw & ~os.SCHED_RESET_ON_FORK, bool(raw & os.SCHED_RESET_ON_FORK), os.sched_getparam(tid).sched_priority


def _threads(pid: int) -> dict[int, str]:
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = (task / "comm").read_text().strip()
        except OSError:  # ended meanwhile
            pass
    return out


def test_the_main_loop_and_its_threads_run_just_under_the_driver_and_nothing_they_start(tmp_path):
    _need_root()
    d = DaemonProcess(tmp_path, speed=1.0, extra_config=RT_CONFIG, arm=False)
    try:
        st = d.client.status()
        pid = d.proc.pid
        assert st["daemon"]["pid"] == pid
        assert st["control"]["main_scheduler"] == f"SCHED_FIFO {DRIVER_PRIORITY - 1}"
        assert st["driver"]["scheduler"] == f"SCHED_FIFO {DRIVER_PRIORITY}"
        threads = _threads(pid)
        io = [tid for tid, name in threads.items() if name.startswith("ZMQbg/IO")]
        assert io, threads
        realtime = set()
        for tid, name in threads.items():
            policy, reset, priority = _policy(tid)
            if name.startswith("ZMQbg/"):  # the I/O thread moves every request from the socket to
                # the loop; libzmq gives its reaper (closing sockets) the context's policy too
                assert (policy, priority) == (os.SCHED_FIFO, DRIVER_PRIORITY - 1), name
            elif policy == os.SCHED_FIFO:  # the loop and the Python threads alive at start (the jobs'
                # supervisor), which hold the GIL now and then: never above the loop, never passed
                # on to what they start
                assert (priority, reset) == (DRIVER_PRIORITY - 1, True), (tid, name)
                realtime.add(tid)
            else:  # started later (numba's threads of the validation warm-up, ...): reset on fork
                assert policy == os.SCHED_OTHER, (tid, name, policy)
        assert pid in realtime and len(realtime) >= 2, threads  # the loop and the jobs' supervisor
        # the driver sets its own priority; the other workers start on the default scheduler
        assert _policy(st["driver"]["pid"])[0] == os.SCHED_FIFO
        for worker in ("recorder", "publisher"):
            assert _policy(st[worker]["pid"])[0] == os.SCHED_OTHER, worker
        assert REFUSED_LINE not in d.log_text()
        # stops still work at this priority, and report what the loop runs on
        d.client.arm()
        reply = d.client.call("disarm", reason="priority check")  # the main loop's own stop path
        assert reply["latency"]["handled_since_received"] == 0
    finally:
        d.stop()


def test_a_host_that_refuses_says_so_in_one_line_and_arming_judges_the_newest_state(tmp_path):
    """Without CAP_SYS_NICE (and RLIMIT_RTPRIO 0) the loop stays on the default scheduler and
    says so once. Then arming: the loop frozen for longer than the staleness limit while the
    driver kept sending is no reason to refuse (the driver's pipe is read before every request
    but a stop, and the age is the state's since the driver sent it), while a frozen driver is:
    its newest state really is old, and `arm` is refused with that age."""
    _need_root()
    # RLIMIT_RTPRIO 0 for the daemon whatever this host's default (a limit at or above the loop's
    # priority would grant SCHED_FIFO without the capability), and no CAP_SYS_NICE
    d = DaemonProcess(tmp_path, speed=1.0, extra_config=RT_CONFIG, arm=False,
                      prefix=("prlimit", "--rtprio=0:0",
                              "setpriv", "--bounding-set", "-sys_nice", "--inh-caps", "-sys_nice"))
    try:
        st = d.client.status()
        assert st["control"]["main_scheduler"].startswith(f"default scheduler (SCHED_FIFO {DRIVER_PRIORITY - 1} "
                                                          "refused")
        assert [line for line in d.log_text().splitlines() if REFUSED_LINE in line] != []
        assert sum(REFUSED_LINE in line for line in d.log_text().splitlines()) == 1
        assert _policy(d.proc.pid)[0] == os.SCHED_OTHER

        # the main process frozen 1.6 s (over TELEMETRY_STALE_S), an `arm` sent meanwhile: when it
        # runs again, the request and 16 telemetry messages wait; the last one it had read is 1.6 s old
        replies = []

        def arm():
            try:
                replies.append(d.client.arm())
            except DaemonError as exc:  # before the fix: "no fresh robot state" (age 1.6 s)
                replies.append({"refused": exc.message})

        arming = threading.Thread(target=arm)
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(0.3)
            arming.start()
            time.sleep(1.3)
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)
        arming.join(60.0)
        assert replies and replies[0].get("armed") is True, replies
        d.client.disarm("freshness check")

        # the driver frozen 1.5 s: its newest state is that old, and arming is refused
        driver = st["driver"]["pid"]
        os.kill(driver, signal.SIGSTOP)
        try:
            time.sleep(1.5)
            with pytest.raises(DaemonError) as err:
                d.client.arm()
        finally:
            os.kill(driver, signal.SIGCONT)
        assert err.value.code == "unavailable" and err.value.details["telemetry_age_s"] > 1.0
        assert "\n" not in err.value.message
        d.wait_ready(old_pids=())
        d.client.arm()  # fresh again
        assert d.client.status()["control"]["stale_refusals"] == 1
    finally:
        d.stop()
