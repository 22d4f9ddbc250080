"""The daemon's data is its account's alone, and every recording file is one recording.

Under a 0022 umask (a daemon started from a shell) the recordings, their index entries, the jobs'
folders and files are 0700 folders and 0600 files; folders an older version left 0755 are narrowed
at start, with one log line each. Copies of a recording under other names are listed as recordings
of their own: one row and one id (the file's name) each, which `recording_info` resolves to that
file; the run id inside the file is the row's ``run_id``."""

import os
import shutil
import stat
import time
from pathlib import Path

from robodyn.recording import index_path

from tests.daemon.conftest import DaemonProcess, excitation

OUTER_S = 300.0  # an outer time-out of every wait below


def _loose(root: Path) -> list[str]:
    """Every folder or file under ``root`` (and ``root``) that another account could enter or read."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        if mode & 0o077:
            found.append(f"{path} {mode:04o}")
    return found


def _wait_indexed(client, count: int) -> list[dict]:
    deadline = time.monotonic() + OUTER_S
    while True:
        rows = client.recordings(limit=100)
        if len(rows) == count and all(r.get("status") not in ("indexing", "recording") for r in rows):
            return rows
        assert time.monotonic() < deadline, rows
        time.sleep(0.1)


def test_recordings_and_jobs_are_private_whatever_the_umask_and_copies_are_listed_once_each(tmp_path):
    data = tmp_path / "data"
    for folder in (data / "recordings", data / "jobs"):
        folder.mkdir(parents=True)
        folder.chmod(0o755)  # as an older version left them under a 0022 umask
    umask = os.umask(0o022)  # inherited by the daemon and its workers
    try:
        d = DaemonProcess(tmp_path, data_dir=data)
        try:
            run_id = d.client.submit_run("panda", excitation(1.0, seed=3), label="private")["run_id"]
            final = d.client.wait_run(run_id, timeout=OUTER_S)
            assert final["state"] == "completed", final
            job = d.client.identify([run_id])["job"]
            assert d.client.wait_job(job, timeout=OUTER_S)["state"] in ("completed", "failed")
            rows = _wait_indexed(d.client, 1)
            log = d.log_text()
        finally:
            d.stop()
        recording = data / "recordings" / f"{run_id}.mcap"
        assert recording.exists() and index_path(recording).exists()
        assert (data / "jobs" / job / "status.json").exists() and (data / "jobs" / job / "request.json").exists()
        for folder in ("recordings", "jobs"):
            assert _loose(data / folder) == [], _loose(data / folder)
            assert f"{data / folder} had mode 0755" in log, log
        assert [r["id"] for r in rows] == [run_id] and rows[0]["run_id"] == run_id
        # three copies under other names: one with its index entry copied too (it names the
        # original), two without (indexed by the daemon at start)
        copies = [f"copy-{k}" for k in range(3)]
        for name in copies:
            shutil.copy(recording, data / "recordings" / f"{name}.mcap")
        shutil.copy(index_path(recording), index_path(data / "recordings" / "copy-0.mcap"))
        d = DaemonProcess(tmp_path, data_dir=data, arm=False)
        try:
            rows = _wait_indexed(d.client, 4)
            assert sorted(r["id"] for r in rows) == sorted([run_id, *copies]), rows
            assert {r["run_id"] for r in rows} == {run_id}
            for row in rows:
                assert Path(row["path"]).stem == row["id"]
                info = d.client.recording_info(row["id"])
                assert info["id"] == row["id"] and info["path"] == str(data / "recordings" / f"{row['id']}.mcap")
                assert info["run_id"] == run_id
        finally:
            d.stop()
        for name in copies:  # the entries the daemon wrote for the copies are private too
            entry = index_path(data / "recordings" / f"{name}.mcap")
            assert stat.S_IMODE(os.lstat(entry).st_mode) == 0o600, name
    finally:
        os.umask(umask)
