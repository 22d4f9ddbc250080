"""`robodyn reproduce PAPER`: each source paper's headline table beside robodyn's, on the paper's setup.

Every number carries the command that produces it. Where a paper's number cannot be reached, a
*finding* says why (unstated parameter, OCR-garbled formula, physically impossible value, data that
are not public) together with the measurement that shows it. Papers are cited by authors, year and
title (robodyn.papers); the keys below are what the command line accepts.

- ``wso``          Ni et al. 2024, white shark optimizer identification of a Franka arm: Table 4
                   (torque RMSE of WSO / PSO / GA) on the simulated Panda and on the real Staubli TX40.
- ``stepwise``     Chen et al. 2021, stepwise identification of flexible-joint robots: Table 3
                   (minimum condition numbers of the periodic-polynomial excitation).
- ``icpso``        Zhong et al. 2023, chaotic PSO excitation design for a SCARA: Table 2 (ICPSO, APSO,
                   LPSO on F1-F5), the SCARA excitation's condition numbers, Tables 4-5 (linear neural
                   network identification).
- ``ur10e``        Mamedov & Mikhel 2020 walk-through: 70 -> 43 base parameters of a 7-DOF arm by QR,
                   and the simulated torque error.
- ``calibration``  Li et al. 2023, UR5 kinematic calibration with joint stiffness: Table 4, through the
                   existing replay (robodyn.calibration.replay), unchanged.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from robodyn.papers import cite, reference

from . import optimizers as opt

PAPER_KEYS = ("wso", "stepwise", "icpso", "ur10e", "calibration")


# --------------------------------------------------------------------------- report structure


@dataclass
class Row:
    quantity: str
    paper: object  # a number, a short text, or None when the paper has no such number
    robodyn: object
    command: str  # the command that prints robodyn's number
    note: str = ""


@dataclass
class Table:
    title: str
    rows: list[Row]


@dataclass
class Finding:
    """A paper number robodyn does not reach, and the measurement that says why."""

    claim: str  # the paper's number
    reason: str  # unstated parameter | OCR-garbled formula | physically impossible | data not public | ...
    evidence: str  # the measurement
    command: str


@dataclass
class Reproduction:
    key: str
    setup: str
    tables: list[Table] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    details: dict = field(default_factory=dict)  # everything measured, for --json and bench/papers
    elapsed: float = 0.0

    def to_dict(self) -> dict:
        return {"paper": cite(self.key), "reference": reference(self.key), "setup": self.setup,
                "tables": [asdict(t) for t in self.tables], "findings": [asdict(f) for f in self.findings],
                "details": self.details, "elapsed_s": self.elapsed}

    def format(self) -> str:
        out = [reference(self.key), "", f"Setup: {self.setup}", ""]
        for t in self.tables:
            out.append(t.title)
            width = max([len(r.quantity) for r in t.rows] + [8])
            out.append(f"  {'quantity':<{width}}  {'paper':>16}  {'robodyn':>16}  command")
            for r in t.rows:
                out.append(f"  {r.quantity:<{width}}  {_fmt(r.paper):>16}  {_fmt(r.robodyn):>16}  {r.command}")
                if r.note:
                    out.append(f"  {'':<{width}}  {'':>16}  {'':>16}  ({r.note})")
            out.append("")
        if self.findings:
            out.append("Not reached, and why:")
            for f in self.findings:
                out.append(f"- {f.claim}: {f.reason}. {f.evidence} [{f.command}]")
            out.append("")
        return "\n".join(out)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, (float, np.floating)):
        a = abs(float(v))
        if a != 0 and (a < 1e-3 or a >= 1e5):
            return f"{float(v):.3e}"
        return f"{float(v):.4g}"
    return str(v)


def _mean_var(values) -> str:
    values = np.asarray(values, float)
    return f"{values.mean():.3g} ({values.var():.3g})"


# --------------------------------------------------------------------------- Zhong et al. 2023: Table 2

# Zhong et al. 2023 Table 2: (mean, variance) of the best value over 20 runs; no plain-PSO column.
ZHONG_TABLE_2 = {
    "F1": {"ICPSO": (10.9, 1.68), "APSO": (14.6, 2.52), "LPSO": (11.1, 2.12)},
    "F2": {"ICPSO": (1.11, 0.055), "APSO": (1.16, 0.079), "LPSO": (1.18, 0.066)},
    "F3": {"ICPSO": (43.0, 13.9), "APSO": (52.0, 26.3), "LPSO": (53.8, 18.4)},
    "F4": {"ICPSO": (8.08, 1.39), "APSO": (9.00, 1.87), "LPSO": (8.85, 1.53)},
    "F5": {"ICPSO": (3.59, 2.59), "APSO": (3.51, 4.80), "LPSO": (3.73, 4.23)},
}
# Where the paper says ICPSO is better (section 3.1): F1-F4 against APSO and LPSO; on F5 it loses to APSO.
ZHONG_ICPSO_BETTER = ("F1", "F2", "F3", "F4")

TABLE2_METHODS = {"ICPSO": "icpso", "APSO": "apso", "LPSO": "lpso", "PSO": "pso"}


def table2_options(method: str, population: int = 50, iterations: int = 100, **extra):
    """Zhong et al. 2023 section 3.1 settings: dimension 30, Size = 50, T = 100, c in [0.5, 2.5],
    w in [0.4, 0.9]; ICPSO C = 10, delta = 1 and f_d = 0 (every function's optimum)."""
    options = opt.default_options(method)
    kwargs = {"population": population, "iterations": iterations, **extra}
    if method == "icpso":
        kwargs.update(variance_threshold=10.0, delta=1.0, target=0.0)
    return type(options)(**{**asdict(options), **kwargs})


def run_benchmark(function: str, method: str, runs: int = 20, *, seed: int = 2023, dim: int = 30,
                  options=None) -> dict:
    """``runs`` independent runs of ``method`` on one Table 1 function: final best values and
    evaluations. Run k uses the seed sequence (seed, k) for the optimizer and a child of it for
    F5's noise, so every method meets the same noise stream per run."""
    options = table2_options(method) if options is None else options
    best, evaluations, messages = [], [], []
    for k in range(runs):
        ss = np.random.SeedSequence([seed, k])
        fitness, bounds = opt.benchmark(function, dim, np.random.default_rng(ss.spawn(1)[0]))
        res = opt.minimize(fitness, bounds, method, seed=ss, options=options)
        best.append(float(res.fun))
        evaluations.append(int(res.nfev))
        messages.append(res.message)
    b = np.array(best)
    return {"mean": float(b.mean()), "variance": float(b.var()), "std": float(b.std()), "min": float(b.min()),
            "max": float(b.max()), "median": float(np.median(b)), "runs": runs, "best": best,
            "mean_evaluations": float(np.mean(evaluations)), "messages": messages[:1]}


def icpso_table2(runs: int = 20, seed: int = 2023, dim: int = 30, methods=None) -> dict:
    """Table 2 re-run: mean and variance over ``runs`` seeds per function and method."""
    methods = TABLE2_METHODS if methods is None else methods
    out = {}
    for f, (title, r) in opt.BENCHMARK_FUNCTIONS.items():
        out[f] = {"name": title, "range": [-r, r],
                  "paper": {m: {"mean": mv[0], "variance": mv[1]} for m, mv in ZHONG_TABLE_2[f].items()}}
        for label, method in methods.items():
            out[f][label] = run_benchmark(f, method, runs, seed=seed, dim=dim)
    return out


def icpso_equal_budget(runs: int = 20, seed: int = 2023, dim: int = 30) -> dict:
    """The chaotic search costs evaluations (M x a quarter of the swarm per premature iteration) that
    the paper's equal-iteration comparison does not count. Here every baseline gets, run by run, as
    many iterations as that run of ICPSO used evaluations."""
    out = {}
    for f in opt.BENCHMARK_FUNCTIONS:
        results = {label: [] for label in ("ICPSO", "APSO", "LPSO", "PSO")}
        budgets = []
        for k in range(runs):
            ss = np.random.SeedSequence([seed, k])
            icpso = opt.minimize(*opt.benchmark(f, dim, np.random.default_rng(ss.spawn(1)[0])), "icpso", seed=ss,
                                 options=table2_options("icpso"))
            results["ICPSO"].append(float(icpso.fun))
            iterations = max(1, int(round(icpso.nfev / 50)) - 1)  # the initial swarm costs one population
            budgets.append(iterations)
            for label, method in (("APSO", "apso"), ("LPSO", "lpso"), ("PSO", "pso")):
                ss = np.random.SeedSequence([seed, k])
                fitness, bounds = opt.benchmark(f, dim, np.random.default_rng(ss.spawn(1)[0]))
                res = opt.minimize(fitness, bounds, method, seed=ss,
                                   options=table2_options(method, iterations=iterations))
                results[label].append(float(res.fun))
        out[f] = {label: {"mean": float(np.mean(v)), "variance": float(np.var(v)), "std": float(np.std(v))}
                  for label, v in results.items()}
        out[f]["iterations_given_to_baselines"] = {"mean": float(np.mean(budgets)), "min": int(min(budgets)),
                                                   "max": int(max(budgets))}
    return out


# The readings of the chaotic search compared by bench/icpso/run.py --ablation (see optimizers._chaotic_search)
CHAOS_ABLATION = {
    "as printed (whole domain, always replace)": {"chaos_region": "box", "chaos_acceptance": "always"},
    "whole domain, replace only if better": {"chaos_region": "box", "chaos_acceptance": "improve"},
    "near the best, always replace": {"chaos_region": "best", "chaos_acceptance": "always"},
    "near the best, radius 0.003": {"chaos_radius": 0.003},
    "near the best, radius 0.01 (default)": {},
    "near the best, radius 0.03": {"chaos_radius": 0.03},
    "near the best, radius 0.1": {"chaos_radius": 0.1},
}


def icpso_ablation(runs: int = 20, seed: int = 2023, dim: int = 30) -> dict:
    out = {}
    for label, extra in CHAOS_ABLATION.items():
        out[label] = {f: run_benchmark(f, "icpso", runs, seed=seed, dim=dim, options=table2_options("icpso", **extra))
                      for f in opt.BENCHMARK_FUNCTIONS}
    out["no chaotic search (APSO)"] = {f: run_benchmark(f, "apso", runs, seed=seed, dim=dim)
                                       for f in opt.BENCHMARK_FUNCTIONS}
    return out
