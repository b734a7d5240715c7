"""The same facts in other formats (docs/metrics.md §6, Joshi et al., "Towards Robust Evaluation of
Unlearning via Data Transformations"): MCQA, cloze, analogy, odd-one-out and comprehension.

Learning and unlearning stay in the Q&A format; these items only *ask* the forget and retain facts
differently, so a model that merely suppresses the Q&A surface form shows up as a gap between formats.
Which facts are asked, and how real TOFU's facts are read, is :mod:`unlearnkit.data.facts`.

Every builder takes ``(source, forget_split="forget10", n_options=4, seed=0, max_items_per_set=None)``
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
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from .facts import Fact, FormatCorpus, as_format_corpus, fact_coverage, fold
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
LETTERS = "ABCDEFGHIJ"
RELU_HUB_NAME = "Exploration-Lab/ReLU"
SETS = ("forget", "retain")

_RNG_NAMESPACE = "unlearnkit/formats"
#: The synthetic attribute that *is* the author's name: "A1 : A1 :: A2 : ?" would be trivial.
_IDENTITY_ATTRIBUTES = frozenset({"name"})


@lru_cache(maxsize=65536)
def _padded_words(text: str) -> str:
    """' w1 w2 ... ': the text's words, lower-cased, padded so that substring tests match whole words."""
    return " " + " ".join(re.findall(r"\w+", text.casefold())) + " "


@lru_cache(maxsize=262144)
def _overlap(a: str, b: str) -> bool:
    """True if the words of one text contain the other's, in order ("Oslo" and "Oslo, Norway"): such
    a distractor would be partly right, or make the right option partly wrong. Whole words, so "male"
    and "female" do not overlap."""
    wa, wb = _padded_words(a), _padded_words(b)
    if not wa.strip() or not wb.strip():
        return fold(a) == fold(b)
    return wa in wb or wb in wa


# =============================================================================================
# Items.
# =============================================================================================


def _item_seed(seed: int, fmt: str, fact: Fact) -> str:
    # A string seed: ``random.Random(str)`` hashes it with SHA-512, stable across processes.
    return f"{_RNG_NAMESPACE}/{seed}/{fmt}/{fact.set}/{fact.source_row}"


def _base_item(fmt: str, fact: Fact, seed: int, item_seed: str) -> dict[str, Any]:
    return {
        "id": f"{fmt}/{fact.set}/{fact.source_row}",
        "format": fmt,
        "set": fact.set,
        "source_split": fact.source_split,
        "source_row": fact.source_row,
        "author_index": fact.author_index,
        "author": fact.author,
        "question": fact.question,
        "answer": fact.answer,
        "seed": seed,
        "item_seed": item_seed,
    }


def _one_line(text: str) -> str:
    """Whitespace collapsed: a few TOFU answers hold newlines, which would break the lettered layout."""
    return " ".join(text.split())


def _options_block(options: Sequence[str]) -> str:
    return "\n".join(f"{letter}. {option}" for letter, option in zip(LETTERS, options))


def _mcqa_fields(stem: str, correct: str, wrong: Sequence[str], rng: random.Random,
                 prompt_head: str = "Question: ") -> dict[str, Any]:
    """Lettered options in a seeded order; the correct option is there exactly once."""
    correct, wrong = _one_line(correct), [_one_line(w) for w in wrong]
    options = [correct, *wrong]
    if len({fold(o) for o in options}) != len(options):
        raise ValueError(f"options are not distinct: {options!r}")
    rng.shuffle(options)
    answer_index = options.index(correct)
    body = f"{stem}\n{_options_block(options)}"
    return {
        "body": body,
        "prompt": f"{prompt_head}{body}\nAnswer:",
        "options": options,
        "letters": list(LETTERS[:len(options)]),
        "answer_index": answer_index,
        "answer_letter": LETTERS[answer_index],
        "correct_option": correct,
    }


def _check_n_options(n_options: int) -> None:
    if isinstance(n_options, bool) or not isinstance(n_options, int) or not 2 <= n_options <= len(LETTERS):
        raise ValueError(f"n_options must be an int in [2, {len(LETTERS)}], got {n_options!r}")


def _distinct_wrong_values(correct: str, candidates: Iterable[str], exclude: Iterable[str]) -> list[str]:
    """Candidate values, deduplicated, that neither overlap the correct value nor any excluded one."""
    excluded = [correct, *exclude]
    unique: dict[str, str] = {}
    for value in candidates:
        if value:
            folded = fold(value)
            unique[folded] = min(unique.get(folded, value), value)  # the same spelling whatever the order
    kept = [v for v in unique.values() if not any(_overlap(v, x) for x in excluded)]
    return sorted(kept)  # sorted: the seeded sample must not depend on the corpus's row order


