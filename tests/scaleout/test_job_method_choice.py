"""A daemon identification job whose config names no method fits as `robodyn identify` without
--method does (weighted least squares or the physically consistent fit, whichever predicts the
held-out last quarter better; the same function, identification.methods.identification_result),
and a job that names a method keeps it. The worker (robodyn.jobs.identification.run_job) runs here
in this process, on a daemon recording written by the recorder's own writer. Data: plant, not the
model: the Panda's inertias perturbed by up to 20 %, Stribeck friction the model's columns lack
(tests/identification/test_torque_sign.plant_torque), torque noise 0.5 N.m, 20 s at 200 Hz. The
motion keeps 30 % of its amplitude for the first 14 s and then widens to all of it, so the held-out
last quarter asks the fit to extrapolate, as a real arm's second run did: there the consistent fit
predicted it far better when this was written (4.86 against 14.38 N.m), so a job fitting weighted
least squares differs parameter for parameter. The tests assert the mechanism (the better-scored
fit is the one used, and said), not which fit wins."""

from __future__ import annotations

import json

import numpy as np
import pytest

from robodyn.cli import main
from robodyn.daemon import protocol as P
from robodyn.identification import selection
from robodyn.jobs.identification import check_config, run_job
from robodyn.recording import RecordingWriter
from robodyn.robot.loader import load_model
from robodyn.robot.urdf import model_to_urdf
from tests.identification.test_gravity_check import motion
from tests.identification.test_torque_sign import plant_torque

RATE = 200.0
EXECUTE = {v: k for k, v in P.PHASE_NAMES.items()}["execute"]


def write_recording(path, model, q, qd, tau):
    """A daemon recording of the execute phase, in the layout the recorder writes (one row of the
    driver's signals per sample, the driver describing them)."""
    desc = {"signals": [{"name": "q", "width": model.dof, "unit": "rad"},
                        {"name": "qd", "width": model.dof, "unit": "rad/s"},
                        {"name": "tau", "width": model.dof, "unit": "N.m"}]}
    values = np.concatenate([q, qd, tau], axis=1)
    meta = {"run_id": path.stem, "driver": desc, "rate_hz": RATE, "trajectory": {"family": "fourier"},
            "robot": model.summary(), "model_urdf": model_to_urdf(model)}
    w = RecordingWriter(path, meta, values.shape[1])
    n = q.shape[0]
    for lo in range(0, n, 1000):
        hi = min(n, lo + 1000)
        seq = np.arange(lo + 1, hi + 1, dtype=np.uint64)
        w.append(seq, np.arange(lo, hi) / RATE, np.arange(lo, hi, dtype=np.int64) * int(1e9 / RATE),
                 np.full(hi - lo, EXECUTE, np.uint8), values[lo:hi])
        w.flush_block()
    w.close({"status": "completed", "expected_samples": n, "recorded_samples": n, "lost_samples": 0})


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    root = tmp_path_factory.mktemp("job-method")
    model = load_model("panda")
    q, qd, qdd = motion(model, seconds=20.0, rate=RATE)
    t = np.arange(q.shape[0]) / RATE
    s = np.clip(t - 14.0, 0.0, 1.0)
    amplitude = 0.3 + 0.7 * (3 * s ** 2 - 2 * s ** 3)  # smooth: 30 % until 14 s, all of it from 15 s
    mid = q.mean(axis=0)
    q = mid + amplitude[:, None] * (q - mid)
    qd = np.gradient(q, t, axis=0)
    qdd = np.gradient(qd, t, axis=0)
    tau = plant_torque(model, q, qd, qdd) + np.random.default_rng(7).normal(0.0, 0.5, q.shape)
    write_recording(root / "plant.mcap", model, q, qd, tau)
    return root


def run(root, name, config):
    job = root / "jobs" / name
    job.mkdir(parents=True)
    (job / "request.json").write_text(json.dumps({"recordings": ["plant"], "holdout": [], "config": config}))
    run_job(str(job), str(root))
    status = json.loads((job / "status.json").read_text())
    assert status["state"] == "completed", status
    # the file identify --out writes: strict JSON, a NaN written as null (never the literal NaN)
    return json.loads((job / "result.json").read_text(), parse_constant=_not_strict_json)


