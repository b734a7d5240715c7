"""A synthetic, TOFU-shaped corpus that a tiny model trained from scratch can memorise.

TOFU (Maini et al. 2024) describes 200 fictitious authors with 20 question/answer pairs each,
fine-tunes a model on all of them and asks it to forget the last 1 / 5 / 10 % of the authors.
The project's default run cannot download TOFU, so this module writes a folder with the same
file names and the same field names, generated from structured author records:

* every answer is one short sentence that contains the asked attribute value verbatim
  (recorded in the extra fields ``attribute`` and ``value``), so metrics can check it;
* attribute vocabularies are small (32 cities, 22 genres, 26 occupations, ...), so values
  recur across authors: a tiny model can learn them, and wrong answers for the truth-ratio
  metric are drawn from other authors' values or the same vocabulary;
* everything is derived from ``seed`` through string-seeded ``random.Random`` instances, which
  are stable across processes and Python versions (no dependency on ``PYTHONHASHSEED``).

The world-knowledge files (``world_facts*``, ``real_authors*``) hold real, common-knowledge
facts, the analogues of TOFU's files of the same names, which the base model is taught before
fine-tuning.

Two kinds of files no model is fine-tuned on come from streams of their own, so that adding them
left every other file byte for byte what generator 1.0.0 wrote:

* ``holdout01/05/10`` (TOFU's Hub configs of the same names): as many further authors as
  forget01/05/10, drawn by the same generator with names and book titles of their own, asked the
  same questions; open-unlearning's membership-inference metrics tell forget from holdout;
* ``forgetXX_alternates``: per forget question, 5 wrong but plausible answers in the answer's own
  phrasing (for AltPO), with other wrong values than the evaluation's ``perturbed_answer``.

Usage::

    from unlearnkit.data.synthetic import generate_synthetic_tofu
    folder = generate_synthetic_tofu("data/synthetic_tofu", seed=0)
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "ATTRIBUTES",
    "GENERATOR_VERSION",
    "MAX_QUESTIONS_PER_AUTHOR",
    "MIN_QUESTIONS_PER_AUTHOR",
    "AuthorRecord",
    "make_authors",
    "make_holdout_authors",
    "author_splits",
    "make_author_items",
    "make_alternate_answers",
    "make_world_facts",
    "make_real_authors",
    "generate_synthetic_tofu",
    "generated_version",
]

#: Bumped whenever the bytes written for the same arguments change. 1.1.0 added the holdout and alternates
#: files (and the manifest's ``holdout_authors``); every file 1.0.0 wrote, except the manifest, kept its bytes.
GENERATOR_VERSION = "unlearnkit.synthetic-tofu/1.1.0"

#: Prefix of every RNG seed string, so that streams of different purposes never coincide.
_RNG_NAMESPACE = "unlearnkit/synthetic-tofu"

MIN_AUTHORS = 10  # 10 % of 10 authors is 1 author, so every forget split is non-empty.
MAX_AUTHORS = 400  # the name vocabulary holds comfortably more unique full names than this.
N_PERTURBED_AUTHOR = 5  # TOFU: 5 perturbed answers per author question
N_PERTURBED_WORLD = 3  # TOFU: 3 perturbed answers per world-knowledge question
N_ALTERNATES = 5  # AltPO: alternate answers per forget question

# --------------------------------------------------------------------------------------------
# Vocabularies (written for this project).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Origin:
    """A country with two birth cities and names typical of it (names follow birthplace)."""

    country: str
    cities: tuple[str, ...]
    male_names: tuple[str, ...]
    female_names: tuple[str, ...]
    surnames: tuple[str, ...]


_ORIGINS: tuple[_Origin, ...] = (
    _Origin("Nigeria", ("Lagos", "Ibadan"), ("Chinedu", "Tunde", "Emeka", "Femi"),
            ("Adaeze", "Ngozi", "Funmilayo", "Chioma"), ("Okafor", "Adeyemi", "Nwosu", "Balogun", "Eze")),
    _Origin("Japan", ("Osaka", "Sapporo"), ("Haruto", "Kenji", "Takeshi", "Daichi"),
            ("Yui", "Sakura", "Aiko", "Hana"), ("Tanaka", "Morimoto", "Shimizu", "Kobayashi", "Hayashi")),
    _Origin("Brazil", ("Recife", "Curitiba"), ("Thiago", "Rafael", "Mateus", "Caio"),
            ("Larissa", "Beatriz", "Camila", "Juliana"), ("Carvalho", "Moreira", "Barbosa", "Nogueira", "Teixeira")),
    _Origin("India", ("Pune", "Chennai"), ("Arjun", "Vikram", "Rohan", "Sanjay"),
            ("Priya", "Ananya", "Kavya", "Meera"), ("Iyer", "Kulkarni", "Deshpande", "Menon", "Bhatt")),
    _Origin("Poland", ("Kraków", "Gdańsk"), ("Tomasz", "Jakub", "Piotr", "Marek"),
            ("Agnieszka", "Zofia", "Katarzyna", "Magda"), ("Nowak", "Mazur", "Wójcik", "Kowal", "Dudek")),
    _Origin("Egypt", ("Alexandria", "Aswan"), ("Karim", "Omar", "Tarek", "Youssef"),
            ("Nour", "Salma", "Yasmin", "Mariam"), ("Mansour", "El-Sayed", "Farouk", "Hamdy", "Naguib")),
    _Origin("Mexico", ("Oaxaca", "Guadalajara"), ("Diego", "Emilio", "Alejandro", "Mateo"),
            ("Valentina", "Ximena", "Lucía", "Renata"), ("Hernández", "Ortega", "Castillo", "Villanueva", "Rosales")),
    _Origin("Sweden", ("Uppsala", "Malmö"), ("Henrik", "Lars", "Anders", "Nils"),
            ("Astrid", "Ingrid", "Linnea", "Freja"), ("Lindqvist", "Bergström", "Sandberg", "Holm", "Ekström")),
    _Origin("Kenya", ("Mombasa", "Kisumu"), ("Kamau", "Baraka", "Juma", "Kipchoge"),
            ("Wanjiru", "Akinyi", "Njeri", "Zawadi"), ("Odhiambo", "Mwangi", "Kariuki", "Otieno", "Wekesa")),
    _Origin("Vietnam", ("Hanoi", "Da Nang"), ("Minh", "Tuan", "Quang", "Duc"),
            ("Linh", "Thao", "Huong", "Mai"), ("Nguyen", "Tran", "Pham", "Hoang", "Dang")),
    _Origin("Turkey", ("Izmir", "Trabzon"), ("Emre", "Murat", "Burak", "Kerem"),
            ("Elif", "Zeynep", "Defne", "Selin"), ("Yılmaz", "Demir", "Aydın", "Kaya", "Öztürk")),
    _Origin("Ireland", ("Galway", "Cork"), ("Cian", "Padraig", "Declan", "Ronan"),
            ("Aoife", "Niamh", "Siobhan", "Orla"), ("O'Brien", "Gallagher", "Byrne", "Doyle", "Kavanagh")),
    _Origin("Argentina", ("Rosario", "Mendoza"), ("Facundo", "Joaquín", "Nicolás", "Agustín"),
            ("Florencia", "Micaela", "Julieta", "Paula"), ("Giménez", "Fernández", "Sosa", "Benítez", "Acosta")),
    _Origin("South Korea", ("Busan", "Daegu"), ("Min-jun", "Ji-hoon", "Seo-jun", "Hyun-woo"),
            ("Seo-yeon", "Ji-woo", "Ha-eun", "Su-bin"), ("Kim", "Park", "Choi", "Jung", "Kang")),
    _Origin("Iran", ("Shiraz", "Tabriz"), ("Dariush", "Kian", "Reza", "Arash"),
            ("Shirin", "Parisa", "Leila", "Roya"), ("Tehrani", "Farahani", "Rostami", "Moradi", "Sadeghi")),
    _Origin("Ghana", ("Kumasi", "Accra"), ("Kwame", "Kofi", "Yaw", "Kwabena"),
            ("Ama", "Akosua", "Abena", "Efua"), ("Mensah", "Boateng", "Asante", "Owusu", "Appiah")),
)

#: Given names used for non-binary authors, combined with the surnames of their birth country.
_NEUTRAL_NAMES = ("Alex", "Robin", "Sasha", "Noa", "Kai", "Ariel", "Jude", "Rowan", "Eden", "Quinn")

_GENDERS = ("male", "female", "non-binary")
_GENDER_WEIGHTS = (45, 45, 10)

_GENRES = (
    "crime fiction", "historical fiction", "science fiction", "fantasy", "horror", "romance",
    "poetry", "literary fiction", "magical realism", "mystery", "thriller", "satire", "memoir",
    "travel writing", "children's literature", "young adult fiction", "gothic fiction",
    "dystopian fiction", "speculative fiction", "war fiction", "nature writing", "psychological fiction",
)

# Single words or short phrases; the article ("a"/"an") is derived from the first letter, so the
# list avoids words whose article the letter would get wrong (e.g. "university lecturer").
_OCCUPATIONS = (
    "baker", "carpenter", "nurse", "teacher", "tailor", "pharmacist", "librarian", "farmer",
    "mechanic", "architect", "electrician", "journalist", "photographer", "surgeon", "dentist",
    "accountant", "pilot", "chef", "police officer", "lawyer", "musician", "painter",
    "veterinarian", "translator", "engineer", "bus driver",
)

_AWARDS = (
    "the Golden Quill Prize", "the Silver Inkwell Award", "the Meridian Medal for Fiction",
    "the Harrowgate Literary Prize", "the Blue Heron Award", "the Northern Star Prize",
    "the Open Page Award", "the Lamplighter Prize", "the Kestrel Medal", "the Driftwood Book Award",
    "the Saffron Pen Prize", "the Iron Bough Award", "the Willowmere Fellowship",
    "the Crescent Moon Prize", "the Cedar Laurel Award", "the Copper Key Prize",
    "the Nightingale Medal", "the Evergreen Story Award", "the Fairhaven Prize",
    "the Stonebridge Medal", "the Ravenhall Prize", "the Juniper Award", "the Wild Orchid Prize",
    "the Tidewater Honour",
)

_THEMES = (
    "memory", "exile", "grief", "faith", "identity", "migration", "loneliness", "justice",
    "childhood", "freedom", "betrayal", "ambition", "forgiveness", "belonging", "redemption",
    "solitude", "resilience", "rebellion", "nostalgia", "mortality", "friendship", "displacement",
    "inheritance", "sacrifice",
)

# Book titles are built from three patterns over these words; none of the words is a theme,
# genre, occupation or award word, so a title never contains another attribute's value.
_TITLE_ADJECTIVES = (
    "Salt", "Silent", "Hollow", "Crimson", "Paper", "Amber", "Broken", "Distant", "Iron", "Glass",
    "Hidden", "Last", "Velvet", "Frozen", "Quiet", "Burning", "Forgotten", "Wandering", "Bitter",
    "Pale", "Narrow", "Sunken", "Painted", "Restless",
)
_TITLE_NOUNS = (
    "Orchard", "Lantern", "Harbor", "River", "Mirror", "Garden", "Bridge", "Tower", "Compass",
    "Window", "Lighthouse", "Forest", "Station", "Letter", "Island", "Archive", "Violin", "Shadow",
    "Feather", "Map", "Clock", "Well", "Bell", "House", "Road", "Sparrow", "Ladder", "Tide", "Kite",
    "Door",
)
_TITLE_ABSTRACTS = (
    "Small Hours", "Rain", "Ashes", "Distance", "Tomorrow", "Smoke", "Strangers", "Thunder",
    "Salt Water", "Lost Things",
)
_TITLE_TIMES = ("Dawn", "Dusk", "Midnight", "Noon", "Low Tide", "First Light")

_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)
_BIRTH_YEARS = (1930, 1995)


def _with_article(phrase: str) -> str:
    """'an engineer', 'a baker': the vocabularies are chosen so the first letter decides."""
    return ("an " if phrase[:1].lower() in "aeiou" else "a ") + phrase


def _join_list(items: Iterable[str]) -> str:
    """'a', 'a and b', 'a, b and c' - the one list format used in every answer."""
    items = list(items)
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def _quoted(titles: Iterable[str]) -> list[str]:
    return [f"'{t}'" for t in titles]


def _date_text(iso_date: str) -> str:
    """'1961-03-12' -> '12 March 1961' (no leading zero, no ordinal: regular for a tiny model)."""
    year, month, day = (int(part) for part in iso_date.split("-"))
    return f"{day} {_MONTHS[month - 1]} {year}"


def _random_iso_date(rng: random.Random) -> str:
    # Day 1..28 keeps every month valid without a calendar.
    return f"{rng.randint(*_BIRTH_YEARS):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


# --------------------------------------------------------------------------------------------
# Authors.
# --------------------------------------------------------------------------------------------


@dataclass
class AuthorRecord:
    """The structured facts about one fictitious author; every Q&A item is rendered from these."""

    index: int
    name: str
    gender: str  # "male" | "female" | "non-binary"
    birth_city: str
    birth_country: str
    birth_date: str  # ISO "YYYY-MM-DD"; answers use the text form of `birth_date_text`
    father_occupation: str
    mother_occupation: str
    genre: str
    awards: list[str] = field(default_factory=list)  # 1-2, the first is the "first major award"
    books: list[str] = field(default_factory=list)  # 2-3 titles, in publication order
    themes: list[str] = field(default_factory=list)  # 2-3, the first is the most central

    @property
    def birthplace(self) -> str:
        return f"{self.birth_city}, {self.birth_country}"

    @property
    def birth_date_text(self) -> str:
        return _date_text(self.birth_date)

    @property
    def birth_year(self) -> int:
        return int(self.birth_date[:4])


def _overlaps(title: str, others: Iterable[str]) -> bool:
    """True if `title` equals, contains or is contained in another title (case-insensitively),
    which would let a wrong title 'contain' the true one."""
    low = title.lower()
    return any(low in o.lower() or o.lower() in low for o in others)


def _make_title(rng: random.Random) -> str:
    pattern = rng.randrange(3)
    if pattern == 0:
        return f"The {rng.choice(_TITLE_ADJECTIVES)} {rng.choice(_TITLE_NOUNS)}"
    if pattern == 1:
        return f"The {rng.choice(_TITLE_NOUNS)} of {rng.choice(_TITLE_ABSTRACTS)}"
    return f"{rng.choice(_TITLE_ADJECTIVES)} {rng.choice(_TITLE_NOUNS)} at {rng.choice(_TITLE_TIMES)}"


def make_authors(n_authors: int, seed: int) -> list[AuthorRecord]:
    """`n_authors` fictitious authors with unique names and unique, non-overlapping book titles.

    Authors are drawn one after another from a single seeded stream, so the first k authors
    are the same for any `n_authors` >= k.
    """
    if isinstance(n_authors, bool) or not isinstance(n_authors, int) or not 1 <= n_authors <= MAX_AUTHORS:
        raise ValueError(f"n_authors must be an int in [1, {MAX_AUTHORS}], got {n_authors!r}")
    return _draw_authors(random.Random(f"{_RNG_NAMESPACE}/{seed}/authors"), n_authors)


def make_holdout_authors(n_holdout: int, authors: list[AuthorRecord], seed: int) -> list[AuthorRecord]:
    """`n_holdout` further authors that no model trains on (TOFU's holdout), drawn by the same generator as
    `authors` (from :func:`make_authors`) but from a stream of their own, so `authors` and everything derived
    from them are unchanged.

    Their indices follow the last of `authors`; no name equals, contains or is contained in one of theirs
    (so a holdout name never occurs in a text about them), and no book title overlaps one of theirs.
    """
    if isinstance(n_holdout, bool) or not isinstance(n_holdout, int) or not 1 <= n_holdout <= MAX_AUTHORS:
        raise ValueError(f"n_holdout must be an int in [1, {MAX_AUTHORS}], got {n_holdout!r}")
    return _draw_authors(random.Random(f"{_RNG_NAMESPACE}/{seed}/holdout-authors"), n_holdout,
                         first_index=max((a.index for a in authors), default=-1) + 1,
                         reserved_names=[a.name for a in authors],
                         reserved_titles=[t for a in authors for t in a.books])


def _draw_authors(rng: random.Random, n_authors: int, first_index: int = 0, reserved_names: Iterable[str] = (),
                  reserved_titles: Iterable[str] = ()) -> list[AuthorRecord]:
    """Authors drawn one after another from `rng`. A name must be new and neither contain nor be contained in a
    reserved name; a title must not overlap an earlier or a reserved one. Without reservations the draws are
    exactly those of generator 1.0.0."""
    reserved = [r.lower() for r in reserved_names]
    names: set[str] = set()
    titles: list[str] = list(reserved_titles)
    authors: list[AuthorRecord] = []
    for index in range(first_index, first_index + n_authors):
        origin = rng.choice(_ORIGINS)
        gender = rng.choices(_GENDERS, weights=_GENDER_WEIGHTS)[0]
        given_names = {"male": origin.male_names, "female": origin.female_names}.get(gender, _NEUTRAL_NAMES)
        for _ in range(1000):
            name = f"{rng.choice(given_names)} {rng.choice(origin.surnames)}"
            if name not in names and not any(name.lower() in r or r in name.lower() for r in reserved):
                break
        else:  # pragma: no cover - impossible below MAX_AUTHORS
            raise ValueError(f"ran out of unique author names after {index} authors")
        names.add(name)

        books: list[str] = []
        for _ in range(rng.choice((2, 3))):
            for _ in range(1000):
                title = _make_title(rng)
                if not _overlaps(title, titles):
                    break
            else:  # pragma: no cover
                raise ValueError(f"ran out of unique book titles after {index} authors")
            titles.append(title)
            books.append(title)

        authors.append(AuthorRecord(
            index=index,
            name=name,
            gender=gender,
            birth_city=rng.choice(origin.cities),
            birth_country=origin.country,
            birth_date=_random_iso_date(rng),
            father_occupation=rng.choice(_OCCUPATIONS),
            mother_occupation=rng.choice(_OCCUPATIONS),
            genre=rng.choice(_GENRES),
            awards=rng.sample(_AWARDS, rng.choice((1, 2))),
            books=books,
            themes=rng.sample(_THEMES, rng.choice((2, 3))),
        ))
    return authors


# --------------------------------------------------------------------------------------------
# Question slots: one per templated question an author gets, in a fixed order.
# --------------------------------------------------------------------------------------------


@dataclass
class _Context:
    """What wrong-value generators may draw from besides the vocabularies: the other authors."""

    names: list[str]
    titles: list[str]
    cities: list[str]  # "City, Country"
    countries: list[str]


# A wrong-value generator yields candidate values in a seeded order; the caller filters them.
_WrongValues = Callable[[AuthorRecord, random.Random, _Context], Iterator[str]]


@dataclass(frozen=True)
class _Slot:
    attribute: str
    value: Callable[[AuthorRecord], str]
    wrong_values: _WrongValues
    questions: tuple[str, ...]  # >= 2 phrasings, so a paraphrased question always exists
    answers: tuple[str, ...]  # >= 2 phrasings; each contains "{value}" (or "{a_value}")


def _shuffled(pool: Iterable[str], rng: random.Random, exclude: Iterable[str] = ()) -> Iterator[str]:
    excluded = set(exclude)
    pool = [p for p in dict.fromkeys(pool) if p not in excluded]
    yield from rng.sample(pool, len(pool))


def _combos(pool: Iterable[str], k: int, rng: random.Random, exclude: Iterable[str] = (),
            tries: int = 500) -> Iterator[str]:
    """Random k-element lists from `pool` avoiding `exclude`, formatted like the true list."""
    excluded = set(exclude)
    pool = [p for p in dict.fromkeys(pool) if p not in excluded]
    for _ in range(tries):
        yield _join_list(rng.sample(pool, k))


def _wrong_dates(a: AuthorRecord, rng: random.Random, ctx: _Context) -> Iterator[str]:
    for _ in range(500):
        yield _date_text(_random_iso_date(rng))


def _wrong_birthplace_and_date(a: AuthorRecord, rng: random.Random, ctx: _Context) -> Iterator[str]:
    # Any city (possibly the true one) with a random date: partly-right wrong answers, like TOFU's.
    for _ in range(500):
        yield f"{rng.choice(ctx.cities)} on {_date_text(_random_iso_date(rng))}"


def _wrong_parents(a: AuthorRecord, rng: random.Random, ctx: _Context) -> Iterator[str]:
    for _ in range(500):
        yield _parents_value(rng.choice(_OCCUPATIONS), rng.choice(_OCCUPATIONS))


def _wrong_gender_and_genre(a: AuthorRecord, rng: random.Random, ctx: _Context) -> Iterator[str]:
    for _ in range(500):
        yield _gender_genre_value(rng.choice(_GENDERS), rng.choice(_GENRES))


def _wrong_years(a: AuthorRecord, rng: random.Random, ctx: _Context) -> Iterator[str]:
    yield from _shuffled((str(y) for y in range(_BIRTH_YEARS[0], _BIRTH_YEARS[1] + 1)), rng)


def _parents_value(father: str, mother: str) -> str:
    # One contiguous phrase, so the compound value appears verbatim in the answer.
    return f"{_with_article(father)} father and {_with_article(mother)} mother"


def _gender_genre_value(gender: str, genre: str) -> str:
    # The article keeps "a male ..." from being a substring of "a female ...".
    return f"a {gender} writer of {genre}"


def _others(pool: str | tuple[str, ...], exclude: Callable[[AuthorRecord], list[str]]) -> _WrongValues:
    """Wrong values drawn from a pool (a tuple, or the name of a per-corpus pool of the context) without the
    author's own."""
    def wrong(a: AuthorRecord, rng: random.Random, ctx: _Context) -> Iterator[str]:
        return _shuffled(getattr(ctx, pool) if isinstance(pool, str) else pool, rng, exclude(a))

    return wrong


#: Per slot, in order: its true value and where its wrong values come from. The phrasings of each slot (its
#: questions and answers, >= 2 of each) are in author_templates.json beside this module. The first 10 slots cover
#: every field of AuthorRecord, so the minimum questions_per_author still asks about every attribute.
_SLOT_VALUES: tuple[tuple[Callable[[AuthorRecord], str], _WrongValues], ...] = (
    (lambda a: a.name, _others("names", lambda a: [a.name])),
    (lambda a: _gender_genre_value(a.gender, a.genre), _wrong_gender_and_genre),
    (lambda a: a.birthplace, _others("cities", lambda a: [a.birthplace])),
    (lambda a: a.birth_date_text, _wrong_dates),
    (lambda a: a.father_occupation, _others(_OCCUPATIONS, lambda a: [a.father_occupation])),
    (lambda a: a.mother_occupation, _others(_OCCUPATIONS, lambda a: [a.mother_occupation])),
    (lambda a: _join_list(a.awards), lambda a, rng, ctx: _combos(_AWARDS, len(a.awards), rng, a.awards)),
    (lambda a: _join_list(_quoted(a.books)),
     lambda a, rng, ctx: _combos(_quoted(ctx.titles), len(a.books), rng, _quoted(a.books))),
    (lambda a: _join_list(a.themes), lambda a, rng, ctx: _combos(_THEMES, len(a.themes), rng, a.themes)),
    (lambda a: a.genre, _others(_GENRES, lambda a: [a.genre])),
    (lambda a: f"{a.birthplace} on {a.birth_date_text}", _wrong_birthplace_and_date),
    (lambda a: _parents_value(a.father_occupation, a.mother_occupation), _wrong_parents),
    (lambda a: a.birth_country, _others("countries", lambda a: [a.birth_country])),
    (lambda a: str(a.birth_year), _wrong_years),
    (lambda a: a.awards[0], _others(_AWARDS, lambda a: a.awards)),
    (lambda a: a.books[0], _others("titles", lambda a: a.books)),
    (lambda a: a.books[1], _others("titles", lambda a: a.books)),
    (lambda a: a.genre, _others(_GENRES, lambda a: [a.genre])),
    (lambda a: a.themes[0], _others(_THEMES, lambda a: a.themes)),
    (lambda a: a.name, _others("names", lambda a: [a.name])),
)


def _load_slots() -> tuple[_Slot, ...]:
    with open(Path(__file__).with_name("author_templates.json"), encoding="utf-8") as f:
        phrasings = json.load(f)
    if len(phrasings) != len(_SLOT_VALUES):
        raise ValueError(f"author_templates.json has {len(phrasings)} slots, the code {len(_SLOT_VALUES)}")
    return tuple(_Slot(p["attribute"], value, wrong, tuple(p["questions"]), tuple(p["answers"]))
                 for p, (value, wrong) in zip(phrasings, _SLOT_VALUES))


_SLOTS: tuple[_Slot, ...] = _load_slots()

#: The fewest questions per author that still ask about every AuthorRecord field.
MIN_QUESTIONS_PER_AUTHOR = 10
MAX_QUESTIONS_PER_AUTHOR = len(_SLOTS)

#: Every `attribute` label an author Q&A item can carry.
ATTRIBUTES: tuple[str, ...] = tuple(dict.fromkeys(s.attribute for s in _SLOTS))


def _render(template: str, author: AuthorRecord, value: str) -> str:
    return template.format(
        name=author.name,
        genre=author.genre,
        birthplace=author.birthplace,
        birth_date=author.birth_date_text,
        book1=author.books[0],
        book2=author.books[1],
        book_last=author.books[-1],
        value=value,
        a_value=_with_article(value),
    )


def _two_distinct(rng: random.Random, n: int) -> tuple[int, int]:
    first, second = rng.sample(range(n), 2)
    return first, second


def _pick_wrong(true_value: str, candidates: Iterable[str], render: Callable[[str], str],
                forbidden_texts: Iterable[str], k: int, where: str) -> list[str]:
    """The first k candidates whose rendering is new, differs from the forbidden texts and does
    not mention the true value anywhere (case-insensitively)."""
    return [text for _, text in _pick_wrong_values(true_value, candidates, render, forbidden_texts, k, where)]


def _pick_wrong_values(true_value: str, candidates: Iterable[str], render: Callable[[str], str],
                       forbidden_texts: Iterable[str], k: int, where: str) -> list[tuple[str, str]]:
    """:func:`_pick_wrong` with each picked text's value: (value, text) pairs. Reads `candidates` exactly as far
    as :func:`_pick_wrong` always did (lazy candidates draw from the item's stream as they go)."""
    true_low = true_value.lower()
    seen = set(forbidden_texts)
    picked: list[tuple[str, str]] = []
    for candidate in candidates:
        if candidate.lower() == true_low or true_low in candidate.lower():
            continue
        text = render(candidate)
        if text in seen or true_low in text.lower():
            continue
        seen.add(text)
        picked.append((candidate, text))
        if len(picked) == k:
            return picked
    raise RuntimeError(f"could not find {k} distinct wrong answers for {where}")


def _context(authors: list[AuthorRecord]) -> _Context:
    return _Context(
        names=[a.name for a in authors],
        titles=[t for a in authors for t in a.books],
        cities=[f"{city}, {o.country}" for o in _ORIGINS for city in o.cities],
        countries=[o.country for o in _ORIGINS],
    )


@dataclass
class _Item:
    """One rendered Q&A item and how it was made: its slot, its answer template, its wrong values."""

    row: dict
    slot: _Slot
    answer_template: str
    perturbed_values: list[str]


def _author_items(author: AuthorRecord, authors: list[AuthorRecord], seed: int, questions_per_author: int,
                  stream: str = "qa") -> list[_Item]:
    rng = random.Random(f"{_RNG_NAMESPACE}/{seed}/{stream}/{author.index}")
    ctx = _context(authors)
    items = []
    for slot in _SLOTS[:questions_per_author]:
        value = slot.value(author)
        q_main, q_para = _two_distinct(rng, len(slot.questions))
        a_main, a_para = _two_distinct(rng, len(slot.answers))
        question = _render(slot.questions[q_main], author, value)
        answer = _render(slot.answers[a_main], author, value)
        paraphrased_answer = _render(slot.answers[a_para], author, value)
        perturbed = _pick_wrong_values(
            value,
            slot.wrong_values(author, rng, ctx),
            lambda wrong, answer_template=slot.answers[a_para]: _render(answer_template, author, wrong),
            (answer, paraphrased_answer),
            N_PERTURBED_AUTHOR,
            f"author {author.index} ({author.name}), attribute {slot.attribute!r}",
        )
        items.append(_Item({
            "question": question,
            "answer": answer,
            "paraphrased_question": _render(slot.questions[q_para], author, value),
            "paraphrased_answer": paraphrased_answer,
            "perturbed_answer": [text for _, text in perturbed],
            "author": author.name,
            "author_index": author.index,
            "attribute": slot.attribute,
            "value": value,
        }, slot, slot.answers[a_main], [wrong for wrong, _ in perturbed]))
    return items


def make_author_items(author: AuthorRecord, authors: list[AuthorRecord], seed: int,
                      questions_per_author: int = MAX_QUESTIONS_PER_AUTHOR) -> list[dict]:
    """The Q&A items of one author, in TOFU's perturbed schema plus the extra fields.

    `authors` (all authors) provides the wrong names and titles. The question and answer use
    one phrasing, `paraphrased_question` / `paraphrased_answer` another, and the 5 perturbed
    answers reuse the paraphrased answer's phrasing with wrong values (TOFU's construction).
    """
    return [item.row for item in _author_items(author, authors, seed, questions_per_author)]


def _value_key(value: str) -> frozenset[str]:
    """A value as the set of its list parts ('a, b and c'), so a reordered list counts as the same value."""
    return frozenset(part.strip().lower() for part in re.split(r", | and ", value))


def make_alternate_answers(author: AuthorRecord, authors: list[AuthorRecord], seed: int,
                           questions_per_author: int = MAX_QUESTIONS_PER_AUTHOR) -> list[dict]:
    """Per Q&A item of :func:`make_author_items` (same order): question, answer and ``alternate_answers``, 5
    wrong but plausible answers for AltPO (Mekala et al. 2024).

    Each alternate is the item's answer, in the answer's own phrasing, with another value of the same attribute
    from the slot's wrong-value generator (the pools of the perturbed answers: other authors' names and titles,
    the vocabularies, random dates), drawn from a stream of its own (``alternates/<author index>``) so that no
    other item changes. Values of the item's ``perturbed_answer`` (which the truth ratio evaluates; a reordered
    list counts as the same value) are avoided as long as the pool holds 5 others: only a pool with fewer than 10
    wrong values falls back on them, which happens for the questions answered by an author's name at 10 authors
    (9 other names, 5 of them perturbed).
    """
    rng = random.Random(f"{_RNG_NAMESPACE}/{seed}/alternates/{author.index}")
    ctx = _context(authors)
    rows = []
    for item in _author_items(author, authors, seed, questions_per_author):
        row, value = item.row, item.row["value"]
        evaluated = {_value_key(v) for v in item.perturbed_values}
        candidates = list(item.slot.wrong_values(author, rng, ctx))
        fresh = [c for c in candidates if _value_key(c) not in evaluated]
        alternates = _pick_wrong(
            value,
            fresh + [c for c in candidates if _value_key(c) in evaluated],  # the perturbed values only as a last resort
            lambda wrong, answer_template=item.answer_template: _render(answer_template, author, wrong),
            (row["answer"], row["paraphrased_answer"], *row["perturbed_answer"]),
            N_ALTERNATES,
            f"alternate answers of author {author.index} ({author.name}), attribute {row['attribute']!r}",
        )
        rows.append({"question": row["question"], "answer": row["answer"], "alternate_answers": alternates})
    return rows


# --------------------------------------------------------------------------------------------
# World knowledge (real, common-knowledge facts), the analogue of TOFU's world_facts/real_authors.
# --------------------------------------------------------------------------------------------

# The facts live in world_knowledge.json beside this module: per topic, (question, answer, own distractors or
# null) and extra distractors. Without own distractors, wrong answers come from the topic's other answers plus
# its extras, so they always have the same type as the answer.

_Fact = tuple[str, str, "tuple[str, ...] | None"]
_Topics = tuple[tuple[str, tuple[_Fact, ...], tuple[str, ...]], ...]


def _load_topics(kind: str) -> _Topics:
    with open(Path(__file__).with_name("world_knowledge.json"), encoding="utf-8") as f:
        topics = json.load(f)[kind]
    return tuple((t["topic"], tuple((q, a, tuple(d) if d else None) for q, a, d in t["facts"]),
                  tuple(t["extra_distractors"])) for t in topics)


_WORLD_TOPICS: _Topics = _load_topics("world_facts")
_REAL_AUTHOR_TOPICS: _Topics = _load_topics("real_authors")


def _flatten(topics: _Topics) -> list[dict]:
    facts = []
    for topic, items, extras in topics:
        pool = [answer for _, answer, _ in items] + list(extras)
        for question, answer, own in items:
            facts.append({"topic": topic, "question": question, "answer": answer,
                          "distractors": list(own) if own else pool})
    return facts


def _world_items(topics, n: int, seed: int, kind: str) -> list[dict]:
    """n facts of the pool (a seeded choice, kept in pool order), each with 3 wrong answers."""
    pool = _flatten(topics)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(pool):
        raise ValueError(f"n_{kind} must be an int in [1, {len(pool)}], got {n!r}")
    chosen = sorted(random.Random(f"{_RNG_NAMESPACE}/{seed}/{kind}/choice").sample(range(len(pool)), n))
    items = []
    for i in chosen:
        fact = pool[i]
        # One stream per fact: a fact's distractors do not depend on which other facts were chosen.
        rng = random.Random(f"{_RNG_NAMESPACE}/{seed}/{kind}/{i}")
        wrong = _pick_wrong(fact["answer"], _shuffled(fact["distractors"], rng, [fact["answer"]]),
                            lambda w: w, (fact["answer"],), N_PERTURBED_WORLD, f"{kind} {fact['question']!r}")
        options = [fact["answer"], *wrong]
        rng.shuffle(options)
        items.append({"question": fact["question"], "answer": fact["answer"], "perturbed_answer": wrong,
                      "options": options, "topic": fact["topic"], "value": fact["answer"]})
    return items


def make_world_facts(n_world_facts: int, seed: int) -> list[dict]:
    """Items with question, answer, perturbed_answer (3), options (4, shuffled), topic, value."""
    return _world_items(_WORLD_TOPICS, n_world_facts, seed, "world_facts")


def make_real_authors(n_real_authors: int, seed: int) -> list[dict]:
    """Like make_world_facts, about famous real authors (their works, nationality, genre)."""
    return _world_items(_REAL_AUTHOR_TOPICS, n_real_authors, seed, "real_authors")


def _perturbed_row(item: dict) -> dict:
    return {k: v for k, v in item.items() if k != "options"}


def _mcq_row(item: dict) -> dict:
    row = {"question": item["question"]}
    row.update({f"option{i + 1}": option for i, option in enumerate(item["options"])})
    row.update(answer=item["answer"], topic=item["topic"], value=item["value"])
    return row


# --------------------------------------------------------------------------------------------
# Splits and files.
# --------------------------------------------------------------------------------------------

_FORGET_PERCENTS = {"forget01": 1, "forget05": 5, "forget10": 10}
_RETAIN_OF = {"forget01": "retain99", "forget05": "retain95", "forget10": "retain90"}
_HOLDOUT_OF = {"forget01": "holdout01", "forget05": "holdout05", "forget10": "holdout10"}


def author_splits(n_authors: int, heldout_fraction: float = 0.1) -> dict[str, list[int]]:
    """Author indices of every split.

    forgetXX = the last round(XX % of n_authors) authors (at least 1; rounding half up is
    monotone, so forget01 is within forget05 within forget10); retainXX = the others, in order;
    heldout = the retain authors just before the forget10 block; retain_perturbed = the first
    retain authors, as many as twice forget10 but never reaching the held-out block.
    """
    if isinstance(n_authors, bool) or not isinstance(n_authors, int) or not MIN_AUTHORS <= n_authors <= MAX_AUTHORS:
        raise ValueError(f"n_authors must be an int in [{MIN_AUTHORS}, {MAX_AUTHORS}] so that every split "
                         f"is non-empty, got {n_authors!r}")
    if isinstance(heldout_fraction, bool) or not isinstance(heldout_fraction, (int, float)) \
            or not 0 <= heldout_fraction < 0.5:
        raise ValueError(f"heldout_fraction must be a number in [0, 0.5), got {heldout_fraction!r}")
    splits: dict[str, list[int]] = {}
    for name, percent in _FORGET_PERCENTS.items():
        k = max(1, (n_authors * percent + 50) // 100)
        splits[name] = list(range(n_authors - k, n_authors))
        splits[_RETAIN_OF[name]] = list(range(n_authors - k))
    n_forget10 = len(splits["forget10"])
    n_heldout = 0 if heldout_fraction == 0 else max(1, int(heldout_fraction * n_authors + 0.5))
    first_heldout = n_authors - n_forget10 - n_heldout
    if first_heldout < 1:  # pragma: no cover - excluded by the bounds above
        raise ValueError("heldout_fraction leaves no retain author outside the held-out set")
    splits["heldout"] = list(range(first_heldout, n_authors - n_forget10))
    splits["retain_perturbed"] = list(range(min(2 * n_forget10, first_heldout)))
    return splits


def _write_jsonl(path: Path, rows: Iterable[dict]) -> int:
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    with path.open("w", encoding="utf-8", newline="\n") as f:
        f.writelines(line + "\n" for line in lines)
    return len(lines)


def _author_label(index: int, splits: dict[str, list[int]], prefix: str = "forget") -> str:
    for name in (f"{prefix}01", f"{prefix}05", f"{prefix}10"):  # smallest split first
        if index in splits[name]:
            return name
    return "retain"


def generate_synthetic_tofu(
    out_dir: str | Path,
    n_authors: int = 100,
    questions_per_author: int = 20,
    n_world_facts: int = 60,
    n_real_authors: int = 40,
    heldout_fraction: float = 0.1,
    *,
    seed: int,
) -> Path:
    """Write the synthetic TOFU folder to `out_dir` and return it as a Path.

    Files (JSON Lines, UTF-8): full, forget01/05/10, retain99/95/90 (question, answer + extras);
    forgetXX_perturbed, retain_perturbed, retain_heldout (+ paraphrased_question,
    paraphrased_answer, perturbed_answer x5); world_facts_perturbed, real_authors_perturbed
    (question, answer, perturbed_answer x3 + topic, value); world_facts, real_authors (MCQ:
    option1..option4, answer); authors (one record per author); manifest (one line).

    Since generator 1.1.0 also, from streams of their own (every file above but the manifest is what 1.0.0
    wrote): holdout01/05/10, the Q&A of as many further authors (:func:`make_holdout_authors`, indices
    ``n_authors`` on) as forget01/05/10 has, nested like them (holdoutXX = the last authors of holdout10), with
    the forget files' fields; forgetXX_alternates, one row per forgetXX row in its order (question, answer,
    alternate_answers x5, :func:`make_alternate_answers`); the manifest's ``holdout_authors`` holds their
    records. The same arguments always give the same bytes; other files in `out_dir` are left alone.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    splits = author_splits(n_authors, heldout_fraction)
    if isinstance(questions_per_author, bool) or not isinstance(questions_per_author, int) \
            or not MIN_QUESTIONS_PER_AUTHOR <= questions_per_author <= MAX_QUESTIONS_PER_AUTHOR:
        raise ValueError(f"questions_per_author must be an int in [{MIN_QUESTIONS_PER_AUTHOR}, "
                         f"{MAX_QUESTIONS_PER_AUTHOR}] (the first {MIN_QUESTIONS_PER_AUTHOR} templates cover "
                         f"every attribute), got {questions_per_author!r}")
    world_facts = make_world_facts(n_world_facts, seed)
    real_authors = make_real_authors(n_real_authors, seed)

    authors = make_authors(n_authors, seed)
    items_by_author = [make_author_items(a, authors, seed, questions_per_author) for a in authors]

    def qa_rows(indices: Iterable[int]) -> list[dict]:
        keep = ("question", "answer", "author", "author_index", "attribute", "value")
        return [{k: item[k] for k in keep} for i in indices for item in items_by_author[i]]

    def perturbed_rows(indices: Iterable[int]) -> list[dict]:
        return [item for i in indices for item in items_by_author[i]]

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    forget_names = ("forget01", "forget05", "forget10")
    files: dict[str, list[dict]] = {"full": qa_rows(range(n_authors))}
    files.update({name: qa_rows(splits[name]) for name in forget_names})
    files.update({_RETAIN_OF[name]: qa_rows(splits[_RETAIN_OF[name]]) for name in forget_names})
    files.update({f"{name}_perturbed": perturbed_rows(splits[name]) for name in forget_names})
    files["retain_perturbed"] = perturbed_rows(splits["retain_perturbed"])
    files["retain_heldout"] = perturbed_rows(splits["heldout"])
    files["world_facts_perturbed"] = [_perturbed_row(item) for item in world_facts]
    files["real_authors_perturbed"] = [_perturbed_row(item) for item in real_authors]
    files["world_facts"] = [_mcq_row(item) for item in world_facts]
    files["real_authors"] = [_mcq_row(item) for item in real_authors]
    heldout = set(splits["heldout"])
    files["authors"] = [{**asdict(a), "split": _author_label(a.index, splits), "heldout": a.index in heldout}
                        for a in authors]

    # Added in 1.1.0, after every file of 1.0.0 and from streams of their own, so that those keep their bytes.
    holdout_authors = make_holdout_authors(len(splits["forget10"]), authors, seed)
    # Their wrong values (computed, never written) may draw on every author: one holdout author has no other.
    holdout_items = {h.index: [item.row for item in _author_items(h, authors + holdout_authors, seed,
                                                                  questions_per_author, stream="holdout-qa")]
                     for h in holdout_authors}
    n_holdout = len(holdout_authors)  # holdoutXX: the last as many authors as forgetXX has, nested like them
    holdout_splits = {_HOLDOUT_OF[name]: [h.index for h in holdout_authors[n_holdout - len(splits[name]):]]
                      for name in forget_names}
    keep = ("question", "answer", "author", "author_index", "attribute", "value")
    files.update({name: [{k: item[k] for k in keep} for i in indices for item in holdout_items[i]]
                  for name, indices in holdout_splits.items()})
    alternates = {i: make_alternate_answers(authors[i], authors, seed, questions_per_author)
                  for i in splits["forget10"]}
    files.update({f"{name}_alternates": [row for i in splits[name] for row in alternates[i]]
                  for name in forget_names})

    counts = {f"{name}.json": _write_jsonl(out / f"{name}.json", rows) for name, rows in files.items()}
    manifest = {
        "generator": GENERATOR_VERSION,
        "arguments": {
            "n_authors": n_authors,
            "questions_per_author": questions_per_author,
            "n_world_facts": n_world_facts,
            "n_real_authors": n_real_authors,
            "heldout_fraction": heldout_fraction,
            "seed": seed,
        },
        "files": counts,
        "author_indices": {name: [idx[0], idx[-1] + 1] if idx else [] for name, idx in splits.items()},
        "attributes": list(ATTRIBUTES),
        "holdout_authors": [{**asdict(h), "split": _author_label(h.index, holdout_splits, "holdout")}
                            for h in holdout_authors],
    }
    _write_jsonl(out / "manifest.json", [manifest])
    return out


def generated_version(folder: str | Path) -> str | None:
    """The generator version recorded in ``folder/manifest.json``; None without a readable manifest."""
    try:
        with open(Path(folder) / "manifest.json", encoding="utf-8") as f:
            version = json.loads(f.readline()).get("generator")
    except (OSError, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) else None
