"""Deliberate mistakes, on every command: one line on stderr that names the problem, exit code 2,
never a traceback, never a page of usage first.

The commands are discovered from the parser, so a new command is covered without a new entry:
every command gets an unknown option, a wrong value for each option that has choices, a word for
each option that takes a number, and (when it has required inputs) a file that does not exist.
Below that, a table of mistakes a user makes (a negative time limit, the wrong robot for a
trajectory, an endpoint without its scheme, ...), and a few real processes to prove that no
traceback reaches a terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from robodyn.cli import EXIT_BUG, build_parser, main
from tests.commands.test_commands import LEAVES

MALFORMED_ENDPOINT = "localhost:47770"  # no tcp:// in front: ZeroMQ cannot connect to it
# required inputs that are not files: a name to create (keys), a choice (reproduce PAPER)
NOT_INPUT_FILES = {("keys",)}


@pytest.fixture(autouse=True)
def _in_a_scratch_folder(tmp_path, monkeypatch):
    """Each mistake runs in an empty folder, with no daemon address or debug switch inherited."""
    monkeypatch.chdir(tmp_path)
    for name in ("ROBODYN_ENDPOINT", "ROBODYN_DEBUG"):
        monkeypatch.delenv(name, raising=False)


def one_line_error(capsys, argv, words=None) -> str:
    """Run ``robodyn ARGV`` in-process; assert exit 2 and exactly one line on stderr, in the shape
    of the command line's error lines; return that line."""
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    # an old command name says so first, on a line of its own: that line is not the error
    lines = [line for line in captured.err.splitlines() if ": deprecated, use `robodyn" not in line]
    shown = " ".join(str(a) for a in argv)
    assert code == 2, f"robodyn {shown}: exit {code}, stderr {captured.err!r}"
    assert len(lines) == 1, f"robodyn {shown}: {len(lines)} lines on stderr:\n{captured.err}"
    line = lines[0]
    prefix = "robodyn" + ("" if not words else " " + " ".join(words) + ":")
    assert line.startswith(prefix) and ("error:" in line or "refused:" in line), line
    assert "Traceback" not in line and "usage:" not in line, line
    return line


def _options(parser):
    for action in parser._actions:
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction, argparse._VersionAction)):
            yield action


def _numeric(action) -> bool:
    return getattr(action.type, "__name__", None) in ("int", "float")


IDS = [" ".join(w) for w, _ in LEAVES]


@pytest.mark.parametrize("words,parser", LEAVES, ids=IDS)
def test_an_unknown_option_is_one_line(capsys, words, parser):
    line = one_line_error(capsys, [*words, "--no-such-option"], words)
    assert "--help" in line  # where to look next, instead of the usage


@pytest.mark.parametrize("words,parser", LEAVES, ids=IDS)
def test_a_wrong_choice_is_one_line(capsys, words, parser):
    for action in _options(parser):
        if action.choices is None:
            continue
        argv = [*words, "no-such-choice"] if not action.option_strings else [*words, action.option_strings[0],
                                                                              "no-such-choice"]
        line = one_line_error(capsys, argv, words)
        assert "invalid choice" in line and "no-such-choice" in line


@pytest.mark.parametrize("words,parser", LEAVES, ids=IDS)
def test_a_word_for_a_number_is_one_line(capsys, words, parser):
    for action in _options(parser):
        if action.option_strings and _numeric(action):
            line = one_line_error(capsys, [*words, action.option_strings[-1], "many"], words)
            assert action.option_strings[-1] in line and "'many'" in line


def _required_inputs(parser, missing: str) -> list[str] | None:
    """Argument words that fill every required input with ``missing`` (choices with their first
    value), or None when the command has no required input that could be a file."""
    positional, options, any_file = [], [], False
    for action in _options(parser):
        if not (action.required or (not action.option_strings and action.nargs not in ("?", "*"))):
            continue
        value = action.choices and next(iter(action.choices))
        if value is None:
            value, any_file = missing, True
        words = [str(value)] if action.option_strings == [] else [action.option_strings[0], str(value)]
        (positional if not action.option_strings else options).extend(words)
    return positional + options if any_file else None


# the commands with a required input that names a file to read (the others have none to miss)
FILE_INPUT_LEAVES = [(w, p) for w, p in LEAVES if w not in NOT_INPUT_FILES and _required_inputs(p, "x") is not None]