def _values_by_relation(corpus: FormatCorpus) -> dict[str, dict[int, set[str]]]:
    """relation -> author -> the values the author has for it."""
    table: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for fact in corpus.corpus:
        if fact.relation and fact.value:
            table[fact.relation][fact.author_index].add(fact.value)
    return table


def _value_distractors(fact: Fact, table: dict[str, dict[int, set[str]]], k: int, rng: random.Random,
                       exclude: Iterable[str] = ()) -> list[str] | None:
    """k values of the fact's relation held by other authors, never one the fact's author holds."""
    by_author = table.get(fact.relation or "", {})
    own = by_author.get(fact.author_index, set()) | {fact.value or ""}
    pool = _distinct_wrong_values(fact.value or "", (v for a, vs in by_author.items() if a != fact.author_index
                                                     for v in vs), [*own, *exclude])
    return rng.sample(pool, k) if len(pool) >= k else None


def _answer_distractors(fact: Fact, k: int, rng: random.Random) -> list[str] | None:
    """k of the fact's perturbed answers (real TOFU's wrong answers)."""
    pool = []
    for wrong in fact.wrong_answers:
        if fold(wrong) != fold(fact.answer) and fold(wrong) not in {fold(w) for w in pool}:
            pool.append(wrong)
    return rng.sample(pool, k) if len(pool) >= k else None


def _mcqa_item(fmt: str, fact: Fact, corpus: FormatCorpus, table, n_options: int, seed: int,
               stem: str, prompt_head: str = "Question: ", rng_key: str | None = None) -> dict[str, Any] | None:
    item_seed = rng_key or _item_seed(seed, fmt, fact)
    rng = random.Random(item_seed)
    if corpus.kind == "synthetic":
        correct, wrong = fact.value or "", _value_distractors(fact, table, n_options - 1, rng)
    else:
        correct, wrong = fact.answer, _answer_distractors(fact, n_options - 1, rng)
    if wrong is None:
        return None
    return {**_base_item(fmt, fact, seed, item_seed), **_mcqa_fields(stem, correct, wrong, rng, prompt_head)}


def build_mcqa(source: TofuSource | FormatCorpus, forget_split: str = "forget10", n_options: int = 4, seed: int = 0,
               max_items_per_set: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """MCQA: ``"Question: {q}\\nA. {o1}\\n...\\nAnswer:"``. Options: synthetic, the true value and
    values of the same attribute held by other authors; real TOFU, the answer and its perturbed answers."""
    _check_n_options(n_options)
    corpus = as_format_corpus(source, forget_split, max_items_per_set)
    table = _values_by_relation(corpus)
    out: dict[str, list[dict[str, Any]]] = {}
    for name, facts in corpus.eval_sets().items():
        items = [_mcqa_item("mcqa", f, corpus, table, n_options, seed, f.question) for f in facts]
        out[name] = [i for i in items if i is not None]
    return out


def build_cloze(source: TofuSource | FormatCorpus, forget_split: str = "forget10", n_options: int = 4,
                seed: int = 0, max_items_per_set: int | None = None) -> dict[str, list[dict[str, Any]]]:
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
                **_base_item("cloze", fact, seed, _item_seed(seed, "cloze", fact)),
                "answer_prefix": prefix,
                "target": fact.answer[start:end],
                "answer_suffix": fact.answer[end:],
                "span_rule": fact.span_rule,
                "prompt": f"Question: {fact.question}\nAnswer: {prefix}___",  # for display only
            })
        out[name] = items
    return out


