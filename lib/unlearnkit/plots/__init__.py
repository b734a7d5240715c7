"""Figures: one style, one ``draw`` (which saves every figure and keeps what it was drawn from, so ``make
figures`` redraws them all without training or sampling) and the recurring figures (this module), then one
module per study (calibration, formats, leakage). The top floor: only notebooks and the runner import it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from .. import runs
from ..config import Params
from ..studies.verdicts import EVERY_SEED_FAILS, EVERY_SEED_HOLDS, SEEDS_DIFFER

#: The resolution every figure is saved at (``savefig.dpi`` of :func:`set_style`).
SAVE_DPI = 120
#: The width, in CSS px, a figure is shown at in the HTML report when its PNG is wider: the report's template
#: (nbconvert's JupyterLab template, lib/unlearnkit/report/workbook_html) shows images at ``max-width: 100%`` of a
#: fluid output column with no width of its own (it follows the reader's window), so the workbook takes 1,000 px,
#: a laptop's window less the page's margins. A narrower PNG is shown at its own pixel size.
CONTENT_WIDTH_PX = 1000
#: The smallest height (px, as shown in the report) of any text of a figure (issue #36, every figure legible).
MIN_TEXT_PX = 9.0


def set_style() -> None:
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": SAVE_DPI, "figure.autolayout": False,
                         "svg.hashsalt": "unlearnkit", "axes.titleweight": "bold"})


def shown_scale(fig, shown_width_px: float = CONTENT_WIDTH_PX, dpi: float = SAVE_DPI) -> float:
    """How much the report shrinks ``fig`` saved as :func:`save_to` saves it (``bbox_inches="tight"`` at ``dpi``):
    ``shown_width_px`` over the PNG's width, at most 1 (a narrower PNG is shown at its own size)."""
    box = fig.get_tightbbox()  # inches, what bbox_inches="tight" keeps, before its padding
    natural = (box.width + 2 * plt.rcParams["savefig.pad_inches"]) * dpi
    return min(1.0, shown_width_px / natural)


def drawn_texts(fig) -> list:
    """Every text artist ``fig`` draws, with non-empty text: titles, axis and tick labels (of the ticks in view),
    legend entries and titles, annotations (those whose point is shown), texts, colorbar labels. Found by drawing
    the figure (without rendering) and noting each text that gets past matplotlib's own visibility checks."""
    from matplotlib.text import Text

    drawn: list = []
    original = Text.draw

    def note(self, renderer):
        if self.get_visible() and self.get_text().strip() and (self.get_alpha() is None or self.get_alpha() > 0):
            drawn.append(self)
        return original(self, renderer)

    Text.draw = note
    try:
        fig.draw_without_rendering()
    finally:
        Text.draw = original
    return list(dict.fromkeys(drawn))


def smallest_text_px(fig, shown_width_px: float = CONTENT_WIDTH_PX, dpi: float = SAVE_DPI, with_text: bool = False):
    """The height in px of the smallest text of ``fig`` (its font size) as the report shows the figure: saved at
    ``dpi`` and shown at most ``shown_width_px`` wide, s points are ``s * dpi / 72 * min(1, shown / PNG width)`` px.
    With ``with_text``, ``(px, text)``, the offending string too. Issue #36 asks at least :data:`MIN_TEXT_PX`.
    A figure without text gives ``inf``."""
    texts = drawn_texts(fig)
    scale = shown_scale(fig, shown_width_px, dpi)
    if not texts:
        return (float("inf"), "") if with_text else float("inf")
    smallest = min(texts, key=lambda t: t.get_fontsize())
    px = smallest.get_fontsize() * dpi / 72.0 * scale
    return (px, smallest.get_text()) if with_text else px


def legible(fig, shown_width_px: float = CONTENT_WIDTH_PX, dpi: float = SAVE_DPI) -> bool:
    """Whether every text of ``fig`` is at least :data:`MIN_TEXT_PX` tall as the report shows it."""
    return smallest_text_px(fig, shown_width_px, dpi) >= MIN_TEXT_PX


def figure_path(name: str, params: Params) -> Path:
    """Where figure ``name`` of a run goes: ``figures/`` (committed) for the default profile's own seed, the seed's
    run store for any other seed or profile (:func:`unlearnkit.runs.figures_dir`)."""
    folder = runs.figures_dir(params, name)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.png"


