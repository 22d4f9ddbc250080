"""The import contracts in .importlinter hold, and would catch a layer broken on purpose."""

from __future__ import annotations

import pytest

from tests.architecture.layers import lay_out_package, lint_imports, package_dirs


def test_the_import_contracts_hold(tmp_path):
    done = lint_imports(lay_out_package(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("module, upward", [
    ("robodyn/robot/upward_probe.py", "robodyn.cli"),             # the core reaching the command line
    ("robodyn/drivers/upward_probe.py", "robodyn.daemon"),         # a driver reaching its daemon
    ("robodyn/identification/upward_probe.py", "robodyn.calibration"),
])
def test_a_deliberate_upward_import_breaks_them_even_inside_a_function(tmp_path, module, upward):
    tree = lay_out_package(tmp_path)
    (tree / module).write_text(f"def later():\n    import {upward}\n    return {upward}\n")
    done = lint_imports(tree)
    assert done.returncode != 0 and "upward_probe" in done.stdout, done.stdout + done.stderr


def test_every_installed_package_has_a_source_folder():
    assert all(folder.is_dir() for folder in package_dirs().values())
