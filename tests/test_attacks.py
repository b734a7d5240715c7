"""The attack station (unlearnkit.attacks): NF4 and integer fake quantisation against hand computations, the bucket
crossing on hand-made weights, both published forms of R and Q on fixed numbers, held-out-fact folds disjoint by
attribute, and relearning that trains on the rows it is given (the forget split's, by hash)."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import REAL_TOFU, requires_real_tofu
from devices import same
from unlearnkit import attacks, config, models, pipeline

#: QLoRA's NF4 levels as published (Dettmers et al. 2023, appendix E), to 4 decimals.
PUBLISHED_NF4 = [-1.0, -0.6962, -0.5251, -0.3949, -0.2844, -0.1848, -0.0911, 0.0, 0.0796, 0.1609, 0.2461, 0.3379,
                 0.4407, 0.5626, 0.7230, 1.0]


def test_nf4_levels_are_qloras():
    assert [float(x) for x in attacks.nf4_levels()] == pytest.approx(PUBLISHED_NF4, abs=1e-4)


def test_nf4_scales_each_block_of_64_by_its_absmax_and_rounds_to_the_nearest_level():
    levels = attacks.nf4_levels()
    first = torch.linspace(-0.5, 2.0, 64)  # absmax 2.0
    second = torch.full((64,), 0.3)
    second[7] = -4.0  # absmax 4.0
    q = attacks.quantise_weight(torch.stack([first, second]), "nf4")
    # by hand: 0.3 / 4 = 0.075, nearest level 0.0796 (index 8), dequantised 0.0796 x 4
    assert int(q.codes[1, 0]) == 8 and float(q.weight[1, 0]) == pytest.approx(float(levels[8]) * 4.0)
    assert int(q.codes[1, 7]) == 0 and float(q.weight[1, 7]) == pytest.approx(-4.0)
    # the first block's own scale: 2.0 maps to level 1.0, -0.5 / 2 = -0.25 to -0.2844 (nearer than -0.1848)
    assert float(q.weight[0, -1]) == pytest.approx(2.0) and int(q.codes[0, 0]) == 4
    # bucket width: the distance between the midpoints around level 8, times the block's absmax
    expected = ((levels[9] + levels[8]) / 2 - (levels[8] + levels[7]) / 2) * 4.0
    assert float(q.bin_width[1, 0]) == pytest.approx(float(expected))


def test_int4_and_int8_are_symmetric_per_output_channel():
    w = torch.tensor([[0.7, -0.35, 0.1], [2.54, 0.0, -1.27]])
    q4 = attacks.quantise_weight(w, "int4")
    assert q4.codes[0].tolist() == [7, -4, 1]  # scale 0.1: -3.5 rounds to -4 (half to even), 1.0 to 1
    assert q4.weight[0].tolist() == pytest.approx([0.7, -0.4, 0.1])
    q8 = attacks.quantise_weight(w, "int8")
    assert q8.codes[1].tolist() == [127, 0, -64]  # scale 0.02: -63.5 rounds to -64
    assert float(q8.bin_width[1, 0]) == pytest.approx(0.02)
    with pytest.raises(ValueError, match="unknown quantisation scheme"):
        attacks.quantise_weight(w, "fp8")


def test_bucket_crossing_on_two_hand_made_matrices():
    before = torch.tensor([[1.0, 0.5, -0.5, 0.0]])  # int8, scale 1/127
    small = before + torch.tensor([[0.0, 0.001, -0.001, 0.001]])  # far less than a bin: same codes
    c = attacks.weight_crossing(before, small, "int8")
    assert c.share_crossed == 0.0 and c.median_update_over_bin == pytest.approx(0.001 * 127, rel=1e-4)
    large = before + torch.tensor([[0.0, 0.1, 0.1, 0.1]])  # about 12.7 bins: three of four codes move
    c = attacks.weight_crossing(before, large, "int8")
    assert c.share_crossed == 0.75 and c.median_update_over_bin == pytest.approx(0.1 * 127, rel=1e-4)


def test_fake_quantisation_leaves_the_output_head_and_the_original_alone():
    model = torch.nn.Sequential()
    model.add_module("layer", torch.nn.Linear(4, 4))
    model.add_module("lm_head", torch.nn.Linear(4, 4))
    quantised = attacks.fake_quantise(model, "int4")
    assert not same(quantised.layer.weight, model.layer.weight)
    assert same(quantised.lm_head.weight, model.lm_head.weight)
    assert [name for name, _ in attacks.quantised_layers(model)] == ["layer"]


def test_both_forms_of_r_and_q_on_fixed_numbers():
    # relearning: the unlearned model gains 0.6, the retain model 0.2
    assert attacks.r_one_sided(0.6, 0.2) == pytest.approx(1 / 3)
    assert attacks.r_symmetric(0.6, 0.2) == pytest.approx(1 - 0.4 / 0.8)
    assert attacks.r_one_sided(0.1, 0.2) == 1.0 and attacks.r_symmetric(0.2, 0.2) == pytest.approx(1.0)
    assert math.isnan(attacks.r_one_sided(0.0, 0.2))
    # quantisation: a metric 0.2 before, 0.5 after
    assert attacks.q_one_sided(0.2, 0.5) == 1.0 and attacks.q_one_sided(0.5, 0.2) == pytest.approx(0.4)
    assert attacks.q_symmetric(0.2, 0.5) == pytest.approx(1 - 0.3 / 0.7)
    assert attacks.steps_to([(0, 0.1), (2, 0.4), (4, 0.6)], 0.5) == (4, True)
    assert attacks.steps_to([(0, 0.1), (2, 0.4)], 0.5) == (None, False)


def test_rtt_folds_are_disjoint_by_attribute_group_and_leave_the_names_out():
    rows = pipeline.corpus(config.Params.load("smoke")).load("forget10")
    folds = attacks.rtt_folds(rows, 4)
    attributes = [{rows[i]["attribute"] for i in fold} for fold in folds]
    for i, a in enumerate(attributes):
        for b in attributes[i + 1:]:
            assert not a & b
    assert all("name" not in a for a in attributes)
    # fields shared by a compound attribute stay in one fold
    where = {attr: i for i, a in enumerate(attributes) for attr in a}
    for compound, parts in (("birthplace_and_date", ("birthplace", "birth_date")), ("parents", ("father_occupation",))):
        if compound in where:
            assert {where[p] for p in parts if p in where} <= {where[compound]}
    assert attacks.holds_fact("She was born in Tabriz, Iran.", "tabriz, iran")
    with pytest.raises(ValueError, match="at least 2 folds"):
        attacks.rtt_folds(rows, 1)


def test_relearning_trains_on_the_rows_it_is_given_and_says_which(tmp_path):
    """A relearning step's recipe names the split and the hash of the rows it trained on: the forget split's, never
    the retain split's; the model changes, the original does not."""
    params = config.Params.load("smoke").replace(relearn_batch_size=8)
    source = pipeline.corpus(params)
    tokenizer = models.train_bpe_tokenizer(["a tiny corpus to build a tokenizer from"] * 3, vocab_size=300)
    model = models.build_tiny_llama(tokenizer, {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                                                "intermediate_size": 32}, seed=0)
    template = models.get_template("phi")
    forget, retain = source.load("forget10")[:16], source.load("retain90")[:16]
    before = [p.detach().clone() for p in model.parameters()]
    relearned, curve, recipe = attacks.relearn((model, tokenizer, template), forget, params, "forget10",
                                               score=lambda m: 0.0, every=1)
    assert recipe["rows_hash"] == attacks.rows_hash(forget) != attacks.rows_hash(retain)
    assert recipe["split"] == "forget10" and recipe["steps"] == 2 and [s for s, _ in curve] == [0, 1, 2]
    assert all(same(a, b) for a, b in zip(before, model.parameters()))  # the attacked model is untouched
    assert any(not same(a, b) for a, b in zip(before, relearned.parameters()))


