"""Figures of the format-transformed evaluation (:mod:`unlearnkit.studies.formats`): every format's scores per
model, and how much of the target's forget lead over the retain model each model keeps."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np

from ..metrics.formats import LIKELIHOOD_SUFFIX
from ..studies.formats import QA_ROWS, forget_score, format_order

__all__ = ["plot_format_scores", "plot_kept_share", "plot_transfer"]


def plot_format_scores(scores, chance: Mapping[str, float | None], formats: Sequence[str] | None = None,
                       retain_model: str | None = None, ncols: int = 4):
    """One panel per format: forget (filled) and retain (light) score of each model, chance dashed and the
    retain model's forget score dotted."""
    formats = list(formats or format_order(scores))
    names = list(scores)
    nrows = math.ceil(len(formats) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, 3.1 * nrows), squeeze=False, sharey=True)
    x = np.arange(len(names))
    for ax, fmt in zip(axes.flat, formats):
        forget = [scores[m]["forget"].get(fmt, np.nan) for m in names]
        retain = [scores[m]["retain"].get(fmt, np.nan) for m in names]
        ax.bar(x - 0.2, forget, 0.4, color="C0", label="forget")
        ax.bar(x + 0.2, retain, 0.4, color="C0", alpha=0.35, label="retain")
        if chance.get(fmt) is not None:
            ax.axhline(chance[fmt], color="grey", ls="--", lw=1, label="chance")
        if retain_model in scores:
            ax.axhline(scores[retain_model]["forget"].get(fmt, np.nan), color="C3", ls=":", lw=1.2,
                       label=f"{retain_model}, forget")
        ax.set_title(fmt.replace(LIKELIHOOD_SUFFIX, " (likelihood)"), fontsize="medium")
        ax.set_xticks(x, names, rotation=90, fontsize=10.5)  # upright: one line of text per model, none overlap
        ax.set_ylim(0, 1.05)
    for ax in list(axes.flat)[len(formats):]:
        ax.set_axis_off()
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), bbox_to_anchor=(0.5, 1.02), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig


def plot_kept_share(scores, qa: Mapping[str, Mapping[str, float]], formats: Sequence[str], models_shown: Sequence[str],
                    target: str = "target", retain_model: str = "retain90", margin: float = 0.1):
    """Heatmap of the share of the target's forget lead over the retain model that each model keeps:
    (model − retain model) / (target − retain model), per informative format and for TOFU's Q&A ROUGE-L.
    1 is as knowing as the target, 0 as the retain model; each cell is annotated with the raw forget score.
    A column where the target and the retain model differ by at most ``margin`` has no share (left blank)."""
    columns = ([QA_ROWS] if qa else []) + list(formats)

    def forget(model: str, column: str) -> float:
        if column == QA_ROWS:
            return qa.get(model, {}).get("forget", np.nan)
        return forget_score(scores, model, column)

    raw = np.array([[forget(m, c) for c in columns] for m in models_shown], dtype=float)
    t = np.array([forget(target, c) for c in columns], dtype=float)
    r = np.array([forget(retain_model, c) for c in columns], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(np.abs(t - r) > margin, (raw - r) / (t - r), np.nan)
    fig, ax = plt.subplots(figsize=(1.25 * len(columns) + 2.5, 0.45 * len(models_shown) + 1.8))
    image = ax.imshow(np.clip(share, -0.25, 1.25), cmap="RdYlBu_r", vmin=-0.25, vmax=1.25, aspect="auto")
    for i in range(len(models_shown)):
        for j in range(len(columns)):
            if np.isfinite(raw[i, j]):
                # white on the dark ends of the colour map, black elsewhere, so every number stays legible
                red, green, blue, _ = image.cmap(image.norm(np.clip(share[i, j], -0.25, 1.25)))
                dark = np.isfinite(share[i, j]) and 0.299 * red + 0.587 * green + 0.114 * blue < 0.45
                ax.text(j, i, f"{raw[i, j]:.2f}", ha="center", va="center", fontsize="small",
                        color="white" if dark else "black")
    ax.set_xticks(range(len(columns)), [c.replace(LIKELIHOOD_SUFFIX, "\n(likelihood)") for c in columns],
                  rotation=45, ha="right", fontsize="small")
    ax.set_yticks(range(len(models_shown)), models_shown)
    ax.grid(False)
    fig.colorbar(image, ax=ax, label=f"share of the target's forget lead over {retain_model} kept")
    ax.set_title("Forget performance by format (annotated: forget score)")
    fig.tight_layout()
    return fig


def plot_transfer(tests: Sequence[Mapping], alpha: float):
    """Can each model read each format before unlearning? One panel per set (forget, retain): per readout, each
    model's score with its exact 95 % interval, the reference it is tested against (chance, or the base model's
    rate) as a grey tick, and a filled marker where the one-sided binomial test gives p < ``alpha`` (hollow
    otherwise). Rows as from :func:`unlearnkit.studies.formats.transfer_tests`."""
    readouts = list(dict.fromkeys(t["readout"] for t in tests))
    names = list(dict.fromkeys(t["model"] for t in tests))
    sets = list(dict.fromkeys(t["set"] for t in tests))
    fig, axes = plt.subplots(1, len(sets), figsize=(max(6.0, 0.9 * len(readouts) + 2) * len(sets) / 1.6, 4.2),
                             squeeze=False, sharey=True)
    width = 0.8 / max(len(names), 1)
    for ax, set_name in zip(axes[0], sets):
        for i, readout in enumerate(readouts):
            rows = {t["model"]: t for t in tests if t["readout"] == readout and t["set"] == set_name}
            if not rows:
                continue
            reference = next(iter(rows.values()))["reference"]
            ax.hlines(reference, i - 0.45, i + 0.45, color="grey", lw=2, alpha=0.6)
            for j, model in enumerate(names):
                if model not in rows:
                    continue
                t = rows[model]
                x = i - 0.4 + width * (j + 0.5)
                ax.errorbar(x, t["score"], yerr=[[t["score"] - t["low"]], [t["high"] - t["score"]]], fmt="o",
                            color=f"C{j}", mfc=f"C{j}" if t["above"] else "white", ms=6, capsize=2,
                            label=model if i == 0 else None)
        ax.set_xticks(range(len(readouts)), [r.replace(LIKELIHOOD_SUFFIX, "\n(likelihood)") for r in readouts],
                      rotation=45, ha="right", fontsize="small")
        ax.set_ylim(-0.02, 1.05)
        ax.set_title(f"{set_name} facts (authors seen only as Q&A)")
    axes[0][0].set_ylabel("score, 95 % exact interval")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), bbox_to_anchor=(0.5, 1.0), frameon=False,
               title=f"filled: above the grey reference (chance, or the base model's rate) with p < {alpha:g}")
    fig.tight_layout(rect=(0, 0, 1, 0.84))
    return fig
