"""The demo's friction table with the simulator's per-joint viscous friction (the plant adds its
viscous term per joint, so `fv` arrives as a list), and the README image option."""

import numpy as np

from robodyn.cli import main
from robodyn.demo import friction_errors


def _points(fc, fv, joints):
    speeds = [v for v in np.linspace(-1.0, 1.0, 21) if v != 0.0]
    return [[(v, fc * np.sign(v) + fv * v) for v in speeds] for _ in range(joints)]


def test_friction_errors_take_a_per_joint_viscous_truth():
    truth = {"fc": [0.3, 0.3], "fs": [0.4, 0.4], "vs": [0.05, 0.05], "qd0": 0.01, "fv": [0.05, 0.08]}
    fitted = {"fc": [0.3, 0.3], "fs": [0.4, 0.4], "vs": [0.05, 0.05]}
    rows = friction_errors(fitted, truth, _points(0.3, 0.05, 2))
    # joint 1's curve is the truth's apart from the Stribeck hump; joint 2's true fv differs, so its
    # curve error is larger: the per-joint value is the one used
    assert rows[0]["level_error"] < rows[1]["level_error"]
    scalar = dict(truth, fv=0.05)
    assert friction_errors(fitted, scalar, _points(0.3, 0.05, 2))[0]["level_error"] == rows[0]["level_error"]


def test_demo_documents_the_plot_option(capsys):
    try:
        main(["demo", "--help"])
    except SystemExit:
        pass
    assert "--plot" in capsys.readouterr().out
