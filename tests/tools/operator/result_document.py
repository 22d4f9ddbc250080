"""A real identification result document, as the daemon's `pull` returns one: the status page's
report reads it through the typed result, so a stand-in daemon must hand over the real shape.
Data: own-model (the Panda model's own inverse dynamics), which is all a page test needs."""

from __future__ import annotations

import functools

import numpy as np


@functools.lru_cache(maxsize=None)
def _panda_document() -> str:
    import json

    from robodyn.identification.pipeline import IdentificationConfig, identify
    from robodyn.identification.processing import ProcessingConfig
    from robodyn.identification.signals import SampledData
    from robodyn.robot.dynamics import inverse_dynamics
    from robodyn.robot.loader import load_model
    from tests.identification.test_gravity_check import motion

    model = load_model("panda")
    q, qd, qdd = motion(model, seconds=20.0, rate=100.0)
    t = np.arange(q.shape[0]) / 100.0
    tau = inverse_dynamics(model, q, qd, qdd) + np.random.default_rng(0).normal(0, 0.05, q.shape)
    result = identify(model, [SampledData(t, q, tau)],
                      IdentificationConfig(method="ols", processing=ProcessingConfig(cutoff_hz=10.0)))
    return json.dumps(result.to_json_dict())


def panda_result_document(recordings=("r",)) -> dict:
    """A fresh copy of the document, its provenance naming ``recordings``."""
    import json

    doc = json.loads(_panda_document())
    doc["provenance"]["recordings"] = list(recordings)
    return doc
