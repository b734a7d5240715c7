"""Judges that turn sampled answers into scores in [0, 1] for the bounds of :mod:`unlearnkit.bounds`
(docs/metrics.md §3): ROUGE-L per sample, a binary leak judge (does the answer give the key entity away?),
and self-BLEU, the diversity of one prompt's samples.

Shapes: samples are given as ``samples[prompt][sample]`` with the same n for every prompt, and
per-sample scores come back as an array (prompts, n), the shape the bounds take.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ..stations import timed
from .tofu import rouge_l

__all__ = [
    "rouge_per_sample",
    "key_entity",
    "leak_judge",
    "self_bleu",
    "self_bleu_per_prompt",
    "sample_count",
]


def sample_count(samples: Sequence[Sequence[str]]) -> int:
    """n, checking that every prompt has the same number of samples (the bounds need a rectangle)."""
    if isinstance(samples, str) or any(isinstance(s, str) for s in samples):
        raise TypeError("samples must be a list per prompt of lists of strings, samples[prompt][sample]")
    counts = {len(s) for s in samples}
    if len(counts) > 1:
        raise ValueError(f"every prompt needs the same number of samples, got counts {sorted(counts)}")
    return counts.pop() if counts else 0


# --------------------------------------------------------------------------- ROUGE


@timed("scoring")
def rouge_per_sample(targets: Sequence[str], samples: Sequence[Sequence[str]], measure: str = "recall") -> np.ndarray:
    """ROUGE-L of every sample against its prompt's target (``metrics.tofu.rouge_l``: rouge_score,
    stemmer on, recall by default as in TOFU). Returns (prompts, n).

    Each distinct (target, sample) pair is scored once: a confident model repeats the same answer in most
    of its n samples, and rouge_score costs far more than the lookup."""
    if len(targets) != len(samples):
        raise ValueError(f"{len(targets)} targets but samples for {len(samples)} prompts")
    n = sample_count(samples)
    pair_index: dict[tuple[str, str], int] = {}
    index = np.empty((len(samples), n), dtype=np.int64)
    for p, (target, per_prompt) in enumerate(zip(targets, samples)):
        for j, sample in enumerate(per_prompt):
            index[p, j] = pair_index.setdefault((target, sample), len(pair_index))
    if not pair_index:
        return np.zeros(index.shape)
    distinct = list(pair_index)
    values = rouge_l([t for t, _ in distinct], [s for _, s in distinct], measure)
    return np.asarray(values, dtype=float)[index]


# --------------------------------------------------------------------------- key entity

# Words that are capitalised only because they start a sentence, or that are never an entity alone.
_FUNCTION_WORDS = frozenset("""
    a an the this that these those he she it they his her hers its their theirs him them we our us you your
    i my me is was are were be been being has have had do does did in on at of for from to by with as and or
    but not no yes also who whom whose which what when where why how there here some one such so than then
    although while during after before because though however indeed certainly sure
