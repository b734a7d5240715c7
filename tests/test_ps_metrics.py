"""Parameterisation strength (docs/metrics.md §5): the prefix search against fake oracles with known answers,
the PS formula by hand, the model plumbing against a fake decoder, a tiny model that has memorised
three answers (PS 1) next to strings it never saw and an untrained model (PS near 0), and the teacher-forced
PS profiles against the generation search."""

from __future__ import annotations

import math

import numpy as np
import pytest
from unlearnkit import models, training
from unlearnkit.generation import greedy_answers, greedy_continuations
from unlearnkit.metrics import ps
from unlearnkit.metrics.ps import ps_from_prefix_lengths, search_shortest_prefix
from unlearnkit.metrics.tofu import answer_nll

pytestmark = pytest.mark.usefixtures("tiny_model_threads")

# --------------------------------------------------------------------------- the search alone


def _threshold_oracle(thresholds, calls):
    """Success iff k >= the item's threshold (None: never): monotone in k. Records every call."""

    def succeeds_batch(probes):
        calls.append(list(probes))
        return [thresholds[i] is not None and k >= thresholds[i] for i, k in probes]

    return succeeds_batch


LENGTHS = [5, 8, 1, 10, 0, 28, 7]
THRESHOLDS = [3, 0, 0, 9, None, 17, None]  # item 4 has an empty answer; items 4 and 6 never succeed
EXPECTED_K = [3, 0, 0, 9, None, 17, None]


@pytest.mark.parametrize("strategy", ["binary", "linear"])
def test_both_strategies_find_the_threshold_of_a_monotone_oracle(strategy):
    calls: list = []
    settled: list[int] = []
    ks = search_shortest_prefix(LENGTHS, _threshold_oracle(THRESHOLDS, calls), strategy, on_settled=settled.append)
    assert ks == EXPECTED_K
    assert sum(settled) == len(LENGTHS)  # every item settles exactly once
    for probes in calls:  # one round = one batch with at most one probe per item, each k in 0 .. |y|-1
        items = [i for i, _ in probes]
        assert len(items) == len(set(items))
        assert all(0 <= k < LENGTHS[i] for i, k in probes)
    assert all(i != 4 for probes in calls for i, _ in probes)  # an empty answer is never probed
    if strategy == "binary":
        assert len(calls) <= math.ceil(math.log2(max(LENGTHS))) + 1
    else:
        assert len(calls) == 18  # item 5 probes k = 0 .. 17, the longest run of any item
        # an item leaves the batch at its first success
        assert sum(1 for probes in calls for i, _ in probes if i == 1) == 1


def test_strategies_agree_on_random_monotone_oracles():
    rng = np.random.default_rng(0)
    for _ in range(50):
        lengths = rng.integers(0, 40, size=12).tolist()
        thresholds = [None if n == 0 or rng.random() < 0.2 else int(rng.integers(0, n)) for n in lengths]
        binary = search_shortest_prefix(lengths, _threshold_oracle(thresholds, []), "binary")
        linear = search_shortest_prefix(lengths, _threshold_oracle(thresholds, []), "linear")
        assert binary == linear == thresholds


def test_linear_finds_the_true_shortest_k_of_a_non_monotone_oracle():
    successes = {0: {2, 6}, 1: {9}}  # item 0 succeeds at k = 2 and 6 only; item 1 only at the last k

    def oracle(probes):
        return [k in successes[i] for i, k in probes]

    assert search_shortest_prefix([10, 10], oracle, "linear") == [2, 9]
    # binary search assumes monotone success: here it probes k = 5 (fail), 8 (fail), 9 (fail) for
    # item 0 and never sees k = 2 or 6 — the documented price of the fast variant.
    assert search_shortest_prefix([10, 10], oracle, "binary") == [None, 9]


def test_unknown_strategy_and_bad_oracle_are_errors():
    with pytest.raises(ValueError, match="unknown search strategy"):
        search_shortest_prefix([3], lambda probes: [True], "ternary")
    with pytest.raises(ValueError, match="answered 0 of 1"):
        search_shortest_prefix([3], lambda probes: [], "binary")


def test_ps_is_one_minus_k_over_length_by_hand():
    ks = search_shortest_prefix(LENGTHS, _threshold_oracle(THRESHOLDS, []), "binary")
    expected = [1 - 3 / 5, 1.0, 1.0, 1 - 9 / 10, 0.0, 1 - 17 / 28, 0.0]
    assert ps_from_prefix_lengths(ks, LENGTHS).tolist() == pytest.approx(expected)
    # nothing succeeds (k = |y| would be a vacuous success and is never tried): PS 0 everywhere
    nothing = search_shortest_prefix([4, 1], lambda probes: [False] * len(probes), "linear")
    assert nothing == [None, None] and ps_from_prefix_lengths(nothing, [4, 1]).tolist() == [0.0, 0.0]
    assert ps_from_prefix_lengths([0], [0]).tolist() == [0.0]  # an empty answer: 0, not a division by zero


