"""The default excitation design excites what the default identification fits: the same regressor
columns (rotor inertia, the coulomb-viscous columns, shared motors), the same option spellings
(--rotor-inertia / --no-rotor-inertia, --friction LAW), and a fundamental frequency whose top
harmonic can reach the built-in arms' acceleration limits within their joint ranges."""

import json
import math

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.identification.base_params import base_parameters
from robodyn.identification.config import IdentificationConfig
from robodyn.identification.excitation.designer import DEFAULT_WF, DesignRequest, with_columns
from robodyn.identification.regressor import ColumnSpec
from robodyn.robot.loader import load_model

VENDOR_MODELS = ("panda", "fr3", "ur5", "ur5e", "ur10e")


@pytest.mark.parametrize("robot", ["panda", "ur5", "scara"])
def test_a_default_design_request_has_the_identifications_columns(robot):
    model = load_model(robot)
    fitted = IdentificationConfig(motor_couplings=model.motor_couplings).spec
    designed = with_columns(model, DesignRequest()).columns
    assert designed == fitted
    assert designed.rotor_inertia and designed.friction == ("viscous", "coulomb", "offset")
    assert base_parameters(model, designed).count == base_parameters(model, fitted).count
    # a request that names its columns keeps them
    own = ColumnSpec(friction=("viscous",))
    assert with_columns(model, DesignRequest(columns=own)).columns is own


def test_a_shared_motor_is_in_the_designed_columns_as_in_the_identified_ones():
    model = load_model("identification/datasets/staubli_tx40/tx40.toml")
    assert model.motor_couplings  # the TX40's motor 6 turns with joints 5 and 6
    designed = with_columns(model, DesignRequest()).columns
    assert designed.motor_couplings == tuple(tuple(c) for c in model.motor_couplings)


def test_the_default_frequency_lets_the_top_harmonic_reach_the_acceleration_limits():
    """The argument for DEFAULT_WF (designer.py): a harmonic of frequency w sweeping a joint's whole
    range dq peaks at dq / 2 * w^2; at 5 * DEFAULT_WF that reaches at least 90 % of qdd_max on
    every joint of the vendors' built-in models, at the old 0.1 rad/s at most 26 %."""
    assert DEFAULT_WF == pytest.approx(2 * math.pi / 10)
    assert DesignRequest().wf == DEFAULT_WF
    for name in VENDOR_MODELS:
        m = load_model(name)
        half_range = np.minimum(m.q_max - m.q_min, 2 * np.pi) / 2
        reach = lambda wf: half_range * (5 * wf) ** 2 / m.qdd_max  # noqa: E731
        assert np.all(np.minimum(reach(DEFAULT_WF), 1.0) >= 0.9), (name, reach(DEFAULT_WF))
        assert np.all(reach(0.1) < 0.27), (name, reach(0.1))


def test_the_design_command_defaults_to_the_identifications_columns_and_frequency(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["excitation", "design", "--robot", "twolink", "--harmonics", "2", "--iterations", "3",
                 "--quiet", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    request = doc["meta"]["request"] if "meta" in doc else doc["request"]
    assert request["columns"] == {"rotor_inertia": True, "friction": ["viscous", "coulomb", "offset"]}
    assert request["wf"] == pytest.approx(DEFAULT_WF)
    assert main(["excitation", "design", "--robot", "twolink", "--harmonics", "2", "--iterations", "3",
                 "--no-rotor-inertia", "--friction", "none", "--quiet", "--out", str(out)]) == 0
    request = (lambda d: d["meta"]["request"] if "meta" in d else d["request"])(json.loads(out.read_text()))
    assert request["columns"] == {"rotor_inertia": False, "friction": []}
    capsys.readouterr()


def test_old_friction_spelling_is_taken_with_a_note_and_fitted_shapes_are_refused(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["excitation", "design", "--robot", "twolink", "--harmonics", "2", "--iterations", "3",
                 "--friction", "viscous,coulomb", "--quiet", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "--friction viscous,coulomb: deprecated, use --friction LAW" in err
    request = (lambda d: d["meta"]["request"] if "meta" in d else d["request"])(json.loads(out.read_text()))
    assert request["columns"]["friction"] == ["viscous", "coulomb"]
    assert main(["excitation", "design", "--robot", "twolink", "--friction", "stribeck", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.count("--friction: stribeck has no fixed regressor columns") == 1
