"""The dynamic_calibration UR10e log reader, on SYNTHETIC logs written here in the repository's column
layout (parseURData.m): no data of that repository (it has no licence) are needed or shipped."""

import shutil
import subprocess

import numpy as np
import pytest

from robodyn.errors import UserError
from robodyn.identification.datasets import ur10e

N = 7


def _columns(width: int = 31) -> np.ndarray:
    """Every column different and recognisable: column c (1-based) of row k holds c + k / 100, time
    excepted (strictly increasing, starting at 5 s)."""
    k = np.arange(N)[:, None]
    data = np.arange(1, width + 1)[None, :] + k / 100.0
    data[:, 0] = 5.0 + 0.0105 * np.arange(N)
    return data


def _write(path, data):
    np.savetxt(path, data, delimiter=",", fmt="%.6f")
    return path


def test_columns_map_as_parseURData_splits_them(tmp_path):
    data = _columns()
    log = ur10e.read_log(_write(tmp_path / "ur-synthetic.csv", data))
    np.testing.assert_allclose(log.t, data[:, 0] - data[0, 0])
    np.testing.assert_allclose(log.q, data[:, 1:7])  # columns 2-7
    np.testing.assert_allclose(log.qd, data[:, 7:13])  # 8-13
    np.testing.assert_allclose(log.current, data[:, 13:19])  # 14-19
    np.testing.assert_allclose(log.target_current, data[:, 19:25])  # 20-25
    np.testing.assert_allclose(log.target_torque, data[:, 25:31])  # 26-31
    # joint 1's current is column 14, joint 6's column 19
    assert log.current[0, 0] == pytest.approx(14.0) and log.current[0, 5] == pytest.approx(19.0)


def test_torque_is_each_joints_current_times_its_own_gain(tmp_path):
    data = _columns()
    d = ur10e.load(_write(tmp_path / "ur-synthetic.csv", data))
    expected = data[:, 13:19] * np.array([10.0000, 10.6956, 8.4566, 9.0029, 9.4800, 10.1232])  # UR10E_parameters.txt
    np.testing.assert_allclose(d.tau, expected)
    np.testing.assert_allclose(d.q, data[:, 1:7])
    np.testing.assert_allclose(d.qd, data[:, 7:13])
    gains = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    np.testing.assert_allclose(ur10e.load(tmp_path / "ur-synthetic.csv", gains=gains).tau, data[:, 13:19] * gains)


def test_rows_are_one_based_and_inclusive_with_time_restarting(tmp_path):
    data = _columns()
    d = ur10e.load(_write(tmp_path / "ur-synthetic.csv", data), rows=(2, 5))
    assert d.count == 4
    np.testing.assert_allclose(d.q, data[1:5, 1:7])
    assert d.t[0] == 0.0 and d.t[-1] == pytest.approx(data[4, 0] - data[1, 0])
    assert ur10e.TRIMMED_ROWS[ur10e.IDENTIFICATION_LOG] == (635, 3510)
    assert ur10e.TRIMMED_ROWS[ur10e.VALIDATION_LOG] == (700, 4200)


def test_early_logs_of_19_columns_have_no_targets(tmp_path):
    log = ur10e.read_log(_write(tmp_path / "early.csv", _columns(19)))
    assert log.target_current is None and log.target_torque is None
    np.testing.assert_allclose(log.current[:, 5], _columns(19)[:, 18])


def test_a_ragged_log_is_refused_with_the_row(tmp_path):
    path = _write(tmp_path / "bad.csv", _columns())
    with open(path, "a") as f:
        f.write("1.0,2.0,3.0\n")
    with pytest.raises(UserError, match=f"row {N + 1} has 3 columns"):
        ur10e.read_log(path)


def test_locate_reads_a_plain_folder_and_a_checkout(tmp_path):
    data = _columns()
    plain = tmp_path / "plain"
    plain.mkdir()
    _write(plain / "ur-20_01_17-p1.csv", data)
    files = ur10e.locate(plain)
    assert files.kind == "folder" and files.logs("validation_data") == ["ur-20_01_17-p1.csv"]
    np.testing.assert_allclose(files.log("ur-20_01_17-p1.csv").q, data[:, 1:7])
    checkout = tmp_path / "checkout"
    (checkout / "dataset_ur10e" / "validation_data").mkdir(parents=True)
    _write(checkout / "dataset_ur10e" / "validation_data" / "ur-20_01_17-p1.csv", data)
    files = ur10e.locate(checkout)
    assert files.kind == "checkout" and files.find("ur-20_01_17-p1.csv") == "dataset_ur10e/validation_data/ur-20_01_17-p1.csv"


def test_a_missing_file_is_one_line_naming_it(tmp_path):
    files = ur10e.locate(tmp_path)
    with pytest.raises(UserError) as exc:
        files.log(ur10e.VALIDATION_LOG)
    assert ur10e.VALIDATION_LOG in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(UserError, match="git clone https://github.com/shamilmamedov/dynamic_calibration"):
        ur10e.locate(tmp_path / "absent")


@pytest.mark.skipif(shutil.which("git") is None,
                    reason="'git' is missing: a clone without a work tree is read through the git program")
def test_locate_reads_a_git_directory_without_a_work_tree(tmp_path):
    data = _columns()
    work = tmp_path / "work"
    (work / "dataset_ur10e" / "identification_data").mkdir(parents=True)
    _write(work / "dataset_ur10e" / "identification_data" / "ur-x.csv", data)
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "x"], check=True)
    files = ur10e.locate(work / ".git")
    assert files.kind == "git" and files.logs("identification_data") == ["ur-x.csv"]
    np.testing.assert_allclose(files.log("ur-x.csv").current, data[:, 13:19])
    with pytest.raises(UserError, match="ur10e.urdf: not found"):
        files.urdf_text()


def test_filtering_differentiates_over_the_measured_irregular_time_step():
    # a 0.4 Hz sine logged with the logs' jitter (8 and 12 ms steps alternating): the acceleration
    # is the central difference of the filtered velocity over t[i+1] - t[i-1], not over a mean step
    dt = np.where(np.arange(1200) % 2 == 0, 0.008, 0.012)
    t = np.concatenate([[0.0], np.cumsum(dt)])
    w = 2 * np.pi * 0.4
    amp = np.arange(1, 7) / 10.0
    q = np.sin(w * t)[:, None] * amp
    qd = w * np.cos(w * t)[:, None] * amp
    current = np.ones((t.size, 6)) * np.arange(1, 7)
    log = ur10e.URLog(t, q, qd, current, None, None, "synthetic")
    f = ur10e.filter_log(log)
    inner = slice(100, -100)
    np.testing.assert_allclose(f.qdd[inner], (-w * w * q)[inner], atol=0.01 * w * w * amp.max())
    np.testing.assert_allclose(f.qd[inner], qd[inner], atol=0.005 * w * amp.max())
    np.testing.assert_allclose(f.current, current, rtol=1e-9)
    assert f.q is log.q and f.raw is log
