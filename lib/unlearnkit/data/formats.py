"""The same facts in other formats (docs/metrics.md §6, Joshi et al., "Towards Robust Evaluation of
Unlearning via Data Transformations"): MCQA, cloze, analogy, odd-one-out and comprehension.

Learning and unlearning stay in the Q&A format; these items only *ask* the forget and retain facts
differently, so a model that merely suppresses the Q&A surface form shows up as a gap between formats.
Which facts are asked, and how real TOFU's facts are read, is :mod:`unlearnkit.data.facts`.
The pieces every builder makes its items of (seeds, lettered options, distractors) are
:mod:`unlearnkit.data.format_items`.

Every builder takes ``(source, forget_split, n_options, seed, max_items_per_set=None)``
and returns ``{"forget": [...], "retain": [...]}``: lists of JSON-serialisable dicts. Common fields:

* ``id`` (``"<format>/<set>/<source_row>"``), ``format``, ``set`` ("forget" | "retain"),
  ``source_split`` and ``source_row`` (the row of the evaluation file the fact comes from: the same
  fact has the same ``(set, source_row)`` in every format, which is how the "formats disagree" table
  joins them), ``author_index``, ``author`` (the name, None where unknown), ``question``, ``answer``
  (the source Q&A pair), ``seed`` (the builder's seed) and ``item_seed`` (the string that seeded this
  item's ``random.Random``: the options' order and the sampled distractors are replayable from it).
* MCQA-style items (mcqa, analogy, odd_one_out, comprehension_mcqa) add ``body`` (what a prompt
  template would wrap), ``prompt`` (the docs/metrics.md text ``"Question: ...\\nA. ...\\nAnswer:"``),
  ``options``, ``letters``, ``answer_index``, ``answer_letter`` and ``correct_option``; the correct
  option appears exactly once.
* cloze items add ``answer_prefix``, ``target`` (the masked span), ``answer_suffix`` and ``span_rule``.
* comprehension items add ``context`` (the author's answers joined into one paragraph) and ``context_answers``
  (those answers, in the paragraph's order).

Options: on the synthetic corpus the value against other authors' values of the same attribute; on real
TOFU the answer and TOFU's perturbed answers (odd-one-out and comprehension use whole answers as facts).

Prompts (what the model is shown; ``body`` is the same without the "Question:"/"Answer:" frame):

* mcqa: ``Question: {q}\\nA. {o1}\\nB. {o2}\\n...\\nAnswer:``
* analogy: ``Question: {A1} : {v1} :: {A2} : {v2} :: {Aq} : ?\\nA. ...\\nAnswer:`` (``n_context_pairs=2``)
* odd_one_out: ``Question: Which of these statements is the odd one out?\\nA. ...\\nAnswer:``
* comprehension: ``Context: {answers}\\nQuestion: {q}\\nAnswer:`` (+ the options for comprehension_mcqa)
* cloze: the question and the answer prefix; the scorer puts them in the model's own Q&A template.

The Exploration-Lab/ReLU data set (Joshi et al.'s own transformed TOFU) can be read with
:func:`load_relu` by users who have been granted access; nothing here downloads it otherwise.
"""

from __future__ import annotations

import inspect
import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from .facts import Fact, FormatCorpus, as_format_corpus, fact_coverage, fold
from .format_items import (
    LETTERS,
    base_item,
    check_context_facts,
    check_n_options,
    comprehension_context,
    item_seed_of,
    mcqa_fields,
    mcqa_item,
    one_line,
    options_block,
    overlap,
    pick_fillers,
    value_distractors,
    values_by_relation,
)
from .tofu import TofuSource

__all__ = [
    "FORMATS",
    "MCQA_STYLE_FORMATS",
    "LETTERS",
    "RELU_HUB_NAME",
    "build_mcqa",
    "build_cloze",
    "build_analogy",
    "build_odd_one_out",
    "build_comprehension_qa",
    "build_comprehension_mcqa",
    "build_all_formats",
    "count_items",
    "format_coverage",
    "load_relu",
]

FORMATS = ("mcqa", "cloze", "analogy", "odd_one_out", "comprehension_qa", "comprehension_mcqa")
#: Formats scored as a choice among lettered options.
MCQA_STYLE_FORMATS = ("mcqa", "analogy", "odd_one_out", "comprehension_mcqa")
RELU_HUB_NAME = "Exploration-Lab/ReLU"
SETS = ("forget", "retain")

