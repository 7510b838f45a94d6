"""The report's figures (docs/protocol.md §10 item 10), drawn with matplotlib beside the report."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on benchmark machines
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from .analysis import REGIONS, accepted  # noqa: E402

DISTRIBUTIONS = "engine_times.png"
RATIO_VS_SYNCS = "ratio_vs_syncs.png"


def engine_time_distributions(rounds: pd.DataFrame, summary: dict, path: Path) -> Path:
    """Per cell, the accepted engine-region times of both sides (box plot with the points)."""
    cells = summary["cells"]
    ncols = min(4, max(len(cells), 1))
    nrows = max(1, -(-len(cells) // ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 2.8 * nrows), squeeze=False)
    sides = summary["sides"]
    for ax, cell in zip(axes.flat, cells):
        rows = accepted(rounds[rounds["cell"] == cell["cell"]])
        column = REGIONS[cell["primary_region"]]
        data = [rows.loc[rows["role"] == r, column].dropna().to_numpy() for r in ("A", "B")]
        ax.boxplot(data, widths=0.5, showfliers=False)
        for i, values in enumerate(data, start=1):
            ax.plot([i] * len(values), values, ".", alpha=0.5, markersize=3)
        ax.set_xticks([1, 2], [f"A {sides['A']}", f"B {sides['B']}"], fontsize=7)
        ax.set_title(cell["cell"], fontsize=8)
        ax.set_ylabel(f"{cell['primary_region'].replace('_', ' ')} ms", fontsize=7)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(cells):]:
        ax.set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def ratio_against_syncs(summary: dict, path: Path) -> Path:
    """Paired ratio B/A (with its interval) against B's median host-sync count, one point per cell."""
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for cell in summary["cells"]:
        syncs = cell["syncs"]["host_syncs_B"]
        if cell["ratio"] is None or syncs is None:
            continue
        lo, hi = cell["ratio_lo"], cell["ratio_hi"]
        # a percentile interval need not hold the paired median; matplotlib refuses a negative bar.
        # A null bound is an infinite one (a round timed at 0 ms; JSON holds no infinity): no bar
        # on that side, and the label says the interval is open there
        below = 0.0 if lo is None else max(cell["ratio"] - lo, 0.0)
        above = 0.0 if hi is None else max(hi - cell["ratio"], 0.0)
        ax.errorbar([syncs], [cell["ratio"]], yerr=[[below], [above]],
                    fmt="o", capsize=3, markersize=4)
        open_ends = [name for name, bound in (("lower", lo), ("upper", hi)) if bound is None]
        label = cell["cell"] + (f" (no {' or '.join(open_ends)} bound)" if open_ends else "")
        ax.annotate(label, (syncs, cell["ratio"]), fontsize=6, xytext=(3, 3),
                    textcoords="offset points")
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlabel(f"host synchronizations of B ({summary['sides']['B']}), median per update")
    ax.set_ylabel("B / A (paired median, 95 % CI)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = ["engine_time_distributions", "ratio_against_syncs", "DISTRIBUTIONS", "RATIO_VS_SYNCS"]
