"""The strict trajectory schema: an unknown or misspelled field anywhere in a document is
refused naming it (with the closest accepted name), every number is range-checked before any
arithmetic, and every legitimate document of every family still parses to the same samples.

The families come from the parser (``FAMILIES``, ``schema.FAMILY_PARAMS``), so a new family is
covered as soon as it has an example below (a test fails until it has one).

Before: a misspelled ``periods`` was ignored (a 12 s run ran 4 s), a coefficient of 1e308 gave
``internal``, ``q_start`` = 1e300 was refused as "not enough disk space", ``wf`` = 1e-300 as
"(34, 'Numerical result out of range')", and a 10 000-part sequence was accepted.
"""

from __future__ import annotations

import difflib
import json
import math

import numpy as np
import pytest

from robodyn.daemon.admission import trajectory_field
from robodyn.trajectory import (FAMILIES, FourierPolyTrajectory, FourierTrajectory, PeriodicPolyTrajectory,
                                PointToPointTrajectory, SampledTrajectory, SequenceTrajectory, SweepTrajectory,
                                trajectory_from_dict)
from robodyn.trajectory import schema as S

READY_Q = np.array([0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4])


def _sequence() -> SequenceTrajectory:
    sweep = SweepTrajectory(READY_Q + 0.1, 2, 0.0, 0.3, 0.2, 0.4, 0.2, 0.1)
    start = sweep.evaluate(0.0)[0][0]
    return SequenceTrajectory([PointToPointTrajectory(READY_Q, start, 1.5), sweep,
                               PointToPointTrajectory(start, READY_Q, 1.5)])


def _sampled() -> SampledTrajectory:
    t = np.linspace(0, 2, 41)
    q = READY_Q + 0.2 * np.outer(np.sin(np.pi * t / 2) ** 2, np.ones(7))
    return SampledTrajectory(t, q, np.gradient(q, t, axis=0))


def examples() -> dict:
    """One legitimate trajectory per family, built by the constructors (the path every document
    took before the schema existed)."""
    rng = np.random.default_rng(5)
    return {
        "fourier": FourierTrajectory(0.6283, READY_Q, rng.normal(0, .02, (7, 3)), rng.normal(0, .02, (7, 3)), 1.5),
        "fourier_poly": FourierPolyTrajectory(2 * np.pi / 2.5, READY_Q, rng.normal(0, .02, (7, 4)),
                                              rng.normal(0, .02, (7, 4)), 2),
        "periodic_poly": PeriodicPolyTrajectory.from_free(8.0, READY_Q, rng.normal(0, .5, (7, 4)), 2),
        "point_to_point": PointToPointTrajectory(READY_Q, READY_Q + 0.3, 1.7),
        "sweep": SweepTrajectory(READY_Q, 3, -2.5, -2.0, 0.1, 0.3, 0.2, 0.3),
        "sampled": _sampled(),
        "sequence": _sequence(),
    }


def document(family: str) -> dict:
    """The example of ``family`` as a client sends it (through JSON: plain lists and numbers)."""
    return json.loads(json.dumps(examples()[family].to_dict(robot="panda", meta={"designed_by": "test"})))


def refusal(doc) -> str:
    with pytest.raises(ValueError) as e:
        trajectory_from_dict(doc)
    text = str(e.value)
    assert "\n" not in text and len(text) < 400, text  # one line, bounded whatever the client sent
    return text


def test_every_family_has_an_example_and_a_builder():
    from robodyn.trajectory.documents import BUILDERS

    assert set(FAMILIES) == set(S.FAMILY_PARAMS) == set(BUILDERS)
    assert set(examples()) == set(FAMILIES), "add an example of the new family to examples()"


@pytest.mark.parametrize("family", FAMILIES)
def test_a_legitimate_document_of_every_family_parses_to_the_same_samples(family):
    built = examples()[family]
    parsed = trajectory_from_dict(document(family))
    assert type(parsed) is type(built) and parsed.duration == built.duration and parsed.dof == built.dof
    t = np.linspace(0.0, built.duration, 2001)
    for ours, theirs in zip(parsed.evaluate(t), built.evaluate(t)):
        assert np.array_equal(ours, theirs)
    assert parsed.to_dict() == built.to_dict()


def test_the_stored_excitation_files_still_parse():
    from pathlib import Path

    for path in sorted(Path(__file__).parents[1].joinpath("data", "excitation").glob("*.json")):
        doc = json.loads(path.read_text())
        assert trajectory_from_dict(doc).duration == pytest.approx(doc["duration"], rel=1e-12)


def misspelled(name: str, accepted) -> str:
    """A plausible typo of ``name`` (a doubled letter, a dropped one) whose closest accepted name is ``name``."""
    for wrong in (name + name[-1], name[:-1], name + "_", name[1:] + name[0]):
        if wrong and wrong not in accepted and difflib.get_close_matches(wrong, list(accepted), n=1) == [name]:
            return wrong
    raise AssertionError(f"no typo of {name!r} is closest to it among {list(accepted)}")


