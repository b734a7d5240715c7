"""The one way the tests compare tensors: both sides brought to one device first (issue #61).

On a CUDA machine training leaves a model's weights, and generation and scoring their outputs, on the GPU, while a
test's expected values are made on the CPU; ``torch.equal`` of the two raises "Expected all tensors to be on the same
device", and ``.numpy()`` of a CUDA tensor raises too. Every tensor comparison of the tests goes through this module
(tests/test_device_agnostic.py walks tests/ and fails on one that does not), so ``make test`` reads the same on a CPU
and on a GPU. The comparisons are made on the CPU: exact there whatever device computed the values.

Imported by the test files like tests/method_checks.py (``from devices import same, close``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def one_device(a: Any, b: Any) -> tuple[Any, Any]:
    """``a`` and ``b`` on the CPU where they are tensors (detached; anything else as it is): one device for both."""
    return _host(a), _host(b)


def _host(x: Any) -> Any:
    return x.detach().cpu() if isinstance(x, torch.Tensor) else x


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``torch.equal`` on one device: the same shape and the same values, bit for bit."""
    a, b = one_device(a, b)
    return torch.equal(a, b)


def close(a: torch.Tensor, b: torch.Tensor, **tolerance: float) -> bool:
    """``torch.allclose`` on one device (``rtol``, ``atol`` as there)."""
    a, b = one_device(a, b)
    return torch.allclose(a, b, **tolerance)


def assert_close(a: torch.Tensor, b: torch.Tensor, **tolerance: Any) -> None:
    """``torch.testing.assert_close`` on one device (its keywords), with its message on a mismatch."""
    a, b = one_device(a, b)
    torch.testing.assert_close(a, b, **tolerance)


def numpy(x: torch.Tensor) -> np.ndarray:
    """A tensor's values as a NumPy array, from whichever device holds it (``.numpy()`` of a CUDA tensor raises)."""
    return _host(x).numpy()
