"""The alignment study's split, bounds and verdict (notebook 07), on made-up scores: no model is trained here."""

from __future__ import annotations

import numpy as np
import pytest
from unlearnkit import config
from unlearnkit.data import behaviours
from unlearnkit.studies import alignment


@pytest.fixture(scope="module")
def requests():
    return behaviours.synthetic_behaviours(seed=0)


def test_the_split_keeps_evaluation_requests_out_of_alignment(requests):
    params = config.Params.load("default")
    split = alignment.split_behaviours(requests, params)
    aligned_goals = {r["goal"] for r in split.aligned}
    assert aligned_goals.isdisjoint(r["goal"] for r in split.evaluation)
    assert not {r["category"] for r in split.aligned} & set(params.alignment_heldout_categories)
    # the last template of each category is never aligned on; the first entities of every template never either
    assert all(r["template_index"] < 3 and r["entity_index"] >= params.alignment_eval_per_group for r in split.aligned)
    groups = {g: [r for r in split.evaluation if r["group"] == g] for g in alignment.GROUPS}
    assert len(groups["seen"]) == 8 * 3 * 3 and len(groups["held-out template"]) == 8 * 1 * 3
    assert len(groups["held-out category"]) == 2 * 4 * 3
    assert all(r["category"] in params.alignment_heldout_categories for r in groups["held-out category"])
    assert all(r["template_index"] == 3 for r in groups["held-out template"])


def test_jbb_rows_without_templates_split_by_position_in_category():
    rows = [{"goal": f"g{c}{i}", "target": "Sure, here is x", "behavior": "b", "category": cat, "template": None,
             "template_index": None, "entity": None, "entity_index": None}
            for c, cat in enumerate(behaviours.CATEGORIES) for i in range(10)]
    params = config.Params.load("default", alignment_eval_per_group=3)
    split = alignment.split_behaviours(rows, params)
    assert len(split.evaluation) == 30 and len(split.aligned) == 8 * 7
    assert {r["group"] for r in split.evaluation} == {"seen", "held-out category"}


def test_an_unknown_heldout_category_is_refused_by_name(requests):
    params = config.Params.load("default", alignment_heldout_categories=["Privacy", "Astrology"])
    with pytest.raises(ValueError, match="Astrology"):
        alignment.split_behaviours(requests, params)


def _scored(complied, greedy_complied, certainty, h=None):
    complied = np.asarray(complied, dtype=float)
    h = complied * 0.9 if h is None else np.asarray(h, dtype=float)
    greedy_complied = np.asarray(greedy_complied, dtype=float)
    return alignment.Scored(h, greedy_complied * 0.9, complied, greedy_complied, np.zeros_like(h),
                            1.0 - greedy_complied, np.asarray(certainty, dtype=float))


def _rows(count, group="seen"):
    return [{"goal": f"g{i}", "category": "Privacy", "group": group} for i in range(count)]


def test_a_request_greedy_refuses_but_one_sample_complies_is_risky_unless_adaptive_goes_greedy():
    n, alpha = 64, 0.01
    complied = np.zeros((3, n))
    complied[0, 5] = 1  # one complying sample among 64
    complied[2, 7] = 1  # one complying sample, but the model is certain of its (safe) greedy answer
    scored = _scored(complied, greedy_complied=[0, 0, 0], certainty=[0.5, 0.5, 0.95])
    table = alignment.behaviour_table(_rows(3), scored, alpha, threshold=0.5, adaptive_threshold=0.9)
    floor = alignment.binary_floor(n, alpha)
    assert floor == pytest.approx(1 - alpha ** (1 / n))
    assert table["M_bin"][0] > floor and table["M_bin"][1] == pytest.approx(floor)
    assert table["M_bin_lower"][0] > 0 and table["M_bin_lower"][1] == 0
    assert table["M_bin_adaptive"][2] == pytest.approx(floor) and table["M_bin"][2] > floor
    summary = alignment.strength_summary({"aligned ×2": table}, n, alpha)
    row = summary[summary["group"] == "all"].iloc[0]
    assert row["strength"] == 2 and row["greedy_safe_share"] == 1.0 and row["greedy_refused_share"] == 1.0
    assert row["risky_when_greedy_safe"] == pytest.approx(2 / 3)
    assert row["risky_adaptive_when_greedy_safe"] == pytest.approx(1 / 3)


def test_the_summary_separates_the_models_greedy_calls_safe_and_their_sampled_risk():
    n, alpha = 16, 0.01
    complying = alignment.behaviour_table(_rows(2), _scored(np.ones((2, n)), [1, 1], [0.5, 0.5]), alpha, 0.5, 0.9)
    risky = np.zeros((2, n))
    risky[0, 0] = 1.0
    aligned = alignment.behaviour_table(_rows(2), _scored(risky, [0.0, 0.0], [0.5, 0.5]), alpha, 0.5, 0.9)
    clean = alignment.behaviour_table(_rows(2), _scored(np.zeros((2, n)), [0.0, 0.0], [0.5, 0.5]), alpha, 0.5, 0.9)
    summary = alignment.strength_summary({"complying": complying, "aligned ×1": aligned, "aligned ×8": clean}, n,
                                         alpha)
    every = summary[summary["group"] == "all"].set_index("model")
    assert every["greedy_safe_share"].tolist() == [0.0, 1.0, 1.0]
    assert every.loc["aligned ×1", "risky_when_greedy_safe"] == pytest.approx(0.5)
    assert every.loc["aligned ×8", "risky_when_greedy_safe"] == 0.0 and np.isnan(every.loc["complying",
                                                                                             "risky_when_greedy_safe"])


def test_adaptive_temperature_replaces_only_certain_requests_by_their_greedy_answer():
    complied = np.array([[0.0, 1.0], [1.0, 0.0]])
    scored = _scored(complied, greedy_complied=[0, 1], certainty=[0.95, 0.5])
    assert np.array_equal(alignment.adaptive_complied(scored, 0.9), np.array([[0.0, 0.0], [1.0, 0.0]]))


def test_the_jbb_file_splits_by_category_and_its_judge_reads_held_out_categories():
    from conftest import SHARED_DATA, skip_unless

    path = SHARED_DATA / "jbb" / "harmful-behaviors.csv"
    skip_unless(path.exists(), "JailbreakBench's JBB-Behaviors CSV is not in ../shared/data/jbb (CI has it)",
                "tests/test_alignment_study.py::test_jbb_rows_without_templates_split_by_position_in_category")
    params = config.Params.load("default")
    split = alignment.split_behaviours(behaviours.load_behaviours(str(path), seed=0), params)
    assert len(split.evaluation) == 10 * params.alignment_eval_per_group
    assert {r["group"] for r in split.evaluation} == {"seen", "held-out category"}
    judge = alignment.fit_judge(params, split)
    assert judge.n_heldout == 2 * params.alignment_eval_per_group and judge.heldout_accuracy >= 0.9
