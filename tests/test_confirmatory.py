"""Two verdicts per claim and the power of six new seeds (#58 items 1, 3, 4): the exploratory seeds (frozen with the
registry) and the confirmatory ones are judged apart by the one rule; the headline is the confirmatory verdict where
the claim is as frozen; the power of a confirmatory set comes from the exploratory seeds' outcome shares; a missing
frozen registry stops aggregate in one line."""

from __future__ import annotations

import itertools
import math

import pytest
from scipy.stats import multinomial
from unlearnkit.claims import freeze, judge, summary
from unlearnkit.claims.judge import CONSISTENT, INCONCLUSIVE, INCONSISTENT, NOT_TESTABLE, SeedResult
from unlearnkit.runner import main


def test_the_fewest_decisive_seeds_follow_the_clopper_pearson_bound():
    assert [judge.smallest_decisive(n) for n in range(1, 13)] == [None, None, None, None, 5, 6, 7, 7, 8, 9, 9, 10]


@pytest.mark.parametrize("shares", [
    {CONSISTENT: 0.7, INCONSISTENT: 0.1, INCONCLUSIVE: 0.1, NOT_TESTABLE: 0.1},
    {CONSISTENT: 0.2, INCONSISTENT: 0.6, INCONCLUSIVE: 0.2, NOT_TESTABLE: 0.0},
    {CONSISTENT: 0.5, INCONSISTENT: 0.0, INCONCLUSIVE: 0.0, NOT_TESTABLE: 0.5},
])
def test_the_probability_of_each_verdict_is_the_multinomial_sum_over_the_rules_outcomes(shares):
    """By brute force over every tally of 6 seeds, through verdict_of itself."""
    seeds, order = 6, (CONSISTENT, INCONSISTENT, INCONCLUSIVE, NOT_TESTABLE)
    p = [shares[o] for o in order]
    want = {judge.REPRODUCED: 0.0, judge.CONTRADICTED: 0.0}
    for tally in itertools.product(range(seeds + 1), repeat=4):
        if sum(tally) != seeds:
            continue
        verdict = judge.verdict_of([o for o, k in zip(order, tally) for _ in range(k)])
        if verdict in want:
            want[verdict] += float(multinomial.pmf(tally, seeds, p))
    got = judge.decide_probabilities(shares, seeds)
    assert got == pytest.approx((want[judge.REPRODUCED], want[judge.CONTRADICTED]), abs=1e-12)


def _seeds(outcomes, start=0):
    return [SeedResult(start + i, 0.3 if o == CONSISTENT else -0.3 if o == INCONSISTENT else 0.0, o)
            for i, o in enumerate(outcomes)]


def test_power_says_when_six_seeds_cannot_decide_and_how_many_would():
    sure = judge.power(_seeds([CONSISTENT] * 6))
    assert sure.decidable and sure.reproduce == 1.0 and sure.words().startswith("reproduces on 6 new seeds")
    five = judge.power(_seeds([CONSISTENT] * 5 + [INCONCLUSIVE]))
    assert not five.decidable and 0.3 < five.reproduce < 0.4  # (5/6)**6 + the not-testable-free tallies
    assert five.reproduce == pytest.approx((5 / 6) ** 6 + 0.0, abs=1e-12)
    assert five.seeds_needed is not None and five.seeds_needed > 6
    assert max(judge.decide_probabilities(five.shares, five.seeds_needed)) >= judge.POWER_TARGET
    assert max(judge.decide_probabilities(five.shares, five.seeds_needed - 1)) < judge.POWER_TARGET
    assert "cannot be decided on 6 seeds" in five.words() and f"need {five.seeds_needed}" in five.words()
    lost = judge.power(_seeds([CONSISTENT] * 3 + [INCONCLUSIVE] * 3))
    assert lost.seeds_needed is None and "no number of seeds" in lost.words()
    against = judge.power(_seeds([INCONSISTENT] * 6))
    assert against.contradict == 1.0 and against.words().startswith("is contradicted")
    lo, hi = five.share_intervals[CONSISTENT]
    assert lo < 5 / 6 <= hi and five.decide_interval[0] <= five.reproduce <= five.decide_interval[1]