def _groups(parser, prefix=()):
    """(words, parser) of every command that holds commands of its own (`robodyn excitation`)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            if prefix:
                yield prefix, parser
            for name, sub in action.choices.items():
                yield from _groups(sub, prefix + (name,))


GROUPS = list(_groups(build_parser()))


def test_the_command_groups_are_found():
    assert {" ".join(w) for w, _ in GROUPS} >= {"excitation", "calibrate", "friction", "scaleout", "bridge"}


@pytest.mark.parametrize("words,parser", GROUPS, ids=[" ".join(w) for w, _ in GROUPS])
def test_a_group_without_its_command_is_one_line_naming_them(capsys, words, parser):
    line = one_line_error(capsys, list(words), words)
    listed = [a.dest for action in parser._actions if isinstance(action, argparse._SubParsersAction)
              for a in action._choices_actions]
    assert listed and all(name in line for name in listed), line


def test_the_file_input_commands_are_found():
    """The selection below is not empty and leaves out only commands without a file to read."""
    names = {w for w, _ in FILE_INPUT_LEAVES}
    assert ("identify",) in names and ("validate",) in names, sorted(names)
    assert not names & NOT_INPUT_FILES


@pytest.mark.parametrize("words,parser", FILE_INPUT_LEAVES, ids=[" ".join(w) for w, _ in FILE_INPUT_LEAVES])
def test_a_missing_input_file_is_one_line(capsys, tmp_path, words, parser):
    missing = tmp_path / "missing-input.json"
    argv = _required_inputs(parser, str(missing))
    if "--endpoint" in parser._option_string_actions:  # never reach for a daemon that might be running
        argv += ["--endpoint", MALFORMED_ENDPOINT]
    one_line_error(capsys, [*words, *argv], words)


def test_every_missing_file_reads_the_same(capsys, tmp_path):
    """One style: `PATH: no such file`, whichever command and whichever kind of file."""
    missing = tmp_path / "x.mcap"
    for argv in (["identify", missing, "--robot", "panda", "--out", tmp_path / "r.json"],
                 ["export", missing, "--format", "csv"],
                 ["validate", tmp_path / "result.json", missing],
                 ["run", "--robot", "panda", "--trajectory", missing, "--endpoint", "tcp://127.0.0.1:1"],
                 ["excitation", "check", missing, "--robot", "panda"],
                 ["daemon", "--config", missing]):
        line = one_line_error(capsys, argv)
        assert line.endswith(": no such file"), line
        assert "[Errno" not in line and "does not exist" not in line, line


def _seven_joint_trajectory(path):
    from robodyn.trajectory import FourierTrajectory, save_trajectory

    n = 7
    save_trajectory(FourierTrajectory(0.6, np.zeros(n), np.full((n, 2), 0.05), np.zeros((n, 2)), periods=1),
                    path, robot="panda")
    return path


def test_the_mistakes_a_user_makes(capsys, tmp_path, monkeypatch):
    traj = _seven_joint_trajectory(tmp_path / "panda.json")
    out = tmp_path / "out.json"
    cases = [
        (["excitation", "design", "--robot", "panda", "--out", out, "--time-limit", "-5"], "--time-limit"),
        (["excitation", "design", "--robot", "panda", "--out", out, "--harmonics", "0"], "--harmonics"),
        (["excitation", "check", traj, "--robot", "ur5"], "ur5 has 6 joints"),
        (["excitation", "sample", traj, "--rate", "0", "--out", tmp_path / "s.csv"], "--rate"),
        (["excitation", "design", "--robot", "no-such-robot", "--out", out], "no-such-robot"),
        (["identify", traj, "--robot", "panda", "--method", "nope"], "invalid choice"),
        (["status", "--endpoint", MALFORMED_ENDPOINT], "tcp://HOST:PORT or ipc://PATH"),
        (["status", "--endpoint", "tcp://127.0.0.1:notaport"], "tcp://HOST:PORT"),
        (["status", "--timeout", "-1"], "--timeout"),
        (["recordings", "--endpoint", "tcp://127.0.0.1:1", "--timeout", "0.2"], "no reply from the daemon"),
        (["demo", "--periods", "0"], "--periods"),
        (["calibrate", "plan", "--robot", "ur5", "--poses", "-3", "--out", out], "--poses"),
        (["compare", traj, "--robot", "panda", "--holdout", "0.25"], "--holdout-fraction"),
        (["compare", traj, "--robot", "panda", "--holdout-fraction", "1.5"], "--holdout-fraction"),
        (["reproduce", "no-such-paper"], "invalid choice"),
        # numbers outside what the option means: refused at once, naming the option and its limit
        (["identify", traj, "--robot", "panda", "--population", "0"], "--population"),
        (["identify", traj, "--robot", "panda", "--iterations", "0"], "--iterations"),
        (["identify", traj, "--robot", "panda", "--trim", "-5"], "--trim"),
        (["identify", traj, "--robot", "panda", "--min-velocity", "-1"], "--min-velocity"),
        (["identify", traj, "--robot", "panda", "--decimate", "0"], "--decimate"),
        (["compare", "--dataset", "tx40", "--split", "1.5"], "--split"),
        (["compare", "--simulate", "panda", "--seconds", "-1"], "--seconds"),
        (["bridge", "foxglove", "--duration", "-1"], "--duration"),
        (["status-page", "--duration", "0"], "--duration"),
        (["friction", "design", "--robot", "panda", "--joints", "0", "--out", out], "1..7"),
        (["friction", "design", "--robot", "panda", "--joints", "8", "--out", out], "1..7"),
        (["friction", "design", "--robot", "panda", "--joints", "2,2", "--out", out], "distinct"),
    ]
    for argv, expected in cases:
        line = one_line_error(capsys, argv)
        assert expected in line, (argv, line)
    monkeypatch.setenv("ROBODYN_ENDPOINT", "127.0.0.1:47770")
    line = one_line_error(capsys, ["recordings"])
    assert "ROBODYN_ENDPOINT" in line and "tcp://HOST:PORT" in line


def test_a_mistyped_command_lists_the_listed_commands_and_the_nearest(capsys):
    line = one_line_error(capsys, ["idenify"])
    assert "'idenify'" in line and "did you mean 'identify'?" in line
    assert "'identify'" in line or " identify," in line
    # the deprecated commands run but are not listed in the help, nor here
    assert "identify-advanced" not in line and "stepwise-flexible" not in line
    line = one_line_error(capsys, ["calibrate", "replya"])
    assert "did you mean" not in line or "replay" not in line.split("did you mean")[1]
    assert " replay" not in line and "export-urdf" not in line, line


def test_a_holdout_before_the_data_is_explained(capsys, tmp_path):
    traj = _seven_joint_trajectory(tmp_path / "panda.json")
    argv = ["identify", "--robot", "panda", "--holdout", traj, traj]
    line = one_line_error(capsys, argv)
    assert "REC_OR_CSV" in line and "put the data first" in line, line


def test_an_invalid_choice_does_not_print_the_usage_first(capsys):
    assert main(["identify", "x.mcap", "--robot", "panda", "--friction", "sticky"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "usage" not in err and "see `robodyn identify --help`" in err


def test_a_bug_is_one_line_too(capsys, monkeypatch):
    """An exception nobody anticipated: one line naming it and how to see the traceback, exit 70."""
    real = build_parser

    def broken(args):
        raise TypeError("an internal mistake")

    def parser_with_a_bug():
        p = real()
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                action.choices["models"].set_defaults(handler=broken)
        return p

    monkeypatch.setattr("robodyn.cli.build_parser", parser_with_a_bug)
    assert main(["models"]) == EXIT_BUG
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "TypeError: an internal mistake" in lines[0] and "ROBODYN_DEBUG" in lines[0]
    monkeypatch.setenv("ROBODYN_DEBUG", "1")
    with pytest.raises(TypeError):
        main(["models"])


@pytest.mark.parametrize("argv,expected", [
    (["status", "--endpoint", MALFORMED_ENDPOINT], "tcp://HOST:PORT"),
    (["excitation", "design", "--robot", "panda", "--out", "t.json", "--time-limit", "-5"], "--time-limit"),
    (["identify", "missing.mcap", "--robot", "panda"], "missing.mcap: no such file"),
], ids=["endpoint", "negative-time-limit", "missing-file"])
def test_no_traceback_reaches_the_terminal(tmp_path, argv, expected):
    env = {k: v for k, v in os.environ.items() if k not in ("ROBODYN_ENDPOINT", "ROBODYN_DEBUG")}
    proc = subprocess.run([sys.executable, "-m", "robodyn", *argv], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and expected in proc.stderr, proc.stderr
    assert not (tmp_path / "t.json").exists() and proc.stdout == ""


def test_the_json_of_a_refusal_is_not_printed(capsys, tmp_path):
    """A refused command writes nothing on stdout, so a script reading --json sees no half result."""
    assert main(["status", "--endpoint", MALFORMED_ENDPOINT, "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and json.dumps(captured.err)


def test_a_server_key_that_begins_with_a_dash_is_read_as_the_value(capsys):
    # Z85's alphabet has "-": about one CurveZMQ public key in 85 begins with it, and argparse alone
    # read `--server-key -...` as an option without its value
    from robodyn.cli import attach_dash_values, build_parser, main

    key = "-" + "x" * 39
    args = build_parser().parse_args(attach_dash_values(["status", "--server-key", key]))
    assert args.server_key == key
    assert attach_dash_values(["status", "--server-key"]) == ["status", "--server-key"]  # argparse names it
    assert main(["status", "--server-key", key]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--client-key and --server-key go together" in err
