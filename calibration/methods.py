"""The identification methods: Li et al. 2023's Table 4 rows, and joint compliance under the link
weights identified together with the geometry.

* ``geometric``: geometry only, from the unloaded measurements (eq. 27).
* ``geometric-stiffness``: geometry from the unloaded measurements, then joint stiffness from the
  loaded-minus-unloaded positions with that geometry; the deflection it models is the payload's
  only, not the links' own weight (eq. 28).
* ``combined``: the iterative method of section 2.1, steps 1-7 (eq. 29):
    1. p_o (unloaded) and p_F (loaded) at the same joint angles;
    2. geometry C_tem from p_o;
    3. stiffness K_tem from p_F - p_o with C_tem (eq. 20);
    4. the gravity deflection of the links with C_tem, K_tem (eq. 25);
    5. p = p_o - dX_G, applied here as the deflected joint angles (equal at convergence, and it
       works for orientations and planar contacts too);
    6. geometry C from p, starting at C_tem;
    7. stop when |C - C_tem| <= e, else C_tem = C and repeat from 3.
* ``combined-gravity``: the paper's stiffness model extended so that the arm's own link weights
  identify it. The geometry and the joint compliances are fitted together to every measurement
  (unloaded and loaded): each joint deflects by C tau, tau the holding torque against the link
  weights (shared RNEA on the identified geometry) and any payload. It needs no payload, which is
  what the data of a heavy arm usually offer, and with ``backlash`` it also fits gear play (the
  link leaning by half the play on the flank gravity pushes it to) where the data support it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

from .combined_covariance import combined_std, deflection_columns
from .geometric import (LOSSES, fit_geometry, loss_weights, minimum_equations, require_excitation, robust_cost,
                        robust_scale)
from .identifiability import Redundancy, analyse_identifiability, structural_redundancies
from .lumped_gravity import LumpedGravity, fit_lumped_gravity, lumped_link_angles
from .measurements import MeasurementSet, Residual, Structure
from .parameters import GeometricModel, preset_free_names, robot_for, target_positions
from .stiffness import PRIOR_STIFFNESS, Load, holding_torques, identify_compliance, joint_deflection

METHODS = ("nominal", "geometric", "geometric-stiffness", "combined", "combined-gravity")
CONVERGENCE_LENGTH = 1e-7  # m: step 7's e for lengths
CONVERGENCE_ANGLE = 1e-7  # rad: step 7's e for angles
MAX_ITERATIONS = 20
PAIR_TOLERANCE = 1e-6  # rad: joint angles that count as "the same pose"
COMPLIANCE_EXCITATION_TOL = 1e-3  # relative column norm below which a joint's compliance is not fitted
BACKLASH_SMOOTHING = 0.05  # of a joint's largest holding torque: where the lean changes flank
BACKLASH_MIN_POSES = 3  # poses needed on each flank to see a step
DOWNWEIGHTED = 0.9  # a pose whose mean loss weight is below this lost weight to the robust loss
DISCARDED = 0.25  # ... below this the loss has set the pose aside in effect
MAX_REMOVED_SHARE = 0.2  # a robust loss is for a few bad readings: removing more than this share of the
#                          poses' least-squares weight says the model, not the readings, is wrong: a failure


def pair_loaded(noload: MeasurementSet, loaded: MeasurementSet) -> tuple[np.ndarray, np.ndarray]:
    """Indices (unloaded, loaded) of the poses measured both ways (step 1: same joint angles)."""
    i_o, i_f = [], []
    for k in range(len(loaded)):
        dist = np.max(np.abs(noload.q - loaded.q[k]), axis=1)
        j = int(np.argmin(dist))
        if dist[j] > PAIR_TOLERANCE:
            raise ValueError(f"loaded: pose {loaded.ids[k]!r} has no unloaded measurement at the same joint "
                             f"angles (closest differs by {np.rad2deg(dist[j]):.4g} deg); Li et al. 2023 measures "
                             "the loaded poses at joint angles of the unloaded set")
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
    backlash: np.ndarray | None = None  # rad per joint (combined-gravity with backlash)
    backlash_std: np.ndarray | None = None
    backlash_scale: np.ndarray | None = None  # N·m: where the lean changes flank
    chi2: float = float("nan")
    failure: str | None = None  # why the fit is not a result (not converged, worse than its start); None: ok
    lumped: LumpedGravity | None = None  # combined-gravity on a massless model: compliance x mass-moment terms
    loss: str = "linear"
    loss_scale: float | None = None  # the robust loss's scale, stated-noise units (None: squared loss)
    robust: dict | None = None  # what a robust loss did: poses down-weighted and by how much (robust_report)

    def __post_init__(self):
        n = self.gm.dof
        if self.backlash is None:
            self.backlash = np.zeros(n)
        if self.backlash_std is None:
            self.backlash_std = np.full(n, np.nan)
        if self.backlash_scale is None:
            self.backlash_scale = np.ones(n)

    @property
    def stiffness(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.where(self.compliance > 0, 1.0 / self.compliance, np.inf)

    @property
    def failed(self) -> bool:
        return self.failure is not None

    @property
    def parameter_count(self) -> int:
        """Everything the fit identified: geometry, joint compliances and gear play."""
        play = int(np.sum(np.isfinite(self.backlash_std) | (self.backlash != 0)))
        lumped = 0 if self.lumped is None else self.lumped.count
        return len(self.free_names) + int(np.sum(self.compliance_identified)) + play + lumped

    @property
    def models_link_gravity(self) -> bool:
        return self.method in ("combined", "combined-gravity")

    def link_angles(self, q, load: Load | None = None) -> np.ndarray:
        """Joint angles after the elastic deflection this method models (eqs. 20, 25)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        if self.method in ("nominal", "geometric"):
            return q
        if self.lumped is not None:
            return lumped_link_angles(robot_for(self.gm, self.params), self.lumped, q, self.compliance, load)
        links = self.models_link_gravity  # geometric-stiffness models the payload only (eq. 28)
        return q + joint_deflection(robot_for(self.gm, self.params), q, self.compliance, load, links=links,
                                    backlash=self.backlash, backlash_scale=self.backlash_scale)

    def predict(self, q, load: Load | None = None, target: int = 0) -> np.ndarray:
        """Predicted target positions (measurement frame) under ``load`` with this method's model."""
        return target_positions(self.gm, self.params, self.link_angles(q, load), target)

    def residual(self, meas: MeasurementSet) -> tuple[Residual, np.ndarray]:
        return Residual(self.gm, meas), self.link_angles(meas.q, meas.load)

    def errors(self, meas: MeasurementSet) -> np.ndarray:
        """Distance model - measured of every measured point, m."""
        res, q_link = self.residual(meas)
        return res.point_errors(self.params, q_link)


