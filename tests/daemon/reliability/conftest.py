"""Reliability tests: bounded, loopback only. Each test reports its measured figure
through the ``figure`` fixture; the figures are printed in the terminal summary of every run (also
without ``-s``), and docs/reliability.md quotes them."""

import json

import pytest

FIGURES: list[tuple[str, str]] = []


@pytest.fixture
def figure(request):
    def record(text: str, **values) -> None:
        line = text + (" " + json.dumps(values, default=str) if values else "")
        FIGURES.append((request.node.name, line))
        print(f"FIGURE {request.node.name}: {line}")

    return record


def pytest_terminal_summary(terminalreporter):
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for name, line in FIGURES:
        terminalreporter.write_line(f"{name}: {line}")
