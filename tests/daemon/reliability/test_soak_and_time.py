"""A short soak in simulated time (the 10 M-sample soak: bench/reliability/run.py) and the time
base: only monotonic clocks order anything; wall time is a label."""

import ast
import types
from pathlib import Path

import pytest

from robodyn.daemon import server
from tests.daemon.conftest import DaemonProcess, excitation

from .scenarios import soak

ROOT = Path(__file__).resolve().parents[3]
SOAK_SAMPLES = 24_000  # three 8 s runs at 1 kHz; the long soak is bench/reliability


@pytest.mark.soak
def test_short_soak_loses_nothing_and_memory_stays_flat(tmp_path, figure):
    d = DaemonProcess(tmp_path)
    try:
        r = soak(d, SOAK_SAMPLES, excitation(8.0), rss_every_s=1.0)
    finally:
        d.stop()
    assert r["samples"] >= SOAK_SAMPLES and r["lost_samples"] == 0 and r["stream_lost"] == 0, r
    growth_mib = (sum(r["rss_kib_last"].values()) - sum(r["rss_kib_first"].values())) / 1024
    assert growth_mib < 64, r  # a leak of 3 kB per sample (72 MiB over 24,000) would show here
    figure(f"soak {r['samples']} samples in {r['runs']} runs", lost=r["lost_samples"],
           rss_slope_kib_per_million_samples=round(r["rss_slope_kib_per_million_samples"], 1),
           rss_growth_mib=round(growth_mib, 1), seconds=round(r["seconds"], 1))


# Every place that may read the wall clock, and why it is harmless there: labels and timestamps
# for humans, never an order, a duration or a deadline.
WALL_CLOCK_ALLOWED = {
    ("robodyn/recording/writer.py", "_start"): "created_wall label in the file's metadata",
    ("robodyn/recording/repair.py", "repair_recording"): "repaired_wall label and the torn-tail attachment's time stamp",
    ("daemon/runs.py", "_new_run_id"): "run id label; uniqueness by file existence, not by time",
    ("daemon/stop_socket.py", "receive"): "converts the kernel's CLOCK_REALTIME arrival stamp (SO_TIMESTAMPNS) to "
                                          "CLOCK_MONOTONIC for a reported wait; orders nothing",
    ("robodyn/jobs/identification.py", "run_job"): "started / finished timestamps shown to users",
    ("robodyn/jobs/identification.py", "cmd_identify"): "job id label and submitted timestamp",
}
WALL_CALLS = {("time", "time"), ("time", "time_ns"), ("time", "strftime"), ("time", "localtime"),
              ("time", "gmtime"), ("time", "ctime"), ("datetime", "now"), ("datetime", "utcnow"),
              ("datetime", "today"), ("date", "today")}
SCANNED = ["daemon", "drivers", "robodyn/recording", "robodyn/simulation", "robodyn/jobs/identification.py"]


def wall_clock_uses(path: Path) -> list[tuple[str, int, str]]:
    """(enclosing function, line, call) for every wall-clock read in a source file."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                base = child.func.value
                base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
                if (base_name, child.func.attr) in WALL_CALLS:
                    found.append((func, child.lineno, f"{base_name}.{child.func.attr}"))
            visit(child, name)

    visit(tree, "<module>")
    return found


def test_only_monotonic_clocks_order_anything():
    files = [p for entry in SCANNED for p in ((ROOT / entry).rglob("*.py") if (ROOT / entry).is_dir()
                                              else [ROOT / entry])]
    assert len(files) > 10
    seen = set()
    for path in files:
        rel = str(path.relative_to(ROOT))
        for func, line, call in wall_clock_uses(path):
            assert (rel, func) in WALL_CLOCK_ALLOWED, f"{rel}:{line} {call} in {func}: use time.monotonic"
            seen.add((rel, func))
    assert seen == set(WALL_CLOCK_ALLOWED)  # the allow-list names no place that no longer exists


def test_run_ids_stay_unique_when_the_wall_clock_jumps_back(tmp_path, monkeypatch):
    """Run ids carry the wall time as a label. A clock stepped back (NTP, a wrong RTC) repeats a
    stamp: the id must still be new, and ordering uses the daemon's counters, not the ids."""
    fake = types.SimpleNamespace(recordings_dir=tmp_path, run_counter=1)
    monkeypatch.setattr(server.time, "strftime", lambda fmt, *a: "20260101-120000")
    first = server.Runs._new_run_id(fake)
    (tmp_path / f"{first}.mcap").touch()
    monkeypatch.setattr(server.time, "strftime", lambda fmt, *a: "20250101-000000")  # an hour... a year back
    fake.run_counter = 2
    second = server.Runs._new_run_id(fake)
    (tmp_path / f"{second}.mcap").touch()
    monkeypatch.setattr(server.time, "strftime", lambda fmt, *a: "20260101-120000")  # and forward again
    fake.run_counter = 1  # even a repeated counter (a restarted daemon) with a repeated stamp
    third = server.Runs._new_run_id(fake)
    assert len({first, second, third}) == 3 and third.startswith(first)


@pytest.mark.parametrize("path", ["daemon/rtloop.py", "daemon/recorder.py", "drivers/pacing.py"])
def test_the_sample_path_reads_no_wall_clock(path):
    assert wall_clock_uses(ROOT / path) == []