def build_analogy(source: TofuSource | FormatCorpus, forget_split: str = "forget10", n_options: int = 4,
                  seed: int = 0, max_items_per_set: int | None = None,
                  n_context_pairs: int = 2) -> dict[str, list[dict[str, Any]]]:
    """Analogy: ``"A1 : v1 :: A2 : v2 :: Aq : ?"`` with context pairs from retain-split authors (never
    the query author, never the query's value) and options = the query's value and other authors'
    values of the same relation (never a value of the query author or of a context pair).

    One item per (author, relation, value) of the evaluation set; synthetic "name" facts are left out
    (the value is the author), as are facts whose author has no known name.
    """
    _check_n_options(n_options)
    if n_context_pairs < 1:
        raise ValueError(f"n_context_pairs must be >= 1, got {n_context_pairs!r}")
    corpus = as_format_corpus(source, forget_split, max_items_per_set)
    table = _values_by_relation(corpus)
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
            item_seed = _item_seed(seed, "analogy", fact)
            rng = random.Random(item_seed)
            candidates = sorted({f.author_index: f for f in context_pool[fact.relation_key or ""]
                                 if f.author_index != fact.author_index and not _overlap(f.value or "", fact.value)
                                 }.values(), key=lambda f: f.author_index)
            if len(candidates) < n_context_pairs:
                continue
            context = rng.sample(candidates, n_context_pairs)
            wrong = _value_distractors(fact, table, n_options - 1, rng, exclude=[c.value or "" for c in context])
            if wrong is None:
                continue
            seen.add(key)
            chain = " :: ".join([f"{c.author} : {c.value}" for c in context] + [f"{fact.author} : ?"])
            items.append({
                **_base_item("analogy", fact, seed, item_seed),
                **_mcqa_fields(chain, fact.value, wrong, rng),
                "relation": fact.relation,
                "value": fact.value,
                "context_pairs": [[c.author, c.value] for c in context],
                "context_authors": [c.author_index for c in context],
            })
        out[name] = items
    return out


