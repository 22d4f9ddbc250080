"""Every figure in README.md and docs/*.md is tied to the machine-readable output of the command named
beside it; this module checks that they agree.

Markers (HTML comments, invisible on GitHub) are written right after a figure:

``<!-- fig SOURCE EXPR -->``
    the nearest number to the left of the marker on the same line equals EXPR evaluated on the
    JSON of SOURCE, rounded as printed (``20.22`` must be within 0.005 of the value). EXPR is a
    JSON path (``datasets[0].default.rmse_sum``, ``runs[robot=panda,hours=1].identify_s``) or a Python
    expression with paths in braces (``{a.x} / {a.y}``, ``{peak_rss_mb} / 1024``). A path ending in
    ``.(mean_mm,max_mm)`` gives several values: they tie the as many last numbers of the table cell.
``<!-- fig~ SOURCE EXPR -->``
    the same for a timing or memory figure of a noisy benchmark: checked against the committed JSON
    only; a rerun by ``make docs-check`` reports the fresh value but does not call it stale.
``<!-- table SOURCE LISTEXPR column=NAME [field=KEY] [match=KEY] -->``
    in the next markdown table, row i's cell under the header NAME holds the numbers of
    LISTEXPR[i] (its KEY field if given; a string's numbers, a list's elements). With match=KEY a
    row is paired with the item whose KEY starts the row's first cell, so a table may show a subset.
    Several table markers may precede one table (one per column).
``<!-- fig< SOURCE EXPR -->``
    the number to the left is a bound: EXPR's value must not exceed it (round-off-level agreement
    such as "to 1e-13 N·m", whose last digit changes with the BLAS and the thread count).
``<!-- list SOURCE LISTEXPR fields=A,B -->``
    in the next bullet list (one line per bullet), bullet i holds exactly the numbers of LISTEXPR[i]'s
    fields A, B, ... in that order (prose rendered from a command's findings).
``<!-- include PATH -->`` ... ``<!-- end include -->``
    the lines between the markers appear verbatim in PATH (a markdown file a command writes).
``<!-- by PATH -->``
    the number to the left is asserted by a test or fixed in a file: its literal appears in PATH.
``<!-- const -->``
    the number to the left is a chosen constant or a definition, not a measurement.

SOURCES below names, for each source, the command that writes its JSON, where the JSON is committed,
and whether ``make docs-check`` may rerun it (only what takes a few minutes and needs nothing
outside this repository).

Numbers in prose that look measured (a decimal or a unit, on a line that speaks of a measurement)
and carry no marker are "unmarked figures". ``tests/docs/unmarked_figures.txt`` lists the ones that
are known; the test fails on any other, and on a listed one that is gone (shrink the list with
``--update-baseline``; it only grows with ``--add-new``, for a figure that truly has no command).

    .venv/bin/python bench/docs_figures.py                 # check markers against committed JSON
    .venv/bin/python bench/docs_figures.py --rerun         # rerun cheap commands, report stale figures (make docs-check)
    .venv/bin/python bench/docs_figures.py --unmarked      # list unmarked figures per file
    .venv/bin/python bench/docs_figures.py --update-baseline   # shrink the list; --add-new also grows it
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tests" / "docs" / "unmarked_figures.txt"


@dataclass(frozen=True)
class Source:
    json: str  # committed output, relative to the repository root
    command: str  # what a user runs; {out} is where the JSON goes (stdout when absent)
    rerun_minutes: float | None = None  # None: not rerun by docs-check (too slow, or needs data outside the repo)
    why_not: str = ""


SOURCES: dict[str, Source] = {
    "peers": Source("bench/peers/result.json", "python bench/peers/run.py --out {out}", None,
                    "needs the corpus cache and the Panda/UR10e repositories outside the repo; minutes per log"),
    "regressor": Source("bench/regressor/result.json", "python bench/regressor/run.py", 3.0),
    "rnea": Source("bench/rnea/result.json", "python bench/rnea/run.py", 3.0),
    "identify": Source("bench/identify/result.json", "python bench/identify/run.py --hours 1,2,4 --robots panda", None,
                       "writes 7 h of 1 kHz recordings first (tens of minutes on a shared host), then times them"),
    "identify_day": Source("bench/identify/result_day.json",
                           "python bench/identify/run.py --hours 1,4,24 --robots panda --data-dir DIR --out {out}", None,
                           "writes 10 GB of recordings first (about 10 minutes), then about 4 minutes"),
    "identify_mcap": Source("bench/identify/result_mcap.json",
                            "python bench/identify/run.py --hours 1,4 --robots panda --format mcap --data-dir DIR "
                            "--out {out}",
                            None, "writes 1 h and 4 h recordings and their MCAP copies first (minutes)"),
    "identify_mcap_before": Source("bench/identify/result_mcap_hours_before.json",
                                   "python bench/identify/run.py --hours 1,4 --robots panda --format mcap --data-dir DIR "
                                   "--out {out} (at commit f99e3a8, before the loader decoded to mapped files)",
                                   None, "the record of the loader before; minutes"),
    "identify_mcap_quarter": Source("bench/identify/result_mcap_quarter.json",
                                    "python bench/identify/run.py --hours 0.25 --robots panda --format mcap --data-dir DIR "
                                    "--out {out}", None, "writes a quarter-hour recording and its MCAP copy first"),
    "identify_mcap_quarter_before": Source("bench/identify/result_mcap_quarter_before.json",
                                           "python bench/identify/run.py --hours 0.25 --robots panda --format mcap "
                                           "--data-dir DIR --out {out}", None,
                                           "the same command before the loader kept only the signals identify reads"),
    "identify_1h_before_release": Source("bench/identify/result_1h_load1.json",
                                         "python bench/identify/run.py --hours 1 --robots panda --data-dir DIR --out {out}",
                                         None, "the same command before the mapped pages were released (load 1.1)"),
    "identify_defaults": Source("bench/identify/result_defaults.json",
                                "python bench/identify/run.py --hours 1 --robots panda --setup defaults --data-dir DIR "
                                "--out {out}", None, "writes a 1 h recording first; then minutes"),
    "identify_day_loaded": Source("bench/identify/result_day_loaded.json",
                                  "python bench/identify/run.py --hours 1,4,24 --robots panda --out {out}", None,
                                  "a day of 1 kHz data: about 20 minutes and 10 GB of recordings"),
    "identify_loaded": Source("bench/identify/result_loaded.json",
                              "python bench/identify/run.py --hours 1,2,4 --robots panda", None,
                              "the same command as `identify`, an earlier run at a higher load, kept to show the spread"),
    "identify_quiet": Source("bench/identify/result_quiet.json",
                             "python bench/identify/run.py --hours 1 --robots panda --data-dir DIR", None,
                             "times a cached 1 h recording; meaningful only on a quiet host (load average < 1)"),
    "identify_ur5": Source("bench/identify/result_ur5.json", "python bench/identify/run.py --hours 1 --robots ur5", None,
                           "writes a 1 h recording first (minutes), then times it"),
    "tx40": Source("bench/tx40/result.json", "python bench/tx40/run.py", 2.0),
    "realdata": Source("bench/realdata/result.json", "python bench/realdata/run.py --panda-log DIR --sims", None,
                       "needs the Gaz et al. 2019 Panda log (not shipped) and about 10 min"),
    "metaheuristics": Source("bench/metaheuristics/result.json", "python bench/metaheuristics/run.py --out {out}", 3.0),
    "consistent": Source("bench/metaheuristics/consistent.json",
                         "python bench/metaheuristics/consistent.py --out {out}", 3.0),
    "mjcf": Source("bench/mjcf/result.json", "python bench/mjcf/run.py --out {out}", 2.0),
    "stribeck": Source("bench/metaheuristics/stribeck.json",
                       "python bench/metaheuristics/stribeck.py --iterations 1000 --out {out}", None, "about 2 min "
                       "unloaded, more under load; the WSO run is stochastic in wall time"),
    "table4": Source("bench/metaheuristics/table4.json",
                     "robodyn compare --simulate panda --out {out}", 3.0),
    "icpso": Source("bench/icpso/result.json",
                    "python bench/icpso/run.py --runs 20 --equal-budget --ablation --out {out}", 3.0),
    "excitation_scara": Source("bench/excitation/result_scara.json", "python bench/excitation/run.py --case scara", 3.0),
    "papers": Source("bench/papers/result.json", "python bench/papers/run.py --out {out}", None,
                     "about 8 min (stepwise alone 380 s)"),
    "ur10e_error_sources": Source("bench/realdata/ur10e_error_sources.json",
                                  "python bench/realdata/ur10e_error_sources.py --data-dir DIR --out {out}", None,
                                  "needs the dynamic_calibration repository's UR10e logs (not shipped: no licence)"),
    "calibration": Source("bench/calibration/result.json", "python bench/calibration/run.py", None,
                          "several minutes"),
    "scaleout": Source("bench/scaleout/result.json", "python bench/scaleout/run.py --out {out}", None,
                       "several minutes, process pool and Ray"),
    "reliability": Source("bench/reliability/result.json", "python bench/reliability/run.py", None,
                          "fault injection with long soaks"),
    "ros2channels": Source("bench/reliability/ros2_channels.json", "python bench/reliability/ros2_channels.py --out {out}", None,
                           "two real-time daemon runs of 30 s plus replays; its CPU figures are load-sensitive"),
    "observer_flood": Source("bench/reliability/observer_flood.json",
                             "python bench/reliability/observer_flood.py --out {out}", None,
                             "a daemon in real time flooded by observers; its latencies are the host's load"),
    "observer_flood_rt": Source("bench/reliability/observer_flood_rt.json",
                                "python bench/reliability/observer_flood.py --rt-priority 10 --out {out}", None,
                                "the same flood with the daemon at SCHED_FIFO (root); its latencies are the host's load"),
    "stop_socket_poll": Source("bench/reliability/stop_socket_poll.json",
                               "python bench/reliability/stop_socket_poll.py --out {out}", 1.0),
    "stop_socket_flood": Source("bench/reliability/stop_socket_flood.json",
                                "python bench/reliability/stop_socket_flood.py --out {out}", None,
                                "a daemon in real time stopped 20 times under an observer flood; its waits are the host's load"),
    "stop_socket_flood_rt": Source("bench/reliability/stop_socket_flood_rt.json",
                                   "python bench/reliability/stop_socket_flood.py --rt-priority 10 --out {out}", None,
                                   "the same with the driver at SCHED_FIFO (root); its waits are the host's load"),
    "stop_socket_poll_idle": Source("bench/reliability/stop_socket_poll_idle.json",
                                    "python bench/reliability/stop_socket_poll.py --out {out}", None,
                                    "the same poll on an idle host: rerunning it on a loaded one would change its meaning"),
    "stop_socket_flood_idle": Source("bench/reliability/stop_socket_flood_idle.json",
                                     "python bench/reliability/stop_socket_flood.py --out {out}", None,
                                     "the flood on an idle host: its waits are the host's load"),
    "stop_socket_flood_rt_idle": Source("bench/reliability/stop_socket_flood_rt_idle.json",
                                        "python bench/reliability/stop_socket_flood.py --rt-priority 10 --out {out}",
                                        None, "the same at SCHED_FIFO on an idle host (root); its waits are the host's load"),
    "torque_signs": Source("bench/realdata/torque_signs.json", "python bench/realdata/torque_signs.py --out {out}", None,
                           "needs the corpus cache (fetch.py) outside the repo"),
    "loro_least_squares_only": Source("bench/realdata/loro_least_squares_only.json", "python bench/realdata/loro.py --out {out}  # at commit 112adcb, before the default compared the consistent fit", None,
                                      "a record of the earlier default; needs the corpus cache outside the repo"),
    "loro": Source("bench/realdata/loro.json", "python bench/realdata/loro.py --out {out}", None,
                   "needs the corpus fetched outside the repository (bench/realdata/fetch.py) and the Panda and "
                   "UR10e repositories' clones (--panda-log, --ur10e-log); minutes per arm"),
    "loro_choice": Source("bench/realdata/loro_choice.json", "python bench/realdata/loro_choice.py --out {out}", None,
                          "needs the corpus and the Panda/UR10e repositories outside the repository; minutes"),
    "select_candidates": Source("bench/realdata/select_candidates.json",
                                "python bench/realdata/select_candidates.py --out {out}", None,
                                "needs the corpus and the Panda/UR10e repositories outside the repository; minutes"),
    "select_thinning": Source("bench/realdata/select_thinning.json",
                              "python bench/realdata/select_thinning.py --out {out}", None,
                              "needs the corpus and the Panda/UR10e repositories outside the repository; a minute"),
    "select_cost": Source("bench/identify/select_cost.json",
                          "python bench/identify/select_cost.py --out {out}", None,
                          "times the default and --select on recordings up to an hour long; about ten minutes"),
    "select_cost_long": Source("bench/identify/select_cost_long.json",
                               "python bench/identify/select_cost.py --seconds 14400 --runs 1 --out {out}", None,
                               "times the default and --select on four hours at 1 kHz once each; about twenty minutes "
                               "and 14 GB of memory"),
    "select_command_cost": Source("bench/realdata/select_command_cost.json",
                                  "python bench/realdata/select_command_cost.py --out {out}", None,
                                  "needs farm-bench on PATH; times whole commands, a few minutes"),
    "hostile_frames": Source("bench/reliability/hostile_frames.json",
                             "python bench/reliability/hostile_frames.py --out {out}", None,
                             "a daemon in real time sent 16 MiB frames between aborts; its waits are the host's load"),
    "hostile_frames_rt": Source("bench/reliability/hostile_frames_rt.json",
                                "python bench/reliability/hostile_frames.py --rt-priority 10 --out {out}", None,
                                "the same with the daemon at SCHED_FIFO (root); its waits are the host's load"),
    "hostile_frames_stress": Source("bench/reliability/hostile_frames_stress.json",
                                    "python bench/reliability/hostile_frames.py --out {out}", None,
                                    "the same beside stress-ng --cpu 4; its waits are the host's load"),
    "supervisor_silence": Source("bench/reliability/supervisor_silence.json",
                                 "python bench/reliability/supervisor_silence.py --out {out}", None,
                                 "a daemon's main process SIGSTOPped mid-run; the stop's delay is the host's load"),
    "supervisor_silence_stress": Source("bench/reliability/supervisor_silence_stress.json",
                                        "python bench/reliability/supervisor_silence.py --out {out}", None,
                                        "the same beside stress-ng --cpu 4"),
    "blas": Source("bench/blas/result.json", "python bench/blas/run.py --out {out}", None,
                   "wall times of OpenBLAS's threads on a shared host: they depend on its load"),
    "recorder_cost": Source("bench/acquisition/recorder_cost.json", "python bench/acquisition/recorder_cost.py",
                            None, "CPU timings: they depend on the host's load"),
    "plant": Source("bench/plant/result.json", "python bench/plant/run.py --out {out}", None,
                    "CPU timings: they depend on the host's load"),
    "plant_numpy": Source("bench/plant/result_numpy_560fe14.json", "python bench/plant/run.py --out {out}", None,
                          "measured with the code of 560fe14 (numpy operations per physics step) checked out"),
    "drivers": Source("bench/drivers/result.json", "python bench/drivers/run.py --out {out}", None,
                      "timing of the driver loops"),
    "drivers_before_spacing_fix": Source("bench/drivers/result_before_spacing_fix.json",
                                         "python bench/drivers/run.py --out {out}", None,
                                         "measured at commit 46e1976, before the controller's spacing fix"),
    "operator_fifo50": Source("bench/operator/result_fifo50.json",
                              "python bench/operator/run.py --run-s 20 --pairs 5 --output {out}", None,
                              "timing of the 1 kHz loop beside the Foxglove bridge (10 runs of 20 s)"),
    "operator_default": Source("bench/operator/result_default.json",
                               "python bench/operator/run.py --run-s 20 --pairs 5 --rt-priority 0 --output {out}",
                               None, "timing of the 1 kHz loop beside the Foxglove bridge (10 runs of 20 s)"),
    "operator_fifo50_viewers50": Source(
        "bench/operator/result_fifo50_viewers50.json",
        "python bench/operator/run.py --run-s 20 --pairs 5 --viewers 50 --output {out}", None,
        "timing of the 1 kHz loop beside the Foxglove bridge with 50 viewers (10 runs of 20 s)"),
    "operator_default_viewers50": Source(
        "bench/operator/result_default_viewers50.json",
        "python bench/operator/run.py --run-s 20 --pairs 5 --viewers 50 --rt-priority 0 --output {out}", None,
        "timing of the 1 kHz loop beside the Foxglove bridge with 50 viewers (10 runs of 20 s)"),
    "operator_own_server_loaded": Source(
        "bench/operator/result_own_server_loaded.json",
        "python bench/operator/run.py --run-s 10 --pairs 2 --viewers 5 --rt-priority 0 --output {out}", None,
        "one short run of the bridge's own WebSocket server on a loaded host (load average 9 to 11)"),
}

# A number ends at a non-word character; "1.20x" (a ratio) is the number 1.20, "v2" or "0x1F" are not numbers.
NUMBER = re.compile(r"(?<![\w.])[-+−]?(?:\d{1,3}(?: \d{3})+|\d+)(?:\.\d+)?(?:[eE][-+−]?\d+)?(?![^\Wx]|x\w|\.\d)")
MARKER = re.compile(r"<!--\s*(fig~|fig<|fig|by|const)(?=\s|-->)\s*(.*?)\s*-->")
TABLE = re.compile(r"<!--\s*table\s+(\S+)\s+(.*?)\s*-->")
LIST = re.compile(r"<!--\s*list\s+(\S+)\s+(\S+)\s+fields=(\S+)\s*-->")
INCLUDE = re.compile(r"<!--\s*include\s+(\S+)\s*-->")
END_INCLUDE = re.compile(r"<!--\s*end include\s*-->")


@dataclass
class Problem:
    file: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    checked: int = 0
    unmarked: list[tuple[str, int, str, str]] = field(default_factory=list)  # file, line, number, context


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


# ---------------------------------------------------------------- numbers and JSON paths

def parse_number(text: str) -> tuple[float, float]:
    """The value of a printed number and half a unit of its last printed digit."""
    t = text.replace("−", "-").replace(" ", "").lstrip("+")
    mant, _, exp = t.lower().partition("e")
    decimals = len(mant.partition(".")[2])
    scale = 10.0 ** (int(exp) if exp else 0)
    return float(t), 0.5 * 10.0 ** -decimals * scale


def agrees(printed: str, value: float) -> bool:
    p, half = parse_number(printed)
    return abs(p - value) <= half * (1 + 1e-9) + 1e-12 * abs(value)


_STEP = re.compile(r'\["([^"]+)"\]|\.?([A-Za-z_][\w-]*)|\[(-?\d+)\]|\[([^\]=]+=[^\]]*)\]|\.\(([\w, -]+)\)')


def lookup(data, path: str):
    """``a.b[0].c``, ``runs[robot=panda,hours=1]`` (the first list element whose fields match),
    ``a.(mean,max)`` (several fields, as a list), ``a["key with spaces"]``."""
    pos, node = 0, data
    path = path.strip()
    while pos < len(path):
        m = _STEP.match(path, pos)
        if not m:
            raise KeyError(f"bad path {path!r} at {path[pos:]!r}")
        quoted, key, index, cond, several = m.groups()
        key = quoted if quoted is not None else key
        if several is not None:  # .(a,b,c): those fields, as a list
            node = [node[k.strip()] for k in several.split(",")]
        elif key is not None:
            if not isinstance(node, dict) or key not in node:
                raise KeyError(f"{path!r}: no key {key!r}")
            node = node[key]
        elif index is not None:
            node = node[int(index)]
        else:
            want = dict(c.split("=", 1) for c in cond.split(","))
            hits = [x for x in node if isinstance(x, dict)
                    and all(str(x.get(k.strip())) == v.strip() or _num_eq(x.get(k.strip()), v) for k, v in want.items())]
            if not hits:
                raise KeyError(f"{path!r}: no element with {cond}")
            node = hits[0]
        pos = m.end()
    return node


def _num_eq(a, b: str) -> bool:
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def evaluate(data, expr: str):
    if "{" not in expr:
        return lookup(data, expr)
    names: dict[str, object] = {}

    def sub(m):
        name = f"_v{len(names)}"
        names[name] = lookup(data, m.group(1))
        return name

    code = re.sub(r"\{([^}]*)\}", sub, expr)
    tree = ast.parse(code, mode="eval")
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Load, ast.Constant, ast.operator,
               ast.unaryop, ast.Call, ast.List)
    for node in ast.walk(tree):
        if not isinstance(node, allowed) or (isinstance(node, ast.Call) and getattr(node.func, "id", "") not in
                                             ("abs", "max", "min", "sum", "len")):
            raise ValueError(f"expression not allowed: {expr!r}")
    return eval(compile(tree, "<fig>", "eval"), {"__builtins__": {}, "abs": abs, "max": max, "min": min,
                                                  "sum": sum, "len": len}, names)


def numbers_of(value) -> list[float]:
    if isinstance(value, bool):
        return [float(value)]
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, str):
        return [parse_number(m.group())[0] for m in NUMBER.finditer(value)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in numbers_of(v)]
    return []


# ---------------------------------------------------------------- the scan

def _strip_code(line: str) -> str:
    """Inline code, links' targets and markers hold commands and paths, not figures."""
    line = re.sub(r"`[^`]*`", lambda m: " " * len(m.group()), line)
    line = re.sub(r"\]\([^)]*\)", lambda m: " " * len(m.group()), line)
    return re.sub(r"<!--.*?-->", lambda m: " " * len(m.group()), line)


