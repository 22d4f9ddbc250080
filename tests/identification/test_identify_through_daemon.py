"""Excitation -> daemon run on the MuJoCo plant -> recording -> identification job -> held-out check.

The plant is MuJoCo (independent of the regressor), with the simulator's default torque noise,
encoder quantization and seed-000 Stribeck friction, so these numbers are not circular.
"""

import json

import pytest

from robodyn.cli import main
from tests.daemon.conftest import DaemonProcess, READY_Q
from tests.identification.conftest import rest_to_rest_fourier

from robodyn.robot.loader import load_model
from robodyn.trajectory import FourierTrajectory


def excitation(seed, periods=3):
    model = load_model("panda")
    t = rest_to_rest_fourier(model, seed, wf=0.7, amplitude=0.06, periods=periods)
    return FourierTrajectory(t.wf, READY_Q, t.a, t.b, periods=t.periods)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = DaemonProcess(tmp_path_factory.mktemp("ident"))
    yield d
    d.stop()


def run(daemon, traj):
    reply = daemon.client.submit_run("panda", traj.to_dict(robot="panda"))
    st = daemon.client.wait_run(reply["run_id"], timeout=240)
    assert st["state"] == "completed", st
    return reply["run_id"]


def test_identification_job_on_daemon_recordings(daemon, tmp_path, capsys):
    ident = run(daemon, excitation(1))
    held = run(daemon, excitation(7, periods=1))
    reply = daemon.client.identify([ident], {"method": "wls", "friction": "coulomb-viscous",
                                             "processing": {"q_cutoff_hz": 20.0, "tau_cutoff_hz": 20.0}},
                                   holdout=[held])
    st = daemon.client.wait_job(reply["job"], timeout=240)
    assert st["state"] == "completed", st
    out = tmp_path / "params.json"
    capsys.readouterr()
    assert main(["pull", reply["job"], "--out", str(out), "--endpoint", daemon.control]) == 0
    shown = capsys.readouterr().out  # the fit and the held-out error, where the user looks
    assert "fit, against the" in shown and f"held out {held}, against the measured torque" in shown
    doc = json.loads(out.read_text())
    held_sum = [ln for ln in shown.splitlines() if ln.startswith("sum")][-1]
    assert float(held_sum.split()[1]) == pytest.approx(doc["metrics"]["holdout"]["rmse_sum"], abs=1e-4)
    assert doc["provenance"]["recordings"] == [ident]
    assert doc["estimate"]["rank"] == doc["base"]["count"]
    # the daemon's result carries what the command line's does: coverage and the residual model
    assert [j["joint"] for j in doc["coverage"]["joints"]] == doc["metrics"]["identification"]["joints"]
    assert len(doc["residual_model"]["residual_std"]) == 7 and min(doc["residual_model"]["residual_std"]) > 0
    holdout = doc["metrics"]["holdout"]
    print("held-out", json.dumps({k: holdout[k] for k in ("rmse", "relative_error_total", "correlation")}))
    assert holdout["relative_error_total"] < 0.1, holdout
    assert min(holdout["correlation"]) > 0.9, holdout
    # a pull is read in the daemon's heavy-read worker (a few hundred kB of JSON: never on the
    # main loop a stop is served from), and its encoded bytes are the plain reply's
    from robodyn.daemon.client import DaemonError

    submitted = daemon.client.status()["control"]["heavy_reads"]["submitted"]
    stored = daemon.data_dir / "jobs" / reply["job"] / "result.json"
    assert daemon.client.pull(reply["job"]) == json.loads(stored.read_text())
    assert daemon.client.status()["control"]["heavy_reads"]["submitted"] == submitted + 1
    stored.write_text(stored.read_text()[:1000])  # damaged behind the daemon's back: said, in one line
    with pytest.raises(DaemonError) as err:
        daemon.client.pull(reply["job"])
    assert err.value.code == "unavailable" and f"could not read the result of job {reply['job']}" in err.value.message
    assert "\n" not in err.value.message
    # the same job from the command line, waited for: the summary is printed without a pull
    assert main(["submit-identify", ident, "--holdout", held, "--cutoff", "20", "--wait",
                 "--endpoint", daemon.control]) == 0
    shown = capsys.readouterr().out
    assert f"held out {held}, against the measured torque" in shown and "robodyn pull" in shown


def test_bad_jobs_are_refused_with_reasons(daemon):
    from robodyn.daemon.client import DaemonError

    with pytest.raises(DaemonError, match="no recording"):
        daemon.client.identify(["does-not-exist"])
    with pytest.raises(DaemonError, match="not a recording id"):
        daemon.client.identify(["../etc/passwd"])
    rec = daemon.client.recordings()[0]["id"] if daemon.client.recordings() else None
    if rec is not None:
        with pytest.raises(DaemonError, match="unknown field"):
            daemon.client.identify([rec], {"method": "ols", "colour": "red"})
    with pytest.raises(DaemonError, match="no job"):
        daemon.client.pull("job-nope")
