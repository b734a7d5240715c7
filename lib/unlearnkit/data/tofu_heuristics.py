"""The real-TOFU heuristics that read a fact out of a free-form Q&A row: the author's name, the span a cloze masks
and the relation an answer states with its value (what they do and how much they cover: :mod:`unlearnkit.data.facts`
and its :func:`~unlearnkit.data.facts.fact_coverage`), and :func:`fold`, how two answer or option texts compare."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

#: An author name must appear in at least this many of the author's 20 questions.
_MIN_NAME_QUESTIONS = 10


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
    does not already contain, else the fallback phrase; None if neither exists (see :mod:`unlearnkit.data.facts`)."""
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