def error_stats(errors: np.ndarray) -> dict:
    e = np.asarray(errors, dtype=float) * 1000.0
    if e.size == 0:
        return {"mean_mm": None, "max_mm": None, "min_mm": None, "rms_mm": None, "poses": 0}
    return {"mean_mm": float(e.mean()), "max_mm": float(e.max()), "min_mm": float(e.min()),
            "rms_mm": float(np.sqrt(np.mean(e ** 2))), "poses": int(e.size)}


def nominal_result(gm: GeometricModel, compliance=None, params=None) -> CalibrationResult:
    n = gm.dof
    c = np.zeros(n) if compliance is None else np.asarray(compliance, float)
    p = gm.nominal.copy() if params is None else np.asarray(params, float)
    return CalibrationResult(gm, "nominal", p, np.full(gm.size, np.nan), [], [], c,
                             np.zeros(n, bool), np.full(n, np.nan))


def usable_free_names(gm: GeometricModel, free_names, structure: Structure | None = None
                      ) -> tuple[list[str], list[Redundancy], list[str]]:
    """Drop the structurally redundant parameters (fixed at nominal), with a note for each."""
    dropped = structural_redundancies(gm, free_names, structure=structure)
    gone = {r.name for r in dropped}
    notes = [f"{r.name} is fixed at its nominal value: it is redundant in this model ({r.describe()}, "
             "unit-scaled columns at the nominal geometry)" for r in dropped]
    return [n for n in free_names if n not in gone], dropped, notes


