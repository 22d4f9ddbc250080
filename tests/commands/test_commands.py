"""The command line as a whole: every command takes --json (and prints JSON with it), old names
print one deprecation line, a reader that goes away ends a command quietly, no progress bar is
drawn unless a person is watching a terminal."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import numpy as np
import pytest

from robodyn.cli import build_parser, main


def leaf_commands(parser: argparse.ArgumentParser, prefix: tuple = ()):
    """(command words, parser) of every command that runs something (sub-sub-commands included)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield from leaf_commands(sub, prefix + (name,))
            return
    yield prefix, parser


LEAVES = list(leaf_commands(build_parser()))


def test_the_command_tree_is_complete():
    names = {" ".join(words) for words, _ in LEAVES}
    # one command per task; the old names still answer for one release
    for expected in ("identify", "compare", "reproduce", "validate", "predict", "excitation design",
                     "calibrate identify", "scaleout run", "demo", "status", "models", "daemon", "keys",
                     "identify-advanced", "stepwise-flexible"):
        assert expected in names
    assert len(names) >= 40


@pytest.mark.parametrize("words", [w for w, _ in LEAVES], ids=[" ".join(w) for w, _ in LEAVES])
def test_every_command_accepts_json(words):
    parser = dict(LEAVES)[words]
    assert "--json" in parser._option_string_actions, f"robodyn {' '.join(words)} has no --json"
    action = parser._option_string_actions["--json"]
    assert action.nargs == 0 and action.default is False  # a flag, off by default


def _json_out(capsys, *argv) -> object:
    assert main(list(argv)) == 0
    out = capsys.readouterr().out
    return json.loads(out)


def test_json_means_json_on_stdout(tmp_path, capsys):
    from robodyn.trajectory import FourierTrajectory, save_trajectory

    assert {r["name"] for r in _json_out(capsys, "models", "--json")} >= {"panda", "ur5"}
    assert _json_out(capsys, "model", "twolink", "--json")["parameters"]["base_count"] > 0
    keys = _json_out(capsys, "keys", "alice", "--dir", str(tmp_path), "--json")
    assert keys["public_key"] in keys["daemon_config"] and (tmp_path / "alice.key_secret").exists()
    traj = FourierTrajectory(0.6, np.zeros(2), np.array([[0.1, -0.1]] * 2), np.zeros((2, 2)), periods=1)
    save_trajectory(traj, tmp_path / "t.json", robot="twolink")
    sampled = _json_out(capsys, "excitation", "sample", str(tmp_path / "t.json"), "--rate", "50",
                        "--out", str(tmp_path / "t.csv"), "--json")
    assert sampled["joints"] == 2 and sampled["samples"] == np.loadtxt(tmp_path / "t.csv", delimiter=",",
                                                                        skiprows=1).shape[0]


def test_old_names_print_one_deprecation_line(tmp_path, capsys):
    from tests.commands.test_identify_methods import write_recordings

    ident, _ = write_recordings(tmp_path)
    out = tmp_path / "r.json"
    code = main(["identify-advanced", str(ident), "--robot", "twolink", "--method", "nn", "--out", str(out),
                 "--json"])
    captured = capsys.readouterr()
    assert code == 0 and json.loads(captured.out)["method"] == "nn"
    # a CSV without a phase column adds its own note line; the deprecation is one line
    lines = [line for line in captured.err.strip().splitlines() if not line.startswith("note:")]
    assert len(lines) == 1 and "deprecated" in lines[0] and "robodyn identify --method" in lines[0]
    # the new name says nothing of the sort
    assert main(["identify", str(ident), "--robot", "twolink", "--method", "nn", "--out", str(out), "--json"]) == 0
    assert all(line.startswith("note:") for line in capsys.readouterr().err.splitlines())


def test_a_closed_pipe_ends_quietly():
    """`robodyn model panda --json | head -1`: no traceback, exit 0, the first line arrives."""
    cmd = [sys.executable, "-m", "robodyn", "model", "panda", "--rotor-inertia", "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first line
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
    shell = subprocess.run(" ".join(cmd) + " | head -1", shell=True, capture_output=True, timeout=120)
    assert shell.stdout.strip() == b"{" and shell.stderr == b"", shell.stderr.decode()
    helped = subprocess.run(f"{sys.executable} -m robodyn --help | head -1", shell=True, capture_output=True,
                            timeout=120)
    assert helped.stdout.startswith(b"usage: robodyn") and helped.stderr == b"", helped.stderr.decode()


def test_the_entry_point_handles_a_closed_pipe_for_every_command(monkeypatch):
    """One place catches it: a handler that hits a closed pipe returns 0 from main(), no traceback."""
    def broken(args):
        raise BrokenPipeError(32, "Broken pipe")

    real = build_parser

    def parser_with_broken_models():
        p = real()
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                action.choices["models"].set_defaults(handler=broken)
        return p

    monkeypatch.setattr("robodyn.cli.build_parser", parser_with_broken_models)
    assert main(["models"]) == 0
