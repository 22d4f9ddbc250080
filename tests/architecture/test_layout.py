"""The package's layout rules: files with one job, names without history, a README that maps it.

These read the source tree; they are what keeps the layering step from eroding.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.architecture.layers import ROOT, package_dirs

MAX_LINES = 600
# A deliberately unrolled speed kernel: one lane per joint type is written out for Numba.
UNROLLED_KERNELS = {"identification/regressor.py"}
# Files that hold a paper's own tables may be named after it, and its data files quote it.
HISTORY = re.compile(r"seed_?0\d\d|\bissue \d+\b|\bissue #\d+", re.IGNORECASE)


def tracked(pattern: str) -> list[Path]:
    """The work tree's files (committed or new, not ignored): a file moved but not yet committed
    counts at its new place only."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", pattern], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return [ROOT / line for line in dict.fromkeys(out.stdout.splitlines()) if (ROOT / line).is_file()]


def library_sources() -> list[Path]:
    return [p for p in tracked("*.py") if p.relative_to(ROOT).parts[0] not in ("tests", "bench")]


def test_no_library_file_is_over_600_lines_but_the_unrolled_kernel():
    long = {str(p.relative_to(ROOT)): n for p in library_sources()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert set(long) <= UNROLLED_KERNELS, long


def test_no_history_in_names_or_docstrings_outside_tests():
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in library_sources()
             for i, line in enumerate(p.read_text().splitlines(), 1) if HISTORY.search(line)]
    names = [str(p.relative_to(ROOT)) for p in tracked("*") if HISTORY.search(p.name)]
    assert not found and not names, found + names


def readme_folder_rows() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| folder | import name | what |"):]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip().strip("`") for c in line.strip("|").split("|")]
        rows[cells[0].rstrip("/")] = cells[1]
    return rows


def test_readme_folder_table_names_every_installed_package_and_top_folder():
    rows = readme_folder_rows()
    packages = {str(folder.relative_to(ROOT)): name for name, folder in package_dirs().items()
                if (folder / "__init__.py").exists()}  # data folders ship as package data, not code
    listed = {folder: name for folder, name in rows.items() if name}
    assert listed == packages, (sorted(set(listed.items()) ^ set(packages.items())))
    top = {p.relative_to(ROOT).parts[0] for p in tracked("*") if len(p.relative_to(ROOT).parts) > 1
           and not p.relative_to(ROOT).parts[0].startswith(".")}
    assert top <= set(rows), sorted(top - set(rows))


# Developer scripts of the source tree (run from a checkout, never by the installed package).
SOURCE_TREE_ONLY = {"tools/checks", "tools/mutation", "tools/setup"}


def test_every_data_file_in_a_package_folder_ships_in_the_wheel():
    """A library module that reads a file beside it (a built-in model, the TX40 log of `compare --dataset
    tx40`) must find it in an installed copy: the file must match its package's package-data patterns."""
    import fnmatch
    import tomllib

    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"].get("package-data", {})
    folders = {folder.relative_to(ROOT).as_posix(): name for name, folder in package_dirs().items()}
    unshipped = []
    for path in tracked("*"):
        relative = path.relative_to(ROOT).as_posix()
        if path.suffix == ".py" or any(relative.startswith(f"{d}/") for d in SOURCE_TREE_ONLY):
            continue
        parents = [p for p in path.relative_to(ROOT).parents if p.as_posix() in folders]
        if not parents:
            continue
        package_folder = parents[0].as_posix()  # the deepest package holding the file
        inside = relative[len(package_folder) + 1:]
        if not any(fnmatch.fnmatch(inside, p) for p in patterns.get(folders[package_folder], [])):
            unshipped.append(relative)
    assert not unshipped, f"not package data, so missing from an installed copy: {unshipped}"
