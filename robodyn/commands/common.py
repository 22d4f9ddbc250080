"""Pieces every command shares: JSON output (:func:`print_json`), the ``--json`` option, deprecated command names, number lists,
table cells for numbers that may not exist, and the options several commands take (:data:`VOCABULARY`: one
spelling, one set of values and one meaning each, listed in docs/options.md)."""

from __future__ import annotations

import argparse
import errno
import json
import math
import sys
from pathlib import Path

from robodyn.json_values import strict_json  # noqa: F401  (the commands' name for it)

JSON_HELP = "print machine-readable JSON on stdout instead of text (no progress bars)"


def add_json(parser, help: str = JSON_HELP) -> None:
    parser.add_argument("--json", action="store_true", help=help)


def needs_a_command(parser, subparsers):
    """The handler of a command group run without one of its commands (`robodyn excitation`):
    one line on stderr naming the commands it has (the listed ones, not deprecated names), exit 2."""

    def run(args) -> int:
        names = ", ".join(action.dest for action in subparsers._choices_actions)
        print(f"{parser.prog}: error: name one of its commands: {names}; see `{parser.prog} --help`",
              file=sys.stderr)
        return 2

    return run


def deprecated(handler, old: str, new: str):
    """A handler for an old command name: one line on stderr naming the new command, then the
    new command's handler. Old names keep working for one release."""

    def run(args):
        print(f"robodyn {old}: deprecated, use `robodyn {new}` (the old name goes in the next release)",
              file=sys.stderr)
        return handler(args)

    return run


def _number(kind, test, limit: str):
    """An argparse type: ``kind`` of the text, refused (one line, naming the limit) unless ``test``."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, "
                                             f"got {text!r}") from None
        if not (math.isfinite(value) and test(value)):
            raise argparse.ArgumentTypeError(f"must be {limit}, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


positive_float = _number(float, lambda v: v > 0, "> 0")
nonnegative_float = _number(float, lambda v: v >= 0, ">= 0")
positive_int = _number(int, lambda v: v > 0, ">= 1")
nonnegative_int = _number(int, lambda v: v >= 0, ">= 0")
fraction = _number(float, lambda v: 0 < v < 1, "between 0 and 1 (exclusive)")


def require_file(path) -> Path:
    """``path`` as a Path, or FileNotFoundError: the command line prints it as ``PATH: no such file``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, "no such file", str(path))
    return path


def output_path(given, default, force: bool) -> Path:
    """The file a command writes: the one named with --out, or its default name when no file has it
    yet (or with --force). A default never overwrites a file the user did not name."""
    if given is not None:
        return Path(given)
    default = Path(default)
    if default.exists() and not force:
        from robodyn.errors import UserError

        raise UserError(f"--out: not given, and {default} exists; name the output with --out FILE, or add --force "
                        "to overwrite it")
    return default


FORCE_HELP = "overwrite the default output file when --out is not given"


