"""Values as strict JSON holds them: one conversion for every document robodyn writes (result
files, command output, job results), so that a NaN is the same null wherever it is written."""

from __future__ import annotations

import json
import math

import numpy as np


def strict_json(o):
    """``o`` with arrays as lists and NaN or infinities as None: what strict JSON can hold."""
    if isinstance(o, dict):
        return {k: strict_json(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [strict_json(v) for v in o]
    if isinstance(o, np.ndarray):
        return strict_json(o.tolist())
    if isinstance(o, (float, np.floating)):
        return float(o) if math.isfinite(o) else None
    return o


def document_text(doc) -> str:
    """A document as robodyn writes it to a file: strict JSON, one space of indent."""
    return json.dumps(strict_json(doc), indent=1, allow_nan=False)