def param_cases():
    return [(family, name) for family in FAMILIES for name in S.FAMILY_PARAMS[family]]


@pytest.mark.parametrize("family,name", param_cases())
def test_a_misspelled_parameter_is_refused_naming_it_and_the_closest_name(family, name):
    doc = document(family)
    accepted = S.FAMILY_PARAMS[family]
    wrong = misspelled(name, accepted)
    value = doc["params"].pop(name, 1.0)  # an optional field left out by to_dict is misspelled with a number
    doc["params"][wrong] = value
    text = refusal(doc)
    assert text.startswith(f"params.{wrong}: unknown field"), text
    assert f"did you mean {name!r}?" in text and "accepted: " + ", ".join(accepted) in text, text
    assert trajectory_field(doc, text) == f"args.trajectory.params.{wrong}"


@pytest.mark.parametrize("family", FAMILIES)
def test_an_unknown_parameter_next_to_the_right_ones_is_refused(family):
    """The red team's case: every right field present, plus one the parser does not know."""
    doc = document(family)
    doc["params"]["amplitude_scale"] = 0.5
    text = refusal(doc)
    assert text.startswith("params.amplitude_scale: unknown field of family"), text


@pytest.mark.parametrize("family", FAMILIES)
def test_a_misspelled_document_field_is_refused(family):
    doc = document(family)
    doc["parms"] = doc.pop("params")
    text = refusal(doc)
    assert text.startswith("parms: unknown field of a trajectory document; did you mean 'params'?"), text


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "sequence"])
def test_a_misspelled_field_inside_a_part_of_a_sequence_is_refused_naming_the_part(family):
    part = document(family)
    part.pop("robot"), part.pop("meta")
    name = next(iter(part["params"]))
    part["params"][misspelled(name, S.FAMILY_PARAMS[family])] = part["params"].pop(name)
    doc = {"family": "sequence", "params": {"parts": [document("point_to_point"), part]}}
    text = refusal(doc)
    assert text.startswith("params.parts[1].params.") and ": unknown field of family" in text, text
    doc["params"]["parts"][1] = dict(document(family), famly=family)
    assert refusal(doc).startswith("params.parts[1].famly: unknown field of a trajectory document; "
                                   "did you mean 'family'?")


def test_the_red_teams_period_typo_no_longer_runs_a_third_of_the_trajectory():
    doc = document("fourier")
    doc["params"].pop("periods")
    doc["params"]["period"] = 3
    text = refusal(doc)
    assert text.startswith("params.period: unknown field of family 'fourier'; did you mean 'periods'?"), text


# --------------------------------------------------------------------------- numbers

HOSTILE_NUMBERS = [1e308, -1e308, 1e-300, math.nan, math.inf, -math.inf, -0.0]


def _range_text(spec) -> str:
    return f"[{S.number_text(spec.low)}, {S.number_text(spec.high)}]"


def number_cases():
    cases = []
    for family in FAMILIES:
        for name, spec in S.FAMILY_PARAMS[family].items():
            if isinstance(spec, (S.Number, S.Array)):
                for value in HOSTILE_NUMBERS:
                    inside = spec.low <= value <= spec.high and not (spec.low > 0 and value == 0)
                    if not inside:
                        cases.append((family, name, value))
    return cases


@pytest.mark.parametrize("family,name,value", number_cases())
def test_a_number_outside_its_physical_range_is_refused_naming_the_field_and_the_limit(family, name, value):
    doc = document(family)
    spec = S.FAMILY_PARAMS[family][name]
    if isinstance(spec, S.Number):
        doc["params"][name] = value
    else:  # one element of the array
        arr = doc["params"].get(name) or document("sampled")["params"]["qd"]
        row = arr if spec.ndim == 1 else arr[0]
        row[0] = value
        doc["params"][name] = arr
    text = refusal(doc)
    assert text.startswith(f"params.{name}: "), text
    assert "outside" in text, text
    if math.isfinite(spec.high):
        assert _range_text(spec) in text, text
    assert trajectory_field(doc, text) == f"args.trajectory.params.{name}"


