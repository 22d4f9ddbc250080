"""`robodyn reproduce ur10e` without the repository's data (none is shipped or needed here) and the
validation formula of the repository's validate_dynamic_params.m on a case computed by hand."""

import numpy as np
import pytest

from robodyn.errors import UserError
from robodyn.reproduce import ur10e_walkthrough as W


def test_relative_error_is_per_joint_norm_ratio_in_percent():
    measured = np.array([[3.0, 1.0], [4.0, -1.0]])
    predicted = np.array([[3.0, 0.0], [1.0, -1.0]])
    # joint 1: ||(0, 3)|| / ||(3, 4)|| = 3/5; joint 2: ||(1, 0)|| / ||(1, -1)|| = 1/sqrt(2)
    np.testing.assert_allclose(W.relative_error_percent(measured, predicted), [60.0, 100.0 / np.sqrt(2.0)])
    np.testing.assert_allclose(W.rmse(measured, predicted), [np.sqrt(4.5), np.sqrt(0.5)])


def test_without_the_data_the_command_says_how_to_get_them_in_one_line(monkeypatch, capsys):
    from robodyn.cli import main

    monkeypatch.delenv(W.DATA_ENV, raising=False)
    assert main(["reproduce", "ur10e"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "git clone https://github.com/shamilmamedov/dynamic_calibration" in err
    assert "--data-dir" in err and W.DATA_ENV in err


def test_a_folder_without_the_logs_names_the_missing_file(tmp_path, monkeypatch, capsys):
    from robodyn.cli import main

    monkeypatch.setenv(W.DATA_ENV, str(tmp_path))
    assert main(["reproduce", "ur10e"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "ur10e.urdf: not found" in err


def test_only_the_ur10e_reproduction_takes_a_data_directory():
    from robodyn import reproduce as R

    with pytest.raises(ValueError, match="data-dir"):
        R.reproduce("icpso", quick=True, data_dir="x")
    with pytest.raises(UserError, match="no such directory"):
        R.reproduce("ur10e", data_dir="/nonexistent/dynamic_calibration")
