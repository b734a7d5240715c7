"""Notebook 09's station (#57): the P/N pool's plan and data (pipeline.pool) and the meta-evaluation of metrics
(studies.trust) on hand-made pools and on seed 0's committed notebook-08 results."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from unlearnkit import config, pipeline
from unlearnkit import seedstudy as seed_study
from unlearnkit.metrics import meta_eval
from unlearnkit.runs.committed import results_dir
from unlearnkit.studies import trust


def test_the_default_pool_has_8_models_a_side_and_smoke_and_paper_dry_2():
    for profile, per_side in (("default", 8), ("smoke", 2), ("paper-dry", 2)):
        plan = pipeline.pool_plan(config.Params.load(profile))
        assert [m.side for m in plan].count("P") == per_side == [m.side for m in plan].count("N"), profile
        assert len({m.name for m in plan}) == len(plan)
    default = pipeline.pool_plan(config.Params.load("default"))
    assert {(m.variant, m.side) for m in default} == {("forget", "P"), ("paraphrased", "P"), ("perturbed", "N"),
                                                       ("heldout", "N")}
    assert {m.lr for m in default} == {0.001, 0.003} and {m.epochs for m in default} == {1, 2}


def test_a_pool_with_one_side_empty_is_refused_before_any_training():
    params = config.Params.load("smoke")
    with pytest.raises(ValueError, match=r"no variant on side N \(perturbed, heldout\)"):
        pipeline.pool_plan(params.replace(pool_variants=["forget", "paraphrased"]))
    with pytest.raises(ValueError, match="must be a non-empty list of values one of forget"):
        params.replace(pool_variants=["forget", "other"])


class _Source:
    """A corpus with two forget items and four holdout items."""

    def load(self, split):
        forget = [{"question": f"q{i}", "answer": f"a{i}", "paraphrased_answer": f"p{i}",
                   "perturbed_answer": [f"w{i}{j}" for j in range(3)]} for i in range(2)]
        return {"forget10": [{"question": r["question"], "answer": r["answer"]} for r in forget],
                "forget10_perturbed": forget,
                "holdout10": [{"question": f"h{i}", "answer": f"b{i}"} for i in range(4)]}[split]


def test_each_variant_trains_on_its_own_rows_and_the_mia_reference_is_never_trained_on():
    params, source = config.Params.load("smoke"), _Source()
    rows = {v: pipeline.pool_rows(params, v, source) for v in pipeline.POOL_SIDES}
    assert rows["forget"] == [{"question": "q0", "answer": "a0"}, {"question": "q1", "answer": "a1"}]
    assert [r["answer"] for r in rows["paraphrased"]] == ["p0", "p1"]
    assert [r["answer"] for r in rows["perturbed"]] == ["w00", "w11"]  # one wrong answer each, in turn
    scored, trained = pipeline.holdout_halves(params, source)
    assert [r["question"] for r in rows["heldout"]] == ["h1", "h3"] == [r["question"] for r in trained]
    assert {r["question"] for r in scored} == {"h0", "h2"}  # the reference set of every pool's MIA AUC
    with pytest.raises(ValueError, match="unknown pool variant 'other'"):
        pipeline.pool_rows(params, "other", source)


def test_faithfulness_reads_each_metric_in_its_own_direction():
    metrics = list(trust.POOL_METRICS)
    p = {m: [0.9, 0.8] for m in metrics} | {"truth_ratio": [0.2, 0.3]}  # TOFU's R: lower means the model knows
    n = {m: [0.1, 0.2] for m in metrics} | {"truth_ratio": [2.0, 3.0]}
    pool = pd.DataFrame([{"side": "P", **{m: p[m][i] for m in metrics}} for i in range(2)]
                        + [{"side": "N", **{m: n[m][i] for m in metrics}} for i in range(2)])
    assert (trust.faithfulness(pool) == 1.0).all()
    pool.loc[pool["side"] == "P", "rouge"] = [0.1, 0.05]  # against N's 0.1, 0.2: one tie, three losses
    assert trust.faithfulness(pool)["rouge"] == pytest.approx((0.5 + 0 + 0 + 0) / 4)


def _stored_08():
    return json.loads((results_dir("default", 0) / "08_robustness" / "metrics.json").read_text(encoding="utf-8"))


def test_robustness_of_seed_0s_committed_notebook_08_results_by_hand():
    stored = _stored_08()
    params = config.Params.load("default")
    table = trust.robustness(params, stored)
    unlearned = [k for k in stored if k not in ("meta", "target", "retain90")]
    # every score 08 stored for every model, in attacks.SCORES' order (truth_ratio_ou only in results made since it)
    assert list(table.index) == trust.stored_scores(stored, [*unlearned, "retain90"])
    assert {"rouge", "probability", "truth_ratio", "extraction_strength", "mink_auc"} <= set(table.index)
    assert set(table["models"]) == {len(unlearned)}
    # symmetric R of forget ROUGE-L, by hand: 1 - |du - dr| / (|du| + |dr|), mean over the models
    dr = stored["retain90"]["relearned"]["rouge"] - stored["retain90"]["forget"]["rouge"]
    by_hand = []
    for u in unlearned:
        du = stored[u]["relearned"]["rouge"] - stored[u]["forget"]["rouge"]
        if abs(du) + abs(dr) >= 1e-6:
            by_hand.append(1 - abs(du - dr) / (abs(du) + abs(dr)))
    assert table.loc["rouge", "R symmetric"] == pytest.approx(np.mean(by_hand))
    # CE-U's forget ROUGE is 0 before and after NF4: left out of symmetric Q (no value is made up for it)
    assert stored["ceu"]["forget"]["rouge"] == 0 == stored["ceu"]["quantised nf4"]["rouge"]
    assert table.loc["rouge", "Q left out symmetric"] >= 1
    for variant in meta_eval.VARIANTS:
        r, q = table[f"R {variant}"], table[f"Q {variant}"]
        assert ((r >= 0) & (r <= 1) & (q >= 0) & (q <= 1)).all()
        assert table[f"robustness {variant}"].to_numpy() == pytest.approx(meta_eval.harmonic_mean(r, q))


def test_the_table_joins_faithfulness_and_robustness_and_leaves_unstored_metrics_empty():
    params = config.Params.load("default")
    robust = trust.robustness(params, _stored_08())
    faithful = pd.Series({m: 0.8 for m in trust.POOL_METRICS}, name="faithfulness")
    table = trust.trust_table(faithful, robust)
    assert table.loc["rouge", "overall symmetric"] == pytest.approx(
        meta_eval.harmonic_mean(0.8, robust.loc["rouge", "robustness symmetric"]))
    assert np.isnan(table.loc["para_rouge", "overall one_directional"])  # 08 stores no paraphrased ROUGE


def test_a_notebook_08_without_a_4_bit_scheme_is_refused_in_one_line():
    stored = {"retain90": {"forget": {}, "quantised int8": {}}, "meta": {}}
    with pytest.raises(ValueError, match=r"no 4-bit scheme \(nf4 or int4\)"):
        trust.quantisation_scheme(stored)
    assert trust.quantisation_scheme(_stored_08()) == "nf4"


def _seed_table(values: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({q: values for q in trust.OVER_SEEDS})


def test_the_meta_evaluation_over_seeds_by_hand():
    """Two seeds, three metrics with every quantity equal: the mean and the t-interval (t(0.975, 1) = 12.706) cut to
    [0, 1], each seed's ranking by overall symmetric, and W = 1 when both seeds rank alike."""
    tables = {0: _seed_table({"probability": 0.9, "rouge": 0.5, "truth_ratio": 0.7}),
              1: _seed_table({"probability": 0.8, "rouge": 0.4, "truth_ratio": 0.6})}
    over = seed_study.metric_trust(tables)
    assert over["seeds"] == [0, 1] and [r["metric"] for r in over["metrics"]] == ["probability", "rouge", "truth_ratio"]
    prob = over["metrics"][0]
    half = 12.706 * np.std([0.9, 0.8], ddof=1) / np.sqrt(2)
    assert prob["faithfulness"]["mean"] == pytest.approx(0.85)
    assert prob["faithfulness"]["low"] == pytest.approx(0.85 - half, abs=1e-3) and prob["faithfulness"]["high"] == 1.0
    assert [r["rank"]["mean"] for r in over["metrics"]] == [1.0, 3.0, 2.0]
    assert over["kendall_w"] == pytest.approx(1.0) and over["ranked_on_every_seed"] == ["probability", "rouge",
                                                                                       "truth_ratio"]
    # seeds that disagree lower W; a metric measured on one seed only is not ranked on every seed
    tables[1] = _seed_table({"probability": 0.4, "rouge": 0.5, "truth_ratio": 0.9})
    assert seed_study.metric_trust(tables)["kendall_w"] < 1
    assert seed_study.metric_trust({})["seeds"] == []