# --------------------------------------------------------------------------- model plumbing, fake decoder


def test_ps_scores_against_a_fake_decoder_with_known_thresholds(monkeypatch, tiny_tokenizer, template):
    questions = ["Who is Noa Hoang?", "Where was Noa Hoang born?", "What does Ann write?", "Who?", "Why?"]
    answers = ["Noa Hoang is a non-binary writer of fantasy.", "Noa Hoang was born in Da Nang, Vietnam.",
               "Ann writes crime novels set in Oslo.", "Nobody at all.", ""]
    prompts = [models.encode_prompt(tiny_tokenizer, template, q) for q in questions]
    ys = [ps.answer_token_ids(tiny_tokenizer, a) for a in answers]
    assert tiny_tokenizer.decode(ys[0]) == answers[0] and tiny_tokenizer.eos_token_id not in ys[0]
    # item: (threshold k, behaviour from the threshold on)
    plan = {0: (4, "exact"), 1: (0, "drop-last"), 2: (len(ys[2]) - 1, "exact"), 3: (None, "never")}
    calls: list = []

    def fake_greedy(model, tokenizer, inputs, max_new_tokens, batch_size):
        calls.append((len(inputs), max_new_tokens, batch_size))
        out, needed = [], []
        for ids in inputs:  # each input must be some item's prompt + its first k answer tokens
            item = next(i for i, p in enumerate(prompts) if ids[: len(p)] == p and ids[len(p):] == ys[i][: len(ids) - len(p)])
            k = len(ids) - len(prompts[item])
            needed.append(len(ys[item]) - k)
            threshold, behaviour = plan[item]
            if threshold is None or k < threshold:
                out.append([])  # EOS at once: fails every criterion
            elif behaviour == "exact":
                out.append(ys[item][k:] + ys[1][:3])  # the rest, then tokens past |y|-k that must be ignored
            else:
                out.append(ys[item][k:-1])  # the rest without its final "." : same words, not the same tokens
        assert max_new_tokens == max(needed)  # a chunk generates what its neediest row needs, no more
        return out

    monkeypatch.setattr(ps, "greedy_continuations", fake_greedy)
    lengths = [len(y) for y in ys]
    for search in ("binary", "linear"):
        calls.clear()
        exact = ps.ps_scores(None, tiny_tokenizer, template, questions, answers, "exact", search, batch_size=2)
        assert exact.tolist() == pytest.approx([1 - 4 / lengths[0], 0.0, 1 / lengths[2], 0.0, 0.0])
        assert all(n <= 2 and bs == n for n, _, bs in calls)  # chunks of batch_size, each one generate call
        similar = ps.ps_scores(None, tiny_tokenizer, template, questions, answers, "similar", search)
        # "drop-last" keeps every word, so ROUGE-L recall is 1 from k = 0 although no token sequence matches
        assert similar.tolist() == pytest.approx([1 - 4 / lengths[0], 1.0, 1 / lengths[2], 0.0, 0.0])
    with pytest.raises(ValueError, match="unknown PS criterion"):
        ps.ps_scores(None, tiny_tokenizer, template, questions, answers, "fuzzy")

    # evaluate_ps: means of the same per-item values; PS-perturb only over rows with a paraphrase
    rows = [{"question": q, "answer": a} for q, a in zip(questions, answers)]
    metrics, per_item = ps.evaluate_ps(None, tiny_tokenizer, template, rows, max_items=3)
    assert set(per_item) == {"ps_exact", "ps_similar"} and "ps_perturb" not in metrics
    assert metrics["n_items"] == 3
    assert metrics["ps_exact"] == pytest.approx(np.mean([1 - 4 / lengths[0], 0.0, 1 / lengths[2]]))
    assert metrics["ps_similar"] == pytest.approx(np.mean([1 - 4 / lengths[0], 1.0, 1 / lengths[2]]))
    rows[0]["paraphrased_question"] = questions[0]  # the fake decoder knows items by their prompt
    metrics, per_item = ps.evaluate_ps(None, tiny_tokenizer, template, rows, max_items=3)
    assert metrics["n_items_perturb"] == 1 and metrics["ps_perturb"] == pytest.approx(1 - 4 / lengths[0])
    assert np.isnan(per_item["ps_perturb"][1:]).all()


