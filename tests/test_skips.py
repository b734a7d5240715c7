"""What CI cannot run is named with what covers it. Every skip in tests/ goes through conftest's ``needs`` or
``skip_unless`` (``requires_real_tofu`` is ``needs`` for ../shared/data/tofu), whose reason says what is missing and
what covers the test meanwhile: other tests by path and name, which must exist, or CI. docs/design.md's development
section lists every test that can skip, with its cover."""

from __future__ import annotations

import ast
import re

from unlearnkit import paths

TESTS = paths.ROOT / "tests"
#: conftest's helpers and the position of their ``cover`` argument.
HELPERS = {"needs": 2, "skip_unless": 2, "requires_real_tofu": 0}
#: pytest's own ways to skip, which only conftest's helpers may call.
BARE = {"skip", "skipif", "importorskip"}
COVERED_TEST = re.compile(r"tests/(test_\w+\.py)::(\w+)")


def _name(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _strings(tree: ast.AST) -> dict[str, str]:
    """Names bound to a string literal anywhere in the file (``cover = ("..." "...")``)."""
    return {target.id: node.value.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for target in node.targets if isinstance(target, ast.Name)}


def _cover(call: ast.Call, strings: dict[str, str]) -> str | None:
    index = HELPERS[_name(call.func)]
    arg = next((k.value for k in call.keywords if k.arg == "cover"), call.args[index] if len(call.args) > index else None)
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return strings.get(arg.id) if isinstance(arg, ast.Name) else None


def skip_sites(source: str, file: str, existing: dict[str, set[str]]) -> tuple[dict[str, str], list[str]]:
    """The tests (and fixtures) of one file that can skip, each with its cover, and the problems: a bare pytest skip,
    a cover that is no literal string, that names neither a test nor CI, or that names a test that does not exist
    (``existing``: each test file's top-level functions)."""
    tree = ast.parse(source)
    strings = _strings(tree)
    marks = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
             and _name(node.value.func) in HELPERS for t in node.targets if isinstance(t, ast.Name)}
    sites: dict[str, str] = {}
    problems: list[str] = []

    def check(call: ast.Call, owner: str) -> None:
        cover = _cover(call, strings)
        if cover is None:
            problems.append(f"{file}:{call.lineno}: {owner}'s cover is not a literal string")
            return
        named = COVERED_TEST.findall(cover)
        if not named and "CI" not in cover:
            problems.append(f"{file}:{call.lineno}: {owner}'s cover names no test and not CI: {cover!r}")
        for covering_file, test in named:
            if test not in existing.get(covering_file, set()):
                problems.append(f"{file}:{call.lineno}: {owner}'s cover names a test that does not exist: "
                                f"tests/{covering_file}::{test}")
        sites[f"tests/{file}::{owner}"] = cover

    for node in tree.body:  # a module's own mark: every test of the file can skip
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            for call in ast.walk(node.value):
                if isinstance(call, ast.Call) and _name(call.func) in HELPERS:
                    check(call, "pytestmark")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) in BARE and file != "conftest.py":
            problems.append(f"{file}:{node.lineno}: a bare pytest.{_name(node.func)}: use conftest's needs or "
                            "skip_unless, which name the cover")
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or file == "conftest.py":
            continue
        for decorator in node.decorator_list:
            call = marks.get(decorator.id) if isinstance(decorator, ast.Name) else decorator
            if isinstance(call, ast.Call) and _name(call.func) in HELPERS:
                check(call, node.name)
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call) and _name(inner.func) == "skip_unless":
                check(inner, node.name)
    return sites, sorted(problems, key=lambda problem: int(problem.split(":")[1]))


def _existing() -> dict[str, set[str]]:
    return {p.name: {n.name for n in ast.parse(p.read_text()).body if isinstance(n, ast.FunctionDef)}
            for p in TESTS.glob("test_*.py")}


