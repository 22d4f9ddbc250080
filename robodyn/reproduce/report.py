"""What a reproduction reports: the paper's tables beside robodyn's numbers (each with the command
that prints it) and the findings that say why a number is not reached; printed as text or JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from robodyn.papers import cite, reference


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


def json_default(o):
    """json.dump's ``default`` for the numpy values a report's details hold."""
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.bool_):
        return bool(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
