"""The disk-space estimate: measured, not assumed. It was 5x too high (30 MB asked for
a 20 s run whose file is 6 MB), so short runs were refused on small disks. Now: the samples of
the real move to the start, the trajectory and the settle, at the bytes per sample the recorder
measures on the files it writes, with a margin."""

import os

from tests.daemon.conftest import DaemonProcess, excitation

from .scenarios import wait_stopped


def test_the_disk_estimate_is_above_the_file_and_close_to_it(tmp_path, figure):
    d = DaemonProcess(tmp_path)
    try:
        ratios = []
        for duration in (6.0, 20.0):  # the first run is estimated from the raw sample size
            accepted = d.client.submit_run("panda", excitation(duration))
            final = d.client.wait_run(accepted["run_id"], timeout=120)
            assert final["state"] == "completed", final
            size = os.path.getsize(accepted["recording"])
            est = accepted["disk_estimate"]
            ratios.append((est["source"].split(" ")[0], round(est["bytes"] / size, 2), size))
            # the raw size is an upper bound (these samples compress ~20 % at most); the measured
            # figure with its 1.25 margin must be close
            bound = 1.6 if est["source"].startswith("raw") else 1.35
            assert size <= est["bytes"] <= bound * size, (est, size)
            wait_stopped(d.client)
        assert ratios[-1][0] == "measured", ratios
        figure("disk estimate / real file size (the old estimate was 5x)", runs=ratios,
               measured_bytes_per_sample=round(est["bytes_per_sample"], 1))
    finally:
        d.stop()


def test_a_closed_recording_counts_for_the_next_estimate_before_any_stats_tick():
    """The next run's estimate must not wait for the recorder's next periodic stats message: the
    `closed` reply carries the written totals, and the supervisor folds them into what admission
    reads (the test above failed when the second run was admitted before that tick)."""
    from types import SimpleNamespace

    from robodyn.daemon.admission import measured_bytes_per_sample
    from robodyn.daemon.supervision import Workers

    closed = []
    recorder = SimpleNamespace(last={"type": "stats", "throughput": {"samples_per_s": 0.0, "bytes_written": 0,
                                                                      "samples_written": 0}})
    host = SimpleNamespace(recorder=recorder, changed=lambda: None,
                           runs=SimpleNamespace(on_recorder=closed.append))
    assert measured_bytes_per_sample(recorder.last["throughput"], 8)[2].startswith("raw")
    msg = {"type": "closed", "run": "r1", "path": "x.mcap", "summary": {}, "index": {},
           "written": {"bytes_written": 4_000_000, "samples_written": 10_000}}
    Workers.on_recorder(host, msg)
    assert closed == [msg]  # the run still hears of its close
    per_sample, _, source = measured_bytes_per_sample(recorder.last["throughput"], 8)
    assert source.startswith("measured") and per_sample == 400.0
    assert recorder.last["throughput"]["samples_per_s"] == 0.0  # the rest of the last stats kept
