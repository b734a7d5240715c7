"""Joshi et al.'s format-transformed evaluation as notebook 04 runs it (:mod:`unlearnkit.studies.formats` and
its figures): the records' definitions on hand-made scores, the tables, the disagreements, which models are
evaluated and the per-model cache in a temporary run store, and the thread policy the scoring runs under."""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib
import numbers_only
import numpy as np
import pytest
import torch
from conftest import REAL_TOFU, requires_real_tofu
from scipy import stats as scipy_stats
from unlearnkit import config, models, paths, runs
from unlearnkit.data import facts
from unlearnkit.data import formats as fmts
from unlearnkit.data.tofu import TofuSource
from unlearnkit.metrics import formats as scoring
from unlearnkit.plots import formats as format_plots
from unlearnkit.studies import formats as study

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def small_items(small_corpus):
    return fmts.build_all_formats(small_corpus, "forget10", 4, 0, max_items_per_set=4, max_context_facts=2)


# =============================================================================================
# Tables and the records, on hand-made scores.
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
    assert study.informative_formats(scores, CHANCE, 0.1) == ["mcqa_likelihood", "cloze"]
    # the retain model tells forget from retain facts apart in odd-one-out, the target does not
    assert study.separating_formats(scores, CHANCE, 0.1) == ["odd_one_out_likelihood"]
    assert study.separating_formats(scores, {**CHANCE, "odd_one_out_likelihood": 0.5}, 0.1) == []


def test_model_records_hold_the_numbers_of_each_model(scores):
    findings = {f["model"]: f for f in study.model_records(
        scores, QA, CHANCE, 0.1, ["suppressed", "gone", "untouched"], retain_model="retain90")}
    suppressed = findings["suppressed"]
    assert suppressed["qa_forgets"] is True and suppressed["qa_threshold"] == pytest.approx(0.65)
    assert [k["format"] for k in suppressed["kept"]] == ["cloze"]
    assert suppressed["kept"][0]["kept_share"] == pytest.approx((0.8 - 0.2) / (0.95 - 0.2))
    assert suppressed["kept"][0]["score"] == pytest.approx(0.8) and suppressed["kept"][0]["retain_model"] == 0.2
    assert [s["format"] for s in suppressed["suppression"]] == ["comprehension_qa"]
    # odd-one-out at chance: the forget facts are as familiar as the retain ones, which is no proof of knowledge
    # (a model that lost both is at chance too), so it is reported beside the kept formats, not among them
    assert [(s["format"], s["separates"]) for s in suppressed["separation"]] == [("odd_one_out_likelihood", False)]

    gone = findings["gone"]
    assert gone["qa_forgets"] is True and gone["kept"] == []
    assert gone["separation"][0]["separates"]

    untouched = findings["untouched"]
    assert untouched["qa_forgets"] is False
    # numbers and the formats they name, no reading of them in words or as a label
    assert not {"statement", "qa_reason", "paper_finding"} & {k for f in findings.values() for k in f}


