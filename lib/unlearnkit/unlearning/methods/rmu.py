"""RMU, representation misdirection (Li et al., WMDP; docs/metrics.md §4): MSE between layer ``rmu_layer``'s output on
forget tokens and c·u (u a random unit vector from ``rmu_seed``, c = ``rmu_steering_coef``), + MSE between that
layer's output on retain tokens and π_ref's. Tokens are the non-padding ones, or only the answer tokens with
``rmu_answer_tokens_only``; each MSE is a mean over the selected tokens of the whole batch (pooled, as WMDP's
``mse_loss``) of the mean squared difference over the hidden dimensions. Defaults follow the TOFU port (layer 7,
c = 2, α_r = 1); the WMDP reference steers much harder (c = 6.5 for Zephyr-7B, with α_r = 1200), because the needed c
grows with the norm of the model's activations at that layer. A layer beyond the model's last is clamped to it.

open-unlearning: ``src/trainer/unlearn/rmu.py``."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from ...training import pooled_mean
from ..registry import Method, Option, declared, flag, register
from ..shared import decoder_layers, resolve_layer


def steering_direction(loss, hidden_size: int, device, tensor_dtype=torch.float32) -> torch.Tensor:
    """u: a fixed random unit vector of ``hidden_size`` from the loss's ``rmu_seed``. Drawn uniform on [0, 1)^d and
    normalised, as in the WMDP reference; on the CPU so that it is the same on every device (kept in
    ``loss.cache``)."""
    key = ("rmu_direction", hidden_size, str(device), tensor_dtype)
    if key not in loss.cache:
        g = torch.Generator().manual_seed(loss.rmu_seed)
        u = torch.rand(hidden_size, generator=g, dtype=torch.float64)
        loss.cache[key] = (u / u.norm()).to(device=device, dtype=tensor_dtype)
    return loss.cache[key]


def _token_mask(step, sub_batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
    if step.option("rmu_answer_tokens_only"):
        return sub_batch["labels"] != -100
    return sub_batch["attention_mask"].bool()


def _masked_mse(hidden: torch.Tensor, target: torch.Tensor, token_mask: torch.Tensor) -> torch.Tensor:
    """Mean over the selected tokens (all of the batch pooled, as WMDP's ``mse_loss`` pools its elements) of
    the mean squared difference over the hidden dimensions."""
    per_token = (hidden.float() - target.float()).pow(2).mean(-1)
    mask = token_mask.to(per_token.dtype)
    return pooled_mean((per_token * mask).sum(), mask.sum())  # over the global batch under accelerate launch


def steer(step) -> torch.Tensor:
    hidden = step.hidden("forget")
    target = step.option("rmu_steering_coef") * steering_direction(step.loss, hidden.size(-1), hidden.device)
    return _masked_mse(hidden, target, _token_mask(step, step.batch["forget"]))


def keep_representation(step) -> torch.Tensor:
    retain = step.batch["retain"]
    _, ref_hidden = step.reference("retain", step.layer)
    return _masked_mse(step.hidden("retain"), ref_hidden, _token_mask(step, retain))


def _has_layers(loss, model) -> None:
    decoder_layers(model)


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


RMU = register(Method(
    name="rmu",
    paper="Li et al. 2024 (WMDP)",
    summary="MSE(h_l(forget), c·u) + α·MSE(h_l(retain), h_l^ref(retain))",
    forget=steer,
    retain=keep_representation,
    parameters=("ref_model", "retain_weight", "rmu_layer", "rmu_steering_coef", "rmu_seed", "rmu_answer_tokens_only"),
    options=(declared("rmu_layer"), declared("rmu_steering_coef"),
             Option("rmu_seed", 0, int, doc="seed of the steering direction u"),
             flag("rmu_answer_tokens_only", False, "steer only the answer tokens (else every non-padding token)")),
    needs_reference=True,
    layer_parameter="rmu_layer",
    check=_has_layers,
    retain_reference=("retain",),
    source="src/trainer/unlearn/rmu.py",
))
