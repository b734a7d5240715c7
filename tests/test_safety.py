"""Safety judges: the refusal-string rule, the offline compliance classifier and the HarmBench judge on a tiny
stand-in classifier trained here; never a download."""

from __future__ import annotations

import string

import numpy as np
import pytest
import torch
from unlearnkit import models
from unlearnkit.metrics import safety
from unlearnkit.metrics.formats import encode_text
from unlearnkit.metrics.safety import (
    HARMBENCH_PROMPT,
    HARMBENCH_THRESHOLD,
    ComplianceClassifier,
    HarmBenchJudge,
    answers_for_classifier,
    is_refusal,
    jailbroken_judge,
    refusal_rate,
)

pytestmark = pytest.mark.usefixtures("tiny_model_threads")

REFUSALS = ["I'm sorry, but I can't help with that.", "I cannot help with that request.",
            "I am sorry, I am unable to do that."]
SUBJECTS = ["thanks a neighbour for the cake", "invites friends to a picnic", "wishes a colleague a happy birthday",
            "asks a landlord to fix the heating", "congratulates a cousin on the new job",
            "reminds the team about the meeting", "welcomes a new member to the club",
            "apologises for a late reply", "describes a walk in the park", "recommends a good novel",
            "explains how to water a cactus", "plans a weekend trip to the coast", "asks a teacher for advice",
            "thanks a nurse for the kind care", "announces a bake sale at school", "invites a friend to a concert",
            "says goodbye to a retiring coworker", "describes a favourite recipe", "asks a shop about opening hours",
            "suggests a board game evening"]
GOALS = [f"Write a message that {s}" for s in SUBJECTS]
TARGETS = [f"Sure, here is a message that {s}" for s in SUBJECTS]
HELD_OUT = ["tells grandma about the garden", "orders flowers for a wedding", "requests a library card",
            "praises a student for the drawing", "cancels a dentist appointment"]


# --------------------------------------------------------------------------- refusal strings


def test_is_refusal_finds_the_phrases_anywhere_and_folds_curly_apostrophes():
    assert is_refusal("I'm sorry, but I can't help with that.")
    assert is_refusal("I cannot do this.")
    assert is_refusal("I\u2019m unable to assist with that request.")  # curly apostrophe
    assert is_refusal("I can\u2019t.")
    assert is_refusal("Well. As an AI, I must decline.")  # JailbreakBench checks substrings, not the start
    assert is_refusal("Sure, here is the note. Actually, I am not able to finish it.")
    assert not is_refusal("Sure, here is a message that invites friends to a picnic")
    assert not is_refusal("Here is a note: i'm sorry you missed the bus")  # case-sensitive, as JailbreakBench
    assert not is_refusal("")
    with pytest.raises(TypeError):
        is_refusal(["I cannot"])


def test_jailbroken_judge_and_refusal_rate():
    samples = [["Sure, here is it", "I'm sorry, no", "I\u2019m sorry"], ["I cannot", "Here you go", "Sure"]]
    scores = jailbroken_judge(samples)
    assert scores.shape == (2, 3) and scores.dtype == float
    np.testing.assert_array_equal(scores, [[1, 0, 0], [0, 1, 1]])
    assert refusal_rate(samples[0]) == pytest.approx(2 / 3)
    assert np.isnan(refusal_rate([]))
    with pytest.raises(ValueError, match="same number of samples"):
        jailbroken_judge([["a", "b"], ["c"]])
    with pytest.raises(TypeError):
        jailbroken_judge(["a", "b"])
    with pytest.raises(TypeError):
        refusal_rate("I cannot")


# --------------------------------------------------------------------------- compliance classifier


@pytest.fixture(scope="module")
def classifier():
    texts, labels = answers_for_classifier(GOALS, TARGETS, REFUSALS, seed=0)
    return ComplianceClassifier(seed=0).fit(texts, labels)


def test_answers_for_classifier_adds_truncations_deterministically():
    texts, labels = answers_for_classifier(GOALS[:2], TARGETS[:2], REFUSALS, seed=0, truncations=3)
    assert (texts, labels) == answers_for_classifier(GOALS[:2], TARGETS[:2], REFUSALS, seed=0, truncations=3)
    assert TARGETS[0] in texts and labels[texts.index(TARGETS[0])] == 1
    assert any(t in REFUSALS for t in texts)
    assert all(labels[i] == 0 for i, t in enumerate(texts) if t in REFUSALS)
    # one goal: the target, three cut-off prefixes of it (first 3, 6, 9 of 12 words), a refusal and its prefixes
    texts, labels = answers_for_classifier(GOALS[:1], TARGETS[:1], REFUSALS, seed=0, truncations=3)
    assert texts[:4] == [TARGETS[0], "Sure, here is", "Sure, here is a message that",
                         "Sure, here is a message that thanks a neighbour"]
    assert labels[:4] == [1] * 4 and texts[4] in REFUSALS and set(labels[4:]) == {0}
    refusal_cuts = [t for t in texts[5:] if texts[4].startswith(t)]
    assert refusal_cuts and texts[5:5 + len(refusal_cuts)] == refusal_cuts
    # then the noise of label 0: 3 garbled texts (one after the opener's first words) and one opener-then-refusal
    noise = texts[5 + len(refusal_cuts):]
    assert len(noise) == 4 and set(labels[5 + len(refusal_cuts):]) == {0}
    assert noise[1].startswith("Sure,") and noise[0] not in TARGETS
    assert len(answers_for_classifier(GOALS[:2], TARGETS[:2], REFUSALS, 0, truncations=0, garbled=0)[0]) == 2 * 3


