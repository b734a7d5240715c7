"""Rooms meet at their interfaces (#62 item 4): no module of the library imports another module's ``_private`` name
(a name another room needs is public in its module, or lives beside its one caller), and no package face re-exports
through ``# noqa: F401`` (a face lists its re-exports in ``__all__``, which ruff reads)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from test_layers import import_target
from unlearnkit import paths

PACKAGE = paths.ROOT / "lib" / "unlearnkit"

#: Modules this rule does not reach yet: a private import counts against the rule only where neither the importing
#: module nor the defining one lies below one of these.
NOT_YET: dict[str, str] = {}  # empty since #62 item 4 reached the studies; it only shrinks
NOQA_F401 = re.compile(r"#\s*noqa\s*:[^#\n]*\bF401\b")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _not_yet(module: str) -> bool:
    return any(module == room or module.startswith(room + ".") for room in NOT_YET)


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = [p for p in path.relative_to(PACKAGE).with_suffix("").parts if p != "__init__"]
        yield ".".join(["unlearnkit", *parts]), path


def private_imports(source: str, module: str, is_package: bool, known: set[str]) -> list[tuple[int, str, str]]:
    """(line, defining module, name) of each ``_private`` name ``module`` takes from another unlearnkit module:
    ``from <module> import _name`` (relative or absolute, at the top or inside a function) and ``alias._name`` where
    ``alias`` is bound to an unlearnkit module (``import unlearnkit.x as alias``, ``from unlearnkit import x``)."""
    package = module if is_package else module.rsplit(".", 1)[0]
    tree = ast.parse(source)
    found: list[tuple[int, str, str]] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = import_target(node, package)
            if not (target == "unlearnkit" or target.startswith("unlearnkit.")):
                continue
            for alias in node.names:
                if f"{target}.{alias.name}" in known:  # a module: what is read off it is checked below
                    aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
                if _private(alias.name) and target != module:
                    found.append((node.lineno, target, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("unlearnkit") and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                and aliases.get(node.value.id, module) != module):
            found.append((node.lineno, aliases[node.value.id], node.attr))
    return sorted(found)


def noqa_f401_lines(source: str) -> list[int]:
    return [i for i, line in enumerate(source.splitlines(), 1) if NOQA_F401.search(line)]


def problems() -> list[str]:
    known = {m for m, _ in modules()}
    found = []
    for module, path in modules():
        source = path.read_text()
        rel = path.relative_to(paths.ROOT).as_posix()
        for line, defining, name in private_imports(source, module, path.name == "__init__.py", known):
            if not (_not_yet(module) or _not_yet(defining)):
                found.append(f"{rel}:{line}: imports {defining}.{name}, a private name of another module")
        if not _not_yet(module):
            found += [f"{rel}:{line}: a noqa: F401 re-export (list the name in __all__)"
                      for line in noqa_f401_lines(source)]
    return found


def test_no_module_imports_another_modules_private_name_and_no_face_hides_a_reexport():
    assert problems() == []


def test_the_rooms_not_yet_reached_still_exist():
    """An entry of NOT_YET whose room is gone is dropped, not kept: the allow-list only shrinks."""
    known = {m for m, _ in modules()}
    assert [room for room in NOT_YET if not any(m == room or m.startswith(room + ".") for m in known)] == []


def test_the_walker_finds_each_way_to_reach_a_private_name():
    planted = '''
from __future__ import annotations
import unlearnkit.runs.layout as layout
from .. import runs
from ..runs import layout as lay, store
from .lines import _label, Refused  # noqa: F401
from . import _hidden
from unlearnkit.bounds.dkw import check_alpha, _unwrap
import numpy as np

def f():
    from .checks import _overrides  # noqa: E501, F401  (two codes)
    return layout._run_it_first, lay._x, runs.__name__, np._private, _own(), Refused._inner

def _own():
    return store
'''
    known = {"unlearnkit.runs", "unlearnkit.runs.layout", "unlearnkit.runs.store", "unlearnkit.runner.lines",
             "unlearnkit.runner.checks", "unlearnkit.bounds.dkw"}
    found = private_imports(planted, "unlearnkit.runner.cli", False, known)
    assert found == [(6, "unlearnkit.runner.lines", "_label"), (7, "unlearnkit.runner", "_hidden"),
                     (8, "unlearnkit.bounds.dkw", "_unwrap"), (12, "unlearnkit.runner.checks", "_overrides"),
                     (13, "unlearnkit.runs.layout", "_run_it_first"), (13, "unlearnkit.runs.layout", "_x")], found
    assert noqa_f401_lines(planted) == [6, 12]
    assert noqa_f401_lines("from . import methods  # noqa: I001  (order)\nx = 1  # noqa: E731\n") == []
    # a package's own private names, and a private name imported from outside the library, are not the rule's
    assert private_imports("from . import _own\nfrom os import _exit\n", "unlearnkit.runner", True, known) == []
    assert private_imports("from .x import _y\n", "unlearnkit.runner.x", False, known) == []
