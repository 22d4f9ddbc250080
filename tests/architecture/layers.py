"""The installed layout of the `robodyn` package, laid out as files, and `lint-imports` run on it.

The source folders (daemon/, drivers/, …) install as subpackages of `robodyn` through
`package-dir` in pyproject.toml, so the source tree is not the package tree that an import graph
must read. This lays the package tree out in a scratch folder from the same mapping and runs
import-linter's contracts (.importlinter) against it.

    python -m tests.architecture.layers      # prints lint-imports' report for the current tree
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def package_dirs() -> dict[str, Path]:
    """Every installed package and the source folder it comes from (pyproject's package-dir)."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = setup["package-dir"]
    found = {}
    for package in setup["packages"]:
        parts = package.split(".")
        for cut in range(len(parts), 0, -1):  # the longest mapped prefix decides the folder
            prefix = ".".join(parts[:cut])
            if prefix in mapping:
                found[package] = ROOT / mapping[prefix] / Path(*parts[cut:])
                break
    return found


def lay_out_package(dest: Path) -> Path:
    """Copies each package's own .py files to where an installed copy would hold them."""
    for package, folder in package_dirs().items():
        target = dest.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for source in folder.glob("*.py"):
            shutil.copy2(source, target / source.name)
    return dest


def lint_imports(tree: Path, config: Path | None = None) -> subprocess.CompletedProcess:
    """lint-imports' report on ``tree`` under ``config`` (default: the repository's .importlinter)."""
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    return subprocess.run([linter, str(config or ROOT / ".importlinter"), "--no-cache"], cwd=tree,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                          capture_output=True, text=True, timeout=300)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        done = lint_imports(lay_out_package(Path(scratch)))
        print(done.stdout + done.stderr)
        sys.exit(done.returncode)
