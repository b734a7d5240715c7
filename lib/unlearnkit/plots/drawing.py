"""Saving and drawing figures: ``draw`` saves every figure with deterministic bytes and keeps what it was drawn
from (a recipe, :mod:`unlearnkit.plots.recipes`), so ``make figures`` redraws them all (``redraw``) without training
or sampling."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from .. import paths, runs
from ..config import Params
from .style import set_style


def figure_path(name: str, params: Params) -> Path:
    """Where figure ``name`` of a run goes: ``figures/`` (committed) for the default profile's own seed, the seed's
    run store for any other seed or profile (:func:`unlearnkit.runs.figures_dir`)."""
    folder = paths.writable(runs.figures_dir(params, name), "a figures folder")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.png"


def save_fig(fig, name: str, params: Params) -> Path:
    """Write ``fig`` as ``<name>.png`` with deterministic bytes (no timestamp or software metadata).
    Name figures after their notebook: ``01_tofu_finetune_metrics``."""
    return save_to(fig, figure_path(name, params))


def save_to(fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` as PNG with deterministic bytes: rendered in memory, then written whole
    (:func:`paths.atomic_write_bytes`, which checks the path first), so a full disk leaves the previous figure as it
    was and names the file."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight", metadata={"Software": None})
    paths.atomic_write_bytes(Path(path), buffer.getvalue())
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
        if not isinstance(fig, Figure):
            plt.close("all")
            raise TypeError(f"{getattr(plot, '__qualname__', plot)} returned a {type(fig).__name__}, not a figure")
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
    from .recipes import plot_registry
    from .recipes import write as write_recipe

    if plot not in plot_registry().values():
        raise TypeError(f"draw needs one of the plotting functions of plots.recipes.PLOTS, got {plot.__module__}:"
                        f"{plot.__qualname__}")

    path = _render(name, params, plot, args, kwargs)
    data = figure_data_path(name, params)
    data.parent.mkdir(parents=True, exist_ok=True)
    write_recipe(data, plot, args, dict(kwargs))
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
    sampling, each under its recipe's name in this run's own place (:func:`figure_path`). A recipe that is not one,
    or whose plot fails, is one line on stderr naming its file, and the others are drawn. Raises FileNotFoundError
    when the run has kept nothing (its notebooks have not run)."""
    from .recipes import RecipeError
    from .recipes import read as read_recipe

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
            if not _FIGURE_NAME.fullmatch(path.stem):
                raise RecipeError(f"{path.stem!r} is not a figure's name (letters, digits, '_', '-')")
            plot, args, kwargs = read_recipe(path)
            out.append(_render(path.stem, params, plot, args, kwargs))
        except RecipeError as exc:
            print(f"{path}: {exc}; not drawn", file=sys.stderr)
        except Exception as exc:  # a received recipe's arguments that its plot refuses: that figure only
            message = (str(exc).splitlines() or [""])[0]
            print(f"{path}: {type(exc).__name__}: {message}; not drawn", file=sys.stderr)
    return out


#: What a figure (and its recipe) may be called.
_FIGURE_NAME = re.compile(r"[A-Za-z0-9][\w-]*")
