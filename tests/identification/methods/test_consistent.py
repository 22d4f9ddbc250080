"""Physically consistent identification: pseudo-inertia PSD (Wensing 2017), signs, RMSE cost."""

from pathlib import Path

import numpy as np
import pytest

from robodyn.identification.consistent import (check_feasibility, identify_consistent, link_feasibility,
                                               nominal_reference, pseudo_inertia)
from robodyn.robot.model import standard_parameters

pytest.importorskip("cvxpy", reason="the consistent fit needs cvxpy (extras 'sdp' and 'test', installed by make test)")


def test_pseudo_inertia_separates_physical_from_impossible_links():
    rod = standard_parameters(2.0, np.array([0.1, 0.0, 0.0]), np.diag([1e-3, 0.02, 0.02]))
    assert link_feasibility(rod)["feasible"]
    assert np.linalg.eigvalsh(pseudo_inertia(rod))[0] >= 0
    broken = standard_parameters(2.0, np.zeros(3), np.diag([0.01, 0.01, 0.05]))  # 0.01 + 0.01 < 0.05
    report = link_feasibility(broken)
    assert not report["pseudo_inertia_psd"] and not report["triangle_inequalities"] and not report["feasible"]
    negative_mass = rod.copy()
    negative_mass[9] = -1.0
    assert not link_feasibility(negative_mass)["mass_positive"]


def test_simulated_panda_every_link_feasible_and_small_rmse_cost(panda, panda_statistics):
    base, ne = panda_statistics
    res = identify_consistent(ne, base, panda.dof, reference=nominal_reference(panda, base.spec),
                              joint_names=list(panda.joint_names))
    assert res.feasibility["feasible"]
    assert all(link["feasible"] for link in res.feasibility["links"])
    rotor = res.standard[10::11]
    assert np.all(rotor >= 0.0)  # never a negative rotor inertia (Ni et al. 2024 Table 5 has IA4 = -1.11)
    assert 0.0 <= res.rmse_increase["percent"] < 1.0
    assert res.theta == pytest.approx(base.projection @ res.standard)


def test_feasibility_check_flags_negative_rotor_inertia(panda, panda_statistics):
    base, _ = panda_statistics
    pi = nominal_reference(panda, base.spec)
    pi[3 * 11 + 10] = -0.1  # IA4
    report = check_feasibility(pi, base.spec, panda.dof, list(base.standard_names))
    assert not report["feasible"] and report["negative_parameters"] == ["IA4"]


def test_real_tx40_consistent_with_friction_and_coupled_wrist():
    from robodyn.identification.datasets import tx40
    from robodyn.identification.metaheuristic import normal_equations_of
    from robodyn.identification.pipeline import IdentificationConfig
    from robodyn.robot.urdf import model_from_urdf

    data_dir = tx40.DATA_DIR
    model = model_from_urdf(data_dir / "tx40_mdh_modified.urdf")
    config = IdentificationConfig(method="ols", friction="coulomb-viscous", processing=tx40.PROCESSING,
                                  motor_couplings=(tx40.WRIST_COUPLING,))
    base, ne = normal_equations_of(model, [tx40.load(data_dir)], config)
    res = identify_consistent(ne, base, model.dof, reference=nominal_reference(model, base.spec),
                              joint_names=list(model.joint_names))
    assert res.feasibility["feasible"] and not res.feasibility["negative_parameters"]
    names = res.standard_names
    for k, name in enumerate(names):
        if name.startswith(("IA", "FV", "FC")):
            assert res.standard[k] >= 0.0, name
    assert 0.0 <= res.rmse_increase["percent"] < 5.0
