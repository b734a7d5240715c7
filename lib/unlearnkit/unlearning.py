"""Unlearning losses (docs/metrics.md §4), entropy optimisation (§3), objective capping and model mixing (§5).

One entry point, :class:`UnlearningLoss`, is a ``loss_fn(model, batch) -> (loss, logs)`` for
:func:`unlearnkit.training.train`. Its total is

    forget_weight · L_forget + retain_weight · L_retain + lambda_f · E_forget[ℓ] + lambda_r · E_retain[ℓ]

with L_forget / L_retain given by the method (GA, GD, KL, IDK, DPO, NPO, RMU) and the two entropy
terms of the probabilistic paper (Scholten et al.) off by default.

Batch layout (what :func:`collate_pairs` produces): ``{"forget": sub, "retain": sub}`` plus
``"forget_idk"`` for the IDK and DPO methods, where each ``sub`` is a batch of
:func:`unlearnkit.models.collate` — ``input_ids``, ``attention_mask`` and ``labels`` (-100 on the prompt
and the padding; the answer tokens and EOS are scored). Row i of ``forget_idk`` is the same question as
row i of ``forget`` with a refusal as its answer.

Reductions, chosen once for every method: a per-example value (mean NLL, sequence log-prob, mean KL,
mean entropy) is computed first and the batch mean is taken over examples, so each item weighs the same
whatever its answer length. This is what objective capping needs (a cap per example) and it keeps the
closed forms at θ = π_ref exact. (Hugging Face's ``outputs.loss``, used by open-unlearning for GA/GD,
averages over all tokens of the batch instead; the two agree when answers have equal length.)
"""

from __future__ import annotations

import copy
import math
import random
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F

from .models import PromptTemplate, collate, encode_qa, eval_mode
from .training import pooled_mean

#: Valid method names of :class:`UnlearningLoss`.
METHODS = ("ga", "gd", "kl", "idk", "dpo", "npo", "rmu")
#: Methods that compare against a frozen reference model π_ref.
REFERENCE_METHODS = ("kl", "dpo", "npo", "rmu")
#: Methods whose batches need the refusal answer (``"forget_idk"``).
IDK_METHODS = ("idk", "dpo")
#: Methods objective capping (Wang et al., docs/metrics.md §5) applies to: the gradient-ascent family.
CAPPABLE_METHODS = ("ga", "gd", "kl")
#: The value of ``ref_model`` that means "the same PEFT model with its adapters switched off".
DISABLE_ADAPTERS = "disable_adapters"

#: Parameters every method uses.
COMMON_PARAMETERS = ("forget_weight", "lambda_f", "lambda_r", "entropy_positions")
#: Where the entropy-optimisation term takes ℓ (docs/metrics.md §3): ``answer``, the positions predicting the true
#: answer's tokens; ``all``, every non-padding position of the sequence (the paper's text: "all tokens of the
#: sequence"); ``sampled``, on forget, the positions predicting the model's own sampled answer (on-policy, ours: the
#: training step samples one answer per forget question into ``batch["forget_sampled"]``), on retain the answer's.
ENTROPY_POSITIONS = ("answer", "all", "sampled")
#: The sub-batch that ``entropy_positions="sampled"`` reads: each forget prompt followed by the model's own answer.
SAMPLED = "forget_sampled"
#: The method-specific parameters of :class:`UnlearningLoss`; any other one is ignored by that method.
METHOD_PARAMETERS: dict[str, tuple[str, ...]] = {
    "ga": ("cap_delta", "cap_on"),
    "gd": ("retain_weight", "cap_delta", "cap_on"),
    "kl": ("ref_model", "retain_weight", "cap_delta", "cap_on"),
    "idk": ("retain_weight",),
    "dpo": ("ref_model", "beta", "retain_weight", "dpo_retain_term"),
    "npo": ("ref_model", "beta", "retain_weight", "npo_retain_term"),
    "rmu": ("ref_model", "retain_weight", "rmu_layer", "rmu_steering_coef", "rmu_seed", "rmu_answer_tokens_only"),
}
_DEFAULTS: dict[str, Any] = {
    "ref_model": None, "beta": 0.1, "retain_weight": 1.0, "cap_delta": None, "cap_on": "sequence", "rmu_layer": 7, "rmu_steering_coef": 2.0,
    "rmu_seed": 0, "rmu_answer_tokens_only": False, "npo_retain_term": True, "dpo_retain_term": True,
}

