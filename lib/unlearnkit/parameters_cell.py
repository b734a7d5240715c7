"""The parameters cell of a notebook, read and written in one place: by the runner (what a notebook declares, what
papermill injects, ``sync-params``) and by the report (papermill's injected cell folded into the notebook's own).

A parameters cell holds one ``name = value`` line per profile key the notebook reads, at default.yaml's value with
the key's help as comment (:func:`parameters_source`), then, below :data:`OWN_PARAMETERS_MARKER`, the notebook's own
parameters (``method``)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import yaml

from . import config, paths

#: The tag papermill gives the cell it injects.
INJECTED = "injected-parameters"


def cell_source(cell) -> str:
    """A cell's source as one string (a list of lines in a notebook file, a string in nbformat)."""
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


#: Lines after this marker in a parameters cell belong to that notebook alone and survive ``sync-params``.
OWN_PARAMETERS_MARKER = "# --- this notebook only"
_PARAMS_HEADER = """# Parameters: the keys this notebook reads, at their `default` profile values (make sync-params writes them
# from notebooks/params/default.yaml). The runner injects the chosen profile's values (make notebook NB=..
# PROFILE=..); every other parameter comes from the profile. A value changed here overrides the profile's, and
# `profile = 'smoke'` alone gives smoke's values. Later cells read them once resolved, as params.<key>."""
_PROFILE_COMMENT = "the profile (notebooks/params/<profile>.yaml) that every parameter not changed here comes from"


_KEY_LINE = re.compile(r"^([\w-]+):\s*(.*?)(?:\s+#\s*(.*))?$")
#: The column default.yaml's comments start at (further right when a value is longer).
_COMMENT_COLUMN = 32


def default_lines() -> dict[str, tuple[Any, str | None]]:
    """default.yaml's values with each parameter's help (its one home: the field's metadata, ``config.HELP``), as
    {key: (value, comment)}: the source of every parameters cell."""
    out: dict[str, tuple[Any, str | None]] = {}
    for line in (paths.PARAMS / f"{config.BASE_PROFILE}.yaml").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = _KEY_LINE.match(line)
        if match is None:
            raise ValueError(f"default.yaml: cannot read {line!r}")
        key, value, _ = match.groups()
        comment = config.HELP.get(key) or None
        if comment and " = " in comment:
            raise ValueError(f"the help of {key!r} holds ' = ', which papermill cannot parse in a parameters cell")
        out[key] = (yaml.safe_load(value) if value else None, comment)
    return out


def default_yaml_text() -> str:
    """default.yaml with each parameter's comment written from its help (``config.HELP``): what ``sync-params``
    writes and ``check-clean`` holds the file to, so that a parameter's meaning has one home."""
    lines = []
    for line in (paths.PARAMS / f"{config.BASE_PROFILE}.yaml").read_text().splitlines():
        match = _KEY_LINE.match(line) if line.strip() and not line.startswith("#") else None
        if match is None:
            lines.append(line)
            continue
        key, value = match.group(1), match.group(2)
        text = f"{key}: {value}" if value else f"{key}:"
        help_text = config.HELP.get(key, "")
        lines.append(f"{text.ljust(_COMMENT_COLUMN - 1)} # {help_text}" if help_text else text)
    return "\n".join(lines) + "\n"


def code_cells(nb: dict) -> list[str]:
    return [cell_source(c) for c in nb["cells"] if c["cell_type"] == "code"
            and "parameters" not in c.get("metadata", {}).get("tags", [])]


def declared_keys(nb: dict) -> list[str]:
    """The profile keys a notebook reads: names its code cells load that are parameters, and the ``params.<key>``
    its cells read after the params line, in default.yaml's order (``profile`` and ``seed`` first, always: every
    notebook's runs belong to a profile and a training seed, which a reader of the parameters cell should see and may
    change even where only the library reads them)."""
    used: set[str] = set()
    for source in code_cells(nb):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                used.add(node.id)
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "params"
                  and isinstance(node.ctx, ast.Load)):
                used.add(node.attr)
    return ["profile", "seed"] + [k for k in default_lines() if k in used and k not in ("profile", "seed")]