def _figure_before(line: str, end: int) -> re.Match | None:
    hits = _figures_before(line, end, 1)
    return hits[-1] if hits else None


def _figures_before(line: str, end: int, count: int) -> list[re.Match]:
    """The last ``count`` numbers before ``end`` on the line, after the previous marker or cell border."""
    text = _strip_code(line[:end])
    start = max(text.rfind("|"), 0)
    hits = [m for m in NUMBER.finditer(text) if m.start() >= start] or list(NUMBER.finditer(text))
    return hits[-count:]


def check(root: Path = ROOT, json_override: dict[str, object] | None = None, timing: bool = True) -> Report:
    """Check every marker in README.md and docs/*.md against the JSON of its source."""
    report = Report()
    cache: dict[str, object] = dict(json_override or {})

    def data_of(name: str):
        if name not in cache:
            if name not in SOURCES:
                raise KeyError(f"unknown source {name!r} (known: {', '.join(sorted(SOURCES))})")
            path = root / SOURCES[name].json
            if not path.exists():
                raise FileNotFoundError(f"{SOURCES[name].json} missing: run `{SOURCES[name].command}`")
            cache[name] = json.loads(path.read_text())
        return cache[name]

    for doc in documents(root):
        rel = str(doc.relative_to(root))
        lines = doc.read_text().splitlines()
        pending_tables = []
        include = None
        in_code = False
        for i, line in enumerate(lines, 1):
            if line.lstrip().startswith("```"):
                in_code = not in_code
            if include is not None:
                if END_INCLUDE.search(line):
                    target = root / include[0]
                    block = "\n".join(include[2]).strip("\n")
                    report.checked += 1
                    if not target.exists():
                        report.problems.append(Problem(rel, include[1], f"include {include[0]}: file missing"))
                    elif block not in target.read_text():
                        report.problems.append(Problem(rel, include[1], f"the block differs from {include[0]} "
                                                       "(copy the file's current text)"))
                    include = None
                else:
                    include[2].append(line)
                continue
            m = INCLUDE.search(line)
            if m:
                include = (m.group(1), i, [])
                continue
            m = TABLE.search(line)
            if m:
                pending_tables.append((m.group(1), m.group(2), i))
                continue
            m = LIST.search(line)
            if m:
                _check_list(report, rel, lines, i, m.groups(), data_of)
                continue
            if pending_tables and line.lstrip().startswith("|"):
                for spec in pending_tables:
                    _check_table(report, rel, lines, i, spec, data_of)
                pending_tables = []
            for m in MARKER.finditer(line):
                kind, rest = m.group(1), m.group(2)
                fig = _figure_before(line, m.start())
                if fig is None:
                    report.problems.append(Problem(rel, i, f"marker `{m.group()}` has no number before it"))
                    continue
                if kind == "const":
                    continue
                report.checked += 1
                if kind == "by":
                    target = root / rest
                    literal = fig.group().lstrip("+").replace("−", "-")
                    if not target.exists():
                        report.problems.append(Problem(rel, i, f"{fig.group()}: {rest} does not exist"))
                    elif literal not in target.read_text():
                        report.problems.append(Problem(rel, i, f"{fig.group()}: not found in {rest}"))
                    continue
                name, _, expr = rest.partition(" ")
                if kind == "fig~" and not timing:
                    continue
                try:
                    values = numbers_of(evaluate(data_of(name), expr))
                    if not values:
                        raise ValueError("no number there")
                except (KeyError, IndexError, ValueError, TypeError, FileNotFoundError) as e:
                    report.problems.append(Problem(rel, i, f"{fig.group()} <- {name} {expr}: {e}"))
                    continue
                figs = _figures_before(line, m.start(), len(values)) if len(values) > 1 else [fig]
                printed = " / ".join(f.group() for f in figs)
                if kind == "fig<":
                    bad = any(abs(v) > parse_number(f.group())[0] * (1 + 1e-9) for f, v in zip(figs, values))
                    if bad or len(figs) != len(values):
                        report.problems.append(Problem(rel, i, f"bound {printed} but `{SOURCES[name].command}` "
                                                       f"gives {' / '.join(f'{v:.6g}' for v in values)} ({expr})"))
                    continue
                if len(figs) != len(values) or not all(agrees(f.group(), v) for f, v in zip(figs, values)):
                    report.problems.append(Problem(rel, i, f"{printed} but `{SOURCES[name].command}` gives "
                                                   f"{' / '.join(f'{v:.6g}' for v in values)} ({expr})"))
        if include is not None:
            report.problems.append(Problem(rel, include[1], "include without `<!-- end include -->`"))
        for spec in pending_tables:
            report.problems.append(Problem(rel, spec[2], "table marker without a table after it"))
    return report


