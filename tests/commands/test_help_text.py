"""Every option of every command says what it is, in words a lab engineer uses; old command names
and old option spellings still work but are not shown."""

from __future__ import annotations

import argparse

import pytest

from robodyn.cli import build_parser
from tests.commands.test_commands import LEAVES, leaf_commands

# words that name a method's source or a testing notion, not what the option does for the user
JARGON = ("inverse crime", "eq. 14 in the box", "--params {li2023")


def _options(parser):
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction, argparse._VersionAction)):
            continue
        yield action


def _ids(leaves):
    return [" ".join(w) for w, _ in leaves]


@pytest.mark.parametrize("words,parser", LEAVES, ids=_ids(LEAVES))
def test_every_option_has_help(words, parser):
    missing = [a.option_strings[0] if a.option_strings else a.dest for a in _options(parser)
               if a.help is None or (a.help != argparse.SUPPRESS and not a.help.strip())]
    assert not missing, f"robodyn {' '.join(words)}: options without help: {missing}"


# symbols and trade names a help text may use only after saying, in words, what the thing is
SYMBOLS = ("cond(W_base)", "columns IA", "psi_j", "CurveZMQ", "LOESS", "Hayati", "SMR", "third-octave")
WORDS_FIRST = 5  # at least this many words of the same help text before the symbol
# (command, option) in modules other engineers own, reported with the wording to adopt
SYMBOLS_PENDING: set = set()


def _texts(parser):
    """(where, text) of every help text a command shows: its description, option helps, group titles."""
    yield "description", parser.description or ""
    for action in _options(parser):
        if action.help and action.help != argparse.SUPPRESS:
            yield action.option_strings[0] if action.option_strings else action.dest, action.help
    for group in parser._action_groups:
        yield f"group {group.title}", f"{group.title or ''} {group.description or ''}"


@pytest.mark.parametrize("words,parser", LEAVES, ids=_ids(LEAVES))
def test_help_says_what_a_thing_is_in_words_before_its_symbol(words, parser):
    import re

    early = []
    for where, text in _texts(parser):
        for symbol in SYMBOLS:
            k = text.find(symbol)
            if k >= 0 and len(re.findall(r"[A-Za-z]{2,}", text[:k])) < WORDS_FIRST \
                    and (" ".join(words), where) not in SYMBOLS_PENDING:
                early.append(f"{where}: {symbol!r} in {text[:80]!r}")
    assert not early, f"robodyn {' '.join(words)}: {early}"


@pytest.mark.parametrize("words,parser", LEAVES, ids=_ids(LEAVES))
def test_help_has_no_jargon(words, parser):
    text = parser.format_help()
    assert not [w for w in JARGON if w in text], f"robodyn {' '.join(words)} --help"


def _shown_commands(parser):
    """Command names listed in a parser's help (hidden ones have no help entry)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest for choice in action._choices_actions}
    return set()


def test_deprecated_commands_are_hidden_from_help():
    parser = build_parser()
    shown = _shown_commands(parser)
    for old in ("identify-advanced", "stepwise-flexible"):
        assert old not in shown and old not in parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            calibrate = action.choices["calibrate"]
    assert {"replay", "export-urdf"}.isdisjoint(_shown_commands(calibrate))
    assert "replay" not in calibrate.format_help() and "export-urdf" not in calibrate.format_help()


def test_one_name_per_option():
    names = {" ".join(w): p for w, p in leaf_commands(build_parser())}
    export = names["export"]
    assert export._option_string_actions["--output"].help == argparse.SUPPRESS  # the old spelling, hidden
    assert export._option_string_actions["--out"].help
    assert "--held-out" not in names["identify"]._option_string_actions
    # --holdout names recordings wherever it appears
    for words, parser in names.items():
        action = parser._option_string_actions.get("--holdout")
        if action is not None and action.help != argparse.SUPPRESS:  # a hidden old spelling may differ
            assert action.type is None and action.nargs in ("+", "*"), words
    # the old spellings are taken but never shown: one name per meaning in every help
    old_spellings = {"--output": "--out", "--daemon": "--endpoint", "--model": "--robot (a robot) or --friction (a law)",
                     "--floor-z": "--floor", "--design-time": "--time-limit", "--held-out": "--holdout"}
    for words, parser in names.items():
        for old, new in old_spellings.items():
            action = parser._option_string_actions.get(old)
            assert action is None or action.help == argparse.SUPPRESS, f"{words} shows {old}; its one name is {new}"
        shown = {o: a for o, a in parser._option_string_actions.items() if a.help != argparse.SUPPRESS}
        # --force: overwrite a default output file; --timeout: how long to wait for the daemon
        if "--force" in shown:
            assert "overwrite" in shown["--force"].help, (words, shown["--force"].help)
        if "--timeout" in shown:
            assert "daemon" in shown["--timeout"].help, (words, shown["--timeout"].help)
        # a robot model is --robot, a daemon address --endpoint, wherever they appear
        for option, action in shown.items():
            if action.dest == "endpoint":
                assert option == "--endpoint", words
    # each renamed option still takes its old spelling, to the same destination
    for words, new, old in (("export", "--out", "--output"), ("calibrate collect", "--endpoint", "--daemon"),
                            ("calibrate plan", "--floor", "--floor-z"), ("demo", "--time-limit", "--design-time"),
                            ("bridge foxglove", "--robot", "--model"), ("friction fit", "--friction", "--model"),
                            ("calibrate compensate", "--accept-failed", "--force")):
        parser = names[words]
        assert parser._option_string_actions[old].dest == parser._option_string_actions[new].dest, (words, old)


def test_the_command_line_loads_no_numerical_library_before_a_command_needs_one():
    """Building the parser (every command's options and help) imports none of numba, scipy or the
    other heavy libraries: every `robodyn` invocation builds it, `robodyn abort` included, and on a
    busy host those imports took seconds of CPU before the stop was sent. Each command's handler
    imports what it uses."""
    import subprocess
    import sys

    heavy = ("numba", "scipy", "mujoco", "zmq", "matplotlib", "pinocchio", "ray", "torch")
    code = ("import sys, robodyn.cli as cli; cli.build_parser(); "
            f"print(' '.join(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "", f"building the parser imported {out.stdout.strip()}"


def test_every_excitation_optimizer_is_explained_in_words():
    """`excitation design --optimizer` says what each search method is, not only its abbreviation."""
    names = {" ".join(w): p for w, p in LEAVES}
    action = names["excitation design"]._option_string_actions["--optimizer"]
    for choice in action.choices:
        k = action.help.find(f"{choice} = ")
        assert k >= 0, f"--optimizer {choice} is not explained"
        words = action.help[k + len(choice) + 3:].split(";")[0].split()
        assert len(words) >= 2, (choice, words)
