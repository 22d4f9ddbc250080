"""The identification result's consumers (intervals, coverage, the HTML report, the URDF and MJCF
exports, and the validate / predict / export commands) read the typed result
(identification/result.py); the result's JSON shape lives in its to/from JSON only.

- A file `robodyn identify --out` writes is written again byte for byte from its typed result.
- Every consumer works on a typed result whose document form is unavailable (to_json_dict and
  from_json_dict made to raise), and gives what it gives for the document.
- A malformed file, or one of a newer version, is refused by every command that reads one in one
  line naming the field.
- validate, predict and the model check of the pipeline take the typed result (and still the
  document), and neither identification (validation, per-recording and held-out metrics, the
  residual model) nor the validate and predict commands turn a result into its document form on
  the way: what they give is the same, number for number and byte for byte.

Data: own-model. The two-link arm of tests/commands/test_identify_methods.py (RNEA plus Stribeck
friction and 0.02 N.m noise, positions only, 200 Hz); this checks the plumbing, not the fit."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.commands.common import strict_json
from robodyn.identification.data import load_dataset
from robodyn.identification.result import IdentificationResult, as_result, read_result
from robodyn.robot.loader import load_model
from tests.commands.test_identify_methods import write_recordings

SHARED = ["--robot", "twolink", "--cutoff", "8"]
# a friction model subtracted before the fit (--friction-model), as `robodyn friction fit` writes one
FRICTION_MODEL = {"kind": "stribeck", "params": {"fc": [0.3, 0.2], "fs": [0.45, 0.3], "vs": [0.05, 0.05],
                                                 "fv": [0.05, 0.04]}}
RUNS = {
    # held-out recording: the interval calibrated on it; the metrics carry held_out
    "wls_holdout": ["--method", "wls", "--friction", "coulomb-viscous", "--holdout", "HELD"],
    # out-of-fold residual model (refits), a subtracted friction model
    "ols_friction_model": ["--method", "ols", "--friction-model", "FM"],
    # sigmoid friction columns with their chosen scales (config.columns from friction_scales)
    "ols_sigmoid": ["--method", "ols", "--friction", "sigmoid"],
    # the method's own section, non-finite std (no covariance)
    "consistent": ["--method", "consistent", "--friction", "coulomb-viscous"],
}


def file_text(doc: dict) -> str:
    """What `robodyn identify --out` writes for a document (commands/identify.py, cmd_identify)."""
    return json.dumps(strict_json(doc), indent=1, allow_nan=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("typed")
    ident, held = write_recordings(folder)
    fm = folder / "friction.json"
    fm.write_text(json.dumps(FRICTION_MODEL))
    out = {}
    for name, options in RUNS.items():
        path = folder / f"{name}.json"
        options = [str(held) if o == "HELD" else str(fm) if o == "FM" else o for o in options]
        assert main(["identify", str(ident), *SHARED, *options, "--out", str(path)]) == 0
        out[name] = path
    return {"ident": ident, "held": held, "results": out}


@pytest.mark.parametrize("name", list(RUNS))
def test_a_result_file_is_written_again_byte_for_byte_from_its_typed_result(runs, name):
    path = runs["results"][name]
    result = read_result(path)
    assert isinstance(result, IdentificationResult)
    assert file_text(result.to_json_dict()) == path.read_text()
    # and the document form hands over the same result
    assert file_text(as_result(json.loads(path.read_text())).to_json_dict()) == path.read_text()


def _poison(monkeypatch):
    """From here on, no result can be turned into or read from its document form."""
    def refuse(*args, **kwargs):
        raise AssertionError("a consumer used the result's document form")

    monkeypatch.setattr(IdentificationResult, "to_json_dict", refuse)
    monkeypatch.setattr(IdentificationResult, "from_json_dict", classmethod(refuse))


def _same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert np.array_equal(a, b, equal_nan=True)
    else:
        assert a == b or (a != a and b != b)


def _inputs(runs, name):
    """(the result's document, its typed result, the model, the held-out and the identification data)."""
    path = runs["results"][name]
    model = load_model("twolink")
    return (json.loads(path.read_text()), read_result(path), model, load_dataset(runs["held"], model=model),
            load_dataset(runs["ident"], model=model))


@pytest.mark.parametrize("name", ["wls_holdout", "ols_friction_model", "ols_sigmoid"])
def test_intervals_coverage_and_report_read_the_typed_result(runs, name, monkeypatch, tmp_path):
    from robodyn.identification import intervals
    from robodyn.identification.coverage import result_warnings
    from robodyn.identification.pipeline import predict
    from robodyn.identification.report import write_html_report

    doc, result, model, raw, ident = _inputs(runs, name)
    sections = [{"title": "fit", "metrics": result.metrics["identification"]}]

    held_out = [raw] if result.residual_model["calibrated_on_held_out"] else []

    def every(r):
        return {"interval": intervals.predict_with_interval(model, r, raw),
                "calibration": intervals.calibration(model, r, [raw]),
                "note": intervals.calibration_note(r),
                "residual_model": intervals.residual_model(model, r, [ident], held_out=held_out),
                "warnings": result_warnings(model, r, [raw]),
                "report": write_html_report(tmp_path / "report.html", r, sections).read_text()}

    from_document = every(doc)
    t, measured, predicted = predict(model, doc, raw)  # the pipeline's own prediction, from the document
    _poison(monkeypatch)
    typed = every(result)
    _same(from_document, typed)
    t2, measured2, predicted2, lower, upper = typed["interval"]
    assert np.array_equal(t2, t) and np.array_equal(measured2, measured)
    np.testing.assert_allclose(predicted2, predicted, rtol=0, atol=1e-9 * np.abs(predicted).max())
    assert np.all(lower < predicted2) and np.all(predicted2 < upper)
    # the residual model of the same data and options is the one identify stored (out of fold: the
    # refits of the typed result's configuration are those identify ran)
    stored, again = doc["residual_model"], json.loads(file_text(typed["residual_model"]))
    assert again.keys() == stored.keys() and again["out_of_fold"] == stored["out_of_fold"]
    for key in ("residual_std", "residual_half_width", "in_sample_residual_std", "lag1_autocorrelation"):
        np.testing.assert_allclose(again[key], stored[key], rtol=1e-9, atol=0)
    assert stored["out_of_fold"] == (name != "wls_holdout")


def test_the_exports_read_the_typed_result(runs, monkeypatch):
    pytest.importorskip("cvxpy")
    mujoco = pytest.importorskip("mujoco")
    from robodyn.identification.mjcf_export import check_mjcf_on_states, export_mjcf, verify_mjcf
    from robodyn.identification.regressor import sample_states
    from robodyn.identification.urdf_export import identification_states, rigid_body_torque, unrepresented_terms

    path = runs["results"]["consistent"]
    doc = json.loads(path.read_text())
    result = read_result(path)
    model = load_model("twolink")
    raw = load_dataset(runs["ident"], model=model)
    q, qd, qdd = sample_states(model, 20, seed=3)

    def every(r):
        text, notes = export_mjcf(model, r)
        states = identification_states(model, r, raw)
        return {"mjcf": text, "notes": notes, "states": states, "verify": verify_mjcf(text, model, r, q, qd, qdd),
                "on_states": check_mjcf_on_states(text, model, r, states),
                "rigid": rigid_body_torque(model, r, states),
                "terms": unrepresented_terms(model, r, states, "urdf")}

    from_document = every(doc)
    _poison(monkeypatch)
    typed = every(result)
    _same(from_document, typed)
    m = mujoco.MjModel.from_xml_string(typed["mjcf"])
    assert m.nv == model.dof
    assert typed["on_states"]["rigid_body"]["max_relative_error"] < 1e-9


def test_summary_lines_of_the_file_are_those_identify_printed(runs, tmp_path, capsys):
    from robodyn.commands.identify import summary_lines

    path = tmp_path / "r.json"
    capsys.readouterr()
    assert main(["identify", str(runs["ident"]), *SHARED, "--method", "wls", "--holdout", str(runs["held"]),
                 "--out", str(path)]) == 0
    printed = capsys.readouterr().out.splitlines()
    lines = summary_lines(read_result(path))
    assert len(lines) > 8
    start = printed.index(lines[0])
    assert printed[start:start + len(lines)] == lines


def _broken(tmp_path, runs, change) -> str:
    doc = json.loads(runs["results"]["consistent"].read_text())
    change(doc)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _drop_values(doc):
    del doc["estimate"]["values"]


def _drop_processing(doc):
    del doc["config"]["processing"]


def _newer(doc):
    doc["version"] = 2


@pytest.mark.parametrize("change,expected", [
    (_drop_values, "field 'values' is missing (in estimate)"),
    (_drop_processing, "field 'processing' is missing (in config)"),
    (_newer, "result version 2 is not supported (expected 1)")])
def test_every_command_refuses_a_malformed_or_newer_result_in_one_line(runs, tmp_path, capsys, change, expected):
    path = _broken(tmp_path, runs, change)
    held = str(runs["held"])
    commands = [["validate", path, held], ["predict", path, held, "--out", str(tmp_path / "p.csv")],
                ["export-urdf", path, "--out", str(tmp_path / "r.urdf")],
                ["export-mjcf", path, "--out", str(tmp_path / "r.xml")]]
    for argv in commands:
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("note:")]
        assert len(err) == 1 and "error:" in err[0] and path in err[0] and expected in err[0], (argv, err)


