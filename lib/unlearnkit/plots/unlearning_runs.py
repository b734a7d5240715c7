"""The figures of the unlearning runs: each method's loss terms and ROUGE-L along its run, every run compared on
the trade-off, and open-unlearning's summary of every run (privleak, extraction strength, membership inference)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt

from .curves import run_colors, step_curves, tradeoff, tradeoff_labels
from .labels import labels_apart


def unlearning_terms(history: Sequence[Mapping[str, float]], method: str):
    """Notebook 02: the forget term and (where the method has one) the retain term of the loss per step."""
    import pandas as pd

    curves = pd.DataFrame(history).set_index("step")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    curves[["forget_loss"]].plot(ax=axes[0], title=f"{method}: forget term per step", legend=False)
    if "retain_loss" in curves:
        curves[["retain_loss"]].plot(ax=axes[1], title=f"{method}: retain term per step", legend=False)
    else:
        axes[1].set_axis_off()
    fig.tight_layout()
    return fig


def rouge_trajectory(trajectory: Sequence[Mapping[str, float]], method: str, target_forget_rouge: float,
                     final: Mapping[str, float] | None = None, final_items: int | None = None):
    """Notebook 02: greedy ROUGE-L recall on forget and retain along one unlearning run (on the first ``items`` of
    each split); ``final``, the final model's values on all ``final_items`` items (the numbers the findings read),
    drawn as diamonds at the last step so that the figure and the findings show one number per quantity."""
    import pandas as pd

    frame = pd.DataFrame(trajectory).set_index("step")
    items = int(frame["items"].iloc[-1]) if "items" in frame else None
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, split in enumerate(("forget", "retain")):
        ax.plot(frame.index, frame[f"{split}_rouge"], "o-", color=f"C{i}",
                label=f"{split}, along the run" + (f" (first {items} items)" if items else ""))
        if final and f"{split}_rouge" in final:
            ax.plot(frame.index[-1], final[f"{split}_rouge"], "D", color=f"C{i}", ms=8, mfc="white", mew=2,
                    label=f"{split}, final model ({final_items} items): {final[f'{split}_rouge']:.3f}")
    ax.axhline(target_forget_rouge, color="grey", ls="--", lw=1, label="target, forget")
    ax.set(xlabel="step", ylabel="greedy ROUGE-L recall", ylim=(-0.02, 1.02), title=f"{method}: greedy ROUGE-L recall")
    ax.legend(fontsize=9)
    return fig


def unlearning_comparison(comparison, trajectories: Mapping[str, Sequence[Mapping[str, float]]],
                          target_forget_rouge: float):
    """Notebook 02: every run so far, forget quality against model utility and forget ROUGE along each run."""
    colors = run_colors(comparison.index)
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    tradeoff(comparison, ax=axes[0], colors=colors, labels=False)
    step_curves(trajectories, "forget_rouge", "Forget ROUGE-L recall along unlearning", ax=axes[1],
                reference=target_forget_rouge, colors=colors)
    axes[1].legend(fontsize=10, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    tradeoff_labels(axes[0], comparison)
    return fig


#: The membership-inference AUC columns of the open-unlearning summary, in the order OU lists its attacks.
MIA_COLUMNS = ("mia_loss_auc", "mia_zlib_auc", "mia_mink_auc", "mia_minkpp_auc", "mia_gradnorm_auc",
               "mia_reference_auc")


def _missing_cells(ax, values, text: str = "n/a", fontsize: float = 10.0) -> None:
    """Hatch and mark ``text`` each cell of an ``imshow`` of ``values`` that has no value (NaN)."""
    import numpy as np

    for i, j in zip(*np.nonzero(~np.isfinite(values))):
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="white", edgecolor="0.55", hatch="///",
                                   lw=0.0, zorder=2))
        ax.text(j, i, text, ha="center", va="center", fontsize=fontsize, color="0.2", zorder=3,
                bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"})


def ou_summary(table, reference: str | None = None, options: Mapping[str, Any] | None = None):
    """Notebook 02: open-unlearning's TOFU summary of every run (docs/metrics.md §9). (a) privleak against model
    utility: 0 is the retain model's level, strongly negative is under-unlearned, positive over-unlearned; (b)
    extraction strength against forget quality; (c) every membership-inference AUC per model, 0.5 (white) meaning
    forget and holdout authors look alike, above it (red) the forget authors look like training members; a value
    a model has not (the reference attack of the retain model, which is its own reference) is a hatched "n/a".
    ``reference`` names the retain model's row; ``options``, the scoring options where the workbook and
    open-unlearning differ, are named under the title, so a reader comparing with a published table knows them."""
    import textwrap

    import numpy as np

    colors = run_colors(table.index)
    heat_height = max(2.6, 0.36 * len(table) + 1.2)
    fig = plt.figure(figsize=(13, 4.9 + heat_height))
    grid = fig.add_gridspec(2, 8, height_ratios=[4.9, heat_height])
    axes = [fig.add_subplot(grid[0, :4]), fig.add_subplot(grid[0, 4:]), fig.add_subplot(grid[1, 2:7])]
    scattered: list[list[tuple[float, float, str, float]]] = []
    for ax, (x, y) in zip(axes[:2], [("model_utility", "privleak"), ("forget_quality", "extraction_strength")]):
        points = []
        for name, row in table.iterrows():
            if not (np.isfinite(row.get(x, np.nan)) and np.isfinite(row.get(y, np.nan))):
                continue
            size = 200 if name == reference else 60
            marker = "*" if name == reference else "s" if row.get("kind") == "notebook 01" else "o"
            ax.scatter(row[x], row[y], s=size, marker=marker, color=colors[name], zorder=3,
                       edgecolor="black" if name == reference else None)
            points.append((row[x], row[y], str(name), float(size)))
        if y == "privleak":
            ax.axhline(0, color="grey", ls="--", lw=1)
            ax.set(xlabel="model utility", ylabel="privleak (%)",
                   title="(a) privleak against utility (0: retain level)")
        else:
            ax.set_xscale("log")
            ax.set(xlabel="forget quality (KS p-value)", ylabel="extraction strength on forget",
                   title="(b) extraction strength against forget quality")
        ax.margins(x=0.12, y=0.12)
        scattered.append(points)
    columns = [c for c in MIA_COLUMNS if c in table.columns]
    values = table[columns].astype(float).to_numpy() if columns else np.zeros((len(table), 0))
    image = axes[2].imshow(np.ma.masked_invalid(values), cmap="RdBu_r", vmin=0.0, vmax=1.0, aspect="auto")
    axes[2].set_xticks(range(len(columns)), [c.removeprefix("mia_").removesuffix("_auc") for c in columns],
                       rotation=30, ha="right")
    axes[2].set_yticks(range(len(table)), [f"{n} (retain)" if n == reference else n for n in table.index])
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            if np.isfinite(values[i, j]):
                dark = abs(values[i, j] - 0.5) > 0.3
                axes[2].text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=10,
                             color="white" if dark else "black")
    _missing_cells(axes[2], values)
    axes[2].grid(False)
    axes[2].set_title("(c) membership-inference AUC, forget against holdout (n/a: no value)")
    fig.colorbar(image, ax=axes[2], fraction=0.05, label="AUC (> 0.5: forget items\nlook like members)")
    if options:
        fig.suptitle(textwrap.fill("scoring options (docs/metrics.md §9; open-unlearning's in brackets): "
                                   + ", ".join(f"{k} {v}" for k, v in options.items()), 130), fontsize=11)
    fig.tight_layout()
    for ax, points in zip(axes[:2], scattered):
        labels_apart(ax, points)
    return fig
