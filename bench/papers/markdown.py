"""The papers' tables and findings as markdown, from bench/papers/result.json, with the figure markers
that tie every number to that file (bench/docs_figures.py checks them).

    python bench/papers/markdown.py [--result bench/papers/result.json] [--papers wso_table4,icpso,...]

Prints one section per paper: the command and its time, the setup, every table (each row with its
data's origin and command) and every finding. docs/identification-methods.md holds its output under
"Reproducing the papers"; rerun it after bench/papers/run.py and paste the sections in.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from robodyn.reproduce.report import FINDING_KINDS, _fmt

HEADINGS = {"wso": "Ni et al. 2024, white shark optimizer identification of a Franka arm",
            "stepwise": "Chen et al. 2021, stepwise identification of flexible-joint robots",
            "icpso": "Zhong et al. 2023, chaotic PSO excitation design for a SCARA",
            "ur10e": "Mamedov & Mikhel 2020, UR10e identification walk-through",
            "calibration": "Li et al. 2023, UR5 kinematic calibration with joint stiffness"}


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def section(key: str, paper: dict) -> str:
    paper_key, _, part = key.partition("_")
    heading = HEADINGS.get(paper_key, paper_key) + (f": part {part}" if part else "")
    command = paper.get("command", f"robodyn reproduce {key}")
    out = [f"### {heading}", "",
           f"`{command}` ({paper['elapsed_s']:.0f} s<!-- fig~ papers papers.{key}.elapsed_s -->). "
           + _cell(paper["setup"]).strip(), ""]
    for i, table in enumerate(paper["tables"]):
        out += [f"**{_cell(table['title'])}**", "",
                f"<!-- table papers papers.{key}.tables[{i}].rows match=quantity column=paper field=paper -->",
                f"<!-- table papers papers.{key}.tables[{i}].rows match=quantity column=robodyn field=robodyn -->",
                "| quantity | paper | robodyn | origin | command |", "|---|---|---|---|---|"]
        for r in table["rows"]:
            quantity = r["quantity"] + (f" ({r['note']})" if r.get("note") else "")
            paper_value = "–" if r["paper"] is None else r["paper"]
            origin = r.get("origin", "") + (f"; paper: {r['paper_origin']}" if r.get("paper_origin") else "")
            out.append(f"| {_cell(quantity)} | {_cell(paper_value)} | {_cell(_fmt(r['robodyn']))} | {_cell(origin)} "
                       f"| `{_cell(r['command'])}` |")
        out.append("")
    if paper["findings"]:
        out += ["Findings (each marked " + ", ".join(f"'{k}'" for k in FINDING_KINDS) + "):",
                f"<!-- list papers papers.{key}.findings fields=claim,reason,evidence -->", ""]
        for f in paper["findings"]:
            out.append(f"- **{_cell(f['claim'])}** ({_cell(f['reason'])}; {f.get('kind', '')}). {_cell(f['evidence'])} "
                       f"`{_cell(f['command'])}`")
        out.append("")
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--result", default=str(Path(__file__).with_name("result.json")))
    p.add_argument("--papers", default="wso,stepwise,icpso,ur10e,calibration",
                   help="entries of the result file (a part's entry is PAPER_PART)")
    a = p.parse_args()
    doc = json.loads(Path(a.result).read_text())
    print("\n".join(section(k, doc["papers"][k]) for k in a.papers.split(",") if k in doc["papers"]))


if __name__ == "__main__":
    main()
