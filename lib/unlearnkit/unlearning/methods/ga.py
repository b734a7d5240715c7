"""GA, gradient ascent (docs/metrics.md §4): L_forget = −NLL(forget), the batch mean of each forget example's mean
token NLL; no retain term. Objective capping (Wang et al., §5) applies: see :func:`..shared.ascent`.

open-unlearning: ``src/trainer/unlearn/grad_ascent.py`` (``-outputs.loss``, a mean over all answer tokens of the batch
where this is a mean over examples; the two agree when answers have equal length)."""

from __future__ import annotations

from ..registry import Method, register
from ..shared import ascent

GA = register(Method(
    name="ga",
    paper="TOFU (Maini et al. 2024)",
    summary="−NLL(forget)",
    forget=ascent,
    parameters=("cap_delta", "cap_on"),
    cappable=True,
    source="src/trainer/unlearn/grad_ascent.py",
))
