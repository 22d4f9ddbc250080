"""The identification methods compared in seed 004 Table 4, and their error evaluation.

* ``geometric``: geometry only, from the unloaded positions (eq. 27).
* ``geometric-stiffness``: geometry from the unloaded positions, then joint stiffness from the
  loaded-minus-unloaded positions with that geometry; gravity of the links is ignored (eq. 28).
* ``combined``: the iterative method of section 2.1, steps 1-7 (eq. 29):
    1. p_o (unloaded) and p_F (loaded) at the same joint angles;
    2. geometry C_tem from p_o;
    3. stiffness K_tem from p_F - p_o with C_tem (eq. 20);
    4. the gravity deflection dX_G of the links with C_tem, K_tem (eq. 25);
    5. p = p_o - dX_G;
    6. geometry C from p, starting at C_tem;
    7. stop when |C - C_tem| <= e, else C_tem = C and repeat from 3.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .geometric import fit_geometry, check_positions
from .identifiability import Redundancy, analyse_identifiability, structural_redundancies
from .parameters import GeometricModel, preset_free_names, robot_for, target_positions
from .seed004 import INITIAL_STIFFNESS
from .stiffness import Load, deflected_positions, identify_compliance, joint_deflection

METHODS = ("nominal", "geometric", "geometric-stiffness", "combined")
CONVERGENCE_LENGTH = 1e-7  # m: step 7's e for lengths
CONVERGENCE_ANGLE = 1e-7  # rad: step 7's e for angles
MAX_ITERATIONS = 20
PAIR_TOLERANCE = 1e-6  # rad: joint angles that count as "the same pose"


@dataclass
class MeasurementSet:
    """Joint angles and measured target positions (measurement frame, m) under one load."""

    q: np.ndarray
    p: np.ndarray
    ids: list[str] = field(default_factory=list)
    load: Load | None = None

    def __post_init__(self):
        self.q = np.atleast_2d(np.asarray(self.q, dtype=float))
        self.p = np.atleast_2d(np.asarray(self.p, dtype=float))
        if not self.ids:
            self.ids = [f"P{k + 1:03d}" for k in range(self.q.shape[0])]
        if len(self.ids) != self.q.shape[0]:
            raise ValueError(f"pose_id: {len(self.ids)} labels for {self.q.shape[0]} poses")
        check_positions(self.q, self.p, self.q.shape[1])

    def __len__(self) -> int:
        return int(self.q.shape[0])

    def subset(self, index) -> "MeasurementSet":
        index = np.asarray(index, dtype=int)
        return MeasurementSet(self.q[index], self.p[index], [self.ids[i] for i in index], self.load)


def pair_loaded(noload: MeasurementSet, loaded: MeasurementSet) -> tuple[np.ndarray, np.ndarray]:
    """Indices (unloaded, loaded) of the poses measured both ways (step 1: same joint angles)."""
    i_o, i_f = [], []
    for k in range(len(loaded)):
        dist = np.max(np.abs(noload.q - loaded.q[k]), axis=1)
        j = int(np.argmin(dist))
        if dist[j] > PAIR_TOLERANCE:
            raise ValueError(f"loaded: pose {loaded.ids[k]!r} has no unloaded measurement at the same joint "
                             f"angles (closest differs by {np.rad2deg(dist[j]):.4g} deg); seed 004 measures the "
                             "loaded poses at joint angles of the unloaded set")
        i_o.append(j)
        i_f.append(k)
    return np.array(i_o, dtype=int), np.array(i_f, dtype=int)


@dataclass
class CalibrationResult:
    gm: GeometricModel
    method: str
    params: np.ndarray
    std: np.ndarray
    free_names: list[str]
    dropped: list[Redundancy]
    compliance: np.ndarray  # rad/(N·m), per joint
    compliance_identified: np.ndarray
    compliance_std: np.ndarray
    iterations: int = 0
    converged: bool = True
    history: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fit_sigma: float = float("nan")
    identifiability: dict = field(default_factory=dict)

    @property
    def stiffness(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.where(self.compliance > 0, 1.0 / self.compliance, np.inf)

    def link_angles(self, q, load: Load | None = None) -> np.ndarray:
        """Joint angles after the elastic deflection this method models (eqs. 20, 25)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        if self.method in ("nominal", "geometric"):
            return q
        links = self.method == "combined"  # geometric-stiffness models the payload only (eq. 28)
        return q + joint_deflection(robot_for(self.gm, self.params), q, self.compliance, load, links=links)

    def predict(self, q, load: Load | None = None) -> np.ndarray:
        """Predicted target positions (measurement frame) under ``load`` with this method's model."""
        return target_positions(self.gm, self.params, self.link_angles(q, load))

    def errors(self, meas: MeasurementSet) -> np.ndarray:
        return np.linalg.norm(meas.p - self.predict(meas.q, meas.load), axis=1)


def error_stats(errors: np.ndarray) -> dict:
    e = np.asarray(errors, dtype=float) * 1000.0
    return {"mean_mm": float(e.mean()), "max_mm": float(e.max()), "min_mm": float(e.min()),
            "rms_mm": float(np.sqrt(np.mean(e ** 2))), "poses": int(e.size)}


def nominal_result(gm: GeometricModel, compliance=None) -> CalibrationResult:
    n = gm.dof
    c = np.zeros(n) if compliance is None else np.asarray(compliance, float)
    return CalibrationResult(gm, "nominal", gm.nominal.copy(), np.full(gm.size, np.nan), [], [], c,
                             np.zeros(n, bool), np.full(n, np.nan))