def test_format_records_gather_what_the_notebook_shows_and_stores(scores):
    named = {"base": "b", "target": "t", "retain90": "r", "suppressed": "s", "gone": "g", "untouched": "u"}
    unlearned = study.unlearned_models(named, "retain90")
    assert unlearned == ["suppressed", "gone", "untouched"]
    n_items = {"cloze": {"forget": 8, "retain": 8}}
    records = study.format_records(scores, QA, CHANCE, n_items, unlearned, "retain90", 0.1, 5)
    assert records.informative == ["mcqa_likelihood", "cloze"] and records.too_few == []
    assert records.per_model == study.model_records(scores, QA, CHANCE, 0.1, unlearned, "target", "retain90",
                                                    n_items, 5)
    table = study.per_model_table(records.per_model)
    assert list(table.index) == unlearned and table.loc["suppressed", "formats_keeping_forget"] == "cloze"
    assert table.loc["gone", "formats_keeping_forget"] == "-" and "paper_finding" not in table
    # the disagreements are shown for the first model that Q&A says forgot while a format keeps forget performance
    assert study.example_model(records.per_model, unlearned) == "suppressed"
    assert study.example_model([], ["gone"]) == "gone" and study.example_model([], []) == "target"
    strict = study.format_records(scores, QA, CHANCE, n_items, unlearned, "retain90", 0.1, 30)
    assert strict.too_few == ["cloze"]
    meta = study.results_meta(named, "retain90", CHANCE, n_items, records, QA)
    assert list(meta) == ["models", "retain_model", "chance", "n_items", "informative_formats", "too_few_items",
                          "qa_rouge", "per_model"]
    assert meta["per_model"] == records.per_model and meta["informative_formats"] == records.informative
    # the stored records keep their keys in the order they always had
    assert list(meta["per_model"][0]) == ["model", "qa_rouge", "qa_target", "qa_retain_model", "qa_threshold",
                                          "qa_forgets", "kept", "separation", "suppression", "informative_formats"]
    assert list(numbers_only.texts({"meta": meta})) == []


def test_formats_with_too_few_forget_items_are_never_evidence(scores):
    n_items = {"mcqa": {"forget": 100, "retain": 100}, "cloze": {"forget": 8, "retain": 40},
               "odd_one_out": {"forget": 100, "retain": 100}, "comprehension_qa": {"forget": 100, "retain": 100}}
    # cloze_fill and the likelihood readouts share their format's items
    assert study.item_format("cloze_fill") == "cloze"
    assert study.item_format("odd_one_out_likelihood") == "odd_one_out"
    assert study.too_few_items(scores, n_items, 30) == ["cloze"]
    assert study.informative_formats(scores, CHANCE, 0.1, n_items=n_items, min_items=30) == ["mcqa_likelihood"]
    suppressed = study.model_records(scores, QA, CHANCE, 0.1, ["suppressed"], retain_model="retain90",
                                     n_items=n_items, min_items=30)[0]
    # the cloze lead alone was a kept format; on 8 items it does not count
    assert suppressed["kept"] == []
    assert study.informative_formats(scores, CHANCE, 0.1, n_items=n_items, min_items=5) == \
        ["mcqa_likelihood", "cloze"]
    few_odd = {**n_items, "odd_one_out": {"forget": 3, "retain": 3}}
    assert study.separating_formats(scores, CHANCE, 0.1, n_items=few_odd, min_items=30) == []


def test_records_say_when_qa_cannot_tell(scores):
    qa = {**QA, "retain90": {"forget": 0.9, "retain": 0.9}}
    finding = study.model_records(scores, qa, CHANCE, 0.1, ["suppressed"], retain_model="retain90")[0]
    assert finding["qa_forgets"] is None and finding["qa_threshold"] == pytest.approx(0.925)
    missing = study.model_records(scores, {}, CHANCE, 0.1, ["suppressed"], retain_model="retain90")[0]
    assert list(missing)[:2] == ["model", "qa_forgets"] and missing["qa_forgets"] is None
    with pytest.raises(ValueError, match="retain11"):
        study.model_records(scores, QA, CHANCE, 0.1, ["gone"], retain_model="retain11")