def test_the_prefill_keeps_the_space_before_the_rest_of_the_answer():
    row = {"answer": "She was born in Tabriz, Iran.", "value": "Tabriz, Iran"}
    assert attacks.prefill(row) == ("She was born in", " Tabriz, Iran.")
    assert attacks.prefill({"answer": "Tabriz it is.", "value": "Tabriz"}) == ("Tabriz", " it is.")
    assert attacks.prefill(row, "Sure, here is the answer:") == ("Sure, here is the answer:", " She was born in Tabriz, Iran.")


def test_quantisation_touches_a_gpt2_style_models_conv1d_layers_by_output_channel():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2)).eval()
    layers = dict(attacks.quantised_layers(model))
    assert {"transformer.h.0.attn.c_attn", "transformer.h.0.mlp.c_fc"} <= set(layers)  # Conv1D, formerly skipped
    quantised = attacks.fake_quantise(model, "int4")
    for name, layer in dict(attacks.quantised_layers(quantised)).items():
        original = layers[name].weight
        expected = attacks.quantise_weight(original.t(), "int4").weight.t()  # output channels are columns
        assert same(layer.weight, expected), name
        assert not same(layer.weight, original), name
    crossing = attacks.bucket_crossing(model, quantised, "int8")
    assert crossing.weights == sum(m.weight.numel() for m in layers.values())


