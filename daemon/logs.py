"""Log lines that read well in journald and in a terminal.

Under systemd (``$JOURNAL_STREAM`` set) each line starts with the syslog priority in angle
brackets, which journald turns into the entry's priority (``journalctl -p warning`` works), and
carries no timestamp (journald adds its own). Elsewhere a line starts with the local time.
Structured facts go after the message as ``key=value`` pairs (``extra={"fields": {...}}``), so
``journalctl -u robodyn-daemon | grep run_id=...`` finds every line of a run.

Messages and fields carry text from clients (a disarm reason, a run label, a peer's name), so
the formatter escapes every control character in them: a record's message and fields are one
physical line, whatever a client sends, and no client text can forge another record or drive
the terminal that shows the log. Only a traceback, which the daemon itself adds, spans lines;
the exception messages inside it are escaped the same way.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import traceback

SYSLOG_PRIORITY = {logging.CRITICAL: 2, logging.ERROR: 3, logging.WARNING: 4, logging.INFO: 6, logging.DEBUG: 7}

# C0 and C1 control characters (newline, carriage return, escape, ...), DEL, the Unicode line and
# paragraph separators, and the bidirectional overrides that reorder what a terminal shows
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(match: re.Match) -> str:
    c = match.group()
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def escape_control(text: str) -> str:
    """``text`` on one line with every control character visible: newline as ``\\n``, escape as
    ``\\x1b``, a line separator as ``\\u2028``."""
    return _UNSAFE.sub(_escape_char, text) if _UNSAFE.search(text) else text


def _escape_lines(text: str) -> str:
    """Multi-line text of the daemon's own (a traceback): its lines kept, control characters inside
    each escaped."""
    return "\n".join(escape_control(line) for line in text.split("\n"))


def syslog_priority(levelno: int) -> int:
    for level in (logging.CRITICAL, logging.ERROR, logging.WARNING, logging.INFO):
        if levelno >= level:
            return SYSLOG_PRIORITY[level]
    return 7


def format_fields(fields: dict) -> str:
    """``k=v`` pairs; values with spaces, quotes or control characters are quoted (control
    characters escaped) so the line stays one parseable line."""
    out = []
    for key, value in fields.items():
        text = str(value)
        if not text or any(c in text for c in ' "=') or _UNSAFE.search(text):
            text = '"' + escape_control(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'
        out.append(f"{escape_control(str(key))}={text}")
    return " ".join(out)


def _escape_exception_messages(te: traceback.TracebackException, seen: set) -> None:
    """Escape the message and notes of every exception of a traceback (they may quote client text)."""
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    if isinstance(getattr(te, "_str", None), str):
        te._str = escape_control(te._str)
    notes = getattr(te, "__notes__", None)
    if isinstance(notes, (list, tuple)):
        te.__notes__ = [escape_control(str(n)) for n in notes]
    for sub in (te.__cause__, te.__context__, *(getattr(te, "exceptions", None) or ())):
        _escape_exception_messages(sub, seen)


class DaemonFormatter(logging.Formatter):
    def __init__(self, journald: bool):
        super().__init__("%(name)s: %(message)s" if journald else
                         "%(asctime)s %(levelname)s %(name)s: %(message)s")
        self.journald = journald

    def formatException(self, ei) -> str:
        te = traceback.TracebackException(*ei[:3])
        _escape_exception_messages(te, set())
        return _escape_lines("".join(te.format()).rstrip("\n"))

    def format(self, record: logging.LogRecord) -> str:
        record.message = escape_control(record.getMessage())
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        text = escape_control(self.formatMessage(record))
        fields = getattr(record, "fields", None)
        if fields:
            text = f"{text} {format_fields(fields)}"
        # the traceback is formatted here (never a cached one another formatter made unescaped)
        tail = []
        if record.exc_info:
            tail.append(self.formatException(record.exc_info))
        elif record.exc_text:
            tail.append(_escape_lines(record.exc_text))
        if record.stack_info:
            tail.append(_escape_lines(self.formatStack(record.stack_info)))
        if tail:
            text = "\n".join([text, *tail])
        if self.journald:
            prio = syslog_priority(record.levelno)
            # one priority prefix per physical line: journald reads each line as an entry
            text = "\n".join(f"<{prio}>{line}" for line in text.split("\n"))
        return text


def setup_logging(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(DaemonFormatter(journald=bool(os.environ.get("JOURNAL_STREAM"))))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
