"""The import contracts in .importlinter hold, and would catch a layer broken on purpose."""

from __future__ import annotations

import pytest

from tests.architecture.layers import ROOT, lay_out_package, lint_imports, package_dirs


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


@pytest.mark.parametrize("module, sideways", [
    ("robodyn/identification/sideways_probe.py", "robodyn.daemon"),       # the offline half reaching the daemon
    ("robodyn/identification/sideways_probe.py", "robodyn.drivers.sim"),  # ... or a driver
    ("robodyn/calibration/sideways_probe.py", "robodyn.daemon.client"),
    ("robodyn/drivers/sideways_probe.py", "robodyn.identification"),      # the real-time half reaching the offline one
    ("robodyn/commands/sideways_probe.py", "robodyn.commands.models"),    # a command module reaching another
    ("robodyn/scaleout/sideways_probe.py", "robodyn.reproduce"),          # an application reaching a sibling
])
def test_a_deliberate_sideways_import_breaks_them_even_inside_a_function(tmp_path, module, sideways):
    tree = lay_out_package(tmp_path)
    (tree / module).write_text(f"def later():\n    import {sideways}\n    return {sideways}\n")
    if module.startswith("robodyn/commands/"):  # a command module the commands contract places on its top line
        text = (ROOT / ".importlinter").read_text().replace("| scaleout | urdf", "| scaleout | sideways_probe | urdf")
        (tree / ".importlinter").write_text(text)
        done = lint_imports(tree, config=tree / ".importlinter")
    else:
        done = lint_imports(tree)
    assert done.returncode != 0 and "sideways_probe" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("driver_module", ["robodyn.drivers.sim", "robodyn.drivers.base"])
def test_the_realistic_logs_have_no_exception_to_the_halves(tmp_path, driver_module):
    """identification.realistic_logs drives the plant (robodyn.simulation.mujoco_plant), not the
    simulated driver: an import of a driver from that very module breaks the contracts too."""
    tree = lay_out_package(tmp_path)
    logs = tree / "robodyn/identification/realistic_logs.py"
    logs.write_text(logs.read_text() + f"\n\ndef later():\n    import {driver_module}\n    return {driver_module}\n")
    done = lint_imports(tree)
    assert done.returncode != 0 and "realistic_logs" in done.stdout, done.stdout + done.stderr
