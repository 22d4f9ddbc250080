"""The joint-major regressor (n, N, k): written by the block kernel straight into per-joint blocks,
and gathered from sample-major rows by gather_joint_major. Both must hold exactly the values of the
sample-major regressor, moved: the block kernel's joint-major image and copy-out are a different
path from its sample-major one, so each is compared bit for bit with the public (N*n, P) rows,
themselves checked here against the RNEA with a random coefficient per column."""

import numpy as np
import pytest

from robodyn.identification import regressor as R
from robodyn.identification.regressor import (ColumnSpec, gather_joint_major, joint_major_regressor_columns,
                                              regressor, sample_states)
from robodyn.robot.dynamics import inverse_dynamics
from robodyn.robot.loader import load_model

ALL = ColumnSpec(rotor_inertia=True, friction=("viscous", "coulomb", "offset"))


def moved_to_joint_major(Y, dof, columns):
    """The reference layout by plain numpy indexing: out[j, s] = Y[s * dof + j, columns]."""
    N = Y.shape[0] // dof
    return np.ascontiguousarray(Y[:, columns].reshape(N, dof, len(columns)).transpose(1, 0, 2))


def column_subsets(P, seed):
    rng = np.random.default_rng(seed)
    return {
        "all": np.arange(P),
        "every third": np.arange(1, P, 3),  # no two columns adjacent: no run in the image
        "shuffled": rng.permutation(P)[: P // 2],  # positions in the output follow the selection's order
        "one": np.array([P - 1]),
    }


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("with_coulomb", [False, True])
@pytest.mark.parametrize("name", ["panda", "ur5e", "scara"])
def test_joint_major_columns_equal_the_sample_major_rows_bit_for_bit(name, with_coulomb, threads, stream, monkeypatch):
    """N odd and not a multiple of the block (a partial last block; with 2 threads, chunk edges
    inside blocks), the output streamed or not (its per-joint runs start at every alignment)."""
    monkeypatch.setattr(R, "_STREAM_BYTES", 0 if stream else 1 << 62)
    model = load_model(name)
    count = 5 * R.BLOCK + 13
    q, qd, qdd = sample_states(model, count, seed=21)
    coulomb = np.tanh(qd / 0.3) if with_coulomb else None
    Y = regressor(model, q, qd, qdd, ALL, coulomb=coulomb, threads=1)
    for label, columns in column_subsets(Y.shape[1], 22).items():
        got = joint_major_regressor_columns(model, q, qd, qdd, ALL, columns, coulomb=coulomb, threads=threads)
        assert got.shape == (model.dof, count, columns.size) and got.flags.c_contiguous
        assert np.array_equal(got, moved_to_joint_major(Y, model.dof, columns)), label


@pytest.mark.parametrize("name", ["panda", "scara"])
def test_joint_major_blocks_reproduce_the_rnea_torque(name):
    """Each joint's block times the parameters is that joint's RNEA torque, with every parameter
    different, so a column or a sample landing in another's place changes the torque."""
    model = load_model(name)
    n = model.dof
    q, qd, qdd = sample_states(model, 3 * R.BLOCK + 5, seed=23)
    rng = np.random.default_rng(24)
    inertial = rng.uniform(0.5, 2.0, size=(n, 10))
    rotor = rng.uniform(0.5, 2.0, size=n)
    friction = {k: rng.uniform(0.5, 2.0, size=n) for k in ("viscous", "coulomb", "offset")}
    pi = np.column_stack([inertial, rotor, friction["viscous"], friction["coulomb"], friction["offset"]]).ravel()
    tau = inverse_dynamics(model, q, qd, qdd, inertial=inertial, rotor_inertia=rotor, friction=friction)
    blocks = joint_major_regressor_columns(model, q, qd, qdd, ALL, np.arange(ALL.total(n)), threads=2)
    assert np.allclose((blocks @ pi).T, tau, rtol=1e-12, atol=1e-10 * np.abs(tau).max())


def test_no_samples_give_empty_blocks():
    model = load_model("ur5e")
    empty = np.zeros((0, model.dof))
    assert joint_major_regressor_columns(model, empty, empty, empty, ALL, [0, 3]).shape == (model.dof, 0, 2)


@pytest.fixture
def numba_threads(request):
    previous = R.numba.get_num_threads()
    R.numba.set_num_threads(min(request.param, R.numba.config.NUMBA_NUM_THREADS))
    yield request.param
    R.numba.set_num_threads(previous)


@pytest.mark.parametrize("numba_threads", [1, 2], indirect=True)
def test_gather_moves_every_selection_exactly(numba_threads):
    """Runs of consecutive columns long and short, reversed, repeated, shuffled, none; in one
    range of samples or several (chunk edges inside the rows with 2 threads)."""
    model = load_model("panda")
    count = 2 * R.BLOCK + 9
    q, qd, qdd = sample_states(model, count, seed=25)
    Y = regressor(model, q, qd, qdd, ALL)
    P = Y.shape[1]
    selections = dict(column_subsets(P, 26))
    selections.update({
        "long run": np.arange(10, 70),
        "runs of every length": np.concatenate([np.arange(a, a + length) for a, length in
                                                zip(range(0, P, 14), range(1, 14))])[:P],
        "reversed": np.arange(P)[::-1],
        "repeated": np.array([4, 4, 5, 6, 6, 90]),
        "none": np.zeros(0, dtype=np.int64),
    })
    for label, columns in selections.items():
        expected = moved_to_joint_major(Y, model.dof, columns)
        assert np.array_equal(gather_joint_major(Y, model.dof, columns), expected), label


def test_gather_rejects_columns_outside_the_rows_and_rows_not_a_multiple_of_the_joints():
    Y = np.zeros((14, 5))
    with pytest.raises(ValueError, match=r"columns: expected indices in \[0, 5\)"):
        gather_joint_major(Y, 7, [5])
    with pytest.raises(ValueError, match=r"columns: expected indices in \[0, 5\)"):
        gather_joint_major(Y, 7, [-1])
    with pytest.raises(ValueError, match=r"W: expected sample-major rows \(N\*7, P\)"):
        gather_joint_major(Y[:13], 7, [0])
