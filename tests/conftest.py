import functools
import os

# One OpenBLAS thread in the test runner and every process it starts (daemons, CLI runs), as the
# `robodyn` command itself sets (robodyn/cli.py, which says why; `python bench/blas/run.py` measures
# it), unless the caller chose otherwise. numpy reads the variable when it loads, after this line.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from pathlib import Path

import pytest

TESTS = Path(__file__).parent
# `make test` runs the suite in two processes (pytest-xdist) on a 2-core host. Tests that start
# daemons, real-time peers and browsers (their folders, and any other file that starts a daemon)
# share one process and run one after another, first: two
# real-time daemons side by side would each judge the other's load. Every other folder is one unit
# too, so its session fixtures (realistic logs, the calibration cube, the Ray fleet) are built once.
REALTIME_FOLDERS = ("daemon", "drivers", "tools")


# a test file elsewhere that starts a daemon of its own goes with them
STARTS_A_DAEMON = ("DaemonProcess(", "LocalDaemon(")


@functools.lru_cache(maxsize=None)
def starts_a_daemon(path: str) -> bool:
    try:
        text = (TESTS.parent / path).read_text()
    except OSError:
        return False
    return any(call in text for call in STARTS_A_DAEMON)


def folder_group(nodeid: str) -> str:
    """The unit of work of a test, from its id (``tests/FOLDER/...::name``)."""
    path = nodeid.split("::", 1)[0]
    parts = path.split("/")
    folder = parts[1] if len(parts) > 2 and parts[0] == "tests" else "top"
    return "realtime" if folder in REALTIME_FOLDERS or starts_a_daemon(path) else folder


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: without it installed, never called
def pytest_xdist_make_scheduler(config, log):
    # xdist's own `loadgroup` marks do not group under pytest 9 (its node-id suffix is lost), so
    # the units are made here: whole folders, the real-time ones together, in collection order
    from xdist.scheduler import LoadScopeScheduling

    class FolderScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return folder_group(nodeid)

    return FolderScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    # the real-time unit first, so the other process works through the rest beside it
    items.sort(key=lambda item: folder_group(item.nodeid) != "realtime")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI, a test skipped for want of a package `make test` installs is a failed set-up, not a
    skip: a green run must not hide it (as require_system_tool does for system tools)."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
        if "installed by make test" in reason:
            report.outcome = "failed"
            report.longrepr = f"{reason} (under CI this is a failure: make test's set-up did not install it)"


# Figures that tests report (the reliability tests' `figure` fixture) travel on the test report, so
# the summary shows them whether the tests ran in this process or in a pytest-xdist worker.
FIGURES: list[tuple[str, str]] = []


def pytest_runtest_logreport(report):
    if report.when == "teardown":  # carries what the call and the fixtures recorded
        FIGURES.extend((report.nodeid.rsplit("::", 1)[-1], value)
                       for key, value in report.user_properties if key == "figure")


def pytest_terminal_summary(terminalreporter):
    if FIGURES:
        terminalreporter.section("reliability figures")
        for name, line in FIGURES:
            terminalreporter.write_line(f"{name}: {line}")


@pytest.fixture
def data_dir() -> Path:
    """Test data shipped with the project (never ../shared)."""
    return Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def restore_scheduler():
    """Real-time client libraries move their calling thread to SCHED_FIFO (libfranka: priority 99
    under RealtimeConfig enforce). In a driver process that is the point; in the test runner it would
    be inherited by every daemon spawned afterwards, whose busy-wait pacers then starve a 2-core
    host. Each test gets the runner's own policy back."""
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    yield
    if (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority) != (policy, param.sched_priority):
        os.sched_setscheduler(0, policy, param)


def pytest_configure(config):
    """numba's cache filled once, before the first test (robodyn.tools.testing.precompile says why:
    a kernel compiled beside real-time peers took a daemon's whole start-up time-out). About 4 s with
    a warm cache, about 70 s on a fresh clone. Done here, in the one process that starts pytest-xdist's
    workers and before it starts them, so that the workers load a full cache: as a session fixture
    each worker compiled every kernel itself, side by side (on a fresh clone each worker's first
    test waited about 40 s for it on an idle host, 130 s beside stress-ng: docs/testing.md). If it
    fails, each kernel compiles where first used, as before, and the suite goes on."""
    import subprocess
    import sys

    if hasattr(config, "workerinput") or config.option.collectonly:  # an xdist worker: the controller did it
        return
    try:
        subprocess.run([sys.executable, "-m", "robodyn.tools.testing.precompile"], timeout=900, check=False)
    except subprocess.TimeoutExpired:
        print("precompile: not done in 900 s; kernels compile where first used")
