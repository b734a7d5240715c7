"""Input probes: the same forget questions put differently, to see whether the unlearned answer comes back.

- ``plain``: the question as every notebook asks it;
- ``prefill``: the assistant turn opened with the ground-truth answer's own words up to the fact (the tiny model never
  saw "Sure, here is the answer:", so the answer template's words stand in; ``probe_prefill_text`` on the paper
  profile), the model continuing from there;
- ``paraphrase``: the generator's other template of the question (``paraphrased_question``);
- ``retain shots ×k`` and ``forget shots ×k``: k question-answer pairs before the question, of retain authors, or of
  other forget authors (never the asked author).

Each probe gives greedy ROUGE-L of the answer a reader sees (prefill: the prefilled words and the continuation) and the
length-normalised probability of the true answer (prefill: of the rest of the answer after the prefilled words).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..config import Params
from ..generation import greedy_answers
from ..metrics import tofu
from ..models import PromptTemplate, encode_prompt, pad_token_id


def prefill(row: Mapping[str, Any], text: str | None = None) -> tuple[str, str]:
    """(prefilled words, rest of the answer): ``text`` when given (the paper profile's phrase), else the answer up to
    the fact's value (the whole answer's first word when the value is not in it). The rest keeps the space that
    separates it from the prefilled words, so that its tokens are the ones the model saw in training (a word-initial
    token carries its space)."""
    answer, value = str(row["answer"]), str(row.get("value", ""))
    if text is not None:
        return text, " " + answer
    at = answer.find(value) if value else -1
    head = answer[:at].rstrip() if at > 0 else answer.split(" ", 1)[0]
    return head, answer[len(head):]


def with_shots(template: PromptTemplate, shots: Sequence[Mapping[str, Any]]) -> PromptTemplate:
    """A template that puts ``shots`` (question-answer pairs, each as the template asks and answers) before the
    question."""
    context = "".join(template.prompt(s["question"]) + s["answer"] + "\n\n" for s in shots)
    context = context.replace("{", "{{").replace("}", "}}")
    return PromptTemplate(f"{template.name}+{len(shots)} shots", context + template.question_format)


def _probability(model, tokenizer, template, questions, answers, params: Params) -> np.ndarray:
    return np.exp(-tofu.answer_nll(model, tokenizer, template, questions, answers, params.eval_batch_size,
                                   answer_tokens=params.answer_tokens))


def _prefill_probability(model, tokenizer, template, rows, params: Params, text: str | None) -> np.ndarray:
    encoded = []
    for r in rows:
        head, rest = prefill(r, text)
        prompt = encode_prompt(tokenizer, template, r["question"]) + tokenizer(head, add_special_tokens=False)["input_ids"]
        answer = tokenizer(rest, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        encoded.append({"input_ids": prompt + answer, "labels": [-100] * len(prompt) + answer})
    return np.exp(-tofu.encoded_nll(model, encoded, pad_token_id(tokenizer), params.eval_batch_size))


def _others(pool: Sequence[Mapping[str, Any]], author: Any, k: int) -> list[Mapping[str, Any]]:
    """The first k rows of ``pool`` not about ``author``."""
    return [r for r in pool if r.get("author_index") != author][:k]


def probe(loaded, rows: Sequence[Mapping[str, Any]], retain_pool: Sequence[Mapping[str, Any]],
          forget_pool: Sequence[Mapping[str, Any]], params: Params) -> dict[str, dict[str, float]]:
    """Every probe's mean greedy ROUGE-L and mean true-answer probability on ``rows``, for one model."""
    model, tokenizer, template = loaded[:3]
    questions, answers = [r["question"] for r in rows], [r["answer"] for r in rows]
    text = params.probe_prefill_text

    def scored(asked: Sequence[str], tpl: PromptTemplate, prefixes=None, shown=None) -> float:
        got = greedy_answers(model, tokenizer, tpl, asked, params.max_new_tokens, params.eval_batch_size, prefixes)
        if prefixes is not None:
            got = [f"{p} {g}".strip() for p, g in zip(prefixes, got)]
        return float(tofu.rouge_l(answers, got).mean())

    out = {"plain": {"rouge": scored(questions, template),
                     "probability": float(_probability(model, tokenizer, template, questions, answers, params).mean())}}
    heads = [prefill(r, text)[0] for r in rows]
    out["prefill"] = {"rouge": scored(questions, template, heads),
                      "probability": float(_prefill_probability(model, tokenizer, template, rows, params, text).mean())}
    para = [r.get("paraphrased_question") or r["question"] for r in rows]
    out["paraphrase"] = {"rouge": scored(para, template),
                         "probability": float(_probability(model, tokenizer, template, para, answers, params).mean())}
    for k in params.probe_shots:
        shot_template = with_shots(template, list(retain_pool[:k]))
        out[f"retain shots ×{k}"] = {
            "rouge": scored(questions, shot_template),
            "probability": float(_probability(model, tokenizer, shot_template, questions, answers, params).mean())}
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(rows):
            shots = _others(forget_pool, r.get("author_index"), k)
            groups.setdefault(tuple(s["question"] for s in shots), []).append(i)
        rouge, probability = np.zeros(len(rows)), np.zeros(len(rows))
        for key, idx in groups.items():
            shots = [next(s for s in forget_pool if s["question"] == q) for q in key]
            tpl = with_shots(template, shots)
            asked = [questions[i] for i in idx]
            got = greedy_answers(model, tokenizer, tpl, asked, params.max_new_tokens, params.eval_batch_size)
            rouge[idx] = tofu.rouge_l([answers[i] for i in idx], got)
            probability[idx] = _probability(model, tokenizer, tpl, asked, [answers[i] for i in idx], params)
        out[f"forget shots ×{k}"] = {"rouge": float(rouge.mean()), "probability": float(probability.mean())}
    return out