def _not_strict_json(name):
    raise AssertionError(f"the job's result holds {name}: not strict JSON")


def scores(doc):
    """The held-out quarter's score of each method at the chosen cut-off."""
    choice = doc["config"]["processing"]["cutoff_choice"]
    return {c["method"]: c["rmse_sum"] for c in choice["candidates"]
            if c["cutoff_hz"] == choice["cutoff_hz"] and c["rmse_sum"] is not None}


@pytest.fixture(scope="module")
def command_default(recordings):
    """`robodyn identify` without --method on the same recording."""
    out = recordings / "identify.json"
    assert main(["identify", str(recordings / "plant.mcap"), "--robot", "panda", "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_a_job_without_a_method_is_identifys_default_parameter_for_parameter(recordings, command_default):
    pytest.importorskip("cvxpy")
    assert check_config({"friction": "coulomb-viscous"}) is None  # no method: accepted, not read as wls
    doc = run(recordings, "no-method", {})
    assert doc["estimate"]["method"] == command_default["estimate"]["method"]
    assert doc["config"]["processing"]["cutoff_hz"] == command_default["config"]["processing"]["cutoff_hz"]
    assert [p["name"] for p in doc["estimate"]["parameters"]] == \
        [p["name"] for p in command_default["estimate"]["parameters"]]
    # equal to the semidefinite solver's tolerance (the normal equations are summed by several
    # threads, so their last bits and the solver's stopping point move a little from run to run)
    np.testing.assert_allclose(doc["estimate"]["values"], command_default["estimate"]["values"],
                               rtol=1e-5, atol=1e-5)
    # both fits were scored on the held-out quarter at every cut-off, the better one fitted, and the
    # result says which with both scores, in the words identify prints
    both = scores(doc)
    assert set(both) == {"wls", "consistent"} and both == pytest.approx(scores(command_default), rel=1e-5)
    chosen = min(both, key=both.get)
    assert doc["estimate"]["method"] == chosen
    note = next(n for n in doc["estimate"]["notes"] if n.startswith("method: "))
    assert note.startswith(f"method: {chosen} chosen on the last quarter of the data, held out")
    assert all(f"{m} {v:.4g} N.m" in note for m, v in both.items())
    assert note in command_default["estimate"]["notes"]


def test_a_job_that_names_wls_keeps_it(recordings, command_default):
    doc = run(recordings, "wls", {"method": "wls"})
    assert doc["estimate"]["method"] == "wls" and doc["config"]["method"] == "wls"
    candidates = doc["config"]["processing"]["cutoff_choice"]["candidates"]
    assert {c["method"] for c in candidates} == {"wls"}  # only the cut-off was judged
    assert not any(n.startswith("method: ") for n in doc["estimate"]["notes"])
    if command_default["estimate"]["method"] != "wls":  # then the other fit is told apart from this one
        assert np.max(np.abs(np.subtract(doc["estimate"]["values"], command_default["estimate"]["values"]))) > 1e-3


def test_without_the_sdp_extra_a_job_without_a_method_says_the_consistent_fit_was_not_compared(
        recordings, monkeypatch):
    monkeypatch.setattr(selection, "consistent_fit_available", lambda: False)
    doc = run(recordings, "no-sdp", {})
    assert doc["estimate"]["method"] == "wls"
    assert any("physically consistent fit was not compared" in n and "robodyn[sdp]" in n
               for n in doc["estimate"]["notes"])


@pytest.mark.parametrize("given", [None, "wls", "ols"])
def test_submit_identify_sends_a_method_only_when_one_is_named(monkeypatch, given):
    """`robodyn submit-identify` without --method leaves the config's method out, so the job
    chooses as identify does; a named one travels as given."""
    import contextlib

    from robodyn.commands import jobs

    sent = []

    class Client:
        def identify(self, recordings, config, holdout):
            sent.append(config)
            return {"job": "j1", "state": "queued", "ahead": 0}

    monkeypatch.setattr(jobs, "daemon_client", lambda args: contextlib.nullcontext(Client()))
    argv = ["submit-identify", "rec1"] + ([] if given is None else ["--method", given])
    assert main(argv) == 0
    assert check_config(sent[0]) is None  # the daemon takes what the command sends
    assert sent[0].get("method") == given and ("method" in sent[0]) == (given is not None)
