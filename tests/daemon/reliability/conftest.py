"""Reliability tests: bounded, loopback only. Each test reports its measured figure
through the ``figure`` fixture; the figures are printed in the terminal summary of every run (also
without ``-s``), and docs/reliability.md quotes them."""

import json

import pytest


@pytest.fixture
def figure(request):
    def record(text: str, **values) -> None:
        line = text + (" " + json.dumps(values, default=str) if values else "")
        request.node.user_properties.append(("figure", line))  # printed by tests/conftest.py
        print(f"FIGURE {request.node.name}: {line}")

    return record
