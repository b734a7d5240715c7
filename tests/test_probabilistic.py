"""The score -> bound glue of notebook 05 (unlearnkit.probabilistic), on tiny models and hand-made arrays.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import HP_QA
from scipy import stats
from unlearnkit import models
from unlearnkit import probabilistic as prob
from unlearnkit.generation import adaptive_sample_answers
from unlearnkit.metrics.judges import leak_judge, rouge_per_sample

pytestmark = pytest.mark.usefixtures("tiny_model_threads")

ALPHA = 0.01
MAX_NEW = 8


def _forget_rows(corpus, count=3):
    return corpus.load("forget10")[:count]


def test_sample_and_score_shapes_and_keys(tiny_model, tiny_tokenizer, template, small_corpus):
    rows = _forget_rows(small_corpus)
    result = prob.sample_and_score(tiny_model, tiny_tokenizer, template, rows, n=4, max_new_tokens=MAX_NEW)
    assert result.n == 4 and result.rouge.shape == (3, 4) and result.leak.shape == (3, 4)
    for per_question in (result.greedy_rouge, result.greedy_leak, result.certainty, result.self_bleu):
        assert per_question.shape == (3,)
    assert ((result.rouge >= 0) & (result.rouge <= 1)).all() and set(np.unique(result.leak)) <= {0, 1}
    assert ((result.certainty > 0) & (result.certainty <= 1)).all()
    assert result.keys == [r["value"] for r in rows]  # the synthetic corpus records the key entity
    assert len(result.examples) == 3 and all(len(e) == 4 for e in result.examples)
    # the dedup of (target, sample) pairs gives exactly the judges' own ROUGE per sample
    samples = [[s for s in e] for e in result.examples]
    assert np.allclose(result.rouge, rouge_per_sample([r["answer"] for r in rows], samples))
    assert (result.leak == leak_judge(samples, result.keys)).all()
    # JSON round trip (the notebook's cache)
    again = prob.SampledScores.from_json(json.loads(json.dumps(result.to_json())))
    assert np.array_equal(again.rouge, result.rouge) and again.keys == result.keys

    table = prob.bound_table(result.rouge, ALPHA, result.leak)
    assert len(table) == 3
    assert (table["mean_lower"] <= table["ed_mean"] + 1e-12).all() and (table["ed_mean"] <= table["mean_upper"] + 1e-12).all()
    assert (table["leak_lower"] <= table["leak_rate"]).all() and (table["leak_rate"] <= table["binary_leak_bound"]).all()


def test_a_memorised_answer_leaks_in_every_sample(tiny_model, tiny_tokenizer, template, small_corpus):
    row = _forget_rows(small_corpus, 1)[0]
    example = models.encode_qa(tiny_tokenizer, template, row["question"], row["answer"])
    ids = torch.tensor([example["input_ids"]])
    labels = torch.tensor([example["labels"]])
    optimizer = torch.optim.AdamW(tiny_model.parameters(), lr=1e-2)
    tiny_model.train()
    for _ in range(200):
        loss = tiny_model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if loss.item() < 1e-3:
            break
    n = 16
    result = prob.sample_and_score(tiny_model, tiny_tokenizer, template, [row], n=n, max_new_tokens=48)
    assert result.greedy_leak.tolist() == [1] and result.greedy_rouge[0] == pytest.approx(1.0)
    assert result.leak.sum() == n  # every sample names the key entity
    table, summary = prob.model_summary(result, ALPHA, rouge_threshold=0.5, adaptive_threshold=0.9)
    assert table["binary_leak_bound"].iloc[0] == pytest.approx(1.0)  # S = n
    assert table["leak_lower"].iloc[0] == pytest.approx(ALPHA ** (1 / n))  # Clopper-Pearson lower for S = n
    assert summary["ed_mean"] > 0.95 and summary["greedy_unlearned_but_leaks"] == 0
    assert summary["adaptive_greedy_share"] == 1.0 and result.certainty[0] > 0.9


def test_greedy_vs_sampling_counts_on_hand_made_arrays():
    greedy_rouge = np.array([0.2, 0.9, 0.1, 0.3])
    rouge = np.array([[0.1, 0.8, 0.2, 0.1],   # greedy unlearned, one sample above 0.5: understated
                      [0.9, 0.9, 1.0, 0.7],   # greedy already leaks: not understated
                      [0.0, 0.1, 0.2, 0.3],   # clean everywhere
                      [0.5, 0.5, 0.4, 0.2]])  # 0.5 is not above the threshold: clean
    greedy_leak = np.array([0, 1, 0, 0])
    leaks = np.array([[0, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 0, 1]])
    table = prob.greedy_vs_sampling(ALPHA, greedy_rouge, rouge, greedy_leak, leaks, rouge_threshold=0.5)
    assert table["understated_rouge"].tolist() == [True, False, False, False]
    assert table["understated_entity"].tolist() == [True, False, False, True]
    summary = prob.understatement_summary(table)
    assert summary["greedy_unlearned"] == 3 and summary["greedy_unlearned_but_leaks"] == 2
    assert summary["greedy_unlearned_rouge"] == 3 and summary["greedy_unlearned_but_leaks_rouge"] == 1
    # S = 1 of 4: the one-sided Clopper-Pearson lower bound is 1 - (1 - alpha)^(1/4), the upper the Beta quantile
    assert table["leak_lower"].iloc[0] == pytest.approx(1 - (1 - ALPHA) ** 0.25)
    assert table["binary_leak_bound"].iloc[0] == pytest.approx(stats.beta.ppf(1 - ALPHA, 2, 3))
    assert table["leak_lower"].iloc[2] == 0.0 and table["binary_leak_bound"].iloc[2] == pytest.approx(1 - ALPHA ** 0.25)
    # M_gen at the threshold: 1 - F_n(0.5) + eps, capped at 1
    eps = np.sqrt(np.log(1 / ALPHA) / 8)
    assert table["rouge_tail_bound"].iloc[2] == pytest.approx(min(1.0, 0 + eps))
    # the lower bound agrees with scipy's two-sided Clopper-Pearson interval at level 1 - 2 alpha
    ci = stats.binomtest(3, 4).proportion_ci(confidence_level=1 - 2 * ALPHA, method="exact")
    assert table["leak_lower"].iloc[3] == pytest.approx(ci.low)
    assert table["binary_leak_bound"].iloc[3] == pytest.approx(ci.high)
    with pytest.raises(ValueError, match="needs"):
        prob.greedy_vs_sampling(ALPHA)

    # against a retain model that never names the keys (M_bin 1 - alpha^(1/4) = 0.68 everywhere), only a flagged
    # question whose lower bound exceeds that counts; none does with n = 4
    retain = prob.greedy_vs_sampling(ALPHA, greedy_leak=np.zeros(4), leaks=np.zeros((4, 4)))
    summaries = {"unlearned": {}, "retain": {}}
    prob.compare_with_reference({"unlearned": table, "retain": retain}, summaries, "retain")
    assert summaries["unlearned"]["greedy_unlearned_but_leaks_above_reference"] == 0
    many = np.ones((4, 64), dtype=int)
    strong = prob.greedy_vs_sampling(ALPHA, greedy_leak=np.zeros(4), leaks=many)
    prob.compare_with_reference({"unlearned": strong, "retain": retain}, summaries, "retain")
    assert summaries["unlearned"]["greedy_unlearned_but_leaks_above_reference"] == 4


def test_adaptive_view_equals_adaptive_sampling(tiny_model, tiny_tokenizer, template, small_corpus):
    rows = _forget_rows(small_corpus, 4)
    result = prob.sample_and_score(tiny_model, tiny_tokenizer, template, rows, n=3, max_new_tokens=MAX_NEW, seed=5)
    threshold = float(np.median(result.certainty))  # some questions greedy, some sampled
    view, went_greedy = prob.adaptive_view(result, threshold)
    assert 0 < went_greedy.sum() < len(rows)
    reference = adaptive_sample_answers(tiny_model, tiny_tokenizer, template, [r["question"] for r in rows], n=3,
                                        threshold=threshold, max_new_tokens=MAX_NEW, seed=5)
    assert reference.greedy.tolist() == went_greedy.tolist()
    assert np.allclose(reference.certainty, result.certainty)
    assert (leak_judge(reference.answers, result.keys) == view.leak).all()
    assert np.allclose(rouge_per_sample([r["answer"] for r in rows], reference.answers), view.rouge)


def test_bounds_vs_n_shrink_with_more_samples():
    scores = np.random.default_rng(0).beta(2, 5, size=256)
    curve = prob.bounds_vs_n(scores, ALPHA)
    assert curve.index.tolist() == [4, 8, 16, 32, 64, 128, 256]
    width = (curve["mean_upper"] - curve["mean_lower"]).to_numpy()
    assert (np.diff(width) < 0).all()
    assert curve["std_upper"].iloc[-1] < curve["std_upper"].iloc[0]
    with pytest.raises(ValueError, match="ONE question"):
        prob.bounds_vs_n(scores.reshape(2, -1), ALPHA)


@pytest.mark.skipif(not HP_QA.exists(), reason=f"the HP Q&A file is not at {HP_QA}")
def test_hp_path_on_the_real_file_with_an_untrained_model(tiny_model, tiny_tokenizer, template):
    rows = prob.hp_rows(str(HP_QA), max_questions=6)
    assert len(rows) == 6 and all(r["keywords"] for r in rows)
    n = 4
    result, table, summary = prob.hp_leakage(tiny_model, tiny_tokenizer, template, rows, ALPHA, n=n,
                                             max_new_tokens=MAX_NEW)
    assert result.leak.shape == (6, n) and result.greedy_leak.shape == (6,) and result.rouge is None
    assert len(table) == 6 and summary["n_questions"] == 6 and summary["n_samples"] == n
    # an untrained model does not know Harry Potter: S = 0, and M_bin is the Clopper-Pearson value 1 - alpha^(1/n)
    assert (table["leaks"] == 0).all()
    assert np.allclose(table["binary_leak_bound"], 1 - ALPHA ** (1 / n))
    assert np.allclose(table["binary_leak_bound"], stats.beta.ppf(1 - ALPHA, 1, n))
    assert summary["binary_leak_bound_mean"] == pytest.approx(1 - ALPHA ** (1 / n))
    # the prefix is part of the prompt, not of the judged continuation
    plain = prob._prompt_ids(tiny_tokenizer, template, rows[:1], use_prefix=False)[0]
    prefixed = prob._prompt_ids(tiny_tokenizer, template, rows[:1], use_prefix=True)[0]
    assert prefixed[:len(plain)] == plain and len(prefixed) > len(plain)


def test_saved_models_are_scored_once_and_cached(tiny_model, tiny_tokenizer, template, small_corpus, tmp_path,
                                                 monkeypatch):
    from unlearnkit import paths

    monkeypatch.setattr(paths, "RUNS", tmp_path)
    models.save_model(tiny_model, tiny_tokenizer, tmp_path / "unit" / "models" / "target", template)
    rows = _forget_rows(small_corpus, 2)
    settings = {"n": 2, "max_new_tokens": 4, "seed": 0}
    first = prob.score_saved_model("unit", "target", rows, settings)
    hp_result, hp_table, _ = prob.run_hp_qa("target", "unit", {}, prob.hp_rows("synthetic", small_corpus.load("forget10"), 2), settings,
                                        ALPHA)
    cache = sorted(p.name.split("-")[0] for p in (tmp_path / "unit" / prob.NOTEBOOK / "cache").glob("*.json"))
    assert cache == ["target", "target.hp"]  # the HP cache does not evict the forget cache
    monkeypatch.setattr(prob, "sample_and_score", lambda *a, **k: pytest.fail("sampled again despite the cache"))
    again = prob.score_saved_model("unit", "target", rows, settings)
    assert again.examples == first.examples and np.array_equal(again.leak, first.leak)
    assert hp_result.leak.shape == (2, 2) and len(hp_table) == 2


def test_evenly_spaced_questions_cover_the_split():
    rows = list(range(200))
    picked = prob._evenly_spaced(rows, 40)
    assert len(picked) == 40 and picked[0] == 0 and picked[-1] == 199
    assert prob._evenly_spaced(rows, None) == rows and prob._evenly_spaced(rows, 500) == rows