def test_export_mjcf_verify_prints_when_every_joint_sample_is_saturated(runs, tmp_path, capsys):
    """On the two-link consistent result every random state saturates the dry-friction constraint:
    there is no unsaturated error to print (it is None in --json), and the text says so without it."""
    pytest.importorskip("cvxpy")
    pytest.importorskip("mujoco")
    path = str(runs["results"]["consistent"])
    assert main(["export-mjcf", path, "--out", str(tmp_path / "r.xml"), "--verify", "--json"]) == 0
    w = json.loads(capsys.readouterr().out)["verification"]["with_frictionloss"]
    assert w["saturated_fraction"] == 1.0 and w["unsaturated_max_abs_error"] is None
    assert main(["export-mjcf", path, "--out", str(tmp_path / "r.xml"), "--force", "--verify"]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("MuJoCo mj_inverse vs robodyn on 200")]
    assert len(line) == 1 and "(100% of joint samples)" in line[0] and "where it is not" not in line[0]


def _poison_writing(monkeypatch):
    """From here on, no result can be turned into its document form (reading a file still works)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the result was turned into its document form")

    monkeypatch.setattr(IdentificationResult, "to_json_dict", refuse)


@pytest.mark.parametrize("name", ["wls_holdout", "ols_friction_model", "ols_sigmoid"])
def test_validate_predict_and_the_model_check_read_the_typed_result(runs, name, monkeypatch):
    from robodyn.identification.pipeline import check_result_model, predict, validate

    doc, result, model, raw, ident = _inputs(runs, name)
    # a model of another parameter layout is refused in one line, whichever form the result is in
    other = load_model("panda")
    for form in (result, doc):
        with pytest.raises(ValueError, match=r"^result: identified with robot twolink \(2 joints, \d+ standard "
                                             r"parameters\) but the model given is panda \(7 joints\)") as err:
            validate(other, form, [raw])
        assert "\n" not in str(err.value)
    from_document = {"validate": validate(model, doc, [ident, raw]), "predict": predict(model, doc, raw),
                     "check": check_result_model(model, doc)}
    _poison(monkeypatch)
    typed = {"validate": validate(model, result, [ident, raw]), "predict": predict(model, result, raw),
             "check": check_result_model(model, result)}
    _same(from_document, typed)
    assert typed["validate"]["rmse_sum"] > 0 and typed["predict"][0].shape[0] > 1000


def test_identification_hands_the_typed_result_to_validation_and_the_residual_model(runs, monkeypatch):
    """identification_result validates its fit (on all recordings, on each, on the held-out one)
    and estimates the residual model without turning the result into its document form, and each
    of those is what validate and residual_model give for the result's document."""
    from robodyn.identification.intervals import residual_model
    from robodyn.identification.methods import identification_result
    from robodyn.identification.pipeline import IdentificationConfig, validate
    from robodyn.identification.processing import ProcessingConfig

    model = load_model("twolink")
    ident = load_dataset(runs["ident"], model=model)
    held = load_dataset(runs["held"], model=model)
    config = IdentificationConfig(processing=ProcessingConfig(cutoff_hz=8.0), recording_weights="equal")
    with monkeypatch.context() as patched:
        _poison_writing(patched)
        result = identification_result(model, [ident, held], config, "wls", holdout=[held],
                                       sources=["ident", "held"], holdout_sources=["held"])[0]
    doc = result.to_json_dict()
    doc.pop("residual_model")

    def measured(datasets):
        return {k: v for k, v in validate(model, doc, datasets).items() if k != "filtered"}

    _same(result.metrics["measured"], measured([ident, held]))
    assert [r["recording"] for r in result.metrics["per_recording"]] == ["ident", "held"]
    for row, d in zip(result.metrics["per_recording"], [ident, held]):
        _same({k: v for k, v in row.items() if k not in ("recording", "weight")}, measured([d]))
    _same(result.metrics["held_out"], {"recordings": ["held"], **measured([held])})
    _same(result.residual_model, residual_model(model, doc, [ident, held], held_out=[held]))
    assert result.residual_model["calibrated_on_held_out"] and result.metrics["measured"]["rmse_sum"] > 0


