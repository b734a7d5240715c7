"""The workbook's one figure style (:func:`set_style`) and how legible a figure is as the HTML report shows it
(issue #36: every text at least :data:`MIN_TEXT_PX` tall)."""

from __future__ import annotations

import matplotlib.pyplot as plt

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
