"""Every numbered notebook has one "by hand" cell (issue #62): a code cell tagged ``by-hand``, after a markdown cell that
says what it computes, that recomputes one of the chapter's quantities on the run's own data with numpy, scipy, torch,
math or pandas and checks it against the library with an assert. It may import one name from unlearnkit, the library
call it compares with; everything else it computes itself."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[01][0-9]_*.ipynb"))
TAG = "by-hand"
#: The modules a by-hand cell may import (and their submodules: scipy.stats, torch.nn.functional).
#: safetensors and pathlib only find and read a stored model's weights, the run's own data (notebook 08 reads one
#: weight with them, from a single file or a large model's shards).
ALLOWED = {"numpy", "scipy", "torch", "math", "pandas", "safetensors", "pathlib"}


def _source(cell) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def _by_hand_cells(path: Path) -> list[tuple[int, dict]]:
    cells = json.loads(path.read_text())["cells"]
    return [(i, c) for i, c in enumerate(cells) if c["cell_type"] == "code" and TAG in c["metadata"].get("tags", [])]


def test_every_numbered_notebook_is_checked():
    assert [p.name[:2] for p in NOTEBOOKS] == [f"{i:02d}" for i in range(11)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_one_by_hand_cell_with_plain_imports_ending_in_an_assert(path):
    found = _by_hand_cells(path)
    assert len(found) == 1, f"{path.name}: {len(found)} code cells tagged {TAG!r}, want exactly one"
    index, cell = found[0]
    cells = json.loads(path.read_text())["cells"]
    assert index > 0 and cells[index - 1]["cell_type"] == "markdown", f"{path.name}: no markdown cell says what it computes"
    tree = ast.parse(_source(cell))
    library = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots = {alias.name.split(".")[0] for alias in node.names}
            assert roots <= ALLOWED, f"{path.name}: the by-hand cell imports {sorted(roots - ALLOWED)}"
        elif isinstance(node, ast.ImportFrom):
            root = (node.module or "").split(".")[0]
            if root == "unlearnkit":
                library += [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                assert node.level == 0 and root in ALLOWED, f"{path.name}: the by-hand cell imports from {node.module!r}"
    # at most the one library call it compares with
    assert len(library) <= 1, f"{path.name}: the by-hand cell imports {library} from unlearnkit, one at most"
    assert tree.body and isinstance(tree.body[-1], ast.Assert), f"{path.name}: the by-hand cell does not end with an assert"


def test_the_check_finds_a_stray_import_and_a_missing_assert(tmp_path):
    nb = json.loads(NOTEBOOKS[1].read_text())
    index, cell = _by_hand_cells(NOTEBOOKS[1])[0]
    for extra in ("\nimport sklearn", "\nfrom unlearnkit import pipeline, runs", "\nprint('done')"):
        nb["cells"][index] = {**cell, "source": _source(cell) + extra}
        path = tmp_path / NOTEBOOKS[1].name
        path.write_text(json.dumps(nb))
        with pytest.raises(AssertionError):
            test_one_by_hand_cell_with_plain_imports_ending_in_an_assert(path)