def test_tables_and_figures(scores, small_items):
    assert study.metrics_payload({"mcqa": {"forget": 0.5, "retain": 1}}) == \
        {"forget": {"mcqa": 0.5}, "retain": {"mcqa": 1.0}}
    # a set without items is stored as None in the cache and reported as NaN
    assert np.isnan(study.metrics_payload({"mcqa": {"forget": None, "retain": 1}})["forget"]["mcqa"])
    chance = study.chance_levels(small_items)
    assert chance["mcqa"] == chance["odd_one_out_likelihood"] == 0.25 and chance["cloze_fill"] is None
    assert set(study.chance_levels(small_items, likelihood=False)) == set(fmts.FORMATS) | {"cloze_fill"}
    assert study.format_order(scores) == ["mcqa", "mcqa_likelihood", "cloze", "odd_one_out_likelihood",
                                          "comprehension_qa"]
    table = study.scores_table(scores, QA)
    assert list(table.columns) == list(scores) and table.shape == (2 * 6, 5)
    assert table.loc[(study.QA_ROWS, "forget"), "gone"] == 0.33
    fig = format_plots.plot_format_scores(scores, CHANCE, retain_model="retain90", ncols=3)
    assert sum(ax.axison for ax in fig.axes) == 5
    fig = format_plots.plot_kept_share(scores, QA, ["cloze"], ["target", "suppressed"], retain_model="retain90")
    assert fig.axes[0].images[0].get_array().shape == (2, 2)
    # Q&A that cannot tell the target from the retain model gets no colour, only its numbers
    flat_qa = {**QA, "retain90": QA["target"]}
    fig = format_plots.plot_kept_share(scores, flat_qa, ["cloze"], ["target", "suppressed"], retain_model="retain90")
    shown = fig.axes[0].images[0].get_array()
    assert np.ma.getmaskarray(shown)[:, 0].all() and not np.ma.getmaskarray(shown)[:, 1].any()


def test_example_text_shows_each_format_with_what_counts_as_right(small_items):
    text = study.example_text(small_items, "forget")
    assert re.findall(r"^=== (\w+) \(", text, re.MULTILINE) == list(fmts.FORMATS)
    mcqa = small_items["mcqa"]["forget"][0]
    assert f"{mcqa['prompt']}\n--> {mcqa['answer_letter']} ({mcqa['correct_option']})" in text


def test_coverage_of_the_synthetic_corpus_needs_no_table(small_corpus):
    coverage = study.heuristic_coverage(small_corpus, "forget10", 4, 0)
    assert coverage.tables == [] and coverage.note.startswith("synthetic corpus")


@requires_real_tofu("tests/test_format_study.py::test_coverage_of_the_synthetic_corpus_needs_no_table")
def test_coverage_of_real_tofu_is_shown_per_rule_and_relation():
    coverage = study.heuristic_coverage(TofuSource(REAL_TOFU), "forget10", 4, 0)
    rules, relations = coverage.tables
    assert list(rules.columns) == ["forget", "retain", "corpus"] and "covered" in rules.index
    assert set(relations.index) == set(facts.RELATIONS)
    assert coverage.note.startswith("author names found 99.5%")


def _row(source_row, correct, fmt="mcqa"):
    return {"id": f"{fmt}/forget/{source_row}", "set": "forget", "source_row": source_row, "author_index": 0,
            "question": f"q{source_row}", "score": float(bool(correct)), "correct": correct, "prediction": "A"}


def test_disagreements_join_formats_fact_by_fact():
    per_item = {"m": {"mcqa_likelihood": {"forget": [_row(0, True), _row(1, True), _row(2, False)]},
                      "cloze": {"forget": [_row(0, False), _row(1, True), _row(2, False)]}}}
    # cloze_fill names the cloze rows (their correctness is the greedy fill's)
    rates = study.disagreement_rates(per_item, ["mcqa_likelihood", "cloze_fill"])
    assert rates["m"] == pytest.approx(1 / 3)
    examples = study.disagreement_examples(per_item["m"], ["mcqa_likelihood", "cloze_fill"])
    assert list(examples.index) == [0] and bool(examples.loc[0, "mcqa_likelihood"]) and not examples.loc[0, "cloze"]


# =============================================================================================
# Which models, and the per-model cache, in a temporary run store.
# =============================================================================================


@pytest.fixture()
def tmp_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    return tmp_path


#: The run store of these tests: the default profile's seed 0, under a temporary runs/.
PARAMS = config.Params.load("default").replace(forget_split="forget10", model="tiny")


def _save(model, tokenizer, template, runs_dir: Path, name: str) -> Path:
    folder = runs.model_dir(PARAMS, name)
    models.save_model(model, tokenizer, folder, template, extra={"params_hash": name})
    return folder


