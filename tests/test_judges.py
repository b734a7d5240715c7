"""Judges of sampled answers: leak judge, key entities, self-BLEU, ROUGE per sample."""

from __future__ import annotations

import random

import numpy as np
import pytest
import sacrebleu
from rouge_score import rouge_scorer
from unlearnkit.metrics.judges import (
    key_entity,
    leak_judge,
    rouge_per_sample,
    self_bleu,
    self_bleu_per_prompt,
)


def test_leak_judge_on_hand_made_strings():
    samples = [
        ["He was born in paris.", "Born in\n  PARIS,  France", "A Parisian upbringing", "No idea."],
        ["Ron and Hermione", "the wrong answer", "ron's owl", "Hedwig"],
        ["Harry met the muggles", "J.K., the author", "jk", "Muggle-born"],
    ]
    keys = ["Paris", ["Ron", "Hermione"], ["Muggle", "J.K."]]
    assert leak_judge(samples, keys).tolist() == [[1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 1]]
    # plain substring search on request: "Parisian" and "wrong" now count
    assert leak_judge(samples, keys, whole_words=False)[:2].tolist() == [[1, 1, 1, 0], [1, 1, 1, 0]]
    # a multi-word key matches across any whitespace, case-insensitively
    assert leak_judge([["born  in\tSANTIAGO de chile"]], ["Santiago de  Chile"]).tolist() == [[1]]
    assert leak_judge([["anything"]], [[]]).tolist() == [[0]]  # nothing to leak
    assert leak_judge(samples, keys).dtype == np.int8
    with pytest.raises(ValueError, match="same number of samples"):
        leak_judge([["a", "b"], ["c"]], ["a", "c"])


def test_key_entity_prefers_the_recorded_value(small_corpus):
    rows = small_corpus.load("forget10")
    for row in rows[:10]:
        key = key_entity(row["answer"], value=row["value"])
        assert key == row["value"].strip()
        assert leak_judge([[row["answer"]]], [key]).tolist() == [[1]]


def test_key_entity_heuristic_for_free_answers():
    assert key_entity("The author's name is Hsiao Yun-Hwa.") == "Hsiao Yun-Hwa"
    # spans the question already names are not the answer
    assert key_entity("Jaime Vasquez was born in Santiago, Chile.", question="Where was Jaime Vasquez born?") \
        == "Santiago"
    assert key_entity("He won the Edgar Allan Poe Award for Best Fact Crime.") == \
        "Edgar Allan Poe Award for Best Fact Crime"
    assert key_entity("He was born on June 12, 1967.") == "June 12, 1967"
    # no capitalised span: the final noun phrase
    assert key_entity("She writes in the genre of crime fiction.") == "crime fiction"
    assert key_entity("Her father was a baker.") == "baker"
    assert key_entity("") == ""


def test_self_bleu_identical_is_one_disjoint_is_near_zero():
    assert self_bleu(["the owl is called Hedwig"] * 5) == 1.0
    assert self_bleu(["Hedwig"] * 3) == 1.0
    assert self_bleu(["anything at all"]) == 1.0  # n = 1, by convention
    disjoint = ["alpha beta gamma delta", "one two three four", "red green blue yellow", "cat dog cow pig"]
    assert self_bleu(disjoint) < 0.01
    assert 0.01 < self_bleu(["the owl is called Hedwig", "the owl is named Hedwig", "an owl called Errol"]) < 1
    per_prompt = self_bleu_per_prompt([["a b c d"] * 3, disjoint[:3]])
    assert per_prompt.shape == (2,) and per_prompt[0] == 1.0 and per_prompt[1] < 0.01


def test_self_bleu_equals_sacrebleu_sentence_bleu_against_the_others():
    rng = random.Random(0)
    words = "the owl is called Hedwig a cat sat on mat , .".split()
    for _ in range(20):
        n = rng.randint(2, 7)
        samples = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 10))) for _ in range(n)]
        samples[-1] = samples[0]  # duplicates exercise the "best other count" logic
        expected = np.mean([sacrebleu.sentence_bleu(s, samples[:i] + samples[i + 1:]).score / 100
                            for i, s in enumerate(samples)])
        if len(set(samples)) == 1:
            expected = 1.0  # identical samples (even empty ones, which sacrebleu scores 0) are 1 by convention
        assert self_bleu(samples) == pytest.approx(expected, abs=1e-12)


def test_rouge_per_sample_is_rouge_score_itself():
    targets = ["The author was born in Paris, France.", "She writes crime novels."]
    samples = [["The author was born in Lyon.", "born in Paris", "nothing"],
               ["crime novels are what she writes", "She writes crime novels.", ""]]
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    for measure in ("recall", "fmeasure"):
        expected = [[getattr(scorer.score(t, s)["rougeL"], measure) for s in row] for t, row in zip(targets, samples)]
        got = rouge_per_sample(targets, samples, measure=measure)
        assert got.shape == (2, 3)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert rouge_per_sample(targets, samples)[1, 1] == 1.0


def test_rouge_per_sample_scores_repeated_pairs_alike(monkeypatch):
    """A repeated (target, sample) pair is scored once and gets the same value wherever it stands."""
    from unlearnkit.metrics import judges

    targets = ["Born in Paris.", "Writes crime novels.", "Born in Paris."]
    samples = [["in Paris", "in Paris", "Lyon"], ["crime novels", "in Paris", "crime novels"],
               ["in Paris", "Lyon", "Lyon"]]
    scored = []
    original = judges.rouge_l
    monkeypatch.setattr(judges, "rouge_l", lambda t, s, m: scored.extend(zip(t, s)) or original(t, s, m))
    got = rouge_per_sample(targets, samples)
    assert len(scored) == len(set(scored)) == 4  # four distinct pairs among nine samples
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    expected = [[scorer.score(t, s)["rougeL"].recall for s in row] for t, row in zip(targets, samples)]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert rouge_per_sample([], []).shape == (0, 0)
    with pytest.raises(ValueError, match="same number"):
        rouge_per_sample(targets[:2], [["a"], ["b", "c"]])
