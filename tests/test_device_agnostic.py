"""The tests compare tensors on one device (issue #61): tests/devices.py is the only place that may call a torch
comparison or ``.numpy()``; everything else goes through it, so ``make test`` passes on a CUDA machine where training
leaves models, and generation and scoring their outputs, on the GPU.

What the walk flags, outside tests/devices.py, in every tests/*.py:

- a call of ``torch.equal``, ``torch.allclose``, ``torch.isclose``, ``torch.testing.assert_close`` or
  ``torch.testing.assert_allclose``, however it is spelled: through ``torch`` or an alias of it or of
  ``torch.testing``, or as a name imported from them (``from torch.testing import assert_close as ac``);
- the tensor methods ``.equal(...)``, ``.allclose(...)`` and ``.isclose(...)`` on any receiver but the modules ``math``,
  ``np`` and ``numpy`` (NumPy arrays have no such methods and pandas spells its own ``.equals``);
- ``.numpy()`` on any receiver, inside a comparison or not (only tensors have it, and on a CUDA tensor it raises; the
  helper's ``numpy`` reads any device), so no ``np.allclose`` or ``==`` can be fed one.

What it does not flag, and why: ``.tolist()`` (it copies to the host itself, so ``==`` on it reads the same on any
device), and NumPy's or pandas' comparisons of arrays and frames (host objects). A ``==`` between two tensors on
different devices cannot be told from one between arrays without types: none is written that way in tests/, and a
review keeps it so."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
HELPER = TESTS / "devices.py"
COMPARISONS = frozenset({"equal", "allclose", "isclose"})
TESTING = frozenset({"assert_close", "assert_allclose"})
METHODS = frozenset({"equal", "allclose", "isclose"})
#: Modules whose functions of those names compare host values (``math.isclose``, ``np.isclose``), not tensor methods.
HOST_MODULES = frozenset({"math", "np", "numpy"})


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` of a chain of names and attributes, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def bare_comparisons(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for each comparison of tensors in ``source`` that does not go through tests/devices.py."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}  # a local name -> the torch name it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "torch" or a.name.startswith("torch."):
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and (node.module == "torch"
                                                                 or node.module.startswith("torch.")):
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    flagged = {f"torch.{n}" for n in COMPARISONS} | {f"torch.testing.{n}" for n in TESTING}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        dotted = _dotted(node.func)
        if dotted is not None:
            head, _, rest = dotted.partition(".")
            full = aliases.get(head, head if head == "torch" else None)
            if full is not None and ".".join(filter(None, [full, rest])) in flagged:
                yield node.lineno, ast.unparse(node.func)
                continue
        if isinstance(node.func, ast.Attribute):
            if node.func.attr == "numpy" and not node.args and not node.keywords:
                yield node.lineno, ".numpy()"
            elif node.func.attr in METHODS and (dotted is None or dotted.split(".")[0] not in HOST_MODULES):
                yield node.lineno, f".{node.func.attr}()"


PLANTED = """
import numpy as np
import pandas as pd
import torch
import torch as T
import torch.testing as tt
from torch import allclose as near
from torch.testing import assert_close
from devices import close, numpy, same

torch.equal(a, b)                                   # 10
torch.allclose(a, b, atol=1e-6)                     # 11
torch.testing.assert_close(a, b)                    # 12
T.equal(a, b)                                       # 13
tt.assert_close(a, b)                               # 14
near(a, b)                                          # 15
assert_close(a, b)                                  # 16
a.equal(b)                                          # 17
model(x).logits.allclose(y)                         # 18
np.allclose(nll.numpy(), expected)                  # 19
assert out.detach().numpy() == pytest.approx(1.0)   # 20
torch.isclose(a, b).all()                           # 21
torch.testing.assert_allclose(a, b)                 # 22
same(a, b) and close(a, b, atol=1e-6)               # 23: the helper
np.allclose(numpy(nll), expected)                   # 24: the helper
assert result.leak.tolist() == [[1, 0]]             # 25: .tolist() copies to the host
pd.Series([1]).equals(pd.Series([1]))               # 26: pandas
np.isclose(x, y).all() and math.isclose(1.0, 1.0)    # 27: NumPy, math
np.testing.assert_allclose(x, y)                    # 28: NumPy
torch.tensor([1]).to_numpy                          # 29: not a call
"""


def test_the_walk_finds_every_spelling_of_a_bare_comparison_and_nothing_else():
    found = dict(bare_comparisons(PLANTED.lstrip("\n")))
    assert sorted(found) == list(range(10, 23)), found
    assert found[19] == found[20] == ".numpy()" and found[17] == ".equal()" and found[16] == "assert_close"


def _test_files() -> Iterator[Path]:
    yield from (p for p in sorted(TESTS.glob("*.py")) if p != HELPER)


def test_no_test_compares_tensors_outside_the_helper():
    bare = [f"{path.name}:{line}: {what}" for path in _test_files()
            for line, what in bare_comparisons(path.read_text())]
    # this file's own planted source is a string, not code: the walk does not read into strings
    assert not bare, ("tensor comparisons outside tests/devices.py (use devices.same / close / assert_close / numpy, "
                      "which bring both sides to one device):\n  " + "\n  ".join(bare))


def test_the_helper_compares_on_one_device():
    import torch
    from devices import assert_close, close, numpy, one_device, same

    a, b = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-6])
    assert same(a, a.clone()) and not same(a, b) and close(a, b) and not close(a, b, atol=0, rtol=0)
    assert_close(a, b)
    assert numpy(a.requires_grad_()).tolist() == [1.0, 2.0]
    left, right = one_device(a, 3)  # a tensor comes to the CPU, detached; anything else stays as it is
    assert left.device.type == "cpu" and not left.requires_grad and right == 3