# --------------------------------------------------------------------------- a tiny model that memorised three answers

TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128}


HINT_QUESTION = "Tell me something."  # never trained on: the model needs part of a memorised answer first


@pytest.fixture(scope="module")
def memorised(small_corpus, tiny_tokenizer, tmp_path_factory):
    """A tiny model trained on three short Q&A strings until greedy decoding gives back all three
    answers; two other answers about the same author it never saw."""
    template = models.TEMPLATES["phi"]
    rows = small_corpus.load("forget10_perturbed")
    seen, unseen = [rows[i] for i in (2, 9, 12)], [rows[i] for i in (4, 5)]  # answers of 10-16 tokens
    model = models.build_tiny_llama(tiny_tokenizer, TINY, seed=0)
    examples = [models.encode_qa(tiny_tokenizer, template, r["question"], r["answer"]) for r in seen]
    questions, answers = [r["question"] for r in seen], [r["answer"] for r in seen]
    for attempt in range(10):  # memorised after 2 rounds here; more rounds keep the test robust
        cfg = training.TrainConfig(output_dir=tmp_path_factory.mktemp(f"memorise{attempt}"), max_steps=25,
                                   batch_size=3, lr=1e-2, schedule="constant", progress=False, seed=attempt)
        training.train(model, examples, cfg, collate_fn=lambda b: models.collate(b, tiny_tokenizer.pad_token_id))
        if greedy_answers(model, tiny_tokenizer, template, questions, max_new_tokens=24) == answers:
            break
    return model, template, seen, unseen


@pytest.fixture(scope="module")
def evaluated(memorised, tiny_tokenizer):
    """evaluate_ps (binary search) on the 3 memorised rows, the 2 unseen ones and the 3 memorised
    answers behind HINT_QUESTION (rows without a paraphrased question)."""
    model, template, seen, unseen = memorised
    hinted = [{"question": HINT_QUESTION, "answer": r["answer"]} for r in seen]
    return ps.evaluate_ps(model, tiny_tokenizer, template, seen + unseen + hinted)


def test_memorised_answers_have_ps_one_and_unseen_ones_near_zero(memorised, evaluated, tiny_tokenizer):
    model, template, seen, _ = memorised
    metrics, per_item = evaluated
    questions, answers = [r["question"] for r in seen], [r["answer"] for r in seen]
    # the premise first: greedy decoding from the question alone gives back each answer
    assert greedy_answers(model, tiny_tokenizer, template, questions, max_new_tokens=24) == answers
    assert per_item["ps_exact"][:3].tolist() == [1.0, 1.0, 1.0]  # binary search
    assert ps.ps_scores(model, tiny_tokenizer, template, questions, answers, "exact", "linear").tolist() == [1.0] * 3
    assert per_item["ps_exact"][3:5].mean() < 0.3  # observed 0: nothing in training completes these
    # behind a question it never saw, a memorised answer needs a prefix first (observed PS 0.375, 0.417,
    # 0.5; with other seeds one item sometimes never comes back, hence "any")
    hinted = per_item["ps_exact"][5:]
    assert ((0 < hinted) & (hinted < 1)).any() and (hinted < 1).all()


def test_an_untrained_model_has_ps_near_zero(small_corpus, tiny_tokenizer, template):
    model = models.build_tiny_llama(tiny_tokenizer, TINY, seed=1)
    rows = [small_corpus.load("forget10_perturbed")[i] for i in (12, 13)]
    got = ps.ps_scores(model, tiny_tokenizer, template, [r["question"] for r in rows], [r["answer"] for r in rows])
    assert got.mean() < 0.2  # observed 0


def test_linear_and_binary_agree_where_the_model_succeeds_monotonically(memorised, tiny_tokenizer):
    model, template, seen, _ = memorised
    questions, answers = [HINT_QUESTION] * len(seen), [r["answer"] for r in seen]
    oracle, lengths = ps.prefix_success_oracle(model, tiny_tokenizer, template, questions, answers, "exact")
    probes = [(i, k) for i, n in enumerate(lengths) for k in range(n)]
    outcomes = oracle(probes)  # the whole success profile over k, in one batched call
    profiles = [[ok for (i, _), ok in zip(probes, outcomes) if i == item] for item in range(len(lengths))]
    first = [next((k for k, ok in enumerate(p) if ok), None) for p in profiles]
    monotone = [i for i, p in enumerate(profiles) if all(b or not a for a, b in zip(p, p[1:]))]
    assert any(0 < (first[i] or 0) for i in monotone), f"no monotone profile with 0 < k < |y|: {profiles}"
    binary, _ = ps.shortest_prefixes(model, tiny_tokenizer, template, questions, answers, "exact", "binary")
    linear, _ = ps.shortest_prefixes(model, tiny_tokenizer, template, questions, answers, "exact", "linear")
    assert linear == first  # linear search finds the true shortest k, whatever the profile
    assert [binary[i] for i in monotone] == [linear[i] for i in monotone]


