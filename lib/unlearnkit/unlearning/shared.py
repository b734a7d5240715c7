"""What the unlearning methods share: per-example quantities of a batch (docs/metrics.md §1, §3, §4), objective
capping (§5), the common terms (the retain NLL, gradient ascent with its cap) and the plumbing between a loss and a
model (its decoder layers, a forward pass recording one layer's output, the frozen reference).

A sub-batch is what :func:`unlearnkit.models.collate` makes: ``input_ids``, ``attention_mask`` and ``labels`` (-100
on the prompt and the padding; the answer tokens and EOS are scored). The position predicting token t+1 is "an answer
position" when token t+1 is scored (:func:`unlearnkit.models.answer_positions`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F

from ..models import answer_positions
from ..training import pooled_mean

#: A term's argument: the training step it is computed in (:class:`.loss.Step`; not imported here, since the
#: loss imports this module).
Step = Any

#: The value of ``ref_model`` that means "the same PEFT model with its adapters switched off".
DISABLE_ADAPTERS = "disable_adapters"


# --------------------------------------------------------------------------- per-example quantities


def _token_logprobs(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """log π(label_{t+1} | x_{≤t}) at every position [batch, len-1] (0 where unscored) and the mask of
    scored positions. Logits are upcast to float32 as in :func:`metrics.tofu.answer_nll`."""
    shifted_logits = logits[:, :-1].float()
    targets = labels[:, 1:]
    mask = targets != -100
    # cross_entropy avoids materialising a second [batch, len, vocab] tensor of log-probs.
    nll = F.cross_entropy(shifted_logits.reshape(-1, shifted_logits.size(-1)), targets.reshape(-1),
                          ignore_index=-100, reduction="none").view_as(targets)
    return -nll * mask, mask


def sequence_logprob(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """log π(y|x) = sum over scored tokens of the token log-probs, per example (shape [batch]).
    The sequence log-prob of NPO and DPO (docs/metrics.md §4)."""
    logp, _ = _token_logprobs(logits, labels)
    return logp.sum(-1)


def mean_nll(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean token cross-entropy over the scored tokens, per example (shape [batch]); docs/metrics.md §1/§4.
    An example with no scored token (cut off by ``max_length``) gets 0."""
    logp, mask = _token_logprobs(logits, labels)
    return -logp.sum(-1) / mask.sum(-1).clamp(min=1)


