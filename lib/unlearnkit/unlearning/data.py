"""The batches of an unlearning step: the refusal answers of IDK and DPO, the alternate answers of AltPO, and the
encoding and collation of forget/retain pairs with the extra sub-batches a method asks for (:data:`BATCH_PARTS`).

Batch layout (what :func:`collate_pairs` produces): ``{"forget": sub, "retain": sub}`` plus the parts a method needs
(``Method.batch_parts``): ``"forget_idk"`` (IDK, DPO) and ``"forget_alt"`` (AltPO). Each ``sub`` is a batch of
:func:`unlearnkit.models.collate`; row i of an extra part is the same question as row i of ``forget`` with another
answer.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ..models import PromptTemplate, collate, encode_qa

#: The sub-batches beyond ``forget`` and ``retain`` a method may need, and how to build them.
BATCH_PARTS: dict[str, str] = {
    "forget_idk": "the forget question with a refusal answer: encode_pairs(..., with_idk=True)",
    "forget_alt": "the forget question with an alternate (wrong but plausible) answer: encode_pairs(..., alternates=...)",
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


def pick_idk_answer(key: int | str, seed: int, answers: Sequence[str] = IDK_ANSWERS) -> str:
    """The refusal answer of one forget item, drawn from ``answers`` by ``(seed, key)``.

    Keyed by the item (its index or its question) rather than by draw order, so an item keeps its refusal
    when the forget set is subset or reordered. ``random.Random`` seeds a string through SHA-512, which is
    stable across processes (unlike ``hash``).
    """
    return random.Random(f"{seed}:{key}").choice(list(answers))

def pick_alternate(key: int | str, seed: int, alternates: Sequence[str] = ()) -> str:
    """The alternate answer of one forget item for AltPO, drawn from its ``alternates`` by ``(seed, key)`` like
    :func:`pick_idk_answer` (keyed by the item, stable across processes; salted apart from the refusal's draw)."""
    if isinstance(alternates, str) or not alternates:
        raise ValueError(f"need a non-empty list of alternate answers for {key!r}, got {alternates!r}")
    return random.Random(f"alternate:{seed}:{key}").choice(list(alternates))


# --------------------------------------------------------------------------- encoding and collation


def encode_pair(tokenizer, template: PromptTemplate, forget_row: Mapping[str, Any], retain_row: Mapping[str, Any],
                idk_answer: str | None = None, max_length: int | None = None,
                alt_answer: str | None = None) -> dict[str, dict[str, list[int]]]:
    """One unlearning example: the forget Q&A, its paired retain Q&A and, when ``idk_answer`` is given, the forget
    question with that refusal as answer (``forget_idk``), when ``alt_answer`` is given, with that alternate answer
    (``forget_alt``). Each is encoded by :func:`models.encode_qa`."""
    example = {
        "forget": encode_qa(tokenizer, template, forget_row["question"], forget_row["answer"], max_length),
        "retain": encode_qa(tokenizer, template, retain_row["question"], retain_row["answer"], max_length),
    }
    if idk_answer is not None:
        example["forget_idk"] = encode_qa(tokenizer, template, forget_row["question"], idk_answer, max_length)
    if alt_answer is not None:
        example["forget_alt"] = encode_qa(tokenizer, template, forget_row["question"], alt_answer, max_length)
    return example


def encode_pairs(tokenizer, template: PromptTemplate, forget_rows: Sequence[Mapping[str, Any]],
                 retain_rows: Sequence[Mapping[str, Any]], with_idk: bool = False, *, seed: int,
                 max_length: int | None = None, alternates: Sequence[str | Sequence[str]] | None = None
                 ) -> list[dict[str, dict[str, list[int]]]]:
    """One example per forget row (an epoch is one pass over the forget set, docs/metrics.md §4), each paired
    with a retain row taken from a seeded permutation of ``retain_rows`` (cycled if it is shorter).
    With ``with_idk`` each forget row also gets its refusal from :func:`pick_idk_answer` (keyed by the
    question text). ``alternates`` (AltPO), one entry per forget row: its alternate answer, or a list of them of
    which :func:`pick_alternate` takes one by ``(seed, question)``."""
    if not forget_rows or not retain_rows:
        raise ValueError(f"need forget and retain rows; got {len(forget_rows)} forget, {len(retain_rows)} retain")
    if alternates is not None and len(alternates) != len(forget_rows):
        raise ValueError(f"need one entry of alternates per forget row; got {len(alternates)} for "
                         f"{len(forget_rows)} rows")
    order = list(range(len(retain_rows)))
    random.Random(seed).shuffle(order)
    examples = []
    for i, row in enumerate(forget_rows):
        idk = pick_idk_answer(row["question"], seed) if with_idk else None
        alt = None
        if alternates is not None:
            alt = alternates[i] if isinstance(alternates[i], str) else pick_alternate(row["question"], seed,
                                                                                      alternates[i])
        examples.append(encode_pair(tokenizer, template, row, retain_rows[order[i % len(order)]], idk, max_length,
                                    alt))
    return examples


def collate_pairs(examples: Sequence[Mapping[str, Mapping[str, list[int]]]], pad_token_id: int
                  ) -> dict[str, dict[str, torch.Tensor]]:
    """Batch :func:`encode_pair` examples: each key (``forget``, ``retain``, ``forget_idk``, ``forget_alt``) is
    collated on its own by :func:`models.collate`, so the sub-batches may have different widths."""
    if not examples:
        raise ValueError("no examples to collate")
    keys = list(examples[0])
    for e in examples[1:]:
        if list(e) != keys:
            raise ValueError(f"examples of one batch must have the same parts; got {keys} and {list(e)}")
    return {k: collate([e[k] for e in examples], pad_token_id) for k in keys}
