"""A notebook holds its parameters once: after ``params = config.notebook_params(globals())`` every cell reads
``params.<key>``, never the bare global of a profile key that the parameters cell declares (the two could disagree:
the cell's default value against the profile's or the runner's). A notebook's own parameters (``method`` of notebook
02, ``eval_model`` of the evaluation notebook) are not profile keys: the cell is their only source."""

from __future__ import annotations

import ast
import json

import pytest
from unlearnkit import config, runner

NOTEBOOKS = runner.all_source_notebooks()
PARAMS_LINE = "config.notebook_params(globals())"


def _code_cells(path):
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def _source(cell) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def bare_reads(path) -> list[str]:
    """``cell:line name`` for every read of a declared profile key after the params line."""
    cells = _code_cells(path)
    declared = set()
    for cell in cells:
        if "parameters" in cell["metadata"].get("tags", []):
            declared |= {t.id for node in ast.parse(_source(cell)).body if isinstance(node, ast.Assign)
                         for t in node.targets if isinstance(t, ast.Name)}
    keys = declared & set(config.PARAMETER_NAMES)
    found, after = [], False
    for i, cell in enumerate(cells):
        source = _source(cell)
        if "parameters" in cell["metadata"].get("tags", []):
            continue
        first = 0
        if not after:
            if PARAMS_LINE not in source:
                continue
            after = True
            first = next(n for n, line in enumerate(source.splitlines(), 1) if PARAMS_LINE in line)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Name) and node.id in keys and node.lineno > first:
                found.append(f"code cell {i}, line {node.lineno}: {node.id}")
    assert after, f"{path.name} has no line {PARAMS_LINE!r}"
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_after_the_params_line_a_notebook_reads_params_only(path):
    assert bare_reads(path) == [], f"{path.name} reads a parameter beside params (use params.<key>)"


def test_the_ast_check_finds_a_bare_read(tmp_path):
    nb = json.loads(runner.find_notebook("05").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and PARAMS_LINE in c["source"]][0]
    code["source"] += "\nprint(alpha)"
    (tmp_path / "05.ipynb").write_text(json.dumps(nb))
    assert bare_reads(tmp_path / "05.ipynb") == [f"code cell 2, line {code['source'].count(chr(10)) + 1}: alpha"]


def test_notebook_params_take_the_keys_the_run_set_even_when_they_equal_the_default():
    defaults = config.load_profile("default")
    smoke = config.Params.load("smoke")
    assert smoke.sample_max_items != defaults["sample_max_items"]
    as_cell = {"profile": "smoke", "sample_max_items": defaults["sample_max_items"]}
    assert config.notebook_params(as_cell).sample_max_items == smoke.sample_max_items  # the cell's untouched default
    named = {**as_cell, config.KEYS_SET: ["sample_max_items"]}
    assert config.notebook_params(named).sample_max_items == defaults["sample_max_items"]  # set, so it wins
    for bad in ("sample_max_items", ["no_such_key"], ["profile"], ["alpha"]):  # alpha: named but given no value
        with pytest.raises(ValueError, match=config.KEYS_SET):
            config.notebook_params({**as_cell, config.KEYS_SET: bad})


def test_the_runner_names_the_keys_it_set_and_another_seed():
    notebook = runner.find_notebook("05")
    plain = runner.injected_parameters(notebook, config.Params.load("smoke"))
    assert config.KEYS_SET not in plain  # a run of the profile as it is names nothing
    params = config.Params.load("smoke", sample_max_items=40, seed=3)
    injected = runner.injected_parameters(notebook, params, changed=["sample_max_items"])
    assert injected[config.KEYS_SET] == ["sample_max_items", "seed"] and injected["sample_max_items"] == 40
    namespace = {**json.loads(json.dumps(injected))}
    assert config.notebook_params(namespace) == params