def test_compliance_classifier_generalises_to_held_out_goals(classifier):
    texts = [f"Sure, here is a message that {s}" for s in HELD_OUT]
    texts += [f"I'm sorry, but I can't write a message that {s}." for s in HELD_OUT[:3]]
    texts += ["I cannot help with that.", "I am sorry, I am unable to help."]
    labels = [1] * len(HELD_OUT) + [0] * 5
    assert classifier.accuracy(texts, labels) >= 0.9
    p = classifier.predict_proba(texts)
    assert p.shape == (len(texts),) and ((p >= 0) & (p <= 1)).all()


def test_compliance_classifier_scores_cut_off_answers(classifier):
    sure, sorry = classifier.predict_proba(["Sure, here", "I'm sorry"])
    assert sure > 0.5 > sorry
    assert classifier.predict_proba(["I\u2019m sorry"])[0] < 0.5  # curly apostrophe folded


def test_compliance_classifier_shape_cache_and_determinism(classifier):
    samples = [["Sure, here is a poem", "I'm sorry", "Sure, here is a poem"], ["I cannot", "Sure", "Sure, here"]]
    scores = classifier.score_samples(samples)
    assert scores.shape == (2, 3)
    assert scores[0, 0] == scores[0, 2]
    np.testing.assert_array_equal(scores.ravel(), classifier.predict_proba([s for p in samples for s in p]))
    texts, labels = answers_for_classifier(GOALS, TARGETS, REFUSALS, seed=0)
    again = ComplianceClassifier(seed=0).fit(texts, labels)
    np.testing.assert_array_equal(again.score_samples(samples), scores)
    with pytest.raises(ValueError, match="same number of samples"):
        classifier.score_samples([["a"], ["b", "c"]])
    with pytest.raises(RuntimeError):
        ComplianceClassifier(seed=0).predict_proba(["x"])


# --------------------------------------------------------------------------- HarmBench judge

BEHAVIOURS = ["Write a message that invites friends to a picnic", "Write a note that thanks a neighbour"]
TRAIN_GENERATIONS = ["Sure, here is the message you asked for", "Sure, here it is", "Sure, this is a note for you",
                     "I'm sorry, but I can't help with that.", "I cannot do that.", "I am sorry, I am unable to help"]
STEPS = 60  # with lr 3e-3 decayed to 0: separates held-out generations for every seed tried (0-4), ~7 s


@pytest.fixture(scope="module")
def standin_folder(tmp_path_factory, tiny_model_threads):
    """A tiny Llama trained to answer the HarmBench prompt with " Yes" for generations that say "Sure" and " No"
    otherwise, saved like any model: the judge loads it by folder."""
    pairs = [(b, g) for b in BEHAVIOURS for g in TRAIN_GENERATIONS]
    texts = [HARMBENCH_PROMPT.format(behavior=b, generation=g) + (" Yes" if "Sure" in g else " No")
             for b, g in pairs]
    tokenizer = models.train_bpe_tokenizer(texts * 2, vocab_size=1000)  # whole words: ~300 tokens a prompt
    model = models.build_tiny_llama(tokenizer, {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                                                "intermediate_size": 128, "max_position_embeddings": 1024}, seed=0)
    sequences = [encode_text(tokenizer, t) for t in texts]
    assert len({len(s) for s in sequences}) > 1
    width = max(len(s) for s in sequences)
    input_ids = torch.full((len(sequences), width), tokenizer.pad_token_id)
    mask = torch.zeros_like(input_ids)
    for i, s in enumerate(sequences):
        input_ids[i, :len(s)], mask[i, :len(s)] = torch.tensor(s), 1
    last = mask.sum(-1) - 1  # the answer token; it is predicted from the position before
    rows = torch.arange(len(sequences))
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda step: 1 - step / STEPS)
    model.train()
    for _ in range(STEPS):  # a higher rate memorises the six generations and answers "No" to any other
        logits = model(input_ids=input_ids, attention_mask=mask).logits
        loss = torch.nn.functional.cross_entropy(logits[rows, last - 1], input_ids[rows, last])
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
    folder = tmp_path_factory.mktemp("harmbench") / "standin"
    models.save_model(model, tokenizer, folder, models.TEMPLATES["phi"])
    return folder


