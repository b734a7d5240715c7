"""Figures of the findings over training seeds (notebook 10 and the README): each finding's deciding margin per seed,
and how notebook 02's methods rank from seed to seed."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

__all__ = ["margins_per_seed", "rank_shares"]

#: One seed's outcome, as the dots of :func:`margins_per_seed` show it.
OUTCOME_COLORS = {"consistent": "#1a9850", "inconclusive": "#f0a202", "inconsistent": "#d73027"}


def margins_per_seed(rows: Sequence[Mapping[str, Any]], ncols: int = 4):
    """One panel per registered finding (``rows`` from :func:`unlearnkit.claims.render.margins`): its effect's margin
    from no effect on each testable seed (above the line: the paper's side; below: the other side), a dot per seed
    coloured by that seed's outcome, and the mean with its 95 % t-interval over seeds (where the confirmatory seeds
    are judged apart, each set's: "expl." and "conf.", the sets split by a dotted line). A finding whose dots straddle
    the line sits on it: a reseed can flip it."""
    n = max(1, len(rows))
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.1 * ncols, 2.35 * nrows + 0.9), squeeze=False)
    for ax in axes.flat[len(rows):]:
        ax.set_axis_off()
    for ax, row in zip(axes.flat, rows):
        seeds, margins = row["seeds"], row["margins"]
        x = np.arange(len(seeds))
        colours = [OUTCOME_COLORS.get(o, "#8c8c8c") for o in row["outcomes"]]
        ax.axhline(0, color="#444444", lw=1)
        ax.scatter(x, margins, c=colours, s=36, zorder=3, edgecolor="white", linewidth=0.5)
        sets = row.get("sets") or [{"name": "mean", **{k: row.get(k) for k in ("mean", "low", "high")}}]
        marks = [len(seeds) + 0.4 + 1.2 * i for i in range(len(sets))]
        for at, s in zip(marks, sets):
            _mean_mark(ax, at, s)
        if row.get("sets"):  # the exploratory seeds, then a line, then the confirmatory ones
            explored = set(sets[0]["seeds"])
            first = sum(seed in explored for seed in seeds)
            ax.axvline(first - 0.5, color="#999999", lw=0.8, ls=":")
        labels = [s["name"] if len(sets) == 1 else s["name"][:4] + "." for s in sets]
        ax.set_xticks([*x, *marks], [*map(str, seeds), *labels], fontsize=9 if len(seeds) <= 8 else 7)
        ax.set_xlim(-0.6, marks[-1] + 0.6)
        ax.tick_params(axis="y", labelsize=9)
        ends = [v for s in sets for v in (s.get("low"), s.get("high"), s.get("mean")) if v is not None]
        limit = max(abs(v) for v in [*margins, *ends, 0] if math.isfinite(v))
        ax.set_ylim(-1.15 * limit if limit else -1, 1.15 * limit if limit else 1)
        title = textwrap.shorten(f"{row['short']} (nb {row['notebook'][:2]})", 34, placeholder="…")
        ax.set_title(f"{title}\n{row['verdict']}", fontsize=10)
        ax.set_ylabel(textwrap.fill(f"{row['quantity']}: {row['unit']}", 30), fontsize=9)
        ax.grid(axis="x", visible=False)
    handles = [plt.Line2D([], [], marker="o", ls="", color=c, label=f"seed: {o}") for o, c in OUTCOME_COLORS.items()]
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False, fontsize=10, bbox_to_anchor=(0.5, 0))
    fig.suptitle("Each registered finding's effect per training seed (above the line: on the paper's side)", fontsize=12,
                 fontweight="bold")
    fig.tight_layout(rect=(0, 0.04, 1, 0.985))
    return fig


def _mean_mark(ax, at: float, s: Mapping[str, Any]) -> None:
    """A set's mean margin as a diamond at ``at``, with its 95 % t-interval where it has one (two seeds or more)."""
    mean, low, high = s.get("mean"), s.get("low"), s.get("high")
    if mean is None or not math.isfinite(mean):
        return
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        ax.errorbar([at], [mean], yerr=[[mean - low], [high - mean]], fmt="D", color="#333333", ms=5, capsize=3,
                    zorder=3)
    else:
        ax.plot([at], [mean], "D", color="#333333", ms=5, zorder=3)


def rank_shares(shares: Mapping[str, Mapping[str, Any]], taus: Mapping[str, float], threshold: float, seeds: int):
    """One heat map per metric: the share of seeds on which each method (rows, by mean rank) takes each rank
    (columns, 1 = best), with the metric's mean Kendall τ between seeds in its title (stable at ``threshold``).
    ``shares`` is ``{metric: {"methods": [...], "shares": [[...], ...]}}``."""
    metrics = list(shares)
    ncols = min(2, len(metrics))
    nrows = math.ceil(len(metrics) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.6 * ncols, 4.9 * nrows + 0.6), squeeze=False)
    for ax in axes.flat[len(metrics):]:
        ax.set_axis_off()
    for ax, metric in zip(axes.flat, metrics):
        methods, grid = shares[metric]["methods"], np.asarray(shares[metric]["shares"], dtype=float)
        ax.imshow(grid, cmap="Blues", vmin=0, vmax=1, aspect="auto")
        for (i, j), value in np.ndenumerate(grid):
            if value > 0:
                ax.text(j, i, f"{value * seeds:.0f}", ha="center", va="center", fontsize=9,
                        color="white" if value > 0.6 else "black")
        ax.set_xticks(range(grid.shape[1]), [str(r) for r in range(1, grid.shape[1] + 1)], fontsize=9)
        ax.set_yticks(range(len(methods)), methods, fontsize=10)
        ax.set_xlabel("rank (1 = best)", fontsize=10)
        tau = taus.get(metric, math.nan)
        said = (f"mean τ {tau:.2f} ({'stable' if tau >= threshold else 'not stable'})" if tau is not None
                and math.isfinite(tau) else "τ n/a: the methods tie on a seed")
        ax.set_title(f"{metric}\n{said}", fontsize=11)
        ax.grid(False)
    fig.suptitle(textwrap.fill(f"How the methods rank on each of {seeds} training seeds (a cell: the seeds on which "
                               f"the method takes that rank; τ ≥ {threshold} counts as stable)", 90), fontsize=12,
                 fontweight="bold")
    fig.tight_layout()
    return fig
