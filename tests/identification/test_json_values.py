"""One strict-JSON conversion for every document robodyn writes."""

import json

import numpy as np

from robodyn.json_values import document_text, strict_json


def test_non_finite_numbers_become_null_and_arrays_lists():
    doc = {"a": float("nan"), "b": [np.inf, 1.5, np.float32(2.0)], "c": np.array([[1.0, -np.inf]]), "d": "x",
           "e": (np.nan, 3)}
    assert strict_json(doc) == {"a": None, "b": [None, 1.5, 2.0], "c": [[1.0, None]], "d": "x", "e": [None, 3]}
    text = document_text(doc)
    assert json.loads(text) == strict_json(doc) and "NaN" not in text and "Infinity" not in text
    assert text == json.dumps(strict_json(doc), indent=1)