#: The synthetic attribute that *is* the author's name: "A1 : A1 :: A2 : ?" would be trivial.
_IDENTITY_ATTRIBUTES = frozenset({"name"})


# =============================================================================================
# Items.
# =============================================================================================


def build_mcqa(source: TofuSource | FormatCorpus, forget_split: str, n_options: int, seed: int,
               max_items_per_set: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """MCQA: ``"Question: {q}\\nA. {o1}\\n...\\nAnswer:"``. Options: synthetic, the true value and
    values of the same attribute held by other authors; real TOFU, the answer and its perturbed answers."""
    check_n_options(n_options)
    corpus = as_format_corpus(source, forget_split, max_items_per_set)
    table = values_by_relation(corpus)
    out: dict[str, list[dict[str, Any]]] = {}
    for name, facts in corpus.eval_sets().items():
        items = [mcqa_item("mcqa", f, corpus, table, n_options, seed, f.question) for f in facts]
        out[name] = [i for i in items if i is not None]
    return out


def build_cloze(source: TofuSource | FormatCorpus, forget_split: str, n_options: int,
                seed: int, max_items_per_set: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """Cloze: the question and the answer up to its final entity; the target is that entity
    (synthetic: the value). ``n_options`` is accepted for a uniform signature and unused."""
    corpus = as_format_corpus(source, forget_split, max_items_per_set)
    out: dict[str, list[dict[str, Any]]] = {}
    for name, facts in corpus.eval_sets().items():
        items = []
        for fact in facts:
            if fact.span is None:
                continue
            start, end = fact.span
            prefix = fact.answer[:start]
            items.append({
                **base_item("cloze", fact, seed, item_seed_of(seed, "cloze", fact)),
                "answer_prefix": prefix,
                "target": fact.answer[start:end],
                "answer_suffix": fact.answer[end:],
                "span_rule": fact.span_rule,
                "prompt": f"Question: {fact.question}\nAnswer: {prefix}___",  # for display only
            })
        out[name] = items
    return out


def build_analogy(source: TofuSource | FormatCorpus, forget_split: str, n_options: int,
                  seed: int, max_items_per_set: int | None = None,
                  n_context_pairs: int = 2) -> dict[str, list[dict[str, Any]]]:
    """Analogy: ``"A1 : v1 :: A2 : v2 :: Aq : ?"`` with context pairs from retain-split authors (never
    the query author, never the query's value) and options = the query's value and other authors'
    values of the same relation (never a value of the query author or of a context pair).

    One item per (author, relation, value) of the evaluation set; synthetic "name" facts are left out
    (the value is the author), as are facts whose author has no known name.
    """
    check_n_options(n_options)
    if n_context_pairs < 1:
        raise ValueError(f"n_context_pairs must be >= 1, got {n_context_pairs!r}")
    corpus = as_format_corpus(source, forget_split, max_items_per_set)
    table = values_by_relation(corpus)
    context_pool: dict[str, list[Fact]] = defaultdict(list)
    for fact in corpus.corpus:
        if fact.relation_key and fact.value and fact.author and fact.author_index in corpus.retain_authors:
            context_pool[fact.relation_key].append(fact)
    out: dict[str, list[dict[str, Any]]] = {}
    for name, facts in corpus.eval_sets().items():
        items, seen = [], set()
        for fact in facts:
            if not (fact.relation and fact.value and fact.author) or fact.relation in _IDENTITY_ATTRIBUTES:
                continue
            key = (fact.author_index, fact.relation, fold(fact.value))
            if key in seen:
                continue
            item_seed = item_seed_of(seed, "analogy", fact)
            rng = random.Random(item_seed)
            candidates = sorted({f.author_index: f for f in context_pool[fact.relation_key or ""]
                                 if f.author_index != fact.author_index and not overlap(f.value or "", fact.value)
                                 }.values(), key=lambda f: f.author_index)
            if len(candidates) < n_context_pairs:
                continue
            context = rng.sample(candidates, n_context_pairs)
            wrong = value_distractors(fact, table, n_options - 1, rng, exclude=[c.value or "" for c in context])
            if wrong is None:
                continue
            seen.add(key)
            chain = " :: ".join([f"{c.author} : {c.value}" for c in context] + [f"{fact.author} : ?"])
            items.append({
                **base_item("analogy", fact, seed, item_seed),
                **mcqa_fields(chain, fact.value, wrong, rng),
                "relation": fact.relation,
                "value": fact.value,
                "context_pairs": [[c.author, c.value] for c in context],
                "context_authors": [c.author_index for c in context],
            })
        out[name] = items
    return out


def build_odd_one_out(source: TofuSource | FormatCorpus, forget_split: str, n_options: int,
                      seed: int, max_items_per_set: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """Odd-one-out: one fact (answer) of the item's set among ``n_options - 1`` facts of the other set;
    the odd one is the item's fact. Forget items: 1 forget + 3 retain facts; retain items: 1 retain +
    3 forget facts.

    Fillers come from the other set's whole evaluation file, preferably the same relation (synthetic:
    the same attribute) from distinct authors, so the odd one cannot be told by its topic
    (``same_relation`` records whether that was possible), then any facts of distinct authors, then
    any facts (a corpus with one forget author).
    """
    check_n_options(n_options)
    corpus = as_format_corpus(source, forget_split, max_items_per_set)
    full = as_format_corpus(source, forget_split, None) if max_items_per_set is not None else corpus
    pools = {"forget": full.retain, "retain": full.forget}  # fillers: the other set
    stem = "Which of these statements is the odd one out?"
    out: dict[str, list[dict[str, Any]]] = {}
    for name, facts in corpus.eval_sets().items():
        items = []
        for fact in facts:
            item_seed = item_seed_of(seed, "odd_one_out", fact)
            rng = random.Random(item_seed)
            fillers, same_relation = pick_fillers(fact, pools[name], n_options - 1, rng)
            if fillers is None:
                continue
            item = {**base_item("odd_one_out", fact, seed, item_seed),
                    **mcqa_fields(stem, fact.answer, [f.answer for f in fillers], rng)}
            by_text = {one_line(f.answer): f for f in [fact, *fillers]}
            item["option_authors"] = [by_text[o].author_index for o in item["options"]]
            item["option_sets"] = [by_text[o].set for o in item["options"]]
            item["same_relation"] = same_relation
            item["relation"] = fact.relation
            items.append(item)
        out[name] = items
    return out


def build_comprehension_qa(source: TofuSource | FormatCorpus, forget_split: str, n_options: int,
                           seed: int, max_items_per_set: int | None = None,
                           max_context_facts: int | None = 5) -> dict[str, list[dict[str, Any]]]:
    """Comprehension, Q&A: ``"Context: {the author's answers}\\nQuestion: {q}\\nAnswer:"``, scored by the
    mean ROUGE-1/2/L F of the greedy answer against ``answer``.

    The context holds the fact's own answer and up to ``max_context_facts - 1`` other answers of the
    author (None: all of them; the default 5 keeps real-TOFU prompts near 300 tokens and synthetic ones
    inside a tiny model's 256 positions). ``n_options`` is unused.
    """
    check_context_facts(max_context_facts)
    corpus = as_format_corpus(source, forget_split, max_items_per_set)
    by_author = corpus.facts_by_author()
    out: dict[str, list[dict[str, Any]]] = {}
    for name, facts in corpus.eval_sets().items():
        items = []
        for fact in facts:
            answers = comprehension_context(fact, by_author, seed, max_context_facts)
            context = " ".join(answers)
            body = f"Context: {context}\n{fact.question}"
            items.append({
                **base_item("comprehension_qa", fact, seed, item_seed_of(seed, "comprehension_qa", fact)),
                "context": context,
                "context_answers": answers,
                "body": body,
                "prompt": f"Context: {context}\nQuestion: {fact.question}\nAnswer:",
            })
        out[name] = items
    return out


def build_comprehension_mcqa(source: TofuSource | FormatCorpus, forget_split: str, n_options: int,
                             seed: int, max_items_per_set: int | None = None,
                             max_context_facts: int | None = 5) -> dict[str, list[dict[str, Any]]]:
    """Comprehension, MCQA: the same context as :func:`build_comprehension_qa`, then the MCQA of the fact."""
    check_n_options(n_options)
    check_context_facts(max_context_facts)
    corpus = as_format_corpus(source, forget_split, max_items_per_set)
    by_author = corpus.facts_by_author()
    table = values_by_relation(corpus)
    out: dict[str, list[dict[str, Any]]] = {}
    for name, facts in corpus.eval_sets().items():
        items = []
        for fact in facts:
            answers = comprehension_context(fact, by_author, seed, max_context_facts)
            context = " ".join(answers)
            item = mcqa_item("comprehension_mcqa", fact, corpus, table, n_options, seed,
                              f"Context: {context}\n{fact.question}", prompt_head="")
            if item is None:
                continue
            # the raw prompt keeps a "Question:" line after the context, as in comprehension_qa
            options = options_block(item["options"])
            item["prompt"] = f"Context: {context}\nQuestion: {fact.question}\n{options}\nAnswer:"
            item["context"] = context
            item["context_answers"] = answers
            items.append(item)
        out[name] = items
    return out


_BUILDERS = {
    "mcqa": build_mcqa,
    "cloze": build_cloze,
    "analogy": build_analogy,
    "odd_one_out": build_odd_one_out,
    "comprehension_qa": build_comprehension_qa,
    "comprehension_mcqa": build_comprehension_mcqa,
}


def build_all_formats(source: TofuSource | FormatCorpus, forget_split: str, n_options: int,
                      seed: int, max_items_per_set: int | None = None,
                      formats: Sequence[str] = FORMATS, **options: Any) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Every format (or those named): ``{format: {"forget": [...], "retain": [...]}}``. Extra keyword
    options (``n_context_pairs``, ``max_context_facts``) go to the builders that take them."""
    unknown = [f for f in formats if f not in _BUILDERS]
    if unknown:
        raise ValueError(f"unknown format(s) {', '.join(unknown)}; known: {', '.join(FORMATS)}")
    accepted = {name for fmt in formats for name in inspect.signature(_BUILDERS[fmt]).parameters}
    stray = sorted(set(options) - accepted)
    if stray:
        raise TypeError(f"no builder of {', '.join(formats)} takes option(s) {', '.join(stray)}")
    corpus = as_format_corpus(source, forget_split, None)  # read once; each builder applies the cap itself
    out = {}
    for fmt in formats:
        builder = _BUILDERS[fmt]
        kwargs = {k: v for k, v in options.items() if k in inspect.signature(builder).parameters}
        out[fmt] = builder(corpus, forget_split, n_options, seed, max_items_per_set, **kwargs)
    return out


def count_items(items_by_format: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, dict[str, int]]:
    return {fmt: {s: len(items) for s, items in sets.items()} for fmt, sets in items_by_format.items()}


# =============================================================================================
# Coverage of the heuristics.
# =============================================================================================


def format_coverage(source: TofuSource | FormatCorpus, forget_split: str, n_options: int,
                    seed: int) -> dict[str, Any]:
    """:func:`unlearnkit.data.facts.fact_coverage` (author names, cloze spans, relations), and what it gives:
    ``items`` per format and set built with ``n_options`` and ``seed``, and ``analogy_fact_share`` = share of
    evaluation facts that became an analogy item."""
    corpus = as_format_corpus(source, forget_split)
    counts = count_items(build_all_formats(corpus, forget_split, n_options, seed))
    n_eval = {s: len(f) for s, f in corpus.eval_sets().items()}
    return {**fact_coverage(corpus, forget_split), "items": counts,
            "analogy_fact_share": {s: counts["analogy"][s] / n_eval[s] for s in SETS}}


# =============================================================================================
# ReLU (Joshi et al.'s released transformations of TOFU).
# =============================================================================================


def load_relu(config: str, split: str | None = None, name_or_path: str = RELU_HUB_NAME, **load_kwargs: Any):
    """Load Joshi et al.'s ReLU data set (their own format transformations of TOFU): from the Hub by name, or
    from a local copy of it (``name_or_path`` a folder in the Hub repository's layout: a README.md whose
    ``configs`` name each subset's files, and one folder of Parquet files per subset).

    **Gated and non-commercial**: ``Exploration-Lab/ReLU`` is licensed CC BY-NC-SA 4.0, and the Hub
    requires accepting its terms (research use only, no redistribution) with a logged-in account
    (``huggingface-cli login``) before it can be downloaded. Nothing in unlearnkit calls this function;
    it downloads only when you call it with the Hub name.

    ``config`` is one of the data set's subsets: ``"mcqa"``, ``"cloze"``, ``"analogy"``,
    ``"odd-one-out"``, ``"comprehension"``; ``split`` names a file of it (e.g. ``"forget10"``; some
    subsets suffix the split, e.g. ``"forget10_cloze"``: list them with
    ``datasets.get_dataset_split_names(name_or_path, config)``). Returns what ``datasets.load_dataset``
    returns (a ``DatasetDict`` when ``split`` is None). Its rows follow ReLU's own schema (e.g. MCQA:
    ``question``, ``A``..``D``, ``answer``), not the item dicts of this module.
    """
    import datasets  # only this optional path needs it

    return datasets.load_dataset(name_or_path, config, split=split, **load_kwargs)
