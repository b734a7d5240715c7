"""Scores of the format-transformed evaluation (docs/metrics.md §6) on the items of
:mod:`unlearnkit.data.formats`.

* MCQA-style formats (mcqa, analogy, odd_one_out, comprehension_mcqa): the prediction is the argmax of
  the next-token logits after the prompt, restricted to the tokens of the letters the item offers;
  the score is accuracy.
* cloze: the length-normalised probability exp(−mean token NLL) of the masked span given the question
  and the answer prefix, and the greedy fill accuracy (the greedy continuation starts with the span,
  case-insensitively, whitespace-normalised).
* comprehension_qa: the mean of ROUGE-1, ROUGE-2 and ROUGE-L F (``rouge_score``, stemmer on) of the
  greedy answer against the true answer.

Option likelihood (:func:`score_option_likelihood`, ``<format>_likelihood``). The MCQA-style score reads the
letter a model writes after "Answer:". A tiny model trained from scratch on Q&A pairs has never seen lettered
options, so it sits at chance on every lettered format whatever it knows. The same items are therefore also
scored the way small models are usually evaluated on multiple choice (lm-evaluation-harness without letters):

* mcqa, comprehension_mcqa: the question (after the context, for comprehension) in the model's Q&A template,
  then the answer's own words before the option (where the option is a value inside the answer, as in the
  synthetic corpus; nothing where options are whole answers, as in real TOFU), then each option; the
  prediction is the option of highest mean token log-probability;
* analogy: ``"A1 : v1 :: A2 : v2 :: Aq :"`` followed by each option, same rule;
* odd_one_out: each statement scored alone; the prediction is the outlier, the statement whose mean
  log-probability is farthest from the mean of the others. A model that knows every fact (the target) finds
  no outlier and sits near chance; one that knows only one set (the retain model) finds it.

Prompts. The MCQA-style and comprehension prompts carry their own ``"Question:" ... "Answer:"`` text
(docs/metrics.md §6), so by default (``prompt_style="raw"``) they are fed as they are, not wrapped in the
model's Q&A template: for the phi template (``"Question: {q}\\nAnswer: "``) the MCQA prompt already *is*
the template's shape, and wrapping it would write "Question:" twice. ``prompt_style="template"`` puts
the item's ``body`` (the question with its options, or context and question) into ``template.prompt``
instead, for chat models fine-tuned only inside their template (``"[INST] ... [/INST]"``). The cloze is
the Q&A format itself cut short, so it always uses the template: ``template.prompt(question)`` followed
by the answer prefix, exactly how the model saw the answer in fine-tuning. Either way a BOS token is
added where :func:`unlearnkit.models.encode_prompt` adds one.

Letter tokens. The prompt ends with "Answer:", so the answer letter is written " A" (as in
"Answer: A") and most tokenizers have one token for it. :func:`letter_token_ids` appends " A", " B", ...
to the prompt's last line and keeps the token each adds, when that is a single token distinct per
letter; otherwise it falls back to the no-space form "A" (as in "Answer:A"), the one consistent choice
for all the item's letters. A prompt that already ends in whitespace (the template style
``"Answer: "``) is followed by the bare letter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from ..data.formats import MCQA_STYLE_FORMATS
from ..generation import greedy_continuations, left_pad
from ..models import PromptTemplate, device_of, encode_prompt, in_eval_mode, pad_token_id
from ..stations import timed
from .tofu import encoded_nll

__all__ = [
    "FORMAT_SCORING_VERSION",
    "LIKELIHOOD_SUFFIX",
    "PROMPT_STYLES",
    "FormatScores",
    "prompt_text",
    "encode_text",
    "letter_token_ids",
    "score_mcqa",
    "score_cloze",
    "score_comprehension_qa",
    "rouge_f_mean",
    "option_sequences",
    "choose_option",
    "score_option_likelihood",
    "evaluate_formats",
    "disagreement_table",
]

#: The version of what these scorers return for the same model and items: part of every cached score's key, so
#: bump it when a change to the scoring changes a score.
FORMAT_SCORING_VERSION = "1"
#: The option-likelihood readout of an MCQA-style format is reported as ``<format>_likelihood``.
LIKELIHOOD_SUFFIX = "_likelihood"
PROMPT_STYLES = ("raw", "template")
#: A template that leaves the text as it is; encode_prompt with it adds only the BOS rule.
_RAW = PromptTemplate("raw", "{question}")


# --------------------------------------------------------------------------- prompts and letters


def prompt_text(item: Mapping[str, Any], template: PromptTemplate | None, prompt_style: str = "raw") -> str:
    """The text an MCQA-style or comprehension item is put to the model as (see the module docstring)."""
    if prompt_style == "raw":
        return item["prompt"]
    if prompt_style == "template":
        if template is None:
            raise ValueError("prompt_style='template' needs the model's template")
        return template.prompt(item["body"])
    raise ValueError(f"unknown prompt_style {prompt_style!r}; use one of {', '.join(PROMPT_STYLES)}")


def encode_text(tokenizer, text: str) -> list[int]:
    """Token ids of a whole prompt text, with BOS where the model family expects it."""
    return encode_prompt(tokenizer, _RAW, text)


def _ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def letter_token_ids(tokenizer, prompt: str, letters: Sequence[str]) -> list[int]:
    """The token id of each answer letter as it would follow ``prompt`` (rule in the module docstring).

    Only the prompt's last line is tokenised (the letters' tokens depend on what directly precedes
    them, and the last line, "Answer:", is what they follow), so the result can be cached per line.
    """
    tail = prompt.rsplit("\n", 1)[-1]
    if tail and tail[-1].isspace():
        ids = [_ids(tokenizer, letter) for letter in letters]
        if all(len(i) == 1 for i in ids) and len({i[0] for i in ids}) == len(ids):
            return [i[0] for i in ids]
        raise ValueError(f"the letters {list(letters)} are not single distinct tokens for this tokenizer")
    base = _ids(tokenizer, tail)
    for separator in (" ", ""):
        ids = []
        for letter in letters:
            full = _ids(tokenizer, tail + separator + letter)
            if full[:len(base)] != base or len(full) != len(base) + 1:
                break
            ids.append(full[-1])
        else:
            if len(set(ids)) == len(ids):
                return ids
    raise ValueError(f"neither ' A' nor 'A' gives one distinct token per letter {list(letters)} after {tail!r}")


# --------------------------------------------------------------------------- batching helpers


@timed("scoring")
@torch.no_grad()
@in_eval_mode
def next_token_logits(model, sequences: Sequence[Sequence[int]], pad_token_id: int, batch_size: int,
                      columns: Sequence[int] | None = None) -> list[torch.Tensor]:
    """The next-token logits after each sequence (float32, on the CPU; only the token ids of ``columns`` when given),
    in batches of similar length. Each batch is padded on the left, with position ids as if it were not, so that the
    last column is every row's last token and the output head runs on that column alone (``logits_to_keep=1``).
    The MCQA letter readouts and the HarmBench judge's P(Yes) share it."""
    out: list[torch.Tensor] = [torch.empty(0)] * len(sequences)
    device = device_of(model)
    picked = None if columns is None else torch.tensor(list(columns), device=device)
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))  # less padding per batch
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        ids, mask = left_pad([sequences[i] for i in idx], pad_token_id)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)  # as if unpadded
        logits = model(input_ids=ids.to(device), attention_mask=mask.to(device), position_ids=positions.to(device),
                       logits_to_keep=1).logits[:, -1]
        if picked is not None:
            logits = logits.index_select(-1, picked)
        for row, i in enumerate(idx):
            out[i] = logits[row].float().cpu()
    return out


