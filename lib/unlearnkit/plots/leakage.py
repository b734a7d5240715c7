"""Figures of the leakage study (:mod:`unlearnkit.studies.leakage`, Scholten et al.): the models of the paper's
regime, greedy ROUGE-L against the sampled distribution, the binary and general leakage bounds (the latter drawn by
notebook 06), the bounds against the number of samples and the keyword Q&A."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..metrics.sampling import SampledScores
from ..studies.leakage import general_leak_curves

__all__ = ["plot_greedy_vs_samples", "plot_binary_bounds", "plot_general_leak_curves", "plot_bounds_vs_n",
           "plot_hp", "plot_bound_modes", "plot_regime_paths"]


def _grid(count: int, ncols: int, size: tuple[float, float]):
    ncols = max(1, min(ncols, count))
    nrows = max(1, math.ceil(count / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False,
                             sharey=True)
    for ax in axes.flat[count:]:
        ax.set_axis_off()
    return fig, list(axes.flat)


def plot_greedy_vs_samples(results: Mapping[str, SampledScores], ncols: int = 5):
    """Per model, per forget question (sorted by greedy ROUGE-L): the spread of the n sampled ROUGE-L scores
    (10-90 % and 25-75 % ranges, mean as a dot) and the greedy score as a red cross."""
    fig, axes = _grid(len(results), ncols, (3.4, 3.0))
    for ax, (name, r) in zip(axes, results.items()):
        order = np.argsort(r.greedy_rouge, kind="stable")
        x = np.arange(len(order))
        q10, q25, q75, q90 = np.percentile(r.rouge[order], [10, 25, 75, 90], axis=1)
        ax.vlines(x, q10, q90, color="C0", alpha=0.35, lw=1.2)
        ax.vlines(x, q25, q75, color="C0", alpha=0.9, lw=2.2)
        ax.plot(x, r.rouge[order].mean(axis=1), "o", color="C0", ms=2.5, label="sampled: mean, 25-75 %, 10-90 %")
        ax.plot(x, r.greedy_rouge[order], "x", color="C3", ms=4, label="greedy")
        ax.set_title(f"{name}\ngreedy {r.greedy_rouge.mean():.2f} · sampled {r.rouge.mean():.2f}", fontsize=10)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("question (by greedy ROUGE)", fontsize=9)
    axes[0].set_ylabel("ROUGE-L recall")
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"Greedy ROUGE-L against the distribution of {next(iter(results.values())).n} sampled answers, "
                 "per forget question")
    fig.tight_layout()
    return fig


def plot_binary_bounds(tables: Mapping[str, pd.DataFrame], alpha: float, title_suffix: str = ""):
    """Per model: each question's leak rate S/n and binary leakage bound M_bin (jittered dots), their means
    (black bars), and the share of questions whose greedy answer leaks (red diamond)."""
    fig, ax = plt.subplots(figsize=(max(6.5, 1.05 * len(tables) + 2), 4.2))
    rng = np.random.default_rng(0)
    for i, t in enumerate(tables.values()):
        for offset, column, colour, label in ((-0.2, "leak_rate", "C0", "leak rate S/n"),
                                              (0.2, "binary_leak_bound", "C1", f"M_bin (α = {alpha})")):
            values = t[column].to_numpy()
            ax.scatter(i + offset + rng.uniform(-0.08, 0.08, len(values)), values, s=9, color=colour, alpha=0.6,
                       label=label if i == 0 else None)
            ax.hlines(values.mean(), i + offset - 0.13, i + offset + 0.13, color="black", lw=2)
        if "greedy_leak" in t:
            ax.plot(i, t["greedy_leak"].mean(), "D", color="C3", ms=6, label="greedy leak share" if i == 0 else None)
    ax.set_xticks(range(len(tables)), list(tables), rotation=30)
    ax.set_ylim(-0.03, 1.03)
    ax.set(ylabel="probability the answer's key entity appears",
           title=f"Binary leakage bound per forget question{title_suffix}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def plot_general_leak_curves(results: Mapping[str, SampledScores], alpha: float, threshold: float | None = None,
                             reference: SampledScores | None = None, reference_name: str = "target"):
    """M_gen(x) = min(1, 1 - F_n(x) + eps) against the ROUGE-L threshold x, one panel per model: one thin line
    per question, their mean (thick), the mean empirical tail 1 - F_n(x) (dashed) and the reference model's
    mean M_gen (grey). Each question's curve holds for all x at once with probability >= 1 - alpha."""
    fig, axes = _grid(len(results), len(results), (5.0, 3.8))
    ref_curve = general_leak_curves(reference.rouge, alpha).upper.mean(axis=0) if reference is not None else None
    for ax, (name, r) in zip(axes, results.items()):
        curves = general_leak_curves(r.rouge, alpha)
        x = curves.thresholds
        for row in curves.upper:
            ax.plot(x, row, color="C1", alpha=0.12, lw=0.8)
        ax.plot(x, curves.upper.mean(axis=0), color="C1", lw=2.5, label="M_gen(x), mean over questions")
        ax.plot(x, curves.tail.mean(axis=0), color="C0", ls="--", lw=1.8, label="empirical 1 - F_n(x), mean")
        if ref_curve is not None:
            ax.plot(x, ref_curve, color="grey", lw=1.5, ls=":", label=f"{reference_name}: M_gen mean")
        if threshold is not None:
            ax.axvline(threshold, color="C3", lw=1, ls="-.", label=f"leak threshold {threshold}")
        ax.set(title=f"{name}\ngeneral leakage bound (n = {r.n}, α = {alpha})", xlabel="ROUGE-L threshold x",
               ylim=(-0.02, 1.02))
    axes[0].set_ylabel("upper bound on P(ROUGE-L > x)")
    axes[0].legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def plot_bounds_vs_n(curves: Mapping[str, pd.DataFrame], alpha: float):
    """Left: expectation bounds (band) and the sample mean of the first m samples; right: the standard-deviation
    bound and the sample sd, against m, one colour per question (the ``curves`` of :func:`bounds_vs_n`)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for i, (label, c) in enumerate(curves.items()):
        colour = f"C{i}"
        m = c.index.to_numpy()
        axes[0].fill_between(m, c["mean_lower"], c["mean_upper"], color=colour, alpha=0.18)
        axes[0].plot(m, c["mean_lower"], color=colour, lw=1.2)
        axes[0].plot(m, c["mean_upper"], color=colour, lw=1.2, label=label)
        axes[0].plot(m, c["ed_mean"], color=colour, ls="--", lw=1, marker=".")
        axes[1].plot(m, c["std_upper"], color=colour, lw=1.5, marker="o", ms=3, label=label)
        axes[1].plot(m, c["ed_sd"], color=colour, ls="--", lw=1, marker=".")
    axes[0].set(xscale="log", xlabel="samples m", ylabel="E[ROUGE-L]", ylim=(-0.02, 1.02),
                title=f"Expectation bounds (band) and sample mean (dashed), α = {alpha}")
    axes[1].set(xscale="log", xlabel="samples m", ylabel="sd of ROUGE-L", ylim=(-0.01, 0.51),
                title="Std bound (solid) and sample sd (dashed)")
    for ax in axes:
        ax.set_xscale("log", base=2)
    axes[0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def plot_hp(table: pd.DataFrame, model_name: str, alpha: float, questions: str = "Harry Potter Q&A"):
    """Per keyword question (sorted by M_bin): leak rate S/n and the binary leakage bound M_bin; greedy leaks in
    red. ``questions`` names the question set in the title (the HP Q&A, or its synthetic analogue)."""
    t = table.sort_values("binary_leak_bound").reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(max(7, 0.16 * len(t) + 3), 3.8))
    x = np.arange(len(t))
    ax.bar(x, t["binary_leak_bound"], color="C1", alpha=0.6, label=f"M_bin (α = {alpha})")
    ax.bar(x, t["leak_rate"], color="C0", label="leak rate S/n")
    leaked = t["greedy_leak"] > 0
    ax.plot(x[leaked], np.full(leaked.sum(), 1.02), "v", color="C3", label="greedy answer leaks")
    ax.set(xlabel="question (by M_bin)", ylabel="probability a keyword appears", ylim=(0, 1.06),
           title=f"{questions}, {model_name}: binary leakage bound per question")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def plot_bound_modes(table: pd.DataFrame, coverage):
    """Left: mean width of the expectation interval per model, on the paper's grid, our uniform grid and the exact
    sample grid. Right: the std bound of each Monte Carlo trial with an atom at 0, paper form against corrected
    form, beside the true standard deviation."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8), gridspec_kw={"width_ratios": [1.6, 1]})
    x = np.arange(len(table))
    for offset, (column, label) in zip((-0.27, 0, 0.27), (("width_paper", "paper grid (99 bins)"),
                                                            ("width_uniform", "uniform, K = 100"),
                                                            ("width_samples", "exact sample grid"))):
        axes[0].bar(x + offset, table[column], width=0.27, label=label)
    axes[0].set_xticks(x, table.index, rotation=30, ha="right")
    axes[0].set_ylabel("mean width of [lower, upper] on E[ROUGE-L]")
    axes[0].legend(fontsize=8)
    bins = np.linspace(min(coverage.paper.min(), coverage.corrected.min()) - 0.01,
                       max(coverage.paper.max(), coverage.corrected.max()) + 0.01, 40)
    axes[1].hist(coverage.paper, bins=bins, alpha=0.7, color="C3", label="paper form (first bin open at 0)")
    axes[1].hist(coverage.corrected, bins=bins, alpha=0.7, color="C0", label="corrected form")
    axes[1].axvline(coverage.true_sd, color="k", lw=2, label=f"true sd {coverage.true_sd:.3f}")
    axes[1].set_xlabel(f"std bound M_σ (α = {coverage.alpha}, n = {coverage.n})")
    axes[1].set_ylabel("trials")
    axes[1].set_title(f"scores with P(X = 0) = {coverage.atom}", fontsize=10)
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_regime_paths(chosen: Mapping[str, Any], ncols: int = 4):
    """Per unlearning run, along its kept steps: the greedy leak rate on the forget questions (the key entity in
    the greedy answer), greedy ROUGE-L on forget and on retain questions, the retain model's greedy leak rate
    (dashed) and the step taken as the model in the paper's regime (vertical line)."""
    fig, axes = _grid(len(chosen), ncols, (3.6, 3.0))
    for ax, m in zip(axes, chosen.values()):
        path = m.path
        ax.plot(path.index, path["greedy_leak_rate"], "o-", ms=3, color="C3", label="greedy leak rate (forget)")
        ax.plot(path.index, path["forget_rouge"], "-", color="C1", alpha=0.8, label="greedy ROUGE-L, forget")
        ax.plot(path.index, path["retain_rouge"], "-", color="C0", label="greedy ROUGE-L, retain")
        ax.axhline(m.reference_rate, color="grey", ls="--", lw=1, label="retain model's greedy leak rate")
        ax.axvline(m.step, color="k", lw=1, alpha=0.6)
        state = "" if m.reached else " (not reached)"
        ax.set_title(f"{m.run}: step {m.step}{state}\nretain ROUGE-L {m.retain_rouge:.2f}", fontsize=10)
        ax.set_xlabel("unlearning step")
        ax.set_ylim(-0.03, 1.03)
    axes[0].set_ylabel("rate / ROUGE-L")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle("Where greedy decoding first calls the forget set unlearned: the models of the paper's regime")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig
