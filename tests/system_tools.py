"""Debian programs some tests drive (Chromium, systemd-analyze).

`make test` installs them where the host allows it (tools/setup/system_packages.sh). A test never
installs anything itself. Where one is still missing, the test is skipped with one line naming the
package and why; in CI (CI=true), where `make test` had every right to install it, it fails instead,
so a green CI run cannot hide a missing install step.
"""

from __future__ import annotations

import os
import shutil

import pytest


def require_system_tool(command: str, package: str, why: str, override_env: str | None = None) -> str:
    path = (os.environ.get(override_env) if override_env else None) or shutil.which(command)
    if path and os.path.exists(path):
        return path
    line = f"'{command}' is missing: {why}; install it with: sudo apt-get install {package} (make test does, as root)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(line, pytrace=False)
    pytest.skip(line)