@timed("scoring")
def _target_nll(model, tokenizer, prompts: Sequence[Sequence[int]], targets: Sequence[Sequence[int]],
                batch_size: int) -> np.ndarray:
    """Mean token cross-entropy of each target given its prompt (only the target tokens are scored)."""
    examples = [{"input_ids": list(p) + list(t), "labels": [-100] * len(p) + list(t)} for p, t in zip(prompts, targets)]
    return encoded_nll(model, examples, pad_token_id(tokenizer), batch_size)


# --------------------------------------------------------------------------- scorers


def score_mcqa(model, tokenizer, items: Sequence[Mapping[str, Any]], template: PromptTemplate | None,
               prompt_style: str = "raw", batch_size: int = 32) -> dict[str, Any]:
    """Accuracy of an MCQA-style format; per item the predicted letter, correctness and the softmax
    over the offered letters."""
    if not items:
        return {"accuracy": float("nan"), "predicted_letter": [], "correct": [], "letter_probs": []}
    texts = [prompt_text(item, template, prompt_style) for item in items]
    cache: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    letter_ids = []
    for text, item in zip(texts, items):
        key = (text.rsplit("\n", 1)[-1], tuple(item["letters"]))
        if key not in cache:
            cache[key] = letter_token_ids(tokenizer, text, item["letters"])
        letter_ids.append(cache[key])
    logits = next_token_logits(model, [encode_text(tokenizer, t) for t in texts], pad_token_id(tokenizer), batch_size)
    predicted, correct, probs = [], [], []
    for item, ids, row in zip(items, letter_ids, logits):
        offered = row[torch.tensor(ids)]
        choice = int(offered.argmax())
        predicted.append(item["letters"][choice])
        correct.append(choice == item["answer_index"])
        probs.append(torch.softmax(offered, -1).tolist())
    return {"accuracy": float(np.mean(correct)), "predicted_letter": predicted, "correct": correct,
            "letter_probs": probs}