""".split())
# Lower-case words that may sit inside a name: "Guild of Horror Writers", "Leonardo da Vinci".
_NAME_CONNECTORS = frozenset({"of", "de", "del", "della", "di", "da", "van", "von", "der", "den", "la", "le",
                              "du", "al", "bin", "and", "the", "for"})
_STRIP = "\"'“”‘’()[]{}<>,.;:!?*_"
_CLAUSE_END = (",", ";", ":", ".", "!", "?", ")", "]")
_SENTENCE_END = (".", "!", "?")


def _words(text: str) -> list[tuple[str, str, int, int]]:
    """Per token: (word without surrounding punctuation or possessive 's, the raw token, and the
    word's start and end offsets in ``text``), so spans can be cut from the original text."""
    out = []
    for match in re.finditer(r"\S+", text):
        raw = match.group()
        start = match.start() + len(raw) - len(raw.lstrip(_STRIP))
        word = raw.strip(_STRIP)
        for possessive in ("'s", "’s"):
            if word.endswith(possessive):
                word = word[: -len(possessive)]
        if word:
            out.append((word, raw, start, start + len(word)))
    return out


def _is_entity_word(word: str) -> bool:
    return word[0].isupper() or word[0].isdigit()


def _entity_spans(answer: str) -> list[str]:
    """Maximal runs of capitalised or numeric words, joined by name connectors, cut verbatim from the
    answer; broken by punctuation (except "June 12, 1967": a comma before a year continues a date)."""
    words = _words(answer)
    runs: list[list[int]] = []  # word indices of each run
    current: list[int] = []
    sentence_start = True
    for k, (word, raw, _, _) in enumerate(words):
        next_word = words[k + 1][0] if k + 1 < len(words) else ""
        initial_function_word = sentence_start and word.lower() in _FUNCTION_WORDS
        if _is_entity_word(word) and not initial_function_word:
            current.append(k)
        elif current and word in _NAME_CONNECTORS and next_word and _is_entity_word(next_word):
            current.append(k)
        elif current:
            runs.append(current)
            current = []
        ends_clause = raw.rstrip("\"'”’").endswith(_CLAUSE_END)
        continues_date = raw.endswith(",") and next_word.isdigit() and len(next_word) == 4
        if ends_clause and current and not continues_date:
            runs.append(current)
            current = []
        sentence_start = raw.rstrip("\"'”’)").endswith(_SENTENCE_END)
    if current:
        runs.append(current)
    # A lone pronoun or function word ("I", "The") is no entity.
    runs = [r for r in runs if not (len(r) == 1 and words[r[0]][0].lower() in _FUNCTION_WORDS)]
    return [answer[words[r[0]][2]:words[r[-1]][3]] for r in runs]


def _final_noun_phrase(answer: str, max_words: int = 4) -> str:
    """The trailing content words of the last sentence, up to the first function word from the end:
    "She writes in the genre of crime fiction." -> "crime fiction"."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", answer.strip()) if s.strip()]
    if not sentences:
        return ""
    words = [w for w, *_ in _words(sentences[-1])]
    phrase: list[str] = []
    for word in reversed(words):
        if word.lower() in _FUNCTION_WORDS or len(phrase) == max_words:
            break
        phrase.insert(0, word)
    return " ".join(phrase) if phrase else (words[-1] if words else "")


def key_entity(answer: str, value: str | None = None, question: str | None = None) -> str:
    """The key entity of an answer: what a leak judge looks for in a model's samples.

    With ``value`` (the synthetic corpus records each answer's attribute value verbatim in its
    ``value`` field) that value, stripped: exact and preferred.

    Without it (real TOFU answers are free sentences), a heuristic:
    1. candidate spans are maximal runs of capitalised or numeric words ("Jaime Vasquez",
       "25 February 1958", "Guild of Horror Writers"), where a few lower-case name connectors
       (of, de, da, van, von, ...) may join two capitalised words, punctuation ends a run, and a
       sentence-initial function word ("The", "Her", "Yes") or a lone pronoun is not a candidate;
    2. with ``question``, spans that occur in the question (usually the author's name) are dropped:
       the asked-for fact is what the question does not already say;
    3. the longest remaining span (in characters) wins, the later one on a tie (answers tend to end on
       the asked fact);
    4. with no capitalised span, the final noun phrase: the trailing content words of the last
       sentence, up to 4, stopping at the first function word ("crime fiction", "a baker" -> "baker").
    The heuristic is a rough proxy (it may pick a different entity than the one a human would); use
    ``value`` wherever the data provides it.
    """
    if value is not None and value.strip():
        return value.strip()
    spans = _entity_spans(answer)
    if question:
        asked = _normalise(question)
        spans = [s for s in spans if _normalise(s) not in asked]
    if spans:
        return max(reversed(spans), key=len)  # reversed: max keeps the first maximum, i.e. the later span
    return _final_noun_phrase(answer)


# --------------------------------------------------------------------------- leak judge


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


def _key_pattern(keys: Sequence[str], whole_words: bool) -> re.Pattern | None:
    alternatives = []
    for key in sorted({_normalise(k) for k in keys if k and k.strip()}, key=len, reverse=True):
        pattern = re.escape(key)
        if whole_words:
            # Boundaries only where the key itself starts/ends with a word character, so "J.K."
            # still matches before a comma and "Ron" does not match inside "wrong". A plural ending
            # may follow a word-final key: "Muggle" in "muggles", "Dementor" in "dementors".
            if re.match(r"\w", key):
                pattern = r"(?<!\w)" + pattern
            if re.search(r"\w$", key):
                pattern += r"(?:e?s)?(?!\w)"
        alternatives.append(pattern)
    return re.compile("|".join(alternatives)) if alternatives else None


@timed("scoring")
def leak_judge(samples: Sequence[Sequence[str]], keys: Sequence[str | Sequence[str]],
               whole_words: bool = True) -> np.ndarray:
    """Binary leak per sample: 1 if the sample contains its prompt's key entity, else 0.

    ``keys[prompt]`` is one key entity (a string, e.g. from :func:`key_entity`) or several keywords (a
    list: the HP Q&A keywords), any of which counts as a leak. Matching is case-insensitive on
    whitespace-normalised text (runs of whitespace become one space, in samples and keys alike) and,
    with ``whole_words`` (default), at word boundaries, a plural -s/-es allowed: the keyword "Ron"
    must not fire on "wrong" or "Ronan", but "Muggle" fires on "muggles". ``whole_words=False`` is
    plain substring search. A prompt with no non-empty key never leaks. Returns int8 (prompts, n) of 0/1.
    """
    if len(keys) != len(samples):
        raise ValueError(f"{len(keys)} keys but samples for {len(samples)} prompts")
    n = sample_count(samples)
    leaks = np.zeros((len(samples), n), dtype=np.int8)
    for p, (per_prompt, key) in enumerate(zip(samples, keys)):
        pattern = _key_pattern([key] if isinstance(key, str) else list(key), whole_words)
        if pattern is None:
            continue
        leaks[p] = [pattern.search(_normalise(s)) is not None for s in per_prompt]
    return leaks


# --------------------------------------------------------------------------- self-BLEU


def self_bleu(samples: Sequence[str]) -> float:
    """Diversity of one prompt's samples: mean over samples of BLEU(sample, references = all the
    other samples), divided by 100 so that 0 = all different and 1 = identical.

    BLEU is sacrebleu's sentence BLEU with its defaults (13a tokenisation, 4-grams, exponential
    smoothing, effective order), computed from sacrebleu's own n-gram extraction and
    ``BLEU.compute_bleu``; only the reference side is accelerated: the best count of every n-gram
    over the other samples comes from the two largest counts over all samples, so n = 1024 costs
    O(n) n-gram passes instead of sacrebleu's O(n^2). Equal to calling ``sacrebleu.sentence_bleu(s_i,
    others)`` for each i (tested).
    Conventions: n = 1 -> 1.0 (a single sample is trivially identical to itself); samples that are all
    the same string (also all empty) -> 1.0; an empty sample among non-empty ones scores 0 (sacrebleu).
    """
    from sacrebleu.metrics.bleu import BLEU, MAX_NGRAM_ORDER
    from sacrebleu.metrics.helpers import extract_all_word_ngrams
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    samples = list(samples)
    if isinstance(samples, str) or any(not isinstance(s, str) for s in samples):
        raise TypeError("self_bleu takes the list of one prompt's sample strings")
    if not samples:
        raise ValueError("self_bleu needs at least one sample")
    if len(samples) == 1 or all(s == samples[0] for s in samples):
        return 1.0
    order = MAX_NGRAM_ORDER
    tokenize = Tokenizer13a()
    counted = [extract_all_word_ngrams(tokenize(s.rstrip()), 1, order) for s in samples]
    lengths = np.array([length for _, length in counted])

    # For each n-gram, the largest and second-largest count over all samples. The best count among
    # the others of sample i is then the second-largest where i holds the largest, else the largest.
    top: dict[tuple[str, ...], list[int]] = {}
    for ngrams, _ in counted:
        for gram, count in ngrams.items():
            best = top.setdefault(gram, [0, 0])
            if count > best[0]:
                best[0], best[1] = count, best[0]
            elif count > best[1]:
                best[1] = count

    # Closest other length (sacrebleu: smallest |difference|, the shorter one on a tie).
    diff = np.abs(lengths[None, :] - lengths[:, None]).astype(float)
    np.fill_diagonal(diff, np.inf)
    tie_break = diff * (lengths.max() + 1) + lengths[None, :]
    closest = lengths[np.argmin(tie_break, axis=1)]

    scores = []
    for (ngrams, length), ref_len in zip(counted, closest):
        correct = [0] * order
        total = [0] * order
        for gram, count in ngrams.items():
            largest, second = top[gram]
            others = second if count == largest else largest
            total[len(gram) - 1] += count
            correct[len(gram) - 1] += min(count, others)
        score = BLEU.compute_bleu(correct, total, int(length), int(ref_len), smooth_method="exp",
                                  effective_order=True).score
        scores.append(score / 100.0)
    return float(np.clip(np.mean(scores), 0.0, 1.0))


@timed("scoring")
def self_bleu_per_prompt(samples: Sequence[Sequence[str]]) -> np.ndarray:
    """:func:`self_bleu` of every prompt's samples: an array (prompts,)."""
    if isinstance(samples, str) or any(isinstance(s, str) for s in samples):
        raise TypeError("samples must be a list per prompt of lists of strings, samples[prompt][sample]")
    return np.array([self_bleu(per_prompt) for per_prompt in samples], dtype=float)
