"""The notebook runner, ``python -m unlearnkit.runner`` (its usage: :mod:`unlearnkit.runner.cli`), one module per job.

:mod:`.cli` the command line (the parser, ``main``, ``run`` and ``params``); :mod:`.checks` the front door, every
parameter checked before a kernel starts; :mod:`.door` the one check before any kernel, every problem in one line each; :mod:`.notebooks` the source notebooks and keeping them clean;
:mod:`.execute` papermill execution into the run store; :mod:`.record` the timing and recipe an executed copy keeps;
:mod:`.seeds` the training seeds (``seed``, ``aggregate``, ``seeds``); :mod:`.evaluate` ``runner eval``;
:mod:`.train` ``runner train``; :mod:`.figures` ``runner figures``; :mod:`.lines` a refusal and the runner's lines.
"""

from ..parameters_cell import (  # the runner's names for them
    OWN_PARAMETERS_MARKER,
    declared_keys,
    default_yaml_text,
    own_parameters,
    parameters_in_sync,
    parameters_source,
    sync_parameters,
)
from .checks import Plan, checked_params, plan, prepare_stand_ins, profile_params, reads
from .cli import COMMANDS, ONLINE_FLAG, build_parser, main
from .evaluate import EVAL_OPTIONS
from .execute import (
    DEFAULT_TIMEOUT_S,
    PER_METHOD_PREFIXES,
    failed_copy,
    injected_parameters,
    output_lock,
    run,
    run_notebook,
)
from .figures import redraw_figures
from .lines import Refused
from .notebooks import (
    all_source_notebooks,
    eval_notebook,
    find_notebook,
    notebook_outputs,
    source_notebooks,
    strip,
)
from .record import already_done, run_recipe
from .seeds import MAX_SEEDS, aggregate, run_seed
from .train import TRAIN_STEPS, train_step

__all__ = [
    "OWN_PARAMETERS_MARKER", "declared_keys", "default_yaml_text", "own_parameters", "parameters_in_sync",
    "parameters_source", "sync_parameters", "Plan", "checked_params", "plan", "prepare_stand_ins",
    "profile_params", "reads", "COMMANDS", "ONLINE_FLAG", "build_parser", "main", "EVAL_OPTIONS",
    "DEFAULT_TIMEOUT_S", "PER_METHOD_PREFIXES", "failed_copy", "injected_parameters", "output_lock",
    "run", "run_notebook", "redraw_figures", "Refused", "all_source_notebooks", "eval_notebook",
    "find_notebook", "notebook_outputs", "source_notebooks", "strip", "already_done", "run_recipe",
    "MAX_SEEDS", "aggregate", "run_seed", "TRAIN_STEPS", "train_step",
]
