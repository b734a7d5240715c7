"""GD, gradient difference (docs/metrics.md §4): GA on forget + NLL(retain) (per-example means, see
:func:`..shared.retain_nll`). Objective capping applies to its forget term.

open-unlearning: ``src/trainer/unlearn/grad_diff.py`` (its ``alpha`` is ``retain_weight``, its ``gamma``
``forget_weight``)."""

from __future__ import annotations

from ..registry import Method, register
from ..shared import ascent, retain_nll

GD = register(Method(
    name="gd",
    paper="TOFU (Maini et al. 2024)",
    summary="−NLL(forget) + α·NLL(retain)",
    forget=ascent,
    retain=retain_nll,
    parameters=("retain_weight", "cap_delta", "cap_on"),
    cappable=True,
    source="src/trainer/unlearn/grad_diff.py",
))
