"""The ``robodyn`` console script.

The commands live in :mod:`robodyn.commands`, one module per task; each defines
``register(subparsers)``, and every registered handler takes the parsed ``args`` and returns an
exit code. Errors a user can fix (``ValueError``, ``OSError`` such as a missing file, ``UserError``,
a bad option) are printed as one line on stderr, without a traceback, and the command exits 2. Any
other exception is a bug: one line naming it, exit 70; ``ROBODYN_DEBUG=1`` shows its traceback.
A reader that goes away (``robodyn ... | head -1``) ends the command quietly, here and nowhere else.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys

from robodyn.errors import UserError

# One OpenBLAS thread per robodyn process (daemon workers included, they inherit it) unless
# OPENBLAS_NUM_THREADS says otherwise. The long loops are numba kernels; what reaches BLAS is mostly
# small solves and SVDs, and on a busy host (a shared lab PC, or beside the daemon's real-time
# processes) OpenBLAS's waiting threads spin: `python bench/blas/run.py` measured such solves 100 to
# 400 times slower with the default threads on a 2-core host at load average 3-5. numpy reads the
# variable once, when a command first imports it, after this line.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Modules that add subcommands, in help order. A module that is not (yet) part of the
# installed package is skipped; an import error inside an existing module is a bug and raises.
COMMAND_MODULES = (
    "robodyn.commands.models",
    "robodyn.commands.daemon",
    "robodyn.commands.daemon_client",
    "robodyn.commands.jobs",
    "robodyn.commands.operator",
    "robodyn.commands.identify",
    "robodyn.commands.predict",
    "robodyn.commands.urdf",
    "robodyn.commands.mjcf",
    "robodyn.commands.compare",
    "robodyn.commands.excitation",
    "robodyn.commands.friction",
    "robodyn.commands.reproduce",
    "robodyn.commands.scaleout",
    "robodyn.commands.calibrate",
    "robodyn.commands.demo",
)


EXIT_USAGE = 2  # the user can fix it: a bad option, a missing file, a refused request
EXIT_BUG = 70  # EX_SOFTWARE: an exception nobody anticipated


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error: the message and where the help is, not the whole usage first
    (an invalid choice used to print 17 lines of usage before it). Subcommands inherit the class."""

    argv: list = []  # the words being parsed (a subcommand's parser explains its errors with them)

    def error(self, message: str, prog: str | None = None):
        prog = prog or self.prog
        self.exit(EXIT_USAGE, f"{prog}: error: {self._explained(message)}; see `{prog} --help`\n")

    def _explained(self, message: str) -> str:
        """argparse's message, with a mistyped command answered by the listed commands only (its
        own list also names the deprecated, unlisted ones) and the nearest, and a missing input that
        an earlier ``--holdout`` took explained (it takes every path after it)."""
        import difflib
        import re

        m = re.search(r"invalid choice: '?([^' ]*)'? \(choose from .*\)$", message)
        for action in self._actions:
            if m and isinstance(action, argparse._SubParsersAction) and action.metavar and \
                    message.startswith(f"argument {action.metavar}:"):
                listed = [a.dest for a in action._choices_actions]
                near = difflib.get_close_matches(m.group(1), listed, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                return f"{message[:m.start()]}invalid choice: {m.group(1)!r} (choose from {', '.join(listed)}){hint}"
        if "the following arguments are required" in message and "--holdout" in Parser.argv:
            return (f"{message} (--holdout takes every path after it: put the data first, "
                    f"`... DATA ... --holdout REC ...`)")
        return message

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an unknown argument is reported by the command it was given to."""
        Parser.argv = [str(a) for a in (sys.argv[1:] if args is None else args)]
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}", getattr(parsed, "command_prog", None))
        return parsed


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="robodyn", description="Robot dynamics identification and calibration.")
    from robodyn import __version__

    parser.add_argument("--version", action="version", version=f"robodyn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        if importlib.util.find_spec(name) is None:
            continue
        importlib.import_module(name).register(sub)
    _name_leaves(parser)
    return parser


def _name_leaves(parser: argparse.ArgumentParser) -> None:
    """Every command knows its full name (``robodyn excitation design``) for its error lines."""
    parser.set_defaults(command_prog=parser.prog)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                _name_leaves(sub)


def main(argv: list[str] | None = None) -> int:
    try:
        code = _run(argv)
        sys.stdout.flush()  # inside the try: a reader that left shows up here, not at exit
        return code
    except BrokenPipeError:
        _discard_stdout()
        return 0
    except KeyboardInterrupt:
        # Ctrl-C before the command ran (while the parser was built or read the arguments): the
        # command's own handler (_run) cannot name it yet, so its first word does
        words = sys.argv[1:] if argv is None else list(argv)
        first = next((w for w in words[:1] if not w.startswith("-")), None)
        print(f"robodyn {first}: interrupted" if first else "robodyn: interrupted", file=sys.stderr)
        return 130


def _discard_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null, so the interpreter's final flush of what
    is still buffered does not raise (and print) a second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (captured in tests)
        pass
    finally:
        os.close(devnull)


# Options whose value may begin with "-": a CurveZMQ public key is 40 characters of Z85, whose
# alphabet has "-", so about one key in 85 begins with it, and argparse would read `--server-key -xyz...`
# as an option without its value. The next word is taken as the value, as `--server-key=-xyz...`.
VALUES_MAY_START_WITH_DASH = ("--server-key",)


def attach_dash_values(argv: list[str]) -> list[str]:
    """``argv`` with each option of VALUES_MAY_START_WITH_DASH joined to the word after it."""
    out, k = [], 0
    while k < len(argv):
        if argv[k] in VALUES_MAY_START_WITH_DASH and k + 1 < len(argv):
            out.append(f"{argv[k]}={argv[k + 1]}")
            k += 2
            continue
        out.append(argv[k])
        k += 1
    return out


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    argv = attach_dash_values(sys.argv[1:] if argv is None else list(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a bad option (one line printed by Parser.error)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_USAGE
    name = getattr(args, "command_prog", None) or f"robodyn {args.command}"
    try:
        return int(handler(args) or 0)
    except BrokenPipeError:
        raise
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if isinstance(exc, SystemError) and _interrupted(exc):
            # Ctrl-C that arrived while compiled code (a Numba kernel) called back into Python
            # surfaces as a SystemError caused by the KeyboardInterrupt: an interrupt, not a bug
            print(f"{name}: interrupted", file=sys.stderr)
            return 130
        message = error_line(exc)
        if message is None:  # a bug: one line, the traceback on request
            if os.environ.get("ROBODYN_DEBUG"):
                raise
            message = (f"internal error: {type(exc).__name__}: {_one_line(str(exc))} (a bug; ROBODYN_DEBUG=1 "
                       "shows the traceback)")
            print(f"{name}: {message}", file=sys.stderr)
            return EXIT_BUG
        print(f"{name}: {message}", file=sys.stderr)
        return EXIT_USAGE


def _interrupted(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among the causes or contexts of ``exc`` (a bounded walk)."""
    seen = 0
    while exc is not None and seen < 16:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def error_line(exc: BaseException) -> str | None:
    """The one line a user-fixable exception is printed as (after ``robodyn COMMAND: ``), or None
    for an exception that is a bug."""
    from robodyn.daemon.client import DaemonError

    if isinstance(exc, DaemonError):  # a daemon's refusal is a message for the user, not a traceback
        if exc.code in ("unauthorised", "unavailable", "bad_endpoint"):  # the message says what to do
            return f"error: {_one_line(str(exc))}"
        return f"daemon refused: {exc}"
    if isinstance(exc, FileNotFoundError):  # one style for every missing file: `PATH: no such file`
        return f"error: {exc.filename}: no such file" if exc.filename else f"error: {_one_line(str(exc))}"
    if isinstance(exc, OSError) and exc.filename:  # a directory given for a file, no permission, ...
        return f"error: {exc.filename}: {(exc.strerror or str(exc)).lower()}"
    if isinstance(exc, (UserError, ValueError, OSError)):
        return f"error: {exc}"
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
