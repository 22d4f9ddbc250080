"""The options of every optimizer (one frozen dataclass per method, defaults from the papers) and
the method names ``minimize`` accepts."""

from __future__ import annotations

from dataclasses import dataclass

METHODS = ("slsqp", "ga", "pso", "icpso")
# Methods added later, kept out of METHODS so that callers iterating over it (excitation design and
# its tests) see the set they were written for; minimize() accepts every method of ALL_METHODS.
ALL_METHODS = METHODS + ("wso", "apso", "lpso", "grid")

# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class SLSQPOptions:
    max_iter: int = 200
    ftol: float = 1e-7
    fd_step: float = 1e-6  # relative forward-difference step
    # Pass the box to SLSQP too. Switch off when linear constraints already bound every variable:
    # the redundant rows can make SLSQP's subproblem report "constraints incompatible".
    box_constraints: bool = True


@dataclass(frozen=True)
class GAOptions:
    """Chen et al. 2021 Table 2: population 20, 800 generations, crossover 0.8, mutation 0.2."""

    population: int = 20
    generations: int = 800
    crossover: float = 0.8  # probability that a selected pair is recombined
    mutation: float = 0.2  # probability that a gene of a child is mutated
    blend: float = 0.3  # BLX-alpha: children may land alpha times the parents' gap outside them
    elite: int = 1
    tournament: int = 2


@dataclass(frozen=True)
class PSOOptions:
    population: int = 50
    iterations: int = 100
    w_max: float = 0.9
    w_min: float = 0.4
    c1: float = 2.0
    c2: float = 2.0
    v_max: float = 0.2  # velocity clamp as a fraction of each bound's span


CHAOS_REGIONS = ("best", "box")
CHAOS_ACCEPTANCE = ("improve", "always")


@dataclass(frozen=True)
class ICPSOOptions:
    """Zhong et al. 2023 sections 2 and 3.1: k1 = 4, k2 = 3, w in [0.4, 0.9], c in [0.5, 2.5],
    C = 10, delta = 1. The chaotic search's M, region and acceptance rule are not (or not usably)
    given in the paper; see :func:`.swarm._chaotic_search`."""

    population: int = 50
    iterations: int = 100
    w_max: float = 0.9
    w_min: float = 0.4
    k1: float = 4.0
    k2: float = 3.0
    c_min: float = 0.5
    c_max: float = 2.5
    variance_threshold: float = 10.0  # C of eq. 15
    delta: float = 1.0  # delta of eq. 15
    target: float = 0.0  # f_d of eq. 15: the known or hoped-for optimum
    chaos_steps: int = 10  # M tent-map iterations per premature particle (not given in the paper)
    # Where eq. 18 maps the chaotic sequence back: "best" = a box of half-width chaos_radius x span
    # around the swarm's best position (a chaotic local search); "box" = the variable's whole domain,
    # eq. 18 as printed (measured: in 30 dimensions its points are never better than the particle).
    chaos_region: str = "best"
    chaos_radius: float = 0.01
    # "improve": a particle moves to the best point of its chaotic sequence X^0..X^M (X^0 is the
    # particle itself, eq. 17), so it never gets worse; "always": the best of X^1..X^M replaces it.
    chaos_acceptance: str = "improve"
    v_max: float = 0.2

    def __post_init__(self):
        if self.chaos_region not in CHAOS_REGIONS:
            raise ValueError(f"chaos_region: expected one of {list(CHAOS_REGIONS)}, got {self.chaos_region!r}")
        if self.chaos_acceptance not in CHAOS_ACCEPTANCE:
            raise ValueError(f"chaos_acceptance: expected one of {list(CHAOS_ACCEPTANCE)}, "
                             f"got {self.chaos_acceptance!r}")
        if not 0.0 < self.chaos_radius <= 1.0:
            raise ValueError(f"chaos_radius: must be in (0, 1] (a fraction of each bound's span), got "
                             f"{self.chaos_radius}")
        if self.chaos_steps < 0:
            raise ValueError(f"chaos_steps: must be >= 0, got {self.chaos_steps}")


@dataclass(frozen=True)
class APSOOptions:
    """Zhong et al. 2023's baseline "APSO", read as the paper's adaptive parameter strategy alone.

    The paper names APSO and LPSO without defining them, but states that all three methods share
    c in [0.5, 2.5] and w in [0.4, 0.9] while only ICPSO has C and delta (section 3.1), and
    section 2.2 is titled "adaptive dynamic control parameter strategy". APSO is therefore ICPSO's
    eqs. 11-13 without the premature test and chaotic search of section 2.3: the comparison
    ICPSO vs APSO measures what the chaotic search adds."""

    population: int = 50
    iterations: int = 100
    w_max: float = 0.9
    w_min: float = 0.4
    k1: float = 4.0
    k2: float = 3.0
    c_min: float = 0.5
    c_max: float = 2.5
    v_max: float = 0.2


@dataclass(frozen=True)
class LPSOOptions:
    """Zhong et al. 2023's baseline "LPSO", read as PSO with linearly varied parameters over the
    ranges the paper gives all three methods: w falls linearly 0.9 -> 0.4, c1 falls 2.5 -> 0.5 and
    c2 rises 0.5 -> 2.5 (the "large c1 early, large c2 late" of section 2.2.2 as a schedule; the
    time-varying acceleration coefficients of Ratnaweera et al. 2004 use the same ranges)."""

    population: int = 50
    iterations: int = 100
    w_max: float = 0.9
    w_min: float = 0.4
    c_min: float = 0.5
    c_max: float = 2.5
    v_max: float = 0.2


@dataclass(frozen=True)
class WSOOptions:
    """Ni et al. 2024 section 3 and 4: 150 sharks, 3000 iterations, a in [0.5, 1.5], tau = 4.125,
    f in [0.07, 0.75], alpha0 = 6.25, alpha1 = 100, a2 (eq. 27) = 0.005."""

    population: int = 150
    iterations: int = 3000
    a_min: float = 0.5
    a_max: float = 1.5
    acceleration: float = 4.125  # tau of eq. 18
    f_min: float = 0.07
    f_max: float = 0.75
    alpha0: float = 6.25
    alpha1: float = 100.0
    school_a2: float = 0.005  # the a2 of eq. 27 (not the a2 of eq. 17)


@dataclass(frozen=True)
class GridOptions:
    points: int = 400  # per free coordinate, capped so that points ** free <= max_evaluations
    max_evaluations: int = 200_000
    batch: int = 2000  # candidates per fitness call
    refine_rounds: int = 4  # zoom: +- 2 cells around the best, refine_points per coordinate
    refine_points: int = 21
    max_free: int = 3


DEFAULT_OPTIONS = {"slsqp": SLSQPOptions(), "ga": GAOptions(), "pso": PSOOptions(), "icpso": ICPSOOptions(),
                   "wso": WSOOptions(), "apso": APSOOptions(), "lpso": LPSOOptions(),
                   "grid": GridOptions()}


def default_options(method: str):
    if method not in DEFAULT_OPTIONS:
        raise ValueError(f"method: unknown optimizer {method!r}; expected one of {list(ALL_METHODS)}")
    return DEFAULT_OPTIONS[method]
