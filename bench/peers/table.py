"""The README's table of bench/peers/result.json, each figure with its docs_figures marker.

One row per log, one column per peer: the held-out score (sum of per-joint RMSE, N.m), then the
process's wall time (s), its peak memory (MB) and the number of parameters it estimates; a peer
that could not run shows the first words of its reason (the JSON holds the whole line).

    .venv/bin/python bench/peers/table.py [--json bench/peers/result.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

COLUMNS = (("robodyn", "robodyn (default)"), ("robodyn_select", "robodyn --select"), ("figaroh", "FIGAROH 1.0.2"),
           ("mujoco_sysid", "mujoco.sysid 4.0.1"), ("plain", "plain script"),
           ("robodyn_cutoff_10hz", "robodyn, cut-off fixed at 10 Hz (diagnostic)"))


def cell(row: dict | None, source: str = "peers") -> str:
    if row is None:
        return "not run"
    where = f"rows[log={row['log']},peer={row['peer']}]"
    if "error" in row:
        return f"cannot run: {row['error'][:80]}"
    return (f"**{row['rmse_sum']:.2f}**<!-- fig {source} {where}.rmse_sum --> "
            f"({row['wall_seconds']:.0f}<!-- fig~ {source} {where}.wall_seconds --> s, "
            f"{row['peak_rss_mb']:.0f}<!-- fig~ {source} {where}.peak_rss_mb --> MB, "
            f"{row['parameters']}<!-- fig {source} {where}.parameters --> p.)")


def table(doc: dict) -> str:
    rows = {(r["log"], r["peer"]): r for r in doc["rows"]}
    logs = list(dict.fromkeys(r["log"] for r in doc["rows"]))
    peers = [(k, title) for k, title in COLUMNS if any(p == k for _, p in rows)]
    lines = ["| log | " + " | ".join(title for _, title in peers) + " |",
             "|---|" + "---|" * len(peers)]
    for log in logs:
        lines.append(f"| {log} | " + " | ".join(cell(rows.get((log, k))) for k, _ in peers) + " |")
    loads = [x for r in doc["rows"] for x in (r.get("loadavg_before", [None])[0], r.get("loadavg_after", [None])[0])
             if x is not None]
    if loads:
        lines.append("")
        lines.append(f"1-minute load average during the runs: {min(loads):.1f} to {max(loads):.1f} on "
                     f"{doc['host']['cpus']} CPUs (other work shared the host): wall times are loaded.")
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=Path(__file__).with_name("result.json"))
    print(table(json.loads(ap.parse_args().json.read_text())))
