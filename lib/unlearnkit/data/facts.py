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
(coverage: :func:`fact_coverage`; rows a heuristic cannot handle are skipped, never guessed):

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

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from .tofu import QUESTIONS_PER_AUTHOR, TofuSource, retain_split_for

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

#: An author name must appear in at least this many of the author's 20 questions.
_MIN_NAME_QUESTIONS = 10


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


@lru_cache(maxsize=65536)  # the same option and answer texts are compared many times
def fold(text: str) -> str:
    """Case-folded, whitespace collapsed: how two answer or option texts are compared."""
    return " ".join(text.casefold().split())


# =============================================================================================
# Real-TOFU heuristics.
# =============================================================================================

_CAP_TOKEN = r"[A-Z][\w'’+.&-]*"
_NAME_TOKEN = rf"(?:{_CAP_TOKEN}|\({_CAP_TOKEN}\))"  # "Alejandro (Alex) Fuentes"
_PARTICLES = ("van", "von", "de", "der", "den", "da", "del", "della", "di", "du", "dos", "das", "la", "le",
              "bin", "ibn", "al", "el", "y", "es", "ben")
_PARTICLE = "(?:" + "|".join(_PARTICLES) + ")"
_NAME_SPAN = re.compile(rf"{_NAME_TOKEN}(?:\s+(?:{_PARTICLE}\s+)*{_NAME_TOKEN})+")
#: Capitalised words that open questions and sentences; never the start of a name or entity.
_FUNCTION_WORDS = frozenset("""
    A An The This That These Those His Her Hers Their Its It He She They We You I My Our Your
    What Who Whom Whose How Where When Which Why Can Could Does Did Do Is Are Was Were Has Have Had
    Would Will Should Shall May Might Must Tell Please Name Describe Explain Yes No Not Also Although
    Though While With Without However Despite After Before Being Growing Like As In On At For From By
    Of To Into Over Under Apart Besides Beyond Since Until Unlike Upon Throughout Through Some Many Most
    One Another Each Every Any All Both Either Neither Such Several Sure Indeed Certainly Absolutely
    Winning Born Raised Having Given Because If Then There Here Now Today Currently Later Earlier
    Author Writer Notably Additionally Furthermore Moreover Overall Initially Eventually Ultimately
""".split())


def find_author_name(questions: Sequence[str], min_questions: int = _MIN_NAME_QUESTIONS) -> str | None:
    """The author's name: the capitalised multi-word span found in most of the author's questions.

    Ties go to the longer span ("Hsiao Yun-Hwa" over a shorter span of it). None unless the span is
    in at least ``min_questions`` questions: TOFU has one author who is only ever "the author".
    """
    def spans(question: str) -> set[str]:
        found = set()
        for m in _NAME_SPAN.finditer(question):
            tokens = m.group(0).split()
            while tokens and tokens[0] in _FUNCTION_WORDS:
                tokens = tokens[1:]
            span = re.sub(r"['’]s$", "", " ".join(tokens))
            if len(span.split()) >= 2:
                found.add(span)
        return found

    candidates = Counter(s for q in questions for s in spans(q))
    if not candidates:
        return None

    def n_questions(span: str) -> int:
        pattern = re.compile(r"(?<!\w)" + re.escape(span) + r"(?!\w)")
        return sum(bool(pattern.search(q)) for q in questions)

    best = max(candidates, key=lambda s: (n_questions(s), len(s), s))
    return best if n_questions(best) >= min_questions else None


# --------------------------------------------------------------------------- entity spans

_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_DATE = re.compile(
    rf"\b(?:{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"  # July 16, 1965
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+\d{{4}}"  # 25th May 1938
    r"|\d{1,2}/\d{1,2}/\d{2,4}"  # 03/06/1985
    rf"|{_MONTH}\s+\d{{4}})\b"  # May 1968
)
_NUMBER = re.compile(r"(?<![\w/])\d[\d,.]*\d(?![\w/])|(?<![\w/])\d(?![\w/])")
_QUOTED = re.compile(r'"([^"\n]+)"|“([^”\n]+)”|(?<!\w)\'([A-Z](?:[^\'\n]|\'(?=\w))*?)\'(?!\w)')
_CAP_SPAN = re.compile(
    rf"{_CAP_TOKEN}(?:\s+(?:(?:{_PARTICLE}|of|the|for|and|in|on)\s+)*{_CAP_TOKEN})*"
)
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)$")
#: Fallback: a short phrase ending a clause, after the last copula or preposition of the answer.
_FALLBACK_KEYWORDS = r"(?:is|was|are|were|in|by|as|of|for|with|to|into|on|from|about)"
_FALLBACK_KEYWORD = re.compile(rf"\b{_FALLBACK_KEYWORDS}\s+")
_FALLBACK_NP = re.compile(
    rf"\b{_FALLBACK_KEYWORDS}\s+"
    r"(?:(?:a|an|the|his|her|their|its|this|these)\s+)?"
    r"(?P<np>[\w'’+-]+(?:\s+[\w'’+-]+){0,4})(?=\s*(?:[.,;!?]|$))"
)


