"""LoRA: wrapping a model with peft adapters, and a merged plain copy of it."""

from __future__ import annotations

from collections.abc import Sequence


def apply_lora(model, r: int, lora_alpha: int, dropout: float = 0.0,
               target_modules: str | Sequence[str] | None = ("q_proj", "k_proj", "v_proj", "o_proj")):
    """Wrap ``model`` with LoRA adapters through peft; the base weights stay frozen.

    ``target_modules`` names the adapted modules, or ``"all-linear"`` for every linear layer but the output head
    (what TOFU's LoRA runs adapt), or None for peft's default of the architecture."""
    from peft import LoraConfig, get_peft_model

    if r <= 0:
        raise ValueError(f"LoRA rank must be positive, got {r}")
    targets = target_modules if isinstance(target_modules, str) or target_modules is None else list(target_modules)
    cfg = LoraConfig(r=r, lora_alpha=lora_alpha, lora_dropout=dropout, target_modules=targets or None,
                     task_type="CAUSAL_LM")
    return get_peft_model(model, cfg)


def merged_copy(model):
    """A plain model with the LoRA adapters of ``model`` merged in, ``model`` itself untouched (peft's
    ``merge_and_unload`` removes the adapters in place, which would end a run that keeps weights along the way);
    a plain model is returned as is."""
    import copy

    from peft import PeftModel

    inner = getattr(model, "module", model)
    if not isinstance(inner, PeftModel):
        return inner
    return copy.deepcopy(inner).merge_and_unload()
