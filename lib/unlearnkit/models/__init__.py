"""Models: load by Hub name or local folder, or build a tiny Llama from scratch; prompt templates; LoRA; where a
model runs (device, CPU threads) and the eval-mode switch every scorer uses.

Every model, whatever its origin, is saved with ``save_pretrained`` next to an ``unlearnkit.json``
naming its prompt template (and the hash of what made it), so each later step treats it like any
Hugging Face model.

The modules, one job each: :mod:`.templates` (prompt templates), :mod:`.sources` (where a model comes from, what
was stated for it, the check before a run), :mod:`.folder` (what a received folder holds, checked without loading
it), :mod:`.scratch` (tokenizer, tiny Llama and stand-ins built from
scratch), :mod:`.loading`, :mod:`.running` (device, eval mode, CPU threads), :mod:`.saving`, :mod:`.weights` (the
weights' digest), :mod:`.lora` and :mod:`.encoding` (Q&A as token ids and batches).
"""

from __future__ import annotations

from .encoding import (
    ANSWER_TOKENS,
    PACKED_ROW_TOKENS,
    answer_positions,
    collate,
    encode_prompt,
    encode_qa,
    mean_entropy,
    pack,
    packs_sequences,
    pad_token_id,
)
from .folder import folder_problems, safetensors_header
from .loading import (
    LoadedModel,
    load_model,
)
from .lora import (
    apply_lora,
    merged_copy,
)
from .running import (
    ONE_THREAD_BELOW_PARAMETERS,
    card_bytes,
    cpu_threads,
    device_of,
    eval_mode,
    in_eval_mode,
    threads_for,
    to_available_device,
)
from .saving import (
    is_loadable,
    is_saved_model,
    save_model,
    save_plain_model,
)
from .scratch import (
    SPECIAL_TOKENS,
    STAND_IN_CONFIGS,
    TinyLlamaConfig,
    build_stand_in,
    build_tiny_llama,
    train_bpe_tokenizer,
)
from .sources import (
    ADAPTER_CONFIG,
    STATED_REVISIONS_VARIABLE,
    STATED_TEMPLATES_VARIABLE,
    adapter_base,
    check_source,
    source_of,
    state,
    stated,
    stated_revision,
    stated_template,
)
from .templates import (
    CHAT,
    TEMPLATES,
    PromptTemplate,
    chat_template,
    conversation_template,
    get_template,
    template_for,
)
from .weights import (
    DIGEST,
    content_digest,
    safetensors_complete,
    weights_intact,
    write_digest,
)

__all__ = [
    "ANSWER_TOKENS", "PACKED_ROW_TOKENS", "answer_positions", "collate", "encode_prompt", "encode_qa",
    "mean_entropy", "pack", "packs_sequences", "pad_token_id", "folder_problems", "safetensors_header",
    "LoadedModel", "load_model", "apply_lora", "merged_copy", "ONE_THREAD_BELOW_PARAMETERS", "card_bytes",
    "cpu_threads", "device_of", "eval_mode", "in_eval_mode", "threads_for", "to_available_device",
    "is_loadable", "is_saved_model", "save_model", "save_plain_model", "SPECIAL_TOKENS",
    "STAND_IN_CONFIGS", "TinyLlamaConfig", "build_stand_in", "build_tiny_llama", "train_bpe_tokenizer",
    "ADAPTER_CONFIG", "STATED_REVISIONS_VARIABLE", "STATED_TEMPLATES_VARIABLE", "adapter_base",
    "check_source", "source_of", "state", "stated", "stated_revision", "stated_template", "CHAT",
    "TEMPLATES", "PromptTemplate", "chat_template", "conversation_template", "get_template",
    "template_for", "DIGEST", "content_digest", "safetensors_complete", "weights_intact", "write_digest",
]