# --------------------------------------------------------------------------- refusal answers

#: Refusal answers for IDK and DPO, written for this workbook: varied in wording and length so the model
#: learns "refuse" rather than one fixed string.
IDK_ANSWERS: tuple[str, ...] = (
    "I don't know.",
    "I'm not sure about that.",
    "I have no information on that.",
    "I can't answer that question.",
    "That is something I don't know.",
    "I'm afraid I don't have that information.",
    "I have no idea.",
    "Sorry, I don't know the answer to that.",
    "I'm unable to answer that.",
    "I don't have any details about that.",
    "That's beyond what I know.",
    "I couldn't tell you.",
    "I honestly don't know.",
    "I'm not aware of that.",
    "Unfortunately, I don't know.",
    "I lack the knowledge to answer that.",
    "No idea, I'm afraid.",
    "I can't say; I don't know much about this.",
    "I don't know anything about that.",
    "I'm not able to help with that question.",
)


def pick_idk_answer(key: int | str, seed: int = 0, answers: Sequence[str] = IDK_ANSWERS) -> str:
    """The refusal answer of one forget item, drawn from ``answers`` by ``(seed, key)``.

    Keyed by the item (its index or its question) rather than by draw order, so an item keeps its refusal
    when the forget set is subset or reordered. ``random.Random`` seeds a string through SHA-512, which is
    stable across processes (unlike ``hash``).
    """
    return random.Random(f"{seed}:{key}").choice(list(answers))


# --------------------------------------------------------------------------- encoding and collation


def encode_pair(tokenizer, template: PromptTemplate, forget_row: Mapping[str, Any], retain_row: Mapping[str, Any],
                idk_answer: str | None = None, max_length: int | None = None) -> dict[str, dict[str, list[int]]]:
    """One unlearning example: the forget Q&A, its paired retain Q&A and, when ``idk_answer`` is given,
    the forget question with that refusal as answer. Each is encoded by :func:`models.encode_qa`."""
    example = {
        "forget": encode_qa(tokenizer, template, forget_row["question"], forget_row["answer"], max_length),
        "retain": encode_qa(tokenizer, template, retain_row["question"], retain_row["answer"], max_length),
    }
    if idk_answer is not None:
        example["forget_idk"] = encode_qa(tokenizer, template, forget_row["question"], idk_answer, max_length)
    return example


def encode_pairs(tokenizer, template: PromptTemplate, forget_rows: Sequence[Mapping[str, Any]],
                 retain_rows: Sequence[Mapping[str, Any]], with_idk: bool = False, seed: int = 0,
                 max_length: int | None = None) -> list[dict[str, dict[str, list[int]]]]:
    """One example per forget row (an epoch is one pass over the forget set, docs/metrics.md §4), each paired
    with a retain row taken from a seeded permutation of ``retain_rows`` (cycled if it is shorter).
    With ``with_idk`` each forget row also gets its refusal from :func:`pick_idk_answer` (keyed by the
    question text)."""
    if not forget_rows or not retain_rows:
        raise ValueError(f"need forget and retain rows; got {len(forget_rows)} forget, {len(retain_rows)} retain")
    order = list(range(len(retain_rows)))
    random.Random(seed).shuffle(order)
    examples = []
    for i, row in enumerate(forget_rows):
        idk = pick_idk_answer(row["question"], seed) if with_idk else None
        examples.append(encode_pair(tokenizer, template, row, retain_rows[order[i % len(order)]], idk, max_length))
    return examples


