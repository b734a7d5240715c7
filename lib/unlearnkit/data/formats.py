"""The same facts in other formats (docs/metrics.md §6, Joshi et al., "Towards Robust Evaluation of
Unlearning via Data Transformations"): MCQA, cloze, analogy, odd-one-out and comprehension.

Learning and unlearning stay in the Q&A format; these items only *ask* the forget and retain facts
differently, so a model that merely suppresses the Q&A surface form shows up as a gap between formats.

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
* comprehension items add ``context`` (the author's answers joined into one paragraph).

Which facts are asked
    forget = ``<forget_split>_perturbed`` (the forget facts with TOFU's perturbed answers); retain =
    ``retain_perturbed``, the retain set TOFU itself evaluates, for symmetry with the TOFU metrics
    (not the synthetic corpus's ``retain_heldout``: those authors are never trained on, so they measure
    generalisation, not retained knowledge). ``max_items_per_set`` keeps the first rows of each file (as
    TOFU's ``max_items``), so every format covers the same facts.

Synthetic corpus (``source.authors()`` is not None): exact by construction. The ``attribute`` and
``value`` fields say what each answer states: MCQA options are the value against other authors'
values of the same attribute, the cloze masks the value inside the answer, analogy relations are the
attributes, and author names come from ``authors.json``.

Real TOFU has no such fields, so the same information is recovered by documented heuristics
(coverage: :func:`format_coverage`; rows a heuristic cannot handle are skipped, never guessed):

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
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from .tofu import QUESTIONS_PER_AUTHOR, TofuSource, retain_split_for

__all__ = [
    "FORMATS",
    "MCQA_STYLE_FORMATS",
    "LETTERS",
    "RELU_HUB_NAME",
    "RELATIONS",
    "Fact",
    "FormatCorpus",
    "load_format_corpus",
    "build_mcqa",
    "build_cloze",
    "build_analogy",
    "build_odd_one_out",
    "build_comprehension_qa",
    "build_comprehension_mcqa",
    "build_all_formats",
    "count_items",
    "format_coverage",
    "find_author_name",
    "find_cloze_span",
    "extract_relation",
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
def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


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
        return _fold(a) == _fold(b)
    return wa in wb or wb in wa


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
    q = _fold(question)

    def copyable(text: str) -> bool:
        return _fold(text) in q

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
    forget_rows = source.load(forget_file, limit=max_items_per_set)
    retain_rows = source.load(retain_file, limit=max_items_per_set)
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
    return FormatCorpus(kind=kind, forget_split=forget_split, forget=forget, retain=retain, corpus=corpus,
                        author_names=names, forget_authors=forget_authors, retain_authors=retain_authors)


def _as_corpus(source: TofuSource | FormatCorpus, forget_split: str, max_items_per_set: int | None) -> FormatCorpus:
    if isinstance(source, FormatCorpus):
        if source.forget_split != forget_split:
            raise ValueError(f"corpus was loaded for {source.forget_split!r}, not {forget_split!r}")
        if max_items_per_set is None:
            return source
        return replace(source, forget=source.forget[:max_items_per_set], retain=source.retain[:max_items_per_set])
    return load_format_corpus(source, forget_split, max_items_per_set)


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
    if len({_fold(o) for o in options}) != len(options):
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
            folded = _fold(value)
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
        if _fold(wrong) != _fold(fact.answer) and _fold(wrong) not in {_fold(w) for w in pool}:
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
    corpus = _as_corpus(source, forget_split, max_items_per_set)
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
    corpus = _as_corpus(source, forget_split, max_items_per_set)
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
    corpus = _as_corpus(source, forget_split, max_items_per_set)
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
            key = (fact.author_index, fact.relation, _fold(fact.value))
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
    corpus = _as_corpus(source, forget_split, max_items_per_set)
    full = _as_corpus(source, forget_split, None) if max_items_per_set is not None else corpus
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
    own = _fold(fact.answer)

    def usable(f: Fact) -> bool:
        return f.author_index != fact.author_index and _fold(f.answer) != own

    def distinct_texts(facts: Iterable[Fact]) -> list[Fact]:
        seen: dict[str, Fact] = {}
        for f in facts:
            seen.setdefault(_fold(f.answer), f)
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
                           max_context_facts: int | None) -> str:
    """The author's answers as one paragraph: the fact's own answer plus others of the author, in a
    seeded order (shared by the QA and MCQA items of the same fact)."""
    rng = random.Random(f"{_RNG_NAMESPACE}/{seed}/comprehension-context/{fact.set}/{fact.source_row}")
    others = [f.answer for f in by_author.get(fact.author_index, []) if _fold(f.answer) != _fold(fact.answer)]
    others = list(dict.fromkeys(others))
    if max_context_facts is not None:
        others = rng.sample(others, min(len(others), max_context_facts - 1))
    answers = [fact.answer, *others]
    rng.shuffle(answers)
    return " ".join(_one_line(a) for a in answers)


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
    corpus = _as_corpus(source, forget_split, max_items_per_set)
    by_author = corpus.facts_by_author()
    out: dict[str, list[dict[str, Any]]] = {}
    for name, facts in corpus.eval_sets().items():
        items = []
        for fact in facts:
            context = _comprehension_context(fact, by_author, seed, max_context_facts)
            body = f"Context: {context}\n{fact.question}"
            items.append({
                **_base_item("comprehension_qa", fact, seed, _item_seed(seed, "comprehension_qa", fact)),
                "context": context,
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
    corpus = _as_corpus(source, forget_split, max_items_per_set)
    by_author = corpus.facts_by_author()
    table = _values_by_relation(corpus)
    out: dict[str, list[dict[str, Any]]] = {}
    for name, facts in corpus.eval_sets().items():
        items = []
        for fact in facts:
            context = _comprehension_context(fact, by_author, seed, max_context_facts)
            item = _mcqa_item("comprehension_mcqa", fact, corpus, table, n_options, seed,
                              f"Context: {context}\n{fact.question}", prompt_head="")
            if item is None:
                continue
            # the raw prompt keeps a "Question:" line after the context, as in comprehension_qa
            options = _options_block(item["options"])
            item["prompt"] = f"Context: {context}\nQuestion: {fact.question}\n{options}\nAnswer:"
            item["context"] = context
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
    corpus = _as_corpus(source, forget_split, None)  # read once; each builder applies the cap itself
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
    """How much of the corpus each real-TOFU heuristic handles (exact 1.0 on the synthetic corpus).

    * ``author_names``: share of authors whose name was found;
    * ``cloze``: per set and for the whole corpus, the share of answers whose span came from each rule
      (quoted, date, capitalised, number, fallback, value) and ``covered`` = share with any span;
    * ``relations``: per relation, the corpus questions matched, those with a value extracted, and the
      authors with a value; ``rows_with_triple`` = share of corpus rows giving a triple,
      ``authors_with_triple`` = share of authors with at least one;
    * ``items``: items per format and set with the default options, and ``analogy_fact_share`` = share
      of evaluation facts that became an analogy item.
    """
    corpus = _as_corpus(source, forget_split, None)
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
    counts = count_items(build_all_formats(corpus, forget_split))
    n_eval = {s: len(f) for s, f in corpus.eval_sets().items()}
    return {
        "kind": corpus.kind,
        "author_names": sum(n is not None for n in corpus.author_names.values()) / max(1, len(corpus.author_names)),
        "cloze": {"forget": cloze_stats(corpus.forget), "retain": cloze_stats(corpus.retain),
                  "corpus": cloze_stats(corpus.corpus)},
        "relations": relations,
        "rows_with_triple": sum(extracted.values()) / len(corpus.corpus),
        "authors_with_triple": len(set().union(*authors.values())) / n_authors if authors else 0.0,
        "items": counts,
        "analogy_fact_share": {s: counts["analogy"][s] / n_eval[s] for s in SETS},
    }


# =============================================================================================
# ReLU (Joshi et al.'s released transformations of TOFU).
# =============================================================================================


def load_relu(config: str, split: str | None = None, hub_name: str = RELU_HUB_NAME, **load_kwargs: Any):
    """Load Joshi et al.'s ReLU data set (their own format transformations of TOFU) from the Hub.

    **Gated and non-commercial**: ``Exploration-Lab/ReLU`` is licensed CC BY-NC-SA 4.0, and the Hub
    requires accepting its terms (research use only, no redistribution) with a logged-in account
    (``huggingface-cli login``) before it can be downloaded. Nothing in unlearnkit calls this function;
    it downloads only when you call it.

    ``config`` is one of the data set's subsets: ``"mcqa"``, ``"cloze"``, ``"analogy"``,
    ``"odd-one-out"``, ``"comprehension"``; ``split`` names a file of it (e.g. ``"forget10"``; some
    subsets suffix the split, e.g. ``"forget10_cloze"``: list them with
    ``datasets.get_dataset_split_names(hub_name, config)``). Returns what ``datasets.load_dataset``
    returns (a ``DatasetDict`` when ``split`` is None). Its rows follow ReLU's own schema (e.g. MCQA:
    ``question``, ``A``..``D``, ``answer``), not the item dicts of this module.
    """
    import datasets  # only this optional path needs it

    return datasets.load_dataset(hub_name, config, split=split, **load_kwargs)
