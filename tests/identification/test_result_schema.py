"""The identification result's schema: the dataclass's fields are fixed here (a change must be
deliberate: a new field and, when the file's layout changes, a new version), a real result
survives JSON and back unchanged, and the result files written before the dataclass (in
tests/identification/data, see its README) are still read, with or without their version."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from robodyn.commands.common import strict_json
from robodyn.identification.pipeline import IdentificationConfig, load_result
from robodyn.identification.processing import ProcessingConfig
from robodyn.identification.result import (RESULT_VERSION, IdentificationResult, field_names, read_result)

DATA = Path(__file__).parent / "data"
OLD_FILES = ("result_v1_twolink_ols_holdout.json", "result_v1_twolink_wso.json")

FIELDS = ["robot", "base", "estimate", "friction_model", "config", "metrics", "steps", "provenance", "selection",
          "sections", "coverage", "residual_model", "robot_ref", "version"]
JSON_KEYS = ["format", "version", "robot", "base", "estimate", "friction_model", "friction_columns", "config",
             "metrics", "processing_steps", "provenance", "coverage", "residual_model", "robot_ref"]


def as_written(doc: dict) -> dict:
    """The document as `robodyn identify --out` writes it (non-finite numbers as null)."""
    return json.loads(json.dumps(strict_json(doc), allow_nan=False))


def test_the_field_set_is_the_committed_one():
    assert field_names() == FIELDS
    assert RESULT_VERSION == 1


@pytest.mark.parametrize("name", OLD_FILES)
def test_a_result_file_from_before_the_dataclass_round_trips_unchanged(name):
    written = json.loads((DATA / name).read_text())
    result = read_result(DATA / name)
    assert isinstance(result, IdentificationResult) and result.version == 1
    assert np.array_equal(result.values, written["estimate"]["values"])
    again = as_written(result.to_json_dict())
    assert list(again) == list(written) and again == written


def test_the_json_keys_of_a_result_with_held_out_recordings():
    written = json.loads((DATA / OLD_FILES[0]).read_text())
    assert list(written) == JSON_KEYS
    assert list(written["metrics"]) == ["identification", "measured", "held_out"]


@pytest.mark.parametrize("name", OLD_FILES)
def test_a_result_file_without_a_version_is_read_as_version_1(name, tmp_path):
    doc = json.loads((DATA / name).read_text())
    del doc["version"]
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    assert read_result(path).version == 1
    assert load_result(path)["estimate"]["values"] == doc["estimate"]["values"]


def test_a_newer_version_or_another_format_is_refused_in_one_line(tmp_path):
    doc = json.loads((DATA / OLD_FILES[0]).read_text())
    path = tmp_path / "r.json"
    path.write_text(json.dumps({**doc, "version": 2}))
    with pytest.raises(ValueError, match=r"result version 2 is not supported \(expected 1\)") as caught:
        read_result(path)
    assert "\n" not in str(caught.value)
    path.write_text(json.dumps({**doc, "format": "robodyn.stepwise"}))
    with pytest.raises(ValueError, match="format is 'robodyn.stepwise'"):
        load_result(path)
    bad = {**doc, "estimate": {k: v for k, v in doc["estimate"].items() if k != "values"}}
    with pytest.raises(ValueError, match="field 'values' is missing"):
        IdentificationResult.from_json_dict(bad)


def test_a_fresh_identification_round_trips_through_json(tmp_path):
    from robodyn.identification.data import load_dataset
    from robodyn.identification.methods import identification_result
    from robodyn.robot.loader import load_model
    from tests.commands.test_identify_methods import write_recordings

    ident, held = write_recordings(tmp_path)
    model = load_model("twolink")
    config = IdentificationConfig(method="wls", processing=ProcessingConfig(cutoff_hz=8.0))
    result, _, _ = identification_result(model, [load_dataset(ident)], config, "wls", holdout=[load_dataset(held)],
                                         holdout_sources=[str(held)], sources=[str(ident)])
    result.robot_ref = "twolink"
    assert result.coverage is not None and result.residual_model is not None
    assert set(result.metrics) == {"identification", "measured", "held_out"}
    doc = as_written(result.to_json_dict())
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    back = read_result(path)
    assert np.array_equal(back.values, result.values)
    assert np.array_equal(back.estimate.covariance, result.estimate.covariance)
    assert back.config.to_dict() == result.config.to_dict()
    assert as_written(back.to_json_dict()) == doc