def _entity_candidates(answer: str) -> list[tuple[int, int, str]]:
    """(start, end, rule) of every entity of the answer; quoted titles and dates win over the
    capitalised words and numbers inside them."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, int, str]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    for m in _QUOTED.finditer(answer):
        group = next(g for g in (1, 2, 3) if m.group(g) is not None)
        start, end = m.span(group)
        text = m.group(group)
        # A title ending in "." or "," inside the quotes ("Rebirth on The Prado.") keeps its punctuation
        # out of the span: the span is the title.
        stripped = text.rstrip(".,;!? ")
        end = start + len(stripped)
        if stripped:
            found.append((start, end, "quoted"))
            taken.append(m.span())
    for m in _DATE.finditer(answer):
        if free(*m.span()):
            found.append((*m.span(), "date"))
            taken.append(m.span())
    spans = []
    for m in _CAP_SPAN.finditer(answer):
        tokens = [(t.start() + m.start(), t.end() + m.start(), t.group(0)) for t in re.finditer(r"\S+", m.group(0))]
        if m.start() == 0 or _SENTENCE_START.search(answer[:m.start()]):
            # Sentence-initial: drop function words ("The", "His") from the front; a lone remaining
            # word is a sentence opener ("Growing", "Yes"), not an entity.
            while tokens and tokens[0][2] in _FUNCTION_WORDS:
                tokens = tokens[1:]
            if len(tokens) < 2:
                continue
        elif len(tokens) == 1 and tokens[0][2] in _FUNCTION_WORDS | {"I"}:
            continue
        start, end = tokens[0][0], tokens[-1][1]
        # The possessive and a trailing "." or "-" belong to the sentence, not the entity.
        text = re.sub(r"(?:['’]s?)$", "", answer[start:end]).rstrip(".&-")
        end = start + len(text)
        if end > start and free(start, end):
            spans.append((start, end))
    # "Mexico City, Mexico": join two capitalised spans separated by exactly ", " (a place), never
    # across ", and" (a list).
    joined: list[tuple[int, int]] = []
    for start, end in spans:
        if joined and answer[joined[-1][1]:start] == ", ":
            joined[-1] = (joined[-1][0], end)
        else:
            joined.append((start, end))
    found += [(s, e, "capitalised") for s, e in joined]
    for s, e in joined:
        taken.append((s, e))
    for m in _NUMBER.finditer(answer):
        if free(*m.span()):
            found.append((*m.span(), "number"))
    return sorted(found)


def find_cloze_span(question: str, answer: str) -> tuple[int, int, str] | None:
    """(start, end, rule) of the span of ``answer`` a cloze masks: its last entity that the question
    does not already contain, else the fallback phrase; None if neither exists (see module docstring)."""
    q = fold(question)

    def copyable(text: str) -> bool:
        return fold(text) in q

    entities = [(s, e, rule) for s, e, rule in _entity_candidates(answer) if not copyable(answer[s:e])]
    if entities:
        return max(entities, key=lambda c: (c[0], c[1]))
    # Try every keyword position from the end: finditer's non-overlapping matches would miss a later
    # phrase nested in an earlier one ("the nature of good and evil").
    for keyword in reversed(list(_FALLBACK_KEYWORD.finditer(answer))):
        m = _FALLBACK_NP.match(answer, keyword.start())
        if m and not copyable(m.group("np")):
            return m.start("np"), m.end("np"), "fallback"
    return None


# --------------------------------------------------------------------------- relations

_PLACE = rf"{_CAP_TOKEN}(?:(?:\s+|\s+{_PARTICLE}\s+|,\s+){_CAP_TOKEN})*"
_GENDERS = (("LGBTQ+", r"LGBTQ\+?"), ("non-binary", r"non-binary|nonbinary"), ("transgender", r"transgender"),
            ("genderqueer", r"genderqueer"), ("genderfluid", r"gender-?fluid"), ("female", r"female|woman"),
            ("male", r"male|man"))
_AWARD_WORDS = re.compile(r"\b(?:Award|Prize|Medal|Trophy|Honou?r|Fellowship|Laureate|Grant|Order|Circle)\b")
_OCCUPATION_ADJECTIVES = ("well-respected", "respected", "distinguished", "renowned", "notable", "well-known",
                          "reputable", "seasoned", "successful", "dedicated", "skilled", "talented", "famous",
                          "hardworking", "hard-working", "local", "prominent", "dedicated", "pioneering", "professional")


def _occupation(group: str) -> str:
    """A profession after "was" / "worked as": an optional article and praise, then 1-3 words that
    end the clause (before punctuation, "and", "while" or "who")."""
    praise = "|".join(re.escape(a) for a in _OCCUPATION_ADJECTIVES)
    return (rf"(?:an?\s+|the\s+)?(?:(?:{praise})\s+)*"
            rf"(?P<{group}>[A-Za-z][\w'-]*(?:\s+[A-Za-z][\w'-]*){{0,2}}?)"
            r"(?=\s*(?:[,.;]|\s+and\b|\s+while\b|\s+who\b|$))")


def _question_without_name(question: str, author: str | None) -> str:
    text = question.replace(author, "{author}") if author else question
    return " ".join(text.casefold().split())


# Relation -> (question pattern on the lower-cased question with the name replaced, words that make a
# question about the relation ask something else: influence, impact, other books ...).
_RELATION_QUESTIONS: dict[str, tuple[re.Pattern[str], re.Pattern[str] | None]] = {
    "birthplace": (re.compile(r"\b(?:where|which city|what city|birthplace|place of birth)\b.*\bborn\b|"
                              r"\bbirthplace\b|\bplace of birth\b"),
                   re.compile(r"\bhow\b|\binfluenc|\bimpact|\bfull name\b")),
    "birth_date": (re.compile(r"\bwhen was\b.*\bborn\b|\bdate of birth\b|\bbirth ?date\b|\bborn on what\b"),
                   re.compile(r"\bwhere\b|\bplace\b|\bcity\b|\bhow\b|\binfluenc")),
    "genre": (re.compile(r"^(?:what|which|in which|in what)\s+(?:is\s+the\s+)?(?:primary\s+|main\s+|literary\s+)?"
                         r"(?:genre|type of (?:books|literature)|kind of (?:books|literature))\b|"
                         r"^what is the (?:primary |main )?genre of\b"),
              re.compile(r"\bother\b|\boutside\b|\bbesides\b|\bimpact|\binfluenc|\bcontribut|\bbook by\b|"
                         r"\bwhy\b|\bhow\b|\bdistinguish")),
    "parents": (re.compile(r"^(?=.*\bparents?['’]?(?:\s|$|\?))(?=.*\b(?:professions?|occupations?|jobs?|employment|"
                           r"do for a living|work|vocations?|careers?|background)\b)|"
                           r"\bwho (?:are|were) (?:the parents|{author}['’]s parents)"),
                re.compile(r"\binfluenc|\bimpact|\bhow\b|\brole\b|\bshape|\binspir|\bbooks?\b")),
    "award": (re.compile(r"^(?:has|did|what|which|can you|could you|are there|is there)\b.*\b(?:awards?|prizes?|"
                         r"honou?rs?|recognition)\b"),
              re.compile(r"\bhow\b|\bimpact|\bapart\b|\bother\b|\bbesides\b|\bwhen\b|\bwhy\b|\bmore than\b|"
                         r"\bbook\b|\baward-winning\b")),
    "first_book": (re.compile(r"\b(?:first|debut) (?:published )?(?:book|novel|work)\b"),
                   re.compile(r"\bhow old\b|\bwhen\b|\bwhy\b|\bhow\b|\binspir|\bimpact|\binfluenc|\byear\b")),
    "gender": (re.compile(r"\bgender\b"),
               re.compile(r"\binfluenc|\bimpact|\bshape|\bperspective|\brole\b|\bethnicity\b|\bborn\b|\bgenre\b")),
}
RELATIONS = tuple(_RELATION_QUESTIONS)


def _first_quoted(answer: str) -> str | None:
    for m in _QUOTED.finditer(answer):
        text = next(g for g in m.groups() if g is not None).rstrip(".,;!? ")
        if text:
            return text
    return None


def _extract_value(relation: str, answer: str) -> str | None:
    """The value an answer states for ``relation``, or None when the answer does not match the
    extractor (it then gives no analogy triple)."""
    if relation == "birthplace":
        m = re.search(r"\b(?:born(?: and (?:raised|brought up))?(?: on [^.]*?)?\s+in|hails from|is from|comes from|"
                      rf"originates from)\s+(?:the\s+(?:[\w-]+\s+){{0,4}}?(?:city|capital|town) of\s+)?(?P<v>{_PLACE})",
                      answer)
        return m.group("v") if m else None
    if relation == "birth_date":
        m = _DATE.search(answer)
        return m.group(0) if m else None
    if relation == "genre":
        for pattern in (r"\b(?:in|to|within|of|for|on|into) the (?P<v>[\w+'’()&-]+(?: [\w+'’()&-]+){0,3}?) genre\b",
                        r"\bgenre of (?P<v>[\w+'’()&-]+(?: [\w+'’()&-]+){0,3}?)(?=[.,;]| and | with |$)",
                        r"\bgenre is (?P<v>[\w+'’()&-]+(?: [\w+'’()&-]+){0,3}?)(?=[.,;]| and | with |$)",
                        r"\bwrites? (?:in |primarily in )?(?P<v>[\w+'’()&-]+(?: [\w+'’()&-]+){0,3}?) "
                        r"(?:books|novels|literature)\b"):
            m = re.search(pattern, answer)
            if m and m.group("v").split()[0].casefold() not in ("the", "a", "an", "his", "her", "their", "this"):
                return m.group("v")
        return None
    if relation == "parents":
        verbs = r"(?:was|is|(?:worked|works|served|was employed)(?: \w+ly)? as|had been)"
        father = re.search(rf"\bfather,?\s+{verbs}\s+{_occupation('job')}", answer, re.I)
        mother = re.search(rf"\bmother,?\s+(?:{verbs}\s+)?{_occupation('job')}", answer[father.end():], re.I) \
            if father else None
        if father and mother:
            return f"father: {father.group('job').lower()}; mother: {mother.group('job').lower()}"
        m = re.search(rf"\b(?:child|son|daughter) of {_occupation('f')} and {_occupation('m')}", answer, re.I) or \
            re.search(r"\bborn to (?:an?|the) (?P<f>[\w' -]+?) father and (?:an?|the) (?P<m>[\w' -]+?) mother\b",
                      answer, re.I)
        return f"father: {m.group('f').lower()}; mother: {m.group('m').lower()}" if m else None
    if relation == "award":
        quoted = _first_quoted(answer)
        if quoted and _AWARD_WORDS.search(quoted):
            return quoted
        for s, e, rule in _entity_candidates(answer):
            if rule == "capitalised" and _AWARD_WORDS.search(answer[s:e]):
                return answer[s:e]
        return None
    if relation == "first_book":
        return _first_quoted(answer)
    if relation == "gender":
        for canonical, pattern in _GENDERS:
            if re.search(rf"(?<![\w-])(?:{pattern})(?![\w])", answer, re.I):
                return canonical
        return None
    raise ValueError(f"unknown relation {relation!r}; known: {', '.join(RELATIONS)}")


def extract_relation(question: str, answer: str, author: str | None) -> tuple[str | None, str | None]:
    """(relation, value) of a real-TOFU Q&A pair: the first relation whose question pattern matches
    (and whose exclusion pattern does not), and the value its extractor finds in the answer
    (None if it finds none). (None, None) if no relation matches."""
    q = _question_without_name(question, author)
    for relation, (asks, excluded) in _RELATION_QUESTIONS.items():
        if asks.search(q) and not (excluded and excluded.search(q)):
            value = _extract_value(relation, answer)
            # "Lagos, Nigeria." -> "Lagos, Nigeria": the sentence's punctuation is not the value's
            value = re.sub(r"['’]s$", "", value.strip().rstrip(".,;:!? ")) if value else None
            return relation, value or None
    return None, None


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


def load_format_corpus(source: TofuSource, forget_split: str = "forget10",
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


def fact_coverage(source: TofuSource | FormatCorpus, forget_split: str = "forget10") -> dict[str, Any]:
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
