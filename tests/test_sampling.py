"""n sampled answers per question, scored (unlearnkit.metrics.sampling), on tiny models."""

from __future__ import annotations

import json

import numpy as np
import pytest
from unlearnkit.generation import adaptive_sample_answers
from unlearnkit.metrics.judges import leak_judge, rouge_per_sample
from unlearnkit.metrics.sampling import SampledScores, adaptive_view, leak_keys, prompt_ids, sample_and_score
from unlearnkit.metrics.tofu import rouge_l

pytestmark = pytest.mark.usefixtures("tiny_model_threads")

MAX_NEW = 8


def _forget_rows(corpus, count=3):
    return corpus.load("forget10")[:count]


def test_sample_and_score_shapes_and_keys(tiny_model, tiny_tokenizer, template, small_corpus):
    rows = _forget_rows(small_corpus)
    result = sample_and_score(tiny_model, tiny_tokenizer, template, rows, n=4, max_new_tokens=MAX_NEW, seed=0)
    assert result.n == 4 and result.rouge.shape == (3, 4) and result.leak.shape == (3, 4)
    for per_question in (result.greedy_rouge, result.greedy_leak, result.certainty, result.self_bleu):
        assert per_question.shape == (3,)
    assert ((result.rouge >= 0) & (result.rouge <= 1)).all() and set(np.unique(result.leak)) <= {0, 1}
    assert ((result.certainty > 0) & (result.certainty <= 1)).all()
    assert result.keys == [r["value"] for r in rows]  # the synthetic corpus records the key entity
    assert len(result.examples) == 3 and all(len(e) == 4 for e in result.examples)
    samples = [list(e) for e in result.examples]
    # every sample scored against its own target, pair by pair, with rouge_score itself
    answers = [r["answer"] for r in rows]
    per_pair = rouge_l([a for a, per_q in zip(answers, samples) for _ in per_q], [s for per_q in samples for s in per_q])
    assert np.allclose(result.rouge, per_pair.reshape(3, 4))
    assert np.allclose(result.rouge, rouge_per_sample(answers, samples))
    assert np.allclose(result.greedy_rouge, rouge_l(answers, result.greedy_answers))
    assert (result.leak == leak_judge(samples, result.keys)).all()
    # JSON round trip (the cache of the run store)
    again = SampledScores.from_json(json.loads(json.dumps(result.to_json())))
    assert np.array_equal(again.rouge, result.rouge) and again.keys == result.keys
    assert again.leak.dtype == np.int8 and np.array_equal(again.certainty, result.certainty)
    with pytest.raises(ValueError, match="empty"):
        sample_and_score(tiny_model, tiny_tokenizer, template, [], n=2, max_new_tokens=8, seed=0)


def test_temperature_0_repeats_the_greedy_answer(tiny_model, tiny_tokenizer, template, small_corpus):
    rows = _forget_rows(small_corpus, 2)
    result = sample_and_score(tiny_model, tiny_tokenizer, template, rows, n=3, temperature=0, max_new_tokens=MAX_NEW,
                              seed=0)
    assert all(e == [g] * 3 for e, g in zip(result.examples, result.greedy_answers))
    assert (result.self_bleu == 1.0).all() and np.allclose(result.rouge, result.greedy_rouge[:, None])


def test_leak_keys_prefer_keywords_then_the_recorded_value_then_the_heuristic():
    rows = [{"question": "Owl?", "keywords": ["Hedwig", "owl"]},
            {"question": "Where was she born?", "answer": "She was born in Paris.", "value": "Paris"},
            {"question": "Who wrote it?", "answer": "It was written by Jaime Vasquez."}]
    assert leak_keys(rows) == [["Hedwig", "owl"], "Paris", "Jaime Vasquez"]


def test_the_prefix_is_part_of_the_prompt_not_of_the_judged_continuation(tiny_model, tiny_tokenizer, template):
    rows = [{"question": "What is the owl's name?", "affirmative_response": "Of course, the owl is ",
             "keywords": ["owl"]}]
    plain = prompt_ids(tiny_tokenizer, template, rows, use_prefix=False)[0]
    prefixed = prompt_ids(tiny_tokenizer, template, rows, use_prefix=True)[0]
    assert prefixed[:len(plain)] == plain and len(prefixed) > len(plain)
    # the trailing space is dropped: the next word brings its own
    assert tiny_tokenizer.decode(prefixed[len(plain):]) == "Of course, the owl is"
    result = sample_and_score(tiny_model, tiny_tokenizer, template, rows, n=2, max_new_tokens=MAX_NEW,
                              use_prefix=True, seed=0)
    assert result.rouge is None and result.targets is None  # keywords only: nothing for ROUGE
    # "owl" is in the prefix, yet an untrained model's continuation does not repeat it: no leak is counted
    assert leak_judge([[g] for g in result.greedy_answers], result.keys)[:, 0].tolist() == result.greedy_leak.tolist()
    assert all("Of course" not in g for g in result.greedy_answers)


def test_adaptive_view_equals_adaptive_sampling(tiny_model, tiny_tokenizer, template, small_corpus):
    rows = _forget_rows(small_corpus, 4)
    result = sample_and_score(tiny_model, tiny_tokenizer, template, rows, n=3, max_new_tokens=MAX_NEW, seed=5)
    threshold = float(np.median(result.certainty))  # some questions greedy, some sampled
    view = adaptive_view(result, threshold)
    assert 0 < view.went_greedy.sum() < len(rows)
    reference = adaptive_sample_answers(tiny_model, tiny_tokenizer, template, [r["question"] for r in rows], n=3,
                                        threshold=threshold, max_new_tokens=MAX_NEW, seed=5)
    assert reference.greedy.tolist() == view.went_greedy.tolist()
    assert np.allclose(reference.certainty, result.certainty)
    assert (leak_judge(reference.answers, result.keys) == view.scores.leak).all()
    assert np.allclose(rouge_per_sample([r["answer"] for r in rows], reference.answers), view.scores.rouge)
    assert (view.scores.self_bleu[view.went_greedy] == 1.0).all()
    assert view.scores.settings["adaptive_threshold"] == threshold


def test_sample_and_score_asks_for_no_confidences(tiny_model, tiny_tokenizer, template, small_corpus, monkeypatch):
    """It reads the samples' tokens only (c(x) comes from the greedy answer): the per-step confidences, a third of a
    GPU's sampling time, are not computed (issue #61); the draws are those of sample_continuations either way
    (tests/test_generation.py)."""
    from unlearnkit.metrics import sampling

    asked = []
    real = sampling.sample_continuations
    monkeypatch.setattr(sampling, "sample_continuations", lambda *a, **kw: asked.append(kw) or real(*a, **kw))
    sample_and_score(tiny_model, tiny_tokenizer, template, _forget_rows(small_corpus, 2), n=3, max_new_tokens=MAX_NEW,
                     seed=0, progress=False)
    assert [kw["confidences"] for kw in asked] == [False]