def mean_kl(ref_logits: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """KL(π_ref ‖ π_θ) of the full next-token distributions, averaged over the positions predicting a
    scored token, per example (shape [batch])."""
    mask = answer_positions(labels).to(torch.float32)
    ref_logp = torch.log_softmax(ref_logits.float(), dim=-1)
    logp = torch.log_softmax(logits.float(), dim=-1)
    kl = (ref_logp.exp() * (ref_logp - logp)).sum(-1)
    return (kl * mask).sum(-1) / mask.sum(-1).clamp(min=1)


#: What objective capping compares with δ: the sequence NLL −log p(y|x) (Wang et al.) or the mean token NLL.
CAP_ON = ("sequence", "token_mean")


def sequence_capped_nll(nll: torch.Tensor, lengths: torch.Tensor, delta: float | None) -> torch.Tensor:
    """min(ℓ_i, δ) / T_i per example, ℓ_i = T_i · NLL_i the sequence NLL −log p(y_i|x_i) over its T_i scored tokens
    (objective capping as Wang et al. define it, docs/metrics.md §5). Below δ it equals the mean token NLL, whose
    gradient GA follows, so a cap no example reaches leaves the run exactly as without one; an example whose
    sequence NLL reaches δ contributes the constant δ / T_i and its gradient is exactly zero."""
    if delta is None:
        return nll
    lengths = lengths.to(nll.dtype).clamp(min=1)
    sequence = nll * lengths
    return torch.where(sequence < delta, sequence, torch.full_like(sequence, float(delta))) / lengths


def capped_nll(nll: torch.Tensor, delta: float | None) -> torch.Tensor:
    """min(NLL_i, δ) per example (objective capping, Wang et al., docs/metrics.md §5). A capped example
    contributes the constant δ, so its gradient is exactly zero (``torch.where``, not ``clamp``, so that
    an example sitting exactly at δ counts as capped too)."""
    if delta is None:
        return nll
    return torch.where(nll < delta, nll, torch.full_like(nll, float(delta)))



def token_nll(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """−log π(label_{t+1} | x_{≤t}) at every position [batch, len-1] (0 where unscored) and the mask of scored
    positions: the per-token cross-entropy that WGA and SatImp weight."""
    logp, mask = _token_logprobs(logits, labels)
    return -logp, mask


def masked_pooled_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mean of ``values`` over the masked entries of the whole batch, pooled (open-unlearning's token means);
    under ``accelerate launch`` over the global batch (:func:`training.pooled_mean`)."""
    mask = mask.to(values.dtype)
    return pooled_mean((values * mask).sum(), mask.sum())


# --------------------------------------------------------------------------- terms several methods use


def retain_nll(step: Step) -> torch.Tensor:
    """L_retain = NLL(retain), the batch mean of each retain example's mean token NLL (per example: open-unlearning
    takes ``outputs.loss``, a mean over all tokens of the batch; equal when answers have equal length)."""
    return mean_nll(step.logits("retain"), step.batch["retain"]["labels"]).mean()


def ascent(step: Step) -> torch.Tensor:
    """L_forget = −NLL(forget), gradient ascent, with objective capping (Wang et al., docs/metrics.md §5) when
    ``cap_delta`` is set: ``cap_on="sequence"`` −mean_i min(ℓ_i, δ) / T_i on the sequence NLL ℓ_i, ``token_mean``
    −mean_i min(NLL_i, δ). Logs the uncapped ``forget_nll`` and ``forget_sequence_nll`` and, with a cap,
    ``capped_fraction``."""
    labels = step.batch["forget"]["labels"]
    nll = mean_nll(step.logits("forget"), labels)
    lengths = answer_positions(labels).sum(-1)
    delta, cap_on = step.option("cap_delta"), step.option("cap_on")
    step.logs["forget_nll"] = float(nll.detach().mean())
    step.logs["forget_sequence_nll"] = float((nll.detach() * lengths).mean())
    if delta is None:
        return -nll.mean()
    gate = nll.detach() * lengths if cap_on == "sequence" else nll.detach()
    step.logs["capped_fraction"] = float((gate >= delta).float().mean())
    if cap_on == "sequence":
        return -sequence_capped_nll(nll, lengths, delta).mean()
    return -capped_nll(nll, delta).mean()


def log_ratio(step: Step, key: str) -> torch.Tensor:
    """log π_θ(y|x) − log π_ref(y|x) per example of sub-batch ``key``, sequence log-probs (NPO, DPO, AltPO)."""
    labels = step.batch[key]["labels"]
    return sequence_logprob(step.logits(key), labels) - sequence_logprob(step.reference(key)[0], labels)


# --------------------------------------------------------------------------- model plumbing


def unwrap_model(model):
    """The module under a DistributedDataParallel-style wrapper (``.module``), else the model itself."""
    return getattr(model, "module", model)


def is_peft_model(model) -> bool:
    try:
        from peft import PeftModel
    except ImportError:  # peft is optional for full fine-tuning
        return False
    return isinstance(unwrap_model(model), PeftModel)


def decoder_layers(model) -> torch.nn.ModuleList:
    """The list of decoder blocks of a causal LM (Llama/Mistral/Phi ``model.layers``, GPT-2 ``transformer.h``,
    GPT-NeoX ``gpt_neox.layers``), under PEFT and DDP wrappers."""
    base = unwrap_model(model)
    if is_peft_model(base):
        base = base.get_base_model()
    for path in ("model.layers", "transformer.h", "gpt_neox.layers", "model.decoder.layers"):
        obj = base
        for part in path.split("."):
            obj = getattr(obj, part, None)
        if isinstance(obj, torch.nn.ModuleList):
            return obj
    n = getattr(getattr(base, "config", None), "num_hidden_layers", None)
    for module in base.modules():
        if isinstance(module, torch.nn.ModuleList) and n is not None and len(module) == n:
            return module
    raise ValueError(f"cannot find the decoder layers of {type(base).__name__}")


def resolve_layer(model, layer: int) -> int:
    """``layer`` clamped to the model's last decoder layer (the TOFU port's layer 7 on a 2-layer model is 1)."""
    if layer < 0:
        raise ValueError(f"RMU layer must be >= 0, got {layer}")
    return min(layer, len(decoder_layers(model)) - 1)


@contextmanager
def _capture_layer_output(model, layer: int | None):
    """Record the output hidden state of decoder layer ``layer`` during the forward passes inside the block.

    A forward hook gives the block's output itself; ``hidden_states[-1]`` of Hugging Face models would
    instead carry the final norm when ``layer`` is the last one."""
    captured: dict[str, torch.Tensor] = {}
    if layer is None:
        yield captured
        return

    def hook(_module, _inputs, output):
        captured["hidden"] = output[0] if isinstance(output, tuple) else output

    handle = decoder_layers(model)[layer].register_forward_hook(hook)
    try:
        yield captured
    finally:
        handle.remove()


def forward_pass(model, sub_batch: Mapping[str, torch.Tensor], layer: int | None = None
             ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Logits and (if ``layer`` is given) that layer's output hidden states of one sub-batch."""
    with _capture_layer_output(model, layer) as captured:
        out = model(input_ids=sub_batch["input_ids"], attention_mask=sub_batch["attention_mask"], use_cache=False)
    return out.logits, captured.get("hidden")


def frozen_reference(model):
    """π_ref for a full fine-tuning run: a deep copy in eval mode with gradients off.

    For a PEFT (LoRA) model, use ``ref_model="disable_adapters"`` instead: no second copy is needed."""
    if is_peft_model(model):
        raise ValueError("frozen_reference copies a full model; for a PEFT/LoRA model pass "
                         f"ref_model={DISABLE_ADAPTERS!r} to UnlearningLoss instead")
    ref = copy.deepcopy(unwrap_model(model))
    ref.eval()
    ref.requires_grad_(False)
    return ref


def freeze_above_layer(model, layer: int) -> int:
    """Turn off ``requires_grad`` of the parameters RMU's loss cannot reach: the decoder layers above ``layer``, the
    final norm and an output head not tied to the input embeddings (both RMU terms read layer ``layer``'s output).

    They would get no gradient anyway, so a single process trains exactly as before (AdamW skips parameters without a
    gradient); under DDP (``accelerate launch``) a trainable parameter that never gets a gradient stops the run.
    Only ever freezes, so a LoRA model keeps its base weights frozen. Returns the number of parameters frozen."""
    layers = decoder_layers(model)
    layer = resolve_layer(model, layer)
    reachable = {id(p) for block in list(layers)[:layer + 1] for p in block.parameters()}
    reachable.add(id(unwrap_model(model).get_input_embeddings().weight))
    frozen = 0
    for p in unwrap_model(model).parameters():
        if p.requires_grad and id(p) not in reachable:
            p.requires_grad_(False)
            frozen += 1
    return frozen


def restrict_trainable(model, parameters: Sequence[torch.nn.Parameter]) -> int:
    """Set ``requires_grad`` on exactly ``parameters``; the training loop optimises only those.
    Returns the number of trainable elements."""
    keep = {id(p) for p in parameters}
    for p in model.parameters():
        p.requires_grad_(id(p) in keep)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)

