"""Real robot data: the Stäubli TX40 set (tests/data/staubli_tx40, Apache-2.0, source in its README)."""

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
    from pathlib import Path

    return Path(__file__).parents[1] / "data" / "staubli_tx40"


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
