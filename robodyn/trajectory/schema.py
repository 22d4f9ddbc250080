"""The strict schema of trajectory documents: every field a document and each family's
``params`` may hold, its type, shape and physical range.

A document comes from a client (the daemon's ``submit_run``) or a file, so every field is
checked here before any arithmetic touches it: an unknown or misspelled field is refused (it
would otherwise be ignored and the robot would run a different trajectory than the one
written), and every number must be finite and inside a range that has a physical meaning, so
that nothing computed from it later (durations, disk estimates, sample counts, polynomial
powers) can overflow or mislead. The robot's own limits are checked afterwards, on the
evaluated trajectory, by :mod:`robodyn.limits`; these bounds are the much wider ones of any
robot arm and of the arithmetic.

Every refusal is one line starting with the dotted path of the field (``params.wf: ...``,
``params.parts[3].params.a: ...``), which the daemon maps onto ``details.field``.
"""

from __future__ import annotations

import difflib
import math
import reprlib
from dataclasses import dataclass

import numpy as np

# --------------------------------------------------------------------------- bounds and why

# Longest trajectory of any kind: above the daemon's largest configurable run ([safety].max_run_s
# is at most 86400 s), and small enough that duration x rate x oversample stays an exact integer.
MAX_DURATION_S = 1e5
# Joint positions (rad, or m for a prismatic joint): no arm joint spans more than a few turns, the
# robot's own position limits are checked by robodyn.limits; this bound keeps every product of a
# position with a time, gain or power finite.
MAX_POSITION = 100.0
MAX_DOF = 64  # joints of one trajectory; arms have 4 to 7
# Fourier fundamental (rad/s): the longest period, 2 pi / 1e-4 = 62832 s, fits MAX_DURATION_S; 100 rad/s
# is a 16 Hz fundamental, far above any arm's joint bandwidth (excitations use 0.1 to 2 rad/s).
WF_RANGE = (1e-4, 100.0)
# Fourier coefficients a_l, b_l are velocity amplitudes (qd = sum a_l cos + b_l sin): arms' joint
# speed limits are below 10 rad/s, and 1e3 keeps qdd and jerk (x wf l, x (wf l)^2) finite.
MAX_FOURIER_COEFFICIENT = 1e3
# The daemon's validation budget refuses far fewer; 2 x 7 x 1000 coefficients are ~110 kB.
MAX_HARMONICS = 1000
# Whole periods of the integer families, and the (fractional) periods of the pure Fourier series.
PERIODS_RANGE = (1, 100_000)
FOURIER_PERIODS_RANGE = (1e-3, 1e5)
# Periodic polynomial (Chen et al. 2021): a period shorter than 50 ms (20 Hz) is no excitation of
# an arm; the order is at least 8 (eq. 18's boundary conditions) and at most 40, so tau^k in SI
# units (tau <= 1e5 s) stays below 1e200.
POLY_PERIOD_RANGE_S = (0.05, MAX_DURATION_S)
POLY_ORDER_RANGE = (8, 40)
# Each polynomial term's contribution at the end of the period, |a_k| T^k (rad). Monomial
# coefficients of a smooth periodic polynomial cancel one another, so single terms legitimately
# exceed the motion's amplitude: random designs of order 8 to 40 reach 3e4 times their amplitude.
# 1e9 rad leaves orders of magnitude of room and keeps every derivative (k^3 / T^3 times a term)
# below 1e18.
MAX_POLY_TERM = 1e9
# Moves: one 1 kHz control cycle is the shortest move or ramp anything can execute.
MOVE_DURATION_RANGE_S = (1e-3, MAX_DURATION_S)
SWEEP_SPEED_RANGE = (1e-4, 100.0)  # rad/s: at 1e-4 a sweep over 1 rad already takes 1e4 s each way
SWEEP_RAMP_RANGE_S = (1e-3, 1e4)
SWEEP_PAUSE_RANGE_S = (0.0, 1e4)  # dwell, settle
# Sampled trajectories: t and one joint's q as encoded float64 arrays (8 bytes a value) fill the
# daemon's 16 MiB request cap (daemon/protocol.py MAX_REQUEST_BYTES) at 2^20 samples.
MAX_SAMPLES = 2 ** 20
# a thousandth of the fastest control cycle: closer samples are no motion a robot can follow, and
# the spline's jerk grows as 1 / spacing^3
MIN_SAMPLE_SPACING_S = 1e-6
MAX_VELOCITY = 1e3  # rad/s, the client's own qd arrays
MAX_ACCELERATION = 1e5  # rad/s^2, the client's own qdd arrays
# Parts of a sequence: a friction experiment over all seven joints of an arm at the 37 speeds of
# Ni et al. 2024 has 517; every part is parsed and its junction evaluated at admission.
MAX_PARTS = 1000
MAX_ROBOT_NAME = 128

# --------------------------------------------------------------------------- field kinds


@dataclass(frozen=True)
class Number:
    """A scalar in [low, high] (``integer``: a whole number). ``default`` None: required."""

    low: float
    high: float
    unit: str = ""
    default: float | None = None
    integer: bool = False

    @property
    def required(self) -> bool:
        return self.default is None