def all_sites() -> tuple[dict[str, str], list[str]]:
    existing = _existing()
    sites: dict[str, str] = {}
    problems: list[str] = []
    for path in sorted(TESTS.glob("*.py")):
        found, wrong = skip_sites(path.read_text(), path.name, existing)
        sites |= found
        problems += wrong
    return sites, problems


def test_every_skip_names_what_covers_it():
    sites, problems = all_sites()
    assert problems == []
    assert len(sites) >= 20  # every site of the commit that wrote this test: the walker still finds them


def test_docs_design_lists_every_test_that_can_skip():
    development = (paths.ROOT / "docs" / "design.md").read_text().split("## Development", 1)[1]
    sites, _ = all_sites()
    assert [site for site in sites if f"`{site}`" not in development] == []
    listed = set(re.findall(r"^\| `(tests/test_\w+\.py::\w+)` \|", development.split("### Tests that can skip", 1)[1],
                            re.M))
    assert listed - set(sites) == set(), "docs/design.md lists tests that no longer skip"


def test_the_walker_finds_each_way_to_skip_without_a_cover():
    planted = '''
import pytest
from conftest import needs, skip_unless, requires_real_tofu
later = needs(False, "x", "tests/test_skips.py::test_every_skip_names_what_covers_it")
where = "CI"
pytestmark = [pytest.mark.slow, needs(False, "a GPU", "CI")]

@later
def test_a(): pass

@pytest.mark.skipif(True, reason="bare")
def test_b(): pass

@requires_real_tofu("tests/test_nowhere.py::test_gone")
def test_c(): pass

def test_d(x):
    skip_unless(x, "y", x)
    pytest.skip("bare too")

def test_e():
    skip_unless(False, "z", "something else")
    skip_unless(False, "z", where)
'''
    sites, problems = skip_sites(planted, "test_planted.py", _existing())
    assert set(sites) == {f"tests/test_planted.py::{t}" for t in ("pytestmark", "test_a", "test_c", "test_e")}
    assert [p.split(": ", 1)[0] for p in problems] == ["test_planted.py:11", "test_planted.py:14",
                                                       "test_planted.py:18", "test_planted.py:19",
                                                       "test_planted.py:22"], problems
    assert "does not exist: tests/test_nowhere.py::test_gone" in problems[1]
    assert "not a literal string" in problems[2] and "names no test and not CI" in problems[4]


def test_a_data_dependent_skip_is_listed_as_not_run_and_other_skips_are_not():
    from types import SimpleNamespace

    from conftest import not_run_lines, skip_reason

    data = SimpleNamespace(nodeid="tests/test_x.py::test_real", longrepr=(
        "tests/test_x.py", 3, "Skipped: " + skip_reason("../shared/data/tofu is missing", "CI")))
    other = SimpleNamespace(nodeid="tests/test_x.py::test_other", longrepr=("tests/test_x.py", 9, "Skipped: no GPU"))
    lines = not_run_lines([data, other, data])  # xdist may report a test twice: listed once
    assert len(lines) == 2 and lines[0].startswith("1 tests NOT RUN here for want of data")
    assert lines[1] == "  tests/test_x.py::test_real: ../shared/data/tofu is missing; covered meanwhile by CI"
    assert not_run_lines([other]) == []


def test_tests_guarded_by_needs_carry_the_needs_data_mark():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "needs_data", "-p", "no:cacheprovider",
                          str(TESTS / "test_tofu_data.py")], capture_output=True, text=True, cwd=paths.ROOT).stdout
    marked = {line.split("::")[-1] for line in out.splitlines() if "::" in line}
    assert marked == {"test_real_tofu_splits_load_with_their_documented_sizes", "test_real_tofu_full_is_retain_then_forget",
                      "test_an_author_subset_filters_every_author_split_alike",
                      "test_the_real_tofu_copy_has_no_holdout_and_says_what_to_download"}, out