def _unlearning_run(runs_dir: Path, run: str, forget_rouge: float | None = None) -> None:
    folder = runs.store(PARAMS) / runs.unlearning_notebook(run)
    folder.mkdir(parents=True)
    result = {run: {s: {"rouge": forget_rouge} for s in study.SETS}} if forget_rouge is not None else {run: {}}
    (folder / "metrics.json").write_text(json.dumps({**result, "meta": {}}))


def test_evaluated_models_are_base_target_retain_and_unlearning_runs(tmp_runs, tiny_model, tiny_tokenizer, template,
                                                                   capsys):
    params = PARAMS
    with pytest.raises(FileNotFoundError, match="'target', 'retain90'.*run notebook 01"):
        study.evaluated_models(params, None)
    _save(tiny_model, tiny_tokenizer, template, tmp_runs, "target")
    with pytest.raises(FileNotFoundError, match="'retain90'"):  # the retain model is required too
        study.evaluated_models(params, None)
    for name in ("retain90", "unlearned-npo"):
        _save(tiny_model, tiny_tokenizer, template, tmp_runs, name)
    _unlearning_run(tmp_runs, "npo", 0.2)
    _unlearning_run(tmp_runs, "ga")  # metrics but no saved model
    named = study.evaluated_models(params, None)
    assert list(named) == ["target", "retain90", "npo"]
    assert Path(named["npo"]).name == "unlearned-npo"
    assert "left out (not saved): base, ga" in capsys.readouterr().out
    assert list(study.evaluated_models(params, ["npo", "target"])) == ["npo", "target"]
    with pytest.raises(FileNotFoundError, match="'kl'"):
        study.evaluated_models(params, ["kl"])
    # a Hub model is its own base: never saved, evaluated by its Hub name
    hub = study.evaluated_models(params.replace(model="org/model"), None)
    assert list(hub) == ["base", "target", "retain90", "npo"] and hub["base"] == "org/model"
    # Q&A ROUGE comes from the run store: the unlearning run's own metrics (notebook 01 has not run here)
    assert study.qa_rouge(params, list(named)) == {"npo": {"forget": 0.2, "retain": 0.2}}


def test_evaluate_model_is_cached_by_identity_items_and_settings(tmp_runs, tiny_model, tiny_tokenizer, template,
                                                                 small_items, monkeypatch):
    folder = _save(tiny_model, tiny_tokenizer, template, tmp_runs, "target")
    # two formats without generation keep it fast; every format runs in the notebook's smoke test
    items = {fmt: {s: small_items[fmt][s][:2] for s in ("forget", "retain")} for fmt in ("mcqa", "odd_one_out")}
    params = PARAMS.replace(format_likelihood=True, max_new_tokens=4, eval_batch_size=8)
    result = study.evaluate_model("target", str(folder), items, params)
    assert set(result.scores) == {"mcqa", "odd_one_out", "mcqa_likelihood", "odd_one_out_likelihood"}
    assert len(result.per_item["mcqa_likelihood"]["retain"]) == 2

    def must_not_run(*args, **kwargs):
        raise AssertionError("evaluated again although nothing changed")

    evaluate_formats = scoring.evaluate_formats
    monkeypatch.setattr(scoring, "evaluate_formats", must_not_run)
    again = study.evaluate_model("target", str(folder), items, params)
    assert json.dumps(again.scores, sort_keys=True) == json.dumps(result.scores, sort_keys=True)
    fewer = {fmt: {s: sets[s][:1] for s in sets} for fmt, sets in items.items()}
    with pytest.raises(AssertionError, match="evaluated again"):
        study.evaluate_model("target", str(folder), fewer, params)
    with pytest.raises(AssertionError, match="evaluated again"):  # a scoring setting is part of the key
        study.evaluate_model("target", str(folder), items, params.replace(format_likelihood=False))
    monkeypatch.setattr(scoring, "evaluate_formats", evaluate_formats)  # not undo(): that would drop tmp_runs too
    study.evaluate_model("target", str(folder), fewer, params)
    cache = runs.store(PARAMS) / runs.FORMATS / "cache"
    assert len(list(cache.glob("target-*.json"))) == 1  # one entry per model: the old one went


