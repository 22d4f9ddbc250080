"""Progress of the streamed normal equations (streaming.RegressorChunks(progress=...)): reported once
per reduced part, in part order, with the running sample count, and without changing the sums."""

import numpy as np

from robodyn.identification.base_params import base_parameters
from robodyn.identification.regressor import ColumnSpec, sample_states
from robodyn.identification.signals import SampledData
from robodyn.identification.streaming import PART_SAMPLES, RegressorChunks
from robodyn.robot.loader import load_model

STATISTICS = ("A", "b", "c", "column_sums", "torque_sums", "rows")


def _pieces(model, lengths):
    q, qd, qdd = sample_states(model, sum(lengths), seed=4)
    tau = np.random.default_rng(5).normal(size=q.shape)
    t = np.arange(q.shape[0]) * 1e-3
    data = SampledData(t, q, tau, qd, qdd)
    bounds = np.cumsum([0, *lengths])
    return [data.select(slice(a, b)) for a, b in zip(bounds[:-1], bounds[1:])]


def test_progress_counts_each_part_in_order_and_leaves_the_sums_unchanged():
    model = load_model("panda")
    spec = ColumnSpec(True, ("viscous", "coulomb"))
    base = base_parameters(model, spec)
    # a piece just over one part, a short piece, a piece of two full parts and a remainder
    lengths = [PART_SAMPLES + 17, 1000, 2 * PART_SAMPLES + 300]
    pieces = _pieces(model, lengths)
    source = lambda: iter(pieces)  # noqa: E731
    seen = []
    with_progress = RegressorChunks(model, source, spec, base, 5000, threads=2, progress=seen.append).normal_equations()
    parts = [PART_SAMPLES, 17, 1000, PART_SAMPLES, PART_SAMPLES, 300]
    assert seen == list(np.cumsum(parts))
    assert seen[-1] == sum(lengths) == int(with_progress.rows[0])
    without = RegressorChunks(model, source, spec, base, 5000, threads=1).normal_equations()
    for name in STATISTICS:
        assert np.array_equal(getattr(with_progress, name), getattr(without, name)), name


def test_progress_of_a_source_reduced_from_its_rows_counts_each_chunk():
    """Pieces that carry Stribeck excess columns are reduced chunk by chunk from their rows."""
    model = load_model("panda")
    spec = ColumnSpec(True, ("viscous", "coulomb"))
    base = base_parameters(model, spec)
    pieces = _pieces(model, [2500, 1200])
    for p in pieces:
        p.friction_extra = np.tanh(p.qd)
    seen = []
    ne = RegressorChunks(model, lambda: iter(pieces), spec, base, 1000, extra=model.dof,
                         progress=seen.append).normal_equations()
    assert seen == [1000, 2000, 2500, 3500, 3700]
    assert int(ne.rows[0]) == 3700
