"""`--joint-names NAME1,NAME2,...` on identify, validate, predict and export: a log whose joints the
model knows under no name of its own (a1..a7 for a Panda) is read by those names, each value on the
model's joint that name is given for, wherever it sits in the log; without the option it is refused
in one line listing the log's names and the model's.

The samples are the independent RNEA of the Panda model along an excitation (an own-model set,
tests/identification/conftest.py): used only to check that each value lands on the right joint."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("rosbags", reason="rosbags reads ROS 2 bags (extras 'ros2' and 'test')")

from robodyn.cli import main
from robodyn.robot.loader import load_model
from tests.identification.conftest import rest_to_rest_fourier, simulate
from tests.identification.test_rosbag import write_bag

LOG_NAMES = [f"a{k}" for k in range(1, 8)]
MAPPING = ",".join(LOG_NAMES)
DRIVER_NAMES = [f"panda_joint{k}" for k in range(1, 8)]


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    """The same samples twice: under names the model does not know (a1..a7) and under Franka's
    driver names (aliases of the built-in model); both list the joints in one shuffled order, so a
    mapping by position would put joint 1's values on another joint."""
    model = load_model("panda")
    n = model.dof
    friction = {"viscous": np.full(n, 0.3), "coulomb": np.full(n, 0.5), "offset": np.zeros(n)}
    data = simulate(model, rest_to_rest_fourier(model, 1, amplitude=0.2, periods=1), rate=100, friction=friction)
    order = np.random.default_rng(7).permutation(n)
    assert not np.array_equal(order, np.arange(n))
    root = tmp_path_factory.mktemp("bags")
    paths = {}
    for key, names in (("unknown", LOG_NAMES), ("driver", DRIVER_NAMES)):
        paths[key] = root / key
        write_bag(paths[key], data.t, [names[k] for k in order], data.q[:, order], data.qd[:, order],
                  data.tau[:, order])
    return data, paths


def _estimate(path) -> list:
    return json.loads(path.read_text())["estimate"]["values"]


def test_a_log_with_unknown_names_identifies_with_joint_names_as_with_the_drivers_names(bags, tmp_path, capsys):
    data, paths = bags
    mapped, driver = tmp_path / "mapped.json", tmp_path / "driver.json"
    assert main(["identify", str(paths["unknown"]), "--robot", "panda", "--joint-names", MAPPING, "--method", "ols",
                 "--out", str(mapped), "--json"]) == 0
    assert main(["identify", str(paths["driver"]), "--robot", "panda", "--method", "ols", "--out", str(driver),
                 "--json"]) == 0
    capsys.readouterr()
    # the same samples on the same joints give the same least-squares estimate, value for value
    assert len(_estimate(mapped)) > 7
    np.testing.assert_array_equal(_estimate(mapped), _estimate(driver))


def test_without_joint_names_the_log_is_refused_in_one_line_naming_both_sides(bags, tmp_path, capsys):
    _, paths = bags
    out = tmp_path / "r.json"
    code = main(["identify", str(paths["unknown"]), "--robot", "panda", "--method", "ols", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and not out.exists()
    assert len(err) == 1, err
    line = err[0]
    assert "names joints [a" in line and "a1" in line and "a7" in line  # the log's side
    assert "the model's joints [joint1, joint2, joint3, joint4, joint5, joint6, joint7] are not among them" in line
    assert "joint1 (joint1, panda_joint1, fer_joint1)" in line  # the model's side, with its aliases
    assert "--joint-names NAME1,NAME2,..." in line


@pytest.mark.parametrize("given, why", [
    ("a1,a2,a3", "expected 7 comma-separated names"),
    ("a1,a1,a3,a4,a5,a6,a7", "name 'a1' given for more than one joint"),
])
def test_a_wrong_mapping_is_refused_in_one_line_naming_the_option(bags, tmp_path, capsys, given, why):
    _, paths = bags
    assert main(["identify", str(paths["unknown"]), "--robot", "panda", "--joint-names", given,
                 "--out", str(tmp_path / "r.json")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--joint-names: " in err[0] and why in err[0], err


def test_validate_predict_and_export_read_the_log_by_the_given_names(bags, tmp_path, capsys):
    data, paths = bags
    result = tmp_path / "fit.json"
    assert main(["identify", str(paths["driver"]), "--robot", "panda", "--method", "ols", "--out", str(result),
                 "--json"]) == 0
    capsys.readouterr()
    bag = str(paths["unknown"])
    # export: the log's values in the model's joint order, by the given names or by the model's aliases
    for log, extra in ((bag, ["--joint-names", MAPPING]), (str(paths["driver"]), [])):
        csv = tmp_path / "log.csv"
        assert main(["export", log, "--format", "csv", "--robot", "panda", *extra, "--out", str(csv), "--force",
                     "--json"]) == 0
        capsys.readouterr()
        table = np.genfromtxt(csv, delimiter=",", names=True)
        q = np.column_stack([table[f"q{k}"] for k in range(1, 8)])
        np.testing.assert_array_equal(q, data.q)
    # validate and predict: the same errors as on the driver-named log (the same values on the same joints)
    errors = {}
    for key, extra in (("unknown", ["--joint-names", MAPPING]), ("driver", [])):
        assert main(["validate", str(result), str(paths[key]), *extra, "--json"]) == 0
        errors[key] = json.loads(capsys.readouterr().out)["rmse"]
        out = tmp_path / f"{key}.csv"
        assert main(["predict", str(result), str(paths[key]), *extra, "--out", str(out)]) == 0
        capsys.readouterr()
    assert errors["unknown"] == errors["driver"]
    assert (tmp_path / "unknown.csv").read_text() == (tmp_path / "driver.csv").read_text()
    # without the mapping, both refuse the log in one line
    for command in (["validate", str(result), bag], ["predict", str(result), bag, "--out", str(tmp_path / "x.csv")]):
        assert main(command) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "are not among them" in err[0], (command, err)


def test_export_joint_names_without_a_model_is_refused_in_one_line(bags, tmp_path, capsys):
    _, paths = bags
    assert main(["export", str(paths["unknown"]), "--format", "csv", "--joint-names", MAPPING,
                 "--out", str(tmp_path / "x.csv")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--joint-names: " in err[0] and "--robot" in err[0], err