def build_odd_one_out(source: TofuSource | FormatCorpus, forget_split: str = "forget10", n_options: int = 4,
                      seed: int = 0, max_items_per_set: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """Odd-one-out: one fact (answer) of the item's set among ``n_options - 1`` facts of the other set;
    the odd one is the item's fact. Forget items: 1 forget + 3 retain facts; retain items: 1 retain +
    3 forget facts.

    Fillers come from the other set's whole evaluation file, preferably the same relation (synthetic:
    the same attribute) from distinct authors, so the odd one cannot be told by its topic
    (``same_relation`` records whether that was possible), then any facts of distinct authors, then
    any facts (a corpus with one forget author).
    """
    _check_n_options(n_options)
    corpus = as_format_corpus(source, forget_split, max_items_per_set)
    full = as_format_corpus(source, forget_split, None) if max_items_per_set is not None else corpus
    pools = {"forget": full.retain, "retain": full.forget}  # fillers: the other set
    stem = "Which of these statements is the odd one out?"
    out: dict[str, list[dict[str, Any]]] = {}
    for name, facts in corpus.eval_sets().items():
        items = []
        for fact in facts:
            item_seed = _item_seed(seed, "odd_one_out", fact)
            rng = random.Random(item_seed)
            fillers, same_relation = _pick_fillers(fact, pools[name], n_options - 1, rng)
            if fillers is None:
                continue
            item = {**_base_item("odd_one_out", fact, seed, item_seed),
                    **_mcqa_fields(stem, fact.answer, [f.answer for f in fillers], rng)}
            by_text = {_one_line(f.answer): f for f in [fact, *fillers]}
            item["option_authors"] = [by_text[o].author_index for o in item["options"]]
            item["option_sets"] = [by_text[o].set for o in item["options"]]
            item["same_relation"] = same_relation
            item["relation"] = fact.relation
            items.append(item)
        out[name] = items
    return out


def _pick_fillers(fact: Fact, pool: Sequence[Fact], k: int, rng: random.Random) -> tuple[list[Fact] | None, bool]:
    own = fold(fact.answer)

    def usable(f: Fact) -> bool:
        return f.author_index != fact.author_index and fold(f.answer) != own

    def distinct_texts(facts: Iterable[Fact]) -> list[Fact]:
        seen: dict[str, Fact] = {}
        for f in facts:
            seen.setdefault(fold(f.answer), f)
        return list(seen.values())

    def one_per_author(facts: Sequence[Fact]) -> list[Fact]:
        by_author: dict[int, list[Fact]] = defaultdict(list)
        for f in facts:
            by_author[f.author_index].append(f)
        if len(by_author) < k:
            return []
        authors = rng.sample(sorted(by_author), k)
        return [rng.choice(by_author[a]) for a in authors]

    candidates = distinct_texts(f for f in pool if usable(f))
    if fact.relation:
        same = [f for f in candidates if f.relation == fact.relation]
        chosen = one_per_author(same)
        if chosen:
            return chosen, True
    chosen = one_per_author(candidates)
    if chosen:
        return chosen, False
    if len(candidates) >= k:
        return rng.sample(candidates, k), False
    return None, False


def _comprehension_context(fact: Fact, by_author: dict[int, list[Fact]], seed: int,
                           max_context_facts: int | None) -> list[str]:
    """The author's answers that make the paragraph: the fact's own answer plus others of the author, in a
    seeded order (shared by the QA and MCQA items of the same fact)."""
    rng = random.Random(f"{_RNG_NAMESPACE}/{seed}/comprehension-context/{fact.set}/{fact.source_row}")
    others = [f.answer for f in by_author.get(fact.author_index, []) if fold(f.answer) != fold(fact.answer)]
    others = list(dict.fromkeys(others))
    if max_context_facts is not None:
        others = rng.sample(others, min(len(others), max_context_facts - 1))
    answers = [fact.answer, *others]
    rng.shuffle(answers)
    return [_one_line(a) for a in answers]


def _check_context_facts(max_context_facts: int | None) -> None:
    if max_context_facts is not None and max_context_facts < 1:
        raise ValueError(f"max_context_facts must be >= 1 or None, got {max_context_facts!r}")


def build_comprehension_qa(source: TofuSource | FormatCorpus, forget_split: str = "forget10", n_options: int = 4,
                           seed: int = 0, max_items_per_set: int | None = None,
                           max_context_facts: int | None = 5) -> dict[str, list[dict[str, Any]]]:
    """Comprehension, Q&A: ``"Context: {the author's answers}\\nQuestion: {q}\\nAnswer:"``, scored by the
    mean ROUGE-1/2/L F of the greedy answer against ``answer``.

    The context holds the fact's own answer and up to ``max_context_facts - 1`` other answers of the
    author (None: all of them; the default 5 keeps real-TOFU prompts near 300 tokens and synthetic ones
    inside a tiny model's 256 positions). ``n_options`` is unused.
    """
    _check_context_facts(max_context_facts)
    corpus = as_format_corpus(source, forget_split, max_items_per_set)
    by_author = corpus.facts_by_author()
    out: dict[str, list[dict[str, Any]]] = {}
    for name, facts in corpus.eval_sets().items():
        items = []
        for fact in facts:
            answers = _comprehension_context(fact, by_author, seed, max_context_facts)
            context = " ".join(answers)
            body = f"Context: {context}\n{fact.question}"
            items.append({
                **_base_item("comprehension_qa", fact, seed, _item_seed(seed, "comprehension_qa", fact)),
                "context": context,
                "context_answers": answers,
                "body": body,
                "prompt": f"Context: {context}\nQuestion: {fact.question}\nAnswer:",
            })
        out[name] = items
    return out


def build_comprehension_mcqa(source: TofuSource | FormatCorpus, forget_split: str = "forget10", n_options: int = 4,
                             seed: int = 0, max_items_per_set: int | None = None,
                             max_context_facts: int | None = 5) -> dict[str, list[dict[str, Any]]]:
    """Comprehension, MCQA: the same context as :func:`build_comprehension_qa`, then the MCQA of the fact."""
    _check_n_options(n_options)
    _check_context_facts(max_context_facts)
    corpus = as_format_corpus(source, forget_split, max_items_per_set)
    by_author = corpus.facts_by_author()
    table = _values_by_relation(corpus)
    out: dict[str, list[dict[str, Any]]] = {}
    for name, facts in corpus.eval_sets().items():
        items = []
        for fact in facts:
            answers = _comprehension_context(fact, by_author, seed, max_context_facts)
            context = " ".join(answers)
            item = _mcqa_item("comprehension_mcqa", fact, corpus, table, n_options, seed,
                              f"Context: {context}\n{fact.question}", prompt_head="")
            if item is None:
                continue
            # the raw prompt keeps a "Question:" line after the context, as in comprehension_qa
            options = _options_block(item["options"])
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


def build_all_formats(source: TofuSource | FormatCorpus, forget_split: str = "forget10", n_options: int = 4,
                      seed: int = 0, max_items_per_set: int | None = None,
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


def format_coverage(source: TofuSource | FormatCorpus, forget_split: str = "forget10") -> dict[str, Any]:
    """:func:`unlearnkit.data.facts.fact_coverage` (author names, cloze spans, relations), and what it gives:
    ``items`` per format and set with the default options, and ``analogy_fact_share`` = share of evaluation
    facts that became an analogy item."""
    corpus = as_format_corpus(source, forget_split)
    counts = count_items(build_all_formats(corpus, forget_split))
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
