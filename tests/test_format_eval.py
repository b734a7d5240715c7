"""Notebook 04 (format-transformed evaluation): the option-likelihood readout, the finding's definitions,
model selection and caching in :mod:`unlearnkit.format_eval`, and ``check_04(smoke_runs)``, which
tests/test_notebooks.py calls on the folder of its module-scoped smoke runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch
from unlearnkit import format_eval, models, paths
from unlearnkit.data import formats as fmts

matplotlib.use("Agg")

LIKELIHOOD = tuple(f + format_eval.LIKELIHOOD_SUFFIX for f in fmts.MCQA_STYLE_FORMATS)


# =============================================================================================
# Option likelihood.
# =============================================================================================


@pytest.fixture(scope="module")
def small_items(small_corpus):
    return fmts.build_all_formats(small_corpus, max_items_per_set=4, max_context_facts=2)


def test_option_sequences_put_each_option_where_the_answer_had_it(small_items, tiny_tokenizer, template):
    item = small_items["mcqa"]["forget"][1]
    sequences = format_eval._option_sequences(item, "mcqa", tiny_tokenizer, template)
    assert len(sequences) == len(item["options"]) and len({tuple(p) for p, _ in sequences}) == 1
    prompt, option = sequences[item["answer_index"]]
    text = tiny_tokenizer.decode(prompt + option, skip_special_tokens=True)
    # the Q&A template, then the answer up to and including its value (what fine-tuning taught)
    answer = " ".join(item["answer"].split())
    upto_value = answer[:answer.rfind(item["correct_option"]) + len(item["correct_option"])]
    assert " ".join(text.split()) == " ".join((template.prompt(item["question"]) + upto_value).split())

    analogy = small_items["analogy"]["forget"][0]
    prompt, option = format_eval._option_sequences(analogy, "analogy", tiny_tokenizer, template)[0]
    decoded = tiny_tokenizer.decode(prompt, skip_special_tokens=True)
    assert decoded.endswith(f"{analogy['author']} :") and "?" not in decoded
    odd = small_items["odd_one_out"]["forget"][0]
    prompt, option = format_eval._option_sequences(odd, "odd_one_out", tiny_tokenizer, template)[2]
    assert tiny_tokenizer.decode(option, skip_special_tokens=True) == odd["options"][2]


def test_the_prediction_is_the_likeliest_option_and_for_odd_one_out_the_outlier():
    assert format_eval._pick("mcqa", np.array([-3.0, -0.5, -2.0, -1.0])) == 1
    # three familiar statements and one unfamiliar (or the reverse): the outlier either way
    assert format_eval._pick("odd_one_out", np.array([-1.0, -1.1, -4.0, -0.9])) == 2
    assert format_eval._pick("odd_one_out", np.array([-4.0, -4.1, -0.5, -3.9])) == 2


def test_score_option_likelihood_matches_log_probabilities_by_hand(small_items, tiny_model, tiny_tokenizer, template):
    items = small_items["mcqa"]["forget"][:2]
    result = format_eval.score_option_likelihood(tiny_model, tiny_tokenizer, template, "mcqa", items, batch_size=3)
    assert len(result["correct"]) == 2 and result["accuracy"] in (0.0, 0.5, 1.0)
    prompt, option = format_eval._option_sequences(items[0], "mcqa", tiny_tokenizer, template)[0]
    with torch.no_grad():
        logp = torch.log_softmax(tiny_model(torch.tensor([prompt + option])).logits[0], -1)
    by_hand = torch.stack([logp[len(prompt) - 1 + k, t] for k, t in enumerate(option)]).mean().item()
    assert result["option_log_probs"][0][0] == pytest.approx(by_hand, abs=1e-4)
    expected_letter = items[0]["letters"][int(np.argmax(result["option_log_probs"][0]))]
    assert result["predicted_letter"][0] == expected_letter
    with pytest.raises(ValueError, match="MCQA-style"):
        format_eval.score_option_likelihood(tiny_model, tiny_tokenizer, template, "cloze", items)
    assert math.isnan(format_eval.score_option_likelihood(tiny_model, tiny_tokenizer, template, "mcqa", [])["accuracy"])


# =============================================================================================
# Tables and the finding, on hand-made scores.
# =============================================================================================


def _scores(**forget_by_model):
    """{model: {"forget": {...}, "retain": {...}}} with retain scores equal to 0.9 unless given."""
    out = {}
    for model, forget in forget_by_model.items():
        retain = forget.pop("retain", {})
        out[model] = {"forget": forget, "retain": {fmt: retain.get(fmt, 0.9) for fmt in forget}}
    return out


CHANCE = {"mcqa": 0.25, "mcqa_likelihood": 0.25, "odd_one_out_likelihood": 0.25, "cloze": None,
          "comprehension_qa": None}
QA = {"target": {"forget": 0.95, "retain": 0.95}, "retain90": {"forget": 0.35, "retain": 0.95},
      "suppressed": {"forget": 0.30, "retain": 0.9}, "gone": {"forget": 0.33, "retain": 0.9},
      "untouched": {"forget": 0.9, "retain": 0.9}}


@pytest.fixture()
def scores():
    return _scores(
        target={"mcqa": 0.24, "mcqa_likelihood": 1.0, "cloze": 0.95, "odd_one_out_likelihood": 0.28,
                "comprehension_qa": 0.5},
        retain90={"mcqa": 0.26, "mcqa_likelihood": 0.2, "cloze": 0.2, "odd_one_out_likelihood": 0.55,
                  "comprehension_qa": 0.5, "retain": {"comprehension_qa": 0.55}},
        # forgotten in Q&A, but the cloze and the familiarity of the facts remain
        suppressed={"mcqa": 0.25, "mcqa_likelihood": 0.3, "cloze": 0.8, "odd_one_out_likelihood": 0.3,
                    "comprehension_qa": 0.1, "retain": {"comprehension_qa": 0.55}},
        # forgotten everywhere: within the margin of the retain model (mcqa_likelihood 0.34 is not above
        # chance + margin, although more than the margin above the retain model's 0.2)
        gone={"mcqa": 0.25, "mcqa_likelihood": 0.34, "cloze": 0.25, "odd_one_out_likelihood": 0.5,
              "comprehension_qa": 0.5},
        untouched={"mcqa": 0.25, "mcqa_likelihood": 1.0, "cloze": 0.9, "odd_one_out_likelihood": 0.3,
                   "comprehension_qa": 0.5},
    )


def test_informative_formats_separate_target_from_retain_model(scores):
    # mcqa (letters) is at chance for both; comprehension and odd-one-out are never knowledge formats
    assert format_eval.informative_formats(scores, CHANCE, 0.1) == ["mcqa_likelihood", "cloze"]
    # the retain model tells forget from retain facts apart in odd-one-out, the target does not
    assert format_eval.separating_formats(scores, CHANCE, 0.1) == ["odd_one_out_likelihood"]
    assert format_eval.separating_formats(scores, {**CHANCE, "odd_one_out_likelihood": 0.5}, 0.1) == []


def test_findings_state_the_paper_finding_with_numbers(scores):
    findings = {f["model"]: f for f in format_eval.forgetting_findings(
        scores, QA, CHANCE, 0.1, ["suppressed", "gone", "untouched"], retain_model="retain90")}
    suppressed = findings["suppressed"]
    assert suppressed["qa_forgets"] is True and suppressed["qa_threshold"] == pytest.approx(0.65)
    assert [k["format"] for k in suppressed["kept"]] == ["cloze"]
    assert suppressed["kept"][0]["kept_share"] == pytest.approx((0.8 - 0.2) / (0.95 - 0.2))
    assert suppressed["paper_finding"] is True
    assert "Q&A suggests forgetting" in suppressed["statement"] and "cloze 0.80 vs retain model 0.20" in \
        suppressed["statement"] and "the paper's finding" in suppressed["statement"]
    assert [s["format"] for s in suppressed["suppression"]] == ["comprehension_qa"]
    # odd-one-out at chance: the forget facts are as familiar as the retain ones, which is no proof of knowledge
    # (a model that lost both is at chance too), so it is reported beside the finding, not in it
    assert [(s["format"], s["separates"]) for s in suppressed["separation"]] == [("odd_one_out_likelihood", False)]
    assert "does not tell forget from retain facts apart" in suppressed["statement"]

    gone = findings["gone"]
    assert gone["qa_forgets"] is True and gone["kept"] == [] and gone["paper_finding"] is False
    assert "consistent with forgetting" in gone["statement"]
    assert gone["separation"][0]["separates"] and "tells forget from retain facts apart" in gone["statement"]

    untouched = findings["untouched"]
    assert untouched["qa_forgets"] is False and not untouched["paper_finding"]
    assert "not unlearned in Q&A" in untouched["statement"]


def test_formats_with_too_few_forget_items_are_never_evidence(scores):
    n_items = {"mcqa": {"forget": 100, "retain": 100}, "cloze": {"forget": 8, "retain": 40},
               "odd_one_out": {"forget": 100, "retain": 100}, "comprehension_qa": {"forget": 100, "retain": 100}}
    # cloze_fill and the likelihood readouts share their format's items
    assert format_eval.item_format("cloze_fill") == "cloze"
    assert format_eval.item_format("odd_one_out_likelihood") == "odd_one_out"
    assert format_eval.too_few_items(scores, n_items, 30) == ["cloze"]
    assert format_eval.informative_formats(scores, CHANCE, 0.1, n_items=n_items, min_items=30) == ["mcqa_likelihood"]
    suppressed = format_eval.forgetting_findings(scores, QA, CHANCE, 0.1, ["suppressed"], retain_model="retain90",
                                                 n_items=n_items, min_items=30)[0]
    # the cloze lead alone made the paper's finding; on 8 items it does not count
    assert suppressed["kept"] == [] and suppressed["paper_finding"] is False
    assert format_eval.informative_formats(scores, CHANCE, 0.1, n_items=n_items, min_items=5) == \
        ["mcqa_likelihood", "cloze"]
    few_odd = {**n_items, "odd_one_out": {"forget": 3, "retain": 3}}
    assert format_eval.separating_formats(scores, CHANCE, 0.1, n_items=few_odd, min_items=30) == []


def test_findings_say_when_qa_cannot_tell(scores):
    qa = {**QA, "retain90": {"forget": 0.9, "retain": 0.9}}
    finding = format_eval.forgetting_findings(scores, qa, CHANCE, 0.1, ["suppressed"], retain_model="retain90")[0]
    assert finding["qa_forgets"] is None and not finding["paper_finding"]
    assert "Q&A cannot tell" in finding["statement"] and "undetermined" in finding["statement"]
    with pytest.raises(ValueError, match="retain11"):
        format_eval.forgetting_findings(scores, QA, CHANCE, 0.1, ["gone"], retain_model="retain11")


def test_tables_and_figures(scores, small_items):
    assert format_eval.metrics_payload({"mcqa": {"forget": 0.5, "retain": 1}}) == \
        {"forget": {"mcqa": 0.5}, "retain": {"mcqa": 1.0}}
    chance = format_eval.chance_levels(small_items)
    assert chance["mcqa"] == chance["odd_one_out_likelihood"] == 0.25 and chance["cloze_fill"] is None
    assert set(format_eval.chance_levels(small_items, likelihood=False)) == set(fmts.FORMATS) | {"cloze_fill"}
    assert format_eval.format_order(scores) == ["mcqa", "mcqa_likelihood", "cloze", "odd_one_out_likelihood",
                                                "comprehension_qa"]
    table = format_eval.scores_table(scores, QA)
    assert list(table.columns) == list(scores) and table.shape == (2 * 6, 5)
    assert table.loc[("qa_rouge (TOFU)", "forget"), "gone"] == 0.33
    fig = format_eval.plot_format_scores(scores, CHANCE, retain_model="retain90", ncols=3)
    assert sum(ax.axison for ax in fig.axes) == 5
    fig = format_eval.plot_kept_share(scores, QA, ["cloze"], ["target", "suppressed"], retain_model="retain90")
    assert fig.axes[0].images[0].get_array().shape == (2, 2)
    # Q&A that cannot tell the target from the retain model gets no colour, only its numbers
    flat_qa = {**QA, "retain90": QA["target"]}
    fig = format_eval.plot_kept_share(scores, flat_qa, ["cloze"], ["target", "suppressed"], retain_model="retain90")
    shown = fig.axes[0].images[0].get_array()
    assert np.ma.getmaskarray(shown)[:, 0].all() and not np.ma.getmaskarray(shown)[:, 1].any()


def test_small_cpu_models_are_scored_on_one_thread(tiny_model):
    before = torch.get_num_threads()
    with format_eval._scoring_threads(tiny_model):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def _row(source_row, correct, fmt="mcqa"):
    return {"id": f"{fmt}/forget/{source_row}", "set": "forget", "source_row": source_row, "author_index": 0,
            "question": f"q{source_row}", "score": float(bool(correct)), "correct": correct, "prediction": "A"}


def test_disagreements_join_formats_fact_by_fact():
    per_item = {"m": {"mcqa_likelihood": {"forget": [_row(0, True), _row(1, True), _row(2, False)]},
                      "cloze": {"forget": [_row(0, False), _row(1, True), _row(2, False)]}}}
    # cloze_fill names the cloze rows (their correctness is the greedy fill's)
    rates = format_eval.disagreement_rates(per_item, ["mcqa_likelihood", "cloze_fill"])
    assert rates["m"] == pytest.approx(1 / 3)
    examples = format_eval.disagreement_examples(per_item["m"], ["mcqa_likelihood", "cloze_fill"])
    assert list(examples.index) == [0] and bool(examples.loc[0, "mcqa_likelihood"]) and not examples.loc[0, "cloze"]


# =============================================================================================
# Model selection and the per-model cache, in a temporary runs/ folder.
# =============================================================================================


@pytest.fixture()
def tmp_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    return tmp_path


def _save(model, tokenizer, template, runs: Path, name: str) -> Path:
    folder = runs / "p" / "models" / name
    models.save_model(model, tokenizer, folder, template, extra={"params_hash": name})
    return folder


def test_select_models_finds_base_target_retain_and_unlearning_runs(tmp_runs, tiny_model, tiny_tokenizer, template,
                                                                    capsys):
    params = {"forget_split": "forget10", "model": "tiny"}
    with pytest.raises(FileNotFoundError, match="run notebooks 01 and 02"):
        format_eval.select_models("p", params)
    for name in ("target", "retain90", "unlearned-npo"):
        _save(tiny_model, tiny_tokenizer, template, tmp_runs, name)
    for run in ("npo", "ga"):  # ga has metrics but no saved model
        (tmp_runs / "p" / f"02_unlearning_{run}").mkdir(parents=True)
        (tmp_runs / "p" / f"02_unlearning_{run}" / "metrics.json").write_text(json.dumps({run: {}, "meta": {}}))
    named = format_eval.select_models("p", params)
    assert list(named) == ["target", "retain90", "npo"]
    assert Path(named["npo"]).name == "unlearned-npo"
    assert "left out (not saved): base, ga" in capsys.readouterr().out
    assert list(format_eval.select_models("p", params, ["npo", "target"])) == ["npo", "target"]
    with pytest.raises(FileNotFoundError, match="'kl'"):
        format_eval.select_models("p", params, ["kl"])


def test_evaluate_model_is_cached_by_weights_and_items(tmp_runs, tiny_model, tiny_tokenizer, template, small_items,
                                                       monkeypatch):
    folder = _save(tiny_model, tiny_tokenizer, template, tmp_runs, "target")
    # two formats without generation keep it fast; every format runs in the notebook's smoke test
    items = {fmt: {s: small_items[fmt][s][:2] for s in ("forget", "retain")} for fmt in ("mcqa", "odd_one_out")}
    params = {"format_likelihood": True, "max_new_tokens": 4, "eval_batch_size": 8}
    scores, per_item = format_eval.evaluate_model("target", str(folder), items, params, "p")
    assert set(scores) == {"mcqa", "odd_one_out", "mcqa_likelihood", "odd_one_out_likelihood"}
    assert len(per_item["mcqa_likelihood"]["retain"]) == 2

    def must_not_run(*args, **kwargs):
        raise AssertionError("evaluated again although nothing changed")

    monkeypatch.setattr(format_eval, "_evaluate_loaded", must_not_run)
    again, _ = format_eval.evaluate_model("target", str(folder), items, params, "p")
    assert json.dumps(again, sort_keys=True) == json.dumps(scores, sort_keys=True)
    fewer = {fmt: {s: sets[s][:1] for s in sets} for fmt, sets in items.items()}
    with pytest.raises(AssertionError, match="evaluated again"):
        format_eval.evaluate_model("target", str(folder), fewer, params, "p")
    monkeypatch.undo()
    format_eval.evaluate_model("target", str(folder), fewer, params, "p")
    assert len(list((tmp_runs / "p" / "04_format_eval" / "cache").glob("target-*.json"))) == 1  # the old one went