def floats(text: str, name: str, count: int | None = None) -> list[float]:
    try:
        values = [float(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{name}: expected comma-separated numbers, got {text!r}") from None
    if count is not None and len(values) != count:
        raise ValueError(f"{name}: expected {count} numbers, got {len(values)}")
    return values


def percent(fraction, width: int = 0, digits: int = 2) -> str:
    """A fraction as a percentage, or 'n/a' when it does not exist (None or not finite): a number
    that could not be estimated is never printed as a percentage."""
    if fraction is None or not math.isfinite(float(fraction)):
        return f"{'n/a':>{width}}"
    return f"{float(fraction) * 100:>{max(width - 1, 0)}.{digits}f}%"


def number(value, fmt: str = ".4f", width: int = 0) -> str:
    """``value`` formatted, or 'n/a' when it does not exist."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return f"{'n/a':>{width}}"
    return f"{value:>{width}{fmt}}"


def print_json(obj) -> None:
    """Strict JSON on stdout: NaN and infinities (not JSON) come out as null."""
    json.dump(strict_json(obj), sys.stdout, indent=2, default=json_default, allow_nan=False)
    sys.stdout.write("\n")


def json_default(o):
    """numpy values for :func:`json.dump`."""
    import numpy as np

    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


# --------------------------------------------------------------------------- the shared options
# One spelling, one set of values and one meaning per option, wherever a command takes it. The table
# is docs/options.md; tests/commands/test_option_vocabulary.py walks every command's parser against it.

FRICTION_LAWS = ("none", "coulomb-viscous", "stribeck", "sigmoid")
FRICTION_WORDS = ("joint friction law: none; coulomb-viscous (a constant Coulomb level, a viscous term proportional "
                  "to speed, and a constant offset, per joint); stribeck (coulomb-viscous with a breakaway level that "
                  "falls to the Coulomb level as speed grows); sigmoid (coulomb-viscous with the Coulomb step "
                  "smoothed by tanh)")
ROTOR_INERTIA_WORDS = ("fit (or, with --no-rotor-inertia, leave out) each joint's motor rotor inertia as reflected "
                       "through its gearbox, one parameter per joint")
OUT_WORDS = "the file written"
HOLDOUT_WORDS = "recordings not identified on, only predicted: the error on them is reported"
RATE_WORDS = "samples per second, Hz"
PERIOD_WORDS = "the period of a periodic excitation trajectory, s"
JOINT_NAMES_WORDS = ("the log's names of the model's joints, in the model's joint order, replacing the names the "
                     "model accepts (default: each joint's own name and the aliases its model file declares)")

VOCABULARY = {  # option: (what it means, the values it takes); docs/options.md is this table
    "--friction": (FRICTION_WORDS, " | ".join(FRICTION_LAWS)),
    "--rotor-inertia": (ROTOR_INERTIA_WORDS, "--rotor-inertia | --no-rotor-inertia"),
    "--out": (OUT_WORDS + "; -o is the same option", "a file path"),
    "--holdout": (HOLDOUT_WORDS, "one or more recordings"),
    "--rate": (RATE_WORDS, "a number > 0"),
    "--period": (PERIOD_WORDS, "a number > 0"),
    "--joint-names": (JOINT_NAMES_WORDS, "one name per model joint, comma-separated: NAME1,NAME2,..."),
}


class LegacyFrictionColumns(tuple):
    """An old ``--friction`` value of `robodyn model` and `excitation`: a comma list of the friction
    columns viscous, coulomb, offset (each law of FRICTION_LAWS but none has all three)."""


def friction_law(legacy_columns: bool = False):
    """The argparse type of ``--friction``: one of FRICTION_LAWS. With ``legacy_columns`` the old comma
    list of columns is still taken (as a :class:`LegacyFrictionColumns`), not shown in the help."""

    def friction(text: str):
        if text in FRICTION_LAWS:
            return text
        kinds = tuple(k.strip() for k in text.split(",") if k.strip())
        if legacy_columns and kinds and all(k in ("viscous", "coulomb", "offset") for k in kinds):
            return LegacyFrictionColumns(kinds)
        raise argparse.ArgumentTypeError(f"unknown kind {text!r}; expected one of {', '.join(FRICTION_LAWS)}")

    friction.__name__ = "friction law"
    return friction


def add_friction(p, default: str = "coulomb-viscous", extra: str = "", legacy_columns: bool = False) -> None:
    """``--friction LAW``: the one friction option, every law accepted in every command (a command that
    cannot use one refuses it with one line, :func:`require_friction`); ``extra`` says what the command
    does with it."""
    p.add_argument("--friction", type=friction_law(legacy_columns), default=default, metavar="LAW",
                   help=f"{FRICTION_WORDS} (default {default}){'; ' + extra if extra else ''}")


def require_friction(args, laws: tuple, why: str) -> None:
    """One line when the command cannot use the law given with --friction (all commands take the same)."""
    from robodyn.errors import UserError

    if args.friction not in laws:
        raise UserError(f"--friction: {args.friction} {why}; use one of {', '.join(laws)}")


def add_rotor_inertia(p, default: bool = True, extra: str = "") -> None:
    """``--rotor-inertia / --no-rotor-inertia``: the one rotor inertia option (args.rotor_inertia)."""
    p.add_argument("--rotor-inertia", action=argparse.BooleanOptionalAction, default=default,
                   help=f"{ROTOR_INERTIA_WORDS} (default: {'fitted' if default else 'left out'})"
                        f"{'; ' + extra if extra else ''}")


def add_out(p, help: str, required: bool = False, default=None, metavar: str = "FILE") -> None:
    """``--out FILE`` (also ``-o``): the file (or folder) a command writes."""
    p.add_argument("--out", "-o", required=required, default=default, metavar=metavar, help=help)


def add_holdout(p, help: str = HOLDOUT_WORDS, metavar: str = "REC") -> None:
    """``--holdout REC [REC ...]``: held-out recordings, one or more (the option takes every word after it)."""
    p.add_argument("--holdout", nargs="+", default=None, metavar=metavar, help=help)



def add_joint_names(p, extra: str = "") -> None:
    """``--joint-names NAME1,NAME2,...``: how the log names the model's joints (args.joint_names);
    :func:`with_joint_names` applies it to the model."""
    p.add_argument("--joint-names", default=None, metavar="NAME1,NAME2,...",
                   help=f"{JOINT_NAMES_WORDS}{'; ' + extra if extra else ''}")


def with_joint_names(model, args):
    """``model`` reading its joints from a log under the names given with --joint-names (unchanged
    without it). A wrong count or a repeated name is refused in one line naming --joint-names."""
    if getattr(args, "joint_names", None) is None:
        return model
    from robodyn.robot.log_names import parse_log_names

    return model.with_log_names(parse_log_names(args.joint_names, model.dof))
