"""One vocabulary: an option shared by several commands has one spelling, one set of values and one
meaning wherever it appears (robodyn.commands.common.VOCABULARY), and docs/options.md is that table.

Every command's parser is walked; a shared option that a command spells, types or explains
differently is named with the command. Nothing may differ."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from robodyn.cli import main
from robodyn.commands.common import (FRICTION_LAWS, JOINT_NAMES_WORDS, RATE_WORDS, ROTOR_INERTIA_WORDS, VOCABULARY,
                                    LegacyFrictionColumns)
from tests.commands.test_commands import LEAVES

ROOT = Path(__file__).resolve().parents[2]


def _shown(parser):
    """option string -> action, for the options a command shows in its help."""
    return {o: a for o, a in parser._option_string_actions.items() if a.help != argparse.SUPPRESS}


def _parsed(action, text: str):
    return action.type(text) if action.type else text


def _refuses(action, text: str) -> bool:
    try:
        value = _parsed(action, text)
    except (argparse.ArgumentTypeError, ValueError, TypeError):
        return True
    return action.choices is not None and value not in action.choices


def _friction_differences(action) -> list[str]:
    out = []
    for law in FRICTION_LAWS:  # every law is taken, as itself (a command that cannot use one says so in one line)
        if _refuses(action, law) or _parsed(action, law) != law:
            out.append(f"does not take {law!r}")
    if not _refuses(action, "sticky"):
        out.append("takes 'sticky'")
    if action.metavar != "LAW" or not action.help.startswith("joint friction law: none; coulomb-viscous"):
        out.append("spells or explains it differently")
    return out


def _differences(option: str, action) -> list[str]:
    if option == "--friction":
        return _friction_differences(action)
    if option in ("--rotor-inertia", "--no-rotor-inertia"):
        ok = (isinstance(action, argparse.BooleanOptionalAction) and action.dest == "rotor_inertia"
              and action.option_strings == ["--rotor-inertia", "--no-rotor-inertia"]
              and action.help.startswith(ROTOR_INERTIA_WORDS))
        return [] if ok else ["is not the one --rotor-inertia / --no-rotor-inertia switch"]
    if option in ("--out", "-o"):
        return [] if action.option_strings == ["--out", "-o"] else ["--out without -o (or -o for another option)"]
    if option == "--holdout":
        return [] if action.nargs == "+" and action.type is None else [f"takes nargs={action.nargs!r}, not one or more"]
    if option == "--rate":
        ok = action.metavar == "HZ" and RATE_WORDS in action.help and _refuses(action, "-1")
        return [] if ok else ["is not a sampling rate in Hz (samples per second)"]
    if option == "--joint-names":
        ok = (action.metavar == "NAME1,NAME2,..." and action.type is None and action.default is None
              and action.help.startswith(JOINT_NAMES_WORDS))
        return [] if ok else ["is not the log's names of the model's joints, in the model's order"]
    if option == "--period":
        ok = action.metavar == "S" and "period" in action.help and "trajectory" in action.help
        return [] if ok else ["is not the period of a periodic excitation trajectory"]
    return []


def test_every_shared_option_takes_the_same_values_and_means_the_same_in_every_command():
    found, wrong = set(), {}
    for words, parser in LEAVES:
        command = " ".join(words)
        for option, action in _shown(parser).items():
            if option not in VOCABULARY and option not in ("-o", "--no-rotor-inertia"):
                continue
            key = "--out" if option == "-o" else "--rotor-inertia" if option == "--no-rotor-inertia" else option
            found.add((command, key))
            problems = _differences(option, action)
            if problems:
                wrong[f"{command} {option}"] = problems
    assert not wrong, wrong
    # the walk saw the options this module's commands share (a broken walk would pass vacuously)
    for pair in [("identify", "--friction"), ("compare", "--friction"), ("submit-identify", "--friction"),
                 ("friction fit", "--friction"), ("model", "--friction"), ("identify", "--rotor-inertia"),
                 ("submit-identify", "--rotor-inertia"), ("model", "--rotor-inertia"), ("identify", "--holdout"),
                 ("compare", "--holdout"), ("submit-identify", "--holdout"), ("predict", "--out"),
                 ("pull", "--out"), ("export", "--out"), ("friction design", "--out"), ("demo", "--out"),
                 ("compare", "--rate"), ("bridge foxglove", "--rate"), ("excitation design", "--out"),
                 ("excitation check", "--rate"), ("excitation design", "--period"), ("reproduce", "--out"),
                 ("scaleout run", "--out"), ("identify", "--joint-names"), ("validate", "--joint-names"),
                 ("predict", "--joint-names"), ("export", "--joint-names"), ("export-urdf", "--out"),
                 ("export-mjcf", "--out"), ("calibrate plan", "--out"), ("calibrate measure", "--out"),
                 ("calibrate collect", "--out"), ("calibrate identify", "--out"), ("calibrate export-urdf", "--out")]:
        assert pair in found, pair


@pytest.mark.parametrize("words", [
    ["calibrate", "plan", "--robot", "ur5_li2023"], ["calibrate", "measure", "plan.json"],
    ["calibrate", "collect", "plan.json", "--source", "file:m.csv"], ["calibrate", "identify", "m.csv", "--robot", "ur5"],
    ["calibrate", "export-urdf", "cal.json"], ["export-urdf", "result.json"], ["export-mjcf", "result.json"]])
def test_the_export_and_calibration_commands_take_o_as_out(words):
    """`-o FILE` and `--out FILE` parse to the same args.out in the commands that took only --out."""
    from robodyn.cli import build_parser

    parser = build_parser()
    assert parser.parse_args([*words, "-o", "x.file"]).out == "x.file"
    assert parser.parse_args([*words, "--out", "x.file"]).out == "x.file"


def test_every_command_refuses_an_unknown_friction_law_with_the_same_one_line(capsys):
    commands = [words for words, parser in LEAVES if "--friction" in _shown(parser)]
    assert len(commands) >= 6
    for words in commands:
        assert main([*words, "--friction", "sticky"]) == 2
        err = capsys.readouterr().err.splitlines()
        assert err == [f"robodyn {' '.join(words)}: error: argument --friction: unknown kind 'sticky'; expected one "
                       f"of none, coulomb-viscous, stribeck, sigmoid; see `robodyn {' '.join(words)} --help`"], words


def test_old_spellings_are_taken_and_hidden():
    names = {" ".join(w): p for w, p in LEAVES}
    page = names["status-page"]
    assert page._option_string_actions["--period"].dest == page._option_string_actions["--refresh"].dest == "refresh"
    assert "--period" not in _shown(page)
    friction = names["model"]._option_string_actions["--friction"]
    assert friction.type("viscous,coulomb") == LegacyFrictionColumns(("viscous", "coulomb"))
    assert "viscous,coulomb" not in friction.help
    for command in ("excitation design", "excitation check"):
        friction = names[command]._option_string_actions["--friction"]
        assert friction.type("viscous,coulomb,offset") == LegacyFrictionColumns(("viscous", "coulomb", "offset"))
        assert "viscous,coulomb" not in friction.help
    for command in ("identify", "submit-identify", "compare"):
        parser = names[command]
        assert parser._option_string_actions["--no-rotor-inertia"] is parser._option_string_actions["--rotor-inertia"]
    fit = names["friction fit"]
    assert fit._option_string_actions["--model"].dest == "friction" and "--model" not in _shown(fit)
    # the hidden old spelling has no default of its own: without --friction the law is stribeck (it was None)
    from robodyn.cli import build_parser

    args = build_parser().parse_args(["friction", "fit", "r.mcap", "--robot", "twolink", "--out", "f.json"])
    assert args.friction == "stribeck"
    assert build_parser().parse_args(["friction", "fit", "r.mcap", "--robot", "twolink", "--out", "f.json",
                                      "--model", "sigmoid"]).friction == "sigmoid"


def test_a_friction_fit_of_no_law_is_refused_in_one_line(capsys, tmp_path):
    assert main(["friction", "fit", str(tmp_path / "r.mcap"), "--robot", "twolink", "--friction", "none",
                 "--out", str(tmp_path / "f.json")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "robodyn friction fit: error: --friction: none is no law to fit; use one of coulomb-viscous, stribeck, sigmoid"]


def _table(text: str) -> dict:
    rows = {}
    for line in text.splitlines():
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if line.startswith("| `--") and len(cells) >= 3:
            rows[cells[0].strip("`").split("`")[0]] = cells
    return rows


def _listed(parser, prefix=()):
    """The command names shown in the help (a deprecated command has no help entry)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                yield from _listed(action.choices[choice.dest], prefix + (choice.dest,))
            return
    yield " ".join(prefix)


def test_docs_options_is_the_one_table():
    from robodyn.cli import build_parser

    listed = set(_listed(build_parser()))
    rows = _table((ROOT / "docs" / "options.md").read_text())
    assert set(rows) == set(VOCABULARY)
    for option, (meaning, values) in VOCABULARY.items():
        assert rows[option][1:3] == [meaning, values], option
    # every command that takes a shared option is named in its row, and no other
    for words, parser in LEAVES:
        command = " ".join(words)
        for option in set(_shown(parser)) & set(VOCABULARY):
            if command not in listed:
                continue
            assert f"`{command}`" in rows[option][3], (command, option)


@pytest.mark.parametrize("law,columns", [("none", 43), ("coulomb-viscous", 64), ("stribeck", 64), ("sigmoid", 64)])
def test_model_counts_the_base_parameters_an_identification_with_the_same_options_fits(law, columns, capsys):
    """`robodyn model panda --friction LAW` prints the base parameters `identify --friction LAW
    --no-rotor-inertia` fits: panda has 43 rigid-body base parameters and 3 friction ones per joint."""
    import json

    assert main(["model", "panda", "--friction", law, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parameters"]["base_count"] == columns