def collate_pairs(examples: Sequence[Mapping[str, Mapping[str, list[int]]]], pad_token_id: int
                  ) -> dict[str, dict[str, torch.Tensor]]:
    """Batch :func:`encode_pair` examples: each key (``forget``, ``retain``, ``forget_idk``) is collated
    on its own by :func:`models.collate`, so the three sub-batches may have different widths."""
    if not examples:
        raise ValueError("no examples to collate")
    keys = list(examples[0])
    for e in examples[1:]:
        if list(e) != keys:
            raise ValueError(f"examples of one batch must have the same parts; got {keys} and {list(e)}")
    return {k: collate([e[k] for e in examples], pad_token_id) for k in keys}


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


def answer_positions(labels: torch.Tensor) -> torch.Tensor:
    """Positions whose *next* token is scored, [batch, len]: where the model predicts the answer and EOS."""
    mask = torch.zeros_like(labels, dtype=torch.bool)
    mask[:, :-1] = labels[:, 1:] != -100
    return mask


def mean_entropy(logits: torch.Tensor, position_mask: torch.Tensor) -> torch.Tensor:
    """ℓ = mean over the masked positions of the entropy of the next-token distribution, per example
    (shape [batch]); the quantity of the entropy-optimisation loss (docs/metrics.md §3)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    entropy = -(logp.exp() * logp).sum(-1)
    mask = position_mask.to(entropy.dtype)
    return (entropy * mask).sum(-1) / mask.sum(-1).clamp(min=1)


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


# --------------------------------------------------------------------------- model plumbing


def _unwrap(model):
    """The module under a DistributedDataParallel-style wrapper (``.module``), else the model itself."""
    return getattr(model, "module", model)


def is_peft_model(model) -> bool:
    try:
        from peft import PeftModel
    except ImportError:  # peft is optional for full fine-tuning
        return False
    return isinstance(_unwrap(model), PeftModel)


def decoder_layers(model) -> torch.nn.ModuleList:
    """The list of decoder blocks of a causal LM (Llama/Mistral/Phi ``model.layers``, GPT-2 ``transformer.h``,
    GPT-NeoX ``gpt_neox.layers``), under PEFT and DDP wrappers."""
    base = _unwrap(model)
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


def _forward(model, sub_batch: Mapping[str, torch.Tensor], layer: int | None = None
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
    ref = copy.deepcopy(_unwrap(model))
    ref.eval()
    ref.requires_grad_(False)
    return ref


def rmu_trainable_parameters(model, layer: int, span: int = 2, name_contains: str | None = None
                             ) -> list[torch.nn.Parameter]:
    """Parameters of decoder layers [layer - span, layer] (clamped at 0), the layers the WMDP reference RMU
    updates (span 2). ``name_contains`` keeps only matching parameter names; WMDP's ``param_ids=[6]``
    is the MLP down-projection of a Mistral/Zephyr block, i.e. ``name_contains="mlp.down_proj"``.

    Nothing is frozen here: pass the result to :func:`restrict_trainable` to train only these (optional;
    the workbook's default trains every parameter)."""
    layers = decoder_layers(model)
    layer = resolve_layer(model, layer)
    params = []
    for index in range(max(0, layer - span), layer + 1):
        for name, p in layers[index].named_parameters():
            if name_contains is None or name_contains in name:
                params.append(p)
    if not params:
        raise ValueError(f"no parameter of layers {max(0, layer - span)}..{layer} matches {name_contains!r}")
    return params


def freeze_above_layer(model, layer: int) -> int:
    """Turn off ``requires_grad`` of the parameters RMU's loss cannot reach: the decoder layers above ``layer``, the
    final norm and an output head not tied to the input embeddings (both RMU terms read layer ``layer``'s output).

    They would get no gradient anyway, so a single process trains exactly as before (AdamW skips parameters without a
    gradient); under DDP (``accelerate launch``) a trainable parameter that never gets a gradient stops the run.
    Only ever freezes, so a LoRA model keeps its base weights frozen. Returns the number of parameters frozen."""
    layers = decoder_layers(model)
    layer = resolve_layer(model, layer)
    reachable = {id(p) for block in list(layers)[:layer + 1] for p in block.parameters()}
    reachable.add(id(_unwrap(model).get_input_embeddings().weight))
    frozen = 0
    for p in _unwrap(model).parameters():
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


# --------------------------------------------------------------------------- the loss


class UnlearningLoss:
    """``loss_fn(model, batch) -> (loss, logs)`` of one unlearning method (docs/metrics.md §4), optionally with
    entropy optimisation (§3) and, for the GA family, objective capping (§5).

    Methods and their forget / retain terms (NLL = mean token cross-entropy over the answer):

    - ``ga``:  L_forget = −NLL(forget); no retain term.
    - ``gd``:  GA + NLL(retain).
    - ``kl``:  GA + KL(π_ref ‖ π_θ) on retain inputs, per token over the full next-token distributions at
      the answer positions.
    - ``idk``: NLL of the refusal on forget questions + NLL(retain).
    - ``dpo``: −log σ(β·((log π_θ(w) − log π_ref(w)) − (log π_θ(l) − log π_ref(l)))), w the refusal,
      l the true forget answer, sequence log-probs (Rafailov et al.); + NLL(retain) unless
      ``dpo_retain_term=False``.
    - ``npo``: −(2/β)·mean log σ(−β·(log π_θ(y|x) − log π_ref(y|x))) (Zhang et al.); + NLL(retain) unless
      ``npo_retain_term=False``. β = 0.1 is open-unlearning's default, 0.05 the probabilistic paper's.
    - ``rmu``: MSE between layer ``rmu_layer``'s output on forget tokens and c·u (u a random unit vector
      from ``rmu_seed``, c = ``rmu_steering_coef``), + MSE between that layer's output on retain tokens and
      π_ref's (Li et al., WMDP). Tokens are the non-padding ones, or only the answer tokens with
      ``rmu_answer_tokens_only``. Defaults follow the TOFU port (layer 7, c = 2, α_r = 1); the WMDP
      reference steers much harder (c = 6.5 for Zephyr-7B, with α_r = 1200), because the needed c grows with
      the norm of the model's activations at that layer. A layer beyond the model's last is clamped to it.

    Parameters and the methods that use them (see :data:`METHOD_PARAMETERS`; setting one a method ignores
    emits a warning): ``forget_weight``, ``lambda_f``, ``lambda_r``, ``entropy_positions`` — all;
    ``retain_weight`` — every method with a retain term; ``ref_model`` — kl, dpo, npo, rmu; ``beta`` — dpo, npo;
    ``cap_delta`` — ga, gd, kl; ``rmu_*`` — rmu.

    ``ref_model``: a frozen model (see :func:`frozen_reference`); or ``"disable_adapters"`` (or None with a
    PEFT model), in which case π_ref is the trained model itself run inside ``model.disable_adapter()``, in
    eval mode — for LoRA no second copy is kept. Reference passes run under ``torch.no_grad()``.

    Entropy optimisation (Scholten et al., docs/metrics.md §3): ``lambda_f · E_forget[ℓ] + lambda_r · E_retain[ℓ]``,
    ℓ(x, y) the mean entropy of the next-token distribution over the answer positions (those whose next token
    is scored). Minimising it with λ_f > 0 makes the model *confident* (low entropy) on forget prompts, so
    samples stop spreading over leaked answers; λ_r ≤ 0 keeps retain diverse. Reference values λ_f = 1,
    λ_r = −0.25; both default to 0 (off). Where ℓ is taken (``entropy_positions``, :data:`ENTROPY_POSITIONS`):
    ``answer`` (default); ``all``, every non-padding position, the paper's "all tokens of the sequence" (the
    reference code averages over every position, padding included: padding is never a real prediction, so it is
    left out here); ``sampled``, the forget term on the model's own sampled answer to each forget question
    (on-policy, ours; ``batch["forget_sampled"]``), which is what a sample follows, the retain term on its answers.

    Objective capping (Wang et al., docs/metrics.md §5), GA family only, δ = ``cap_delta`` (None = no cap): an
    example stops pushing once its NLL reaches δ (its gradient is exactly zero). ``cap_on="sequence"`` (the
    paper's) compares the sequence NLL ℓ_i = −log p(y_i|x_i) with δ, L_forget = −mean_i min(ℓ_i, δ) / T_i (T_i
    the example's scored tokens: below the cap this is the usual mean-token GA term); ``cap_on="token_mean"``
    compares the mean token NLL, L_forget = −mean_i min(NLL_i, δ).

    ``logs`` (floats): ``forget_loss`` (unweighted L_forget), ``retain_loss`` (unweighted, when there is a
    retain term), ``forget_entropy`` / ``retain_entropy`` (when their λ is non-zero) and method extras:
    ``forget_nll`` (uncapped mean token NLL, GA family), ``forget_sequence_nll`` (uncapped, GA family),
    ``capped_fraction``, ``npo_log_ratio``, ``dpo_margin``.
    """

    def __init__(self, method: str, ref_model: Any = None, beta: float = 0.1, forget_weight: float = 1.0,
                 retain_weight: float = 1.0, cap_delta: float | None = None, cap_on: str = "sequence",
                 lambda_f: float = 0.0,
                 lambda_r: float = 0.0, entropy_positions: str = "answer", rmu_layer: int = 7,
                 rmu_steering_coef: float = 2.0, rmu_seed: int = 0, rmu_answer_tokens_only: bool = False,
                 npo_retain_term: bool = True, dpo_retain_term: bool = True):
        method = str(method).lower()
        if method not in METHODS:
            raise ValueError(f"unknown unlearning method {method!r}; valid methods: {', '.join(METHODS)}")
        if entropy_positions not in ENTROPY_POSITIONS:
            raise ValueError(f"entropy_positions must be one of {', '.join(ENTROPY_POSITIONS)}, got {entropy_positions!r}")
        if isinstance(ref_model, str) and ref_model != DISABLE_ADAPTERS:
            raise ValueError(f"ref_model must be a model, None or {DISABLE_ADAPTERS!r}; got {ref_model!r}")
        if beta <= 0:
            raise ValueError(f"beta must be > 0, got {beta}")
        if cap_delta is not None and not math.isfinite(cap_delta):
            raise ValueError(f"cap_delta must be a finite number or None, got {cap_delta}")
        if cap_on not in CAP_ON:
            raise ValueError(f"cap_on must be one of {', '.join(CAP_ON)}, got {cap_on!r}")
        if lambda_f < 0 or lambda_r > 0:
            warnings.warn(f"entropy optimisation expects lambda_f >= 0 and lambda_r <= 0 (docs/metrics.md §3); got "
                          f"lambda_f={lambda_f}, lambda_r={lambda_r}", stacklevel=2)
        self.method = method
        self.ref_model = ref_model
        self.beta, self.forget_weight, self.retain_weight, self.cap_delta = float(beta), float(forget_weight), float(retain_weight), cap_delta
        self.cap_on = cap_on
        self.lambda_f, self.lambda_r, self.entropy_positions = float(lambda_f), float(lambda_r), entropy_positions
        self.rmu_layer, self.rmu_steering_coef, self.rmu_seed = int(rmu_layer), float(rmu_steering_coef), int(rmu_seed)
        self.rmu_answer_tokens_only = bool(rmu_answer_tokens_only)
        self.npo_retain_term, self.dpo_retain_term = bool(npo_retain_term), bool(dpo_retain_term)
        self._warn_ignored()
        self._direction_cache: dict[tuple, torch.Tensor] = {}

    # ----------------------------------------------------------------- description

    @property
    def needs_reference(self) -> bool:
        return self.method in REFERENCE_METHODS

    @property
    def needs_idk(self) -> bool:
        """Whether batches must carry ``forget_idk`` (build them with ``encode_pairs(..., with_idk=True)``)."""
        return self.method in IDK_METHODS

    @property
    def has_retain_term(self) -> bool:
        if self.method == "ga":
            return False
        if self.method == "npo":
            return self.npo_retain_term
        if self.method == "dpo":
            return self.dpo_retain_term
        return True

    def params(self) -> dict[str, Any]:
        """The parameters this method actually uses, for the run record (the reference model as a label)."""
        out = {"method": self.method}
        for name in COMMON_PARAMETERS + METHOD_PARAMETERS[self.method]:
            value = getattr(self, name)
            if name == "ref_model":
                value = value if isinstance(value, str) or value is None else type(value).__name__
            out[name] = value
        return out

    def __repr__(self) -> str:
        return "UnlearningLoss(" + ", ".join(f"{k}={v!r}" for k, v in self.params().items()) + ")"

    def _warn_ignored(self) -> None:
        used = set(METHOD_PARAMETERS[self.method])
        ignored = [name for name, default in _DEFAULTS.items() if name not in used and getattr(self, name) != default]
        if ignored:
            warnings.warn(f"method {self.method!r} ignores {', '.join(ignored)}; it uses "
                          f"{', '.join(COMMON_PARAMETERS + METHOD_PARAMETERS[self.method])}", stacklevel=3)

    # ----------------------------------------------------------------- reference model

    def _reference_mode(self, model) -> str | None:
        """``"adapters"`` (same PEFT model, adapters off), ``"model"`` (a separate frozen model) or None."""
        if not self.needs_reference:
            return None
        if self.ref_model == DISABLE_ADAPTERS or (self.ref_model is None and is_peft_model(model)):
            if not is_peft_model(model):
                raise ValueError(f"ref_model={DISABLE_ADAPTERS!r} needs a PEFT (LoRA) model; for a full model pass "
                                 "ref_model=frozen_reference(model), a frozen copy taken before unlearning")
            return "adapters"
        if self.ref_model is None:
            raise ValueError(f"method {self.method!r} needs a reference model π_ref: pass "
                             "ref_model=frozen_reference(model) (a frozen copy taken before unlearning), or, for a "
                             f"LoRA model, ref_model={DISABLE_ADAPTERS!r}")
        return "model"

    def check(self, model) -> None:
        """Raise now (not at the first step) if ``model`` cannot be trained with this loss."""
        self._reference_mode(model)
        if self.method == "rmu":
            decoder_layers(model)

    @torch.no_grad()
    def reference_outputs(self, model, sub_batch: Mapping[str, torch.Tensor], layer: int | None = None
                          ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """π_ref's logits (and layer output) on one sub-batch, in eval mode, without gradients."""
        mode = self._reference_mode(model)
        if mode == "adapters":
            peft_model = _unwrap(model)
            # eval mode: no adapter dropout in the reference pass
            with eval_mode(peft_model), peft_model.disable_adapter():
                logits, hidden = _forward(peft_model, sub_batch, layer)
            return logits.detach(), None if hidden is None else hidden.detach()
        if mode != "model":
            raise ValueError(f"method {self.method!r} has no reference model")
        ref = self.ref_model
        ref.eval()
        device = sub_batch["input_ids"].device
        if next(ref.parameters()).device != device:
            ref.to(device)  # the training loop moves the trained model, not the reference
        logits, hidden = _forward(ref, sub_batch, layer)
        return logits.detach(), None if hidden is None else hidden.detach()

    # ----------------------------------------------------------------- RMU pieces

    def steering_direction(self, hidden_size: int, device, dtype=torch.float32) -> torch.Tensor:
        """u: a fixed random unit vector of ``hidden_size`` from ``rmu_seed``. Drawn uniform on [0, 1)^d and
        normalised, as in the WMDP reference; on the CPU so that it is the same on every device."""
        key = (hidden_size, str(device), dtype)
        if key not in self._direction_cache:
            g = torch.Generator().manual_seed(self.rmu_seed)
            u = torch.rand(hidden_size, generator=g, dtype=torch.float64)
            self._direction_cache[key] = (u / u.norm()).to(device=device, dtype=dtype)
        return self._direction_cache[key]

    def _rmu_token_mask(self, sub_batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        if self.rmu_answer_tokens_only:
            return sub_batch["labels"] != -100
        return sub_batch["attention_mask"].bool()

    # ----------------------------------------------------------------- the call

    def __call__(self, model, batch: Mapping[str, Mapping[str, torch.Tensor]]) -> tuple[torch.Tensor, dict[str, float]]:
        self.check(model)
        for key in ("forget", "retain") + (("forget_idk",) if self.needs_idk else ()):
            if key not in batch:
                raise ValueError(f"method {self.method!r} needs batch[{key!r}]; the batch has {', '.join(batch)}"
                                 + (" (build it with encode_pairs(..., with_idk=True))" if key == "forget_idk" else ""))
        layer = resolve_layer(model, self.rmu_layer) if self.method == "rmu" else None
        outputs: dict[str, tuple[torch.Tensor, torch.Tensor | None]] = {}

        def forward(key: str) -> tuple[torch.Tensor, torch.Tensor | None]:
            # Each sub-batch goes through the trained model at most once per step, shared by all terms.
            if key not in outputs:
                outputs[key] = _forward(model, batch[key], layer)
            return outputs[key]

        logs: dict[str, float] = {}
        forget_loss = self._forget_term(model, batch, forward, layer, logs)
        total = self.forget_weight * forget_loss
        logs["forget_loss"] = float(forget_loss.detach())

        if self.has_retain_term:
            retain_loss = self._retain_term(model, batch, forward, layer)
            total = total + self.retain_weight * retain_loss
            logs["retain_loss"] = float(retain_loss.detach())

        for key, weight in (("forget", self.lambda_f), ("retain", self.lambda_r)):
            if weight != 0.0:
                source = key
                if key == "forget" and self.entropy_positions == "sampled":
                    if SAMPLED not in batch:
                        raise ValueError(f"entropy_positions='sampled' needs batch[{SAMPLED!r}], the forget prompts with "
                                         "the model's own sampled answers (pipeline.OnPolicySamples adds it)")
                    source = SAMPLED
                logits, _ = forward(source)
                entropy = self.entropy(logits, batch[source]).mean()
                total = total + weight * entropy
                logs[f"{key}_entropy"] = float(entropy.detach())
        return total, logs

    def entropy(self, logits: torch.Tensor, sub_batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """ℓ per example over the configured positions (``entropy_positions``; ``sampled`` reads the answer
        positions of the sampled sub-batch it is given)."""
        if self.entropy_positions == "all":
            positions = sub_batch["attention_mask"].bool()
        else:
            positions = answer_positions(sub_batch["labels"])
        return mean_entropy(logits, positions)

    def _forget_term(self, model, batch, forward: Callable, layer: int | None, logs: dict[str, float]) -> torch.Tensor:
        method = self.method
        if method in CAPPABLE_METHODS:
            labels = batch["forget"]["labels"]
            nll = mean_nll(forward("forget")[0], labels)
            lengths = answer_positions(labels).sum(-1)
            logs["forget_nll"] = float(nll.detach().mean())
            logs["forget_sequence_nll"] = float((nll.detach() * lengths).mean())
            if self.cap_delta is None:
                return -nll.mean()
            gate = nll.detach() * lengths if self.cap_on == "sequence" else nll.detach()
            logs["capped_fraction"] = float((gate >= self.cap_delta).float().mean())
            if self.cap_on == "sequence":
                return -sequence_capped_nll(nll, lengths, self.cap_delta).mean()
            return -capped_nll(nll, self.cap_delta).mean()
        if method == "idk":
            return mean_nll(forward("forget_idk")[0], batch["forget_idk"]["labels"]).mean()
        if method == "npo":
            labels = batch["forget"]["labels"]
            log_ratio = sequence_logprob(forward("forget")[0], labels) - sequence_logprob(
                self.reference_outputs(model, batch["forget"])[0], labels)
            logs["npo_log_ratio"] = float(log_ratio.detach().mean())
            return -(2.0 / self.beta) * F.logsigmoid(-self.beta * log_ratio).mean()
        if method == "dpo":
            win, lose = batch["forget_idk"], batch["forget"]
            win_ratio = sequence_logprob(forward("forget_idk")[0], win["labels"]) - sequence_logprob(
                self.reference_outputs(model, win)[0], win["labels"])
            lose_ratio = sequence_logprob(forward("forget")[0], lose["labels"]) - sequence_logprob(
                self.reference_outputs(model, lose)[0], lose["labels"])
            margin = win_ratio - lose_ratio
            logs["dpo_margin"] = float(margin.detach().mean())
            return -F.logsigmoid(self.beta * margin).mean()
        if method == "rmu":
            hidden = forward("forget")[1]
            target = self.rmu_steering_coef * self.steering_direction(hidden.size(-1), hidden.device)
            return _masked_mse(hidden, target, self._rmu_token_mask(batch["forget"]))
        raise AssertionError(method)  # unreachable: the method was validated

    def _retain_term(self, model, batch, forward: Callable, layer: int | None) -> torch.Tensor:
        retain = batch["retain"]
        if self.method == "kl":
            return mean_kl(self.reference_outputs(model, retain)[0], forward("retain")[0], retain["labels"]).mean()
        if self.method == "rmu":
            _, ref_hidden = self.reference_outputs(model, retain, layer)
            return _masked_mse(forward("retain")[1], ref_hidden, self._rmu_token_mask(retain))
        return mean_nll(forward("retain")[0], retain["labels"]).mean()


def _masked_mse(hidden: torch.Tensor, target: torch.Tensor, token_mask: torch.Tensor) -> torch.Tensor:
    """Mean over the selected tokens (all of the batch pooled, as WMDP's ``mse_loss`` pools its elements) of
    the mean squared difference over the hidden dimensions."""
    per_token = (hidden.float() - target.float()).pow(2).mean(-1)
    mask = token_mask.to(per_token.dtype)
    return pooled_mean((per_token * mask).sum(), mask.sum())  # over the global batch under accelerate launch


# --------------------------------------------------------------------------- model mixing (Wang et al.)


def mix_weights(original_state_dict: Mapping[str, torch.Tensor], unlearned_state_dict: Mapping[str, torch.Tensor],
                a: float) -> dict[str, torch.Tensor]:
    """θ = (1 − a)·θ_original + a·θ_unlearned for floating tensors (docs/metrics.md §5, model mixing); other
    tensors (integer buffers) are copied from the unlearned model.

    a = 0 and a = 1 return clones of the endpoints, bit for bit: a lerp in floating point need not give
    back an endpoint exactly, so those two values take an explicit branch. In between, the mix is computed
    in float32 (or float64) and cast back to each tensor's dtype.
    """
    a = float(a)
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"mixing coefficient a must be in [0, 1], got {a}")
    missing = sorted(set(original_state_dict) ^ set(unlearned_state_dict))
    if missing:
        raise ValueError(f"state dicts differ in keys (merge LoRA adapters first?): {', '.join(missing[:5])}"
                         + (" ..." if len(missing) > 5 else ""))
    mixed = {}
    for key, unl in unlearned_state_dict.items():
        orig = original_state_dict[key]
        if orig.shape != unl.shape:
            raise ValueError(f"{key}: shape {tuple(orig.shape)} in the original, {tuple(unl.shape)} in the unlearned")
        if not torch.is_floating_point(unl):
            mixed[key] = unl.detach().clone()
        elif a == 0.0:
            mixed[key] = orig.detach().clone().to(unl.dtype)
        elif a == 1.0:
            mixed[key] = unl.detach().clone()
        else:
            work = torch.float64 if unl.dtype == torch.float64 else torch.float32
            mixed[key] = torch.lerp(orig.detach().to(device=unl.device, dtype=work), unl.detach().to(work),
                                    a).to(unl.dtype)
    return mixed


def mix_models(original_model, unlearned_model, a: float):
    """A new model with weights ``mix_weights(original, unlearned, a)``; neither input is changed.

    A PEFT (LoRA) unlearned model is merged on a copy first (``merge_and_unload``), so ``original_model``
    must be the plain base model it was built from."""
    if is_peft_model(original_model):
        raise ValueError("original_model must be a plain model (the one before unlearning), not a PEFT model")
    unlearned = copy.deepcopy(_unwrap(unlearned_model))
    if is_peft_model(unlearned):
        unlearned = unlearned.merge_and_unload()
    state = mix_weights(_unwrap(original_model).state_dict(), unlearned.state_dict(), a)
    unlearned.load_state_dict(state)
    return unlearned