def _normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def score_cloze(model, tokenizer, template: PromptTemplate, items: Sequence[Mapping[str, Any]], batch_size: int = 32,
                *, max_new_tokens: int | None) -> dict[str, Any]:
    """Cloze: mean length-normalised probability of the masked span, and greedy fill accuracy.

    The prompt is ``template.prompt(question)`` + the answer prefix without its trailing whitespace; the
    span is scored with that whitespace in front (" Lagos", as the tokenizer splits the whole answer),
    or, with an empty prefix, as the answer's first tokens (as in :func:`unlearnkit.models.encode_qa`).
    Greedy fills get ``max_new_tokens`` new tokens, or (None) the span's token count plus 4.
    """
    if not items:
        return {"probability": float("nan"), "fill_accuracy": float("nan"), "per_item_probability": [],
                "fills": [], "fill_correct": []}
    prompts, targets = [], []
    for item in items:
        prefix = item["answer_prefix"]
        stripped = prefix.rstrip()
        prompt = encode_prompt(tokenizer, template, item["question"])
        if stripped:
            prompt = prompt + _ids(tokenizer, stripped)
            target = _ids(tokenizer, prefix[len(stripped):] + item["target"])
        else:
            target = _ids(tokenizer, item["target"])
        prompts.append(prompt)
        targets.append(target)
    probability = np.exp(-_target_nll(model, tokenizer, prompts, targets, batch_size))
    budget = max_new_tokens or max(len(t) for t in targets) + 4
    continuations = greedy_continuations(model, tokenizer, prompts, max_new_tokens=budget, batch_size=batch_size)
    fills = [tokenizer.decode(c, skip_special_tokens=True) for c in continuations]
    fill_correct = [_normalise(fill).startswith(_normalise(item["target"])) for fill, item in zip(fills, items)]
    return {"probability": float(probability.mean()), "fill_accuracy": float(np.mean(fill_correct)),
            "per_item_probability": probability.tolist(), "fills": fills, "fill_correct": fill_correct}


def rouge_f_mean(targets: Sequence[str], predictions: Sequence[str]) -> np.ndarray:
    """Per item, the mean of ROUGE-1, ROUGE-2 and ROUGE-L F (``rouge_score``, stemmer on)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    return np.array([np.mean([s.fmeasure for s in scorer.score(t, p).values()]) for t, p in zip(targets, predictions)])


def score_comprehension_qa(model, tokenizer, items: Sequence[Mapping[str, Any]], template: PromptTemplate | None,
                           prompt_style: str = "raw", batch_size: int = 32, *, max_new_tokens: int) -> dict[str, Any]:
    """Comprehension Q&A: mean over items of the ROUGE-1/2/L F mean of the greedy answer."""
    if not items:
        return {"rouge": float("nan"), "per_item_rouge": [], "generated": []}
    prompts = [encode_text(tokenizer, prompt_text(item, template, prompt_style)) for item in items]
    continuations = greedy_continuations(model, tokenizer, prompts, max_new_tokens=max_new_tokens,
                                         batch_size=batch_size)
    generated = [tokenizer.decode(c, skip_special_tokens=True).strip() for c in continuations]
    rouge = rouge_f_mean([item["answer"] for item in items], generated)
    return {"rouge": float(rouge.mean()), "per_item_rouge": rouge.tolist(), "generated": generated}


# --------------------------------------------------------------------------- option likelihood


def _answer_prefix(item: Mapping[str, Any]) -> str:
    """The answer's words before the correct option, when the option is a value inside the answer."""
    answer = " ".join(item["answer"].split())
    at = answer.rfind(item["correct_option"])
    return answer[:at] if at > 0 else ""


