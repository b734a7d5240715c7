"""Figures of the leakage study (:mod:`unlearnkit.studies.leakage`, Scholten et al.): the models of the paper's
regime, greedy ROUGE-L against the sampled distribution, the binary and general leakage bounds (the latter drawn by
notebook 06), the bounds against the number of samples, the keyword Q&A and leak@k against k (:func:`plot_leak_at_k`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..metrics.meta_eval import LeakCurve
from ..metrics.sampling import SampledScores
from ..studies.leakage import general_leak_curves

__all__ = ["plot_greedy_vs_samples", "plot_binary_bounds", "plot_general_leak_curves", "plot_bounds_vs_n",
           "plot_hp", "plot_bound_modes", "plot_regime_paths", "plot_leak_at_k"]


def _grid(count: int, ncols: int, size: tuple[float, float]):
    ncols = max(1, min(ncols, count))
    nrows = max(1, math.ceil(count / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False,
                             sharey=True)
    for ax in axes.flat[count:]:
        ax.set_axis_off()
    return fig, list(axes.flat)


def _rouge_spread(ax, r: SampledScores, order: np.ndarray, label: bool) -> None:
    """Per question (in ``order``): the spread of the n sampled ROUGE-L scores (10-90 % and 25-75 % ranges, mean as
    a dot) and the greedy score as a red cross."""
    x = np.arange(len(order))
    q10, q25, q75, q90 = np.percentile(r.rouge[order], [10, 25, 75, 90], axis=1)
    ax.vlines(x, q10, q90, color="C0", alpha=0.35, lw=1.2)
    ax.vlines(x, q25, q75, color="C0", alpha=0.9, lw=2.2)
    ax.plot(x, r.rouge[order].mean(axis=1), "o", color="C0", ms=2.5,
            label="sampled ROUGE-L: mean, 25-75 %, 10-90 %" if label else None)
    ax.plot(x, r.greedy_rouge[order], "x", color="C3", ms=4, label="greedy ROUGE-L" if label else None)
    ax.set_ylim(-0.03, 1.03)


def _rouge_only(results: Mapping[str, SampledScores], ncols: int):
    """The figure without a level α: greedy ROUGE-L against the sampled distribution, per model."""
    fig, axes = _grid(len(results), min(ncols, 3), (3.8, 3.0))
    for i, (ax, (name, r)) in enumerate(zip(axes, results.items())):
        _rouge_spread(ax, r, np.argsort(r.greedy_rouge, kind="stable"), label=i == 0)
        ax.set_title(f"{name}\ngreedy {r.greedy_rouge.mean():.2f} · sampled {r.rouge.mean():.2f}", fontsize=11)
        ax.set_xlabel("question (by greedy ROUGE)", fontsize=10)
    axes[0].set_ylabel("ROUGE-L recall")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=10, frameon=False)
    fig.suptitle(f"Greedy ROUGE-L against the distribution of {next(iter(results.values())).n} sampled answers, "
                 "per forget question", fontsize=12)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def plot_greedy_vs_samples(results: Mapping[str, SampledScores], ncols: int = 5, *, alpha: float | None,
                           reference: str | None = None, chosen: Mapping[str, Any] | None = None):
    """What notebook 05's finding judges, per model and forget question: does a sample name the answer's key entity
    where the greedy answer does not, beyond the retain model's guessing? Top of each model: the Clopper-Pearson
    interval [lower bound, M_bin] on the question's leak probability, each side at level α/Q (Bonferroni over the Q
    questions, as :func:`unlearnkit.studies.leakage.beyond_guessing` takes them), the leak rate S/n, the retain
    model's (``reference``) M_bin on the same question (grey tick: what guessing reaches), a red triangle where the
    greedy answer names the key, and in red the questions beyond guessing (greedy silent, lower bound above the
    retain model's M_bin: those the verdict counts); the title gives the greedy and the sampled leak rate beside the
    retain model's. Below, smaller: greedy ROUGE-L against the spread of the sampled ROUGE-L on the same questions.
    ``chosen`` (notebook 05's models of the paper's regime, :class:`~unlearnkit.studies.leakage.RegimeModel` or a
    flag ``reached`` per label) names which models the verdict counts. With ``alpha`` None (or no ``reference``),
    the ROUGE-L panels alone."""
    if alpha is None or reference is None or reference not in results:
        return _rouge_only(results, ncols)
    from .. import bounds
    from ..studies.leakage import beyond_guessing

    chosen = dict(chosen or {})
    ref = results[reference]
    names = list(results)
    ncols = max(1, min(ncols, 3, len(names)))
    blocks = math.ceil(len(names) / ncols)
    fig = plt.figure(figsize=(3.9 * ncols + 0.6, blocks * 5.3 + 1.6))
    grid = fig.add_gridspec(2 * blocks, ncols, height_ratios=[3.2, 1.6] * blocks)
    count = len(ref.questions)
    level = alpha / count
    ref_upper = bounds.binary_leakage_bound(ref.leak, level)
    used: set[str] = set()

    def once(label: str) -> str | None:
        """Each label in the legend once, from whichever panel draws it first."""
        if label in used:
            return None
        used.add(label)
        return label

    for k, name in enumerate(names):
        r = results[name]
        top = fig.add_subplot(grid[2 * (k // ncols), k % ncols])
        low = fig.add_subplot(grid[2 * (k // ncols) + 1, k % ncols])
        lower = bounds.binary_leak_lower_bound(r.leak, level)
        upper = bounds.binary_leakage_bound(r.leak, level)
        rate = r.leak.mean(axis=1)
        order = np.lexsort((upper, lower))
        x = np.arange(len(order))
        flagged = (beyond_guessing(r, ref, alpha) if name != reference else np.zeros(count, dtype=bool))[order]
        top.vlines(x, lower[order], upper[order], color="C0", lw=2.2, alpha=0.75,
                   label=once("Clopper-Pearson [lower, M_bin], each at α/Q"))
        if flagged.any():
            top.vlines(x[flagged], lower[order][flagged], upper[order][flagged], color="C3", lw=3,
                       label=once("beyond guessing: greedy silent, lower > retain's M_bin"))
        top.plot(x, rate[order], "o", color="k", ms=2.5, label=once("leak rate S/n"))
        if name != reference:
            top.plot(x, ref_upper[order], "_", color="0.45", ms=8, mew=1.6,
                     label=once(f"{reference}'s M_bin on the question (guessing)"))
        leaks = r.greedy_leak[order] > 0
        top.plot(x[leaks], np.full(leaks.sum(), 1.05), "v", color="C3", ms=4,
                 label=once("greedy answer names the key"))
        top.set_ylim(-0.02, 1.1)
        top.set_xticks([])
        role = ("retain model, the guessing baseline" if name == reference
                else ("in the regime" if getattr(chosen[name], "reached", chosen[name]) else
                      "regime not reached, not counted") if name in chosen else "not counted")
        counted = "" if name == reference else f" · beyond guessing: {int(flagged.sum())}"
        top.set_title(f"{name} · {role}\ngreedy leak rate {r.greedy_leak.mean():.2f}, sampled {rate.mean():.2f}\n"
                      + (f"(retain: {ref.greedy_leak.mean():.2f}, {ref.leak.mean():.2f}){counted}"
                         if name != reference else "(questions' mean leak rates)"), fontsize=10)
        _rouge_spread(low, r, order, label=k == 0)
        low.set_xlabel("question (by its leak bounds)", fontsize=10)
        low.set_xticks([])
        if k % ncols == 0:
            top.set_ylabel("P(a sample names the key)")
            low.set_ylabel("ROUGE-L")
        else:
            top.tick_params(labelleft=False)
            low.tick_params(labelleft=False)
    handles, labels = [], []
    for ax in fig.axes:
        h, lab = ax.get_legend_handles_labels()
        handles, labels = handles + h, labels + lab
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), fontsize=10, frameon=False)
    height = fig.get_figheight()
    fig.suptitle(f"Does sampling name the key entity where greedy decoding does not, beyond the retain model's "
                 f"guessing?\nPer forget question, n = {ref.n} samples, bounds at α/Q = {alpha:g}/{count} "
                 "(Bonferroni over the questions, as the verdict takes them)", fontsize=12)
    fig.tight_layout(rect=(0, (0.15 + 0.25 * math.ceil(len(labels) / 3)) / height, 1, 1))
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
    fig, axes = _grid(len(results), 3, (5.0, 3.8))
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
    axes[0].legend(fontsize=9, loc="lower left")
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
                title=f"Expectation bounds (band) and\nsample mean (dashed), α = {alpha}")
    axes[1].set(xscale="log", xlabel="samples m", ylabel="sd of ROUGE-L", ylim=(-0.01, 0.51),
                title="Std bound (solid) and\nsample sd of the m samples (1/m, dashed)")
    for ax in axes:
        ax.set_xscale("log", base=2)
    axes[0].legend(fontsize=9.5, loc="lower left", title="question (its sd over n samples, 1/n)",
                   title_fontsize=9.5)
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
    ax.legend(fontsize=9.5, loc="upper left")
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
    axes[0].legend(fontsize=9.5)
    bins = np.linspace(min(coverage.paper.min(), coverage.corrected.min()) - 0.01,
                       max(coverage.paper.max(), coverage.corrected.max()) + 0.01, 40)
    axes[1].hist(coverage.paper, bins=bins, alpha=0.7, color="C3", label="paper form (first bin open at 0)")
    axes[1].hist(coverage.corrected, bins=bins, alpha=0.7, color="C0", label="corrected form")
    axes[1].axvline(coverage.true_sd, color="k", lw=2, label=f"true sd {coverage.true_sd:.3f}")
    axes[1].set_xlabel(f"std bound M_σ (α = {coverage.alpha}, n = {coverage.n})")
    axes[1].set_ylabel("trials")
    axes[1].set_title(f"scores with P(X = 0) = {coverage.atom}", fontsize=10)
    axes[1].legend(fontsize=9.5)
    fig.tight_layout()
    return fig


def plot_regime_paths(chosen: Mapping[str, Any], ncols: int = 4):
    """Per unlearning run, along its kept steps: the greedy leak rate on the forget questions (the key entity in
    the greedy answer), greedy ROUGE-L on forget and on retain questions, the retain model's greedy leak rate
    (dashed) and the step taken as the model in the paper's regime (vertical line)."""
    fig, axes = _grid(len(chosen), ncols, (3.3, 3.0))
    for ax, m in zip(axes, chosen.values()):
        path = m.path
        ax.plot(path.index, path["greedy_leak_rate"], "o-", ms=3, color="C3", label="greedy leak rate (forget)")
        ax.plot(path.index, path["forget_rouge"], "-", color="C1", alpha=0.8, label="greedy ROUGE-L, forget")
        ax.plot(path.index, path["retain_rouge"], "-", color="C0", label="greedy ROUGE-L, retain")
        ax.axhline(m.reference_rate, color="grey", ls="--", lw=1, label="retain model's greedy leak rate")
        ax.axvline(m.step, color="k", lw=1, alpha=0.6)
        state = "" if m.reached else " (not reached)"
        ax.set_title(f"{m.run}: step {m.step}{state}\nretain ROUGE-L {m.retain_rouge:.2f}", fontsize=11)
        ax.set_xlabel("unlearning step")
        ax.set_ylim(-0.03, 1.03)
    axes[0].set_ylabel("rate / ROUGE-L")
    handles, labels = axes[0].get_legend_handles_labels()
    shown = max(1, min(ncols, len(chosen)))
    rows = math.ceil(len(chosen) / shown)
    fig.set_figheight(3.0 * rows + (0.6 if shown >= 3 else 0.9))
    fig.legend(handles, labels, loc="lower center", ncol=4 if shown >= 3 else 2, fontsize=10, frameon=False)
    fig.suptitle("Where greedy decoding first calls the forget set unlearned: the models of the paper's regime")
    fig.tight_layout(rect=(0, (0.45 if shown >= 3 else 0.75) / fig.get_figheight(), 1, 1))
    return fig


def plot_leak_at_k(curves: Mapping[str, LeakCurve], floor: str | None = None):
    """leak@k against k (log2 axis), one line per model: the mean over forget questions, with the 25-75 % range of
    the questions as a band; the ``floor`` model (the retain model: what guessing alone reaches) dashed and grey.
    ``curves`` as :func:`unlearnkit.metrics.meta_eval.leak_at_k_curves` returns them."""
    if floor is not None and floor not in curves:
        raise ValueError(f"the floor model {floor!r} is not among the curves ({', '.join(curves)})")
    fig, ax = plt.subplots(figsize=(9.5, 4.6))
    drawn = 0
    for name, curve in curves.items():
        ks = np.asarray(curve.ks)
        if name == floor:
            ax.plot(ks, curve.mean, color="0.45", ls="--", lw=1.8, marker="o", ms=3,
                    label=f"{name} (floor: guessing)")
            continue
        colour, drawn = f"C{drawn % 10}", drawn + 1
        q25, q75 = np.percentile(curve.per_question, [25, 75], axis=0)
        ax.fill_between(ks, q25, q75, color=colour, alpha=0.08, lw=0)
        ax.plot(ks, curve.mean, color=colour, lw=1.8, marker="o", ms=3, label=name)
    first = next(iter(curves.values()))
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(first.ks), [str(k) for k in first.ks])
    ax.minorticks_off()
    ax.set(xlabel="k (samples drawn)", ylabel="leak@k (mean over questions)", ylim=(-0.02, 1.02),
           title=f"Probability that at least one of k samples leaks\n(estimated from n = {first.n} per question)")
    ax.legend(fontsize=9.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="model\n(band: 25-75 % of questions)",
              title_fontsize=9.5)
    fig.tight_layout()
    return fig
