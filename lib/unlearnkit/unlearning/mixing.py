"""Model mixing (Wang et al., docs/metrics.md §5): θ = (1 − a)·θ_original + a·θ_unlearned."""

from __future__ import annotations

import copy
from collections.abc import Mapping

import torch

from .shared import is_peft_model, unwrap_model


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
    unlearned = copy.deepcopy(unwrap_model(unlearned_model))
    if is_peft_model(unlearned):
        unlearned = unlearned.merge_and_unload()
    state = mix_weights(unwrap_model(original_model).state_dict(), unlearned.state_dict(), a)
    unlearned.load_state_dict(state)
    return unlearned
