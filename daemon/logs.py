"""Log lines that read well in journald and in a terminal.

Under systemd (``$JOURNAL_STREAM`` set) each line starts with the syslog priority in angle
brackets, which journald turns into the entry's priority (``journalctl -p warning`` works), and
carries no timestamp (journald adds its own). Elsewhere a line starts with the local time.
Structured facts go after the message as ``key=value`` pairs (``extra={"fields": {...}}``), so
``journalctl -u robodyn-daemon | grep run_id=...`` finds every line of a run.
"""

from __future__ import annotations

import logging
import os
import sys

SYSLOG_PRIORITY = {logging.CRITICAL: 2, logging.ERROR: 3, logging.WARNING: 4, logging.INFO: 6, logging.DEBUG: 7}


def syslog_priority(levelno: int) -> int:
    for level in (logging.CRITICAL, logging.ERROR, logging.WARNING, logging.INFO):
        if levelno >= level:
            return SYSLOG_PRIORITY[level]
    return 7


def format_fields(fields: dict) -> str:
    """``k=v`` pairs; values with spaces or quotes are quoted so the line stays parseable."""
    out = []
    for key, value in fields.items():
        text = str(value)
        if not text or any(c in text for c in ' "=\n'):
            text = '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
        out.append(f"{key}={text}")
    return " ".join(out)


class DaemonFormatter(logging.Formatter):
    def __init__(self, journald: bool):
        super().__init__("%(name)s: %(message)s" if journald else
                         "%(asctime)s %(levelname)s %(name)s: %(message)s")
        self.journald = journald

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = getattr(record, "fields", None)
        if fields:
            head, sep, tail = text.partition("\n")  # keep a traceback after the fields
            text = f"{head} {format_fields(fields)}{sep}{tail}"
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
