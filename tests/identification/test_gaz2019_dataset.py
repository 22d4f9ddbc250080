"""The reader of Gaz et al. 2019's Panda log (identification/datasets/gaz2019.py), on files written here in
the repository's layout: the log itself is GPL-3.0 and never shipped."""

import numpy as np
import pytest

from robodyn.errors import UserError
from robodyn.identification.datasets import gaz2019


def test_each_file_lands_in_its_own_signal(tmp_path):
    t = np.arange(5) * 1e-3
    q, qd, tau = (np.arange(35.0).reshape(5, 7) + offset for offset in (0.0, 100.0, 200.0))
    np.savetxt(tmp_path / "exciting_traj_time.txt", t)
    for name, values in (("positions", q), ("velocity", qd), ("torques", tau)):
        np.savetxt(tmp_path / f"exciting_traj_{name}.txt", values)
    data = gaz2019.load(tmp_path)
    assert np.array_equal(data.t, t)
    assert np.array_equal(data.q, q) and np.array_equal(data.qd, qd) and np.array_equal(data.tau, tau)


def test_a_folder_without_the_log_is_one_line_naming_what_is_missing(tmp_path):
    (tmp_path / "exciting_traj_time.txt").write_text("0\n")
    with pytest.raises(UserError, match="lacks exciting_traj_positions.txt, exciting_traj_velocity.txt, "
                                        "exciting_traj_torques.txt"):
        gaz2019.load(tmp_path)


def test_a_checkout_of_the_repository_is_read_from_its_log_folder(tmp_path):
    folder = tmp_path / gaz2019.LOG_FOLDER
    folder.mkdir(parents=True)
    np.savetxt(folder / "exciting_traj_time.txt", np.arange(3) * 1e-3)
    for name in ("positions", "velocity", "torques"):
        np.savetxt(folder / f"exciting_traj_{name}.txt", np.ones((3, 7)))
    assert gaz2019.locate(tmp_path) == folder and gaz2019.locate(folder) == folder
    assert gaz2019.load(tmp_path).count == 3
