"""Profiles as files: the YAML layers of ``notebooks/params/`` (``<profile>.yaml``, each ``extends`` another)
and the named runs of ``notebooks/params/named-runs/``, one small file per run, layered per profile as profiles are.

A profile's named runs (``Params.method_settings``: a method with other settings, ``gd_mild: {method: gd,
unlearn_lr: 3.0e-4}``) are ``named-runs/<profile>/<run>.yaml``, one mapping each, and
``named-runs/<profile>.yaml``, the list of the profile's runs in their order (the order a run record keeps). A
profile that extends another sees its parent's runs: with no list of its own it has the parent's runs, its own
files overriding those of the same name (a new name comes after them); with a list, it has exactly the runs
listed, each its own file or else the one it sees through the profiles it extends. The folder is not ``runs/``:
that is the run store's name (and .gitignore's). Merging the layers is :func:`~unlearnkit.config.load_profile`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from .. import paths

BASE_PROFILE = "default"
#: The subfolder of ``notebooks/params/`` that holds the named runs (never a profile: profiles are the YAML files of
#: ``notebooks/params/`` itself).
RUNS = "named-runs"


def profile_names() -> list[str]:
    return sorted(p.stem for p in paths.PARAMS.glob("*.yaml"))


def _read_yaml(path: Path) -> Any:
    """The YAML of ``path``; a ValueError in one line naming the line where it is not YAML."""
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except RecursionError:  # a received profile of [[[[...]]]] 100,000 deep: the parser's stack, not a traceback
        raise ValueError(f"{paths.shown(path)} is not a profile: its values are nested too deeply to read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ValueError(f"{paths.shown(path)} is not valid YAML{where}: "
                         f"{getattr(exc, 'problem', None) or type(exc).__name__}") from None


def profile_layer(name: str) -> dict[str, Any]:
    """One profile file as written: its own keys only (``extends`` included)."""
    paths.check_name("profile", name)  # a name, never a path: --profile ../x or /abs is refused before it is read
    path = paths.PARAMS / f"{name}.yaml"
    if not path.exists():
        raise ValueError(f"unknown profile {name!r}; known profiles: {', '.join(profile_names())}")
    layer = _read_yaml(path) or {}
    if not isinstance(layer, dict):
        raise ValueError(f"{path}: a profile is a mapping of parameter names to values")
    return layer


def profile_base(name: str) -> str | None:
    """The profile ``name`` extends: its ``extends`` key, else default (None for default itself)."""
    if name == BASE_PROFILE:
        return None
    return str(profile_layer(name).get("extends", BASE_PROFILE))


def profile_chain(name: str) -> list[str]:
    """``name`` and the profiles it extends, nearest first (default last); a ValueError where ``extends`` loops."""
    chain: list[str] = []
    current: str | None = name
    while current is not None:
        if current in chain:
            raise ValueError(f"profile {name!r}: 'extends' loops through {' -> '.join(chain + [current])}")
        chain.append(current)
        current = profile_base(current)
    return chain


# --------------------------------------------------------------------------- named runs, one file each


def runs_list(profile: str) -> Path:
    """``named-runs/<profile>.yaml``: the list of the profile's named runs, in their order."""
    return paths.PARAMS / RUNS / f"{paths.check_name('profile', profile)}.yaml"


def run_file(profile: str, run: str) -> Path:
    """``named-runs/<profile>/<run>.yaml``: one named run of the profile (a run's name is a name, never a path)."""
    return paths.PARAMS / RUNS / paths.check_name("profile", profile) / f"{paths.check_name('run', run)}.yaml"


def own_runs(profile: str) -> list[str]:
    """The runs ``profile`` has a file of, by name."""
    folder = paths.PARAMS / RUNS / paths.check_name("profile", profile)
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def listed_runs(profile: str) -> list[str] | None:
    """The runs ``named-runs/<profile>.yaml`` lists, in order (None where the profile has no list)."""
    path = runs_list(profile)
    if not path.exists():
        return None
    names = _read_yaml(path)
    names = [] if names is None else names
    if not isinstance(names, list):
        raise ValueError(f"{paths.shown(path)}: the runs of profile {profile!r} are a list of run names")
    for run in names:
        paths.check_name(f"run (listed in {paths.shown(path)})", run)
    repeated = sorted({run for run in names if names.count(run) > 1})
    if repeated:
        raise ValueError(f"{paths.shown(path)} lists {', '.join(repeated)} more than once")
    return names


def read_run(profile: str, run: str) -> dict[str, Any]:
    """One named run's settings as its file writes them: a mapping (``method`` and the keys it overrides)."""
    path = run_file(profile, run)
    settings = _read_yaml(path)
    if not isinstance(settings, dict) or not all(isinstance(k, str) for k in settings):
        raise ValueError(f"{paths.shown(path)}: a named run is a mapping of settings (method: ..., key: value)")
    return settings


def named_runs(chain: Sequence[str], inherited: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The named runs of profile ``chain[0]`` (``chain``: it and the profiles it extends, :func:`profile_chain`),
    given the runs it inherits (its parent's, resolved; None for default): None where it declares none of its own
    (it keeps the inherited ones, as a profile keeps every key it does not set)."""
    profile, inherited = chain[0], dict(inherited or {})
    listed, own = listed_runs(profile), own_runs(profile)
    if listed is None and not own:
        return None
    if listed is None:  # the parent's runs, its own files overriding them, a new name after them
        return {**inherited, **{run: read_run(profile, run) for run in own}}
    unlisted = [run for run in own if run not in listed]
    if unlisted:
        raise ValueError(f"{paths.shown(run_file(profile, unlisted[0]))} is not a run of profile {profile!r}: "
                         f"{paths.shown(runs_list(profile))} lists its runs")
    runs: dict[str, Any] = {}
    for run in listed:  # exactly the runs listed: its own file, else the one it sees through the profiles it extends
        if run in own:
            runs[run] = read_run(profile, run)
        elif run in inherited:
            runs[run] = inherited[run]
        else:
            seen = next((p for p in chain[1:] if run_file(p, run).exists()), None)
            if seen is None:
                raise ValueError(f"{paths.shown(runs_list(profile))} lists {run!r}, but neither "
                                 f"{paths.shown(run_file(profile, run))} nor a run of the profiles it extends "
                                 f"({', '.join(chain[1:]) or 'none'}) exists")
            runs[run] = read_run(seen, run)
    return runs
