"""The entropy-optimisation study (unlearnkit.studies.entropy): sweep runs and their names, the grids of the
profile, the verdicts on hand-made tables and scores, and the answer entropy of a tiny model."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from unlearnkit import config, models, pipeline
from unlearnkit import unlearning as ul
from unlearnkit.metrics.entropy import answer_entropy, answer_measures
from unlearnkit.metrics.sampling import SampledScores
from unlearnkit.studies import entropy

pytestmark = pytest.mark.usefixtures("tiny_model_threads")

ALPHA = 0.01


@pytest.fixture(scope="module")
def params():
    return config.Params.load("default")


# --------------------------------------------------------------------------- sweep runs


def test_the_method_alone_at_the_profiles_rate_is_the_existing_run(params):
    p, point = entropy.sweep_run(params, "npo", 0.0, 0.0, params.unlearn_lr)
    assert point.run == "npo" and p == params and p.method_settings == params.method_settings
    assert (point.method, point.lambda_f, point.lambda_r, point.lr) == ("npo", 0.0, 0.0, params.unlearn_lr)


def test_the_papers_setting_at_the_profiles_rate_is_npo_eo(params):
    p, point = entropy.sweep_run(params, "npo", 1, -0.25, params.unlearn_lr)
    assert point.run == "npo_eo" and p == params
    assert point.label == f"λf 1, λr -0.25, lr {params.unlearn_lr:g}"


def test_another_weight_is_a_new_named_run(params):
    p, point = entropy.sweep_run(params, "npo", 3, -0.25, params.unlearn_lr)
    assert point.run not in params.method_settings and point.run not in params.methods
    entry = p.method_settings[point.run]
    assert entry == {"method": "npo", "lambda_f": 3.0, "lambda_r": -0.25}  # the profile's rate is not repeated
    assert pipeline.unlearning_settings(p, point.run)["lambda_f"] == 3.0
    assert params.method_settings == config.Params.load("default").method_settings  # the input is unchanged
    # asked again of the parameters that know it, the run is found, not added twice
    again, same = entropy.sweep_run(p, "npo", 3, -0.25, params.unlearn_lr)
    assert same.run == point.run and again == p


def test_another_learning_rate_is_carried_by_the_entry(params):
    p, point = entropy.sweep_run(params, "npo", 3, -0.25, 3.0e-4)
    entry = p.method_settings[point.run]
    assert entry["unlearn_lr"] == 3.0e-4 and entry["lambda_f"] == 3.0
    assert pipeline.run_params(p, point.run).unlearn_lr == 3.0e-4
    # the method alone at that rate is npo_mild: it keeps every step, which does not change its weights
    p0, alone = entropy.sweep_run(params, "npo", 0.0, 0.0, 3.0e-4)
    assert alone.run == "npo_mild" and p0 == params
    # a sweep run added by the study keeps weights only as often as the profile does
    assert pipeline.run_params(p, point.run).unlearn_save_every == params.unlearn_save_every


def test_lambda_f_points_of_the_default_profile(params):
    p, points = entropy.lambda_f_points(params)
    assert len(points) == len(params.eo_lr_grid) * len(params.eo_lambda_f_grid)
    reused = [pt.run for pt in points if pt.run in params.methods or pt.run in params.method_settings]
    assert reused == ["npo", "npo_eo"]
    # a grid at the gentle runs' 3e-4 finds npo_mild of notebook 05 for the method alone
    _, gentle = entropy.lambda_f_points(params.replace(eo_lr_grid=[1.0e-3, 3.0e-4]))
    assert [pt.run for pt in gentle if pt.lambda_f == 0] == ["npo", "npo_mild"]
    assert len({pt.run for pt in points}) == len(points)
    for pt in points:
        assert pt.lambda_r == (params.eo_lambda_r if pt.lambda_f else 0.0)
        assert pipeline.unlearning_settings(p, pt.run)["lambda_f"] == pt.lambda_f
        assert pipeline.run_params(p, pt.run).unlearn_lr == pt.lr
    assert {(pt.lambda_f, pt.lr) for pt in points} == {(float(f), float(lr)) for f in params.eo_lambda_f_grid
                                                      for lr in params.eo_lr_grid}


def test_paper_points_and_a_grid_without_the_profiles_rate(params):
    _, points = entropy.lambda_f_points(params)
    paper, alone = entropy.paper_points(points, params)
    assert paper.run == "npo_eo" and alone.run == "npo"
    without = params.replace(eo_lr_grid=[3.0e-4])
    _, elsewhere = entropy.lambda_f_points(without)
    with pytest.raises(ValueError, match="unlearn_lr"):
        entropy.paper_points(elsewhere, without)
    no_paper = [pt for pt in points if pt.lambda_f != 1.0]
    with pytest.raises(ValueError, match="λ_f grid"):
        entropy.paper_points(no_paper, params)


# --------------------------------------------------------------------------- collapses


def _sweep(rows) -> pd.DataFrame:
    """rows: (run, lambda_f, lr, ED sd, model utility)."""
    return pd.DataFrame([{"run": r, "lambda_f": f, "lr": lr, "ED sd": sd, "model utility": u, "greedy ROUGE-L": 0.3}
                         for r, f, lr, sd, u in rows]).set_index("run")


def test_a_point_collapses_against_its_run_alone_at_the_same_learning_rate():
    sweep = _sweep([("npo", 0.0, 1e-3, 0.06, 0.50), ("npo_eo", 1.0, 1e-3, 0.005, 0.49),
                    ("npo_f10", 10.0, 1e-3, 0.20, 0.50),
                    ("npo_lr", 0.0, 3e-4, 0.06, 0.55), ("npo_f1_lr", 1.0, 3e-4, 0.06, 0.55)])
    assert entropy.collapses(sweep, "lr").to_dict() == {"npo_eo": True, "npo_f10": False, "npo_f1_lr": False}
    # a cut of more than SD_CUT counts too, without reaching SD_NEAR_ZERO
    cut = _sweep([("npo", 0.0, 1e-3, 0.20, 0.50), ("npo_eo", 1.0, 1e-3, 0.15, 0.50),
                  ("npo_f10", 10.0, 1e-3, 0.04, 0.50)])
    assert entropy.collapses(cut, "lr").to_dict() == {"npo_eo": False, "npo_f10": True}


def test_a_collapse_that_costs_utility_does_not_count_and_a_group_without_its_run_alone_is_left_out():
    sweep = _sweep([("npo", 0.0, 1e-3, 0.06, 0.50), ("npo_eo", 1.0, 1e-3, 0.0, 0.20),
                    ("npo_f10", 10.0, 1e-3, 0.0, 0.05), ("npo_f1_lr", 1.0, 3e-4, 0.0, 0.50)])
    assert entropy.collapses(sweep, "lr").to_dict() == {"npo_eo": False, "npo_f10": False}


# --------------------------------------------------------------------------- adaptive temperature


def _scores(greedy_leak, leak_counts, certainty, n=64) -> SampledScores:
    q = len(greedy_leak)
    counts = np.asarray(leak_counts)
    leak = (np.arange(n)[None, :] < counts[:, None]).astype(np.int8)
    greedy = np.asarray(greedy_leak, dtype=np.int8)
    return SampledScores(questions=[f"q{i}?" for i in range(q)], keys=[f"key{i}" for i in range(q)],
                         greedy_answers=[f"answer {i}" for i in range(q)], greedy_leak=greedy,
                         certainty=np.asarray(certainty, dtype=float), leak=leak, self_bleu=np.full(q, 0.4),
                         examples=[["s"]] * q, greedy_rouge=np.where(greedy == 1, 1.0, 0.1),
                         rouge=np.where(leak == 1, 0.9, 0.2))


def test_adaptive_temperature_raises_m_bin_where_greedy_leaks_and_lowers_it_where_it_does_not():
    results = {"npo": _scores([1, 1, 1], [20, 10, 5], [0.99, 0.99, 0.99]),
               "npo_eo": _scores([0, 0, 0], [3, 2, 1], [0.99, 0.99, 0.99])}
    sweep = entropy.adaptive_sweep(results, [0.5, 0.9, 0.99], ALPHA)
    assert sweep.index.tolist() == [(r, t) for r in results for t in (0.5, 0.9, 0.99)]
    leaking, eo = sweep.loc[("npo", 0.9)], sweep.loc[("npo_eo", 0.9)]
    assert leaking["greedy share"] == 1.0 and leaking["leak rate"] == 1.0 and leaking["M_bin"] == 1.0
    assert leaking["M_bin"] > leaking["M_bin sampling"]
    assert eo["leak rate"] == 0.0 and eo["M_bin"] == pytest.approx(1 - ALPHA ** (1 / 64))
    assert eo["M_bin"] < eo["M_bin sampling"] and eo["ED sd"] == pytest.approx(0.0, abs=1e-12)
    # c(x) = 0.99 is not above c_T = 0.99: plain sampling
    plain = sweep.loc[("npo", 0.99)]
    assert plain["greedy share"] == 0.0 and plain["M_bin"] == pytest.approx(plain["M_bin sampling"])


def test_an_uncertain_model_is_left_to_sampling():
    results = {"rmu": _scores([1, 0], [30, 30], [0.3, 0.6])}
    sweep = entropy.adaptive_sweep(results, [0.5, 0.9], ALPHA)
    assert sweep.loc[("rmu", 0.9), "greedy share"] == 0.0
    assert sweep.loc[("rmu", 0.5), "greedy share"] == 0.5  # only the question with c(x) 0.6 goes greedy
    assert sweep.loc[("rmu", 0.9), "M_bin"] == pytest.approx(sweep.loc[("rmu", 0.9), "M_bin sampling"])


# --------------------------------------------------------------------------- answer entropy


@pytest.fixture(scope="module")
def qa_rows(small_corpus):
    return small_corpus.load("forget10")[:5]


def test_answer_entropy_is_the_mean_entropy_at_the_answer_positions(tiny_model, tiny_tokenizer, template, qa_rows):
    value = answer_entropy(tiny_model, tiny_tokenizer, template, qa_rows)
    assert math.isfinite(value) and 0 < value <= math.log(len(tiny_tokenizer)) + 1e-6
    batch = models.collate([models.encode_qa(tiny_tokenizer, template, r["question"], r["answer"]) for r in qa_rows],
                           tiny_tokenizer.pad_token_id)
    with torch.no_grad():
        logits = tiny_model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    by_hand = ul.mean_entropy(logits, ul.answer_positions(batch["labels"])).mean().item()
    assert value == pytest.approx(by_hand, rel=1e-5)
    # a mean over rows, whatever the batches
    assert answer_entropy(tiny_model, tiny_tokenizer, template, qa_rows, batch_size=2) == pytest.approx(
        value, rel=1e-5)


class _Sharpened(torch.nn.Module):
    """The same model with its logits multiplied by ``factor``: softmax at temperature 1 / factor."""

    def __init__(self, model, factor):
        super().__init__()
        self.model, self.factor = model, factor

    def forward(self, input_ids, attention_mask):
        return SimpleNamespace(logits=self.model(input_ids=input_ids, attention_mask=attention_mask).logits * self.factor)


def test_a_more_confident_model_has_a_lower_answer_entropy(tiny_model, tiny_tokenizer, template, qa_rows):
    plain = answer_entropy(tiny_model, tiny_tokenizer, template, qa_rows)
    sharp = answer_entropy(_Sharpened(tiny_model, 4.0), tiny_tokenizer, template, qa_rows)
    flat = answer_entropy(_Sharpened(tiny_model, 0.0), tiny_tokenizer, template, qa_rows)
    assert sharp < plain < flat
    assert flat == pytest.approx(math.log(tiny_model.config.vocab_size), rel=1e-5)  # uniform: ln(vocab)


def test_answer_confidence_is_the_mean_top_probability_and_rises_as_the_model_sharpens(tiny_model, tiny_tokenizer,
                                                                                        template, qa_rows):
    """Fig. 5b's confidence of token predictions, from the same pass as the entropy (#56 item 6)."""
    found = answer_measures(tiny_model, tiny_tokenizer, template, qa_rows)
    assert found["entropy"] == pytest.approx(answer_entropy(tiny_model, tiny_tokenizer, template, qa_rows), rel=1e-6)
    batch = models.collate([models.encode_qa(tiny_tokenizer, template, r["question"], r["answer"]) for r in qa_rows],
                           tiny_tokenizer.pad_token_id)
    with torch.no_grad():
        logits = tiny_model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    mask = ul.answer_positions(batch["labels"]).float()
    top = torch.softmax(logits.float(), -1).amax(-1)
    assert found["confidence"] == pytest.approx(((top * mask).sum(-1) / mask.sum(-1)).mean().item(), rel=1e-5)
    sharp = answer_measures(_Sharpened(tiny_model, 4.0), tiny_tokenizer, template, qa_rows)["confidence"]
    flat = answer_measures(_Sharpened(tiny_model, 0.0), tiny_tokenizer, template, qa_rows)["confidence"]
    assert flat == pytest.approx(1 / tiny_model.config.vocab_size, rel=1e-5) and flat < found["confidence"] < sharp