def option_sequences(item: Mapping[str, Any], fmt: str, tokenizer, template: PromptTemplate
                     ) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, option ids) of every option of an MCQA-style item, as the module docstring describes."""
    if fmt == "odd_one_out":
        start = encode_text(tokenizer, "")  # BOS only: each statement on its own
        return [(start, _ids(tokenizer, option)) for option in item["options"]]
    if fmt == "analogy":
        chain = " :: ".join([f"{a} : {v}" for a, v in item["context_pairs"]] + [f"{item['author']} :"])
        prompt = encode_text(tokenizer, chain)
        return [(prompt, _ids(tokenizer, " " + option)) for option in item["options"]]
    question = item["question"] if fmt == "mcqa" else f"Context: {item['context']}\n{item['question']}"
    prefix = _answer_prefix(item)
    stripped = prefix.rstrip()
    # As in the cloze: the prefix's trailing space goes with the option, the way the answer was tokenised.
    prompt = encode_prompt(tokenizer, template, question) + (_ids(tokenizer, stripped) if stripped else [])
    return [(prompt, _ids(tokenizer, prefix[len(stripped):] + option)) for option in item["options"]]


def choose_option(fmt: str, log_probs: np.ndarray) -> int:
    """The predicted option from each option's mean log-probability: the likeliest, and for odd-one-out the
    outlier (the one farthest from the mean of the others)."""
    if fmt == "odd_one_out":
        total, n = log_probs.sum(), len(log_probs)
        distance = [abs(lp - (total - lp) / (n - 1)) for lp in log_probs]
        return int(np.argmax(distance))
    return int(np.argmax(log_probs))


def score_option_likelihood(model, tokenizer, template: PromptTemplate, fmt: str,
                            items: Sequence[Mapping[str, Any]], batch_size: int = 32) -> dict[str, Any]:
    """Accuracy of an MCQA-style format when options are ranked by likelihood (module docstring); per item the
    predicted letter, correctness and each option's mean token log-probability."""
    if fmt not in MCQA_STYLE_FORMATS:
        raise ValueError(f"option likelihood scores the MCQA-style formats {MCQA_STYLE_FORMATS}, not {fmt!r}")
    if not items:
        return {"accuracy": float("nan"), "predicted_letter": [], "correct": [], "option_log_probs": []}
    prompts, options, bounds = [], [], []
    for item in items:
        sequences = option_sequences(item, fmt, tokenizer, template)
        bounds.append((len(prompts), len(prompts) + len(sequences)))
        prompts += [prompt for prompt, _ in sequences]
        options += [option for _, option in sequences]
    log_probs = -_target_nll(model, tokenizer, prompts, options, batch_size)
    predicted, correct, per_option = [], [], []
    for item, (lo, hi) in zip(items, bounds):
        choice = choose_option(fmt, log_probs[lo:hi])
        predicted.append(item["letters"][choice])
        correct.append(choice == item["answer_index"])
        per_option.append(log_probs[lo:hi].tolist())
    return {"accuracy": float(np.mean(correct)), "predicted_letter": predicted, "correct": correct,
            "option_log_probs": per_option}


# --------------------------------------------------------------------------- all formats


class FormatScores(NamedTuple):
    """What :func:`evaluate_formats` finds for one model: ``scores`` ``{format: {set: score}}`` and ``per_item``
    ``{format: {set: [row, ...]}}``."""

    scores: dict[str, dict[str, float]]
    per_item: dict[str, dict[str, list[dict[str, Any]]]]


def _row(item: Mapping[str, Any], **values: Any) -> dict[str, Any]:
    keys = ("id", "set", "source_row", "author_index", "question")
    return {**{k: item.get(k) for k in keys}, **values}


