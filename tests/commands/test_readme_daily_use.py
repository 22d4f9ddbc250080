"""The README's daily-use commands, as the README writes them, against a simulated daemon.

The commands are read from the README's code block under "Daily use: the acquisition daemon" and
run as processes (`python -m robodyn ...`) in an empty folder, with `ROBODYN_ENDPOINT` naming the
test's daemon (the README's "or ROBODYN_ENDPOINT"). What the README leaves to the reader is
filled in, and only that: the daemon itself is the test's (started by `robodyn daemon --config`
as the README's first line, with a config of the test's own), `traj.json` is designed first with
`robodyn excitation design` (a fixed amount of work: 15 iterations), the run line runs twice so
that there is an OTHER_RUN_ID, the ids are the daemon's, and the two views, which serve until
stopped, get `--port 0 --duration 2`. A README line that stops working fails this test.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.daemon.conftest import DaemonProcess

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Daily use: the acquisition daemon"
SERVERS = {"status-page", "bridge"}  # serve until stopped


def readme_commands() -> list[list[str]]:
    """The argv (after `robodyn`) of every line of the daily-use code block, comments dropped."""
    text = (ROOT / "README.md").read_text()
    block = re.search(re.escape(SECTION) + r"\s+```sh\n(.*?)```", text, re.S)
    assert block, f"README.md has no code block under {SECTION!r}"
    commands = []
    for line in block.group(1).splitlines():
        words = shlex.split(line, comments=True)
        if words:
            assert words[0] == "robodyn", line
            commands.append(words[1:])
    return commands


def test_the_readme_block_is_found_and_names_the_daily_commands():
    names = [c[0] for c in readme_commands()]
    assert names[0] == "daemon" and {"arm", "run", "recordings", "export", "submit-identify", "pull",
                                     "status-page", "bridge"} <= set(names)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = DaemonProcess(tmp_path_factory.mktemp("readme-daemon"), arm=False)  # the README arms it
    yield d
    d.stop()


def robodyn(cwd: Path, env: dict, argv: list[str]) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "robodyn", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)  # an outer bound only
    assert done.returncode == 0, f"robodyn {shlex.join(argv)}: exit {done.returncode}\n{done.stderr}"
    return done


@pytest.mark.timeout(1800)
def test_the_daily_use_commands_run_as_written(daemon, tmp_path):
    env = {**os.environ, "ROBODYN_ENDPOINT": daemon.control}
    env.pop("ROBODYN_DEBUG", None)
    robodyn(tmp_path, env, ["excitation", "design", "--robot", "panda", "--harmonics", "3", "--wf", "0.7",
                            "--iterations", "15", "--seed", "1", "--out", "traj.json"])
    ids: dict[str, str] = {}
    out: dict[str, str] = {}
    for argv in readme_commands():
        if argv[0] == "daemon":  # the test's daemon stands for it
            continue
        if argv[0] in SERVERS:
            argv = argv + ["--port", "0", "--duration", "2"]
        filled = [ids.get(word, word) for word in argv]
        missing = [w for w in filled if re.fullmatch(r"[A-Z_]+_ID", w)]
        assert not missing, f"{missing} not known before `robodyn {shlex.join(argv)}`"
        done = robodyn(tmp_path, env, filled)
        out[argv[0]] = done.stdout + done.stderr
        if argv[0] == "run":
            robodyn(tmp_path, env, filled)  # the README's line once more: a second run
            runs = [r["run_id"] for r in daemon.client.runs()]
            ids["RUN_ID"], ids["OTHER_RUN_ID"] = runs[-2], runs[-1]
        if argv[0] == "submit-identify":
            job = re.search(r"\bjob-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}\b", out[argv[0]])
            assert job, out[argv[0]]
            ids["JOB_ID"] = job.group(0)
    assert "ARMED" in out["arm"]
    assert (tmp_path / f"{ids['RUN_ID']}.csv").exists()  # export: into the current folder
    assert f"held out {ids['OTHER_RUN_ID']}, against the measured torque" in out["submit-identify"]
    assert (tmp_path / "params.json").read_text().lstrip().startswith("{")
    assert "recording" in out["recordings"].splitlines()[0]  # the table's header
    assert "http://127.0.0.1:" in out["status-page"] and "ws://127.0.0.1:" in out["bridge"]
