import json

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.identification.base_params import BaseParameters, base_parameters
from robodyn.identification.regressor import ColumnSpec, regressor, sample_states, standard_parameter_vector
from robodyn.robot.loader import load_model


@pytest.mark.parametrize("name, spec, expected", [
    ("panda", ColumnSpec(), 43),
    ("panda", ColumnSpec(rotor_inertia=True), 48),  # seed 000 Table 3
    ("fr3", ColumnSpec(rotor_inertia=True), 48),
    ("ur5", ColumnSpec(), 36),
    ("ur10e", ColumnSpec(), 36),
    ("ur5e", ColumnSpec(), 36),
])
def test_base_parameter_counts(name, spec, expected):
    assert base_parameters(load_model(name), spec).count == expected


def test_panda_rotor_inertias_of_joints_1_and_2_merge_as_in_seed_000():
    base = base_parameters(load_model("panda"), ColumnSpec(rotor_inertia=True))
    exprs = dict(zip(base.names, base.expressions()))
    assert exprs["ZZ1R"].startswith("ZZ1R = ZZ1 + IA1")
    assert "+ IA2" in exprs["ZZ2R"]
    assert not any(n.startswith("IA1") or n.startswith("IA2") for n in base.names)
    assert all(f"IA{j}" in base.names for j in range(3, 8))


@pytest.mark.parametrize("name", ["panda", "ur5", "scara", "twolink"])
def test_base_regressor_times_base_parameters_equals_full_model(name):
    model = load_model(name)
    spec = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))
    base = base_parameters(model, spec)
    rng = np.random.default_rng(123)
    pi = standard_parameter_vector(model, spec) + rng.normal(size=len(base.standard_names))
    q, qd, qdd = sample_states(model, 300, seed=99)  # states never used to find the base
    W = regressor(model, q, qd, qdd, spec)
    tau = W @ pi
    tau_base = base.base_regressor(W) @ base.base_values(pi)
    assert np.max(np.abs(tau - tau_base)) < 1e-9 * np.max(np.abs(tau))


def test_base_parameters_are_deterministic_and_round_trip():
    model = load_model("ur5")
    a = base_parameters(model, ColumnSpec(rotor_inertia=True))
    b = base_parameters(model, ColumnSpec(rotor_inertia=True))
    assert np.array_equal(a.independent, b.independent) and np.array_equal(a.beta, b.beta)
    c = BaseParameters.from_dict(json.loads(json.dumps(a.to_dict())))
    assert c.expressions() == a.expressions()
    assert np.array_equal(c.projection, a.projection)


def test_scaling_the_regressor_does_not_change_the_base(monkeypatch):
    from robodyn.identification.base_params import base_parameters_from_regressor
    from robodyn.identification.regressor import parameter_names

    model = load_model("panda")
    spec = ColumnSpec(rotor_inertia=True)
    q, qd, qdd = sample_states(model, 100, seed=1)
    W = regressor(model, q, qd, qdd, spec)
    names = parameter_names(model, spec)
    a = base_parameters_from_regressor(W, names, spec)
    b = base_parameters_from_regressor(W * 1e6, names, spec)
    assert np.array_equal(a.independent, b.independent)


def test_cli_model_json_reports_counts_and_expressions(capsys):
    assert main(["model", "panda", "--rotor-inertia", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parameters"]["standard_count"] == 77
    assert out["parameters"]["base_count"] == 48
    assert out["joints"][0]["qd_max"] == pytest.approx(2.175)
    assert any(b["expression"].startswith("ZZ1R = ZZ1 + IA1") for b in out["parameters"]["base"])


def test_cli_model_text_and_models_list(capsys):
    assert main(["models"]) == 0
    listing = capsys.readouterr().out
    for name in ("panda", "fr3", "ur5", "ur5e", "ur10e", "twolink", "scara"):
        assert name in listing
    assert listing.splitlines()[0].split() == ["model", "joints", "frames", "description"]  # a header row
    assert main(["model", "ur10e", "--friction", "viscous,coulomb"]) == 0
    text = capsys.readouterr().out
    assert "base parameters:     48" in text  # 36 + 6 viscous + 6 Coulomb


def test_cli_errors_are_one_line(capsys):
    assert main(["model", "no-such-robot"]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'no-such-robot'" in err and "Traceback" not in err
    assert main(["model", "panda", "--friction", "sticky"]) == 2
    assert "friction: unknown kind" in capsys.readouterr().err
