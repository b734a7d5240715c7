"""Unlearning losses (docs/metrics.md §4), entropy optimisation (§3), objective capping and model mixing (§5).

One entry point, :class:`UnlearningLoss`, is a ``loss_fn(model, batch) -> (loss, logs)`` for
:func:`unlearnkit.training.train`. Its total is

    forget_weight · L_forget + retain_weight · L_retain + lambda_f · E_forget[ℓ] + lambda_r · E_retain[ℓ]

with L_forget / L_retain given by the method and the two entropy terms of the probabilistic paper (Scholten et al.)
off by default. Each method is one module of :mod:`.methods` registering a :class:`~.registry.Method` (its terms, its
parameters, whether it needs a reference model, the extra batch parts it needs, whether capping applies); the
constants below are read off that registry.

- :mod:`.shared`: per-example quantities (sequence log-prob, mean NLL, mean KL, mean entropy), capping, the common
  terms and the model plumbing (decoder layers, the frozen reference);
- :mod:`.data`: refusal and alternate answers, encoding and collation of the batches (layout: :mod:`.data`);
- :mod:`.registry`: :class:`~.registry.Method`, :class:`~.registry.Option`, the registry;
- :mod:`.loss`: :class:`UnlearningLoss`, what every method shares;
- :mod:`.mixing`: model mixing.

Reductions: the workbook's methods compute a per-example value (mean NLL, sequence log-prob, mean KL, mean entropy)
and take the batch mean over examples, so each item weighs the same whatever its answer length. This is what
objective capping needs (a cap per example) and it keeps the closed forms at θ = π_ref exact. (Hugging Face's
``outputs.loss``, used by open-unlearning for GA/GD, averages over all tokens of the batch instead; the two agree when
answers have equal length.) open-unlearning's token-weighted methods (WGA, SatImp, CE-U, UNDIAL) pool over the answer
tokens of the batch as it does; each method's module says which.
"""

from __future__ import annotations

from ..models import answer_positions, mean_entropy  # the model station's, named here too
from . import methods  # registers every method
from .data import (
    BATCH_PARTS,
    IDK_ANSWERS,
    collate_pairs,
    encode_pair,
    encode_pairs,
    pick_alternate,
    pick_idk_answer,
)
from .loss import COMMON_PARAMETERS, ENTROPY_POSITIONS, SAMPLED, Step, UnlearningLoss
from .methods.altpo import alternate_prompt
from .methods.rmu import rmu_trainable_parameters
from .methods.undial import UNDIAL_POSITIONS
from .mixing import mix_models, mix_weights
from .registry import OPTIONS, REGISTRY, Method, Option, method_spec, method_table, register, step_parts
from .shared import (
    CAP_ON,
    DISABLE_ADAPTERS,
    capped_nll,
    decoder_layers,
    forward_pass,
    freeze_above_layer,
    frozen_reference,
    is_peft_model,
    mean_kl,
    mean_nll,
    resolve_layer,
    restrict_trainable,
    sequence_capped_nll,
    sequence_logprob,
    token_nll,
    unwrap_model,
)

#: Valid method names of :class:`UnlearningLoss`, in the order they are registered.
METHODS: tuple[str, ...] = tuple(REGISTRY)
#: The method-specific parameters of :class:`UnlearningLoss`; any other one is ignored by that method.
METHOD_PARAMETERS: dict[str, tuple[str, ...]] = {name: m.parameters for name, m in REGISTRY.items()}
#: Methods that compare against a frozen reference model π_ref.
REFERENCE_METHODS: tuple[str, ...] = tuple(name for name, m in REGISTRY.items() if m.needs_reference)
#: Methods whose batches need the refusal answer (``"forget_idk"``).
IDK_METHODS: tuple[str, ...] = tuple(name for name, m in REGISTRY.items() if "forget_idk" in m.batch_parts)
#: Methods objective capping (Wang et al., docs/metrics.md §5) applies to: the gradient-ascent family.
CAPPABLE_METHODS: tuple[str, ...] = tuple(name for name, m in REGISTRY.items() if m.cappable)

__all__ = [
    "BATCH_PARTS", "CAPPABLE_METHODS", "CAP_ON", "COMMON_PARAMETERS", "DISABLE_ADAPTERS", "ENTROPY_POSITIONS",
    "IDK_ANSWERS", "IDK_METHODS", "METHODS", "METHOD_PARAMETERS", "Method", "OPTIONS", "Option", "REFERENCE_METHODS",
    "REGISTRY", "SAMPLED", "Step", "UNDIAL_POSITIONS", "UnlearningLoss", "alternate_prompt", "answer_positions",
    "capped_nll", "collate_pairs", "decoder_layers", "encode_pair", "encode_pairs", "freeze_above_layer",
    "frozen_reference", "is_peft_model", "mean_entropy", "mean_kl", "mean_nll", "method_spec", "method_table",
    "mix_models",
    "mix_weights", "pick_alternate", "pick_idk_answer", "register", "resolve_layer", "restrict_trainable",
    "rmu_trainable_parameters", "sequence_capped_nll", "sequence_logprob", "step_parts", "token_nll",
    "forward_pass", "unwrap_model", "methods",
]
