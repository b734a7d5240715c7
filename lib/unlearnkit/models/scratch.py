"""Models built from scratch: a byte-level BPE tokenizer trained on the corpus, the tiny Llama, and the randomly
initialised stand-ins of paper models (``paper-dry``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import torch

from .encoding import pad_token_id

SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>"}


def train_bpe_tokenizer(texts: Iterable[str], vocab_size: int = 2048, min_frequency: int = 2,
                        special_tokens: dict[str, str] | None = None, extra_special_tokens: Iterable[str] = ()):
    """A byte-level BPE tokenizer trained on ``texts`` with the ``tokenizers`` library, wrapped as a
    ``PreTrainedTokenizerFast`` so it saves and loads like any Hugging Face tokenizer. ``special_tokens`` replaces
    the workbook's own (``<s>``, ``</s>``, ``<pad>``, ``<unk>``), e.g. Phi's single ``<|endoftext|>`` and no pad;
    ``extra_special_tokens`` are further tokens kept whole wherever they occur in a text (Llama 3's header marks)."""
    special_tokens = special_tokens or SPECIAL_TOKENS
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=special_tokens.get("unk_token")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(dict.fromkeys([*special_tokens.values(), *extra_special_tokens])),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **special_tokens)


@dataclass
class TinyLlamaConfig:
    """A Llama-architecture model small enough to train from scratch on two CPU cores."""

    hidden_size: int = 192
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    intermediate_size: int = 512
    max_position_embeddings: int = 256
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = True


def build_tiny_llama(tokenizer, config: TinyLlamaConfig | dict[str, Any] | None = None, *, seed: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = config if isinstance(config, TinyLlamaConfig) else TinyLlamaConfig(**(config or {}))
    llama_cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        attention_dropout=0.0,
        **asdict(cfg),
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(llama_cfg)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


#: Architectures a stand-in of a paper model can have (``paper-dry``): the config class of each. ``llama3`` is Llama
#: 3.2's variant of the Llama architecture (``paper-llama-dry``): see :func:`_traits`.
STAND_IN_CONFIGS = {"phi": "PhiConfig", "llama": "LlamaConfig", "llama3": "LlamaConfig", "mistral": "MistralConfig"}


def _traits(architecture: str, sizes: dict[str, int], max_positions: int) -> dict[str, Any]:
    """What sets a stand-in's architecture apart from the shared settings of :func:`build_stand_in`. Phi: half the
    head dimensions rotary. Llama 3.2 (meta-llama/Llama-3.2-1B-Instruct's config): the output head tied to the
    embeddings, grouped-query attention with a quarter as many key-value heads (its 8 of 32), and rotary
    embeddings of theta 500,000 with the "llama3" frequency scaling (factor 32, low and high frequency factors 1 and
    4), its original context a sixteenth of the longest (8,192 of 131,072)."""
    if architecture == "phi":
        return {"partial_rotary_factor": 0.5}
    if architecture == "llama3":
        return {"tie_word_embeddings": True, "num_key_value_heads": max(1, sizes["num_attention_heads"] // 4),
                "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                    "original_max_position_embeddings": max_positions // 16}}
    return {}


def build_stand_in(architecture: str, tokenizer, sizes: dict[str, int], seed: int,
                   max_positions: int = 2048):
    """A randomly initialised causal LM of ``architecture`` (phi, llama, llama3, mistral) with ``sizes``
    (hidden_size, num_hidden_layers, num_attention_heads, intermediate_size) and ``tokenizer``'s vocabulary: the
    interface of a paper model at a size two CPU cores can train. Phi keeps its own traits (half the head dimensions
    rotary, an untied output head with a bias), Llama 3.2 its own (:func:`_traits`)."""
    import transformers

    if architecture not in STAND_IN_CONFIGS:
        raise ValueError(f"unknown stand-in architecture {architecture!r}; known: {', '.join(STAND_IN_CONFIGS)}")
    settings = dict(
        vocab_size=len(tokenizer), max_position_embeddings=max_positions, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False,
        num_key_value_heads=sizes["num_attention_heads"],  # Mistral's config would keep its 8 key-value heads
        **sizes)
    cfg = getattr(transformers, STAND_IN_CONFIGS[architecture])(**{**settings, **_traits(architecture, sizes,
                                                                                           max_positions)})
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    model.generation_config.pad_token_id = pad_token_id(tokenizer)
    return model