def _bullets(lines: list[str], marker_line: int) -> list[tuple[int, str]]:
    """The bullet lines of the list after a marker (1-based line numbers)."""
    out, k = [], marker_line
    while k < len(lines) and not lines[k].lstrip().startswith("- "):
        if lines[k].strip() and not lines[k].startswith("<!--"):
            return out
        k += 1
    while k < len(lines) and lines[k].lstrip().startswith("- "):
        out.append((k + 1, lines[k]))
        k += 1
    return out


def _check_list(report: Report, rel: str, lines: list[str], marker_line: int, spec, data_of) -> None:
    name, expr, fields = spec
    bullets = _bullets(lines, marker_line)
    try:
        items = evaluate(data_of(name), expr)
    except (KeyError, IndexError, ValueError, TypeError, FileNotFoundError) as e:
        report.problems.append(Problem(rel, marker_line, f"list <- {name} {expr}: {e}"))
        return
    if len(items) != len(bullets):
        report.problems.append(Problem(rel, marker_line, f"{len(bullets)} bullets, {name} {expr} has {len(items)}"))
    for (n, text), item in zip(bullets, items):
        want = [x for f in fields.split(",") for x in numbers_of(item.get(f, ""))]
        printed = [m.group() for m in NUMBER.finditer(_strip_code(text))]
        report.checked += 1
        if len(printed) != len(want) or not all(agrees(p, v) for p, v in zip(printed, want)):
            report.problems.append(Problem(rel, n, f"bullet's numbers {printed} but `{SOURCES[name].command}` "
                                           f"gives {[f'{v:.6g}' for v in want]} ({expr} {fields})"))


