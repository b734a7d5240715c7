"""The library's layout: stations import only stations to their left, nothing imports the studies or the plots
but notebooks, the runner and the tools built on the studies (your own model, the seed study), the import graph has no cycle, and only the run store knows the notebooks' names."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from unlearnkit import paths, runner

PACKAGE = paths.ROOT / "lib" / "unlearnkit"

#: Every top-level module or package of the library, by floor: a module may import its own floor and the floors
#: below. A new module takes a floor here, or this test fails: the layout is decided, not grown.
FLOORS = {
    "machine": 0, "lifetime": 0, "paths": 0, "refusals": 0, "config": 1, "stations": 1, "provenance": 1, "parameters_cell": 2, "workers": 2, "data": 2, "models": 3, "runs": 4, "results": 4, "training": 5, "checkpoints": 5, "unlearning": 6, "generation": 6,
    "metrics": 7, "bounds": 7, "pipeline": 8, "attacks": 8, "claims": 8, "studies": 9, "ownmodel": 10, "seedstudy": 10, "plots": 10,
    "runner": 11, "report": 11,
}
#: Pairs on one floor that must still not meet: bounds is pure arithmetic on scores; unlearning (the losses)
#: and generation (decoding) are independent of each other.
FORBIDDEN_SIDEWAYS = {("bounds", "metrics"), ("metrics", "bounds"), ("unlearning", "generation"),
                      ("generation", "unlearning")}


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        yield ".".join(["unlearnkit", *parts]), path


def import_target(node: ast.ImportFrom, package: str) -> str:
    """The dotted module a ``from ... import`` names, its relative form resolved against ``package`` (the importing
    module's package); tests/test_interfaces.py resolves its imports with it too."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path) -> set[str]:
    """The unlearnkit modules ``module`` imports, at the top or inside functions, resolved to dotted names."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            target = import_target(node, package)
            if target.startswith("unlearnkit"):
                found.add(target)
                found.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("unlearnkit"))
    known = {m for m, _ in _modules()}
    return {t for t in found if t in known and t != module}


def _station(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


GRAPH = {module: _imports(module, path) for module, path in _modules()}


def test_every_module_sits_on_a_known_floor():
    stations = {_station(m) for m in GRAPH} - {"__init__"}
    assert stations <= set(FLOORS), f"modules without a floor: {sorted(stations - set(FLOORS))}"


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_a_module_imports_only_its_floor_and_below(module):
    station = _station(module)
    if station == "__init__":
        return
    for target in GRAPH[module]:
        other = _station(target)
        if other == "__init__" or other == station:
            continue
        assert FLOORS[other] <= FLOORS[station], f"{module} imports {target}: {other} sits above {station}"
        assert (station, other) not in FORBIDDEN_SIDEWAYS, f"{module} imports {target}"


def test_only_notebooks_and_the_runner_import_studies_and_plots():
    for module, targets in GRAPH.items():
        if _station(module) in ("studies", "ownmodel", "seedstudy", "plots", "runner", "report"):
            continue
        for target in targets:
            assert _station(target) not in ("studies", "plots"), f"{module} imports {target}"


def test_the_import_graph_has_no_cycle():
    state: dict[str, int] = {}

    def visit(module: str, trail: list[str]) -> None:
        state[module] = 1
        for target in GRAPH[module]:
            if state.get(target) == 1:
                pytest.fail("import cycle: " + " -> ".join(trail + [module, target]))
            if state.get(target) is None:
                visit(target, trail + [module])
        state[module] = 2

    for module in GRAPH:
        if module not in state:
            visit(module, [])


def test_only_the_run_store_names_the_notebooks():
    stems = [p.stem for p in runner.source_notebooks()]
    assert stems, "no notebooks found"
    pattern = re.compile("|".join(re.escape(s) for s in stems) + r"|\b\d\d_[a-z]+_[a-z_]+")
    for module, path in _modules():
        if module == "unlearnkit.runs" or module.startswith("unlearnkit.runs."):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                docstring_like = "\n" in node.value or " " in node.value.strip()
                if not docstring_like:
                    assert not pattern.search(node.value), f"{module} names the notebook {node.value!r}"


def test_no_module_is_named_after_a_notebook():
    topics = {p.stem[3:] for p in runner.source_notebooks()}
    named = {path.relative_to(PACKAGE).with_suffix("").parts[-1] for _, path in _modules()}
    # notebook 02 is named after the unlearning station it exercises, not the other way round
    assert not (named & topics) - {"unlearning"}, sorted((named & topics) - {"unlearning"})


def test_library_tests_benchmarks_and_notebooks_lint_clean():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--output-format", "concise", "lib", "tests",
                           "benchmarks", "notebooks"], cwd=paths.ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


#: The module allowed past the size of a room: one generator, well sectioned.
WHOLE_ROOMS = {"data/synthetic.py"}
#: A module a reader can hold: past it, a module is split along its own sections (one module per job).
MAX_LINES = 500


def test_no_room_outgrows_a_reader():
    """No module over 500 lines (but the one kept whole), no step of the pipeline over 300: a feature that does
    not fit has to find its room instead of another section."""
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        lines = len(path.read_text().splitlines())
        if rel.startswith("pipeline/"):
            assert lines <= 300, f"{rel}: {lines} lines, a pipeline step holds at most 300"
        elif rel not in WHOLE_ROOMS:
            assert lines <= MAX_LINES, f"{rel}: {lines} lines, a module holds at most {MAX_LINES}"


def test_config_holds_parameters_only():
    """Infrastructure lives in its own rooms: the worker pool in workers, timing in stations, provenance in
    provenance, locks and atomic writes in the run store."""
    from unlearnkit import config, models

    for name in ("file_lock", "atomic_write_text", "git_revision", "package_versions", "side_by_side", "station"):
        assert not hasattr(config, name), f"config.{name} belongs elsewhere"
    assert not hasattr(models, "side_by_side"), "the pool is not in models"
