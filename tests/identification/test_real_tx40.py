"""Real robot data: the Stäubli TX40 set (identification/datasets/staubli_tx40, Apache-2.0, source in its README)."""

import numpy as np
import pytest

from robodyn.identification.datasets import tx40
from robodyn.identification.pipeline import IdentificationConfig, identify
from robodyn.robot.urdf import model_from_urdf


@pytest.fixture(scope="module")
def tx40_result(data_dir_module):
    model = model_from_urdf(data_dir_module / "tx40_mdh_modified.urdf")
    cfg = IdentificationConfig(method="wls", friction="coulomb-viscous", processing=tx40.PROCESSING,
                               motor_couplings=(tx40.WRIST_COUPLING,))
    return identify(model, [tx40.load(data_dir_module)], cfg).to_dict()


@pytest.fixture(scope="module")
def data_dir_module():
    from robodyn.identification.datasets import tx40

    return tx40.DATA_DIR


def test_tx40_matches_the_authors_published_fit(tx40_result):
    est = tx40_result["estimate"]
    rmse = float(np.sqrt(np.mean(np.square(tx40_result["metrics"]["identification"]["rmse"]))))
    # published: WLS RMSE 1.118 N.m, relative residual 5.26 %, 2075 equations, 60 base parameters
    assert rmse == pytest.approx(tx40.PUBLISHED["wls_rmse"], rel=0.05)
    assert est["relative_residual"] == pytest.approx(tx40.PUBLISHED["relative_residual"], rel=0.1)
    assert abs(est["rows"] - tx40.PUBLISHED["equations"]) < 0.05 * tx40.PUBLISHED["equations"]
    assert tx40_result["base"]["count"] in (60, 61)


def test_tx40_without_the_wrist_coupling_fits_joint_5_much_worse(data_dir_module, tx40_result):
    model = model_from_urdf(data_dir_module / "tx40_mdh_modified.urdf")
    cfg = IdentificationConfig(method="wls", friction="coulomb-viscous", processing=tx40.PROCESSING)
    uncoupled = identify(model, [tx40.load(data_dir_module)], cfg).to_dict()
    assert uncoupled["metrics"]["identification"]["rmse"][4] > 3 * tx40_result["metrics"]["identification"]["rmse"][4]


def _motor_side_csv(path, data_dir):
    """The raw TX40 log as a user has it: motor encoder angles and motor torques at 5 kHz."""
    import gzip

    def read(name):
        with gzip.open(data_dir / f"{name}.csv.gz", "rt") as fh:
            return np.loadtxt(fh, delimiter=",", skiprows=1)

    qm, taum = read("pos_read_data"), read("curr_data")
    t = np.arange(qm.shape[0]) * tx40.SAMPLE_PERIOD
    header = ",".join(["t"] + [f"qm{j + 1}" for j in range(6)] + [f"taum{j + 1}" for j in range(6)])
    np.savetxt(path, np.column_stack([t, qm, taum]), delimiter=",", header=header, comments="", fmt="%.12g")


def test_the_command_line_identifies_the_coupled_tx40_from_its_motor_log_as_the_api_does(data_dir_module, tmp_path,
                                                                                       capsys):
    """The model file carries the wrist coupling and the controller's joint zeros; the motor-side
    log goes in unconverted, and the result equals the API's on the hand-converted data."""
    import json

    from robodyn.cli import main
    from robodyn.identification.methods import identification_result
    from robodyn.robot.loader import load_model

    csv = tmp_path / "tx40_motor.csv"
    _motor_side_csv(csv, data_dir_module)
    model_file = str(data_dir_module / "tx40.toml")
    out = tmp_path / "tx40.json"
    assert main(["identify", str(csv), "--robot", model_file, "--out", str(out), "--json"]) == 0
    cli = json.loads(out.read_text())
    capsys.readouterr()
    model = model_from_urdf(data_dir_module / "tx40_mdh_modified.urdf")
    # the library call the command makes (its automatic cut-off judged on held-out data)
    config = IdentificationConfig(motor_couplings=(tx40.WRIST_COUPLING,))
    api = identification_result(model, [tx40.load(data_dir_module)], config, config.method)[0].to_json_dict()
    assert api["config"]["processing"]["cutoff_hz"] == cli["config"]["processing"]["cutoff_hz"]
    assert load_model(model_file).motor_couplings == (tx40.WRIST_COUPLING,)
    assert cli["base"]["count"] == api["base"]["count"]
    assert np.allclose(cli["estimate"]["values"], api["estimate"]["values"], rtol=1e-6, atol=1e-9)
    uncoupled = identify(model, [tx40.load(data_dir_module)], IdentificationConfig()).to_dict()
    rmse = lambda doc: doc["metrics"]["identification"]["rmse"][4]  # noqa: E731
    assert rmse(uncoupled) > 2 * rmse(cli)  # the coupling is what makes joint 5 fit
    # predictions come back in the controller's terms, against the measured torque
    assert main(["predict", str(out), str(csv), "--out", str(tmp_path / "pred.csv"), "--json"]) == 0
    pred = json.loads(capsys.readouterr().out)
    assert pred["against"] == "measured torque" and pred["samples"] > 40000
