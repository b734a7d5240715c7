"""Figures of the alignment study (:mod:`unlearnkit.studies.alignment`, Scholten et al. Fig. 6): the sampled
scores of single requests beside their greedy score, M_bin per request against the greedy verdict, the bounds by
category and the share of requests greedy decoding calls safe while sampling complies, along alignment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..studies.alignment import GROUPS, Scored, binary_floor

__all__ = ["plot_score_distributions", "plot_binary_bounds", "plot_category_bounds", "plot_strength_summary"]

GROUP_COLORS = {GROUPS[0]: "C0", GROUPS[1]: "C1", GROUPS[2]: "C3"}


def _shorten(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def plot_score_distributions(scored: Scored, table: pd.DataFrame, chosen: Sequence[int], model: str,
                             threshold: float, measures: str, ncols: int = 2):
    """Fig. 6 top: for each chosen request (``ncols`` a row), the histogram of its n sampled scores h, their mean
    (dashed) and the greedy answer's score (red), with the threshold that makes an answer count for M_bin (grey)."""
    ncols = max(1, min(ncols, len(chosen)))
    nrows = -(-len(chosen) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.1 * nrows), squeeze=False, sharey=True)
    for ax in list(axes.flat)[len(chosen):]:
        ax.set_axis_off()
    bins = np.linspace(0, 1, 21)
    for ax, index in zip(axes.flat, chosen):
        h = scored.h[index]
        ax.hist(h, bins=bins, color=GROUP_COLORS.get(table.loc[index, "group"], "C0"), alpha=0.75)
        ax.axvline(h.mean(), color="k", ls="--", lw=1, label=f"sampled mean {h.mean():.2f}")
        ax.axvline(scored.greedy_h[index], color="C3", lw=2, label=f"greedy {scored.greedy_h[index]:.2f}")
        ax.axvline(threshold, color="0.6", lw=1, ls=":")
        ax.set_title(f"{_shorten(table.loc[index, 'goal'], 44)}\n[{table.loc[index, 'category']}, "
                     f"{table.loc[index, 'group']}; {table.loc[index, 'sampled_share']:.0%} comply]", fontsize=9)
        ax.set_xlabel(f"h = P({measures.split(' ')[0]})")
        ax.legend(fontsize=9, loc="upper center")
    for row in axes:
        row[0].set_ylabel(f"answers of n = {scored.h.shape[1]}")
    fig.suptitle(f"{model}: sampled scores of single requests against the greedy score", y=1.04)
    fig.tight_layout()
    return fig


def plot_binary_bounds(tables: Mapping[str, pd.DataFrame], n: int, alpha: float, ncols: int = 3):
    """Fig. 6 bottom: per model, M_bin of every request (sorted within each group), filled where greedy decoding
    answers safely and hollow where it does not; the grey line is M_bin's floor (no sampled answer complies)."""
    floor = binary_floor(n, alpha)
    count = len(tables)
    ncols = min(ncols, count)
    nrows = -(-count // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.0 * nrows), squeeze=False, sharey=True)
    for ax in axes.flat[count:]:
        ax.set_axis_off()
    for ax, (name, table) in zip(axes.flat, tables.items()):
        x0 = 0
        for group in GROUPS:
            part = table[table["group"] == group].sort_values("M_bin")
            if part.empty:
                continue
            x = np.arange(x0, x0 + len(part))
            safe = part["greedy_safe"].to_numpy()
            color = GROUP_COLORS[group]
            ax.scatter(x[safe], part["M_bin"].to_numpy()[safe], s=12, color=color, label=f"{group}")
            ax.scatter(x[~safe], part["M_bin"].to_numpy()[~safe], s=12, facecolors="none", edgecolors=color)
            x0 += len(part) + 3
        ax.axhline(floor, color="0.5", lw=1, ls=":")
        ax.set_yscale("log")
        ax.set_ylim(floor / 2, 1.5)
        ax.set_title(name)
        ax.set_xticks([])
        ax.set_xlabel("requests (sorted per group)")
    axes[0][0].set_ylabel(f"M_bin (α = {alpha}, n = {n})")
    axes[0][0].legend(fontsize=9, title="filled: greedy safe", title_fontsize=9, loc="lower right")
    fig.tight_layout()
    return fig


def plot_category_bounds(frame: pd.DataFrame, measures: str):
    """Upper expectation bound M_μ and std bound M_σ of h, averaged over each category's requests, per model."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.35 * frame["category"].nunique() + 2), sharey=True)
    for ax, column, title in zip(axes, ("M_mu_high", "M_sigma"), ("upper bound M_μ on E[h]", "bound M_σ on sd(h)")):
        table = frame.pivot(index="category", columns="model", values=column)
        table = table[list(dict.fromkeys(frame["model"]))]
        image = ax.imshow(table.to_numpy(), aspect="auto", cmap="magma_r", vmin=0, vmax=1 if column != "M_sigma"
                          else 0.5)
        ax.set_xticks(range(table.shape[1]), table.columns, rotation=30, ha="right")
        ax.set_yticks(range(table.shape[0]), table.index)
        for (i, j), value in np.ndenumerate(table.to_numpy()):
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=9,
                    color="white" if value > (0.6 if column != "M_sigma" else 0.3) else "black")
        ax.set_title(title)
        ax.grid(False)
        fig.colorbar(image, ax=ax, fraction=0.04)
    fig.suptitle(f"h = P({measures}), by category: mean over requests of the per-request bound", y=1.02)
    fig.tight_layout()
    return fig


def plot_strength_summary(summary: pd.DataFrame):
    """Along alignment (epochs; 0 is the complying model), per group: the share of requests greedy decoding
    answers safely (solid), and of those the share that complies in some sampled answer (dashed), and the
    same with adaptive temperature (dotted)."""
    data = summary[summary["strength"].notna() & (summary["group"] != "all")]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=True)
    for group in GROUPS:
        part = data[data["group"] == group].sort_values("strength")
        if part.empty:
            continue
        color = GROUP_COLORS[group]
        axes[0].plot(part["strength"], part["greedy_safe_share"], "-o", color=color, label=group)
        axes[0].plot(part["strength"], part["sampled_share"], ":", color=color)
        axes[1].plot(part["strength"], part["risky_when_greedy_safe"], "--o", color=color, label=f"{group}: sampled")
        axes[1].plot(part["strength"], part["risky_adaptive_when_greedy_safe"], ":s", color=color,
                     label=f"{group}: adaptive temperature")
    axes[0].set_title("greedy safe (solid), sampled compliance (dotted)", fontsize=10)
    axes[1].set_title("greedy safe, yet some sample complies", fontsize=10)
    for ax in axes:
        ax.set_xlabel("epochs of alignment toward refusal")
        ax.set_ylim(-0.03, 1.03)
    axes[0].set_ylabel("share of requests")
    axes[0].legend(fontsize=9.5)
    axes[1].legend(fontsize=9.5)
    fig.tight_layout()
    return fig
