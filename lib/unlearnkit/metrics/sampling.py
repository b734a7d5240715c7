"""n sampled answers per question, scored (Scholten et al., "A Probabilistic Perspective on Unlearning and
Alignment"; docs/metrics.md section 3): the station between decoding and the bounds.

:func:`sample_and_score` decodes every question greedily once (that pass also gives the certainty c(x) of
adaptive temperature scaling, measured on the greedy continuation) and draws n answers by multinomial
sampling; it scores the greedy answer and every sample with ROUGE-L against the ground truth and with the
binary leak judge (does the text contain the answer's key entity?), and measures the samples' diversity
(self-BLEU). The result is a :class:`SampledScores`, the input of :mod:`unlearnkit.bounds`.

Adaptive temperature needs no second sampling run: a question decoded greedily gets the greedy answer n
times, and a sampled question gets exactly the samples :func:`sample_and_score` drew for it (same seed and
random stream, as :func:`unlearnkit.generation.adaptive_sample_answers` does), so :func:`adaptive_view`
rebuilds the adaptive result from the plain one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from ..generation import certainty, greedy_with_confidences, sample_continuations
from ..models import PromptTemplate, encode_prompt
from .judges import key_entity, leak_judge, rouge_per_sample, self_bleu_per_prompt

__all__ = [
    "SAMPLING_VERSION",
    "SampledScores",
    "AdaptiveView",
    "sample_and_score",
    "leak_keys",
    "prompt_ids",
    "adaptive_view",
]

#: Bump when :func:`sample_and_score` gives other scores for the same model, rows and settings: cached
#: results keyed with the old version are then sampled anew.
SAMPLING_VERSION = "1"


@dataclass
class SampledScores:
    """One model's greedy and sampled answers to a list of questions, scored.

    Arrays are (questions,) or (questions, n). ``rouge`` and ``greedy_rouge`` are None when the rows
    carry no ground-truth answer (the Harry Potter Q&A has keywords only).
    """

    questions: list[str]
    keys: list[Any]  # per question: the key entity (str) or a list of keywords, any of which leaks
    greedy_answers: list[str]
    greedy_leak: np.ndarray  # (Q,) 0/1: the greedy answer contains the key
    certainty: np.ndarray  # (Q,) c(x): mean top-token probability along the greedy continuation
    leak: np.ndarray  # (Q, n) 0/1 per sample
    self_bleu: np.ndarray  # (Q,) diversity of the n samples (1 = all identical)
    examples: list[list[str]]  # the first few samples per question, for display
    targets: list[str] | None = None
    greedy_rouge: np.ndarray | None = None  # (Q,)
    rouge: np.ndarray | None = None  # (Q, n)
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0  # wall time of decoding and scoring

    @property
    def n(self) -> int:
        return int(self.leak.shape[1])

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, np.ndarray):
                out[key] = value.tolist()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SampledScores:
        data = dict(data)
        for key, dtype in (("greedy_leak", np.int8), ("leak", np.int8), ("certainty", float),
                           ("self_bleu", float), ("greedy_rouge", float), ("rouge", float)):
            if data.get(key) is not None:
                data[key] = np.asarray(data[key], dtype=dtype)
        return cls(**data)


def leak_keys(rows: Sequence[Mapping[str, Any]]) -> list[Any]:
    """What the leak judge looks for in each row's answers: the HP Q&A ``keywords`` (any of them leaks),
    else the key entity of the answer (the synthetic corpus' recorded ``value`` when present, else the
    heuristic of :func:`unlearnkit.metrics.judges.key_entity`, which drops what the question already says)."""
    return [list(row["keywords"]) if row.get("keywords")
            else key_entity(row.get("answer", ""), row.get("value"), row.get("question"))
            for row in rows]


def prompt_ids(tokenizer, template: PromptTemplate, rows: Sequence[Mapping[str, Any]],
               use_prefix: bool) -> list[list[int]]:
    """Token ids of each prompt; with ``use_prefix`` the row's ``affirmative_response`` follows as the
    beginning of the answer. Its trailing space is dropped: a byte-level or sentencepiece tokenizer puts
    the space in front of the next word ("▁Hedwig"), so a dangling space token would push the model
    off its usual tokenisation of the very word we look for."""
    prompts = [encode_prompt(tokenizer, template, row["question"]) for row in rows]
    if use_prefix:
        prompts = [p + tokenizer(str(row.get("affirmative_response", "")).rstrip(),
                                 add_special_tokens=False)["input_ids"] for p, row in zip(prompts, rows)]
    return prompts


def sample_and_score(model, tokenizer, template: PromptTemplate, rows: Sequence[Mapping[str, Any]], n: int,
                     temperature: float = 1.0, top_p: float | None = None, top_k: int | None = None,
                     max_new_tokens: int = 64, seed: int = 0, chunk_size: int = 128, batch_size: int = 32,
                     use_prefix: bool = False, rouge_measure: str = "recall", with_self_bleu: bool = True,
                     keep_examples: int = 5, progress: bool = True) -> SampledScores:
    """Greedy answer, c(x) and n sampled answers per row, scored by ROUGE-L and the leak judge.

    rows: dicts with ``question``; ``answer`` (the ground truth, scored by ROUGE-L ``rouge_measure``;
        without it no ROUGE is computed); what the leak judge looks for (see :func:`leak_keys`);
        ``affirmative_response`` when ``use_prefix``. Only the generated continuation is judged, never a prefix.
    n, temperature, top_p, top_k, max_new_tokens, seed, chunk_size: as in
        :func:`unlearnkit.generation.sample_answers`; sample j of question i depends on (seed, i, j) only.
        temperature 0 repeats the greedy answer n times.
    Works for any Hugging Face causal LM (the model's device is used).
    """
    if not rows:
        raise ValueError("no rows to sample: the question list is empty")
    started = time.time()
    prompts = prompt_ids(tokenizer, template, rows, use_prefix)
    greedy_ids, greedy_confidences = greedy_with_confidences(model, tokenizer, prompts, max_new_tokens, batch_size)
    if temperature == 0:
        sampled_ids = [[ids] * n for ids in greedy_ids]
    else:
        sampled_ids, _ = sample_continuations(model, tokenizer, prompts, n, temperature, top_p, top_k,
                                              max_new_tokens, seed, chunk_size, progress=progress)
    greedy = [t.strip() for t in tokenizer.batch_decode(greedy_ids, skip_special_tokens=True)]
    flat = tokenizer.batch_decode([ids for per_q in sampled_ids for ids in per_q], skip_special_tokens=True)
    samples = [[t.strip() for t in flat[q * n:(q + 1) * n]] for q in range(len(rows))]

    keys = leak_keys(rows)
    targets = [row["answer"] for row in rows] if all(row.get("answer") for row in rows) else None
    result = SampledScores(
        questions=[row["question"] for row in rows],
        keys=keys,
        greedy_answers=greedy,
        greedy_leak=leak_judge([[g] for g in greedy], keys)[:, 0],
        certainty=np.array([certainty(c) for c in greedy_confidences]),
        leak=leak_judge(samples, keys),
        self_bleu=self_bleu_per_prompt(samples) if with_self_bleu else np.full(len(rows), np.nan),
        examples=[per_q[:keep_examples] for per_q in samples],
        targets=targets,
        greedy_rouge=rouge_per_sample(targets, [[g] for g in greedy], rouge_measure)[:, 0] if targets else None,
        rouge=rouge_per_sample(targets, samples, rouge_measure) if targets else None,
        settings={"n": n, "temperature": temperature, "top_p": top_p, "top_k": top_k,
                  "max_new_tokens": max_new_tokens, "seed": seed, "use_prefix": use_prefix,
                  "rouge_measure": rouge_measure},
    )
    result.seconds = time.time() - started
    return result


class AdaptiveView(NamedTuple):
    """The scores adaptive temperature scaling gives, and which questions it decoded greedily."""

    scores: SampledScores
    went_greedy: np.ndarray  # (Q,) bool: c(x) > threshold


def adaptive_view(result: SampledScores, threshold: float) -> AdaptiveView:
    """The scores adaptive temperature scaling would give (docs/metrics.md section 3), and which questions went greedy.

    A question with c(x) > threshold (c measured on the greedy continuation) is decoded greedily, so all
    its n scores are the greedy answer's; the others keep their samples. Equal to scoring the output of
    :func:`unlearnkit.generation.adaptive_sample_answers` with the same seed (tested).
    """
    greedy = result.certainty > threshold
    leak = np.where(greedy[:, None], result.greedy_leak[:, None], result.leak).astype(np.int8)
    rouge = None
    if result.rouge is not None:
        rouge = np.where(greedy[:, None], result.greedy_rouge[:, None], result.rouge)
    self_bleu = np.where(greedy, 1.0, result.self_bleu)
    view = replace(result, leak=leak, rouge=rouge, self_bleu=self_bleu,
                   settings={**result.settings, "adaptive_threshold": float(threshold)})
    return AdaptiveView(view, greedy)