def _cells(row: str) -> list[str]:
    """A table row's cells; ``\\|`` inside a cell is text (markdown's escaped pipe), not a border."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def _check_table(report: Report, rel: str, lines: list[str], start: int, spec, data_of) -> None:
    name, rest, marker_line = spec
    words = rest.split()
    keys = ("column", "field", "match")
    options = dict(w.split("=", 1) for w in words if "=" in w and w.split("=", 1)[0] in keys)
    expr = " ".join(w for w in words if not ("=" in w and w.split("=", 1)[0] in keys))
    header = _cells(lines[start - 1])
    column = options.get("column")
    if column not in header:
        report.problems.append(Problem(rel, marker_line, f"table has no column {column!r}: {header}"))
        return
    col = header.index(column)
    rows = []
    for line in lines[start + 1:]:
        if not line.lstrip().startswith("|"):
            break
        rows.append(_cells(line))
    try:
        items = evaluate(data_of(name), expr)
    except (KeyError, IndexError, ValueError, TypeError, FileNotFoundError) as e:
        report.problems.append(Problem(rel, marker_line, f"table <- {name} {expr}: {e}"))
        return
    if "match" in options:  # row i is the item whose MATCH field starts its first cell (longest wins)
        key = options["match"]
        paired = []
        for k, row in enumerate(rows):
            hits = sorted((x for x in items if row[0].startswith(str(x.get(key)))), key=lambda x: -len(str(x[key])))
            if not hits:
                report.problems.append(Problem(rel, start + 2 + k, f"row {row[0]!r}: no item of {name} {expr} "
                                               f"has this {key}"))
                continue
            paired.append((k, row, hits[0]))
    else:
        if len(items) != len(rows):
            report.problems.append(Problem(rel, marker_line, f"table has {len(rows)} rows, {name} {expr} "
                                           f"has {len(items)}"))
        paired = [(k, row, item) for k, (row, item) in enumerate(zip(rows, items))]
    for k, row, item in paired:
        value = item[options["field"]] if "field" in options else item
        printed = [m.group() for m in NUMBER.finditer(_strip_code(row[col]))]
        want = numbers_of(value)
        report.checked += 1
        if len(printed) != len(want) or not all(agrees(p, v) for p, v in zip(printed, want)):
            report.problems.append(Problem(rel, start + 2 + k, f"row {k + 1} {column}: {row[col]!r} but "
                                           f"`{SOURCES[name].command}` gives {value!r}"))


# ---------------------------------------------------------------- unmarked figures

# A line speaks of a measurement when it has one of these words or units.
MEASURED = re.compile(r"measured|RMSE|RMS\b|error|µs|\bms\b|\d\s?s\b|\bGB\b|\bMB\b|N·m|N\.m|\bmm\b|%|×|speed|"
                      r"peak|faster|slower|cond|median|p99|takes|took|wall|ratio|residual", re.I)
# A number counts as a figure when it has a decimal point, an exponent or one of these units after it.
UNIT_AFTER = re.compile(r"\s?(?:%|×|x\b|µs|ms\b|s\b|GB|MB|KB|kB|mm\b|N·m|N\.m|rad|kFLOP|k\b|M\b)")
# Not measurements: rates and versions that are chosen, paper references, dates. Each is a
# regular expression matched against the text around the number; keep this list short.
ALLOWED = [
    r"\b\d+(?:\.\d+)? k?Hz\b",  # sampling rates and cut-offs that are chosen
    r"Python\s*[≥>=]*\s*\d", r"\bv?\d+\.\d+\.\d+\b",  # versions
    r"\b(?:eqs?\.|Table|Tables|section|Section|Fig\.|figure)\s*\d",  # paper references
    r"\b(?:19|20)\d\d\b",  # years
    r"issue \d+",
    r"\b[A-Za-z]+-\d\.\d\b",  # licences: Apache-2.0, GPL-3.0
]
_ALLOWED = re.compile("|".join(f"(?:{a})" for a in ALLOWED))

# Files (or sections: a heading's start) being rewritten on other branches: their unmarked figures are
# listed by --unmarked but not held to the baseline, so that merging those branches does not fail the
# test on context that moved. Markers in them are checked like everywhere else. Remove an entry once
# its branch is merged and its figures are marked.
IN_PROGRESS: list[tuple[str, str | None]] = [
]


def in_progress(rel: str, heading: str) -> bool:
    return any(rel == f and (h is None or heading.startswith(h)) for f, h in IN_PROGRESS)


def unmarked(root: Path = ROOT, skip_in_progress: bool = False) -> list[tuple[str, int, str, str]]:
    """Figures in lines that speak of a measurement, with no marker: (file, line, number, context)."""
    out = []
    for doc in documents(root):
        rel = str(doc.relative_to(root))
        in_code = False
        in_include = False
        table_marked = False
        heading = ""
        for i, raw in enumerate(doc.read_text().splitlines(), 1):
            if raw.lstrip().startswith("```"):
                in_code = not in_code
                continue
            if in_code:
                continue
            if raw.startswith("## "):
                heading = raw
            if skip_in_progress and in_progress(rel, heading):
                continue
            if INCLUDE.search(raw):
                in_include = True
            if END_INCLUDE.search(raw):
                in_include = False
                continue
            if TABLE.search(raw) or LIST.search(raw):
                table_marked = True
                continue
            if table_marked and not raw.lstrip().startswith(("|", "- ")) and raw.strip():
                table_marked = False
            if in_include or table_marked:
                continue
            marked_spans = []
            for m in MARKER.finditer(raw):
                count = 1
                if m.group(1).startswith("fig") and ".(" in m.group(2):
                    count = m.group(2).split(".(")[-1].count(",") + 1
                marked_spans += [f.start() for f in _figures_before(raw, m.start(), count)]
            line = _strip_code(raw)
            if not MEASURED.search(line):
                continue
            allowed = [(a.start(), a.end()) for a in _ALLOWED.finditer(line)]
            for n in NUMBER.finditer(line):
                if n.start() in marked_spans or any(s <= n.start() < e for s, e in allowed):
                    continue
                text = n.group()
                before = line[max(0, n.start() - 3):n.start()]
                if re.search(r"[=<>≤≥±]\s*$", before) or re.match(r"\s?[×x]\s?\d", line[n.end():n.end() + 3]):
                    continue  # a setting (T = 5 s), a bound (< 5 s) or a size (150 × 3000): chosen, not measured
                decimal = "." in text or "e" in text.lower()
                if not decimal and not UNIT_AFTER.match(line, n.end()):
                    continue
                context = re.sub(r"\s+", " ", line[max(0, n.start() - 30):n.end() + 15]).strip()
                out.append((rel, i, text, context))
    return out


def _key(entry) -> str:
    rel, _, text, context = entry
    return f"{rel} | {text} | {context}"


def read_baseline(path: Path = BASELINE) -> list[str]:
    if not path.exists():
        return []
    return [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def write_baseline(entries, path: Path = BASELINE) -> None:
    head = ("# Figures in README.md and docs/*.md without a marker (bench/docs_figures.py), known and not yet tied\n"
            "# to a command's JSON. tests/docs/test_figures.py fails on any unmarked figure not listed here and on a\n"
            "# listed one that is gone: mark figures, then shrink this list with\n"
            "#   .venv/bin/python bench/docs_figures.py --update-baseline\n")
    path.write_text(head + "\n".join(sorted(_key(e) for e in entries)) + "\n")


def baseline_diff(root: Path = ROOT, path: Path = BASELINE) -> tuple[list, list[str]]:
    """(unmarked figures not in the baseline, baseline lines no longer found)."""
    found = unmarked(root, skip_in_progress=True)
    known = read_baseline(path)
    keys = [_key(e) for e in found]
    new = [e for e in found if _key(e) not in known]
    gone = [k for k in known if k not in keys]
    return new, gone


PATH_REF = re.compile(r"(?<![\w/.-])((?:tests|bench|robodyn|identification|calibration|drivers|daemon|tools|docs|systemd)"
                      r"/[\w/.-]*\w\.(?:py|md|json|toml|cpp|csv))(?:::(\w+))?")


def dangling(root: Path = ROOT) -> list[Problem]:
    """Files (and test functions, ``path.py::test_name``) that README.md, docs/*.md or a benchmark cite
    but that do not exist."""
    out = []
    cited = documents(root) + sorted(p for p in (root / "bench").rglob("*.py") if p.name != "docs_figures.py")
    for doc in cited:
        rel = str(doc.relative_to(root))
        for i, line in enumerate(doc.read_text().splitlines(), 1):
            for m in PATH_REF.finditer(line):
                path, test = m.groups()
                if re.search(r"(?:--out|--output|--markdown|>)\s*$", line[:m.start()]):
                    continue  # where a command writes, not a citation
                target = root / path
                if not target.exists() and (doc.parent / path).exists():
                    target = doc.parent / path
                if not target.exists():
                    if "*" in path or "<" in path:
                        continue
                    out.append(Problem(rel, i, f"cites {path}, which does not exist"))
                elif test and not re.search(rf"def {test}\b", target.read_text()):
                    out.append(Problem(rel, i, f"cites {path}::{test}, which is not defined there"))
    return out


# ---------------------------------------------------------------- rerun (make docs-check)

def rerun(names: list[str] | None = None, budget_minutes: float = 3.0) -> dict[str, object]:
    """Run each cheap source's command and return its fresh JSON by source name."""
    fresh: dict[str, object] = {}
    for name, src in SOURCES.items():
        if names and name not in names:
            continue
        if src.rerun_minutes is None or src.rerun_minutes > budget_minutes:
            print(f"- {name}: not rerun ({src.why_not or 'over the budget'}); committed {src.json}", file=sys.stderr)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.json"
            cmd = src.command.replace("{out}", str(out))
            argv = shlex.split(cmd)
            if argv[0] == "python":
                argv[0] = sys.executable
            elif argv[0] == "robodyn":
                argv = [sys.executable, "-m", "robodyn"] + argv[1:]
            print(f"- {name}: {cmd}", file=sys.stderr, flush=True)
            t0 = time.monotonic()
            p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                               timeout=max(60.0, src.rerun_minutes * 60 * 4))
            if p.returncode != 0:
                print(f"  failed ({p.returncode}): {p.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                continue
            text = out.read_text() if "{out}" in src.command else p.stdout
            fresh[name] = json.loads(text)
            print(f"  {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return fresh


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rerun", action="store_true", help="rerun the cheap commands and compare against their output")
    ap.add_argument("--sources", default="", help="with --rerun: only these sources (comma-separated)")
    ap.add_argument("--unmarked", action="store_true", help="list every unmarked figure")
    ap.add_argument("--update-baseline", action="store_true",
                    help=f"drop the figures that are gone from {BASELINE.relative_to(ROOT)} (it only shrinks)")
    ap.add_argument("--add-new", action="store_true", help="with --update-baseline: also list the new unmarked figures")
    args = ap.parse_args()
    if args.update_baseline:
        known = set(read_baseline())
        found = unmarked(skip_in_progress=True)
        keep = found if args.add_new else [e for e in found if _key(e) in known]
        write_baseline(keep)
        if len(keep) < len(found):
            print(f"{len(found) - len(keep)} unmarked figures are new and not listed: mark them "
                  "(or list them with --add-new)")
        print(f"{len(read_baseline())} unmarked figures listed in {BASELINE.relative_to(ROOT)}")
        return 0
    if args.unmarked:
        for rel, i, text, context in unmarked():
            print(f"{rel}:{i}: {text}   ... {context}")
        return 0
    status = 0
    report = check()
    print(f"{report.checked} marked figures checked against the committed JSON; {len(report.problems)} disagree")
    for p in report.problems:
        print(f"  {p}")
    status |= bool(report.problems)
    new, gone = baseline_diff()
    print(f"{len(read_baseline())} known unmarked figures; {len(new)} new, {len(gone)} gone from the list")
    for e in new:
        print(f"  new unmarked: {e[0]}:{e[1]}: {e[2]}   ... {e[3]}")
    for k in gone:
        print(f"  gone (run --update-baseline): {k}")
    status |= bool(new or gone)
    missing = dangling()
    print(f"{len(missing)} cited files or tests missing")
    for p in missing:
        print(f"  {p}")
    status |= bool(missing)
    if args.rerun:
        names = [s for s in args.sources.split(",") if s]
        fresh = rerun(names)
        rerun_report = check(json_override=fresh, timing=False)
        stale = [p for p in rerun_report.problems if any(f"`{SOURCES[n].command}`" in p.text for n in fresh)]
        print(f"rerun {', '.join(fresh) or 'nothing'}: {len(stale)} figures now print something else")
        for p in stale:
            print(f"  STALE {p}")
        status |= bool(stale)
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