# =============================================================================================
# The thread policy the scoring runs under.
# =============================================================================================


def test_small_cpu_models_are_scored_on_one_thread(tiny_model):
    assert models.threads_for(tiny_model) == 1
    assert models.threads_for(n_parameters=10**9) is None  # a large model keeps torch's choice
    before = torch.get_num_threads()
    with models.cpu_threads(tiny_model):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


# =============================================================================================
# Transfer, reading of the passage, and the two families of scorers.
# =============================================================================================


def _rows(n_right: int, n: int) -> list[dict]:
    return [{"correct": i < n_right, "score": float(i < n_right)} for i in range(n)]


def _graded_rows(values) -> list[dict]:
    return [{"correct": None, "score": float(v)} for v in values]


def test_transfer_tests_are_exact_binomial_tests_against_chance_or_the_base_model():
    per_item = {
        "base": {"mcqa": {"forget": _rows(15, 60), "retain": _rows(16, 60)},
                 "cloze": {"forget": _rows(0, 60), "retain": _rows(3, 60)}},
        # 24/60 = 0.40 against chance 0.25: p = 0.0067; 23/60: p = 0.0146 (not below 0.01)
        "target": {"mcqa": {"forget": _rows(24, 60), "retain": _rows(23, 60)},
                   "cloze": {"forget": _rows(50, 60), "retain": _rows(52, 60)}},
    }
    chance = {"mcqa": 0.25, "cloze": None, "cloze_fill": None}
    tests = study.transfer_tests(per_item, chance, ["base", "target"], alpha=0.01)
    by_key = {(t["readout"], t["set"], t["model"]): t for t in tests}
    assert {t["readout"] for t in tests} == {"mcqa", "cloze_fill"}  # the graded span probability is not tested
    forget = by_key[("mcqa", "forget", "target")]
    assert forget["k"] == 24 and forget["n"] == 60 and forget["against"] == "chance"
    assert forget["p_value"] == pytest.approx(scipy_stats.binomtest(24, 60, 0.25, alternative="greater").pvalue)
    assert forget["above"] and not by_key[("mcqa", "retain", "target")]["above"]
    # the cloze fill has no chance level: the reference is the base model's rate (at least 0.01)
    fill = by_key[("cloze_fill", "retain", "target")]
    assert fill["against"] == "base" and fill["reference"] == pytest.approx(3 / 60) and fill["above"]
    assert by_key[("cloze_fill", "forget", "base")]["reference"] == 0.01
    assert study.transferring_readouts(tests) == ["cloze_fill"]  # mcqa transfers on forget only
    table = study.transfer_table(tests)
    assert table.loc[("mcqa", "forget", 60, 0.25), ("target", "score")] == pytest.approx(0.4)
    ci = scipy_stats.binomtest(24, 60).proportion_ci(0.95, method="exact")
    assert (forget["low"], forget["high"]) == pytest.approx((ci.low, ci.high))
    figure = format_plots.plot_transfer(tests, 0.01)
    assert len([ax for ax in figure.axes if ax.has_data()]) == 2  # forget and retain


def test_score_intervals_are_exact_for_right_and_wrong_and_t_for_graded_scores():
    found = study.score_interval({"mcqa": {"forget": _rows(30, 60)}}, "mcqa", "forget")
    ci = scipy_stats.binomtest(30, 60).proportion_ci(0.95, method="exact")
    assert (found["k"], found["n"], found["score"]) == (30, 60, 0.5)
    assert (found["low"], found["high"]) == pytest.approx((ci.low, ci.high))
    graded = study.score_interval({"comprehension_qa": {"forget": _graded_rows([0.2, 0.4, 0.6])}},
                                  "comprehension_qa", "forget")
    assert graded["score"] == pytest.approx(0.4)
    assert graded["high"] - graded["score"] == pytest.approx(scipy_stats.t.ppf(0.975, 2) * 0.2 / np.sqrt(3))
    assert study.score_interval({}, "mcqa", "forget")["n"] == 0


