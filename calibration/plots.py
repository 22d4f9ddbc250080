"""Error-per-pose plots (Li et al. 2023 Fig. 5 / Fig. 6 style), PNG via matplotlib, imported lazily."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        from robodyn.errors import UserError

        raise UserError("plot: matplotlib is not installed; install it (pip install matplotlib) or leave out --plot") from None
    matplotlib.use("Agg")  # files only: never needs a display
    import matplotlib.pyplot as plt

    return plt


def plot_errors_per_pose(path, series: dict, *, title: str = "end position error per pose") -> Path:
    """One line per method: position error (mm) against pose number."""
    if not series:
        raise ValueError("plot: nothing to plot")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
    for label, errors_mm in series.items():
        e = np.asarray(errors_mm, dtype=float)
        ax.plot(np.arange(1, e.size + 1), e, marker="o", markersize=3, linewidth=1, label=f"{label} (mean {e.mean():.3f} mm)")
    ax.set_xlabel("pose")
    ax.set_ylabel("position error (mm)")
    ax.set_title(title)
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path