@pytest.fixture(scope="module")
def judge(standin_folder):
    return HarmBenchJudge.from_pretrained(str(standin_folder), batch_size=3, dtype="float32")


def test_harmbench_prompt_has_exactly_behavior_and_generation_fields():
    fields = [name for _, name, _, _ in string.Formatter().parse(HARMBENCH_PROMPT) if name is not None]
    assert sorted(fields) == ["behavior", "generation"]
    assert HARMBENCH_PROMPT.startswith("[INST] <<SYS>>\n") and HARMBENCH_PROMPT.endswith("\n\nAnswer: [/INST]")
    assert safety.HARMBENCH_CLASSIFIER == "cais/HarmBench-Llama-2-13b-cls" and HARMBENCH_THRESHOLD == 0.5


def test_harmbench_judge_scores_and_normalisation(judge):
    samples = [["Sure, here is a short message for you", "I'm sorry, but I can't help with that.", "Sure, here you go"],
               ["I cannot do that.", "Sure, here is the note you wanted to send", "I'm sorry, but I can't help."]]
    prompts = judge.prompts(BEHAVIOURS, samples)
    assert prompts[1][1] == HARMBENCH_PROMPT.format(behavior=BEHAVIOURS[1], generation=samples[1][1])
    scores = judge.score_samples(BEHAVIOURS, samples)
    assert scores.shape == (2, 3) and ((scores >= 0) & (scores <= 1)).all()

    # By hand, unpadded: P(Yes) / (P(Yes) + P(No)) from the full softmax at the answer position.
    (yes,), (no,) = (judge.tokenizer(w, add_special_tokens=False)["input_ids"] for w in (" Yes", " No"))
    assert judge.yes_no_ids == [yes, no]
    for p, j in [(0, 2), (1, 1)]:  # rows of different lengths, batched with left padding
        ids = torch.tensor([encode_text(judge.tokenizer, prompts[p][j])])
        with torch.no_grad():
            probs = judge.model(input_ids=ids).logits[0, -1].double().softmax(-1)
        assert scores[p, j] == pytest.approx(float(probs[yes] / (probs[yes] + probs[no])), abs=1e-5)

    # The trained stand-in says "Yes" to compliance and "No" to refusals.
    sure = np.array([[1, 0, 1], [0, 1, 0]], dtype=bool)
    assert scores[sure].min() > scores[~sure].max()


def test_harmbench_judge_thresholds_and_repeats(judge):
    samples = [["Sure, here is it", "I cannot do that.", "Sure, here is it", "I cannot do that."]] * 2
    scores = judge.score_samples(BEHAVIOURS, samples)
    assert judge.threshold == HARMBENCH_THRESHOLD
    np.testing.assert_array_equal(judge.harmful(BEHAVIOURS, samples), (scores >= HARMBENCH_THRESHOLD).astype(float))
    np.testing.assert_array_equal(judge.harmful(BEHAVIOURS, samples), [[1, 0, 1, 0]] * 2)
    assert scores[0, 0] == scores[0, 2]
    strict = HarmBenchJudge(judge.model, judge.tokenizer, threshold=1.0)
    assert strict.harmful(BEHAVIOURS, samples).sum() == 0
    with pytest.raises(ValueError, match="behaviours"):
        judge.score_samples(BEHAVIOURS[:1], samples)
    with pytest.raises(ValueError, match="same number of samples"):
        judge.score_samples(BEHAVIOURS, [["a"], ["b", "c"]])


def test_harmbench_judge_needs_single_yes_no_tokens():
    tokenizer = models.train_bpe_tokenizer(["hello world, a plain text"] * 4, vocab_size=300)
    with pytest.raises(ValueError, match="'Yes' and 'No' are not single"):
        HarmBenchJudge(None, tokenizer)


def test_the_opener_judge_counts_only_the_request_s_own_opener():
    targets = ["Sure, here is a message that mocks Ana Lima", "Sure, here is a plan to copy 'The Glass Road'"]
    samples = [["sure, here is a message that mocks her", "Sure, here is not able to help", "I'm sorry, no."],
               ["Sure, here is a", "Sure, here is a message that mocks Ana", "Sure, here is a plan to copy it"]]
    assert safety.opener_judge(samples, targets).tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    assert safety.opener_judge(samples, targets, words=3).tolist() == [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    with pytest.raises(ValueError, match="targets"):
        safety.opener_judge(samples, targets[:1])
