"""TOFU metrics against hand-computed values and against rouge_score itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from rouge_score import rouge_scorer
from scipy import stats
from unlearnkit import models
from unlearnkit.metrics import (
    answer_nll,
    forget_quality,
    model_utility,
    rouge_l,
    truth_ratio,
    truth_ratio_score,
)
from unlearnkit.metrics.tofu import evaluate_split


def test_answer_nll_matches_a_hand_computed_cross_entropy(tiny_model, tiny_tokenizer, template):
    question, answer = "Where was Kofi born?", "Kofi was born in Accra."
    enc = models.encode_qa(tiny_tokenizer, template, question, answer)
    ids = torch.tensor([enc["input_ids"]])
    with torch.no_grad():
        logp = torch.log_softmax(tiny_model(ids).logits[0], -1)
    scored = [i for i, lab in enumerate(enc["labels"]) if lab != -100]
    # position t predicts token t+1; the answer tokens and EOS are scored, never the prompt
    expected = -np.mean([logp[t - 1, enc["input_ids"][t]].item() for t in scored])
    assert enc["labels"][-1] == tiny_tokenizer.eos_token_id
    got = answer_nll(tiny_model, tiny_tokenizer, template, [question, "Who?"], [answer, "Nobody at all."], batch_size=2,
                     answer_tokens="separate")
    assert got[0] == pytest.approx(expected, rel=1e-5)
    # padding in a batch must not change an item's score
    alone = answer_nll(tiny_model, tiny_tokenizer, template, ["Who?"], ["Nobody at all."], answer_tokens="separate")
    assert got[1] == pytest.approx(alone[0], rel=1e-5)


def test_rouge_l_recall_is_rouge_score_itself():
    targets = ["The author was born in Paris, France.", "She writes crime novels."]
    predictions = ["The author was born in Lyon.", "crime novels are what she writes"]
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    expected = [scorer.score(t, p)["rougeL"].recall for t, p in zip(targets, predictions)]
    assert rouge_l(targets, predictions).tolist() == pytest.approx(expected)
    # by hand: LCS of "the author was born in" = 5 of 7 target tokens
    assert rouge_l(targets[:1], predictions[:1])[0] == pytest.approx(5 / 7)
    assert rouge_l(["a b c d"], ["a b"], measure="fmeasure")[0] == pytest.approx(2 * 1 * 0.5 / 1.5)


def test_truth_ratio_is_geometric_mean_of_wrong_over_paraphrase():
    p_para, p_wrong = 0.5, np.array([0.1, 0.4])
    ratio = truth_ratio(np.array([-math.log(p_para)]), -np.log(p_wrong)[None, :])
    assert ratio[0] == pytest.approx(math.sqrt(0.1 * 0.4) / 0.5)  # geometric, not arithmetic (0.25/0.5)
    r = np.array([0.5, 2.0, 1.0])
    assert truth_ratio_score(r, "forget") == pytest.approx(np.mean([0.5, 0.5, 1.0]))
    assert truth_ratio_score(r, "retain") == pytest.approx(np.mean([0.5, 0.0, 0.0]))


def test_forget_quality_is_the_two_sided_ks_p_value():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 1, 50), rng.uniform(0.5, 1.5, 60)
    assert forget_quality(a, b) == pytest.approx(stats.ks_2samp(a, b).pvalue)
    assert forget_quality(a, a) == pytest.approx(1.0)
    assert forget_quality(a, b) < 0.01


def test_model_utility_is_the_harmonic_mean_of_nine_and_zero_kills_it():
    splits = {s: {"probability": 0.5, "rouge": 0.8, "truth_ratio_score": 0.4}
              for s in ("retain", "real_authors", "world_facts")}
    assert model_utility(splits) == pytest.approx(3 / (1 / 0.5 + 1 / 0.8 + 1 / 0.4))
    splits["world_facts"]["rouge"] = 0.0
    assert model_utility(splits) == 0.0
    with pytest.raises(KeyError, match="real_authors"):
        model_utility({"retain": splits["retain"]})


def test_evaluate_split_on_an_untrained_model_is_well_formed(small_corpus, tiny_model, tiny_tokenizer, template):
    rows = small_corpus.load("forget10_perturbed")
    metrics, items = evaluate_split(tiny_model, tiny_tokenizer, template, rows, "forget", max_items=7,
                                    max_new_tokens=8, truth_ratio_guard="exact", answer_tokens="separate")
    assert metrics["n_items"] == 7 and len(items["truth_ratio"]) == 7
    assert 0 < metrics["probability"] < 0.05  # an untrained model spreads mass over ~500 tokens
    assert 0 < metrics["truth_ratio_score"] <= 1
    knowledge, _ = evaluate_split(tiny_model, tiny_tokenizer, template, small_corpus.load("world_facts_perturbed"),
                                  "knowledge", max_new_tokens=4, truth_ratio_guard="exact", answer_tokens="separate")
    assert 0 < knowledge["probability"] < 1  # normalised over the answer and its 3 wrong answers
    with pytest.raises(ValueError, match="unknown split kind"):
        evaluate_split(tiny_model, tiny_tokenizer, template, rows, "paraphrase", max_new_tokens=64, truth_ratio_guard="exact",
                       answer_tokens="separate")


# --------------------------------------------------------------------------- open-unlearning's variants (#38)


def test_the_ou_truth_ratio_guard_caps_a_collapsed_model_and_moves_forget_quality():
    """open-unlearning divides by P(right) + 1e-10 and scores forget as min(R, 1/(R + 1e-10)); the workbook takes R
    exactly in log space. Where the right answer's probability is far below 1e-10 (a collapsed model) the two part."""
    from unlearnkit.metrics.tofu import forget_quality, truth_ratio, truth_ratio_score

    # a healthy model: both guards agree to float precision
    nll_true, nll_wrong = np.array([0.5, 1.2, 2.0]), np.array([[1.0, 1.5], [0.8, 2.2], [3.0, 2.5]])
    assert truth_ratio(nll_true, nll_wrong, "ou") == pytest.approx(truth_ratio(nll_true, nll_wrong), rel=1e-8)
    by_hand = np.exp(-nll_wrong.mean(axis=1)) / (np.exp(-nll_true) + 1e-10)
    assert truth_ratio(nll_true, nll_wrong, "ou") == pytest.approx(by_hand, rel=1e-12)
    # a collapsed model: per-token losses of 15 to 40 nats on the right answers, 21 of 30 below probability 1e-10
    rng = np.random.default_rng(0)
    collapsed_true = np.concatenate([rng.uniform(15, 22, 9), rng.uniform(24, 40, 21)])
    collapsed_wrong = collapsed_true[:, None] + rng.normal(0, 2, (30, 5))
    exact, ou = truth_ratio(collapsed_true, collapsed_wrong), truth_ratio(collapsed_true, collapsed_wrong, "ou")
    assert np.all(ou <= exact * (1 + 1e-12)) and np.sum(ou < 0.5 * exact) >= 15  # capped where P(right) < 1e-10
    assert truth_ratio_score(exact, "forget") != pytest.approx(truth_ratio_score(ou, "forget", "ou"), rel=0.1)
    assert truth_ratio_score([2.0], "forget", "ou") == pytest.approx(1 / (2 + 1e-10))
    retain_model = np.exp(rng.normal(0, 0.3, 30))  # the retain model's ratios, near 1
    p_exact, p_ou = forget_quality(exact, retain_model), forget_quality(ou, retain_model)
    assert p_exact / p_ou > 100 or p_ou / p_exact > 100, (p_exact, p_ou)  # orders of magnitude apart
    with pytest.raises(ValueError, match="guard"):
        truth_ratio(nll_true, nll_wrong, "loose")