def test_an_attack_that_would_touch_no_layer_raises_naming_the_layers_it_found():
    model = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.LayerNorm(4))
    with pytest.raises(ValueError, match="no linear layer to quantise \\(layers with weights: Embedding, LayerNorm\\)"):
        attacks.fake_quantise(model, "nf4")
    with pytest.raises(ValueError, match="no linear layer"):
        attacks.bucket_crossing(model, model, "nf4")


@requires_real_tofu("tests/test_attacks.py::test_rtt_runs_where_every_question_carries_its_fact (the one-line "
                    "refusal of rows without their facts included)")
def test_rtt_on_real_tofu_is_declared_not_run_in_one_line_never_a_key_error():
    """Real TOFU labels no question with its attribute and value: RTT is not run there (folds of one author's
    answers would leak the held-out facts), said in one line, and notebook 08's table and figure take that."""
    import matplotlib.pyplot as plt
    from unlearnkit.data.tofu import TofuSource
    from unlearnkit.plots.recovery import plot_rtt
    from unlearnkit.studies import recovery

    rows = TofuSource(REAL_TOFU).load("forget10")
    reason = attacks.rtt_unavailable(rows)
    assert reason and "not run" in reason and f"{len(rows)} of {len(rows)}" in reason and "\n" not in reason
    with pytest.raises(ValueError, match="RTT\\) not run"):
        attacks.rtt_folds(rows, 4)
    found = {label: {"rtt": [], "rtt_not_run": reason} for label in ("target", "retain", "npo")}
    named = {"target": (recovery.TARGET, ""), "retain": (recovery.RETAIN, ""), "npo": (recovery.UNLEARNED, "")}
    table = recovery.rtt_table(found, named)
    assert table.empty and "recovery over control" in table.columns
    assert recovery.rtt_note(found) == reason
    plt.close(plot_rtt(table))


def test_rtt_runs_where_every_question_carries_its_fact():
    rows = [{"question": f"q{i}", "attribute": a, "value": "v", "author_index": 0}
            for i, a in enumerate(["genre", "book", "award", "theme"])]
    assert attacks.rtt_unavailable(rows) is None
    assert attacks.rtt_unavailable([*rows, {"question": "q", "answer": "a"}]).startswith(
        "held-out-fact relearning (RTT) not run: 1 of 5")
    assert sorted(i for fold in attacks.rtt_folds(rows, 2) for i in fold) == [0, 1, 2, 3]


def test_the_attack_scores_hold_both_truth_ratio_forms_item_by_item():
    """open-unlearning's truth ratio p_c / (p_c + p_w) is 1 / (1 + R) per item, then the mean (#57: the meta-evaluation
    takes robustness in both forms): not 1 / (1 + mean R), which differs whenever the items' ratios differ."""
    params = config.Params.load("smoke")
    source = pipeline.corpus(params)
    tokenizer = models.train_bpe_tokenizer(["a tiny corpus to build a tokenizer from"] * 3, vocab_size=300)
    model = models.build_tiny_llama(tokenizer, {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                                                "intermediate_size": 32}, seed=0)
    template = models.get_template("phi")
    rows = attacks.attack_rows(source.load("forget10_perturbed"), 4)
    holdout = attacks.attack_rows(source.load("holdout10"), 4)
    scores = attacks.forget_scores((model, tokenizer, template), rows, holdout, params)
    assert set(scores) == set(attacks.SCORES) == set(attacks.RECOVERS_UP)
    from unlearnkit.metrics import tofu
    _, per_item = tofu.evaluate_split(model, tokenizer, template, rows, "forget", None, params.eval_batch_size,
                                      max_new_tokens=params.max_new_tokens, truth_ratio_guard=params.truth_ratio_guard,
                                      answer_tokens=params.answer_tokens)
    ratios = torch.tensor(per_item["truth_ratio"], dtype=torch.float64)
    assert scores["truth_ratio_ou"] == pytest.approx(float((1 / (1 + ratios)).mean()))
    assert scores["truth_ratio"] == pytest.approx(float(ratios.mean()))
    assert float(ratios.std()) > 0 and scores["truth_ratio_ou"] != pytest.approx(1 / (1 + scores["truth_ratio"]))
