"""What a reproduction reports: the paper's tables beside robodyn's numbers (each with the command
that prints it, and where its data came from) and the findings about the paper; printed as text or
JSON.

Every row names its data's origin with one of three words, then the detail:

- ``real``      measured on a real robot (which robot, which log);
- ``plant``     a simulator that differs from the identifier's model (and how);
- ``own-model`` the data come from the very model being fitted or evaluated: an inverse crime for
                an accuracy claim, never evidence (for a design criterion or a benchmark function it
                says that no measured data are involved).

A row's ``paper_origin`` says the same of the paper's own number (Ni et al. measured a real Franka:
"real (the paper's Franka)"), so no paper is blamed for robodyn's substitute data. A table built
with ``own_model_allowed=False`` refuses an own-model row."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from robodyn.papers import cite, reference

ORIGINS = ("real", "plant", "own-model")
FINDING_KINDS = {"not reached": "Not reached, and why:", "reached": "Reached, with the evidence:",
                 "about the paper": "About the paper's own numbers and method:",
                 "ablation": "Ablations (another robot, plant or setup than the paper's: no verdict on the paper):"}


def verdict(holds: bool, on_papers_robot_and_setup: bool) -> str:
    """A finding's kind: 'reached' or 'not reached' only on the paper's own robot class and setup;
    a number measured on another robot, plant or setup is an 'ablation', whichever way it came out."""
    if not on_papers_robot_and_setup:
        return "ablation"
    return "reached" if holds else "not reached"


def origin_word(origin: str) -> str:
    """The first word of an origin label ('real', 'plant' or 'own-model'); ValueError otherwise."""
    word = origin.split(" ", 1)[0] if isinstance(origin, str) else ""
    if word not in ORIGINS:
        raise ValueError(f"origin: must start with one of {list(ORIGINS)}, got {origin!r}")
    return word


@dataclass
class Row:
    quantity: str
    paper: object  # the paper's value AS PRINTED (a string), or None when the paper has no such number
    robodyn: object
    command: str  # the command that prints robodyn's number
    origin: str  # where robodyn's data came from: 'real (...)', 'plant (...)' or 'own-model (...)'
    note: str = ""
    paper_origin: str = ""  # where the paper's number came from, same words; "" when the paper has no number

    def __post_init__(self):
        origin_word(self.origin)
        if self.paper_origin:
            origin_word(self.paper_origin)
        if isinstance(self.paper, (float, np.floating)):
            raise TypeError(f"{self.quantity}: the paper's value must be the paper's printed string, not a float")


@dataclass
class Table:
    title: str
    rows: list[Row]
    own_model_allowed: bool = True  # False: a table 'without the inverse crime'

    def __post_init__(self):
        if not self.own_model_allowed:
            bad = [r.quantity for r in self.rows if origin_word(r.origin) == "own-model"]
            if bad:
                raise ValueError(f"table {self.title[:40]!r}: own-model rows in a table without the inverse crime: "
                                 f"{bad}")


@dataclass
class Finding:
    """A statement about one of the paper's numbers, with the measurement behind it. ``kind`` is
    'not reached' (robodyn does not reach the paper's number), 'reached', or 'about the paper' (the
    paper's own number or method is in question: a misprint, an impossible value, a dropped term) or
    'ablation' (measured on another robot, plant or setup than the paper's: see :func:`verdict`)."""

    claim: str  # the paper's number
    reason: str  # unstated parameter | OCR-garbled formula | physically impossible | data not public | ...
    evidence: str  # the measurement
    command: str
    kind: str = "not reached"

    def __post_init__(self):
        if self.kind not in FINDING_KINDS:
            raise ValueError(f"kind: expected one of {list(FINDING_KINDS)}, got {self.kind!r}")


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
        out = [reference(self.key), "", f"Setup: {self.setup}", "",
               "Origin of each row's data: real = a real robot's log; plant = a simulator unlike the identifier's "
               "model; own-model = the model's own output (an inverse crime for accuracy; no measured data).", ""]
        for t in self.tables:
            out.append(t.title)
            width = max([len(r.quantity) for r in t.rows] + [8])
            out.append(f"  {'quantity':<{width}}  {'paper':>16}  {'robodyn':>16}  origin / command")
            for r in t.rows:
                out.append(f"  {r.quantity:<{width}}  {_fmt(r.paper):>16}  {_fmt(r.robodyn):>16}  {r.origin}")
                pad = f"  {'':<{width}}  {'':>16}  {'':>16}  "
                if r.paper_origin:
                    out.append(pad + f"paper: {r.paper_origin}")
                out.append(pad + f"$ {r.command}")
                if r.note:
                    out.append(pad + f"({r.note})")
            out.append("")
        for kind, title in FINDING_KINDS.items():
            found = [f for f in self.findings if f.kind == kind]
            if found:
                out.append(title)
                for f in found:
                    out.append(f"- {f.claim}: {f.reason}. {f.evidence} [{f.command}]")
                out.append("")
        return "\n".join(out)


def clip(value: float, lo: float, hi: float) -> float:
    """A value clipped to its domain (a correlation of 1 + 1e-9 from rounding prints as 1)."""
    return float(min(max(float(value), lo), hi))


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, (float, np.floating)):
        a = abs(float(v))
        if a != 0 and (a < 1e-3 or a >= 1e5):
            return f"{float(v):.3e}"
        return f"{float(v):.4g}"
    return str(v)


def json_default(o):
    """json.dump's ``default`` for the numpy values a report's details hold."""
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.bool_):
        return bool(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
