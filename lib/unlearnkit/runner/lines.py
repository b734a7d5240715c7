"""How the runner speaks: a command refused in one line (exit code 2), and how its lines name a run and a path."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import config, paths


class Refused(SystemExit):
    """A command refused before any work: its one-line reason goes to stderr, the exit code is 2."""

    def __init__(self, message: str):
        print(message, file=sys.stderr, flush=True)
        super().__init__(2)


def run_label(params: config.Params) -> str:
    """How the runner's lines name a run: ``[default]`` for the profile's own seed, ``[default seed 3]`` else
    (``[default seed 0 data seed 1]`` on another corpus draw)."""
    from .. import runs

    data = "" if params.corpus_draw == runs.reference_draw(params.profile, params.seed) else f" data seed {params.corpus_draw}"
    return f"[{params.profile}{'' if runs.is_reference_seed(params) else f' seed {params.seed}'}{data}]"


def project_relative(path: Path) -> str:
    """A path relative to the project when it is inside it (runs/ may be elsewhere, e.g. in tests)."""
    try:
        return str(path.relative_to(paths.ROOT))
    except ValueError:
        return str(path)
