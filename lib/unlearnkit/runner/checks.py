"""The front door: every parameter merged once and checked once (``--set`` values, profiles, parameters cells, the
data source, the runs and the models the notebooks will load) before a kernel starts or a file is written."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from .. import config
from ..parameters_cell import cell_keys as _cell_keys
from ..parameters_cell import own_parameters
from .door import CHECKS, Check, before_kernel
from .lines import Refused, project_relative
from .notebooks import find_notebook, source_notebooks


def checked_params(profile: str, overrides: dict | None = None, runs: list[str] | tuple[str, ...] = ()) -> config.Params:
    """:func:`profile_params`, then the checks that need the data source and the runs (``pipeline.check_params``;
    ``runs``: runs asked for by name), each refused (:class:`Refused`)."""
    from .. import pipeline

    params = profile_params(profile, overrides)
    try:
        return pipeline.check_params(params, runs)
    except ValueError as exc:
        raise Refused(str(exc)) from None


def profile_params(profile: str, overrides: dict | None = None) -> config.Params:
    """The merged profile with ``overrides`` (profile keys only), checked: a bad profile, key or value is refused."""
    try:
        return config.Params.load(profile, **(overrides or {}))
    except (ValueError, KeyError, TypeError) as exc:
        raise Refused(str(exc)) from None


def reads(notebook: Path) -> set[str]:
    """Every key a notebook reads: the profile sections it reads (``runs.keys_read``), its parameters cell and its
    own parameters."""
    from .. import runs

    return runs.keys_read(notebook.stem) | set(_cell_keys(notebook)) | set(own_parameters(notebook))


class Plan(NamedTuple):
    """What a ``run`` command will do, checked: the notebooks, the merged parameters, the notebooks' own
    parameters (``method``) and the overridden profile keys."""

    notebooks: list[Path]
    params: config.Params
    own: dict[str, Any]
    changed: list[str]


def plan(target: str, profile: str, overrides: dict[str, Any], skip: tuple[str, ...] = ()) -> Plan:
    """The front door of ``run``: find the notebooks (``all`` but those of ``skip``), merge the profile with the
    overrides once, and refuse (:class:`Refused`) anything wrong before a kernel starts or a file is written. A key
    the chosen notebooks do not read is named in one line on stderr (the run goes on)."""
    notebooks = source_notebooks() if target == "all" else [find_notebook(target)]
    notebooks = [nb for nb in notebooks if nb.stem not in skip]
    own_names = {name for nb in notebooks for name in own_parameters(nb)}
    profile_keys = {k: v for k, v in overrides.items() if k in config.PARAMETER_NAMES}
    own = {k: v for k, v in overrides.items() if k not in config.PARAMETER_NAMES}
    unknown = [k for k in own if k not in own_names]
    if unknown:
        raise Refused(config.unknown_message(unknown, known=[*config.PARAMETER_NAMES, *sorted(own_names)]))
    for nb in notebooks:
        try:
            config.check_known(_cell_keys(nb), f" in the parameters cell of {nb.name}")
        except KeyError as exc:
            raise Refused(str(exc)) from None
    if "method" in own and not isinstance(own["method"], str):
        raise Refused(f"method must be a run name, got {own['method']!r}")
    params = checked_params(profile, profile_keys, [own["method"]] if "method" in own else [])
    from .. import runs

    changed = sorted(k for k in profile_keys if k != "seed")  # a seed has its own folders (make notebooks SEED=3)
    if changed and runs.writes_committed(params):
        raise Refused(f"--set {', '.join(changed)} would change the committed results of profile {params.profile!r} "
                      f"(figures/, results/{params.profile}/, docs/findings.json): put your values in a profile of "
                      f"your own (notebooks/params/mine.yaml: 'extends: {params.profile}' and the keys) and run "
                      "--profile mine")
    read = [reads(nb) for nb in notebooks]
    for key in overrides:
        if not any(key in keys for keys in read):
            who = f"notebook {notebooks[0].stem[:2]}" if len(notebooks) == 1 else "no notebook"
            print(f"{who} {'does not read' if len(notebooks) == 1 else 'reads'} {key}", file=sys.stderr, flush=True)
    return Plan(notebooks, params, own, sorted(profile_keys))


def prepare_stand_ins(params: config.Params, checks: Sequence[Check] = CHECKS) -> None:
    """Build the stand-in models a profile names (``paper-dry``) before its notebooks look for them, then the one
    check before any kernel (:func:`.door.before_kernel`: what the notebooks will load, every problem at once)."""
    from .. import pipeline

    built = pipeline.build_stand_ins(params)
    if built:
        print(f"[{params.profile}] stand-ins ready in {project_relative(next(iter(built.values())).parent)}: {', '.join(built)}",
              flush=True)
    before_kernel(params, checks)  # once the stand-ins exist


def _override(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise Refused(f"--set takes key=value (a YAML value), got {text!r}")
    if key.strip() == "profile":
        raise Refused("the profile is chosen with --profile NAME, not --set profile=...")
    try:
        return key.strip(), yaml.safe_load(value)
    except RecursionError:  # [[[[...]]]] deeper than the parser's stack: one line, not the value itself
        raise Refused(f"--set {key.strip()}: its value is nested too deeply to read") from None
    except yaml.YAMLError as exc:
        raise Refused(f"--set {key.strip()}: {value!r} is not a YAML value "
                      f"({getattr(exc, 'problem', None) or type(exc).__name__})") from None


def set_overrides(args: argparse.Namespace) -> dict[str, Any]:
    return dict(_override(o) for o in getattr(args, "overrides", []))