def test_validate_and_predict_commands_hand_the_typed_result_over(runs, tmp_path, capsys, monkeypatch):
    """`robodyn validate` and `robodyn predict` never turn the result into its document form, and
    print and write what the pipeline gives for the document (validate's metrics to the last digit,
    predict's torques as its CSV writes them)."""
    from robodyn.identification.pipeline import predict, validate

    model = load_model("twolink")
    ident, held = load_dataset(runs["ident"], model=model), load_dataset(runs["held"], model=model)
    sigmoid = runs["results"]["ols_sigmoid"]
    plain = json.loads(runs["results"]["wls_holdout"].read_text())
    del plain["residual_model"]  # predict without an interval: the pipeline's prediction alone
    no_interval = tmp_path / "no_interval.json"
    no_interval.write_text(file_text(plain))
    expected = validate(model, json.loads(sigmoid.read_text()), [ident, held])
    t, measured, predicted = predict(model, plain, held)

    _poison_writing(monkeypatch)
    capsys.readouterr()
    assert main(["validate", str(sigmoid), str(runs["ident"]), str(runs["held"]), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    _same({k: printed[k] for k in expected}, json.loads(file_text(expected)))
    assert printed["rmse_sum"] > 0
    for result, interval in ((no_interval, False), (runs["results"]["wls_holdout"], True)):
        csv = tmp_path / f"{result.stem}.csv"
        assert main(["predict", str(result), str(runs["held"]), "--out", str(csv), "--json"]) == 0
        assert (json.loads(capsys.readouterr().out)["interval"] is not None) == interval
        lines = csv.read_text().splitlines()
        header = lines[0].split(",")
        assert header[-1] == ("tau_upper2" if interval else "tau_predicted2") and len(lines) == t.shape[0] + 1
        rows = [line.split(",") for line in lines[1:]]
        for name, values in (("t", t[:, None]), ("tau_measured", measured), ("tau_predicted", predicted)):
            for j in range(values.shape[1]):
                at = header.index(name if name == "t" else f"{name}{j + 1}")
                assert [row[at] for row in rows] == ["%.9g" % x for x in values[:, j]], (name, j)
