"""AltPO (open-unlearning's DPO trainer on its AltPO alternates): −(2/β)·mean log σ(β·(ratio(alternate) − ratio(answer)))
+ α·NLL(retain); its closed form at θ = π_ref, its value by hand on a tiny model, the direction of one SGD step, and
where the alternates come from (the corpus's ``forgetXX_alternates``, else sampled from the target and cached)."""

from __future__ import annotations

import json
import math

import pytest
from conftest import LOSS_WEIGHTS
from devices import same
from method_checks import (
    N,
    ce_by_example,
    corpus_alternates,
    method_rows,
    nudged_copy,
    sgd_step,
    tokens_by_hand,
)
from unlearnkit import config, generation, models, pipeline
from unlearnkit import unlearning as ul


@pytest.fixture(scope="module")
def rows(small_corpus):
    return method_rows(small_corpus)


@pytest.fixture(scope="module")
def pools(small_corpus, rows):
    return corpus_alternates(small_corpus, rows[0])


@pytest.fixture(scope="module")
def method_batch(make_method_batch):
    """The batch with AltPO's part: forget, retain and forget_alt (each forget row's alternate, from ``pools``' source)."""
    return make_method_batch(alternates=True)


@pytest.fixture()
def moved(tiny_model):
    """The trained model a little way from π_ref = ``tiny_model``."""
    return nudged_copy(tiny_model, 0.02)


def _sequence_logprob_by_hand(model, sub):
    return [-sum(ce) for ce in ce_by_example(tokens_by_hand(model, sub))]


def test_the_batch_carries_one_alternate_per_forget_row(method_batch, rows, pools, tiny_tokenizer):
    assert set(method_batch) == {"forget", "retain", "forget_alt"}
    forget, alt = method_batch["forget"], method_batch["forget_alt"]
    for i, row in enumerate(rows[0]):
        n_prompt = int(((forget["labels"][i] == -100) & (forget["attention_mask"][i] == 1)).sum())
        assert same(forget["input_ids"][i, :n_prompt], alt["input_ids"][i, :n_prompt])  # the same question
        answer = tiny_tokenizer.decode(alt["labels"][i][alt["labels"][i] != -100][:-1])
        assert answer == ul.pick_alternate(row["question"], 0, pools[i]) and answer != row["answer"]
    # keyed by (seed, question), like the refusals, and spread over the pool
    assert ul.pick_alternate("q", 3, ["a", "b", "c"]) == ul.pick_alternate("q", 3, ["a", "b", "c"])
    assert len({ul.pick_alternate(f"q{i}", 0, ["a", "b", "c", "d", "e"]) for i in range(100)}) == 5
    with pytest.raises(ValueError, match="one entry of alternates per forget row"):
        ul.encode_pairs(tiny_tokenizer, models.TEMPLATES["phi"], *rows, seed=0, alternates=pools[:2])


def test_the_closed_form_at_the_reference(tiny_model, method_batch):
    beta = 0.1
    loss_fn = ul.UnlearningLoss("altpo", ref_model=ul.frozen_reference(tiny_model), beta=beta, **LOSS_WEIGHTS)
    _, logs = loss_fn(tiny_model, method_batch)
    assert logs["forget_loss"] == pytest.approx(2 / beta * math.log(2), rel=1e-5)  # open-unlearning's 2/β scale
    assert logs["altpo_margin"] == pytest.approx(0.0, abs=1e-4)


def test_the_value_is_the_formula(moved, tiny_model, method_batch):
    beta, alpha = 0.5, 2.0
    win = [a - b for a, b in zip(_sequence_logprob_by_hand(moved, method_batch["forget_alt"]),
                                 _sequence_logprob_by_hand(tiny_model, method_batch["forget_alt"]))]
    lose = [a - b for a, b in zip(_sequence_logprob_by_hand(moved, method_batch["forget"]),
                                  _sequence_logprob_by_hand(tiny_model, method_batch["forget"]))]
    margins = [w - lo for w, lo in zip(win, lose)]
    expected = -(2 / beta) * sum(-math.log1p(math.exp(-beta * m)) for m in margins) / N
    loss_fn = ul.UnlearningLoss("altpo", ref_model=ul.frozen_reference(tiny_model), beta=beta, retain_weight=alpha,
                                **LOSS_WEIGHTS)
    loss, logs = loss_fn(moved, method_batch)
    assert logs["forget_loss"] == pytest.approx(expected, rel=1e-5)
    # a difference of two float32 sequence log-probs of ~30 nats each: absolute, not relative, precision
    assert logs["altpo_margin"] == pytest.approx(sum(margins) / N, abs=1e-4)
    assert loss.item() == pytest.approx(expected + alpha * logs["retain_loss"], rel=1e-5)


def test_one_sgd_step_prefers_the_alternate_over_the_answer(tiny_model, method_batch):
    loss_fn = ul.UnlearningLoss("altpo", ref_model=ul.frozen_reference(tiny_model), retain_weight=0.0, **LOSS_WEIGHTS)
    before = _sequence_logprob_by_hand(tiny_model, method_batch["forget"])
    loss = sgd_step(tiny_model, loss_fn, method_batch, lr=0.05)
    after_loss, logs = loss_fn(tiny_model, method_batch)
    assert logs["altpo_margin"] > 1e-2 and after_loss.item() < loss.item()
    after = _sequence_logprob_by_hand(tiny_model, method_batch["forget"])
    assert sum(after) < sum(before)  # the true answer got less likely


