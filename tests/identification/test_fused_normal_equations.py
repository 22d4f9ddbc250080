"""The fused, multi-threaded normal equations (streaming.RegressorChunks, regressor.gram_blocks)
against the row-by-row accumulation, against dense numpy, and against the results the pipeline
gave before they were fused (tests/data/identification_reference, from commit 6f94e21)."""

import json
from pathlib import Path

import numpy as np
import pytest

from robodyn.identification.base_params import base_parameters
from robodyn.identification.datasets import tx40
from robodyn.identification.estimators import NormalEquations
from robodyn.identification.pipeline import IdentificationConfig, identify
from robodyn.identification.regressor import ColumnSpec, gram_blocks, regressor
from robodyn.identification.signals import SampledData
from robodyn.identification.processing import ProcessingConfig, process_windows
from robodyn.identification.streaming import PART_SAMPLES, RegressorChunks
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.loader import load_model
from robodyn.robot.urdf import model_from_urdf

from .conftest import rest_to_rest_fourier

DATA = Path(__file__).parents[1] / "data"
ALL = ("viscous", "coulomb", "offset")


def reference_case(name):
    """The simulated cases of tests/data/identification_reference/pre_fused.json."""
    model = load_model("panda" if name == "panda" else "ur5")
    model = model.__class__(**{**model.__dict__, "rotor_inertia": np.full(model.dof, 0.1)})
    n = model.dof
    friction = {"viscous": np.linspace(0.2, 0.5, n), "coulomb": np.linspace(0.3, 0.8, n), "offset": np.full(n, 0.05)}
    t, q, qd, qdd, _ = rest_to_rest_fourier(model, 11, periods=3).sample(500)
    tau = inverse_dynamics(model, q, qd, qdd, rotor_inertia=model.rotor_inertia, friction=friction)
    tau = tau + np.random.default_rng(5).normal(size=tau.shape) * 0.05
    tau[::997] += 3.0  # a few outliers for IRLS
    couplings = ((0.0, 0.0, 0.0, 1.0, 1.0, 0.0),) if name == "ur5_coupled" else ()
    return model, SampledData(t, q, tau, qd, qdd), couplings


@pytest.fixture(scope="module")
def reference():
    return json.loads((DATA / "identification_reference" / "pre_fused.json").read_text())["cases"]


