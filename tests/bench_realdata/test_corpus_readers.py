"""bench/realdata corpus tooling on tiny synthetic files written here: the readers' column mapping,
the plain script, the time split and fetch.py's hash check. No fetched data is needed."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "realdata"
sys.path.insert(0, str(BENCH))

import corpus  # noqa: E402
import fetch  # noqa: E402
import loro  # noqa: E402
import readers  # noqa: E402

RATE = 200.0


def _trajectory(model, seconds: float = 10.0):
    from robodyn.robot.dynamics import inverse_dynamics

    t = np.arange(int(seconds * RATE)) / RATE
    w = 2 * np.pi * np.array([[0.4], [0.9], [1.7]])
    amp = np.array([[0.8], [0.3], [0.15]])
    n = model.dof
    q = sum(a * np.sin(f * t[:, None] + 0.7 * k + np.arange(n)) for k, (a, f) in enumerate(zip(amp, w)))
    qd = sum(a * f * np.cos(f * t[:, None] + 0.7 * k + np.arange(n)) for k, (a, f) in enumerate(zip(amp, w)))
    qdd = sum(-a * f * f * np.sin(f * t[:, None] + 0.7 * k + np.arange(n)) for k, (a, f) in enumerate(zip(amp, w)))
    return t, q, qd, inverse_dynamics(model, q, qd, qdd)


@pytest.fixture(scope="module")
def model():
    from robodyn.robot.loader import load_model

    return load_model("twolink")


def _write(path: Path, header: list[str] | None, columns: np.ndarray) -> None:
    lines = [",".join(header)] if header else []
    lines += [",".join(f"{x:.12g}" for x in row) for row in columns]
    path.write_text("\n".join(lines) + "\n")


def test_csv_reader_maps_columns_across_files_with_scales(tmp_path, model):
    t, q, qd, tau = _trajectory(model, 2.0)
    n = model.dof
    # positions in degrees beside an unused column, torque as current (A) in a second file
    _write(tmp_path / "pos.csv", ["stamp", "junk"] + [f"deg{j}" for j in range(n)],
           np.column_stack([t * 1000, np.zeros_like(t), np.degrees(q)]))
    _write(tmp_path / "cur.csv", [f"i{j}" for j in range(n)], tau / 2.5)
    source = {"files": {"p": "pos.csv", "c": "cur.csv"}, "time": {"file": "p", "column": "stamp", "scale": 0.001},
              "q": {"file": "p", "columns": [f"deg{j}" for j in range(n)], "scale": np.pi / 180},
              "tau": {"file": "c", "columns": [f"i{j}" for j in range(n)], "scale": [2.5] * n}}
    d = readers.read_csv_columns(tmp_path, source)
    assert d.count == t.size and d.dof == n and d.qd is None
    np.testing.assert_allclose(d.t, t, atol=1e-9)
    np.testing.assert_allclose(d.q, q, atol=1e-9)
    np.testing.assert_allclose(d.tau, tau, rtol=1e-9, atol=1e-9)


def test_csv_reader_without_header_or_time_uses_indices_and_rate(tmp_path, model):
    t, q, qd, tau = _trajectory(model, 1.0)
    _write(tmp_path / "x.csv", None, np.column_stack([q, qd]))
    _write(tmp_path / "u.csv", None, tau[:-1])  # inputs held over each interval: one row fewer
    n = model.dof
    source = {"files": {"x": "x.csv", "u": "u.csv"}, "header": False, "rows": "shortest", "rate_hz": RATE,
              "q": {"file": "x", "columns": list(range(n))}, "qd": {"file": "x", "columns": list(range(n, 2 * n))},
              "tau": {"file": "u", "columns": list(range(n))}}
    d = readers.read_csv_columns(tmp_path, source)
    assert d.count == t.size - 1
    np.testing.assert_allclose(d.qd, qd[:-1], atol=1e-9)
    np.testing.assert_allclose(np.diff(d.t), 1 / RATE)


def test_csv_reader_names_the_missing_column(tmp_path, model):
    _write(tmp_path / "a.csv", ["t", "q1"], np.zeros((3, 2)))
    source = {"files": {"a": "a.csv"}, "time": {"file": "a", "column": "t"},
              "q": {"file": "a", "columns": ["q1"]}, "tau": {"file": "a", "columns": ["tau1"]}}
    with pytest.raises(ValueError, match=r"no column 'tau1'"):
        readers.read_csv_columns(tmp_path, source)


def test_mat_reader_transposes_joint_major_fields(tmp_path, model):
    import scipy.io

    t, q, qd, tau = _trajectory(model, 1.0)
    scipy.io.savemat(tmp_path / "r.mat", {"rec": {"time": t, "pos_deg": np.degrees(q).T, "vel": qd.T, "trq": tau.T}})
    source = {"file": "r.mat", "struct": "rec", "time": "time", "layout": "joints_by_samples",
              "q": {"field": "pos_deg", "scale": np.pi / 180}, "qd": {"field": "vel"},
              "tau": {"field": "trq", "scale": [10.0] * model.dof}}
    d = readers.read_mat_struct(tmp_path, source)
    np.testing.assert_allclose(d.q, q, atol=1e-9)
    np.testing.assert_allclose(d.tau, 10 * tau, rtol=1e-9, atol=1e-9)


def test_plain_script_recovers_a_noiseless_model_on_the_held_out_part(model):
    from robodyn.identification.signals import SampledData

    t, q, qd, tau = _trajectory(model)
    fit, held = loro.split_run(SampledData(t, q, tau, qd))
    assert fit.count + held.count == t.size and held.t[0] > fit.t[-1]
    assert abs(fit.count / t.size - corpus.TIME_SPLIT_FIT) < 0.01
    good = loro.plain_script(model, fit, held)
    assert len(good["rmse"]) == model.dof
    assert good["rmse_sum"] < 0.03 * float(np.sum(np.std(held.tau, axis=0)))
    # the score is taken against the measured torque: noise added to the held-out torque shows in it
    noisy = SampledData(held.t, held.q, held.tau + 0.5, held.qd)
    assert loro.plain_script(model, fit, noisy)["rmse_sum"] > 0.9 * model.dof * 0.5


def _tiny_arm(path: str, data: bytes, commit: str) -> corpus.Arm:
    return corpus.Arm(
        name="tiny", maker="test", model="test", dof=1, repository="test/tiny", commit=commit, licence="CC0-1.0",
        committable=True, rate_hz=1.0, torque_source="test", conventions="", gravity="",
        files=(corpus.SourceFile(path, len(data), hashlib.sha256(data).hexdigest()),), runs=(), splits=(),
        robot_file=None)


def test_fetch_copies_the_pinned_blob_and_refuses_a_changed_one(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    run = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True,  # noqa: E731
                                    env=env, timeout=30).stdout.decode().strip()
    run("init", "-q")
    (repo / "data").mkdir()
    (repo / "data" / "log.csv").write_bytes(b"t,q1,tau1\n0,0,0\n")
    run("add", "data/log.csv")
    run("commit", "-q", "-m", "log")
    commit = run("rev-parse", "HEAD")
    cache = tmp_path / "cache"
    arm = _tiny_arm("data/log.csv", b"t,q1,tau1\n0,0,0\n", commit)
    assert fetch.fetch_arm(arm, repo, cache) == []
    assert (cache / "tiny" / "data" / "log.csv").read_bytes() == b"t,q1,tau1\n0,0,0\n"
    assert fetch.cached(cache, arm) == []
    assert fetch.status_line(arm, []).startswith("tiny: found")
    changed = _tiny_arm("data/log.csv", b"t,q1,tau1\n0,0,1\n", commit)
    problems = fetch.fetch_arm(changed, repo, tmp_path / "other")
    assert len(problems) == 1 and "sha256" in problems[0]
    assert not (tmp_path / "other" / "tiny" / "data" / "log.csv").exists()
    absent = _tiny_arm("data/none.csv", b"", commit)
    assert "data/none.csv" in fetch.fetch_arm(absent, repo, cache)[0]


def test_corpus_declarations_are_consistent():
    for arm in corpus.ARMS:
        paths = {f.path for f in arm.files}
        assert arm.robot_file is None or arm.robot_file in paths, arm.name
        for run in arm.runs:
            assert run.reader in readers.READERS, (arm.name, run.name)
            src = run.source
            used = set(src["files"].values()) if "files" in src else {src["file"]}
            assert used <= paths, (arm.name, run.name, used - paths)
        names = {r.name for r in arm.runs}
        for split in arm.splits:
            assert split.fit in names and (split.held is None or split.held in names), (arm.name, split.label)
        assert arm.committable == any(k in arm.licence.split()[0] for k in ("MIT", "Apache-2.0", "BSD", "CC0-1.0"))