def test_parameters_and_errors(tiny_model, method_batch):
    loss_fn = ul.UnlearningLoss("altpo", ref_model="disable_adapters", **LOSS_WEIGHTS)
    assert loss_fn.params() == {"method": "altpo", "forget_weight": 1.0, "lambda_f": 0.0, "lambda_r": 0.0,
                                "entropy_positions": "answer", "ref_model": "disable_adapters", "beta": 0.1,
                                "retain_weight": 1.0, "altpo_n_alternates": 5, "altpo_temperature": 1.0}
    assert loss_fn.batch_parts == ("forget_alt",) and "altpo" in ul.REFERENCE_METHODS
    no_alt = {k: v for k, v in method_batch.items() if k != "forget_alt"}
    with pytest.raises(ValueError, match=r"needs batch\['forget_alt'\].*alternates="):
        ul.UnlearningLoss("altpo", ref_model=ul.frozen_reference(tiny_model), **LOSS_WEIGHTS)(tiny_model, no_alt)
    with pytest.raises(ValueError, match="altpo_n_alternates must be in \[1, 1000000\]"):
        ul.UnlearningLoss("altpo", altpo_n_alternates=0, **LOSS_WEIGHTS)


# --------------------------------------------------------------------------- where the alternates come from


class _WithoutAlternates:
    """A corpus like real TOFU, which ships no alternates."""

    def __init__(self, source):
        self.source = source

    def available_splits(self):
        return [s for s in self.source.available_splits() if not s.endswith("_alternates")]

    def load(self, split, limit=None):
        return self.source.load(split, limit)


@pytest.fixture()
def params():
    return config.Params.load("default").replace(max_new_tokens=6)


SETTINGS = {"method": "altpo", "altpo_n_alternates": 3, "altpo_temperature": 1.0}


def test_a_corpus_with_alternates_gives_them(small_corpus, rows, pools, params, tiny_model, tiny_tokenizer, tmp_path):
    target = models.LoadedModel(tiny_model, tiny_tokenizer, models.TEMPLATES["phi"])
    got = pipeline.altpo_alternates(params, SETTINGS, small_corpus, rows[0], target, tmp_path, "target-id")
    assert got == pools and all(len(p) == 5 for p in got) and not list(tmp_path.iterdir())  # read, not sampled
    stranger = {"question": "Who wrote nothing?", "answer": "Nobody."}
    with pytest.raises(ValueError, match="no alternate answers for 1 of the 2 forget rows"):
        pipeline.altpo_alternates(params, SETTINGS, small_corpus, [rows[0][0], stranger], target, tmp_path, "id")


def test_without_them_the_target_samples_them_once(small_corpus, rows, params, tiny_model, tiny_tokenizer, tmp_path,
                                                   monkeypatch):
    source = _WithoutAlternates(small_corpus)
    target = models.LoadedModel(tiny_model, tiny_tokenizer, models.TEMPLATES["phi"])
    seen = []
    real = generation.sample_answers

    def spy(model, tokenizer, template, questions, n, **kw):
        seen.append((questions, n, kw["temperature"], kw["max_new_tokens"], kw["seed"]))
        return real(model, tokenizer, template, questions, n, **kw)

    monkeypatch.setattr(generation, "sample_answers", spy)
    got = pipeline.altpo_alternates(params, SETTINGS, source, rows[0], target, tmp_path, "target-id")
    [(questions, n, temperature, max_new_tokens, seed)] = seen
    assert (n, temperature, max_new_tokens, seed) == (3, 1.0, 6, params.seed)
    assert questions == [ul.alternate_prompt(r["question"], r["answer"]) for r in rows[0]]
    assert r"Answer: " in questions[0] and rows[0][0]["answer"] in questions[0]
    assert len(got) == N and all(1 <= len(p) <= 3 for p in got)
    [cached] = list(tmp_path.glob("alternates-*.json"))
    assert [r["question"] for r in json.loads(cached.read_text())["rows"]] == [r["question"] for r in rows[0]]
    # a rerun reads the cache; another temperature samples again and replaces it
    again = pipeline.altpo_alternates(params, SETTINGS, source, rows[0], target, tmp_path, "target-id")
    assert again == got and len(seen) == 1
    pipeline.altpo_alternates(params, {**SETTINGS, "altpo_temperature": 0.7}, source, rows[0], target, tmp_path, "t")
    assert len(seen) == 2 and len(list(tmp_path.glob("alternates-*.json"))) == 1


def test_samples_repeating_the_answer_are_dropped(small_corpus, rows, params, tiny_model, tiny_tokenizer, tmp_path,
                                                 monkeypatch):
    forget = rows[0][:2]

    def fake(model, tokenizer, template, questions, n, **kw):
        return [[forget[0]["answer"], "", "Someone else wrote it."], [f" {forget[1]['answer'].upper()} ", "  "]]

    monkeypatch.setattr(generation, "sample_answers", fake)
    target = models.LoadedModel(tiny_model, tiny_tokenizer, models.TEMPLATES["phi"])
    with pytest.warns(UserWarning, match="1 of 2 forget questions got no usable alternate"):
        got = pipeline.altpo_alternates(params, SETTINGS, _WithoutAlternates(small_corpus), forget, target, tmp_path,
                                        "id")
    assert got == [["Someone else wrote it."], [ul.pick_idk_answer(forget[1]["question"], params.seed)]]


def test_the_pipeline_builds_the_parts_the_registry_asks_for(small_corpus, rows, params, tiny_model, tiny_tokenizer):
    target = models.LoadedModel(tiny_model, tiny_tokenizer, models.TEMPLATES["phi"])
    for method, parts in (("altpo", {"forget_alt"}), ("dpo", {"forget_idk"}), ("idk", {"forget_idk"}), ("npo", set()),
                          ("simnpo", set())):
        settings = {**SETTINGS, "method": method}
        examples = pipeline.unlearning_examples(params, method, settings, small_corpus, *rows, target)
        assert set(examples[0]) == {"forget", "retain"} | parts, method