def relative(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("case", ["panda", "ur5_coupled"])
def test_identification_equals_the_results_before_fusion(case, reference):
    model, data, couplings = reference_case(case)
    for method in ("ols", "wls", "irls"):
        cfg = IdentificationConfig(method=method, friction="coulomb-viscous", rotor_inertia=True, chunk_samples=4000,
                                   motor_couplings=couplings)
        got = identify(model, [data], cfg, preprocessed=True).to_dict()
        ref = reference[f"{case}/{method}"]
        # IRLS reaches its fixed point by another path since the reference was made (Anderson
        # acceleration, stopping on the fitted torque's change): the same fixed point within its
        # tolerance, in other iterations; the direct methods must agree to rounding
        values_tol, fit_tol, cond_tol = (1e-6, 1e-8, 1e-6) if method == "irls" else (1e-9, 1e-9, 5e-9)
        assert got["estimate"]["rows"] == ref["rows"]
        assert relative(got["estimate"]["values"], ref["values"]) < values_tol, method
        assert relative(got["metrics"]["identification"]["rmse"], ref["rmse"]) < fit_tol, method
        assert relative(got["estimate"]["sigma_per_joint"], ref["sigma_per_joint"]) < fit_tol, method
        assert abs(got["estimate"]["cond"] / ref["cond"] - 1.0) < cond_tol, method
        if method != "irls":
            assert got["estimate"]["iterations"] == ref["iterations"]


def test_real_tx40_identification_equals_the_result_before_fusion(reference):
    model = model_from_urdf(tx40.DATA_DIR / "tx40_mdh_modified.urdf")
    cfg = IdentificationConfig(method="wls", friction="coulomb-viscous", processing=tx40.PROCESSING,
                               motor_couplings=(tx40.WRIST_COUPLING,))
    got = identify(model, [tx40.load(tx40.DATA_DIR)], cfg).to_dict()
    ref = reference["tx40/wls"]
    assert got["estimate"]["rows"] == ref["rows"]
    assert relative(got["estimate"]["values"], ref["values"]) < 1e-9
    assert relative(got["metrics"]["identification"]["rmse"], ref["rmse"]) < 1e-9


@pytest.mark.parametrize("name, couplings", [("panda", ()), ("ur5", ((0.0, 0.0, 0.0, 1.0, 1.0, 0.0),)), ("scara", ())])
def test_gram_blocks_equal_dense_products_on_each_joints_reachable_columns(name, couplings):
    """Prismatic joints (SCARA), shared motors (UR5) and a filtered Coulomb signal included."""
    model = load_model(name)
    spec = ColumnSpec(True, ALL, couplings)
    base = base_parameters(model, spec)
    rng = np.random.default_rng(2)
    N = 2 * 256 + 37  # two full tiles and a partial block
    lo = np.where(np.isfinite(model.q_min), model.q_min, -3.0)
    hi = np.where(np.isfinite(model.q_max), model.q_max, 3.0)
    q = rng.uniform(lo, hi, size=(N, model.dof))
    qd, qdd, tau = (rng.normal(size=q.shape) for _ in range(3))
    qd[::5, 0] = 0.0
    for coulomb in (None, np.tanh(3.0 * qd)):
        W = regressor(model, q, qd, qdd, spec, coulomb=coulomb).reshape(N, model.dof, -1)[:, :, base.independent]
        plan, G = gram_blocks(model, q, qd, qdd, tau, spec, base.independent, coulomb=coulomb)
        for i in range(model.dof):
            cols = list(plan.columns[i])
            # the columns left out are exactly zero in joint i's rows: nothing is lost
            assert np.all(W[:, i, np.setdiff1d(np.arange(base.count), cols)] == 0.0)
            aug = np.column_stack([W[:, i, cols], tau[:, i], np.ones(N)])
            dense = aug.T @ aug
            r = len(cols)
            got = np.triu(G[i, : r + 2, : r + 2])
            assert np.abs(got - np.triu(dense)).max() <= 1e-13 * np.abs(dense).max()
            assert np.all(G[i, r + 2:] == 0.0) and np.all(G[i, :, r + 2:] == 0.0)


@pytest.fixture(scope="module")
def windowed_recording(panda_with_rotors):
    """A raw 1 kHz recording long enough for windowed processing (several windows)."""
    model = panda_with_rotors
    t, q, qd, qdd, _ = rest_to_rest_fourier(model, 8, periods=40).sample(1000)
    tau = inverse_dynamics(model, q, qd, qdd, rotor_inertia=model.rotor_inertia,
                           friction={"viscous": np.full(7, 0.3), "coulomb": np.full(7, 0.5)})
    rng = np.random.default_rng(1)
    raw = SampledData(t, q + rng.normal(scale=1e-5, size=q.shape), tau + rng.normal(scale=0.05, size=q.shape))
    return model, raw


def test_fused_statistics_equal_row_by_row_accumulation_over_processed_windows(windowed_recording):
    model, raw = windowed_recording
    processing = ProcessingConfig(q_cutoff_hz=20.0, tau_cutoff_hz=20.0)
    assert sum(1 for _ in process_windows(raw, processing)) >= 2
    spec = ColumnSpec(True, ALL)
    base = base_parameters(model, spec)

    def source():
        for piece in process_windows(raw, processing):
            yield piece.data

    chunks = RegressorChunks(model, source, spec, base, chunk=7000)
    fused = chunks.normal_equations()
    rows = NormalEquations(model.dof, base.count)
    for W, tau in chunks():
        rows.add(W, tau)
    assert raw.count > 2 * PART_SAMPLES
    assert np.array_equal(fused.rows, rows.rows)
    for name in ("A", "b", "c", "column_sums", "torque_sums"):
        a, b = getattr(fused, name), getattr(rows, name)
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max(), name


def test_thread_count_does_not_change_the_statistics(windowed_recording):
    model, raw = windowed_recording
    spec = ColumnSpec(True, ALL)
    base = base_parameters(model, spec)
    data = SampledData(raw.t, raw.q, raw.tau, np.gradient(raw.q, axis=0) * 1000.0, np.zeros_like(raw.q))

    def source():  # two pieces, like two windows
        half = data.count // 2
        yield data.select(slice(0, half))
        yield data.select(slice(half, None))

    one = RegressorChunks(model, source, spec, base, 5000, threads=1).normal_equations()
    three = RegressorChunks(model, source, spec, base, 5000, threads=3).normal_equations()
    for name in ("A", "b", "c", "column_sums", "torque_sums", "rows"):
        assert np.array_equal(getattr(one, name), getattr(three, name)), name


def test_gram_blocks_name_bad_input():
    model = load_model("panda")
    spec = ColumnSpec(True, ALL)
    q = np.zeros((10, 7))
    with pytest.raises(ValueError, match="tau: expected shape"):
        gram_blocks(model, q, q, q, np.zeros((10, 6)), spec, np.arange(5))
    with pytest.raises(ValueError, match="coulomb: contains NaN"):
        gram_blocks(model, q, q, q, q, spec, np.arange(5), coulomb=np.full((10, 7), np.nan))
    with pytest.raises(ValueError, match="qd: non-finite"):
        gram_blocks(model, q, np.full((10, 7), np.inf), q, q, spec, np.arange(5))