def _choice_rows(items: Sequence[Mapping[str, Any]], result: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [_row(item, score=float(ok), correct=ok, prediction=letter, answer_letter=item["answer_letter"])
            for item, ok, letter in zip(items, result["correct"], result["predicted_letter"])]


@timed("scoring")
def evaluate_formats(model, tokenizer, template: PromptTemplate,
                     items_by_format: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]], batch_size: int = 32,
                     prompt_style: str = "raw", *, max_new_tokens: int, likelihood: bool = False) -> FormatScores:
    """Every format's score on forget and retain, and the per-item predictions.

    ``items_by_format`` is what :func:`unlearnkit.data.formats.build_all_formats` returns (any subset of
    formats and sets). Scores: accuracy for the MCQA-style formats, the mean span probability for
    ``cloze`` (its greedy fill accuracy is reported as ``cloze_fill``), the mean ROUGE-1/2/L F for
    ``comprehension_qa``; with ``likelihood``, the MCQA-style formats' option-likelihood accuracy as
    ``<format>_likelihood`` too. Per item: id, set, source_row, author_index, question, ``score`` (1/0 for
    MCQA-style, the probability, the ROUGE), ``correct`` (MCQA-style and cloze fill; None for
    comprehension_qa, whose ``score`` is graded) and ``prediction`` (the letter, the fill, the answer).
    """
    scores: dict[str, dict[str, float]] = {}
    per_item: dict[str, dict[str, list[dict]]] = {}
    for fmt, sets in items_by_format.items():
        for set_name, items in sets.items():
            items = list(items)
            if fmt in MCQA_STYLE_FORMATS:
                result = score_mcqa(model, tokenizer, items, template, prompt_style, batch_size)
                scores.setdefault(fmt, {})[set_name] = result["accuracy"]
                rows = _choice_rows(items, result)
            elif fmt == "cloze":
                result = score_cloze(model, tokenizer, template, items, batch_size, max_new_tokens=None)
                scores.setdefault(fmt, {})[set_name] = result["probability"]
                scores.setdefault("cloze_fill", {})[set_name] = result["fill_accuracy"]
                rows = [_row(item, score=p, correct=ok, prediction=fill, target=item["target"])
                        for item, p, ok, fill in zip(items, result["per_item_probability"], result["fill_correct"],
                                                     result["fills"])]
            elif fmt == "comprehension_qa":
                result = score_comprehension_qa(model, tokenizer, items, template, prompt_style, batch_size,
                                                max_new_tokens=max_new_tokens)
                scores.setdefault(fmt, {})[set_name] = result["rouge"]
                rows = [_row(item, score=r, correct=None, prediction=g)
                        for item, r, g in zip(items, result["per_item_rouge"], result["generated"])]
            else:
                raise ValueError(f"unknown format {fmt!r}")
            per_item.setdefault(fmt, {})[set_name] = rows
    if likelihood:
        for fmt in (f for f in MCQA_STYLE_FORMATS if f in items_by_format):
            readout = fmt + LIKELIHOOD_SUFFIX
            for set_name, items in items_by_format[fmt].items():
                result = score_option_likelihood(model, tokenizer, template, fmt, items, batch_size)
                scores.setdefault(readout, {})[set_name] = result["accuracy"]
                per_item.setdefault(readout, {})[set_name] = _choice_rows(items, result)
    return FormatScores(scores, per_item)


def disagreement_table(per_item: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]],
                       rouge_threshold: float = 0.5, only_disagreements: bool = True) -> list[dict[str, Any]]:
    """One row per evaluated fact (set, source_row): whether each format got it right, for the
    "examples where the formats disagree" table. Cloze counts its greedy fill; comprehension_qa counts
    as right when its ROUGE mean reaches ``rouge_threshold``. With ``only_disagreements`` only facts
    asked in at least two formats that are not all right or all wrong are kept.
    """
    table: dict[tuple[str, int], dict[str, Any]] = {}
    for fmt, sets in per_item.items():
        for set_name, rows in sets.items():
            for row in rows:
                key = (set_name, row["source_row"])
                entry = table.setdefault(key, {"set": set_name, "source_row": row["source_row"],
                                               "author_index": row["author_index"], "question": row["question"]})
                right = row["correct"] if row["correct"] is not None else row["score"] >= rouge_threshold
                entry[fmt] = bool(right)
    formats = list(per_item)
    out = []
    for key in sorted(table):
        entry = table[key]
        verdicts = [entry[f] for f in formats if f in entry]
        if only_disagreements and (len(verdicts) < 2 or len(set(verdicts)) == 1):
            continue
        out.append(entry)
    return out
