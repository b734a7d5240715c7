"""Figures: one style (:mod:`~unlearnkit.plots.style`), one ``draw`` (:mod:`~unlearnkit.plots.drawing`, which saves
every figure and keeps what it was drawn from, so ``make figures`` redraws them all without training or sampling)
and the recurring figures (:mod:`~unlearnkit.plots.curves`, :mod:`~unlearnkit.plots.corpus`,
:mod:`~unlearnkit.plots.unlearning_runs`, :mod:`~unlearnkit.plots.verdicts`), which this face re-exports
(``plots.draw``, ``plots.set_style``, ...), then one module per study (calibration, formats, leakage, ...). The top
floor: only notebooks and the runner import it."""

from .corpus import corpus_overview
from .curves import loss_curves, metric_grid, run_colors, step_curves, tradeoff, tradeoff_labels
from .drawing import (
    FIGURE_DATA,
    draw,
    figure_data_path,
    figure_path,
    redraw,
    render_to,
    save_fig,
    save_to,
)
from .style import (
    CONTENT_WIDTH_PX,
    MIN_TEXT_PX,
    SAVE_DPI,
    drawn_texts,
    legible,
    set_style,
    shown_scale,
    smallest_text_px,
)
from .unlearning_runs import (
    MIA_COLUMNS,
    ou_summary,
    rouge_trajectory,
    unlearning_comparison,
    unlearning_terms,
)
from .verdicts import VERDICT_COLORS, findings_overview

__all__ = [
    "corpus_overview", "loss_curves", "metric_grid", "run_colors", "step_curves", "tradeoff", "tradeoff_labels",
    "FIGURE_DATA", "draw", "figure_data_path", "figure_path", "redraw", "render_to", "save_fig", "save_to",
    "CONTENT_WIDTH_PX", "MIN_TEXT_PX", "SAVE_DPI", "drawn_texts", "legible", "set_style", "shown_scale",
    "smallest_text_px", "MIA_COLUMNS", "ou_summary", "rouge_trajectory", "unlearning_comparison",
    "unlearning_terms", "VERDICT_COLORS", "findings_overview",
]