def save_fig(fig, name: str, params: Params) -> Path:
    """Write ``fig`` as ``<name>.png`` with deterministic bytes (no timestamp or software metadata).
    Name figures after their notebook: ``01_tofu_finetune_metrics``."""
    return save_to(fig, figure_path(name, params))


def save_to(fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` as PNG with deterministic bytes."""
    fig.savefig(path, bbox_inches="tight", metadata={"Software": None})
    return path


def render_to(path: Path, plot: Callable[..., Any], *args: Any, **kwargs: Any) -> Path:
    """``plot(*args, **kwargs)`` saved to ``path`` in the workbook's style alone (as :func:`draw` renders), without
    keeping what it was drawn from: a figure made from committed data (the README's overview)."""
    with plt.rc_context():
        plt.rcdefaults()
        set_style()
        fig = plot(*args, **kwargs)
        try:
            return save_to(fig, path)
        finally:
            plt.close(fig)


#: Under runs/<profile>/seed-<s>/: what each figure of the run was drawn from (a JSON recipe per figure, with an .npz
#: of its numeric arrays: :mod:`unlearnkit.plots.recipes`; never a pickle, which would run code when read).
FIGURE_DATA = "figure-data"


def figure_data_path(name: str, params: Params) -> Path:
    return runs.store(params) / FIGURE_DATA / f"{name}.json"


def _render(name: str, params: Params, plot: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any]) -> Path:
    """``plot(*args, **kwargs)`` saved under ``name`` in the workbook's style alone: matplotlib's defaults plus
    :func:`set_style`, whatever the caller's backend (a notebook's inline backend sets its own) set, so a
    notebook and ``make figures`` write the same bytes."""
    with plt.rc_context():
        plt.rcdefaults()
        set_style()
        fig = plot(*args, **kwargs)
        try:
            return save_fig(fig, name, params)
        finally:
            plt.close(fig)


def draw(name: str, params: Params, plot: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Draw ``plot(*args, **kwargs)`` (a function of the library returning a figure), save it as
    ``<name>.png`` and keep the function and its arguments under ``runs/<profile>/seed-<s>/figure-data/``, so that
    :func:`redraw` makes the figure again from them alone, with the plotting code as it is then. In a notebook the
    saved PNG itself is shown: the report embeds the very bytes of the figure file (:func:`figure_path` gives
    where it is)."""
    if not callable(plot) or "<" in getattr(plot, "__qualname__", "<"):
        raise TypeError(f"draw needs a module-level plotting function of the library, got {plot!r}")
    from . import recipes

    path = _render(name, params, plot, args, kwargs)
    data = figure_data_path(name, params)
    data.parent.mkdir(parents=True, exist_ok=True)
    recipes.write(data, plot, args, dict(kwargs))
    _show(path, name)


def _show(path: Path, name: str) -> None:
    """Show the saved PNG, its output tagged with the figure's name (the report anchors the figure there)."""
    try:
        from IPython import get_ipython
        from IPython.display import Image, display
    except ImportError:  # pragma: no cover - IPython comes with the notebooks
        return
    if get_ipython() is not None:
        display(Image(filename=str(path)), metadata={"unlearnkit": {"figure": name}})


def redraw(params: Params) -> list[Path]:
    """Every figure of the run (profile and seed) drawn again from what :func:`draw` kept, without training or
    sampling. Raises FileNotFoundError when the run has kept nothing (its notebooks have not run)."""
    from . import recipes

    folder = runs.store(params) / FIGURE_DATA
    kept = sorted(folder.glob("*.json"))
    for path in sorted(set(folder.glob("*")) - set(kept) - {p.with_suffix(".npz") for p in kept}):
        print(f"{path}: not a figure recipe (JSON), not loaded: a pickle or any other file could run code; rerun "
              "the notebook that draws it", file=sys.stderr)
    if not kept:
        raise FileNotFoundError(f"no figure data of profile {params.profile!r}, seed {params.seed} under {folder}: run "
                                f"its notebooks first (make notebooks PROFILE={params.profile})")
    out = []
    for path in kept:
        try:
            plot, args, kwargs = recipes.read(path)
        except recipes.RecipeError as exc:
            print(f"{path}: {exc}; not drawn", file=sys.stderr)
            continue
        out.append(_render(path.stem, params, plot, args, kwargs))
    return out


def loss_curves(histories: Mapping[str, Sequence[Mapping[str, float]]], title: str = "Training loss",
                key: str = "loss", ax=None):
    """One line per run of a per-step quantity against the epoch."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    for label, history in histories.items():
        if history:
            ax.plot([h["epoch"] for h in history], [h[key] for h in history], label=label, lw=1.5)
    ax.set(xlabel="epoch", ylabel=key.replace("_", " "), title=title, yscale="log")
    ax.legend()
    return ax.figure


def metric_grid(results: Mapping[str, Mapping[str, Mapping[str, float]]], splits: Sequence[str],
                metrics: Sequence[str], title: str = ""):
    """Bars of each metric (columns) on each split (groups) for each model (colours)."""
    import numpy as np

    model_names = list(results)
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.8), squeeze=False)
    width = 0.8 / max(1, len(model_names))
    x = np.arange(len(splits))
    for ax, metric in zip(axes[0], metrics):
        for i, model in enumerate(model_names):
            values = [results[model].get(s, {}).get(metric, np.nan) for s in splits]
            ax.bar(x + (i - (len(model_names) - 1) / 2) * width, values, width, label=model)
        ax.set_xticks(x, [s.replace("_", "\n") for s in splits])
        ax.set_ylim(0, 1.05)
        ax.set_title(metric.replace("_", " "))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(len(labels), 6),
               frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def run_colors(names) -> dict[str, tuple]:
    """One colour per run name, the same in every figure of a notebook."""
    import seaborn as sns

    names = sorted(set(names))
    # tab10 repeats its colours past ten runs (notebook 02 has 14 and two models of notebook 01): then tab20
    palette = sns.color_palette("tab10", 10) if len(names) <= 10 else sns.color_palette("tab20", max(20, len(names)))
    return dict(zip(names, palette))


def tradeoff(table, x: str = "model_utility", y: str = "forget_quality", log_y: bool = True,
             title: str = "Forget quality against model utility", ax=None, colors: dict | None = None,
             labels: bool = True):
    """One labelled point per model: the unlearning trade-off (up and right is better). Without ``labels`` the
    points only: a caller that lays out its figure names them afterwards (:func:`tradeoff_labels`)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4.5))
    colors = colors or run_colors(table.index)
    for name, row in table.iterrows():
        marker = "s" if row.get("kind") == "notebook 01" else "o"
        ax.scatter(row[x], row[y], s=60, marker=marker, color=colors.get(name, "black"))
    ax.set(xlabel=x.replace("_", " "), ylabel=y.replace("_", " "), title=title)
    if log_y:
        ax.set_yscale("log")
        if y == "forget_quality":
            ax.set_ylim(top=3)  # a p-value: nothing above 1
    ax.margins(x=0.1)
    if labels:
        ax.figure.tight_layout()
        tradeoff_labels(ax, table, x, y)
    return ax.figure


def tradeoff_labels(ax, table, x: str = "model_utility", y: str = "forget_quality") -> None:
    """The name of each point of :func:`tradeoff`, clear of the markers and of each other (:func:`_labels_apart`)."""
    import numpy as np

    _labels_apart(ax, [(row[x], row[y], str(name), 60.0) for name, row in table.iterrows()
                       if np.isfinite(row[x]) and np.isfinite(row[y]) and (row[y] > 0 or ax.get_yscale() != "log")])


def step_curves(curves, key: str, title: str, ax=None, xlabel: str = "step", reference: float | None = None,
                reference_label: str = "target", colors: dict | None = None):
    """Lines of ``key`` against ``step`` for several runs (``{run: [record, ...]}``)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, 4.2))
    colors = colors or run_colors(curves)
    for run, records in curves.items():
        if records:
            ax.plot([r["step"] for r in records], [r[key] for r in records], marker="o", ms=3, label=run,
                    color=colors.get(run))
    if reference is not None:
        ax.axhline(reference, color="grey", ls="--", lw=1, label=reference_label)
    ax.set(xlabel=xlabel, ylabel=key.replace("_", " "), title=title)
    ax.legend(fontsize="small")
    return ax.figure


def corpus_overview(sizes, lengths):
    """Notebook 00: items per split (bars) and words per question and answer (histograms)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    sizes.sort_values("items").plot.barh(ax=axes[0], legend=False, title="Items per split")
    lengths.plot.hist(ax=axes[1], bins=30, alpha=0.7, title="Words per question and answer (full)")
    fig.tight_layout()
    return fig


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


def _renderer(fig):
    """A renderer of ``fig`` to measure text with (Agg's, as every backend the workbook uses draws with)."""
    canvas = fig.canvas
    if hasattr(canvas, "get_renderer"):
        return canvas.get_renderer()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    return FigureCanvasAgg(fig).get_renderer()


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """The area two boxes (x0, y0, x1, y1) share."""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def _labels_apart(ax, points: Sequence[tuple[float, float, str, float]], fontsize: float = 10.0) -> None:
    """Name each point (x, y, name, marker size in points², as ``scatter``'s ``s``) beside it, clear of every
    marker and of every label placed before: right of its marker if that is free, else left, above, below, a
    diagonal, then further up or down with a thin line back to its point (the runs of a comparison crowd in a few
    places: utility near the target's, privleak near -100). Call it once the axes' limits and the figure's layout
    are final: it places the labels in display space."""
    fig = ax.figure
    renderer = _renderer(fig)
    px_per_pt = fig.dpi / 72.0
    gap = 2.0 * px_per_pt
    frame = ax.get_window_extent(renderer)
    centres = [(*ax.transData.transform((x, y)), (s ** 0.5) / 2 * px_per_pt + 1) for x, y, _, s in points]
    obstacles = [(cx - r, cy - r, cx + r, cy + r) for cx, cy, r in centres]
    order = sorted(range(len(points)), key=lambda i: (-centres[i][1], centres[i][0]))
    for i in order:
        x, y, name, _ = points[i]
        cx, cy, r = centres[i]
        probe = ax.text(x, y, name, fontsize=fontsize)
        box = probe.get_window_extent(renderer)
        probe.remove()
        w, h = box.width, box.height
        near = [(cx + r + gap, cy - h / 2), (cx - r - gap - w, cy - h / 2), (cx - w / 2, cy + r + gap),
                (cx - w / 2, cy - r - gap - h), (cx + 0.7 * r + gap, cy + 0.7 * r), (cx + 0.7 * r + gap, cy - 0.7 * r - h),
                (cx - 0.7 * r - gap - w, cy + 0.7 * r), (cx - 0.7 * r - gap - w, cy - 0.7 * r - h)]
        far = [(cx + side * (r + 4 * gap + shift * h) - (w if side < 0 else 0), cy - h / 2 + k * (h + gap))
               for k in range(-15, 16) for side in (1, -1) for shift in range(0, 12, 2) if k or shift]
        far.sort(key=lambda c: (c[0] + (w / 2) - cx) ** 2 + (c[1] + h / 2 - cy) ** 2)  # the nearest free place
        best, best_cost, best_line = (0, *near[0]), None, []
        for j, (x0, y0) in enumerate(near + far):
            candidate = (x0, y0, x0 + w, y0 + h)
            outside = (max(0.0, frame.x0 - x0) + max(0.0, x0 + w - frame.x1) + max(0.0, frame.y0 - y0)
                       + max(0.0, y0 + h - frame.y1))
            cost = sum(_overlap(candidate, o) for o in obstacles) + 50.0 * outside * h
            line = []
            if j >= len(near):  # the thin line back to the point: through no marker or label but its own
                ex, ey = (x0 if x0 > cx else x0 + w), y0 + h / 2
                line = [(cx + (ex - cx) * t, cy + (ey - cy) * t) for t in (0.2, 0.35, 0.5, 0.65, 0.8, 0.95)]
                line = [(lx - 1, ly - 1, lx + 1, ly + 1) for lx, ly in line if (lx - cx) ** 2 + (ly - cy) ** 2 > r * r]
                cost += w * h * sum(any(_overlap(b, o) > 0 for o in obstacles[:len(points)] if o != obstacles[i])
                                    or any(_overlap(b, o) > 0 for o in obstacles[len(points):]) for b in line)
            if best_cost is None or cost < best_cost:
                best, best_cost, best_line = (j, x0, y0), cost, line
            if cost == 0:
                break
        j, x0, y0 = best
        obstacles.extend(best_line)
        leader = None
        if j >= len(near):
            leader = {"arrowstyle": "-", "color": "grey", "lw": 0.6, "shrinkA": 0, "shrinkB": r / px_per_pt,
                      "relpos": (0.0, 0.5) if x0 > cx else (1.0, 0.5)}
        ax.annotate(name, (x, y), xytext=((x0 - cx) / px_per_pt, (y0 - cy) / px_per_pt), textcoords="offset points",
                    fontsize=fontsize, ha="left", va="bottom", zorder=4, arrowprops=leader)
        obstacles.append((x0, y0, x0 + w, y0 + h))


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
        _labels_apart(ax, points)
    return fig


#: Verdict colours of the findings figure (notebook 09): green, amber, red, greys.
VERDICT_COLORS = {"reproduced": "#1a9850", "partly": "#f0a202", "not reproduced": "#d73027", "no test": "#bdbdbd",
                  "fact": "#8c8c8c",
                  # fewer seeds than a verdict needs: what the seeds agree on (studies.verdicts.tile), lighter
                  EVERY_SEED_HOLDS: "#a6dba0", SEEDS_DIFFER: "#fde0a0", EVERY_SEED_FAILS: "#f4a6a0",
                  # the registered claims (unlearnkit.judge's verdicts, and below five testable seeds what they agree on)
                  "contradicted": "#d73027", "inconclusive": "#f0a202", "not testable here": "#bdbdbd",
                  "consistent on every testable seed": "#a6dba0", "inconsistent on every testable seed": "#f4a6a0",
                  "inconclusive or mixed": "#fde0a0"}


def findings_overview(table, seeds: Sequence[int] | None = None, ncols: int = 6, title: str | None = None):
    """Notebook 09 and the README: one tile per finding, grouped by paper (at most ``ncols`` tiles a line, a paper
    with more takes several lines), coloured by its verdict over the training seeds (``seeds``, named in the title)
    and labelled with the notebook it comes from; a reader sees at a glance which findings came back at this
    profile's scale."""
    import math
    import textwrap

    papers = list(dict.fromkeys(table["paper"]))
    parts = [table[table["paper"] == paper] for paper in papers]
    ncols = max(1, min(ncols, max(len(part) for part in parts)))
    lines = [max(1, math.ceil(len(part) / ncols)) for part in parts]
    gap = 0.25  # between two papers, in tile heights
    height = sum(lines) + gap * (len(papers) - 1)
    tile_w, tile_h = 1.4, 0.78  # inches
    fig, ax = plt.subplots(figsize=(2.7 + tile_w * ncols, tile_h * height + 1.9))
    top, ticks = 0.0, []
    for paper, part, count in zip(papers, parts, lines):
        for k, (_, row) in enumerate(part.iterrows()):
            x, y = k % ncols, top + k // ncols
            shown = row.get("tile") or row["verdict"]  # a table without tiles (an older summary): the verdict
            color = VERDICT_COLORS.get(shown, "#ffffff")
            ax.add_patch(plt.Rectangle((x + 0.04, y + 0.06), 0.92, 0.88, color=color))
            short = textwrap.wrap(str(row.get("short") or ""), 13)
            name = "\n".join(short[:2] + [f"nb {row['notebook'][:2]}"])
            ax.text(x + 0.5, y + 0.5, name, ha="center", va="center", fontsize=10, linespacing=1.15,
                    color="white" if shown in ("reproduced", "not reproduced") else "black")
        name, cited, citation = str(paper).partition(" (")  # the citation on lines of its own
        ticks.append((top + count / 2, "\n".join(textwrap.wrap(name, 24) + textwrap.wrap("(" + citation, 24)
                                                 if cited else textwrap.wrap(name, 24))))
        top += count + gap
    ax.set_xlim(0, ncols)
    ax.set_ylim(height, 0)
    ax.set_yticks([t for t, _ in ticks], [label for _, label in ticks], fontsize=11)
    ax.tick_params(axis="y", length=0)
    ax.set_xticks([])
    ax.grid(False)
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    tiles = table["tile"] if "tile" in table else table["verdict"]
    used = [v for v in VERDICT_COLORS if v in set(tiles)]
    handles = [plt.Rectangle((0, 0), 1, 1, color=VERDICT_COLORS[v]) for v in used]
    ax.legend(handles, used, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=min(len(used), 4), frameon=False,
              fontsize=11)
    over = f" over training seed{'s' if len(seeds or []) != 1 else ''} {', '.join(map(str, seeds))}" if seeds else ""
    what = ("by its verdict" if not {EVERY_SEED_HOLDS, SEEDS_DIFFER, EVERY_SEED_FAILS} & set(tiles)
            else "by what its seeds show (fewer than five seeds: no verdict yet)")
    if title is None:
        title = (f"The former findings (each notebook's own reading, at its former bar), {what}{over} (tile: the "
                 "finding, the notebook it comes from); the papers' quoted claims are judged in the claims table")
    else:
        title = title.format(over=over)
    ax.set_title(textwrap.fill(title, 80), fontsize=12)
    fig.tight_layout()
    return fig