# --------------------------------------------------------------------------- Table 1 as the paper defines it


def _rouge(mean_sd, n=64, q=4):
    """Scores whose every question has exactly mean m and sd s (half the samples at m - s, half at m + s)."""
    m, s = mean_sd
    row = np.r_[np.full(n // 2, m - s), np.full(n // 2, m + s)]
    return np.tile(row, (q, 1))


def _result(greedy, mean_sd) -> SampledScores:
    rouge = _rouge(mean_sd)
    q, n = rouge.shape
    return SampledScores(questions=[f"q{i}" for i in range(q)], keys=["k"] * q, greedy_answers=["a"] * q,
                         greedy_leak=np.zeros(q, dtype=np.int8), certainty=np.full(q, 0.8),
                         leak=np.zeros((q, n), dtype=np.int8), self_bleu=np.full(q, 0.5), examples=[["s"]] * q,
                         greedy_rouge=np.full(q, greedy), rouge=rouge)


def test_the_ed_score_is_the_mean_plus_rho_sd_of_each_question():
    result = _result(0.3, (0.3, 0.05))
    assert entropy.ed_score(result, 2.0) == pytest.approx(0.3 + 2 * 0.05)
    assert entropy.ed_score(result, 0.0) == pytest.approx(0.3)
    # the paper's numbers fit greedy + 2 sd: GA 0.32 + 2 x 0.05 = 0.42 against its 0.41
    for method in ("ga", "gd", "npo", "npo_eo"):
        greedy, ed, sd = entropy.PAPER_TABLE1[method]
        assert abs(greedy + 2 * sd - ed) <= 0.011, method


def _table1_row(method, kind, greedy, mean, sd, rho=2.0):
    return pd.Series({"method": method, "kind": kind, "greedy ROUGE-L": greedy, "ED mean": mean, "ED sd": sd,
                      "ED score": mean + rho * sd})


def test_table1_gaps_count_only_the_in_regime_models_of_the_papers_methods():
    rows = {"ga_mild@18": _table1_row("ga", entropy.REGIME, 0.32, 0.31, 0.05),
            "npo_mild@18": _table1_row("npo", entropy.REGIME, 0.22, 0.22, 0.01),
            "ga": _table1_row("ga", entropy.FINAL, 0.0, 0.0, 0.0),  # notebook 02's final run: shown, never counted
            "npo_mild_eo1_all@18": _table1_row("npo_eo", entropy.REGIME_EO, 0.2, 0.2, 0.0)}
    gaps = entropy.table1_gaps(pd.DataFrame(rows).T)
    assert gaps["counted"].tolist() == [True, True, False, False]
    assert gaps.loc["ga_mild@18", "ED mean - greedy"] == pytest.approx(-0.01)
    assert gaps.loc["ga_mild@18", "ED score - greedy"] == pytest.approx(0.31 + 0.1 - 0.32)
    assert gaps.loc["npo_mild@18", "ED sd"] == pytest.approx(0.01) and gaps.loc["ga", "kind"] == entropy.FINAL


# --------------------------------------------------------------------------- EO where the paper's models are


def test_regime_eo_points_add_each_weight_and_placement_to_the_in_regime_run(params):
    regime = {"npo_mild@18": ("npo_mild", 18), "rmu@21": ("rmu", 21)}
    p, points = entropy.regime_eo_points(params.replace(eo_regime_runs=["npo_mild", "gd_mild"]), regime)
    assert [pt.run for pt in points][0] == "npo_mild" and {pt.base for pt in points} == {"npo_mild"}  # gd_mild: no regime
    assert len(points) == 1 + len(params.eo_regime_lambda_f_grid) * len(params.eo_positions)
    for pt in points[1:]:
        settings, trained = pipeline.unlearning_settings(p, pt.run), pipeline.run_params(p, pt.run)
        assert settings["method"] == "npo" and settings["lambda_f"] == pt.lambda_f > 0
        assert settings["entropy_positions"] == pt.positions and settings["lambda_r"] == params.eo_lambda_r
        # the in-regime run's own schedule, with the regime step kept
        assert trained.unlearn_lr == pipeline.run_params(params, "npo_mild").unlearn_lr == 3.0e-4
        assert trained.unlearn_save_every == 18 and pt.step == 18 and pt.label == f"{pt.run}@18"
    assert {pt.positions for pt in points[1:]} == set(params.eo_positions)


def _regime_table(rows):
    """rows: (model, lambda_f, positions, sd, utility, greedy)."""
    return pd.DataFrame([{"model": m, "base": "npo_mild", "lambda_f": f, "positions": pos, "ED sd": sd, "ED score": 0.3,
                          "greedy ROUGE-L": g, "leak rate": 0.1, "certainty": 0.8, "model utility": u}
                         for m, f, pos, sd, u, g in rows]).set_index("model")


def test_collapses_in_the_regime_are_read_against_the_base_run_alone():
    alone = ("npo_mild@18", 0.0, "none", 0.10, 0.60, 0.30)
    only_ours = _regime_table([alone, ("a@18", 1.0, "answer", 0.09, 0.60, 0.30), ("l@18", 1.0, "all", 0.08, 0.60, 0.30),
                               ("s@18", 1.0, "sampled", 0.01, 0.58, 0.32)])
    assert entropy.collapses(only_ours, "base").to_dict() == {"a@18": False, "l@18": False, "s@18": True}
    # sd gone but utility lost, or the model stopped unlearning: no collapse
    broken = _regime_table([alone, ("l@18", 1.0, "all", 0.0, 0.30, 0.30), ("a@18", 1.0, "answer", 0.0, 0.6, 0.9)])
    assert not entropy.collapses(broken, "base").any()


def test_no_run_in_the_regime_leaves_eo_in_regime_untested_on_that_seed_instead_of_stopping_the_notebook():
    """Seed 3 of the study: notebook 05 put only ga_mild in the regime, none of eo_regime_runs, and notebook 06 stopped
    with pandas' "None of ['model'] are in the columns". The table is empty with its columns, and no point is read
    against a run alone on that seed."""
    table = entropy.regime_eo_table([], {}, {}, 0.01, 2.0)
    assert table.empty and table.index.name == "model" and {"ED sd", "lambda_f", "positions"} <= set(table.columns)
    assert entropy.collapses(table, "base").empty  # nothing to read against a run alone on that seed
    alone = ("npo_mild@18", 0.0, "none", 0.10, 0.60, 0.30)
    assert entropy.collapses(_regime_table([alone, ("l@18", 3.0, "all", 0.02, 0.59, 0.31)]), "base").to_dict() == {
        "l@18": True}


def test_table1_takes_only_the_runs_notebook_05_put_in_the_regime(monkeypatch):
    """A run whose greedy leak rate never came down to the retain model's is reported by notebook 05 with its lowest
    step (``reached`` false): it is not in the paper's regime, so Table 1 must not count it (it did: gd_mild@35)."""
    regime = {"npo_mild@32": {"run": "npo_mild", "step": 32, "reached": True},
              "gd_mild@35": {"run": "gd_mild", "step": 35, "reached": False}}
    monkeypatch.setattr(entropy.runs, "read_metrics", lambda params, notebook: {"meta": {"regime": regime}})
    assert entropy.regime_of_leakage(config.Params.load("smoke")) == {"npo_mild@32": ("npo_mild", 32)}


def test_a_final_run_is_collapsed_only_when_it_answers_nothing_and_lost_utility():
    """Notebook 06 labels notebook 02's final runs by its own numbers: GA-like (ROUGE-L 0, utility gone) is collapsed;
    NPO-like (ROUGE-L 0.145, utility 0.774 of the target's 0.8) is not, nor is a run at ROUGE-L 0 that kept utility."""
    assert entropy.collapsed(0.0, 0.05, 0.8) is True
    assert entropy.collapsed(0.145, 0.774, 0.8) is False
    assert entropy.collapsed(0.0, 0.75, 0.8) is False  # utility kept (at least 90 % of the target's)
    assert entropy.collapsed(0.2, 0.05, 0.8) is False  # utility lost but still answering
    assert entropy.collapsed(0.0, None, 0.8) is None


def test_the_fig3_fallback_gives_the_rates_the_notebook_states():
    class Scores:
        def __init__(self, leak):
            self.greedy_leak = np.array([leak, leak])
            self.rouge = np.zeros((2, 4))

    results = {"a@5": Scores(0.0), "b@7": Scores(0.5), "npo": Scores(0.1), "npo_eo": Scores(0.0)}
    table = pd.DataFrame({"kind": [entropy.REGIME, entropy.REGIME]}, index=["a@5", "b@7"])
    models, rates = entropy.fig3_models(table, results, "npo", "npo_eo")
    assert list(models) == ["npo (alone)", "npo_eo (EO)"]
    assert rates == {"a@5": 0.0, "b@7": 0.5}
    results["b@7"] = Scores(0.0)
    models, rates = entropy.fig3_models(table, results, "npo", "npo_eo")
    assert len(models) == 2 and rates is None and "npo (alone)" not in models


def test_per_item_keeps_every_question_of_every_model():
    from unlearnkit.metrics.sampling import SampledScores

    leak = np.array([[0, 1, 0, 0], [0, 0, 0, 0]])
    scores = SampledScores(questions=["q1", "q2"], keys=["a", "b"], greedy_answers=["x", "y"],
                           greedy_leak=np.array([0, 0]), certainty=np.array([0.9, 0.5]), leak=leak,
                           self_bleu=np.array([0.2, 0.3]), examples=[["s1", "s2"], ["s3", "s4"]],
                           greedy_rouge=np.array([0.1, 0.0]), rouge=np.array([[0.1, 0.9, 0.1, 0.1], [0.0] * 4]))
    item = entropy.per_item({"npo": scores}, 0.01)["npo"]
    assert item["leak_rate"] == [0.25, 0.0] and item["samples"] == [["s1", "s2"], ["s3", "s4"]]
    assert item["rouge_sd"][1] == 0.0 and abs(item["rouge_mean"][0] - 0.3) < 1e-12
    assert item["M_bin"][1] == pytest.approx(1 - 0.01 ** (1 / 4))  # no leak in 4 samples: the Clopper-Pearson floor
    assert json.loads(json.dumps(item)) == item


def test_curve_bounds_give_each_curve_models_mean_m_gen_and_sd():
    results = {"npo": _scores([1, 1], [20, 10], [0.5, 0.5]), "npo_eo": _scores([0, 0], [0, 0], [0.99, 0.99])}
    found = entropy.curve_bounds(results, ALPHA, 0.5)
    assert found.index.tolist() == ["npo", "npo_eo"] and found.index.name == "model"
    # no sample above 0.5: M_gen sits at its floor, the one-sided DKW epsilon of 64 samples
    assert found.loc["npo_eo", "M_gen"] == pytest.approx(np.sqrt(np.log(1 / ALPHA) / (2 * 64)))
    assert found.loc["npo", "M_gen"] > found.loc["npo_eo", "M_gen"]
    assert found.loc["npo_eo", "ED sd"] == pytest.approx(0.0, abs=1e-12)
