"""`make demo` installs what the demo needs and nothing of the test set-up: the numerical core, the
MuJoCo simulator and matplotlib (docs/testing.md measures the venv: 681 MB against the test
venv's 2.0 GB). These read the Makefile and pyproject.toml; whether the demo runs on that set-up
is what `make demo` on a fresh clone shows (docs/testing.md)."""

from __future__ import annotations

import re

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from tests.architecture.layers import ROOT

# test peers and heavy tools, each hundreds of MB or a browser: never in the demo's venv
NOT_FOR_THE_DEMO = ("pin", "ray", "playwright", "pylibfranka", "franky-sim", "ur-rtde", "cvxpy", "clarabel",
                    "hypothesis", "pytest", "torch", "cosmic-ray", "import-linter", "foxglove-sdk", "rosbags")


def _recipe(target: str) -> list[str]:
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].strip().lower()


def test_make_demo_installs_only_the_demo_extras():
    installs = [line for line in _recipe("$(DEMO_STAMP)") if "$(PIP)" in line]
    assert installs == ["$(PIP) -e '.[sim,plot]'"], installs
    assert _recipe("demo") == ["$(BIN)/robodyn demo"]  # and then runs it, nothing more installed


def test_the_demo_extras_hold_no_test_peer_or_heavy_tool():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    demo = {_name(r) for r in project["dependencies"]}
    for extra in ("sim", "plot"):
        demo |= {_name(r) for r in project["optional-dependencies"][extra]}
    assert demo.isdisjoint(NOT_FOR_THE_DEMO), sorted(demo & set(NOT_FOR_THE_DEMO))
    assert {"mujoco", "matplotlib", "numba", "pyzmq"} <= demo
    # and they are what the test venv adds: present in the test extra
    test = {_name(r) for r in project["optional-dependencies"]["test"]}
    assert {"pin", "ray", "playwright"} <= test