class _Claim:
    def __init__(self, cid, side="above", null=0.0):
        self.id, self.side, self.null = cid, side, null


class _Registry:
    def __init__(self, *ids):
        self.claims = [_Claim(i) for i in ids]


def _verdict(cid, outcomes):
    return judge.judge(cid, _seeds(outcomes), "above", 0.0)


def test_the_headline_is_the_confirmatory_verdict_and_a_moved_claim_keeps_the_exploratory_one():
    reg = _Registry("a.holds", "b.flips", "c.moved", "d.explored")
    claims = [_verdict("a.holds", [CONSISTENT] * 12),
              _verdict("b.flips", [CONSISTENT] * 6 + [INCONCLUSIVE] * 6),
              _verdict("c.moved", [CONSISTENT] * 12),
              judge.judge("d.explored", _seeds([INCONSISTENT] * 6), "above", 0.0)]
    headlines, sets = summary.two_sets(reg, claims, range(6), {"c.moved": "its registry entry changed after the freeze"})
    by_id = {v.claim: v for v in headlines}
    assert by_id["a.holds"].verdict == judge.REPRODUCED and sets["a.holds"]["judged_on"] == "confirmatory"
    assert sets["a.holds"]["confirmatory"]["seeds"] == list(range(6, 12)) and len(by_id["a.holds"].per_seed) == 12
    assert by_id["b.flips"].verdict == judge.INCONCLUSIVE_VERDICT
    assert sets["b.flips"]["exploratory"]["verdict"] == judge.REPRODUCED
    assert sets["b.flips"]["pooled"]["mean"] == pytest.approx(0.15)
    assert sets["c.moved"]["confirmatory"] is None and sets["c.moved"]["judged_on"] == "exploratory"
    assert by_id["c.moved"].verdict == judge.REPRODUCED and "changed after the freeze" in sets["c.moved"]["moved"]
    assert sets["d.explored"]["confirmatory"] is None and "pooled" not in sets["d.explored"]
    assert sets["d.explored"]["power"]["contradict"] == 1.0


def test_the_story_names_a_claim_whose_verdict_changes_between_the_sets():
    from unlearnkit.report import readme

    reg = _Registry("b.flips")
    headlines, sets = summary.two_sets(reg, [_verdict("b.flips", [CONSISTENT] * 6 + [INCONCLUSIVE] * 6)], range(6))
    rows = [{**v.as_dict(), "id": v.claim, "kind": "finding", "paper": "P", "sets": sets[v.claim]}
            for v in headlines]
    text = "\n".join(readme.story({"profile": "default", "seeds": list(range(12)), "claims": rows,
                                   "claims_counts": {"inconclusive": 1},
                                   "claims_counts_exploratory": {"reproduced": 1},
                                   "sets": {"exploratory": list(range(6)), "confirmatory": list(range(6, 12))}}))
    assert "confirmatory training seeds 6, 7, 8, 9, 10, 11" in text and "on the exploratory seeds: 1 reproduced" in text
    assert "Changed verdict between the two sets**: b.flips (reproduced, +0.3" in text and "inconclusive, +0" in text


