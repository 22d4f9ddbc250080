"""Client text in log lines: a record's message and fields are one physical line whatever a
client sends, with control characters escaped visibly, in the terminal format, the journald
format and the JSON format.

Before: a disarm reason holding a newline wrote a second, forged line ("... event=armed"), and
an escape sequence went to the terminal showing the log as it was.
"""

from __future__ import annotations

import json
import logging
import sys

import pytest

from robodyn.commands.daemon import JsonLogFormatter
from robodyn.daemon.logs import DaemonFormatter, escape_control, format_fields

FORGED = "x\n2026-12-07 12:00:00,000 WARNING robodyn.daemon: ARMED by operator: motion is enabled event=armed"
CLEAR_SCREEN = "\x1b[2J"
UNSAFE = "\r\t\x00\x07\x1b\x7f\x85\x9b\u2028\u2029\u202e"


def record(message: str, *args, fields=None, exc_info=None, level=logging.WARNING) -> logging.LogRecord:
    rec = logging.LogRecord("robodyn.daemon", level, __file__, 1, message, args, exc_info)
    if fields is not None:
        rec.fields = fields
    return rec


def no_control_characters(line: str) -> bool:
    return not any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c in "\u2028\u2029\u202e" for c in line)


@pytest.mark.parametrize("journald", [False, True])
@pytest.mark.parametrize("reason", [FORGED, CLEAR_SCREEN, UNSAFE], ids=["forged_line", "clear_screen", "controls"])
def test_a_record_with_client_text_is_one_line_with_the_text_escaped(journald, reason):
    text = DaemonFormatter(journald).format(record("DISARMED: %s", f"disarmed by a local client: {reason}",
                                                   fields={"event": "disarmed", "reason": reason}))
    assert len(text.split("\n")) == 1 and len(text.splitlines()) == 1, text
    assert no_control_characters(text), repr(text)
    assert text.startswith("<4>robodyn.daemon: DISARMED" if journald else "20")
    assert escape_control(reason) in text
    assert text.endswith(f'event=disarmed reason="{escape_control(reason)}"'), text


def test_escapes_are_visible_and_plain_text_is_unchanged():
    assert escape_control(FORGED).startswith("x\\n2026-12-07")
    assert escape_control(CLEAR_SCREEN) == "\\x1b[2J"
    assert escape_control("a\rb\tc\x00\x9b\u2028") == "a\\rb\\tc\\x00\\x9b\\u2028"
    assert escape_control("run r1 aborted: joint7 at 0.3 rad, naïve ✓") == "run r1 aborted: joint7 at 0.3 rad, naïve ✓"
    assert format_fields({"a": 'x"y', "b": "plain", "c": "two words"}) == 'a="x\\"y" b=plain c="two words"'
    assert format_fields({"reason": "a\nb"}) == 'reason="a\\nb"'


@pytest.mark.parametrize("journald", [False, True])
def test_a_traceback_keeps_its_lines_but_the_exception_messages_in_it_are_escaped(journald):
    try:
        try:
            raise KeyError(f"inner {FORGED}")
        except KeyError as exc:
            raise ValueError(f"trajectory from a client: {FORGED}{CLEAR_SCREEN}") from exc
    except ValueError:
        rec = record("internal error while validating a run: %s", FORGED, exc_info=sys.exc_info(), level=logging.ERROR)
    lines = DaemonFormatter(journald).format(rec).split("\n")
    assert all(no_control_characters(line) for line in lines)
    head = "<3>" if journald else ""
    assert all(line.startswith(head) for line in lines)
    assert "internal error while validating a run: x\\n2026-12-07" in lines[0]
    assert any(line.startswith(head + "Traceback (most recent call last):") for line in lines)
    assert lines[-1] == f"{head}ValueError: trajectory from a client: {escape_control(FORGED + CLEAR_SCREEN)}"
    # the forged record is nowhere a line of its own
    assert not any(line.removeprefix(head).startswith("2026-12-07 12:00:00") for line in lines)
    assert sum("event=armed" in line for line in lines) == 3  # message, cause, exception: each inside its line


def test_the_json_log_is_one_object_per_line_by_construction():
    rec = record("DISARMED: %s", FORGED + CLEAR_SCREEN + UNSAFE, fields={"event": "disarmed", "reason": FORGED})
    text = JsonLogFormatter().format(rec)
    assert len(text.splitlines()) == 1 and no_control_characters(text)
    doc = json.loads(text)
    assert doc["message"] == "DISARMED: " + FORGED + CLEAR_SCREEN + UNSAFE and doc["reason"] == FORGED


def test_a_forged_disarm_reason_stays_inside_its_own_log_line(tmp_path):
    """Through the daemon: two disarms (the first while armed: a warning; the second: the 'was not
    armed' line) whose reasons try to forge an `armed` record and to clear the operator's screen."""
    from tests.daemon.conftest import DaemonProcess

    d = DaemonProcess(tmp_path)
    try:
        d.client.disarm(FORGED)
        d.client.disarm(CLEAR_SCREEN)
        assert d.client.status()["safety"]["armed"] is False
        text = d.log_text()
    finally:
        d.stop()
    lines = text.split("\n")
    assert "\x1b" not in text and all(no_control_characters(line) for line in lines if "disarm" in line)
    # the reason is logged by several records (the stop socket's, the disarm's): inside each one's line
    forged = [line for line in lines if "ARMED by operator" in line]
    assert forged and all("disarmed by" in line and ": x\\n2026-12-07 12:00:00,000 WARNING" in line
                          for line in forged), forged
    # the disarm's own record carries the reason as a quoted field, never in its message
    assert any("WARNING robodyn.daemon: DISARMED event=disarmed reason=\"disarmed by" in line for line in forged)
    assert not any(line.startswith("2026-12-07 12:00:00") for line in lines)
    cleared = [line for line in lines if "\\x1b[2J" in line]
    assert cleared and all("disarmed by" in line for line in cleared), cleared
    # the genuine arming at start-up is the one record whose fields say `event=armed`
    armed = [line for line in lines if line.endswith("event=armed")]
    assert len(armed) == 1 and "ARMED by operator" not in armed[0], armed
