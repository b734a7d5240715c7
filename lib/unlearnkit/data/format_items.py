"""The pieces every format's items are made of: an item's seed and common fields, lettered options in a seeded
order, the distractors (other authors' values, TOFU's perturbed answers), the fillers of an odd-one-out and the
paragraph of a comprehension item. :mod:`unlearnkit.data.formats` builds each format from them."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from .facts import Fact, FormatCorpus
from .tofu_heuristics import fold

LETTERS = "ABCDEFGHIJ"

_RNG_NAMESPACE = "unlearnkit/formats"


@lru_cache(maxsize=65536)
def _padded_words(text: str) -> str:
    """' w1 w2 ... ': the text's words, lower-cased, padded so that substring tests match whole words."""
    return " " + " ".join(re.findall(r"\w+", text.casefold())) + " "


@lru_cache(maxsize=262144)
def overlap(a: str, b: str) -> bool:
    """True if the words of one text contain the other's, in order ("Oslo" and "Oslo, Norway"): such
    a distractor would be partly right, or make the right option partly wrong. Whole words, so "male"
    and "female" do not overlap."""
    wa, wb = _padded_words(a), _padded_words(b)
    if not wa.strip() or not wb.strip():
        return fold(a) == fold(b)
    return wa in wb or wb in wa


def item_seed_of(seed: int, fmt: str, fact: Fact) -> str:
    # A string seed: ``random.Random(str)`` hashes it with SHA-512, stable across processes.
    return f"{_RNG_NAMESPACE}/{seed}/{fmt}/{fact.set}/{fact.source_row}"


def base_item(fmt: str, fact: Fact, seed: int, item_seed: str) -> dict[str, Any]:
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


def one_line(text: str) -> str:
    """Whitespace collapsed: a few TOFU answers hold newlines, which would break the lettered layout."""
    return " ".join(text.split())


def options_block(options: Sequence[str]) -> str:
    return "\n".join(f"{letter}. {option}" for letter, option in zip(LETTERS, options))


def mcqa_fields(stem: str, correct: str, wrong: Sequence[str], rng: random.Random,
                 prompt_head: str = "Question: ") -> dict[str, Any]:
    """Lettered options in a seeded order; the correct option is there exactly once."""
    correct, wrong = one_line(correct), [one_line(w) for w in wrong]
    options = [correct, *wrong]
    if len({fold(o) for o in options}) != len(options):
        raise ValueError(f"options are not distinct: {options!r}")
    rng.shuffle(options)
    answer_index = options.index(correct)
    body = f"{stem}\n{options_block(options)}"
    return {
        "body": body,
        "prompt": f"{prompt_head}{body}\nAnswer:",
        "options": options,
        "letters": list(LETTERS[:len(options)]),
        "answer_index": answer_index,
        "answer_letter": LETTERS[answer_index],
        "correct_option": correct,
    }


def check_n_options(n_options: int) -> None:
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
    kept = [v for v in unique.values() if not any(overlap(v, x) for x in excluded)]
    return sorted(kept)  # sorted: the seeded sample must not depend on the corpus's row order


def values_by_relation(corpus: FormatCorpus) -> dict[str, dict[int, set[str]]]:
    """relation -> author -> the values the author has for it."""
    table: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for fact in corpus.corpus:
        if fact.relation and fact.value:
            table[fact.relation][fact.author_index].add(fact.value)
    return table


def value_distractors(fact: Fact, table: dict[str, dict[int, set[str]]], k: int, rng: random.Random,
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


def mcqa_item(fmt: str, fact: Fact, corpus: FormatCorpus, table, n_options: int, seed: int,
               stem: str, prompt_head: str = "Question: ", rng_key: str | None = None) -> dict[str, Any] | None:
    item_seed = rng_key or item_seed_of(seed, fmt, fact)
    rng = random.Random(item_seed)
    if corpus.kind == "synthetic":
        correct, wrong = fact.value or "", value_distractors(fact, table, n_options - 1, rng)
    else:
        correct, wrong = fact.answer, _answer_distractors(fact, n_options - 1, rng)
    if wrong is None:
        return None
    return {**base_item(fmt, fact, seed, item_seed), **mcqa_fields(stem, correct, wrong, rng, prompt_head)}


def pick_fillers(fact: Fact, pool: Sequence[Fact], k: int, rng: random.Random) -> tuple[list[Fact] | None, bool]:
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


def comprehension_context(fact: Fact, by_author: dict[int, list[Fact]], seed: int,
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
    return [one_line(a) for a in answers]


def check_context_facts(max_context_facts: int | None) -> None:
    if max_context_facts is not None and max_context_facts < 1:
        raise ValueError(f"max_context_facts must be >= 1 or None, got {max_context_facts!r}")
