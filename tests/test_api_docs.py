"""docs/api.md's examples run: every ```python block of the page, in order, in one namespace (a block may use the
names of the blocks before it), as a reader would paste them. A block that raises fails the test, naming its line."""

from __future__ import annotations

import re

import pytest
from unlearnkit import paths

PAGE = paths.ROOT / "docs" / "api.md"
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)

# Decoding and training a tiny model is a chain of very small matmuls: one intra-op thread (conftest).
pytestmark = pytest.mark.usefixtures("tiny_model_threads")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number of the opening fence, code) of every ```python block of ``text``."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def test_python_blocks_are_found():
    text = "a\n```python\nx = 1\n```\nb\n```\nnot python\n```\n```python\ny = x\n```\n"
    assert python_blocks(text) == [(2, "x = 1\n"), (9, "y = x\n")]


def test_every_section_has_an_example():
    text = PAGE.read_text(encoding="utf-8")
    blocks = python_blocks(text)
    assert text.count("```python") == len(blocks), "a ```python fence the test would not run (unclosed?)"
    sections = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    for section in sections:
        title = section.splitlines()[0]
        if title != "What still needs a profile":
            assert "```python" in section, f"section {title!r} of docs/api.md has no example"


def test_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # whatever an example writes lands here, not in the checkout
    namespace: dict = {"__name__": "__api_docs__"}
    for line, code in python_blocks(PAGE.read_text(encoding="utf-8")):
        compiled = compile(code, f"docs/api.md, block at line {line}", "exec")
        try:
            exec(compiled, namespace)  # noqa: S102  (the project's own documentation)
        except Exception as exc:  # noqa: BLE001
            pytest.fail(f"the example at docs/api.md line {line} raised {type(exc).__name__}: {exc}")


#: A call the page's prose names (`models.load_model(folder_or_hub_name)`): the function's dotted path below
#: unlearnkit and its arguments as written.
_PROSE_CALL = re.compile(r"`(?:unlearnkit\.)?((?:[a-z_]+\.)+[A-Za-z_]+)\(([^`]*)\)`")


def prose_calls(text: str) -> list[tuple[int, str, str]]:
    """(line, dotted name, arguments) of every call written in the page's prose, outside its code blocks."""
    prose = _BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return [(prose.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)) for m in _PROSE_CALL.finditer(prose)]


def test_the_prose_signatures_bind_to_the_functions():
    """Issue #60 point 8: the code blocks run (test_examples_run), but the prose gave
    `models.load_model(folder_or_hub_name)`, which raises TypeError (dtype and template are required). Each call the
    prose writes must bind to the function's signature: its positional arguments and keywords as written."""
    import importlib
    import inspect

    calls = prose_calls(PAGE.read_text(encoding="utf-8"))
    assert any(name == "models.load_model" for _, name, _ in calls)
    wrong = []
    for line, name, arguments in calls:
        module_path, _, attr = ("unlearnkit." + name).rpartition(".")
        function = getattr(importlib.import_module(module_path), attr)
        args = [a.strip() for a in re.split(r",(?![^(]*\))", arguments) if a.strip()]
        positional = [a for a in args if "=" not in a.split("(")[0]]
        keywords = {a.split("=", 1)[0].strip(): None for a in args if "=" in a.split("(")[0]}
        try:
            inspect.signature(function).bind(*positional, **keywords)
        except TypeError as exc:
            wrong.append(f"docs/api.md:{line}: {name}({arguments}): {exc}")
    assert wrong == []