def parameters_source(keys: list[str] | None = None, own_lines: list[str] | None = None) -> str:
    """A parameters cell written from ``default.yaml``: one literal per key (every key when ``keys`` is None),
    its YAML comment kept as the Python comment (papermill cannot parse a comment holding " = ")."""
    defaults = default_lines()
    lines = [_PARAMS_HEADER]
    for key in keys if keys is not None else list(defaults):
        value, comment = defaults[key]
        comment = _PROFILE_COMMENT if key == "profile" else comment
        lines.append(f"{key} = {value!r}" + (f"  # {comment}" if comment else ""))
    if own_lines:
        lines += [OWN_PARAMETERS_MARKER, *own_lines]
    return "\n".join(lines)


def parameters_cell(nb: dict) -> dict:
    cells = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ValueError("a notebook needs exactly one cell tagged 'parameters'")
    return cells[0]


def own_parameter_lines(cell: dict) -> list[str]:
    source = cell_source(cell)
    lines = source.splitlines()
    return lines[lines.index(OWN_PARAMETERS_MARKER) + 1:] if OWN_PARAMETERS_MARKER in lines else []


def parameters_in_sync(path: Path) -> bool:
    nb = json.loads(path.read_text())
    cell = parameters_cell(nb)
    source = cell_source(cell)
    return source == parameters_source(declared_keys(nb), own_parameter_lines(cell))


def sync_parameters(path: Path) -> None:
    nb = json.loads(path.read_text())
    cell = parameters_cell(nb)
    cell["source"] = parameters_source(declared_keys(nb), own_parameter_lines(cell))
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


#: A ``name = value  # comment`` line of a parameters cell: name, the sign with its spaces, value, comment.
_ASSIGNMENT = re.compile(r"^(\w+)(\s*=\s*)(.*?)(\s*#.*)?$")


def _assigned(lines: list[str]) -> list[str]:
    """The names that ``name = value`` lines assign."""
    return [m.group(1) for m in map(_ASSIGNMENT.match, lines) if m]


def cell_names(cell: dict) -> tuple[list[str], list[str]]:
    """What a parameters cell assigns: the profile keys above the marker, the notebook's own parameters below it."""
    source = cell_source(cell)
    lines = source.splitlines()
    cut = lines.index(OWN_PARAMETERS_MARKER) if OWN_PARAMETERS_MARKER in lines else len(lines)
    return _assigned(lines[:cut]), _assigned(lines[cut + 1:])


def own_parameters(notebook: Path) -> list[str]:
    """The parameters a notebook takes besides the profile's (below the marker of its parameters cell: ``method``)."""
    return cell_names(parameters_cell(json.loads(notebook.read_text())))[1]


def cell_keys(notebook: Path) -> list[str]:
    """The names a notebook's parameters cell assigns above the marker (each must be a profile key)."""
    return cell_names(parameters_cell(json.loads(notebook.read_text())))[0]


def assignments(source: str) -> dict[str, str]:
    """``name = value`` lines of a parameters cell, as the source text of each value."""
    out = {}
    for line in source.splitlines():
        match = _ASSIGNMENT.match(line)
        if match:
            out[match.group(1)] = match.group(3).rstrip()
    return out


def fold_injected(nb) -> None:
    """Drop papermill's injected cell and write the values it set into the notebook's own parameters cell (a key
    only the injected cell names is added at the end), so a page shows one parameters cell with what the run used."""
    injected = [c for c in nb.cells if INJECTED in c.get("metadata", {}).get("tags", [])]
    if not injected:
        return
    values = {k: v for c in injected for k, v in assignments(c.source).items()}
    nb.cells = [c for c in nb.cells if c not in injected]
    own = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if not own:
        return
    lines, seen = [], set()
    for line in own[0].source.splitlines():
        match = _ASSIGNMENT.match(line)
        if match and match.group(1) in values:
            key = match.group(1)
            seen.add(key)
            if values[key] != match.group(3):
                line = f"{key}{match.group(2)}{values[key]}{match.group(4) or ''}"
        lines.append(line)
    lines += [f"{k} = {v}  # set for this run" for k, v in values.items() if k not in seen]
    own[0].source = "\n".join(lines)
