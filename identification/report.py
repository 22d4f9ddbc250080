"""Validation plots (predicted against measured torque, PNG) and a self-contained HTML report."""

from __future__ import annotations

import base64
import html
import math
import io
from pathlib import Path

import numpy as np

from .result import IdentificationResult, as_result


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError("plots need matplotlib: pip install 'robodyn[plot]'") from None
    return plt


def torque_plot_png(t: np.ndarray, measured: np.ndarray, predicted: np.ndarray, joint_names, title: str) -> bytes:
    plt = _pyplot()
    n = measured.shape[1]
    fig, axes = plt.subplots(n, 1, figsize=(9, 1.7 * n + 0.8), sharex=True, squeeze=False)
    for j in range(n):
        ax = axes[j, 0]
        ax.plot(t, measured[:, j], lw=0.8, color="0.35", label="measured")
        ax.plot(t, predicted[:, j], lw=0.8, color="tab:red", label="predicted")
        ax.set_ylabel(f"{joint_names[j]}\nN·m", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0, 0].legend(loc="upper right", fontsize=7)
    axes[-1, 0].set_xlabel("t [s]")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def write_html_report(path, result: IdentificationResult | dict, sections: list[dict]) -> Path:
    """``sections``: [{"title", "metrics" (torque_metrics dict), "png" (bytes or None)}]."""
    path = Path(path)
    result = as_result(result)
    est = result.estimate
    rows = []
    for p in result.parameters():
        rel, std = p.relative_std_percent, p.std
        std = "n/a" if std is None or not math.isfinite(std) else f"{std:.3g}"  # methods without a covariance
        rows.append(f"<tr><td>{html.escape(p.name)}</td><td>{p.value:.6g}</td><td>{std}</td>"
                    f"<td>{'n/a' if rel is None else f'{rel:.2f}'}</td><td><code>{html.escape(p.expression)}</code></td></tr>")
    parts = [
        "<!doctype html><meta charset='utf-8'><title>robodyn identification</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}code{font-size:12px}</style>",
        f"<h1>Identification of {html.escape(result.robot)}</h1>",
        f"<p>method {html.escape(est.method)}, friction {html.escape(result.config.friction)}, "
        f"{result.base.count} base parameters, cond {est.cond:.4g}, "
        f"rows {est.rows}, relative residual {est.relative_residual:.4g}</p>",
    ]
    for s in sections:
        m = s["metrics"]
        parts.append(f"<h2>{html.escape(s['title'])}</h2><table><tr><th>joint</th><th>RMSE N·m</th>"
                     "<th>relative error</th><th>correlation</th></tr>")
        for j, name in enumerate(m["joints"]):
            rel = m["relative_error"][j]
            corr = m["correlation"][j]
            parts.append(f"<tr><td>{html.escape(name)}</td><td>{m['rmse'][j]:.4f}</td>"
                         f"<td>{'n/a' if rel is None else f'{rel:.4f}'}</td><td>{'n/a' if corr is None else f'{corr:.5f}'}</td></tr>")
        parts.append(f"<tr><th>sum</th><th>{m['rmse_sum']:.4f}</th><th>{m['relative_error_total']:.4f}</th><th></th></tr></table>")
        if s.get("png"):
            parts.append(f"<img alt='{html.escape(s['title'])}' src='data:image/png;base64,"
                         f"{base64.b64encode(s['png']).decode()}'>")
    parts.append("<h2>Base parameters</h2><table><tr><th>name</th><th>value</th><th>std</th><th>%std</th>"
                 "<th>expression</th></tr>" + "".join(rows) + "</table>")
    provenance = result.provenance
    parts.append(f"<h2>Provenance</h2><pre>{html.escape(str(provenance.get('recordings')))}\n"
                 f"{html.escape(provenance.get('software', ''))} {html.escape(provenance.get('created', ''))}</pre>")
    path.write_text("\n".join(parts))
    return path
