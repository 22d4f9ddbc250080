"""The ``robodyn`` console script.

The commands live in :mod:`robodyn.commands`, one module per task; each defines
``register(subparsers)``, and every registered handler takes the parsed ``args`` and returns an
exit code. Errors a user can fix (``ValueError``, ``FileNotFoundError``, ``UserError``) are
printed as one sentence, without a traceback. A reader that goes away (``robodyn ... | head -1``)
ends the command quietly, here and nowhere else.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys

from robodyn.errors import UserError  # noqa: F401  (re-exported: commands raise it from here)

# Modules that add subcommands, in help order. A module that is not (yet) part of the
# installed package is skipped; an import error inside an existing module is a bug and raises.
COMMAND_MODULES = (
    "robodyn.commands.models",
    "robodyn.commands.daemon",
    "robodyn.commands.daemon_client",
    "robodyn.commands.operator",
    "robodyn.commands.identify",
    "robodyn.commands.compare",
    "robodyn.commands.excitation",
    "robodyn.commands.friction",
    "robodyn.commands.reproduce",
    "robodyn.commands.scaleout",
    "robodyn.commands.calibrate",
    "robodyn.commands.demo",
)


def print_json(obj) -> None:
    """Strict JSON on stdout: NaN and infinities (not JSON) come out as null."""
    json.dump(_strict(obj), sys.stdout, indent=2, default=_json_default, allow_nan=False)
    sys.stdout.write("\n")


def _strict(o):
    import math

    import numpy as np

    if isinstance(o, dict):
        return {k: _strict(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_strict(v) for v in o]
    if isinstance(o, np.ndarray):
        return _strict(o.tolist())
    if isinstance(o, (float, np.floating)):
        return float(o) if math.isfinite(o) else None
    return o


def _json_default(o):
    import numpy as np

    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="robodyn", description="Robot dynamics identification and calibration.")
    from robodyn import __version__

    parser.add_argument("--version", action="version", version=f"robodyn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        if importlib.util.find_spec(name) is None:
            continue
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        code = _run(argv)
        sys.stdout.flush()  # inside the try: a reader that left shows up here, not at exit
        return code
    except BrokenPipeError:
        _discard_stdout()
        return 0


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


def _run(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return int(handler(args) or 0)
    except BrokenPipeError:
        raise
    except (UserError, ValueError, FileNotFoundError) as exc:
        print(f"robodyn {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a daemon's refusal is a message for the user, not a traceback
        from robodyn.daemon.client import DaemonError

        if not isinstance(exc, DaemonError):
            raise
        if exc.code == "unauthorised":  # the message says what to do: no "refused" prefix
            print(f"robodyn {args.command}: error: {exc}", file=sys.stderr)
        else:
            print(f"robodyn {args.command}: daemon refused: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"robodyn {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
