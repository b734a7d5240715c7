"""AltPO, alternate preference optimisation (Mekala et al., COLING 2025): DPO with an alternate answer — wrong but
plausible, ``batch["forget_alt"]`` — preferred over the true forget answer,

    L_forget = −(2/β)·mean_i log σ(β·((log π_θ(a_i|x_i) − log π_ref(a_i|x_i)) − (log π_θ(y_i|x_i) − log π_ref(y_i|x_i)))),

a_i the alternate, y_i the true answer, sequence log-probs, mean over examples (open-unlearning's reduction too),
+ α·NLL(retain). It is open-unlearning's DPO trainer on the alternate data set, so it takes that trainer's scale
2/β (the workbook's ``dpo`` keeps Rafailov et al.'s, without it) and no further term: neither open-unlearning nor the
authors' code adds an NLL on the alternate to this loss (their ``subnpo`` variant is another method). β is the
profile's ``beta``, the same inverse temperature of the log-ratio margin as NPO's and DPO's (open-unlearning's grid
for AltPO: 0.05, 0.1, 0.5; α: 1, 2, 5). Logs ``altpo_margin``, the mean margin.

Alternate answers (``pipeline.altpo_alternates``): a corpus that ships ``<forget split>_alternates`` (the synthetic
one: five per question) gives them; otherwise (real TOFU) they are sampled from the target model as open-unlearning's
``community/methods/AltPO/generate.py`` does — the question and its true answer put to the model with an instruction
to change the answer's facts (:func:`alternate_prompt`), ``altpo_n_alternates`` samples (5) at temperature
``altpo_temperature`` (1.0) — and cached beside the run. Each forget item then takes one of its alternates, chosen by
``(seed, question)`` (:func:`..data.pick_alternate`): an epoch stays one pass over the forget set, as for every other
method, where open-unlearning's data set holds one row per (question, alternate), so that its epoch is
``altpo_n_alternates`` passes, one per alternate.

open-unlearning: ``src/trainer/unlearn/dpo.py`` (win = alternate, lose = original), ``compute_dpo_loss`` in
``src/trainer/utils.py``, ``community/methods/AltPO/``."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..registry import Method, declared, register
from ..shared import log_ratio, retain_nll

#: How an alternate answer is asked of the target model (the workbook's own wording): the question and its true
#: answer, then the request for another answer to the question with other facts, as plausible.
ALTERNATE_INSTRUCTION = ("Write a different answer to this question: just as plausible and in the same style, but with "
                         "every fact the answer gives changed, and nothing the question itself says changed.")


def alternate_prompt(question: str, answer: str) -> str:
    """The text put to the target model (through its prompt template, as a question) to sample alternates of
    ``answer``."""
    return f"{question}\nAnswer: {answer}\n{ALTERNATE_INSTRUCTION}"


def alternate_preference(step) -> torch.Tensor:
    beta = step.option("beta")
    margin = log_ratio(step, "forget_alt") - log_ratio(step, "forget")
    step.logs["altpo_margin"] = float(margin.detach().mean())
    return -(2.0 / beta) * F.logsigmoid(beta * margin).mean()


ALTPO = register(Method(
    name="altpo",
    paper="Mekala et al. 2024",
    summary="−(2/β)·log σ(β·(ratio(alternate) − ratio(answer))) + α·NLL(retain)",
    forget=alternate_preference,
    retain=retain_nll,
    parameters=("ref_model", "beta", "retain_weight", "altpo_n_alternates", "altpo_temperature"),
    options=(declared("altpo_n_alternates"), declared("altpo_temperature")),
    needs_reference=True,
    batch_parts=("forget_alt",),
    forget_reads=("forget_alt", "forget"),
    forget_reference=("forget_alt", "forget"),
    source="src/trainer/unlearn/dpo.py on community/methods/AltPO's alternates",
))
