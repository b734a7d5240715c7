"""Encoding Q&A for a model: prompts and Q&A pairs as token ids and labels, padded (:func:`collate`) or packed
(:func:`pack`) batches, the scored positions and their mean entropy."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .running import device_of, eval_mode
from .templates import PromptTemplate


def encode_prompt(tokenizer, template: PromptTemplate, question: str) -> list[int]:
    ids = tokenizer(template.prompt(question), add_special_tokens=False)["input_ids"]
    bos = tokenizer.bos_token_id
    return ([bos] if bos is not None and _adds_bos(tokenizer) else []) + ids


def _adds_bos(tokenizer) -> bool:
    # A model family that starts every sequence with BOS expects it here too; ours always do.
    return getattr(tokenizer, "add_bos_token", True) is not False


#: How the answer tokens of a Q&A pair are cut (the profile's ``answer_tokens``, docs/metrics.md §9).
ANSWER_TOKENS = ("separate", "ou_joint")


def encode_qa(tokenizer, template: PromptTemplate, question: str, answer: str,
              max_length: int | None = None, tokens: str = "separate") -> dict[str, list[int]]:
    """A Q&A pair as input ids and labels (-100 on the prompt).

    ``tokens="separate"`` (the workbook's): prompt and answer tokenised apart and joined, so the scored tokens are
    the answer's own tokens plus EOS, the same in training, scoring and generation. ``"ou_joint"``: as
    open-unlearning (and TOFU's code) cut them: prompt + answer tokenised as one string (EOS appended), the labels
    starting after as many tokens as the prompt alone has. Where the template ends in a space (Phi's "Answer: "),
    the joint string merges that space into the answer's first word, so the labels start one token late and the
    answer's first word is not scored."""
    if tokens not in ANSWER_TOKENS:
        raise ValueError(f"unknown answer tokens {tokens!r}; use one of {', '.join(ANSWER_TOKENS)}")
    prompt_ids = encode_prompt(tokenizer, template, question)
    if tokens == "ou_joint":
        start = prompt_ids[:len(prompt_ids) - len(tokenizer(template.prompt(question), add_special_tokens=False)
                                                  ["input_ids"])]  # the BOS the prompt starts with, if any
        input_ids = start + tokenizer(template.prompt(question) + answer, add_special_tokens=False)["input_ids"]
        if input_ids[-1] != tokenizer.eos_token_id:
            input_ids = input_ids + [tokenizer.eos_token_id]
        labels = [-100] * len(prompt_ids) + input_ids[len(prompt_ids):]
    else:
        answer_ids = tokenizer(answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        input_ids = prompt_ids + answer_ids
        labels = [-100] * len(prompt_ids) + answer_ids
    if max_length is not None and len(input_ids) > max_length:
        input_ids, labels = input_ids[:max_length], labels[:max_length]
    return {"input_ids": input_ids, "labels": labels}


def pad_token_id(tokenizer) -> int:
    """The id batches are padded with: the tokenizer's pad token, else its EOS (padding is masked anyway)."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def collate(examples: Sequence[dict[str, list[int]]], pad_token_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a list of encoded examples into a batch; padding is never scored."""
    width = max(len(e["input_ids"]) for e in examples)
    input_ids = torch.full((len(examples), width), pad_token_id, dtype=torch.long)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    attention = torch.zeros((len(examples), width), dtype=torch.long)
    for i, e in enumerate(examples):
        n = len(e["input_ids"])
        input_ids[i, :n] = torch.tensor(e["input_ids"])
        labels[i, :n] = torch.tensor(e["labels"])
        attention[i, :n] = 1
    return {"input_ids": input_ids, "attention_mask": attention, "labels": labels}



def answer_positions(labels: torch.Tensor) -> torch.Tensor:
    """Positions whose *next* token is scored, [batch, len]: where the model predicts the answer and EOS (the labels
    of :func:`collate`: -100 on the prompt and the padding)."""
    mask = torch.zeros_like(labels, dtype=torch.bool)
    mask[:, :-1] = labels[:, 1:] != -100
    return mask


def mean_entropy(logits: torch.Tensor, position_mask: torch.Tensor) -> torch.Tensor:
    """ℓ = mean over the masked positions of the entropy of the next-token distribution, per example
    (shape [batch]); the quantity of the entropy-optimisation loss and of its measure (docs/metrics.md §3)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    entropy = -(logp.exp() * logp).sum(-1)
    mask = position_mask.to(entropy.dtype)
    return (entropy * mask).sum(-1) / mask.sum(-1).clamp(min=1)

#: Longest row of a packed batch (:func:`pack`): a row holds whole examples up to this many tokens (or the longest
#: example, if longer). Attention costs a row's length squared, so rows much longer than a Q&A pair buy nothing.
PACKED_ROW_TOKENS = 128


def pack(examples: Sequence[dict[str, list[int]]], pad_token_id: int,
         row_tokens: int = PACKED_ROW_TOKENS) -> dict[str, torch.Tensor]:
    """The examples of a batch packed whole into as few rows as fit ``row_tokens`` (first fit, longest first),
    instead of one padded row each (:func:`collate`): the same examples, the same scored tokens, far less padding.

    ``position_ids`` restart at 0 with every example, which is how transformers tells packed sequences apart: its
    attention mask then keeps each example to itself (block-diagonal and causal), so every token is computed as in
    its own padded row. No ``attention_mask``: the padding at the end of a row is one more sequence, never scored
    (its labels are -100, as is each example's first position, which nothing predicts). Use only with a model that
    :func:`packs_sequences`."""
    lengths = [len(e["input_ids"]) for e in examples]
    capacity = max(row_tokens, max(lengths))
    rows: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(examples)), key=lambda i: -lengths[i]):
        fit = next((r for r, free in enumerate(room) if lengths[i] <= free), None)
        if fit is None:
            rows.append([i])
            room.append(capacity - lengths[i])
        else:
            rows[fit].append(i)
            room[fit] -= lengths[i]
    width = max(capacity - free for free in room)
    input_ids = torch.full((len(rows), width), pad_token_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    positions = torch.zeros((len(rows), width), dtype=torch.long)
    for r, members in enumerate(rows):
        at = 0
        for i in members:
            n = lengths[i]
            input_ids[r, at:at + n] = torch.tensor(examples[i]["input_ids"])
            labels[r, at + 1:at + n] = torch.tensor(examples[i]["labels"][1:])
            positions[r, at:at + n] = torch.arange(n)
            at += n
        positions[r, at:] = torch.arange(width - at)  # the row's padding: a sequence of its own
    return {"input_ids": input_ids, "labels": labels, "position_ids": positions}


_PACKS: dict[tuple, bool] = {}


@torch.no_grad()
def packs_sequences(model) -> bool:
    """Whether ``model`` computes a packed batch (:func:`pack`) as it computes the same examples padded: checked once
    per architecture and attention implementation on two short sequences, so an architecture whose attention mask
    ignores packed position ids is trained on padded batches instead of across its examples' boundaries."""
    inner = getattr(model, "module", model)
    config = getattr(inner, "config", None)
    key = (type(inner).__name__, getattr(config, "_attn_implementation", None), getattr(config, "model_type", None))
    if key not in _PACKS:
        vocab = int(getattr(config, "vocab_size", 0) or 0)
        if vocab < 8:
            _PACKS[key] = False
            return False
        generator = torch.Generator().manual_seed(0)
        examples = [{"input_ids": torch.randint(1, vocab, (n,), generator=generator).tolist(),
                     "labels": [-100] * n} for n in (5, 7)]
        device = device_of(inner)
        with eval_mode(inner):
            padded = collate(examples, 0)
            alone = inner(input_ids=padded["input_ids"].to(device), attention_mask=padded["attention_mask"].to(device),
                          use_cache=False).logits
            packed = pack(examples, 0, row_tokens=16)
            together = inner(input_ids=packed["input_ids"].to(device), position_ids=packed["position_ids"].to(device),
                             use_cache=False).logits
        # pack puts the longer example first: positions 0-6 are example 1, 7-11 example 0
        same = (torch.allclose(together[0, :7], alone[1, :7], atol=1e-4, rtol=1e-4)
                and torch.allclose(together[0, 7:12], alone[0, :5], atol=1e-4, rtol=1e-4))
        _PACKS[key] = bool(same)
    return _PACKS[key]