def test_evaluate_ps_reports_means_and_similar_is_never_below_exact(evaluated):
    metrics, per_item = evaluated
    assert set(per_item) == {"ps_exact", "ps_perturb", "ps_similar"}
    assert metrics["n_items"] == 8 and metrics["n_items_perturb"] == 5  # the hinted rows have no paraphrase
    assert np.isnan(per_item["ps_perturb"][5:]).all() and not np.isnan(per_item["ps_perturb"][:5]).any()
    for key in ("ps_exact", "ps_similar"):
        assert metrics[key] == pytest.approx(per_item[key].mean())
    assert metrics["ps_perturb"] == pytest.approx(np.nanmean(per_item["ps_perturb"]))
    # an exact reproduction is similar too, and binary search is monotone in its oracle, so item by item:
    assert (per_item["ps_similar"] >= per_item["ps_exact"]).all()
    assert ((0 <= per_item["ps_similar"]) & (per_item["ps_similar"] <= 1)).all()


# --------------------------------------------------------------------------- teacher-forced PS profiles


def test_teacher_forced_exact_matches_the_generation_search(tiny_model, tiny_tokenizer, template,
                                                            small_corpus):
    """Answers built from the model's own greedy continuations, with one token changed at a chosen place:
    the shortest k is at least one past the change (the changed context may derail later tokens too), and
    the linear scan of greedy decodings must find the same k."""
    rows = small_corpus.load("forget10_perturbed")[:6]
    prompts = [models.encode_prompt(tiny_tokenizer, template, r["question"]) for r in rows]
    own = [c[:10] for c in greedy_continuations(tiny_model, tiny_tokenizer, prompts, max_new_tokens=10)]
    assert all(len(c) == 10 for c in own)
    answers = [list(c) for c in own]
    for i in range(5):  # change token 2i of item i (item 5 stays the model's own: k = 0)
        answers[i][2 * i] = (answers[i][2 * i] + 7) % (len(tiny_tokenizer) - 3) + 3

    def reproduces(probes):
        conts = greedy_continuations(tiny_model, tiny_tokenizer, [prompts[i] + answers[i][:k] for i, k in probes],
                                     max_new_tokens=10)
        return [c[:10 - k] == answers[i][k:] for (i, k), c in zip(probes, conts)]

    searched = ps.search_shortest_prefix([len(a) for a in answers], reproduces, "linear")
    tiny_model.train()
    forced = ps.exact_prefix_lengths(tiny_model, prompts, answers, tiny_tokenizer.pad_token_id, batch_size=4)
    assert tiny_model.training  # the forward passes ran in eval mode, and the mode is restored
    assert forced == searched
    assert forced[5] == 0 and forced[0] is not None and forced[0] >= 1
    assert all(k is None or k >= 2 * i + 1 for i, k in enumerate(forced[:5]))
    with pytest.raises(ValueError, match="6 prompts but 5 answers"):
        ps.exact_prefix_lengths(tiny_model, prompts, answers[:5], tiny_tokenizer.pad_token_id)


@pytest.fixture()
def led_rows(tiny_model, tiny_tokenizer, template, small_corpus):
    """Answers the model gives itself after a few words of a corpus answer (so PS is between 0 and 1), its
    own answers (PS near 1) and corpus answers it never saw (PS 0), as a forget and a held-out set."""
    rows = small_corpus.load("forget10_perturbed")[:6]
    questions = [r["question"] for r in rows]
    starts = [" ".join(r["answer"].split()[:3]) for r in rows]
    led = greedy_answers(tiny_model, tiny_tokenizer, template, questions, max_new_tokens=8, prefixes=starts)
    own = greedy_answers(tiny_model, tiny_tokenizer, template, questions, max_new_tokens=8)
    made = [{**r, "answer": f"{p} {c}"} for r, p, c in zip(rows, starts, led)]
    forget = made[:3] + [{**rows[0], "answer": own[0]}] + rows[4:5]
    heldout = made[3:] + [{**rows[1], "answer": own[1]}] + rows[5:6]
    return forget, heldout


