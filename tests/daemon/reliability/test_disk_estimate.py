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
