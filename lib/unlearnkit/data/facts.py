"""The facts behind the format-transformed evaluation (docs/metrics.md §6, Joshi et al.): each Q&A row of the
corpus read into a :class:`Fact` that knows its author, what its answer states (a relation and its value) and the
span a cloze masks. :mod:`unlearnkit.data.formats` builds the items of every format from these facts.

Which facts are asked
    forget = ``<forget_split>_perturbed`` (the forget facts with TOFU's perturbed answers); retain =
    ``retain_perturbed``, the retain set TOFU itself evaluates, for symmetry with the TOFU metrics
    (not the synthetic corpus's ``retain_heldout``: those authors are never trained on, so they measure
    generalisation, not retained knowledge). ``max_items_per_set`` keeps that many facts of each file spread
    evenly over its authors (:func:`spread_over_authors`: the first rows would cover only the first authors), the
    same facts in every format; each fact keeps its row number in the file.

Synthetic corpus (``source.authors()`` is not None): exact by construction. The ``attribute`` and
``value`` fields say what each answer states: MCQA options are the value against other authors'
values of the same attribute, the cloze masks the value inside the answer, analogy relations are the
attributes, and author names come from ``authors.json``.

Real TOFU has no such fields, so the same information is recovered by documented heuristics
(:mod:`unlearnkit.data.tofu_heuristics`; coverage: :func:`fact_coverage`; rows a heuristic cannot handle are
skipped, never guessed):

* author index = position in ``full`` // 20 (TOFU is 200 authors x 20 contiguous questions; the
  perturbed files are verbatim row blocks of ``full``: found by matching the (question, answer) pair);
* author name = the capitalised multi-word span (particles like "van", "de", "Al-" allowed) found in
  the most of the author's 20 questions, if it is in at least 10 of them (one TOFU author is never named);
* cloze span = the *last entity* of the answer: a quoted title, else a date / number, else a capitalised
  span (``City, Country`` joined), ignoring sentence-initial single words ("Yes", "His") and anything
  the question already contains (copyable, not recalled); failing that, the last phrase of at most 5
  words that ends a clause after "is / was / are / were / in / by / as / of / for / with / to / into /
  on / from / about" and an optional article or possessive (``span_rule`` says which rule). On TOFU
  forget10 / retain_perturbed ~97 % / ~96 % of answers get a span, ~60 % of them from an entity rule;
* analogy triples (author, relation, value) come from questions whose phrasing recurs across authors:
  7 relations (birthplace, birth_date, genre, parents, award, first_book, gender), each a regular
  expression over the question with the author's name replaced, plus an extractor of the value from
  the answer (a place after "born in", a date, the phrase before "genre", the father's and mother's
  professions, an award name, the first quoted title, a gender word). Only ~15 % of TOFU's free-form
  questions ask such a relation (every author has at least one), so ~14 % of the evaluation facts
  become analogies. MCQA options are the answer and TOFU's perturbed answers; odd-one-out and
  comprehension use whole answers as facts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .tofu import QUESTIONS_PER_AUTHOR, TofuSource, retain_split_for
from .tofu_heuristics import RELATIONS, extract_relation, find_author_name, find_cloze_span, fold

__all__ = [
    "RELATIONS",
    "Fact",
    "FormatCorpus",
    "fold",
    "load_format_corpus",
    "as_format_corpus",
    "find_author_name",
    "find_cloze_span",
    "extract_relation",
    "fact_coverage",
    "spread_over_authors",
]


# =============================================================================================
# Facts: one source Q&A row with everything the formats need.
# =============================================================================================


@dataclass
class Fact:
    """One Q&A row of the corpus with what the formats need to know about it."""

    set: str | None  # "forget" | "retain" for evaluation rows, None for the rest of the corpus
    source_split: str
    source_row: int
    author_index: int
    author: str | None
    question: str
    answer: str
    wrong_answers: list[str] = field(default_factory=list)
    relation: str | None = None  # synthetic: the attribute; TOFU: one of RELATIONS or None
    relation_key: str | None = None  # facts whose values are comparable (synthetic: attribute + slot)
    value: str | None = None  # what the answer states for `relation`
    span: tuple[int, int] | None = None  # the cloze span in `answer`
    span_rule: str | None = None


@dataclass
class FormatCorpus:
    """Facts of one corpus and forget split, ready for every builder (built once, reused)."""

    kind: str  # "synthetic" | "tofu"
    forget_split: str
    forget: list[Fact]
    retain: list[Fact]
    corpus: list[Fact]  # every author row of the corpus (`full`): the pool of distractors and contexts
    author_names: dict[int, str | None]
    forget_authors: frozenset[int]
    retain_authors: frozenset[int]  # authors of the retain split (context pairs of analogies)

    def eval_sets(self) -> dict[str, list[Fact]]:
        return {"forget": self.forget, "retain": self.retain}

    def facts_by_author(self) -> dict[int, list[Fact]]:
        grouped: dict[int, list[Fact]] = defaultdict(list)
        for fact in self.corpus:
            grouped[fact.author_index].append(fact)
        return grouped



# =============================================================================================
# Loading a corpus into facts.
# =============================================================================================


def _synthetic_facts(rows: Sequence[dict[str, Any]], split: str, fact_set: str | None,
                     names: dict[int, str | None]) -> list[Fact]:
    facts = []
    slot_of: dict[int, int] = defaultdict(int)
    for i, row in enumerate(rows):
        author = int(row["author_index"])
        slot = slot_of[author]  # the synthetic items of an author are written in slot order
        slot_of[author] += 1
        value = row["value"]
        start = row["answer"].rfind(value)
        facts.append(Fact(
            set=fact_set, source_split=split, source_row=i, author_index=author,
            author=names.get(author, row.get("author")), question=row["question"], answer=row["answer"],
            wrong_answers=list(row.get("perturbed_answer", [])), relation=row["attribute"],
            relation_key=f"{row['attribute']}#{slot}", value=value,
            span=(start, start + len(value)) if start >= 0 else None,
            span_rule="value" if start >= 0 else None,
        ))
    return facts


def _tofu_facts(rows: Sequence[dict[str, Any]], split: str, fact_set: str | None, author_of_row: list[int],
                names: dict[int, str | None]) -> list[Fact]:
    facts = []
    for i, row in enumerate(rows):
        author = author_of_row[i]
        name = names.get(author)
        relation, value = extract_relation(row["question"], row["answer"], name)
        span = find_cloze_span(row["question"], row["answer"])
        facts.append(Fact(
            set=fact_set, source_split=split, source_row=i, author_index=author, author=name,
            question=row["question"], answer=row["answer"], wrong_answers=list(row.get("perturbed_answer", [])),
            relation=relation if value else None, relation_key=relation if value else None, value=value,
            span=span[:2] if span else None, span_rule=span[2] if span else None,
        ))
    return facts


def _tofu_author_indices(rows: Sequence[dict[str, Any]], full: Sequence[dict[str, Any]], split: str) -> list[int]:
    """Author index of each row: its position in ``full`` // 20, found by the (question, answer) pair."""
    position = {}
    for i, row in enumerate(full):
        position.setdefault((row["question"], row["answer"]), i)
    indices = []
    for i, row in enumerate(rows):
        key = (row["question"], row["answer"])
        if key not in position:
            raise ValueError(f"{split} row {i} is not in the 'full' split; cannot tell its author")
        indices.append(position[key] // QUESTIONS_PER_AUTHOR)
    return indices


def load_format_corpus(source: TofuSource, forget_split: str,
                       max_items_per_set: int | None = None) -> FormatCorpus:
    """Read the evaluation rows (forget: ``<forget_split>_perturbed``, retain: ``retain_perturbed``)
    and the whole corpus (``full``) of ``source`` into facts."""
    retain_split = retain_split_for(forget_split)
    if max_items_per_set is not None and max_items_per_set < 1:
        raise ValueError(f"max_items_per_set must be >= 1 or None, got {max_items_per_set!r}")
    forget_file, retain_file = f"{forget_split}_perturbed", "retain_perturbed"
    forget_rows = source.load(forget_file)
    retain_rows = source.load(retain_file)
    full_rows = source.load("full")
    records = source.authors()
    if records is not None:
        names: dict[int, str | None] = {int(r["index"]): r["name"] for r in records}
        corpus = _synthetic_facts(full_rows, "full", None, names)
        forget = _synthetic_facts(forget_rows, forget_file, "forget", names)
        retain = _synthetic_facts(retain_rows, retain_file, "retain", names)
        forget_authors = frozenset(int(r["author_index"]) for r in source.load(forget_split))
        retain_authors = frozenset(int(r["author_index"]) for r in source.load(retain_split))
        kind = "synthetic"
    else:
        full_authors = [i // QUESTIONS_PER_AUTHOR for i in range(len(full_rows))]
        n_authors = (len(full_rows) + QUESTIONS_PER_AUTHOR - 1) // QUESTIONS_PER_AUTHOR
        names = {a: find_author_name([r["question"] for r in full_rows[a * QUESTIONS_PER_AUTHOR:
                                                                        (a + 1) * QUESTIONS_PER_AUTHOR]])
                 for a in range(n_authors)}
        corpus = _tofu_facts(full_rows, "full", None, full_authors, names)
        forget = _tofu_facts(forget_rows, forget_file, "forget",
                             _tofu_author_indices(forget_rows, full_rows, forget_file), names)
        retain = _tofu_facts(retain_rows, retain_file, "retain",
                             _tofu_author_indices(retain_rows, full_rows, retain_file), names)
        forget_authors = frozenset(_tofu_author_indices(source.load(forget_split), full_rows, forget_split))
        retain_authors = frozenset(range(n_authors)) - forget_authors
        kind = "tofu"
    return FormatCorpus(kind=kind, forget_split=forget_split, forget=spread_over_authors(forget, max_items_per_set),
                        retain=spread_over_authors(retain, max_items_per_set), corpus=corpus, author_names=names,
                        forget_authors=forget_authors, retain_authors=retain_authors)


def spread_over_authors(facts: Sequence[Fact], n: int | None) -> list[Fact]:
    """``n`` of ``facts`` spread evenly over their authors (every author ``n // authors`` facts, one more for the
    first ``n % authors``; an author with fewer gives all and the rest go to the others), each author's at evenly
    spaced rows shifted by the author's rank, so that the attributes asked vary too; returned in file order. ``None`` keeps everything."""
    if n is None or n >= len(facts):
        return list(facts)
    by_author: dict[int, list[Fact]] = defaultdict(list)
    for fact in facts:
        by_author[fact.author_index].append(fact)
    quota = {a: 0 for a in by_author}
    left = n
    while left:
        open_authors = [a for a in by_author if quota[a] < len(by_author[a])]
        share, extra = divmod(left, len(open_authors))
        for i, a in enumerate(open_authors):
            take = min(share + (i < extra), len(by_author[a]) - quota[a])
            quota[a] += take
            left -= take
    chosen = set()
    for rank, (a, rows) in enumerate(by_author.items()):
        k, length = quota[a], len(rows)
        # evenly spaced, shifted by the author's rank: authors together ask every attribute, not only the first ones
        chosen.update(id(rows[((j * length) // k + rank) % length]) for j in range(k))
    return [fact for fact in facts if id(fact) in chosen]

def as_format_corpus(source: TofuSource | FormatCorpus, forget_split: str,
                     max_items_per_set: int | None = None) -> FormatCorpus:
    """The facts of ``source``: read (:func:`load_format_corpus`), or a corpus already read, capped to the first
    ``max_items_per_set`` evaluation facts of each set."""
    if isinstance(source, FormatCorpus):
        if source.forget_split != forget_split:
            raise ValueError(f"corpus was loaded for {source.forget_split!r}, not {forget_split!r}")
        if max_items_per_set is None:
            return source
        return replace(source, forget=spread_over_authors(source.forget, max_items_per_set),
                       retain=spread_over_authors(source.retain, max_items_per_set))
    return load_format_corpus(source, forget_split, max_items_per_set)


# =============================================================================================
# Coverage of the heuristics.
# =============================================================================================


def fact_coverage(source: TofuSource | FormatCorpus, forget_split: str) -> dict[str, Any]:
    """How much of the corpus each real-TOFU heuristic handles (exact 1.0 on the synthetic corpus).

    * ``author_names``: share of authors whose name was found;
    * ``cloze``: per set and for the whole corpus, the share of answers whose span came from each rule
      (quoted, date, capitalised, number, fallback, value) and ``covered`` = share with any span;
    * ``relations``: per relation, the corpus questions matched, those with a value extracted, and the
      authors with a value; ``rows_with_triple`` = share of corpus rows giving a triple,
      ``authors_with_triple`` = share of authors with at least one.
    """
    corpus = as_format_corpus(source, forget_split)
    n_authors = len({f.author_index for f in corpus.corpus})

    def cloze_stats(facts: Sequence[Fact]) -> dict[str, float]:
        rules = Counter(f.span_rule or "none" for f in facts)
        stats = {rule: count / len(facts) for rule, count in sorted(rules.items())}
        stats["covered"] = 1 - rules.get("none", 0) / len(facts)
        return stats

    matched: Counter[str] = Counter()
    extracted: Counter[str] = Counter()
    authors: dict[str, set[int]] = defaultdict(set)
    for fact in corpus.corpus:
        if corpus.kind == "tofu":
            relation, value = extract_relation(fact.question, fact.answer, fact.author)
        else:
            relation, value = fact.relation, fact.value
        if relation:
            matched[relation] += 1
            if value:
                extracted[relation] += 1
                authors[relation].add(fact.author_index)
    relations = {r: {"questions_matched": matched[r], "values_extracted": extracted[r], "authors": len(authors[r])}
                 for r in sorted(matched)}
    return {
        "kind": corpus.kind,
        "author_names": sum(n is not None for n in corpus.author_names.values()) / max(1, len(corpus.author_names)),
        "cloze": {"forget": cloze_stats(corpus.forget), "retain": cloze_stats(corpus.retain),
                  "corpus": cloze_stats(corpus.corpus)},
        "relations": relations,
        "rows_with_triple": sum(extracted.values()) / len(corpus.corpus),
        "authors_with_triple": len(set().union(*authors.values())) / n_authors if authors else 0.0,
    }
