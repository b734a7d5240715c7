"""``runner figures``: every figure of a run redrawn from what its notebooks kept."""

from __future__ import annotations

import argparse
import sys
import time

from .. import config, runs
from .checks import profile_params, set_overrides
from .door import before_kernel, run_store
from .lines import project_relative, run_label


def redraw_figures(params: config.Params) -> int:
    """Every figure of the run (profile and seed) drawn again from what its notebooks kept (``plots.draw``): no
    training, no sampling, the plotting code as it is now."""
    from .. import plots

    started = time.time()
    try:
        drawn = plots.redraw(params)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    kept = len(list((runs.store(params) / plots.FIGURE_DATA).glob("*.json")))
    if not drawn:
        print(f"{run_label(params)} no figure redrawn: none of its {kept} recipes draws (lines above)", file=sys.stderr)
        return 1
    folder = drawn[0].parent
    print(f"{run_label(params)} {len(drawn)} figures redrawn in {time.time() - started:.1f} s into {project_relative(folder)}"
          + (f"; {kept - len(drawn)} not drawn (lines above)" if kept > len(drawn) else ""))
    return 0 if kept == len(drawn) else 1


def cmd_figures(args: argparse.Namespace) -> int:
    params = profile_params(args.profile, set_overrides(args))
    before_kernel(params, (run_store,))  # a seed folder linked out of the store: one line
    return redraw_figures(params)