def _change(gm: GeometricModel, a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    d = np.abs(a - b)
    ang = gm.angle_mask
    return float(d[~ang].max(initial=0.0)), float(d[ang].max(initial=0.0))


def calibrate(gm: GeometricModel, noload: MeasurementSet, loaded: MeasurementSet | None = None, *,
              method: str = "combined", free_names=None, preset: str = "li2023",
              prior_compliance=None, known_compliance=None, loss: str = "linear",
              max_iterations: int = MAX_ITERATIONS, noise_sigma: float = 15e-6, backlash=(),
              f_scale: float | None = None, progress=None) -> CalibrationResult:
    """Identify the geometry (and the joint stiffness) by one of the methods (module docstring).

    ``prior_compliance`` is the value kept for joints the data do not excite (Li et al. 2023 starts
    every joint at K = 50 000 N·m/rad); ``known_compliance`` skips stiffness identification (the
    combined method then needs no loaded set). ``backlash`` (combined-gravity only) lists the
    0-based joints whose gear play is fitted, or is "auto" for every joint whose holding torque
    changes sign in the data. ``f_scale`` is a robust loss's scale in stated-noise units (default:
    from the start residual, :func:`.geometric.robust_scale`). ``progress(stage, fraction)`` is told
    each step (a progress display).

    A fit that did not converge, or ended worse than it started on its own objective, comes back
    with ``failure`` saying why: it is not a result (the caller reports it and refuses to use it).
    """
    report = progress or (lambda stage, fraction: None)
    if method not in METHODS[1:]:
        raise ValueError(f"method: unknown method {method!r}; expected one of {', '.join(METHODS[1:])}")
    if loss not in LOSSES:
        raise ValueError(f"loss: unknown loss {loss!r}; expected one of {', '.join(LOSSES)}")
    if noload.load is not None and noload.load.mass > 0:
        raise ValueError("measurements: the first set must be measured without payload (p_o of Li et al. 2023)")
    if backlash and method != "combined-gravity":
        raise ValueError("backlash: gear play is fitted by the combined-gravity method only")
    n = gm.dof
    names = list(free_names) if free_names is not None else preset_free_names(gm, preset)
    free, dropped, notes = usable_free_names(gm, names, noload.structure())
    prior = np.full(n, 1.0 / PRIOR_STIFFNESS) if prior_compliance is None else np.asarray(prior_compliance, float)
    if prior.shape != (n,) or np.any(prior < 0):
        raise ValueError(f"prior_compliance: expected {n} values >= 0")
    if method == "combined-gravity":
        report("combined-gravity: geometry, joint stiffness and gravity deflection", 0.05)
        result = _combined_gravity(gm, noload, loaded, free, dropped, notes, prior, loss, backlash, f_scale)
        result.loss = loss
        robust_report(result, [noload] + ([loaded] if loaded is not None and len(loaded) else []))
        report("identifiability", 0.9)
        _report_identifiability(result, gm, noload, names, noise_sigma)
        return result
    need_stiffness = method != "geometric" and known_compliance is None
    if need_stiffness:
        if loaded is None or len(loaded) == 0:
            raise ValueError(f"loaded: the {method} method identifies joint stiffness from loaded measurements; "
                             "give a loaded set (with its payload) or known joint stiffness, or use --method "
                             "combined-gravity (joint stiffness from the links' own weight) or geometric")
        if loaded.load is None or loaded.load.mass <= 0:
            raise ValueError("load: the loaded measurements need their payload (mass and centre of mass)")
        i_o, i_f = pair_loaded(noload, loaded)
        q_pair = noload.q[i_o]
        K = max(noload.target_count, loaded.target_count)
        delta = np.full((len(i_o), K, 3), np.nan)
        delta[:, :loaded.target_count] = loaded.points[i_f]
        delta[:, :noload.target_count] -= noload.points[i_o]
        if not np.isfinite(delta).all(-1).any():
            raise ValueError("loaded: no target was measured both with and without the payload at the same pose")
    # step 2: geometry from the unloaded measurements
    report("geometry from the unloaded measurements", 0.05)
    fit = fit_geometry(gm, noload.q, noload, free, loss=loss, f_scale=f_scale)
    failure = fit.failure
    compliance = prior.copy() if known_compliance is None else np.asarray(known_compliance, float)
    c_ident = np.zeros(n, bool)
    c_std = np.full(n, np.nan)
    history = [{"iteration": 0, "rms_residual_m": fit.sigma}]
    iterations, converged = 0, True
    std = None
    if method == "geometric-stiffness" and need_stiffness:
        cf = identify_compliance(gm, fit.params, q_pair, delta, loaded.load, prior)
        compliance, c_ident, c_std = cf.compliance, cf.identified, cf.std
        notes += _stiffness_notes(cf.identified, "the payload does not twist them at these poses "
                                                 "(a vertical load never loads a vertical axis)")
    elif method == "combined":
        converged = False
        C_tem = fit.params
        for iterations in range(1, max_iterations + 1):
            report(f"combined iteration {iterations}", 0.1 + 0.8 * iterations / max_iterations)
            if need_stiffness:  # step 3
                cf = identify_compliance(gm, C_tem, q_pair, delta, loaded.load, prior)
                compliance, c_ident, c_std = cf.compliance, cf.identified, cf.std
            # steps 4-5: the links' gravity deflection, as corrected joint angles
            q_link = noload.q + joint_deflection(robot_for(gm, C_tem), noload.q, compliance, None, links=True)
            fit = fit_geometry(gm, q_link, noload, free, initial=C_tem, loss=loss, f_scale=f_scale)  # step 6
            failure = failure or fit.failure
            dl, da = _change(gm, fit.params, C_tem)  # step 7
            history.append({"iteration": iterations, "rms_residual_m": fit.sigma,
                            "max_length_change_m": dl, "max_angle_change_rad": da})
            C_tem = fit.params
            if dl <= CONVERGENCE_LENGTH and da <= CONVERGENCE_ANGLE:
                converged = True
                break
        if not converged:
            failure = failure or (f"the combined method stopped after {max_iterations} iterations without meeting "
                                  f"|C - C_tem| <= {CONVERGENCE_LENGTH} m / {CONVERGENCE_ANGLE} rad")
        if need_stiffness:
            notes += _stiffness_notes(c_ident, "the payload does not twist them at these poses "
                                               "(a vertical load never loads a vertical axis)")
            q_link = noload.q + joint_deflection(robot_for(gm, fit.params), noload.q, compliance, None, links=True)
            std, c_std = combined_std(gm, noload, loaded, fit.params, q_link, free, c_ident, i_o, i_f, fit.chi2)
    std = fit.std if std is None else std  # geometry-only, unless the compliances were fitted with it
    result = CalibrationResult(gm, method, fit.params, std, free, dropped, compliance, c_ident, c_std,
                               iterations, converged and fit.success, history, notes, fit.sigma, chi2=fit.chi2,
                               failure=failure, loss=loss, loss_scale=fit.f_scale)
    robust_report(result, [noload])  # the loss acts on the geometry fits to the unloaded set
    report("identifiability", 0.9)
    _report_identifiability(result, gm, noload, names, noise_sigma)
    return result


def robust_report(result: CalibrationResult, sets) -> None:
    """What a robust loss did to the data it was fitted to: each pose's weight (the mean over its
    residuals of the loss's weight relative to least squares, :func:`.geometric.loss_weights`), the
    poses it down-weighted (below DOWNWEIGHTED) and set aside (below DISCARDED). A note says it in
    words, also when the loss changed nothing; removing more than MAX_REMOVED_SHARE of the poses'
    least-squares weight (1 - the mean pose weight) makes the fit a failure."""
    if result.loss == "linear" or result.loss_scale is None:
        return
    weights, labels = [], []
    for k, meas in enumerate(sets):
        res, q_link = result.residual(meas)
        w = loss_weights(res(result.params, q_link), result.loss, result.loss_scale)
        rows = np.bincount(res.row_pose, minlength=len(meas))
        mean = np.bincount(res.row_pose, weights=w, minlength=len(meas)) / np.maximum(rows, 1)
        seen = rows > 0
        weights.append(mean[seen])
        labels += [(f"loaded {meas.ids[i]}" if k else meas.ids[i]) for i in np.flatnonzero(seen)]
    w = np.concatenate(weights)
    order = np.argsort(w)
    down = [int(i) for i in order if w[i] < DOWNWEIGHTED]
    gone = [i for i in down if w[i] < DISCARDED]
    removed = float(1.0 - w.mean()) if w.size else 0.0
    result.robust = {"loss": result.loss, "scale_noise_units": float(result.loss_scale), "poses": int(w.size),
                     "downweighted": len(down), "discarded": len(gone), "downweighted_below": DOWNWEIGHTED,
                     "discarded_below": DISCARDED, "removed_weight_share": removed,
                     "max_removed_share": MAX_REMOVED_SHARE,
                     "min_weight": float(w.min()) if w.size else None,
                     "weights": {labels[i]: float(w[i]) for i in down}}
    if not down:
        exact = "the fit is the least-squares fit" if np.all(w == 1.0) else "the fit is close to the least-squares fit"
        result.notes.append(f"the {result.loss} loss changed nothing: no pose lost more than "
                            f"{100 * (1 - DOWNWEIGHTED):.0f} % of its least-squares weight (lowest weight "
                            f"{w.min():.2f}), so {exact}")
        return
    shown = ", ".join(f"{labels[i]} {w[i]:.2f}" for i in down[:8]) + (f" and {len(down) - 8} more" if len(down) > 8 else "")
    result.notes.append(f"the {result.loss} loss down-weighted {len(down)} of {w.size} poses below "
                        f"{100 * DOWNWEIGHTED:.0f} % of their least-squares weight, {len(gone)} of them below "
                        f"{100 * DISCARDED:.0f} % (set aside in effect), removing {100 * removed:.0f} % of the data's "
                        f"least-squares weight; weights: {shown}")
    if removed > MAX_REMOVED_SHARE and result.failure is None:
        result.failure = (f"the {result.loss} loss removed {100 * removed:.0f} % of the data's least-squares weight "
                          f"({len(down)} of {w.size} poses down-weighted), more than the {100 * MAX_REMOVED_SHARE:.0f} % "
                          "a robust fit may set aside as bad readings: the model does not describe these data (an "
                          "effect it lacks, such as gravity sag: see calibrate advise)")


def _report_identifiability(result: CalibrationResult, gm, noload: MeasurementSet, requested, noise_sigma) -> None:
    """Identifiability of what was asked for and what was identified, at the identified geometry,
    on the rows of the unloaded measurements, with the measured noise."""
    sigma = result.fit_sigma if np.isfinite(result.fit_sigma) and result.fit_sigma > 0 else noise_sigma
    q = result.link_angles(noload.q, noload.load)
    meas = noload.with_q(q)
    extra = result.history[-1].get("_compliance_columns") if result.history else None
    result.identifiability = {
        "requested": analyse_identifiability(gm, result.params, q, requested, sigma, meas=meas).to_dict(),
        "identified": analyse_identifiability(gm, result.params, q, result.free_names, sigma, meas=meas,
                                              extra_columns=extra).to_dict(),
    }
    if result.history and "_compliance_columns" in result.history[-1]:
        del result.history[-1]["_compliance_columns"]


def _stiffness_notes(identified: np.ndarray, why: str) -> list[str]:
    missing = [str(i + 1) for i in np.flatnonzero(~identified)]
    if not missing:
        return []
    return [f"joint stiffness of joint(s) {', '.join(missing)} kept at the prior value: {why}"]


# --------------------------------------------------------------------------- compliance under link gravity


def _gravity_torques(gm, params, sets) -> list[np.ndarray]:
    robot = robot_for(gm, params)
    return [holding_torques(robot, s.q, s.load, links=True) for s in sets]


def backlash_support(tau: np.ndarray, joints) -> tuple[list[int], list[str], np.ndarray]:
    """Joints whose gear play the data can show: their holding torque has both signs, each on at
    least BACKLASH_MIN_POSES poses beyond the smoothing band. Returns (joints, notes, scale)."""
    n = tau.shape[1]
    peak = np.max(np.abs(tau), axis=0)
    scale = np.maximum(BACKLASH_SMOOTHING * peak, 1e-6)
    wanted = range(n) if joints == "auto" else joints
    ok, notes = [], []
    for j in wanted:
        if not 0 <= j < n:
            raise ValueError(f"backlash: joint {j + 1} is outside 1..{n}")
        pos = int(np.sum(tau[:, j] > scale[j]))
        neg = int(np.sum(tau[:, j] < -scale[j]))
        if min(pos, neg) >= BACKLASH_MIN_POSES:
            ok.append(j)
        elif joints != "auto":
            notes.append(f"backlash of joint {j + 1} not fitted: the data do not support it (its holding torque "
                         f"changes sign on {min(pos, neg)} of the poses, {BACKLASH_MIN_POSES} are needed on each "
                         "flank; a constant lean is absorbed by the joint's zero offset)")
    return ok, notes, scale


def massless_links(robot) -> list[int]:
    """0-based links whose model gives them no mass (absent or zero inertials)."""
    return [j for j in range(robot.dof) if not robot.inertial[j, 9] > 0]


def _link_list(links: list[int]) -> str:
    """1-based link numbers, runs as ranges: [1, 2, 3, 5] -> '2-4, 6'."""
    runs, start = [], None
    for k, j in enumerate(links):
        start = j if start is None else start
        if k + 1 == len(links) or links[k + 1] != j + 1:
            runs.append(f"{start + 1}" if start == j else f"{start + 1}-{j + 1}")
            start = None
    return ", ".join(runs)


LUMPED_NOTE = ("combined-gravity: the model gives no link a mass, so the gravity deflection is identified in lumped "
               "form ({count} products of joint compliance and link mass moments{dropped}; no stiffness per joint)")


def _combined_gravity_lumped(gm, sets, free, dropped, notes, prior, loss, f_scale) -> CalibrationResult:
    """combined-gravity on a model without masses: geometry and the lumped gravity terms
    (lumped_gravity.py), with the payload compliances when a loaded set is given."""
    start = fit_geometry(gm, sets[0].q, sets[0], free)
    fit = fit_lumped_gravity(gm, sets, free, start.params, prior, loss=loss, f_scale=f_scale,
                             excitation_tol=COMPLIANCE_EXCITATION_TOL)
    gone = f", {len(fit.dropped_terms)} more that these poses cannot tell from the geometry left out" if fit.dropped_terms else ""
    notes = [LUMPED_NOTE.format(count=fit.lumped.count, dropped=gone)] + notes
    failure = None
    if not fit.success:
        failure = f"the combined-gravity (lumped) fit did not converge ({fit.message})"
    elif fit.cost > fit.cost0 * (1 + 1e-9):
        failure = f"the combined-gravity (lumped) fit ended worse than it started (objective {fit.cost:.4g} > {fit.cost0:.4g})"
    if len(sets) > 1:
        notes += _stiffness_notes(fit.compliance_identified, "the payload does not twist them at these poses")
    history = [{"iteration": 0, "rms_residual_m": start.sigma},
               {"iteration": 1, "rms_residual_m": fit.sigma, "nfev": fit.nfev, "message": fit.message}]
    return CalibrationResult(gm, "combined-gravity", fit.params, fit.std, list(free), dropped, fit.compliance,
                             fit.compliance_identified, fit.compliance_std, 1, fit.success, history, notes, fit.sigma,
                             chi2=fit.chi2, failure=failure, lumped=fit.lumped, loss_scale=fit.f_scale)


def _combined_gravity(gm: GeometricModel, noload: MeasurementSet, loaded: MeasurementSet | None, free, dropped,
                      notes, prior, loss, backlash, f_scale=None) -> CalibrationResult:
    n = gm.dof
    massless = massless_links(gm.robot)
    sets = [noload] + ([loaded] if loaded is not None and len(loaded) else [])
    for s in sets[1:]:
        if s.load is None or s.load.mass <= 0:
            raise ValueError("load: the loaded measurements need their payload (mass and centre of mass)")
    if len(massless) == n:
        if backlash:
            raise ValueError("backlash: gear play needs link masses (the flank follows the holding torque's sign); "
                             "this model gives no link a mass")
        return _combined_gravity_lumped(gm, sets, free, dropped, notes, prior, loss, f_scale)
    idx = gm.indices(free)
    residuals = [Residual(gm, s) for s in sets]
    total = sum(r.size for r in residuals)
    # which joints the holding torques excite, measured on the nominal geometry
    taus = _gravity_torques(gm, gm.nominal, sets)
    cols = np.vstack([r.joint_jacobian(gm.nominal, s.q) * t[r.row_pose] for r, s, t in zip(residuals, sets, taus)])
    norms = np.linalg.norm(cols, axis=0)
    excited = norms > COMPLIANCE_EXCITATION_TOL * max(float(norms.max()), 1e-300)
    cj = np.flatnonzero(excited)
    tau_all = np.vstack(taus)
    bj, b_notes, b_scale = backlash_support(tau_all, backlash) if backlash else ([], [], np.ones(n))
    notes = notes + b_notes
    nx = idx.size + cj.size + len(bj)
    if total < minimum_equations(nx):
        raise ValueError(f"poses: {total} equations for {nx} parameters (geometry and joint compliances); at least "
                         f"{minimum_equations(nx)} are needed")
    c_scale = 1.0 / PRIOR_STIFFNESS  # compliances in units of the prior: numbers near 1 for the solver

    def unpack(x):
        params = gm.nominal.copy()
        params[idx] = x[:idx.size]
        c = prior.copy()
        c[cj] = x[idx.size:idx.size + cj.size] * c_scale
        b = np.zeros(n)
        b[bj] = x[idx.size + cj.size:]
        return params, c, b

    def link_q(params, c, b, s):
        return s.q + joint_deflection(robot_for(gm, params), s.q, c, s.load, links=True, backlash=b,
                                      backlash_scale=b_scale)

    def residual(x):
        params, c, b = unpack(x)
        return np.concatenate([r(params, link_q(params, c, b, s)) for r, s in zip(residuals, sets)])

    def jacobian(x):
        params, c, b = unpack(x)
        blocks = []
        robot = robot_for(gm, params)
        for r, s in zip(residuals, sets):
            ql = link_q(params, c, b, s)
            Jg, Jq = r.jacobian(params, ql, joint=True)
            tau = holding_torques(robot, ql, s.load, links=True)[r.row_pose]
            # d(q_link)/dc_j = -tau_j (first order); d(q_link)/db_j = -tanh(tau_j / scale) / 2
            Jc = deflection_columns(Jq, tau, cj) * c_scale
            Jb = -0.5 * Jq[:, bj] * np.tanh(tau[:, bj] / b_scale[bj])
            blocks.append(np.hstack([Jg[:, idx], Jc, Jb]))
        return np.vstack(blocks)

    # start from the least-squares geometric fit: its geometry is close, the compliances start at
    # the prior; a robust loss takes its scale from the residuals there
    start = fit_geometry(gm, noload.q, noload, free)
    x0 = np.concatenate([start.params[idx], prior[cj] / c_scale, np.zeros(len(bj))])
    require_excitation(jacobian(x0), [gm.names[i] for i in idx] + [f"compliance{j + 1}" for j in cj]
                       + [f"backlash{j + 1}" for j in bj])
    lower = np.concatenate([np.full(idx.size, -np.inf), np.zeros(cj.size + len(bj))])
    r0 = residual(x0)
    scale = 1.0 if loss == "linear" else (robust_scale(r0) if f_scale is None else float(f_scale))
    kwargs = {} if loss == "linear" else {"loss": loss, "f_scale": scale}
    sol = least_squares(residual, x0, jac=jacobian, method="trf", bounds=(lower, np.inf), x_scale="jac",
                        max_nfev=200, xtol=1e-12, ftol=1e-12, gtol=1e-12, **kwargs)
    params, c, b = unpack(sol.x)
    r = residual(sol.x)
    cost0, cost = robust_cost(r0, loss, scale), robust_cost(r, loss, scale)
    failure = None
    if not sol.success:
        failure = f"the combined-gravity fit did not converge ({sol.message})"
    elif cost > cost0 * (1 + 1e-9):
        failure = f"the combined-gravity fit ended worse than it started (objective {cost:.4g} > {cost0:.4g})"
    chi2 = float(r @ r) / max(r.size - nx, 1)
    J = jacobian(sol.x)
    cov = chi2 * np.linalg.pinv(J.T @ J)
    sd = np.sqrt(np.clip(np.diag(cov), 0, None))
    std = np.full(gm.size, np.nan)
    std[idx] = sd[:idx.size]
    c_std = np.full(n, np.nan)
    c_std[cj] = sd[idx.size:idx.size + cj.size] * c_scale
    b_std = np.full(n, np.nan)
    b_std[bj] = sd[idx.size + cj.size:]
    c_ident = np.zeros(n, bool)
    c_ident[cj] = True
    why = "the links' weight (and the payload) do not load them at these poses"
    if massless:
        why = (f"the model gives link(s) {_link_list(massless)} no mass, so their weight does not load the joints in "
               "the fit; where the rest does not either, the data cannot show the stiffness")
    notes += _stiffness_notes(c_ident, why)
    for j in bj:
        notes.append(f"backlash of joint {j + 1}: {np.rad2deg(b[j]) * 3600:.1f} arcsec "
                     f"(±{np.rad2deg(b_std[j]) * 3600:.1f} arcsec, 1σ)")
    raw = np.concatenate([rr.raw(params, link_q(params, c, b, s))[:3 * len(rr.points)] for rr, s in zip(residuals, sets)])
    npts = raw.size
    sigma = float(np.sqrt(np.mean(raw ** 2) * r.size / max(r.size - nx, 1))) if npts else float("nan")
    history = [{"iteration": 0, "rms_residual_m": start.sigma},
               {"iteration": 1, "rms_residual_m": sigma, "nfev": int(sol.nfev), "message": str(sol.message)}]
    # the compliance columns (in m per rad/(N·m)) for the identifiability report of the unloaded rows
    Jn = J[:residuals[0].size] / residuals[0].weights[:, None]
    Jn[residuals[0].kind == 1] *= 0.5
    history[-1]["_compliance_columns"] = {f"compliance{j + 1}": Jn[:, idx.size + m] / c_scale for m, j in enumerate(cj)}
    return CalibrationResult(gm, "combined-gravity", params, std, list(free), dropped, c, c_ident, c_std, 1,
                             bool(sol.success), history, notes, sigma, backlash=b, backlash_std=b_std,
                             backlash_scale=b_scale, chi2=chi2, failure=failure,
                             loss_scale=None if loss == "linear" else scale)
