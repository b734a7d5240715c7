"""The workbook's parameters: layered profiles read as one typed, checked :class:`Params`.

A profile is one YAML file in ``notebooks/params/``; every notebook takes the same keys, so one file configures the
whole workbook, and its named runs (``method_settings``) are one small file each in ``notebooks/params/named-runs/``.
Parameters only: the run store is :mod:`unlearnkit.runs`, station timing :mod:`unlearnkit.stations`, provenance
:mod:`unlearnkit.provenance`; ``params_hash`` and ``jsonable`` turn parameters into cache keys and JSON.

- :mod:`.constraints`: what a declared value may be (:class:`Constraint` and its builders);
- :mod:`.params`: :class:`Params`, its fields (each parameter's one declaration) and what is read off them;
- :mod:`.profiles`: the profile files and the named runs' files, layered by ``extends``.
"""

from __future__ import annotations

from .. import paths
from .constraints import (
    COUNT,
    Constraint,
    above,
    at_most,
    between,
    each,
    is_number,
    one_of,
    or_null,
)
from .params import (
    CONSTRAINTS,
    HELP,
    KEYS_SET,
    PARAMETER_NAMES,
    Params,
    UnknownParameter,
    as_params,
    check_known,
    closest,
    jsonable,
    load_profile,
    notebook_params,
    param,
    parameter_sections,
    params_hash,
    unknown_message,
)
from .profiles import (
    BASE_PROFILE,
    RUNS,
    listed_runs,
    named_runs,
    own_runs,
    profile_base,
    profile_chain,
    profile_layer,
    profile_names,
    read_run,
    run_file,
    runs_list,
)

__all__ = [
    "BASE_PROFILE", "CONSTRAINTS", "COUNT", "Constraint", "HELP", "KEYS_SET", "PARAMETER_NAMES", "Params", "RUNS",
    "UnknownParameter", "above", "as_params", "at_most", "between", "check_known", "closest", "each", "is_number",
    "jsonable", "listed_runs", "load_profile", "named_runs", "notebook_params", "one_of", "or_null", "own_runs",
    "param", "parameter_sections", "params_hash", "profile_base", "profile_chain", "profile_layer", "profile_names",
    "read_run", "run_file", "runs_list", "unknown_message",
    "paths",  # config.paths, as before the split
]