@dataclass(frozen=True)
class Array:
    """A ``ndim``-D array of numbers in [low, high]; ``sizes``: the (min, max) length of each axis."""

    ndim: int
    low: float
    high: float
    unit: str
    sizes: tuple
    required: bool = True


@dataclass(frozen=True)
class JointIndex:
    """An integer index of one joint (checked against the joint count by the family)."""

    required: bool = True


@dataclass(frozen=True)
class Parts:
    """The list of trajectory documents of a sequence."""

    required: bool = True


def _range(low, high, unit=""):
    return f"[{number_text(low)}, {number_text(high)}]" + (f" {unit}" if unit else "")


def number_text(v) -> str:
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and abs(int(v)) < 10 ** 15:
        return str(int(v))
    try:
        return f"{float(v):.6g}"
    except OverflowError:
        return "a number beyond any float"


JOINT_POSITIONS = Array(1, -MAX_POSITION, MAX_POSITION, "rad", ((1, MAX_DOF),))
FOURIER_COEFFICIENTS = Array(2, -MAX_FOURIER_COEFFICIENT, MAX_FOURIER_COEFFICIENT, "rad/s",
                             ((1, MAX_DOF), (1, MAX_HARMONICS)))
WF = Number(*WF_RANGE, "rad/s")

# Every family the parser knows and its parameters: a family missing here cannot be parsed.
FAMILY_PARAMS: dict[str, dict[str, object]] = {
    "fourier": {"wf": WF, "q0": JOINT_POSITIONS, "a": FOURIER_COEFFICIENTS, "b": FOURIER_COEFFICIENTS,
                "periods": Number(*FOURIER_PERIODS_RANGE, default=1.0)},
    "fourier_poly": {"wf": WF, "q_start": JOINT_POSITIONS, "a": FOURIER_COEFFICIENTS, "b": FOURIER_COEFFICIENTS,
                     "periods": Number(*PERIODS_RANGE, default=1, integer=True)},
    "periodic_poly": {"period": Number(*POLY_PERIOD_RANGE_S, "s"),
                      # the per-term bound depends on the period: see check_poly_coefficients
                      "coefficients": Array(2, -math.inf, math.inf, "", ((1, MAX_DOF),
                                                                         (POLY_ORDER_RANGE[0] + 1,
                                                                          POLY_ORDER_RANGE[1] + 1))),
                      "periods": Number(*PERIODS_RANGE, default=1, integer=True)},
    "point_to_point": {"q_start": JOINT_POSITIONS, "q_end": JOINT_POSITIONS,
                       "duration": Number(*MOVE_DURATION_RANGE_S, "s")},
    "sweep": {"q_hold": JOINT_POSITIONS, "joint": JointIndex(),
              "low": Number(-MAX_POSITION, MAX_POSITION, "rad"), "high": Number(-MAX_POSITION, MAX_POSITION, "rad"),
              "speed": Number(*SWEEP_SPEED_RANGE, "rad/s"), "ramp": Number(*SWEEP_RAMP_RANGE_S, "s"),
              "dwell": Number(*SWEEP_PAUSE_RANGE_S, "s", default=0.2),
              "settle": Number(*SWEEP_PAUSE_RANGE_S, "s", default=0.0)},
    "sampled": {"t": Array(1, -MAX_DURATION_S, MAX_DURATION_S, "s", ((6, MAX_SAMPLES),)),
                "q": Array(2, -MAX_POSITION, MAX_POSITION, "rad", ((6, MAX_SAMPLES), (1, MAX_DOF))),
                "qd": Array(2, -MAX_VELOCITY, MAX_VELOCITY, "rad/s", ((6, MAX_SAMPLES), (1, MAX_DOF)), required=False),
                "qdd": Array(2, -MAX_ACCELERATION, MAX_ACCELERATION, "rad/s^2", ((6, MAX_SAMPLES), (1, MAX_DOF)),
                             required=False)},
    "sequence": {"parts": Parts()},
}

# The document around the parameters. ``meta`` is free-form (notes kept with the trajectory,
# never interpreted); ``duration``, when given, must be the one the parameters describe.
DOCUMENT_FIELDS = ("format", "version", "family", "dof", "duration", "params", "robot", "meta")

# --------------------------------------------------------------------------- checks

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60


def field_name(key) -> str:
    """A client's key as it may appear in a one-line message: identifiers as they are, anything
    else quoted and shortened (a key is client text: never a newline or 1 MB in a message)."""
    if isinstance(key, str) and key.isidentifier() and len(key) <= 64:
        return key
    return short_repr(key)


def short_repr(value) -> str:
    """A client's value in a one-line message: its repr, shortened (a few elements of a list, the
    ends of a long string) and never longer than 80 characters."""
    text = _REPR.repr(value)
    return text if len(text) <= 80 else text[:74] + "..." + text[-3:]


