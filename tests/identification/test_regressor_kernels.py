"""How the dense regressor reaches memory: each block assembled in a cache-resident image of its
rows (four columns at a time through a register transposition) and copied out, by non-temporal
stores when the output is large. Every column is checked against the RNEA with its own random
coefficient, so a column written to its neighbour's place, a lane to another sample's row or a
line lost at an unaligned edge changes the torque."""

import numpy as np
import pytest

from robodyn.identification import regressor as R
from robodyn.identification.regressor import ColumnSpec, regressor, sample_states
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.loader import load_model

ALL = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))


def random_parameters(model, seed):
    """Inertial, rotor and friction coefficients all different (not physically consistent: the
    RNEA is linear in them all the same)."""
    rng = np.random.default_rng(seed)
    n = model.dof
    inertial = rng.uniform(0.5, 2.0, size=(n, 10))
    rotor = rng.uniform(0.5, 2.0, size=n)
    friction = {k: rng.uniform(0.5, 2.0, size=n) for k in ("viscous", "coulomb", "offset")}
    pi = np.column_stack([inertial, rotor, friction["viscous"], friction["coulomb"], friction["offset"]]).ravel()
    return inertial, rotor, friction, pi


def misaligned_out(rows, cols, shift):
    """A C-contiguous (rows, cols) float64 view starting ``shift`` doubles past a 64-byte boundary,
    full of garbage."""
    buffer = np.full(rows * cols + 16, np.nan)
    start = (-(buffer.ctypes.data // 8) % 8) + shift
    return buffer[start: start + rows * cols].reshape(rows, cols)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", ["panda", "scara"])
def test_every_column_reaches_its_place_at_every_alignment(name, threads, stream, monkeypatch):
    """Streaming forced on (a threshold of 0 bytes) or off for an output of a few blocks."""
    monkeypatch.setattr(R, "_STREAM_BYTES", 0 if stream else 1 << 62)
    model = load_model(name)
    count = 3 * R.BLOCK + 7  # full blocks, a partial one, and chunk edges inside blocks with 2 threads
    q, qd, qdd = sample_states(model, count, seed=11)
    inertial, rotor, friction, pi = random_parameters(model, 5)
    tau = inverse_dynamics(model, q, qd, qdd, inertial=inertial, rotor_inertia=rotor, friction=friction)
    reference = None
    for shift in range(8):
        out = misaligned_out(count * model.dof, ALL.total(model.dof), shift)
        Y = regressor(model, q, qd, qdd, ALL, out=out, threads=threads)
        assert Y is out
        got = (Y @ pi).reshape(count, model.dof)
        assert np.allclose(got, tau, rtol=1e-12, atol=1e-10 * np.abs(tau).max())
        if reference is None:
            reference = Y.copy()
        assert np.array_equal(Y, reference), shift  # alignment changes nothing, not even rounding


def test_streamed_and_cached_outputs_are_identical(monkeypatch):
    model = load_model("panda")
    q, qd, qdd = sample_states(model, 200, seed=12)
    monkeypatch.setattr(R, "_STREAM_BYTES", 1 << 62)
    cached = regressor(model, q, qd, qdd, ALL)
    monkeypatch.setattr(R, "_STREAM_BYTES", 0)
    assert np.array_equal(regressor(model, q, qd, qdd, ALL, threads=2), cached)


def test_structural_zeros_stay_zero_in_every_block():
    """The block image is zeroed once per call: later blocks must not inherit earlier values in
    the positions no column is written to (joint i's row before link i, other joints' friction)."""
    model = load_model("panda")
    q, qd, qdd = sample_states(model, 5 * R.BLOCK + 3, seed=13)
    Y = regressor(model, q, qd, qdd, ALL, out=np.full((q.shape[0] * 7, ALL.total(7)), 3.0), threads=1)
    reach = R.structural_rows(model, ALL)
    rows = Y.reshape(q.shape[0], 7, -1)
    assert np.all(rows[:, ~reach] == 0.0)
    assert not np.any(rows[:, reach] == 3.0)  # and every other position was written


def test_an_output_off_its_natural_alignment_is_filled_without_streaming(monkeypatch):
    """Whole-line stores need the output's doubles on 8-byte boundaries; numpy allows them off."""
    monkeypatch.setattr(R, "_STREAM_BYTES", 0)
    model = load_model("panda")
    q, qd, qdd = sample_states(model, 40, seed=14)
    rows, cols = q.shape[0] * 7, ALL.total(7)
    out = np.frombuffer(bytearray(rows * cols * 8 + 1), dtype=np.float64, offset=1, count=rows * cols)
    out = out.reshape(rows, cols)
    assert not out.flags.aligned and out.flags.c_contiguous and out.flags.writeable
    monkeypatch.setattr(R, "_STREAM_BYTES", 1 << 62)
    expected = regressor(model, q, qd, qdd, ALL)
    monkeypatch.setattr(R, "_STREAM_BYTES", 0)
    assert np.array_equal(regressor(model, q, qd, qdd, ALL, out=out, threads=1), expected)
