"""The leakage study (unlearnkit.studies.leakage): scores -> bounds, the choices the notebook shows, the cache
and the keyword Q&A, on tiny models and hand-made arrays."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import HP_QA, needs
from scipy import stats
from unlearnkit import config, models, paths, runs
from unlearnkit.metrics import scored as sampled_scores
from unlearnkit.metrics.sampling import SampledScores, sample_and_score
from unlearnkit.studies import leakage

#: The run store of these tests (under a temporary runs/): the smoke profile's seed 0.
UNIT = config.Params.load("smoke")

pytestmark = pytest.mark.usefixtures("tiny_model_threads")

ALPHA = 0.01
MAX_NEW = 8


def _forget_rows(corpus, count=3):
    return corpus.load("forget10")[:count]


def test_bound_table_brackets_the_sample_statistics(tiny_model, tiny_tokenizer, template, small_corpus):
    result = sample_and_score(tiny_model, tiny_tokenizer, template, _forget_rows(small_corpus), n=4,
                              max_new_tokens=MAX_NEW, seed=0)
    table = leakage.bound_table(result.rouge, ALPHA, result.leak)
    assert len(table) == 3
    assert (table["mean_lower"] <= table["ed_mean"] + 1e-12).all() and (table["ed_mean"] <= table["mean_upper"] + 1e-12).all()
    assert (table["leak_lower"] <= table["leak_rate"]).all() and (table["leak_rate"] <= table["binary_leak_bound"]).all()
    assert (table["ed_score"] == table["ed_mean"] + 2 * table["ed_sd"]).all()
    with pytest.raises(ValueError, match="needs"):
        leakage.bound_table(None, ALPHA)


def test_a_memorised_answer_leaks_in_every_sample(tiny_model, tiny_tokenizer, template, small_corpus):
    row = _forget_rows(small_corpus, 1)[0]
    example = models.encode_qa(tiny_tokenizer, template, row["question"], row["answer"])
    ids = torch.tensor([example["input_ids"]])
    labels = torch.tensor([example["labels"]])
    optimizer = torch.optim.AdamW(tiny_model.parameters(), lr=1e-2)
    tiny_model.train()
    # memorised down to a sequence probability near 1: 16 samples at temperature 1 must all follow it (a mean token
    # NLL of 1e-3 over ~30 answer tokens still leaves one sample in three off the answer)
    for _ in range(400):
        loss = tiny_model(input_ids=ids, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if loss.item() < 1e-4:
            break
    n = 16
    result = sample_and_score(tiny_model, tiny_tokenizer, template, [row], n=n, max_new_tokens=48, seed=0)
    assert result.greedy_leak.tolist() == [1] and result.greedy_rouge[0] == pytest.approx(1.0)
    assert result.leak.sum() == n  # every sample names the key entity
    report = leakage.model_summary(result, ALPHA, rouge_threshold=0.5, adaptive_threshold=0.9)
    assert report.table["binary_leak_bound"].iloc[0] == pytest.approx(1.0)  # S = n
    assert report.table["leak_lower"].iloc[0] == pytest.approx(ALPHA ** (1 / n))  # Clopper-Pearson lower for S = n
    assert report.summary["ed_mean"] > 0.95 and report.summary["greedy_unlearned_but_leaks"] == 0
    assert report.summary["adaptive_greedy_share"] == 1.0 and result.certainty[0] > 0.9


def test_greedy_vs_sampling_counts_on_hand_made_arrays():
    greedy_rouge = np.array([0.2, 0.9, 0.1, 0.3])
    rouge = np.array([[0.1, 0.8, 0.2, 0.1],   # greedy unlearned, one sample above 0.5: understated
                      [0.9, 0.9, 1.0, 0.7],   # greedy already leaks: not understated
                      [0.0, 0.1, 0.2, 0.3],   # clean everywhere
                      [0.5, 0.5, 0.4, 0.2]])  # 0.5 is not above the threshold: clean
    greedy_leak = np.array([0, 1, 0, 0])
    leaks = np.array([[0, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [1, 1, 0, 1]])
    table = leakage.greedy_vs_sampling(ALPHA, greedy_rouge, rouge, greedy_leak, leaks, rouge_threshold=0.5)
    assert table["understated_rouge"].tolist() == [True, False, False, False]
    assert table["understated_entity"].tolist() == [True, False, False, True]
    summary = leakage.understatement_summary(table)
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
        leakage.greedy_vs_sampling(ALPHA)

    # against a retain model that never names the keys (M_bin 1 - alpha^(1/4) = 0.68 everywhere), only a flagged
    # question whose lower bound exceeds that counts; none does with n = 4
    retain = leakage.greedy_vs_sampling(ALPHA, greedy_leak=np.zeros(4), leaks=np.zeros((4, 4)))
    summaries = {"unlearned": {}, "retain": {}}
    leakage.compare_with_reference({"unlearned": table, "retain": retain}, summaries, "retain")
    assert summaries["unlearned"]["greedy_unlearned_but_leaks_above_reference"] == 0
    many = np.ones((4, 64), dtype=int)
    strong = leakage.greedy_vs_sampling(ALPHA, greedy_leak=np.zeros(4), leaks=many)
    leakage.compare_with_reference({"unlearned": strong, "retain": retain}, summaries, "retain")
    assert summaries["unlearned"]["greedy_unlearned_but_leaks_above_reference"] == 4


def _scores(greedy_leak, leak, rouge, greedy_rouge, name="q") -> SampledScores:
    """Hand-made scores of a model: the questions and answers are placeholders."""
    questions = [f"{name}{i}?" for i in range(len(leak))]
    return SampledScores(questions=questions, keys=[f"key{i}" for i in range(len(leak))],
                         greedy_answers=[f"answer {i}" for i in range(len(leak))],
                         greedy_leak=np.asarray(greedy_leak, dtype=np.int8),
                         certainty=np.linspace(0.5, 0.99, len(leak)), leak=np.asarray(leak, dtype=np.int8),
                         self_bleu=np.full(len(leak), 0.5), examples=[["s1", "s2", "s3", "s4"]] * len(leak),
                         greedy_rouge=np.asarray(greedy_rouge, dtype=float), rouge=np.asarray(rouge, dtype=float))


def _three_models():
    rng = np.random.default_rng(0)
    target = _scores([1, 1, 1], np.ones((3, 8)), rng.uniform(0.8, 1, (3, 8)), [1, 1, 1])
    retain = _scores([0, 0, 0], np.zeros((3, 8)), rng.uniform(0, 0.3, (3, 8)), [0.1, 0.1, 0.1])
    leaky = np.zeros((3, 8))
    leaky[1] = 1  # question 1: greedy clean, every sample leaks
    spread = np.stack([np.full(8, 0.2), rng.uniform(0, 1, 8), rng.uniform(0.1, 0.3, 8)])
    unlearned = _scores([0, 0, 0], leaky, spread, [0.1, 0.2, 0.1])
    return {"target": target, "retain90": retain, "npo": unlearned}


def test_model_reports_the_counts_and_the_flagged_questions_on_hand_made_models():
    results = _three_models()
    reports = leakage.summarise_models(results, ALPHA, rouge_threshold=0.5, adaptive_threshold=0.9,
                                       reference="retain90")
    assert list(reports.tables) == list(results)
    npo = reports.summaries["npo"]
    assert npo["greedy_unlearned_but_leaks"] == 1 and npo["greedy_unlearned_but_leaks_above_reference"] == 1
    assert npo["adaptive_greedy_share"] == pytest.approx(1 / 3)  # only the last question's c(x) exceeds 0.9
    flagged = leakage.flagged_questions(reports.tables, reports.summaries, exclude=["target", "retain90"],
                                        reference="retain90")
    assert flagged.model == "npo" and flagged.count == 1
    assert flagged.table.index.tolist() == [1] and flagged.table["retain90 leaks"].tolist() == [0]
    assert leakage.flagged_questions(reports.tables, reports.summaries, exclude=list(results)) is None

    counts = leakage.summary_frame(reports.summaries, leakage.COUNT_COLUMNS)
    assert counts.loc["npo", "greedy_unlearned_but_leaks"] == 1 and "flagged_rouge_tail_bound_mean" in counts
    assert list(leakage.summary_frame(reports.summaries, ["leak_rate", "no such column"])) == ["leak_rate"]
    example = leakage.example_answers(results, count=2)
    assert example.question == "q0?" and example.key == "key0" and example.answers.index.tolist() == ["target", "retain90"]
    assert example.answers.loc["retain90", "samples"] == ["s1", "s2", "s3"]

    entries = leakage.metrics_entries(reports.summaries, None, None)
    assert set(entries) == set(results) and entries["npo"]["forget"] == reports.summaries["npo"]
    per_item = leakage.per_item(reports.tables)
    assert len(per_item["npo"]["binary_leak_bound"]) == 3 and "question_text" not in per_item["npo"]


def test_the_questions_of_the_bounds_vs_n_figure():
    results = _three_models()
    assert leakage.questions_by_spread(np.array([0.1, 0.5, 0.3, 0.0, 0.2])) == [1, 4, 3]
    assert leakage.questions_by_spread(np.zeros(1)) == [0]  # one question, named once
    tables = leakage.summarise_models(results, ALPHA, 0.5, 0.9, None).tables
    curves = leakage.bounds_vs_n_curves(results, tables, ["target", "npo"], ALPHA)
    assert len(curves) == 3 and all(label.startswith("npo, q") for label in curves)  # npo's samples vary most
    assert next(iter(curves)).startswith("npo, q1 ")  # the question with the largest sd first
    overview = leakage.bounds_vs_n_overview(curves)
    assert overview.index.tolist() == [4, 8, 8] and ("ed_mean", next(iter(curves))) in overview


def test_bounds_vs_n_shrink_with_more_samples():
    scores = np.random.default_rng(0).beta(2, 5, size=256)
    curve = leakage.bounds_vs_n(scores, ALPHA)
    assert curve.index.tolist() == [4, 8, 16, 32, 64, 128, 256]
    width = (curve["mean_upper"] - curve["mean_lower"]).to_numpy()
    assert (np.diff(width) < 0).all()
    assert curve["std_upper"].iloc[-1] < curve["std_upper"].iloc[0]
    with pytest.raises(ValueError, match="ONE question"):
        leakage.bounds_vs_n(scores.reshape(2, -1), ALPHA)
    with pytest.raises(ValueError, match="outside"):
        leakage.bounds_vs_n(scores[:8], ALPHA, sizes=[16])


def test_general_leak_curves_bound_the_empirical_tail():
    scores = np.random.default_rng(1).uniform(size=(3, 50))
    curves = leakage.general_leak_curves(scores, ALPHA)
    assert curves.thresholds.shape == (101,) and curves.upper.shape == curves.tail.shape == (3, 101)
    eps = np.sqrt(np.log(1 / ALPHA) / 100)
    assert np.allclose(curves.upper, np.minimum(1.0, curves.tail + eps))


def test_sampling_settings_and_question_picking_follow_the_profile(small_corpus):
    from unlearnkit.config import Params

    params = Params.load("smoke")
    from unlearnkit.metrics.sampling import sampling_settings

    settings = sampling_settings(params, "leakage")
    assert settings == {"n": params.n_samples, "temperature": params.sample_temperature, "top_p": params.sample_top_p,
                        "max_new_tokens": params.sample_max_new_tokens, "seed": params.seed}
    rows = leakage.forget_rows(small_corpus, params.replace(sample_max_items=3))
    forget = small_corpus.load(params.forget_split)
    assert rows == [forget[0], forget[int(np.round((len(forget) - 1) / 2))], forget[-1]]


def test_evenly_spaced_questions_cover_the_split():
    rows = list(range(200))
    picked = leakage.evenly_spaced(rows, 40)
    assert len(picked) == 40 and picked[0] == 0 and picked[-1] == 199
    assert leakage.evenly_spaced(rows, None) == rows and leakage.evenly_spaced(rows, 500) == rows


@needs(HP_QA.exists(), "the HP Q&A file is not in ../shared/data/hp_qa (CI has it)",
       "tests/test_leakage.py::test_the_synthetic_keyword_qa_with_an_untrained_model")
def test_hp_path_on_the_real_file_with_an_untrained_model(tiny_model, tiny_tokenizer, template):
    rows = leakage.hp_rows(str(HP_QA), max_questions=6)
    assert len(rows) == 6 and all(r["keywords"] for r in rows)
    n = 4
    hp = leakage.hp_leakage(tiny_model, tiny_tokenizer, template, rows, ALPHA, sampler="hf", n=n, max_new_tokens=MAX_NEW,
                            seed=0)
    assert hp.scores.leak.shape == (6, n) and hp.scores.greedy_leak.shape == (6,) and hp.scores.rouge is None
    assert len(hp.table) == 6 and hp.summary["n_questions"] == 6 and hp.summary["n_samples"] == n
    # an untrained model does not know Harry Potter: S = 0, and M_bin is the Clopper-Pearson value 1 - alpha^(1/n)
    assert (hp.table["leaks"] == 0).all()
    assert np.allclose(hp.table["binary_leak_bound"], 1 - ALPHA ** (1 / n))
    assert np.allclose(hp.table["binary_leak_bound"], stats.beta.ppf(1 - ALPHA, 1, n))
    assert hp.summary["binary_leak_bound_mean"] == pytest.approx(1 - ALPHA ** (1 / n))


def test_the_synthetic_keyword_qa_with_an_untrained_model(tiny_model, tiny_tokenizer, template, small_corpus):
    rows = leakage.hp_rows("synthetic", small_corpus.load("forget10"), max_questions=4)
    assert len(rows) == 4 and all(r["keywords"] and r["affirmative_response"] for r in rows)
    n = 3
    hp = leakage.hp_leakage(tiny_model, tiny_tokenizer, template, rows, ALPHA, sampler="hf", n=n, max_new_tokens=MAX_NEW,
                            seed=0)
    assert hp.summary["use_prefix"] is True and hp.scores.settings["use_prefix"] is True
    leaks = hp.table["leaks"].to_numpy()
    expected = np.where(leaks < n, stats.beta.ppf(1 - ALPHA, leaks + 1, np.maximum(n - leaks, 1)), 1.0)
    assert np.allclose(hp.table["binary_leak_bound"], expected)
    shown = leakage.strongest_keyword_leaks(hp.table, limit=2)
    assert list(shown) == leakage.KEYWORD_COLUMNS and len(shown) == 2
    assert shown["binary_leak_bound"].is_monotonic_decreasing
    # the figure says which questions these are: the synthetic analogue is never titled the HP Q&A
    assert "Harry Potter" not in leakage.keyword_questions_label("synthetic")
    assert leakage.keyword_questions_label("env:UNLEARNKIT_HP_QA") == "Harry Potter Q&A"


def test_saved_models_are_scored_once_and_cached(tiny_model, tiny_tokenizer, template, small_corpus, tmp_path,
                                                 monkeypatch):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    models.save_model(tiny_model, tiny_tokenizer, runs.model_dir(UNIT, "target"), template)
    rows = _forget_rows(small_corpus, 2)
    settings = {"n": 2, "max_new_tokens": 4, "seed": 0}
    first = leakage.score_saved_model(UNIT, "target", rows, settings)
    hp_questions = leakage.hp_rows("synthetic", small_corpus.load("forget10"), 2)
    hp = leakage.run_hp_qa("target", UNIT, hp_questions, settings, ALPHA, use_prefix=True)
    plain = leakage.run_hp_qa("target", UNIT, hp_questions, settings, ALPHA, use_prefix=False)
    assert plain.summary["use_prefix"] is False and hp.summary["use_prefix"] is True
    cache = runs.notebook_dir(UNIT, runs.LEAKAGE) / "cache"
    # no eviction: the forget questions and both choices of the keyword Q&A's prefix keep their entries
    assert sorted(p.name.split("-")[0] for p in cache.glob("*.json")) == ["target", "target.hp", "target.hp.prefixed"]
    monkeypatch.setattr(sampled_scores, "sample_and_score_with", lambda *a, **k: pytest.fail("sampled again despite the cache"))
    again = leakage.score_saved_model(UNIT, "target", rows, settings)
    assert again.examples == first.examples and np.array_equal(again.leak, first.leak)
    assert hp.scores.leak.shape == (2, 2) and len(hp.table) == 2
    scored = leakage.score_models(UNIT, {"the target": "target"}, rows, settings)  # from the cache as well
    assert list(scored.results) == ["the target"] and np.array_equal(scored.results["the target"].rouge, first.rouge)
    overview = leakage.scoring_overview(scored)
    assert overview.loc["the target", "sampled leak rate"] == first.leak.mean()
    assert leakage.run_meta({"the target": "target"}, None, settings, rows, scored)["sampling_seconds"] >= 0

    # other settings or another model sample anew, and the new entry replaces the old one
    calls = []
    monkeypatch.setattr(sampled_scores, "sample_and_score_with", lambda *a, **k: calls.append(k) or first)
    leakage.score_saved_model(UNIT, "target", rows, {**settings, "seed": 1})
    assert len(calls) == 1 and calls[0]["seed"] == 1
    assert len(list(cache.glob("target-*.json"))) == 1
    models.save_model(tiny_model, tiny_tokenizer, runs.model_dir(UNIT, "target"), template,
                      extra={"params_hash": "another recipe"})
    leakage.score_saved_model(UNIT, "target", rows, {**settings, "seed": 1})
    assert len(calls) == 2


def test_the_cache_key_ignores_file_times(tiny_model, tiny_tokenizer, template, small_corpus, tmp_path, monkeypatch):
    """A model saved again by the same recipe (new file times, same identity) is read from the cache."""
    import os

    monkeypatch.setattr(paths, "RUNS", tmp_path)
    folder = runs.model_dir(UNIT, "target")
    models.save_model(tiny_model, tiny_tokenizer, folder, template, extra={"params_hash": "recipe"})
    rows = _forget_rows(small_corpus, 1)
    settings = {"n": 2, "max_new_tokens": 4, "seed": 0}
    leakage.score_saved_model(UNIT, "target", rows, settings)
    for weights in folder.glob("*.safetensors"):
        os.utime(weights, ns=(0, 0))
    monkeypatch.setattr(sampled_scores, "sample_and_score_with", lambda *a, **k: pytest.fail("sampled again despite the cache"))
    again = leakage.score_saved_model(UNIT, "target", rows, settings)
    assert isinstance(again, SampledScores) and isinstance(again.rouge, np.ndarray)
    assert isinstance(leakage.bound_table(again.rouge, ALPHA), pd.DataFrame)


def test_the_atom_at_zero_panel_shows_the_paper_form_missing_and_the_corrected_form_holding():
    coverage = leakage.atom_at_zero_coverage(alpha=0.05, n=1024, trials=100, seed=1)
    draws = np.random.default_rng(1)
    assert coverage.true_sd == pytest.approx(np.std(draws.beta(5, 2, 400_000) * (draws.random(400_000) >= 0.5)),
                                             abs=2e-3)
    rates = coverage.coverage()
    assert rates["paper"] == 0.0 and rates["corrected"] >= 0.9


def test_bound_modes_compare_grids_per_model():
    rng = np.random.default_rng(0)
    rouge = np.where(rng.random((6, 128)) < 0.3, 0.0, rng.beta(4, 2, (6, 128)))

    class Result:  # the one field bound_modes reads
        def __init__(self, rouge):
            self.rouge = rouge

    table = leakage.bound_modes({"a": Result(rouge), "no rouge": Result(None)}, alpha=0.01)
    assert list(table.index) == ["a"]
    row = table.loc["a"]
    assert row["width_samples"] <= row["width_uniform"] + 1e-12
    assert 0.25 < row["atom_at_zero_share"] < 0.35
    rates = leakage.atom_at_zero_coverage(0.01, n=256, trials=20, seed=0).coverage()
    assert set(rates) == {"paper", "corrected"} and all(0.0 <= r <= 1.0 for r in rates.values())


def test_scoring_no_model_is_an_empty_result():
    from unlearnkit import config
    from unlearnkit.metrics import scored

    found = scored.score_models(config.Params.load("smoke"), {}, [], {})
    assert found.results == {} and found.seconds == {}


def test_hp_model_regime_is_the_first_run_that_reached_the_regime(tmp_path):
    """#56 item 5: ``hp_model: regime`` asks the keyword Q&A of notebook 05's first model that reached the paper's
    regime (its kept step's folder, recorded under its label); with none reached, the first one (recorded as not
    reached, so the claim says not testable); any other value is the model it names."""
    path = pd.DataFrame({"greedy_leak_rate": [0.1]}, index=[3])

    def model(run, step, reached):
        return leakage.RegimeModel(run, step, tmp_path / run / f"step-{step:05d}", 0.0, 0.0, 0.5, reached, path)

    chosen = {"ga_mild@26": model("ga_mild", 26, False), "npo_mild@30": model("npo_mild", 30, True)}
    assert leakage.hp_model_of("regime", chosen) == (tmp_path / "npo_mild" / "step-00030", "npo_mild@30")
    chosen["npo_mild@30"] = model("npo_mild", 30, False)
    assert leakage.hp_model_of("regime", chosen) == (tmp_path / "ga_mild" / "step-00026", "ga_mild@26")
    assert leakage.hp_model_of("regime", {}) == (None, None)
    assert leakage.hp_model_of("unlearned-npo", chosen) == ("unlearned-npo", "unlearned-npo")
    assert leakage.hp_model_of(None, chosen) == (None, None)


def test_above_greedy_share_counts_the_questions_some_sample_beats_greedy_on():
    rouge = np.array([[0.2, 0.9], [0.1, 0.1]])
    found = leakage.above_greedy_share({"m": _scores([0, 0], np.zeros((2, 2)), rouge, [0.5, 0.5]),
                                        "target": _scores([0, 0], np.zeros((2, 2)), rouge, [0.0, 0.0])},
                                       exclude=["target"])
    assert found.to_dict() == {"m": 0.5}