def test_the_published_table_reads_as_the_issue_quotes_it():
    """docs/published-meta-eval.json under the workbook's names: extraction strength faithfulness 0.891, symmetric
    robustness 0.859 and overall 0.875; the truth ratio's R 0.234; paraphrased ROUGE overall about 0.21."""
    pub = trust.published()
    es = pub["symmetric"]["extraction_strength"]
    assert es["faithfulness"] == 0.891 and es["robustness"] == pytest.approx(0.859, abs=1e-3)
    assert es["overall"] == pytest.approx(0.875, abs=1e-3)
    assert pub["symmetric"]["truth_ratio_ou"]["R"] == pytest.approx(0.234, abs=1e-3)
    assert pub["symmetric"]["para_rouge"]["overall"] == pytest.approx(0.21, abs=0.01)
    assert pub["one_directional"]["extraction_strength"]["R"] == pytest.approx(0.6624)
    assert set(pub["symmetric"]) <= set(trust.POOL_METRICS)


def test_results_md_shows_the_meta_evaluation_only_where_a_seed_ran_notebook_09():
    from unlearnkit.report import readme

    assert readme.trust_section({"seeds": [], "note": "none"}) == []
    over = seed_study.metric_trust({0: _seed_table({"probability": 0.9, "rouge": float("nan")})})
    lines = readme.trust_section(over)
    rows = [line for line in lines if line.startswith("| probability") or line.startswith("| rouge")]
    assert rows[0].startswith("| probability | 0.90 (1 seed)") and "0.82, 0.79" in rows[0]
    assert rows[1].count("not measured") == len(trust.OVER_SEEDS) and "not ranked" in rows[1]
    assert any(readme.TRUST in line for line in lines) and any(readme.LEAK_AT_K in line for line in lines)


def test_the_readme_links_the_meta_evaluation_in_one_line_once_a_seed_ran_notebook_09():
    from unlearnkit import paths
    from unlearnkit.report import readme

    summary = json.loads(paths.SUMMARY.read_text(encoding="utf-8"))
    study = dict(summary.get("seed_study") or {})
    without = {**summary, "seed_study": {**study, "metric_trust": {"seeds": [], "note": "none"}}}
    over = seed_study.metric_trust({0: _seed_table({"probability": 0.9})})
    with_trust = {**summary, "seed_study": {**study, "metric_trust": over}}
    links = lambda s: [line for line in s.splitlines() if readme.TRUST_ANCHOR in line]  # noqa: E731
    assert links(readme.readme_section(without)) == [] and len(links(readme.readme_section(with_trust))) == 1