def test_aggregate_refuses_a_missing_frozen_registry_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(freeze, "FROZEN", tmp_path / "claims.frozen.json")
    with pytest.raises(SystemExit) as stop:
        main(["aggregate", "--profile", "default"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is missing" in err[0]


def test_the_committed_registry_gives_every_judged_claim_a_power():
    """docs/findings.json: every claim row carries its two sets and the power of six new seeds from seeds 0-5."""
    import json

    from unlearnkit import paths

    data = json.loads(paths.SUMMARY.read_text())
    assert data["sets"]["exploratory"] == freeze.read()["seeds"]
    for row in data["claims"]:
        power = row["sets"]["power"]
        assert power["from_seeds"] == data["sets"]["exploratory"] and power["seeds"] == summary.CONFIRMATORY_SEEDS
        assert math.isclose(sum(power["shares"].values()), 1.0)
        assert power["decidable"] == (max(power["reproduce"], power["contradict"]) >= judge.POWER_TARGET)


def test_flips_count_method_pairs_whose_order_changes_with_the_seed():
    import pandas as pd
    from unlearnkit import seedstudy as seed_study

    rows = []
    for seed, (a, b, c) in enumerate([(3, 2, 1), (3, 1, 2), (3, 2, 1)]):  # b and c swap on seed 1
        for method, value in zip("abc", (a, b, c)):
            rows.append({"seed": seed, "method": method, "forget quality": 10.0 ** -value, "model utility": value,
                         "privleak": 0.0, "forget ROUGE-L": 0.1})
    out = seed_study.flips(pd.DataFrame(rows)).set_index("metric")
    utility = out.loc["model utility"]
    assert utility["method pairs"] == 3 and utility["pairs that flip"] == 1
    assert utility["share of seed pairs ordering a method pair oppositely"] == pytest.approx(2 / 9)
    assert out.loc["privleak", "method pairs"] == 0  # every comparison tied


def test_the_margins_show_each_set_apart_and_one_confirmatory_seed_gives_a_mean_without_an_interval():
    """With confirmatory seeds, each set's mean margin is drawn apart (its own interval, none for one seed: notebook
    10 failed on `mean - None` when seed 6 was the only confirmatory seed); without them the figure is as before."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from test_seed_study import _claim_row
    from unlearnkit.claims import render as claim_render
    from unlearnkit.plots import seeds as seed_plots

    row = _claim_row("x.claim", [0.3, 0.2, 0.4, 0.1], ["consistent"] * 4, side="below", null=0.5)
    [alone] = claim_render.margins([row])
    assert "sets" not in alone
    row["sets"] = {"exploratory": {"seeds": [0, 1, 2], "mean": 0.3, "low": 0.1, "high": 0.45},
                   "confirmatory": {"seeds": [3], "mean": 0.1, "low": None, "high": None}}
    row.update(mean=0.1, low=None, high=None)  # the headline: the confirmatory set's, one seed
    [drawn] = claim_render.margins([row])
    explored, confirmed = drawn["sets"]
    assert explored["name"] == "exploratory" and explored["seeds"] == [0, 1, 2]
    assert (explored["low"], explored["mean"], explored["high"]) == pytest.approx((0.05, 0.2, 0.4))  # below: flipped
    assert confirmed["mean"] == pytest.approx(0.4) and confirmed["low"] is None and confirmed["high"] is None
    fig = seed_plots.margins_per_seed([drawn])
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["0", "1", "2", "3", "expl.", "conf."]
    plt.close("all")


def test_the_first_registration_is_set_against_the_exploratory_verdict_not_the_confirmatory_one():
    from unlearnkit.claims import render as claim_render

    seeds = [{"seed": s, "effect": 1.0, "outcome": CONSISTENT} for s in range(7)]
    row = {"id": "x.claim", "verdict": INCONCLUSIVE, "lean": "none", "effect": {"no_effect": 0, "side": "above",
           "quantity": "q"}, "minimal_effect": {"value": 0.1}, "per_seed": seeds,
           "sets": {"exploratory": {"seeds": list(range(6)), "verdict": "reproduced", "lean": "with"},
                    "confirmatory": {"seeds": [6], "verdict": INCONCLUSIVE, "lean": "none"}}}
    then = {**row, "verdict": "reproduced", "per_seed": seeds[:6]}
    table = claim_render.v1_to_v2({"claims": [then]}, {"claims": [row]})
    assert "| x.claim | reproduced | **reproduced** | with | unchanged |" in table
