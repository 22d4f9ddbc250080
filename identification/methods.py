"""Every identification method behind one entry point, on one processing path.

``identify_method(model, datasets, config, method)`` runs any of

- the least-squares estimators of :mod:`.estimators` (ols, wls, irls, ridge, tls), exactly as
  :func:`.pipeline.identify` does;
- the metaheuristics of Ni et al. 2024 / Zhong et al. 2023 (wso, pso, ga, icpso: eq. 14 in the OLS
  box, :mod:`.metaheuristic`);
- physically consistent identification (consistent: a semidefinite program, :mod:`.consistent`);
- the linear neural network of Zhong et al. 2023 (nn, :mod:`.neural`);
- stepwise identification of flexible joints, Chen et al. 2021 (stepwise, :func:`identify_stepwise`):
  it reads flexible-joint recordings (link and motor encoders, joint torque sensor, motor current;
  :data:`.data.FLEXIBLE_COLUMNS`) and writes its own sub-system by sub-system result, but takes the
  same processing options and runs the same :func:`.processing.process` on them.

All of them start from the same :func:`.pipeline.prepare` (the same processing, cut-off choice,
friction columns, Stribeck / sigmoid velocity scales and base parameters), so the result has the
same format whatever the method and ``validate`` / ``predict`` read it unchanged. A method's own
findings (convergence history, feasibility, network epochs) go in one extra section of the result,
named after the method family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from robodyn.robot.model import RobotModel

from .estimators import METHODS as LEAST_SQUARES
from .estimators import NormalEquations, accumulate, covariance_free_estimate, estimate, ols
from .metaheuristic import METAHEURISTICS, NI2024_POPULATION
from .pipeline import IdentificationConfig, IdentificationResult, PreparedData, prepare, result_from
from .signals import SampledData
from .names import DESCRIPTIONS, METHODS, OTHER  # noqa: F401  (re-exported)



@dataclass
class MethodOptions:
    """Options that only some methods read; the rest ignore them."""

    weights: str | Sequence[float] | None = None  # metaheuristics: joint weights psi_j, or "inverse-variance"
    population: int | None = None  # metaheuristics (default: Ni et al. 2024's 150)
    iterations: int | None = None  # metaheuristics: iterations / generations; nn: epochs
    seed: int = 0  # metaheuristics
    reference_weight: float | None = None  # consistent: closeness to the CAD values
    cad_reference: bool = True  # consistent: regularise towards the model's CAD values (else zero)
    torque_constant: Sequence[float] | None = None  # stepwise: N.m/A per motor (None: identified)
    held_out: Sequence[str] = ()  # stepwise: recordings the identified model is validated on


@dataclass
class MethodResult:
    result: IdentificationResult
    details: dict = field(default_factory=dict)  # the method's own section of the result document
    summary: str = ""  # one line for a terminal

    def to_json_dict(self) -> dict:
        return {**self.result.to_json_dict(), **self.details}

    to_dict = to_json_dict


def joint_weights_from(weights, ne: NormalEquations) -> np.ndarray | None:
    """Joint weights psi_j of Ni et al. 2024 eq. 14: None (all 1), numbers, or 'inverse-variance'
    (1 / sigma_j^2 of the OLS residuals, Gautier's weighting)."""
    if weights is None:
        return None
    if isinstance(weights, str):
        if weights == "inverse-variance":
            rss = ne.joint_rss(ols(ne).theta)
            sigma2 = rss / np.maximum(ne.rows - ne.params / ne.dof, 1)
            return 1.0 / np.maximum(sigma2, 1e-30)
        try:
            weights = [float(x) for x in weights.split(",")]
        except ValueError:
            raise ValueError(f"weights: expected {ne.dof} comma-separated numbers or 'inverse-variance', "
                             f"got {weights!r}") from None
    psi = np.asarray(weights, float).reshape(-1)
    if psi.shape != (ne.dof,):
        raise ValueError(f"weights: expected {ne.dof} joint weights, got {psi.size}")
    return psi


def metaheuristic_options(method: str, options: MethodOptions):
    from .metaheuristic import ni2024_options

    return ni2024_options(method, options.population or NI2024_POPULATION, options.iterations)


def iteration_budget(method: str, options: MethodOptions) -> int | None:
    """How many iterations a method will run (for a progress bar); None for the closed forms."""
    if method in METAHEURISTICS:
        o = metaheuristic_options(method, options)
        return int(getattr(o, "iterations", getattr(o, "generations", 0)))
    if method == "nn":
        return options.iterations or 20000
    return None


def prepare_statistics(model: RobotModel, datasets: Sequence[SampledData], config: IdentificationConfig, *,
                       preprocessed: bool = False, progress: Callable[[str, float], None] | None = None
                       ) -> tuple[PreparedData, NormalEquations]:
    """The processing every method shares (:func:`.pipeline.prepare`) and the data's normal
    equations: prepare once, then run as many methods as wanted (``identify_method(prepared=...)``)."""
    report = progress or (lambda stage, fraction: None)
    prep = prepare(model, datasets, config, preprocessed=preprocessed, progress=report)
    report("accumulating the normal equations", 0.1)
    return prep, accumulate(prep.chunks, model.dof, prep.params)


def identify_method(model: RobotModel, datasets: Sequence[SampledData], config: IdentificationConfig, method: str, *,
                    options: MethodOptions | None = None, sources: Sequence[str] = (), preprocessed: bool = False,
                    progress: Callable[[str, float], None] | None = None,
                    iteration_callback: Callable | None = None,
                    prepared: tuple[PreparedData, NormalEquations] | None = None) -> MethodResult:
    """Identify with ``method`` (see the module doc). ``progress(stage, fraction)`` reports the
    stages; ``iteration_callback(optimizers.Progress)`` is called once per metaheuristic iteration.
    ``prepared`` (from :func:`prepare_statistics` on the same data and config) skips the processing."""
    options = options or MethodOptions()
    report = progress or (lambda stage, fraction: None)
    if method == "stepwise":
        raise ValueError("method: stepwise identification reads flexible-joint recordings; call identify_stepwise "
                         "(or `robodyn identify --method stepwise`)")
    if method not in METHODS:
        raise ValueError(f"method: expected one of {list(METHODS)}, got {method!r}")
    prep, ne = prepared or prepare_statistics(model, datasets, config, preprocessed=preprocessed, progress=report)
    if method in LEAST_SQUARES:
        report(f"estimating ({method})", 0.2)
        est, statistics = estimate(method, prep.chunks, model.dof, prep.params, prep.names, statistics=ne)
        report("done", 1.0)
        return MethodResult(result_from(model, prep, est, statistics, sources, method=method))
    joints = list(model.joint_names)
    if method in METAHEURISTICS:
        from .metaheuristic import identify_linear

        report(f"{method}: searching the box around OLS", 0.2)
        res = identify_linear(ne, method, weights=joint_weights_from(options.weights, ne), seed=options.seed,
                              options=metaheuristic_options(method, options), callback=iteration_callback,
                              joint_names=joints, names=prep.names)
        theta, details = res.theta, {"metaheuristic": res.to_dict()}
        summary = f"{method}: J = {res.fitness:.6g} N.m^2 after {res.iterations} iterations ({res.elapsed:.2f} s)"
        note = f"{method}: a metaheuristic has no covariance; see the 'metaheuristic' section"
    elif method == "consistent":
        from .consistent import identify_consistent, nominal_reference

        if prep.params != prep.base.count:
            raise ValueError(f"friction: --method consistent needs parameters with a physical meaning; the "
                             f"{config.friction} friction columns ({', '.join(prep.extra_names[:3])}, ...) are not "
                             "standard parameters: use --friction coulomb-viscous or none")
        report("consistent: solving the semidefinite program", 0.2)
        kwargs = {} if options.reference_weight is None else {"reference_weight": options.reference_weight}
        res = identify_consistent(ne, prep.base, model.dof, joint_names=joints,
                                  reference=nominal_reference(model, prep.base.spec) if options.cad_reference else None,
                                  **kwargs)
        theta, details = res.theta, {"consistent": res.to_dict()}
        increase = res.rmse_increase
        summary = (f"physically consistent: all links feasible = {res.feasibility['feasible']}; RMSE sum "
                   f"{increase['rmse_sum']:.4f} N.m vs OLS {increase['rmse_sum_ols']:.4f} N.m")
        note = "consistent: the semidefinite program gives no covariance; see the 'consistent' section"
    else:  # nn
        from .neural import train_linear_network

        report("nn: training the linear network", 0.2)
        fit = train_linear_network(ne, epochs=options.iterations or 20000)
        theta, details = fit.theta, {"neural_network": fit.to_dict()}
        summary = f"linear network: {fit.epochs} epochs, converged = {fit.converged}"
        note = "nn: gradient descent gives no covariance; see the 'neural_network' section"
    est = covariance_free_estimate(method, theta, ne, prep.names, note)
    report("done", 1.0)
    return MethodResult(result_from(model, prep, est, ne, sources, method=method), details, summary)


def identification_document(model: RobotModel, datasets: Sequence[SampledData], config: IdentificationConfig,
                            method: str, **kwargs) -> tuple[dict, dict, str]:
    """:func:`identification_result` as its JSON document, the method's own section and the summary line."""
    result, details, summary = identification_result(model, datasets, config, method, **kwargs)
    return result.to_json_dict(), details, summary


def identification_result(model: RobotModel, datasets: Sequence[SampledData], config: IdentificationConfig,
                          method: str, *, options: MethodOptions | None = None, select: bool = False,
                          holdout: Sequence[SampledData] = (), folds: int | None = None,
                          sources: Sequence[str] = (), holdout_sources: Sequence[str] = (),
                          preprocessed: bool = False, progress: Callable[[str, float], None] | None = None,
                          iteration_callback: Callable | None = None, choose_method: bool = False
                          ) -> tuple[IdentificationResult, dict, str]:
    """The result of one identification, the method's own section of it (also one of the result's
    sections) and a one-line summary: ``method`` (or, with ``select``, the least-squares model
    selection of :mod:`.selection`: blocked cross-validation in ``folds`` blocks, each ``holdout``
    recording one more fold), the method's own section, the coverage record (what the fit saw, per
    joint: :mod:`.coverage`), for raw data the fit against what the sensor measured, processed
    exactly as validation will process it, and the fit's error on each ``holdout`` recording.
    ``choose_method`` (the command's default, no method named) also tries the physically consistent
    fit beside the least-squares ``method`` on the held-out quarter that judges the cut-off
    (selection.validated_choice) and fits with the better of the two."""
    from .coverage import identification_coverage
    from .pipeline import add_checks, validate

    details, summary = {}, ""
    if select:
        from .folds import FOLDS
        from .selection import select as select_model

        result = select_model(model, datasets, config, folds=folds or FOLDS, holdout=list(holdout),
                              sources=list(sources), progress=progress)
    else:
        choice_note = None
        if not preprocessed:  # the automatic cut-off judged on held-out data, not assumed (selection.py)
            from .selection import CONSISTENT, consistent_fit_available, validated_choice

            # other methods keep the cut-off their config's estimator validates
            methods = [method if method in LEAST_SQUARES else config.method]
            if choose_method and method in LEAST_SQUARES and config.friction_model is None \
                    and config.friction in ("coulomb-viscous", "none"):
                if consistent_fit_available():
                    methods.append(CONSISTENT)
                else:
                    choice_note = ("method: the physically consistent fit was not compared with " + method +
                                   " (it needs the sdp extra: pip install 'robodyn[sdp]')")
            config, chosen_method, record = validated_choice(model, datasets, config, methods)
            method = chosen_method if method in LEAST_SQUARES else method
            if len(methods) > 1 and record.get("method"):
                best = {c["method"]: c["rmse_sum"] for c in record["candidates"]
                        if c["cutoff_hz"] == record["cutoff_hz"] and c["rmse_sum"] is not None}
                choice_note = ("method: " + method + " chosen on the last quarter of the data, held out: " +
                               ", ".join(f"{m} {v:.4g} N.m" for m, v in best.items()) +
                               " (sum of per-joint RMSE against the measured torque)")
        outcome = identify_method(model, datasets, config, method, options=options, sources=sources,
                                  preprocessed=preprocessed, progress=progress, iteration_callback=iteration_callback)
        result, details, summary = outcome.result, outcome.details, outcome.summary
        if choice_note:
            result.estimate.notes.append(choice_note)
    result.sections.update(details)
    add_checks(model, datasets, result, preprocessed)
    result.coverage = identification_coverage(datasets, result.config.processing, model.joint_names,
                                              result.friction_model, preprocessed)
    if not preprocessed:
        from .intervals import residual_model

        measured = validate(model, result, datasets)
        result.metrics["measured"] = {k: v for k, v in measured.items() if k != "filtered"}
        # the residual model of the prediction intervals (intervals.py), on the same samples
        # held-out recordings of other motion, when given, calibrate the interval's spread
        result.residual_model = residual_model(model, result, datasets, held_out=list(holdout))
        if len(datasets) > 1:  # several recordings, each processed on its own and stacked: each one's fit
            names = list(sources) if len(sources) == len(datasets) else [f"recording {k + 1}"
                                                                         for k in range(len(datasets))]
            weights = result.config.recording_weights
            weights = weights if isinstance(weights, list) and len(weights) == len(datasets) else [None] * len(datasets)
            result.metrics["per_recording"] = [
                {"recording": name, "weight": None if w is None else np.broadcast_to(w, (model.dof,)).tolist(),
                 **{k: v for k, v in validate(model, result, [d]).items() if k != "filtered"}}
                for name, d, w in zip(names, datasets, weights)]
    if holdout:
        held = validate(model, result, list(holdout))
        result.metrics["held_out"] = {"recordings": list(holdout_sources),
                                      **{k: v for k, v in held.items() if k != "filtered"}}
    return result, details, summary


def identify_stepwise(model: RobotModel, sources: Sequence, config: IdentificationConfig,
                      options: MethodOptions | None = None) -> dict:
    """Chen et al. 2021's stepwise identification of a flexible-joint arm (identification.
    stepwise_recorded.identify_recorded) with the shared options: ``config.processing`` is the one processing every
    method gets; ``options.held_out`` recordings validate the result against what their sensors
    measured. Options that have no meaning for the method are refused, not ignored."""
    from .stepwise_recorded import identify_recorded

    options = options or MethodOptions()
    if config.friction != "coulomb-viscous" or config.friction_model is not None:
        raise ValueError(f"friction: stepwise identification uses Chen et al. 2021's viscous + Coulomb friction on "
                         f"both sides of the spring; --friction {config.friction} / --friction-model do not apply")
    if config.processing.min_velocity:
        raise ValueError("min_velocity: stepwise identification chooses its samples per sub-system (sweeps, rests, "
                         "moving motors); --min-velocity does not apply")
    recordings = list(sources) + list(options.held_out)
    cfg = {"processing": config.processing, "identify": len(sources)}
    if options.torque_constant is not None:
        cfg["torque_constant"] = list(options.torque_constant)
    return identify_recorded(model, recordings, cfg)