def test_comprehension_counts_only_where_the_retain_model_reads_its_passage():
    chance = {"comprehension_mcqa": 0.25, "comprehension_qa": None}
    reads = {"comprehension_mcqa": {"forget": _rows(50, 60), "retain": _rows(52, 60)},
             "comprehension_qa": {"forget": _graded_rows([0.6, 0.7, 0.8] * 20),
                                  "retain": _graded_rows([0.62, 0.7, 0.8] * 20)}}
    # the retain model of the default profile before this check: 0.24 on forget against 0.79 on retain, i.e. it
    # answers from memory; and a model at chance on both sets agrees with itself but reads nothing
    from_memory = {"comprehension_mcqa": {"forget": _rows(14, 60), "retain": _rows(47, 60)}}
    at_chance = {"comprehension_mcqa": {"forget": _rows(15, 60), "retain": _rows(16, 60)}}
    found = study.passage_reading(reads, chance, 0.01)
    assert found["comprehension_mcqa"]["reads"] and found["comprehension_qa"]["reads"]
    memory = study.passage_reading(from_memory, chance, 0.01)["comprehension_mcqa"]
    assert not memory["reads"] and not memory["agree"]
    chance_only = study.passage_reading(at_chance, chance, 0.01)["comprehension_mcqa"]
    assert chance_only["agree"] and not chance_only["above_chance"] and not chance_only["reads"]


def test_the_records_rest_on_transferring_readouts_of_one_family_and_read_passages(scores):
    scores["target"]["forget"]["mcqa"] = 0.9  # the lettered MCQA now separates target and retain model
    unlearned = ["suppressed", "gone", "untouched"]
    scores["suppressed"]["forget"]["mcqa"] = 0.8
    paper = study.format_records(scores, QA, CHANCE, {}, unlearned, "retain90", 0.1, 0, transfers=["mcqa"], read=[],
                        scorers=study.PAPER_SCORERS)
    assert paper.informative == ["mcqa"]  # cloze has no test here: not among the transferring readouts
    assert paper.unread == ["comprehension_qa"]
    suppressed = {f["model"]: f for f in paper.per_model}["suppressed"]
    assert [k["format"] for k in suppressed["kept"]] == ["mcqa"] and suppressed["qa_forgets"]
    assert suppressed["suppression"] == []  # comprehension_qa's gap is not counted: the retain model does not read
    ours = study.format_records(scores, QA, CHANCE, {}, unlearned, "retain90", 0.1, 0, transfers=["mcqa_likelihood"],
                       scorers=study.LIKELIHOOD_SCORERS)
    assert ours.informative == ["mcqa_likelihood"]
    assert all(s["format"].endswith("_likelihood") for f in ours.per_model for s in f["separation"])
    no_transfer = study.format_records(scores, QA, CHANCE, {}, unlearned, "retain90", 0.1, 0, transfers=[],
                              scorers=study.PAPER_SCORERS)
    assert no_transfer.informative == [] and no_transfer.not_transferring == ["mcqa"]
    with_fill = study.format_records(scores, QA, CHANCE, {}, unlearned, "retain90", 0.1, 0, transfers=["cloze_fill"],
                            scorers=study.PAPER_SCORERS)
    assert with_fill.informative == ["cloze"]  # the span probability counts where its greedy fill transfers
    meta = study.results_meta({}, "retain90", CHANCE, {}, paper, QA, transfer=[], reading={},
                              likelihood=ours)
    assert meta["scorers"] == "paper" and meta["likelihood"]["informative_formats"] == ["mcqa_likelihood"]
    with pytest.raises(ValueError, match="scorers"):
        study.informative_formats(scores, CHANCE, 0.1, scorers="letters")