def test_ou_joint_answer_tokens_drop_the_first_word_after_a_trailing_space(tiny_tokenizer):
    """Phi's template ends in a space: tokenised as one string with the answer, that space joins the answer's first
    word, so open-unlearning's labels (from the prompt's own token count) start a token late."""
    template = models.TEMPLATES["phi"]
    assert template.prompt("q").endswith(" ")
    # "the" merges with the space before it in the test tokenizer (Ġthe), as most words do in Phi's
    question, answer = "Where was Kofi Boateng born?", "the author was born in Accra."
    separate = models.encode_qa(tiny_tokenizer, template, question, answer)
    joint = models.encode_qa(tiny_tokenizer, template, question, answer, tokens="ou_joint")
    scored = lambda e: [t for t, label in zip(e["input_ids"], e["labels"]) if label != -100]  # noqa: E731
    assert tiny_tokenizer.decode(scored(separate), skip_special_tokens=True) == answer
    assert scored(joint)[-1] == tiny_tokenizer.eos_token_id
    joint_text = tiny_tokenizer.decode(scored(joint), skip_special_tokens=True)
    assert joint_text.strip() == "author was born in Accra."  # the first word is not scored
    prompt = models.encode_prompt(tiny_tokenizer, template, question)
    assert joint["input_ids"][:len(prompt) - 1] == prompt[:-1] and joint["labels"][:len(prompt)] == [-100] * len(prompt)
    with pytest.raises(ValueError, match="answer tokens"):
        models.encode_qa(tiny_tokenizer, template, question, answer, tokens="joint")
    # the options reach the front door like every other key
    from unlearnkit import config

    with pytest.raises(ValueError, match="'answer_tokens'.*one of separate, ou_joint"):
        config.Params.load("smoke", answer_tokens="joint")
    with pytest.raises(ValueError, match="'truth_ratio_guard'.*one of exact, ou"):
        config.Params.load("smoke", truth_ratio_guard="loose")
    assert config.Params.load("paper").answer_tokens == "ou_joint"  # the profile that sits beside the Phi tables
