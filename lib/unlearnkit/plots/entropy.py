"""Figures of the entropy-optimisation study (:mod:`unlearnkit.studies.entropy`, Scholten et al. section 5):
Table 1 as a figure, EO on the in-regime runs, the λ_f and temperature sweeps (Fig. 4), diversity against λ_r, entropy along unlearning and
ED against utility (Fig. 5), and the c_T sweep of adaptive temperature."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

__all__ = ["plot_table1", "plot_regime_eo", "plot_lambda_f_sweep", "plot_temperature_sweep", "plot_diversity", "plot_entropy_along",
           "plot_ed_vs_utility", "plot_adaptive_sweep"]


#: How the figures name the sd of a question's sampled scores (numpy's std: ddof 0, normalised by 1/n).
SD_NOTE = "sd over a question's n samples, 1/n"


def _collapsed(table: pd.DataFrame) -> np.ndarray:
    """Per row, whether it is a collapsed final run (the ``collapsed`` column: True, False or None/NaN)."""
    if "collapsed" not in table:
        return np.zeros(len(table), dtype=bool)
    return np.array([value is True or value == 1.0 for value in table["collapsed"]], dtype=bool)


def plot_table1(table: pd.DataFrame, target_utility: float | None = None):
    """Table 1 as the paper defines it, like with like: per model our greedy ROUGE-L (cross), the sampled mean ± sd
    (dot and bar; the sd of each question's n samples with 1/n, averaged over questions) and the ED score, mean +
    ρ·sd (diamond); beside it, grey and hollow, the paper's greedy and ED score for the method the model stands for.
    Models are grouped by ``kind`` (in the paper's regime, notebook 05's step; notebook 02's final runs; EO in the
    regime), and a final run the ``collapsed`` column marks collapsed is named "(collapsed)", its utility bar hatched.
    Right: model utility, with ``target_utility`` (the target's, solid) and the share of it a run must keep (dashed)
    when given."""
    from ..studies.entropy.plan import UTILITY_KEPT

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.9), gridspec_kw={"width_ratios": [2.3, 1]})
    x = np.arange(len(table))
    collapsed = _collapsed(table)
    names = [f"{m} (collapsed)" if c else str(m) for m, c in zip(table.index, collapsed)]
    ax = axes[0]
    ax.errorbar(x - 0.14, table["ED mean"], yerr=table["ED sd"], fmt="o", color="C0", capsize=4,
                label=f"this run: sampled mean ± sd ({SD_NOTE})")
    ax.plot(x - 0.14, table["ED score"], "D", color="C1", ms=6, label="this run: ED score (mean + ρ·sd)")
    ax.plot(x - 0.14, table["greedy ROUGE-L"], "x", color="C3", ms=9, mew=2, label="this run: greedy")
    paper = table.dropna(subset=["paper greedy"])
    px = np.array([list(table.index).index(m) for m in paper.index]) + 0.14
    ax.plot(px, paper["paper ED score"], "D", mfc="white", color="grey", ms=6, label="paper: ED score")
    ax.plot(px, paper["paper greedy"], "x", color="grey", ms=9, mew=2, label="paper: greedy")
    kinds = list(dict.fromkeys(table["kind"]))
    for i, kind in enumerate(kinds):
        where = np.flatnonzero(table["kind"].to_numpy() == kind)
        ax.axvspan(where.min() - 0.45, where.max() + 0.45, color=f"C{i + 4}", alpha=0.08, lw=0)
        ax.text(where.mean(), 1.07, kind, ha="center", fontsize=10, color="0.3")
    ax.set_xticks(x, names, rotation=30, ha="right", fontsize=10)
    ax.set(ylabel="ROUGE-L recall on forget", ylim=(-0.03, 1.12))
    ax.set_title("Table 1: greedy, the sampled mean and spread, the ED score", fontsize=12, pad=18)
    handles, labels = ax.get_legend_handles_labels()
    bars = axes[1]
    utility = table["model utility"].astype(float)
    colours = [f"C{kinds.index(k) + 4}" for k in table["kind"]]
    for xi, value, colour, hatched in zip(x, utility, colours, collapsed):
        bars.bar(xi, value, color=colour, hatch="xx" if hatched else None, edgecolor="0.25" if hatched else colour)
    if collapsed.any():
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="0.25", hatch="xx"))
        labels.append("hatched: collapsed final run (greedy ROUGE-L near 0 and utility lost)")
    if target_utility is not None and np.isfinite(target_utility):
        bars.axhline(target_utility, color="0.2", lw=1.2, label=f"target {target_utility:.2f}")
        bars.axhline(UTILITY_KEPT * target_utility, color="0.2", lw=1.2, ls="--",
                     label=f"{UTILITY_KEPT:.0%} of the target's")
        more = bars.get_legend_handles_labels()
        handles, labels = handles + more[0], labels + [f"utility: {label}" for label in more[1]]
    top = max(1.05, float(np.nanmax(utility.to_numpy(), initial=0.0)) * 1.05)
    bars.set_xticks(x, names, rotation=60, ha="right", fontsize=10)
    bars.set(ylabel="model utility", ylim=(0, top))
    bars.set_title("Utility kept", fontsize=12)
    fig.legend(handles, labels, fontsize=10, loc="lower center", ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.04 + 0.035 * -(-len(handles) // 3), 1, 1))
    return fig


def plot_regime_eo(table: pd.DataFrame):
    """EO where the paper's models are: per in-regime run and entropy placement (colour), against λ_f (0: the run
    alone), the sd of the sampled ROUGE-L, the ED score beside greedy ROUGE-L (dashed), the certainty c(x) on the
    model's own greedy answer, and utility."""
    columns = (("ED sd", "sd of sampled ROUGE-L (forget)\n(sd over a question's n samples, 1/n)"),
               ("ED score", "ED score (solid), greedy (dashed)"),
               ("certainty", "certainty c(x) on own greedy answer"), ("model utility", "model utility"))
    fig, grid = plt.subplots(2, 2, figsize=(11, 7.4))
    axes = list(grid.flat)
    placements = [p for p in dict.fromkeys(table["positions"]) if p != "none"]
    for b, (base, group) in enumerate(table.groupby("base", sort=False)):
        alone = group[group["lambda_f"] == 0]
        for i, placement in enumerate(placements):
            line = pd.concat([alone, group[group["positions"] == placement]]).sort_values("lambda_f")
            if len(line) <= len(alone):
                continue
            style = dict(color=f"C{i}", marker="os^"[b % 3], label=f"{base}: {placement}")
            for ax, (column, _) in zip(axes, columns):
                ax.plot(line["lambda_f"], line[column].astype(float), "-", **style)
            axes[1].plot(line["lambda_f"], line["greedy ROUGE-L"].astype(float), "--", color=f"C{i}", alpha=0.6)
    for ax, (_, label) in zip(axes, columns):
        ax.set_xscale("symlog", linthresh=1)
        ax.set(xlabel="λ_f (0: the run alone)", ylabel=label)
    axes[0].set_ylim(bottom=0)
    axes[3].set_ylim(0, 1)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=10, loc="lower center", ncol=min(4, max(1, len(labels))), frameon=False)
    fig.suptitle("EO on in-regime runs, by where the entropy is taken (colour: placement, marker: run)", fontsize=12)
    fig.tight_layout(rect=(0, 0.03 + 0.035 * -(-len(labels) // 4), 1, 1))
    return fig


def plot_lambda_f_sweep(sweep: pd.DataFrame, paper_lambda_f: float = 1.0):
    """Fig. 4a: the sd of the sampled ROUGE-L on forget against λ_f, one line per learning rate; beside it the
    model utility and the mean certainty c(x) of the same models."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for i, (lr, group) in enumerate(sweep.groupby("lr", sort=False)):
        group = group.sort_values("lambda_f")
        x = group["lambda_f"].to_numpy()
        for ax, column in zip(axes, ("ED sd", "model utility", "certainty")):
            ax.plot(x, group[column].astype(float), "o-", color=f"C{i}", label=f"lr {lr:g}")
    for ax, label in zip(axes, ("sd of sampled ROUGE-L (forget;\nsd over a question's n samples, 1/n)", "model utility",
                                "certainty c(x), forget")):
        ax.set_xscale("symlog", linthresh=1)
        ax.axvline(paper_lambda_f, color="grey", ls=":", lw=1)
        ax.set(xlabel="λ_f (entropy weight on forget)", ylabel=label)
    axes[0].set_ylim(bottom=0)
    axes[0].legend(fontsize=10)
    axes[0].set_title(f"Fig. 4a: spread against λ_f (dotted: the paper's {paper_lambda_f:g})", fontsize=11)
    fig.tight_layout()
    return fig


def plot_temperature_sweep(table: pd.DataFrame):
    """Fig. 4b: the sd of the sampled ROUGE-L and the leak rate of each model against the sampling temperature."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for i, (run, group) in enumerate(table.groupby(level="run", sort=False)):
        t = group.index.get_level_values("temperature")
        axes[0].plot(t, group["ED sd"], "o-", color=f"C{i}", label=run)
        axes[1].plot(t, group["leak rate"], "o-", color=f"C{i}", label=run)
    axes[0].set(xlabel="temperature", ylabel="sd of sampled ROUGE-L (forget;\nsd over a question's n samples, 1/n)",
                ylim=(0, None),
                title="Fig. 4b: spread against temperature")
    axes[1].set(xlabel="temperature", ylabel="share of samples naming the key", ylim=(0, None), title="Leak rate")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_diversity(table: pd.DataFrame, lambda_r: Sequence[float]):
    """Fig. 5a: self-BLEU of the samples (1 = identical) on each set against λ_r."""
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for column in table.columns:
        ax.plot(lambda_r, table[column], "o-", label=column.replace("_", " "))
    ax.set(xlabel="λ_r (entropy weight on retain)", ylabel="self-BLEU of samples (1 = identical)", ylim=(0, 1.02),
           title="Fig. 5a: diversity outside the forget set")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_entropy_along(curves: Mapping[str, pd.DataFrame]):
    """Fig. 5b: mean next-token entropy on forget and retain answers along each unlearning run (step 0: the
    target)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for i, (run, frame) in enumerate(curves.items()):
        for ax, column in zip(axes, ("forget", "retain")):
            ax.plot(frame.index, frame[column], "o-", ms=3, color=f"C{i}", label=run)
    for ax, column in zip(axes, ("forget", "retain")):
        ax.set(xlabel="unlearning step", title=f"Fig. 5b: entropy on {column} answers")
    axes[0].set_ylabel("mean next-token entropy (nats)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_ed_vs_utility(sweep: pd.DataFrame):
    """Fig. 5c: the ED score (mean + ρ·sd of sampled ROUGE-L on forget, ``ed_rho``) against model utility, one point
    per sweep setting: colour the learning rate, marker the λ_r, the number beside it the λ_f."""
    fig, ax = plt.subplots(figsize=(7, 4.4))
    score = sweep["ED score"]
    lrs = list(dict.fromkeys(sweep["lr"]))
    markers = dict(zip(sorted(set(sweep["lambda_r"]), reverse=True), "so^vD"))
    for (_, row), value in zip(sweep.iterrows(), score):
        ax.scatter(row["model utility"], value, color=f"C{lrs.index(row['lr'])}", marker=markers[row["lambda_r"]],
                   s=45, alpha=0.85)
        ax.annotate(f"{row['lambda_f']:g}", (row["model utility"], value), fontsize=7, xytext=(4, 2),
                    textcoords="offset points")
    for i, lr in enumerate(lrs):
        ax.scatter([], [], color=f"C{i}", label=f"lr {lr:g}")
    for lambda_r, marker in markers.items():
        ax.scatter([], [], color="grey", marker=marker, label=f"λr {lambda_r:g}")
    ax.set(xlabel="model utility", ylabel="ED score on forget (mean + ρ·sd,\nsd over a question's n samples, 1/n)",
           title="Fig. 5c: leakage under sampling against utility (numbers: λ_f)")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def plot_adaptive_sweep(table: pd.DataFrame):
    """Adaptive temperature: mean M_bin (solid) against c_T per model, with plain sampling (dotted), and the
    share of questions decoded greedily."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for i, (run, group) in enumerate(table.groupby(level="run", sort=False)):
        c = group.index.get_level_values("c_T")
        axes[0].plot(c, group["M_bin"], "o-", color=f"C{i}", label=run)
        axes[0].axhline(group["M_bin sampling"].iloc[0], color=f"C{i}", ls=":", lw=1)
        axes[1].plot(c, group["greedy share"], "o-", color=f"C{i}", label=run)
    axes[0].set(xlabel="c_T", ylabel="mean M_bin over forget questions", ylim=(0, None),
                title="Binary leak bound (dotted: plain sampling)")
    axes[1].set(xlabel="c_T", ylabel="share decoded greedily", ylim=(0, 1.02), title="Greedy where c(x) > c_T")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig
