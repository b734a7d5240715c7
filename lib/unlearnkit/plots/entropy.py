"""Figures of the entropy-optimisation study (:mod:`unlearnkit.studies.entropy`, Scholten et al. section 5):
Table 1 as a figure, the λ_f and temperature sweeps (Fig. 4), diversity against λ_r, entropy along unlearning and
ED against utility (Fig. 5), and the c_T sweep of adaptive temperature."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

__all__ = ["plot_table1", "plot_lambda_f_sweep", "plot_temperature_sweep", "plot_diversity", "plot_entropy_along",
           "plot_ed_vs_utility", "plot_adaptive_sweep"]


def plot_table1(table: pd.DataFrame, paper: Mapping[str, tuple[float, float, float]]):
    """Per run: greedy ROUGE-L (cross) and the sampled ROUGE-L's ED mean ± sd (dot and bar), ours filled, the
    paper's (Phi-1.5 on TOFU) hollow beside them where it reports the run; right: the model utility."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [2, 1]})
    x = np.arange(len(table))
    ax = axes[0]
    ax.errorbar(x - 0.12, table["ED mean"], yerr=table["ED sd"], fmt="o", color="C0", capsize=4,
                label="this run: ED mean ± sd (sampled)")
    ax.plot(x - 0.12, table["greedy ROUGE-L"], "x", color="C3", ms=8, label="this run: greedy")
    shown = False
    for i, run in enumerate(table.index):
        if run in paper:
            greedy, mean, sd = paper[run]
            ax.errorbar(i + 0.12, mean, yerr=sd, fmt="o", mfc="white", color="grey", capsize=4,
                        label=None if shown else "paper: ED mean ± sd")
            ax.plot(i + 0.12, greedy, "x", color="grey", ms=8, label=None if shown else "paper: greedy")
            shown = True
    ax.set_xticks(x, table.index)
    ax.set(ylabel="ROUGE-L recall on forget", ylim=(-0.03, 1.05), title="Table 1: greedy against sampled ROUGE-L")
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    axes[1].bar(x, table["model utility"].astype(float), color="C2")
    axes[1].set_xticks(x, table.index, rotation=30)
    axes[1].set(ylabel="model utility", ylim=(0, 1), title="Utility kept")
    fig.tight_layout()
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
    for ax, label in zip(axes, ("sd of sampled ROUGE-L (forget)", "model utility", "certainty c(x), forget")):
        ax.set_xscale("symlog", linthresh=1)
        ax.axvline(paper_lambda_f, color="grey", ls=":", lw=1)
        ax.set(xlabel="λ_f (entropy weight on forget)", ylabel=label)
    axes[0].set_ylim(bottom=0)
    axes[0].legend(fontsize=8)
    axes[0].set_title(f"Fig. 4a: spread against λ_f (dotted: the paper's {paper_lambda_f:g})", fontsize=10)
    fig.tight_layout()
    return fig


def plot_temperature_sweep(table: pd.DataFrame):
    """Fig. 4b: the sd of the sampled ROUGE-L and the leak rate of each model against the sampling temperature."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for i, (run, group) in enumerate(table.groupby(level="run", sort=False)):
        t = group.index.get_level_values("temperature")
        axes[0].plot(t, group["ED sd"], "o-", color=f"C{i}", label=run)
        axes[1].plot(t, group["leak rate"], "o-", color=f"C{i}", label=run)
    axes[0].set(xlabel="temperature", ylabel="sd of sampled ROUGE-L (forget)", ylim=(0, None),
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
    """Fig. 5c: the ED score (mean + 2 sd of sampled ROUGE-L on forget) against model utility, one point per
    sweep setting: colour the learning rate, marker the λ_r, the number beside it the λ_f."""
    fig, ax = plt.subplots(figsize=(7, 4.4))
    score = sweep["ED mean"] + 2 * sweep["ED sd"]
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
    ax.set(xlabel="model utility", ylabel="ED score on forget (mean + 2 sd)",
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
