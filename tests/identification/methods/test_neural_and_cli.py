"""Zhong et al. 2023 linear network baseline; the compare and stepwise CLI commands."""

import json

import numpy as np
import pytest

from robodyn.identification.estimators import NormalEquations, ols
from robodyn.identification.neural import train_linear_network


def test_linear_network_converges_to_least_squares():
    rng = np.random.default_rng(0)
    W = rng.normal(size=(400, 4)) * [1.0, 2.0, 0.5, 1.5]
    truth = np.array([0.625, 0.306, 0.236, 0.989])  # Zhong et al. 2023 Table 4's true parameters
    tau = W @ truth + 0.01 * rng.normal(size=400)
    ne = NormalEquations(1, 4)
    ne.add(W, tau[:, None])
    fit = train_linear_network(ne, epochs=5000)
    assert fit.converged
    assert fit.theta == pytest.approx(ols(ne).theta, rel=1e-5)
    assert np.all(np.diff(fit.loss_history) <= 0)


def test_compare_command_writes_the_table(tmp_path, capsys):
    from robodyn.cli import main

    out = tmp_path / "cmp.json"
    assert main(["compare", "--simulate", "twolink", "--seconds", "10", "--rate", "50", "--population", "20",
                 "--iteration-scale", "0.02", "--out", str(out)]) == 0
    table = json.loads(out.read_text())
    assert [r["method"] for r in table["rows"]] == ["ols", "wls", "wso", "pso", "ga"]
    assert "held-out trajectory" in capsys.readouterr().out


def test_stepwise_flexible_command(tmp_path):
    from robodyn.cli import main

    out = tmp_path / "flex.json"
    assert main(["stepwise-flexible", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["stiffness"][0] == pytest.approx(3000.0, rel=0.03)
