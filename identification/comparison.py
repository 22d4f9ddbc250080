"""Identification methods side by side on the same data (Ni et al. 2024 Table 4 layout).

Every method runs through the same processing and the same normal equations (one preparation for
all of them); each is scored on the identification data and on held-out data: per-joint torque
RMSE, the fitness J of Ni et al. 2024 eq. 14, and the time taken.

The data (:class:`ComparisonData`) come from recordings (:func:`recorded_data`), a simulation
(:func:`simulated_data`: the identifier's own model, an inverse crime, or a realistic plant of
:mod:`.comparison_data`) or the real Staubli TX40 set (:func:`tx40_data`). With recordings, the
realistic plants and the TX40 set, the held-out RMSE is against the measured (unfiltered) torque.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from robodyn.errors import UserError
from robodyn.papers import cite
from robodyn.robot.model import RobotModel

from .datasets import tx40
from .comparison_data import (ASSUMED_PANDA_ROTOR_INERTIA, PLANTS, TX40_PLANT, tx40_raw_after, tx40_split)
from .estimators import NormalEquations, ols, wls
from .metaheuristic import (METAHEURISTICS, NI2024_ITERATIONS, NI2024_POPULATION, QuadraticFitness,
                            identify_linear, joint_weights, ni2024_options, normal_equations_of)
from .methods import DESCRIPTIONS, MethodOptions, identify_method, joint_weights_from, prepare_statistics
from .pipeline import IdentificationConfig, validate_many
from .signals import SampledData
from .names import COMPARABLE  # noqa: F401  (re-exported)

TX40_DIR = tx40.DATA_DIR


@dataclass
class ComparisonData:
    """What a comparison identifies from and is judged on. ``plant`` describes the source: its
    ``description``, whether it is an ``inverse_crime``, and optionally the ``noise_floor`` of a
    realistic plant and the ``measured_heldout`` raw data a processed held-out part is judged on."""

    model: RobotModel
    config: IdentificationConfig
    identification: list[SampledData]
    held_out: list[SampledData]
    preprocessed: bool
    sources: list[str]
    plant: dict = field(default_factory=dict)


def tx40_data(directory=None, split: float = 0.5) -> ComparisonData:
    """The real Staubli TX40 set, processed once; its first ``split`` identifies, the rest is held
    out and scored against its measured (unfiltered) torque."""
    directory = Path(directory) if directory else TX40_DIR
    model, config, ident, held = tx40_split(directory, split)
    sources = [f"{directory}: the 9 s run processed once; its first {split:.0%} identifies, the rest is "
               "held out and scored against its measured (unfiltered) torque"]
    return ComparisonData(model, config, [ident], [held], True, sources,
                          {"description": TX40_PLANT, "inverse_crime": False,
                           "measured_heldout": [tx40_raw_after(directory, held)]})


def simulated_data(model: RobotModel, config: IdentificationConfig, plant: str = "rnea", *, seed: int = 0,
                   seconds: float = 60.0, rate: float | None = None, noise: float | None = None) -> ComparisonData:
    """An identification run (seed S) and a held-out run (seed S+1) of a registered plant
    (:data:`.comparison_data.PLANTS`). The identifier's own model (``rnea``) gives exact qd and qdd and
    frictionless torques, so friction is not identified; a realistic plant's sensor model fixes the
    rate and the noise, and its raw logs go through the shared processing."""
    if plant not in PLANTS:
        raise ValueError(f"plant: unknown {plant!r}; registered: {sorted(PLANTS)}")
    p = PLANTS[plant]
    if p.sensor is not None:
        return _realistic_data(model, config, p, seed=seed, seconds=seconds, rate=rate, noise=noise)
    rate = 100.0 if rate is None else rate
    noise = 0.5 if noise is None else noise
    rotor = np.array(ASSUMED_PANDA_ROTOR_INERTIA) if model.name == "panda" else model.rotor_inertia
    runs = [p.simulate(model, seed=seed + k, seconds=seconds, rate_hz=rate, noise=noise, rotor_inertia=rotor)
            for k in (0, 1)]
    # the simulated torques carry no friction: identify the rigid body (and rotor inertia) only
    config = replace(config, friction="none")
    sources = [f"simulated {model.name}: {p.description}, {noise} N.m noise, {seconds} s at "
               f"{rate} Hz, seeds {seed} (identification) and {seed + 1} (held out)"]
    return ComparisonData(model, config, runs[:1], runs[1:], p.exact_derivatives, sources,
                          {"description": p.description, "inverse_crime": not p.differs_from_model})


def _realistic_data(model, config, plant, *, seed, seconds, rate, noise) -> ComparisonData:
    """Two runs of one realistic arm (:mod:`.realistic_logs`): seed S identifies, seed S+1 (a second
    excitation of the same arm, recorded after it) is held out. Raw logs: the shared processing,
    and scores against what the sensor measured."""
    from .realistic_logs import SENSORS

    for name, value in (("--rate", rate), ("--noise", noise)):
        if value is not None:
            raise UserError(f"{name}: the {plant.name} plant's {plant.sensor}-like sensor model fixes the sampling "
                            f"rate ({SENSORS[plant.sensor]['rate_hz']:g} Hz) and the noise; drop {name}")
    try:
        logs = [plant.record(model, seed=seed + k, seconds=seconds) for k in (0, 1)]
    except ValueError as exc:
        raise UserError(f"--simulate: the {plant.name} plant cannot run {model.name}: {exc}") from exc
    floor = logs[1].noise_floor
    sources = [f"simulated {model.name}: {plant.description}; {seconds} s per run, excitation and sensor seeds "
               f"{seed} (identification) and {seed + 1} (held out), the same arm (plant seed 7)"]
    return ComparisonData(model, config, [logs[0].data], [logs[1].data], False, sources,
                          {"description": plant.description, "inverse_crime": False, "plant_name": plant.name,
                           "noise_floor": {"rmse": floor.tolist(), "rmse_sum": float(floor.sum()),
                                           "note": "held-out run: RMS of measured torque - the plant's own torque "
                                                   "at the measured samples, in the measurement's units (the best "
                                                   "any model can do)"}})


def recorded_data(model: RobotModel, config: IdentificationConfig, identification: Sequence[SampledData],
                  sources: Sequence[str], *, held_out: Sequence[SampledData] | None = None,
                  held_out_sources: Sequence[str] = (), holdout: float | None = None,
                  preprocessed: bool = False) -> ComparisonData:
    """Recordings: held-out recordings, or the last ``holdout`` fraction of each one, by time."""
    if held_out is not None:
        return ComparisonData(model, config, list(identification), list(held_out), preprocessed,
                              list(sources) + list(held_out_sources), {"description": "recordings",
                                                                      "inverse_crime": False})
    from .selection import split_by_time

    pairs = [split_by_time(d, holdout) for d in identification]
    return ComparisonData(model, config, [a for a, _ in pairs], [b for _, b in pairs], preprocessed,
                          [f"{f} (the last {holdout:.0%} held out, by time)" for f in sources],
                          {"description": "recordings", "inverse_crime": False})


def method_iterations(method: str, iterations: int | None = None, iteration_scale: float = 1.0) -> int | None:
    """A metaheuristic's iteration count: ``iterations`` for all, else Ni et al. 2024's count scaled;
    None for the closed-form methods."""
    if method not in METAHEURISTICS:
        return None
    if iterations is not None:
        return iterations
    return max(1, int(round(NI2024_ITERATIONS[method] * iteration_scale)))


def compare_methods(data: ComparisonData, methods: Sequence[str], options: MethodOptions | None = None, *,
                    iteration_scale: float = 1.0, epochs: int | None = None,
                    progress: Callable[[str, float], None] | None = None, iteration_callback=None) -> dict:
    """Every method of ``methods`` on ``data``; the comparison table (JSON-ready).

    ``options``: the methods' options (population, iterations for all, seed, weights, ...);
    ``iteration_scale`` scales Ni et al. 2024's iteration counts when ``options.iterations`` is
    None; ``epochs`` is the linear network's training budget. ``progress(stage, fraction)`` is
    called before each step, ``iteration_callback(Progress)`` once per metaheuristic iteration."""
    options = MethodOptions(population=NI2024_POPULATION) if options is None else options
    unknown = [m for m in methods if m not in COMPARABLE]
    if unknown or not methods:
        raise ValueError(f"methods: expected some of {list(COMPARABLE)}, got {list(methods)}")
    model, ident, held, preprocessed = data.model, data.identification, data.held_out, data.preprocessed
    plant = data.plant
    joints = list(model.joint_names)
    steps = len(methods) + 1

    def report(stage: str, done: int) -> None:
        if progress is not None:
            progress(stage, done / steps)

    report("preparing the data", 0)
    prep, ne = prepare_statistics(model, ident, data.config, preprocessed=preprocessed)
    held_ne = prepare_statistics(model, held, prep.config, preprocessed=True)[1] if preprocessed else None
    weights = joint_weights_from(options.weights, ne)
    fitness = QuadraticFitness.from_statistics(ne, weights)
    rows, thetas, iterations = [], [], {}
    for k, method in enumerate(methods):
        report(f"{method}: {DESCRIPTIONS[method]}", k + 1)
        method_options = replace(options, iterations=epochs if method == "nn" else options.iterations)
        its = method_iterations(method, options.iterations, iteration_scale)
        if its is not None:
            method_options.iterations = iterations[method] = its
        t0 = time.perf_counter()
        outcome = identify_method(model, ident, data.config, method, options=method_options, prepared=(prep, ne),
                                  iteration_callback=iteration_callback)
        elapsed = time.perf_counter() - t0
        theta = outcome.result.estimate.theta
        row = {"method": method, "fitness": float(fitness(theta)[0]), "elapsed_s": elapsed}
        meta = outcome.details.get("metaheuristic")
        if meta:
            row.update(nfev=meta["nfev"], iterations=meta["iterations"], history_every_10=meta["history"][::10])
        if "consistent" in outcome.details:
            row["feasible"] = outcome.details["consistent"]["feasibility"]["feasible"]
        rows.append(row)
        thetas.append(theta)
    report("scoring", 1)
    if plant.get("measured_heldout"):  # processed once for the fit; held out against the measured torque
        measured = validate_many(model, prep, thetas, plant["measured_heldout"])
        scores = [(ne.metrics(th, joints), out) for th, out in zip(thetas, measured)]
        for row, th in zip(rows, thetas):
            processed = held_ne.metrics(th, joints)
            row.update(heldout_processed_rmse=processed["rmse"], heldout_processed_sum=processed["rmse_sum"])
        against = ("the measured (unfiltered) torque of the held-out part; the identification part against its "
                   "processed torque (the held-out part against its processed torque: --json, "
                   "heldout_processed_rmse and heldout_processed_sum)")
    elif preprocessed:  # exact qd, qdd: the normal equations are the data, sample for sample
        scores = [(ne.metrics(th, joints), held_ne.metrics(th, joints)) for th in thetas]
        against = "the (preprocessed) torque of the data"
    else:  # against what the sensor measured, each piece processed as for the fit
        scores = list(zip(validate_many(model, prep, thetas, ident), validate_many(model, prep, thetas, held)))
        against = "the measured torque"
    for row, (fit, out) in zip(rows, scores):
        row.update(identification_rmse=fit["rmse"], identification_sum=fit["rmse_sum"],
                   heldout_rmse=out["rmse"], heldout_sum=out["rmse_sum"])
    best = min([float(fitness(ols(ne, prep.names).theta)[0])] + [r["fitness"] for r in rows])
    for r in rows:
        r["fitness_gap_to_best"] = r["fitness"] - best
    return {"joints": joints, "weights": joint_weights(weights, ne.dof).tolist(), "rows": rows,
            "robot": model.name, "base_parameters": prep.base.count, "parameters": prep.params,
            "methods": {m: DESCRIPTIONS[m] for m in methods}, "sources": list(data.sources), "against": against,
            "iterations": iterations, "population": options.population, "seed": options.seed,
            "plant": plant["description"], "inverse_crime": plant["inverse_crime"],
            **({"noise_floor": plant["noise_floor"]} if "noise_floor" in plant else {}),
            "friction": prep.config.friction, "processing": prep.config.processing.to_dict(),
            "equations": {"identification": int(ne.rows.sum()),
                          "held_out": int(held_ne.rows.sum()) if held_ne is not None else None},
            "cond_identification": float(ols(ne, prep.names).cond),
            "fitness": f"J of {cite('wso')} eq. 14 (N.m^2) on the identification data; the OLS closed form is "
                       "its global minimum"}


# --------------------------------------------------------------------------- from normal equations alone


def rmse_row(name: str, ident: dict, heldout: dict | None, extra: dict | None = None) -> dict:
    row = {"method": name, "identification_rmse": ident["rmse"], "identification_sum": ident["rmse_sum"]}
    if heldout is not None:
        row.update(heldout_rmse=heldout["rmse"], heldout_sum=heldout["rmse_sum"])
    row.update(extra or {})
    return row


def compare_linear(ident: NormalEquations, heldout: NormalEquations | None, joint_names, *,
                   methods: Sequence[str] = ("wso", "pso", "ga"), weights=None, seed: int = 0,
                   population: int = NI2024_POPULATION, iterations: dict | None = None,
                   callback=None, names=None) -> dict:
    """Table-4-style rows: each metaheuristic on eq. 14 in the OLS box, plus OLS and WLS closed forms."""
    rows = []
    estimate_ols = ols(ident, names)
    fitness = QuadraticFitness.from_statistics(ident, weights)
    reference = {"ols": estimate_ols.theta, "wls": wls(ident, names).theta}
    for name, theta in reference.items():
        rows.append(rmse_row(name, ident.metrics(theta, joint_names),
                             heldout.metrics(theta, joint_names) if heldout is not None else None,
                             {"fitness": float(fitness(theta)[0]), "elapsed_s": 0.0}))
    for method in methods:
        its = (iterations or {}).get(method)
        res = identify_linear(ident, method, weights=weights, seed=seed,
                              options=ni2024_options(method, population, its), callback=callback,
                              joint_names=joint_names, center=estimate_ols.theta)
        rows.append(rmse_row(method, res.metrics, heldout.metrics(res.theta, joint_names) if heldout else None,
                             {"fitness": res.fitness, "elapsed_s": res.elapsed, "nfev": res.nfev,
                              "iterations": res.iterations,
                              "history_every_10": res.history[::10]}))
    best = min(float(fitness(reference["ols"])[0]), *(r["fitness"] for r in rows))
    for r in rows:
        r["fitness_gap_to_best"] = r["fitness"] - best
    return {"joints": list(joint_names), "weights": joint_weights(weights, ident.dof).tolist(), "rows": rows}


def format_table(comparison: dict, heldout: bool = True) -> str:
    """Markdown table: per-joint RMSE (N.m) per method, then the sums (Ni et al. 2024 Table 4 layout)."""
    rows = comparison["rows"]
    header = "| joint | " + " | ".join(r["method"].upper() for r in rows) + " |"
    sep = "|---|" + "---|" * len(rows)
    out = []
    for label, key, total in (("identification trajectory", "identification_rmse", "identification_sum"),
                              ("held-out trajectory", "heldout_rmse", "heldout_sum")):
        if key not in rows[0] or (key.startswith("heldout") and not heldout):
            continue
        out += [f"**{label}** (RMSE, N.m)", "", header, sep]
        for j, name in enumerate(comparison["joints"]):
            out.append(f"| {name} | " + " | ".join(f"{r[key][j]:.4f}" for r in rows) + " |")
        out.append("| **sum** | " + " | ".join(f"**{r[total]:.4f}**" for r in rows) + " |")
        out.append("")
    return "\n".join(out)


def tx40_comparison(directory, *, fraction: float = 0.5, methods=("wso", "pso", "ga"), population: int = 150,
                    iteration_scale: float = 1.0, seed: int = 0, weights=None) -> dict:
    """The Table-4 comparison on REAL data (:func:`tx40_split`): compare_linear's table plus its
    provenance."""
    model, config, ident, held = tx40_split(directory, fraction)
    base, ne_ident = normal_equations_of(model, [ident], config, preprocessed=True)
    _, ne_held = normal_equations_of(model, [held], config, base=base, preprocessed=True)
    iterations = {m: max(1, int(round(NI2024_ITERATIONS[m] * iteration_scale))) for m in methods}
    table = compare_linear(ne_ident, ne_held, list(model.joint_names), methods=methods, weights=weights, seed=seed,
                           population=population, iterations=iterations, names=base.names)
    table.update(robot="staubli_tx40", base_parameters=base.count, iterations=iterations, population=population,
                 seed=seed, plant=TX40_PLANT, inverse_crime=False,
                 sources=[f"{directory}: the 9 s run processed once; its first {fraction:.0%} identifies, the rest is held out"],
                 equations={"identification": int(ne_ident.rows.sum()), "held_out": int(ne_held.rows.sum())},
                 cond_identification=float(ols(ne_ident, base.names).cond))
    return table