def usable_free_names(gm: GeometricModel, free_names) -> tuple[list[str], list[Redundancy], list[str]]:
    """Drop the structurally redundant parameters (fixed at nominal), with a note for each."""
    dropped = structural_redundancies(gm, free_names)
    gone = {r.name for r in dropped}
    notes = [f"{r.name} is fixed at its nominal value: it is redundant in this model ({r.describe()}, "
             "unit-scaled columns at the nominal geometry)" for r in dropped]
    return [n for n in free_names if n not in gone], dropped, notes


def _change(gm: GeometricModel, a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    d = np.abs(a - b)
    ang = gm.angle_mask
    return float(d[~ang].max(initial=0.0)), float(d[ang].max(initial=0.0))


def calibrate(gm: GeometricModel, noload: MeasurementSet, loaded: MeasurementSet | None = None, *,
              method: str = "combined", free_names=None, preset: str = "seed004",
              prior_compliance=None, known_compliance=None, loss: str = "linear",
              max_iterations: int = MAX_ITERATIONS, noise_sigma: float = 15e-6) -> CalibrationResult:
    """Identify the geometry (and the joint stiffness) by one of the methods of seed 004 Table 4.

    ``prior_compliance`` is the value kept for joints the payload does not excite (seed 004 starts
    every joint at K = 50 000 N·m/rad); ``known_compliance`` skips stiffness identification (the
    combined method then needs no loaded set).
    """
    if method not in METHODS[1:]:
        raise ValueError(f"method: unknown method {method!r}; expected one of {', '.join(METHODS[1:])}")
    if noload.load is not None and noload.load.mass > 0:
        raise ValueError("measurements: the first set must be measured without payload (p_o of seed 004)")
    n = gm.dof
    names = list(free_names) if free_names is not None else preset_free_names(gm, preset)
    free, dropped, notes = usable_free_names(gm, names)
    prior = np.full(n, 1.0 / INITIAL_STIFFNESS) if prior_compliance is None else np.asarray(prior_compliance, float)
    if prior.shape != (n,) or np.any(prior < 0):
        raise ValueError(f"prior_compliance: expected {n} values >= 0")
    need_stiffness = method != "geometric" and known_compliance is None
    if need_stiffness:
        if loaded is None or len(loaded) == 0:
            raise ValueError(f"loaded: the {method} method identifies joint stiffness from loaded measurements; "
                             "give a loaded set (with its payload) or known joint stiffness")
        if loaded.load is None or loaded.load.mass <= 0:
            raise ValueError("load: the loaded measurements need their payload (mass and centre of mass)")
        i_o, i_f = pair_loaded(noload, loaded)
        q_pair = noload.q[i_o]
        delta = loaded.p[i_f] - noload.p[i_o]
    # step 2: geometry from the unloaded positions
    fit = fit_geometry(gm, noload.q, noload.p, free, loss=loss)
    compliance = prior.copy() if known_compliance is None else np.asarray(known_compliance, float)
    c_ident = np.zeros(n, bool)
    c_std = np.full(n, np.nan)
    history = [{"iteration": 0, "rms_residual_m": fit.sigma}]
    iterations, converged = 0, True
    if method == "geometric-stiffness" and need_stiffness:
        cf = identify_compliance(gm, fit.params, q_pair, delta, loaded.load, prior)
        compliance, c_ident, c_std = cf.compliance, cf.identified, cf.std
        notes += _stiffness_notes(cf.identified)
    elif method == "combined":
        converged = False
        C_tem = fit.params
        for iterations in range(1, max_iterations + 1):
            if need_stiffness:  # step 3
                cf = identify_compliance(gm, C_tem, q_pair, delta, loaded.load, prior)
                compliance, c_ident, c_std = cf.compliance, cf.identified, cf.std
            # steps 4-5: remove the links' gravity deflection from the unloaded positions
            dX_G = (deflected_positions(gm, C_tem, noload.q, compliance, None, links=True)
                    - target_positions(gm, C_tem, noload.q))
            p = noload.p - dX_G
            fit = fit_geometry(gm, noload.q, p, free, initial=C_tem, loss=loss)  # step 6
            dl, da = _change(gm, fit.params, C_tem)  # step 7
            history.append({"iteration": iterations, "rms_residual_m": fit.sigma,
                            "max_length_change_m": dl, "max_angle_change_rad": da})
            C_tem = fit.params
            if dl <= CONVERGENCE_LENGTH and da <= CONVERGENCE_ANGLE:
                converged = True
                break
        if not converged:
            notes.append(f"combined method stopped after {max_iterations} iterations without meeting "
                         f"|C - C_tem| <= {CONVERGENCE_LENGTH} m / {CONVERGENCE_ANGLE} rad")
        if need_stiffness:
            notes += _stiffness_notes(c_ident)
    result = CalibrationResult(gm, method, fit.params, fit.std, free, dropped, compliance, c_ident, c_std,
                               iterations, converged, history, notes, fit.sigma)
    # identifiability of what was asked for, at the identified geometry, with the measured noise
    sigma = fit.sigma if np.isfinite(fit.sigma) and fit.sigma > 0 else noise_sigma
    result.identifiability = {
        "requested": analyse_identifiability(gm, fit.params, noload.q, names, sigma).to_dict(),
        "identified": analyse_identifiability(gm, fit.params, noload.q, free, sigma).to_dict(),
    }
    return result


def _stiffness_notes(identified: np.ndarray) -> list[str]:
    missing = [str(i + 1) for i in np.flatnonzero(~identified)]
    if not missing:
        return []
    return [f"joint stiffness of joint(s) {', '.join(missing)} kept at the prior value: the payload does not "
            "twist them at these poses (a vertical load never loads a vertical axis)"]