def join_path(prefix: str, key) -> str:
    name = field_name(key)
    if isinstance(key, str) and key.isidentifier() and len(key) <= 64:
        return f"{prefix}.{name}" if prefix else name
    return f"{prefix}[{name}]"


def refuse_unknown(obj: dict, accepted, prefix: str, what: str) -> None:
    """ValueError naming the first key of ``obj`` not in ``accepted``, with the closest accepted name."""
    for key in obj:
        if key in accepted:
            continue
        close = difflib.get_close_matches(key, list(accepted), n=1) if isinstance(key, str) else []
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"{join_path(prefix, key)}: unknown field of {what}; {hint}accepted: {', '.join(accepted)}")


def is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def check_number(path: str, v, spec: Number):
    """The value as a float (an int for ``integer``), or ValueError naming the field and the range."""
    if not is_number(v):
        raise ValueError(f"{path}: expected a number in {_range(spec.low, spec.high, spec.unit)}, "
                         f"got {type(v).__name__}")
    if isinstance(v, (int, np.integer)):
        v = int(v)  # compared exactly: a huge integer never becomes an overflowing float
    elif math.isnan(v):
        raise ValueError(f"{path}: nan is outside {_range(spec.low, spec.high, spec.unit)}")
    if not spec.low <= v <= spec.high:
        raise ValueError(f"{path}: {number_text(v)} is outside {_range(spec.low, spec.high, spec.unit)}")
    if spec.integer:
        if v != int(v):
            raise ValueError(f"{path}: {number_text(v)} is not a whole number of {spec.unit or 'periods'}")
        return int(v)
    return float(v)


def check_array(path: str, value, spec: Array) -> np.ndarray:
    """A float array of ``spec``'s dimensions, sizes and range, or ValueError naming the field, the
    first offending element and the limit."""
    try:
        raw = np.asarray(value)
    except Exception:  # ragged, too deep, or an object numpy cannot hold
        raise ValueError(f"{path}: expected a {spec.ndim}-D array of numbers, got {type(value).__name__}") from None
    if raw.dtype.kind not in "iuf":  # strings, booleans, maps and ragged lists are not numbers
        raise ValueError(f"{path}: expected a {spec.ndim}-D array of numbers, got {type(value).__name__} "
                         f"of {raw.dtype.name}")
    if raw.ndim != spec.ndim:
        raise ValueError(f"{path}: expected a {spec.ndim}-D array, got shape {raw.shape}")
    for axis, (lo, hi) in enumerate(spec.sizes):
        if not lo <= raw.shape[axis] <= hi:
            what = "values" if spec.ndim == 1 else ("rows", "columns")[axis]
            raise ValueError(f"{path}: {raw.shape[axis]} {what}, outside [{lo}, {hi}]")
    arr = raw.astype(float)  # every int64 / uint64 is a finite float
    bad = ~np.isfinite(arr) | (arr < spec.low) | (arr > spec.high)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        bound = _range(spec.low, spec.high, spec.unit) if math.isfinite(spec.high) else "the finite numbers"
        raise ValueError(f"{path}: {number_text(arr[index])} at {_index(index)} is outside {bound}")
    return arr


def _index(index: tuple) -> str:
    return "".join(f"[{i}]" for i in index)


def check_joint(path: str, v, dof: int) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{path}: expected an integer joint index in [0, {dof - 1}], got {type(v).__name__}")
    if not 0 <= int(v) < dof:
        raise ValueError(f"{path}: {number_text(v)} is outside [0, {dof - 1}] (a joint index of the {dof} joints)")
    return int(v)


def check_poly_coefficients(path: str, coefficients: np.ndarray, period: float) -> None:
    """a_0 is a position; every term's contribution at the period's end, |a_k| T^k, is bounded."""
    start = np.abs(coefficients[:, 0]) > MAX_POSITION
    if start.any():
        j = int(np.argmax(start))
        raise ValueError(f"{path}: a_0 = {number_text(coefficients[j, 0])} at [{j}][0] (the start position) is "
                         f"outside {_range(-MAX_POSITION, MAX_POSITION, 'rad')}")
    k = np.arange(coefficients.shape[1])
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow here is itself out of range
        terms = np.abs(coefficients) * float(period) ** k
    bad = ~(terms <= MAX_POLY_TERM)
    if bad.any():
        j, kk = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{path}: term {kk} of joint {j} contributes |a_{kk}| period^{kk} = "
                         f"{number_text(terms[j, kk])} rad at [{j}][{kk}], outside [0, {number_text(MAX_POLY_TERM)}] rad")


def check_sample_spacing(path: str, t: np.ndarray) -> None:
    steps = np.diff(t)
    close = steps < MIN_SAMPLE_SPACING_S
    if close.any():
        k = int(np.argmax(close))
        if steps[k] <= 0:
            raise ValueError(f"{path}: times must strictly increase (sample {k + 1} at {number_text(t[k + 1])} s "
                             f"after {number_text(t[k])} s)")
        raise ValueError(f"{path}: samples {k} and {k + 1} are {number_text(steps[k])} s apart, less than "
                         f"{number_text(MIN_SAMPLE_SPACING_S)} s")
