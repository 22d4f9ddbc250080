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


def _synthetic_repository(folder, rng):
    """A folder shaped like the repository, every number made here: robodyn's built-in ur10e as the
    URDF, and logs whose currents are a known model's torques divided by the repository's gains."""
    from robodyn.identification.datasets import ur10e as ds
    from robodyn.identification.regressor import ColumnSpec, regressor, standard_parameter_vector
    from robodyn.robot.loader import load_model
    from robodyn.robot.urdf import model_from_urdf, model_to_urdf

    text = model_to_urdf(load_model("ur10e"))
    (folder / "ur10e.urdf").write_text(text)
    model = model_from_urdf(text)
    spec = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))
    theta = standard_parameter_vector(model, spec, friction={"viscous": np.full(6, 3.0), "coulomb": np.full(6, 2.0),
                                                             "offset": np.full(6, 0.1)})
    theta[10::14] = 0.2  # rotor inertias
    for name, seed in ((ds.IDENTIFICATION_LOG, 1), (ds.VALIDATION_LOG, 2)):
        n = ds.TRIMMED_ROWS[name][1] + 20
        t = 3.0 + np.cumsum(rng.choice([0.010, 0.011], size=n))
        f = np.random.default_rng(seed).uniform(0.05, 0.25, size=(3, 6))
        a = np.random.default_rng(seed + 10).uniform(0.2, 0.6, size=(3, 6))
        w = 2 * np.pi * f
        q = (a * np.sin(w * t[:, None, None])).sum(axis=1)
        qd = (a * w * np.cos(w * t[:, None, None])).sum(axis=1)
        qdd = (-a * w * w * np.sin(w * t[:, None, None])).sum(axis=1)
        tau = (regressor(model, q, qd, qdd, spec) @ theta).reshape(q.shape)
        current = tau / ds.DRIVE_GAINS
        zeros = np.zeros_like(q)
        np.savetxt(folder / name, np.column_stack([t, q, qd, current, zeros, zeros]), delimiter=",", fmt="%.9f")


def test_on_logs_made_from_a_known_model_the_pipeline_predicts_their_torques(tmp_path):
    # not evidence about the UR10e (an inverse crime by construction): it checks the wiring, gains
    # applied alike in identification and validation, rows, filtering, the formula
    _synthetic_repository(tmp_path, np.random.default_rng(0))
    rep = W.reproduce_ur10e(quick=True, data_dir=str(tmp_path))
    rel = np.asarray(rep.details["validation"]["relative_error_percent"])
    assert rel.shape == (6,) and np.all(rel < 3.0) and rel.mean() < 1.5, rel  # 1.6 / 0.16 / 0.21 / 0.95 / 2.4 / 0.89
    assert rep.details["base_count"] == 58
    assert rep.details["validation"]["samples"] == 4200 - 700 + 1


def test_drive_gains_of_the_ols_branch_come_back_from_noise_free_runs():
    # an unloaded and a loaded run of a known arm (rotors, friction) and a 2.805 kg payload rigid with
    # the last link; currents = torques / gains. The payload's mass alone fixes the scale
    from robodyn.identification.datasets.ur10e import FilteredLog
    from robodyn.identification.regressor import regressor, standard_parameter_vector
    from robodyn.robot.loader import load_model

    model = load_model("ur10e")
    walk = W.Walkthrough(model, np.ones(6))
    spec = walk.spec
    theta = standard_parameter_vector(model, spec, friction={"viscous": np.full(6, 3.0), "coulomb": np.full(6, 2.0),
                                                             "offset": np.full(6, 0.1)})
    theta[10::14] = 0.2
    payload = np.zeros(84)
    payload[70:80] = [0.01, 0.0, 0.0, 0.012, 0.0, 0.008, 0.02, -0.03, 0.15, 2.805]  # link 6 block, about its frame
    gains = np.array([14.0, 10.5, 8.4, 9.0, 9.5, 10.1])
    runs = []
    for seed, extra in ((1, 0.0), (2, 1.0)):
        t = np.arange(1500) * 0.01
        r = np.random.default_rng(seed)
        w, a = 2 * np.pi * r.uniform(0.1, 0.4, size=(3, 6)), r.uniform(0.3, 0.8, size=(3, 6))
        q = (a * np.sin(w * t[:, None, None])).sum(axis=1)
        qd = (a * w * np.cos(w * t[:, None, None])).sum(axis=1)
        qdd = (-a * w * w * np.sin(w * t[:, None, None])).sum(axis=1)
        tau = (regressor(model, q, qd, qdd, spec) @ (theta + extra * payload)).reshape(q.shape)
        runs.append(FilteredLog(t, q, qd, qdd, tau / gains, None))
    np.testing.assert_allclose(W.drive_gains_ols(walk, *runs, payload_kg=2.805), gains, rtol=1e-6)
    # a payload mass stated 10 % high scales every gain by 1.1: the mass is what fixes the scale
    np.testing.assert_allclose(W.drive_gains_ols(walk, *runs, payload_kg=1.1 * 2.805), 1.1 * gains, rtol=1e-6)
