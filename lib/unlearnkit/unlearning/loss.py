"""The unlearning loss: one method of the registry (:mod:`.registry`, one module per method under ``methods/``) with
what every method shares — the weights, the frozen reference model, entropy optimisation (docs/metrics.md §3),
objective capping's options (§5), one forward pass per sub-batch and step, the logs and the parameter bookkeeping."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import torch

from ..models import answer_positions, eval_mode, mean_entropy
from .data import BATCH_PARTS
from .registry import OPTIONS, method_spec
from .shared import (
    DISABLE_ADAPTERS,
    forward_pass,
    is_peft_model,
    resolve_layer,
    unwrap_model,
)

#: Parameters every method uses.
COMMON_PARAMETERS = ("forget_weight", "lambda_f", "lambda_r", "entropy_positions")
#: Where the entropy-optimisation term takes ℓ (docs/metrics.md §3): ``answer``, the positions predicting the true
#: answer's tokens; ``all``, every non-padding position of the sequence (the paper's text: "all tokens of the
#: sequence"); ``sampled``, on forget, the positions predicting the model's own sampled answer (on-policy, ours: the
#: training step samples one answer per forget question into ``batch["forget_sampled"]``), on retain the answer's.
ENTROPY_POSITIONS = ("answer", "all", "sampled")
#: The sub-batch that ``entropy_positions="sampled"`` reads: each forget prompt followed by the model's own answer.
SAMPLED = "forget_sampled"


class Step:
    """What the terms of one training step see: the loss (its options, its reference model), the trained model, the
    batch, and the logs they may add to. Each sub-batch goes through the trained model at most once per step (and
    through π_ref at most once), whichever terms read it."""

    def __init__(self, loss: UnlearningLoss, model, batch: Mapping[str, Mapping[str, torch.Tensor]],
                 layer: int | None):
        self.loss, self.model, self.batch, self.layer = loss, model, batch, layer
        self.logs: dict[str, float] = {}
        self._outputs: dict[str, tuple[torch.Tensor, torch.Tensor | None]] = {}
        self._reference: dict[tuple[str, int | None], tuple[torch.Tensor, torch.Tensor | None]] = {}

    def option(self, name: str) -> Any:
        """The value of one of the loss's parameters."""
        return getattr(self.loss, name)

    def forward(self, key: str) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The trained model's logits on sub-batch ``key`` and the output of the method's layer (None without)."""
        if key not in self._outputs:
            self._outputs[key] = forward_pass(self.model, self.batch[key], self.layer)
        return self._outputs[key]

    def logits(self, key: str) -> torch.Tensor:
        return self.forward(key)[0]

    def hidden(self, key: str) -> torch.Tensor:
        hidden = self.forward(key)[1]
        if hidden is None:
            raise ValueError(f"method {self.loss.method!r} reads no layer output")
        return hidden

    def reference(self, key: str, layer: int | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """π_ref's logits (and layer ``layer``'s output) on sub-batch ``key``, without gradients."""
        if (key, layer) not in self._reference:
            self._reference[key, layer] = self.loss.reference_outputs(self.model, self.batch[key], layer)
        return self._reference[key, layer]


class UnlearningLoss:
    """``loss_fn(model, batch) -> (loss, logs)`` of one unlearning method (docs/metrics.md §4), optionally with
    entropy optimisation (§3) and, for the GA family, objective capping (§5). Its total is

        forget_weight · L_forget + retain_weight · L_retain + lambda_f · E_forget[ℓ] + lambda_r · E_retain[ℓ]

    with L_forget / L_retain those of the method (:data:`~unlearnkit.unlearning.METHODS`; each defined in its own
    module of :mod:`unlearnkit.unlearning.methods`, whose docstring gives its formula, reduction and source):
    ``ga``, ``gd``, ``kl``, ``idk``, ``dpo``, ``npo``, ``rmu`` and open-unlearning's ``simnpo``, ``wga``,
    ``satimp``, ``ceu``, ``undial``, ``altpo``.

    Parameters (keyword-only after ``method`` and ``ref_model``): ``forget_weight``, ``lambda_f``, ``lambda_r``,
    ``entropy_positions`` — every method; ``ref_model`` and the method-specific ones (``**options``, declared by the
    registry's :class:`~.registry.Option` s): which method reads which is
    :data:`~unlearnkit.unlearning.METHOD_PARAMETERS` (setting one the method ignores emits a warning; an unknown name
    is a TypeError). ``retain_weight`` — every method with a retain term; ``ref_model`` — the methods that compare
    with π_ref; ``beta`` — npo, dpo, altpo; ``cap_delta``, ``cap_on`` — ga, gd, kl; ``rmu_*``, ``simnpo_*``,
    ``wga_beta``, ``satimp_*``, ``ceu_*``, ``undial_*``, ``altpo_*`` — that method.

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

    Reductions: the workbook's own methods compute a per-example value (mean NLL, sequence log-prob, mean KL) and
    take the batch mean over examples, so each item weighs the same whatever its answer length (what capping needs,
    and it keeps the closed forms at θ = π_ref exact); open-unlearning's token-weighted methods (WGA, SatImp, CE-U,
    UNDIAL) pool over all answer tokens of the batch as it does — each method's docstring says which.

    ``logs`` (floats): ``forget_loss`` (unweighted L_forget), ``retain_loss`` (unweighted, when there is a
    retain term), ``forget_entropy`` / ``retain_entropy`` (when their λ is non-zero) and method extras:
    ``forget_nll`` (uncapped mean token NLL, GA family and SimNPO), ``forget_sequence_nll`` (uncapped, GA family),
    ``capped_fraction``, ``npo_log_ratio``, ``dpo_margin``, ``altpo_margin``.
    """

    def __init__(self, method: str, ref_model: Any = None, *, forget_weight: float, lambda_f: float,
                 lambda_r: float, entropy_positions: str = "answer", **options: Any):
        method = str(method).lower()
        spec = method_spec(method)
        if entropy_positions not in ENTROPY_POSITIONS:
            raise ValueError(f"entropy_positions must be one of {', '.join(ENTROPY_POSITIONS)}, got {entropy_positions!r}")
        if isinstance(ref_model, str) and ref_model != DISABLE_ADAPTERS:
            raise ValueError(f"ref_model must be a model, None or {DISABLE_ADAPTERS!r}; got {ref_model!r}")
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise TypeError(f"UnlearningLoss got unknown parameter(s) {', '.join(unknown)}; its parameters: "
                            f"{', '.join(COMMON_PARAMETERS + tuple(OPTIONS))}")
        values = {name: option.value(options[name]) if name in options else option.default
                  for name, option in OPTIONS.items() if name != "ref_model"}
        if lambda_f < 0 or lambda_r > 0:
            warnings.warn(f"entropy optimisation expects lambda_f >= 0 and lambda_r <= 0 (docs/metrics.md §3); got "
                          f"lambda_f={lambda_f}, lambda_r={lambda_r}", stacklevel=2)
        self.method, self.spec = method, spec
        self.ref_model = ref_model
        self.forget_weight = float(forget_weight)
        self.lambda_f, self.lambda_r, self.entropy_positions = float(lambda_f), float(lambda_r), entropy_positions
        for name, value in values.items():
            setattr(self, name, value)
        self._warn_ignored()
        #: State a method keeps across the steps of this loss (RMU's steering direction).
        self.cache: dict[Any, Any] = {}

    # ----------------------------------------------------------------- description

    @property
    def needs_reference(self) -> bool:
        return self.spec.needs_reference

    @property
    def batch_parts(self) -> tuple[str, ...]:
        """The sub-batches beyond ``forget`` and ``retain`` the batches must carry (:data:`BATCH_PARTS`)."""
        return self.spec.batch_parts

    @property
    def needs_idk(self) -> bool:
        """Whether batches must carry ``forget_idk`` (build them with ``encode_pairs(..., with_idk=True)``)."""
        return "forget_idk" in self.spec.batch_parts

    @property
    def has_retain_term(self) -> bool:
        return self.spec.has_retain_term({p: getattr(self, p) for p in self.spec.parameters})

    def params(self) -> dict[str, Any]:
        """The parameters this method actually uses, for the run record (the reference model as a label)."""
        out = {"method": self.method}
        for name in COMMON_PARAMETERS + self.spec.parameters:
            value = getattr(self, name)
            if name == "ref_model":
                value = value if isinstance(value, str) or value is None else type(value).__name__
            out[name] = value
        return out

    def __repr__(self) -> str:
        return "UnlearningLoss(" + ", ".join(f"{k}={v!r}" for k, v in self.params().items()) + ")"

    def _warn_ignored(self) -> None:
        used = set(self.spec.parameters)
        ignored = [name for name, option in OPTIONS.items()
                   if name not in used and getattr(self, name) != option.default]
        if ignored:
            warnings.warn(f"method {self.method!r} ignores {', '.join(ignored)}; it uses "
                          f"{', '.join(COMMON_PARAMETERS + self.spec.parameters)}", stacklevel=3)

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
        if self.spec.check is not None:
            self.spec.check(self, model)

    @torch.no_grad()
    def reference_outputs(self, model, sub_batch: Mapping[str, torch.Tensor], layer: int | None = None
                          ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """π_ref's logits (and layer output) on one sub-batch, in eval mode, without gradients."""
        mode = self._reference_mode(model)
        if mode == "adapters":
            peft_model = unwrap_model(model)
            # eval mode: no adapter dropout in the reference pass
            with eval_mode(peft_model), peft_model.disable_adapter():
                logits, hidden = forward_pass(peft_model, sub_batch, layer)
            return logits.detach(), None if hidden is None else hidden.detach()
        if mode != "model":
            raise ValueError(f"method {self.method!r} has no reference model")
        ref = self.ref_model
        ref.eval()
        device = sub_batch["input_ids"].device
        if next(ref.parameters()).device != device:
            ref.to(device)  # the training loop moves the trained model, not the reference
        logits, hidden = forward_pass(ref, sub_batch, layer)
        return logits.detach(), None if hidden is None else hidden.detach()

    def steering_direction(self, hidden_size: int, device, tensor_dtype=torch.float32) -> torch.Tensor:
        """RMU's u (:func:`unlearnkit.unlearning.methods.rmu.steering_direction`) for this loss's ``rmu_seed``, as
        a tensor of ``tensor_dtype``."""
        from .methods.rmu import steering_direction

        return steering_direction(self, hidden_size, device, tensor_dtype)

    # ----------------------------------------------------------------- the call

    def __call__(self, model, batch: Mapping[str, Mapping[str, torch.Tensor]]) -> tuple[torch.Tensor, dict[str, float]]:
        self.check(model)
        for key in ("forget", "retain", *self.spec.batch_parts):
            if key not in batch:
                how = f" ({BATCH_PARTS[key]})" if key in BATCH_PARTS else ""
                raise ValueError(f"method {self.method!r} needs batch[{key!r}]; the batch has {', '.join(batch)}{how}")
        layer = None
        if self.spec.layer_parameter is not None:
            layer = resolve_layer(model, getattr(self, self.spec.layer_parameter))
        step = Step(self, model, batch, layer)
        logs = step.logs

        forget_loss = self.spec.forget(step)
        total = self.forget_weight * forget_loss
        logs["forget_loss"] = float(forget_loss.detach())

        if self.has_retain_term:
            retain_loss = self.spec.retain(step)
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
                entropy = self.entropy(step.logits(source), batch[source]).mean()
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