@pytest.mark.parametrize("family,name,value,expected", [
    # the red team's documents
    ("fourier", "a", 1e308, "params.a: 1e+308 at [0][0] is outside [-1000, 1000] rad/s"),
    ("point_to_point", "q_start", 1e300, "params.q_start: 1e+300 at [0] is outside [-100, 100] rad"),
    ("fourier", "wf", 1e-300, "params.wf: 1e-300 is outside [0.0001, 100] rad/s"),
    ("fourier_poly", "wf", -0.0, "params.wf: -0 is outside [0.0001, 100] rad/s"),
    ("periodic_poly", "period", math.nan, "params.period: nan is outside [0.05, 100000] s"),
    ("point_to_point", "duration", math.inf, "params.duration: inf is outside [0.001, 100000] s"),
    ("fourier_poly", "periods", 2.5, "params.periods: 2.5 is not a whole number of periods"),
    ("fourier_poly", "periods", 10 ** 400, "params.periods: a number beyond any float is outside [1, 100000]"),
    ("sweep", "joint", 7, "params.joint: 7 is outside [0, 6] (a joint index of the 7 joints)"),
    ("sweep", "joint", 1.0, "params.joint: expected an integer joint index in [0, 6], got float"),
    ("fourier", "wf", "0.6", "params.wf: expected a number in [0.0001, 100] rad/s, got str"),
])
def test_the_refusal_is_one_line_naming_the_field_and_the_limit(family, name, value, expected):
    doc = document(family)
    if name in ("a", "q_start"):
        row = doc["params"][name] if name == "q_start" else doc["params"][name][0]
        row[0] = value
    else:
        doc["params"][name] = value
    assert refusal(doc) == expected


def test_polynomial_terms_are_bounded_by_their_contribution_over_the_period():
    doc = document("periodic_poly")
    doc["params"]["coefficients"][3][5] = 1e308
    text = refusal(doc)
    assert text.startswith("params.coefficients: term 5 of joint 3 contributes") and "[0, 1e+09] rad" in text, text
    doc = document("periodic_poly")
    doc["params"]["coefficients"][0][0] = 1e300
    assert refusal(doc).startswith("params.coefficients: a_0 = 1e+300 at [0][0] (the start position) is outside")
    doc = document("periodic_poly")
    doc["params"]["coefficients"] = [row + [0.0] * 40 for row in doc["params"]["coefficients"]]
    assert refusal(doc) == "params.coefficients: 52 columns, outside [9, 41]"


def test_a_duration_too_long_is_refused_before_anything_uses_it():
    doc = document("fourier")
    doc.pop("duration")
    doc["params"].update(wf=1e-4, periods=1e5)  # each inside its range, together 6.3e9 s
    assert refusal(doc) == "duration: the parameters describe 6.28319e+09 s, outside (0, 100000] s"
    doc = document("sweep")
    doc.pop("duration")
    doc["params"].update(low=-90.0, high=90.0, speed=1e-4)
    assert refusal(doc).startswith("duration: the parameters describe 3.6e+06 s")


def test_a_stated_duration_must_be_the_one_the_parameters_describe():
    doc = document("fourier")
    doc["duration"] = 3 * doc["duration"]
    assert refusal(doc).startswith("duration: the document says")
    doc["duration"] = 1e308
    assert refusal(doc) == "duration: 1e+308 is outside [0, 100000] s"


def test_sequences_and_samples_are_bounded():
    part = document("point_to_point")
    part["params"]["q_end"] = part["params"]["q_start"]
    part.pop("duration")
    doc = {"family": "sequence", "params": {"parts": [part] * 10_000}}
    assert refusal(doc) == "params.parts: 10000 parts is outside [1, 1000]"
    doc["params"]["parts"] = [part] * 1000
    assert len(trajectory_from_dict(doc).parts) == 1000
    assert refusal({"family": "sequence", "params": {"parts": [doc]}}) == \
        "params.parts[0].family: a part of a sequence cannot itself be a sequence"
    assert refusal({"family": "sequence", "params": {"parts": [part, 5]}}) == \
        "params.parts[1]: expected a trajectory document (a JSON object), got int"
    doc = document("sampled")
    doc["params"]["t"][1] = 1e-300  # after t[0] = 0
    assert refusal(doc) == "params.t: samples 0 and 1 are 1e-300 s apart, less than 1e-06 s"
    n = S.MAX_SAMPLES + 1
    assert refusal({"family": "sampled", "params": {"t": np.arange(n) * 1e-3, "q": np.zeros((n, 1))}}) == \
        f"params.t: {n} values, outside [6, {S.MAX_SAMPLES}]"


def test_client_text_in_a_refusal_is_one_short_line():
    doc = document("fourier")
    doc["params"]["x\n2026-12-07 event=armed" + "y" * 10_000] = 1
    text = refusal(doc)
    assert text.startswith("params['x\\n2026-12-07 event=armed") and "unknown field" in text, text
    assert trajectory_field(doc, text) == "args.trajectory"
    doc = document("fourier")
    doc["family"] = "fourier\x1b[2J" * 1000
    assert "\x1b" not in refusal(doc)


def test_parsing_never_computes_with_an_unchecked_number(monkeypatch):
    """The constructors (where the arithmetic is) never see a value the schema has not passed."""
    import robodyn.trajectory.documents as D

    called = []
    monkeypatch.setitem(D.BUILDERS, "fourier", lambda p: called.append(p))
    for value in (1e308, 1e-300, math.nan, -math.inf):
        doc = document("fourier")
        doc["params"]["wf"] = value
        refusal(doc)
    assert called == []