def test_ps_profile_agrees_with_evaluate_ps(tiny_model, tiny_tokenizer, template, led_rows):
    forget, heldout = led_rows
    fast = ps.ps_profile(tiny_model, tiny_tokenizer, template, forget, heldout, metrics=ps.ALL_METRICS)
    slow = ps.ps_profile(tiny_model, tiny_tokenizer, template, forget, heldout, metrics=ps.ALL_METRICS,
                         teacher_forced=False)
    assert set(fast) == set(slow) == {"heldout_retain", "forget"}
    for split in fast:
        assert ps.means(fast)[split] == pytest.approx(ps.means(slow)[split]), split
        for metric in ps.PS_METRICS:  # the per-item values behind each mean agree item by item
            values = ps.item_values(fast, split, metric)
            assert values == pytest.approx(ps.item_values(slow, split, metric)), (split, metric)
            assert values.mean() == pytest.approx(fast[split][metric])
    assert 0 < fast["forget"]["ps_exact"] < 1 and fast["forget"]["n_items"] == 5
    assert len(ps.item_values(fast, "forget", "ps_exact")) == 5 and ps.item_values(ps.means(fast), "forget", "ps_exact") is None
    only = ps.ps_profile(tiny_model, tiny_tokenizer, template, forget, heldout,
                         metrics={"heldout_retain": ("ps_similar",)})
    assert set(only) == {"heldout_retain"}
    assert only["heldout_retain"]["ps_similar"] == pytest.approx(slow["heldout_retain"]["ps_similar"])
    with pytest.raises(ValueError, match="unknown splits"):
        ps.ps_profile(tiny_model, tiny_tokenizer, template, forget, heldout, metrics={"retain": ("ps_exact",)})
    with pytest.raises(ValueError, match="unknown PS metrics"):
        ps.ps_profile(tiny_model, tiny_tokenizer, template, forget, heldout, metrics={"forget": ("ps_fuzzy",)})


def test_ps_evaluator_keeps_the_first_items_adds_risks_and_completes(tiny_model, tiny_tokenizer, template,
                                                                    led_rows):
    forget, heldout = led_rows
    evaluate = ps.PSEvaluator(tiny_tokenizer, template, forget, heldout, max_items=4, batch_size=3,
                              metrics={"forget": ("ps_exact",)})
    assert evaluate.forget_rows == forget[:4] and evaluate.heldout_rows == heldout[:4]
    profile = evaluate(tiny_model)
    assert profile == ps.ps_profile(tiny_model, tiny_tokenizer, template, forget[:4], heldout[:4],
                                    metrics={"forget": ("ps_exact",)})
    full = ps.ps_profile(tiny_model, tiny_tokenizer, template, forget[:4], heldout[:4])
    # complete computes what is missing or NaN, and keeps what is there
    holed = {"forget": {**profile["forget"], "ps_exact": 0.123, "ps_similar": float("nan")}}
    completed = evaluate.complete(tiny_model, holed)
    assert set(completed) == set(full)
    assert ps.means(completed)["heldout_retain"] == pytest.approx(ps.means(full)["heldout_retain"])
    assert ps.means(completed)["forget"] == pytest.approx({**ps.means(full)["forget"], "ps_exact": 0.123})
    assert evaluate.complete(tiny_model, full) is full  # nothing missing: nothing computed
    # plus_risks: the same PS with the mean answer NLL of each set (Wang et al.'s risks)
    with_risks = evaluate.plus_risks()
    risky = with_risks(tiny_model)
    assert not evaluate.with_risks and with_risks.forget_rows == forget[:4]
    nll = answer_nll(tiny_model, tiny_tokenizer, template, [r["question"] for r in heldout[:4]],
                     [r["answer"] for r in heldout[:4]], answer_tokens="separate")
    assert risky["heldout_retain"] == {"nll": pytest.approx(float(nll.mean()))}
    assert risky["forget"]["ps_exact"] == profile["forget"]["ps_exact"] and risky["forget"]["nll"] > 0
    assert ps.flatten(risky) == {"forget_ps_exact": profile["forget"]["ps_exact"], "forget_nll": risky["forget"]["nll"],
                                 "heldout_retain_nll": risky["heldout_retain"]["nll"]}  # item counts left out
    assert ps.merge_profiles({"forget": {"a": 1, "b": 2}}, {"forget": {"b": 3}, "heldout_retain": {"c": 4}}) == {
        "forget": {"a": 1, "b": 3}, "heldout_retain": {"c": 4}}
    # per-item values merge metric by metric, as the means do
    assert ps.merge_profiles({"forget": {"a": 1, "items": {"a": (1.0,)}}}, {"forget": {"b": 2, "items": {"b": (0.0,)}}}) == {
        "forget": {"a": 1, "b": 2, "items": {"a": (1.0,), "b": (0.0,)}}}
