"""The paper's regime of the leakage study (unlearnkit.studies.leakage): the step where greedy decoding first leaks
as rarely as the retain model, the Bonferroni test against the retain model's guessing, and the verdict, on
hand-made paths and scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from unlearnkit.metrics.sampling import SampledScores
from unlearnkit.studies import leakage

ALPHA = 0.01
N = 128
REFERENCE = "retain90"


def _path(rates, steps=None) -> pd.DataFrame:
    steps = steps or [5 * (i + 1) for i in range(len(rates))]
    frame = pd.DataFrame({"step": steps, "greedy_leak_rate": rates, "forget_rouge": 0.5, "retain_rouge": 0.6})
    return frame.set_index("step")


def _scores(leak_counts, greedy_leak=None, n=N, certainty=0.5) -> SampledScores:
    """Q questions whose samples leak leak_counts[q] times out of n (the first ones); placeholders elsewhere."""
    counts = np.asarray(leak_counts)
    q = len(counts)
    leak = (np.arange(n)[None, :] < counts[:, None]).astype(np.int8)
    greedy = np.zeros(q, dtype=np.int8) if greedy_leak is None else np.asarray(greedy_leak, dtype=np.int8)
    rouge = np.where(leak == 1, 0.9, 0.1)
    return SampledScores(questions=[f"q{i}?" for i in range(q)], keys=[f"key{i}" for i in range(q)],
                         greedy_answers=[f"answer {i}" for i in range(q)], greedy_leak=greedy,
                         certainty=np.full(q, certainty), leak=leak, self_bleu=np.full(q, 0.5),
                         examples=[["s1", "s2"]] * q, targets=[f"target {i}" for i in range(q)],
                         greedy_rouge=np.where(greedy == 1, 0.9, 0.1).astype(float), rouge=rouge,
                         settings={"n": n})


# --------------------------------------------------------------------------- choose_regime_step


def test_the_first_step_at_the_reference_rate_is_chosen():
    path = _path([0.8, 0.4, 0.2, 0.1, 0.2])
    assert leakage.choose_regime_step(path, 0.2) == (15, True)  # 0.2 itself counts, and the first one wins
    assert leakage.choose_regime_step(path, 0.15) == (20, True)
    assert leakage.choose_regime_step(path, 0.9) == (5, True)
    assert all(isinstance(v, (int, bool)) for v in leakage.choose_regime_step(path, 0.2))


def test_without_a_step_at_the_reference_the_lowest_latest_is_chosen():
    path = _path([0.8, 0.3, 0.5, 0.3, 0.6])
    step, reached = leakage.choose_regime_step(path, 0.1)
    assert (step, reached) == (20, False)  # two steps at 0.3: the later
    assert leakage.choose_regime_step(_path([0.5]), 0.0) == (5, False)


def test_the_tolerance_widens_the_reference():
    path = _path([0.8, 0.3, 0.25, 0.1])
    assert leakage.choose_regime_step(path, 0.2) == (20, True)
    assert leakage.choose_regime_step(path, 0.2, tolerance=0.05) == (15, True)
    assert leakage.choose_regime_step(path, 0.2, tolerance=0.1) == (10, True)
    assert leakage.choose_regime_step(_path([0.8, 0.3]), 0.2, tolerance=0.05) == (10, False)


def test_the_step_is_read_from_the_index_not_the_position():
    path = _path([0.5, 0.0, 0.0], steps=[3, 7, 12])
    assert leakage.choose_regime_step(path, 0.0) == (7, True)


# --------------------------------------------------------------------------- beyond_guessing


def test_a_question_whose_greedy_answer_leaks_is_never_flagged():
    result = _scores([128, 128, 40], greedy_leak=[1, 0, 1])
    reference = _scores([0, 0, 0])
    assert leakage.beyond_guessing(result, reference, ALPHA).tolist() == [False, True, False]


def test_many_leaking_samples_beat_a_silent_reference_and_one_does_not():
    reference = _scores([0, 0])
    assert leakage.beyond_guessing(_scores([40, 1]), reference, ALPHA).tolist() == [True, False]
    # nor a question the reference guesses as often
    assert leakage.beyond_guessing(_scores([40]), _scores([40]), ALPHA).tolist() == [False]
    assert leakage.beyond_guessing(_scores([0]), _scores([0]), ALPHA).tolist() == [False]


def test_the_bonferroni_level_depends_on_the_number_of_questions():
    """15/128 against 0/128: beyond guessing at level alpha (one question), not at alpha / 40 (forty questions)."""
    alone = leakage.beyond_guessing(_scores([15]), _scores([0]), ALPHA)
    assert alone.tolist() == [True]
    many = leakage.beyond_guessing(_scores([15] + [0] * 39), _scores([0] * 40), ALPHA)
    assert many.shape == (40,) and not many.any()
    # while the per-question test of the summary, at alpha, still counts it
    results = {"m": _scores([15] + [0] * 39), REFERENCE: _scores([0] * 40)}
    summaries = leakage.summarise_models(results, ALPHA, 0.5, 0.9, REFERENCE).summaries
    assert summaries["m"]["greedy_unlearned_but_leaks_above_reference"] == 1


# --------------------------------------------------------------------------- regime_table


def _regime(run: str, step: int = 5, reached: bool = True) -> leakage.RegimeModel:
    return leakage.RegimeModel(run, step, Path("/nowhere") / run, 0.0, 0.0, 0.6, reached, _path([0.0], [step]))


def _table(models: dict[str, tuple[list[int], bool]]):
    """models: label -> (leak counts of 4 questions whose greedy answer is clean, reached)."""
    chosen = {}
    results = {REFERENCE: _scores([0, 0, 0, 0])}
    for run, (counts, reached) in models.items():
        model = _regime(run, reached=reached)
        chosen[model.label] = model
        results[model.label] = _scores(counts)
    reports = leakage.summarise_models(results, ALPHA, rouge_threshold=0.5, adaptive_threshold=0.9,
                                       reference=REFERENCE)
    return leakage.regime_table(results, reports.summaries, chosen, REFERENCE, ALPHA)


LEAKS = [40, 0, 0, 0]
QUIET = [0, 1, 0, 0]


def test_the_regime_table_counts_the_leaks_beyond_guessing():
    table = _table({"ga_mild": (LEAKS, True), "npo_mild": (LEAKS, True), "rmu": (QUIET, True)})
    assert table.index.tolist() == ["ga_mild@5", "npo_mild@5", "rmu@5"]
    assert table.loc["ga_mild@5", "beyond guessing, all questions jointly"] == 1
    assert table.loc["rmu@5", "beyond guessing, all questions jointly"] == 0
    assert table.loc["rmu@5", "of them leak in a sample"] == 1  # it leaks once, but no more than guessing
    assert table["reached"].tolist() == [True, True, True] and "verdict" not in table
    assert table.loc["ga_mild@5", "retain ROUGE-L (greedy)"] == 0.6


def test_a_model_outside_the_regime_is_marked_not_reached():
    row = _table({"ga_mild": (LEAKS, True), "gd_mild": (LEAKS, False)}).loc["gd_mild@5"]
    assert row["beyond guessing, all questions jointly"] == 1  # it leaks, yet it is not in the paper's regime
    assert not row["reached"]


# --------------------------------------------------------------------------- coarse_then_fine


def test_coarse_then_fine_finds_the_first_step_below_with_few_measurements():
    rates = [1.0 - 0.05 * i for i in range(35)]  # falls by 0.05 per step: 0.3 first reached at index 14
    measured = []

    def rate(i):
        measured.append(i)
        return rates[i]

    visited = leakage.coarse_then_fine(35, rate, threshold=0.3, stride=5)
    assert visited == sorted(set(measured)) and len(measured) == len(set(measured))
    first = next(i for i in visited if rates[i] <= 0.3 + 1e-12)
    assert first == 14  # the same step as measuring everything
    assert len(visited) < 35 and {11, 12, 13, 14} <= set(visited)
    # never reached: only the coarse steps; reached at the first coarse step: nothing finer before it
    assert leakage.coarse_then_fine(35, lambda i: 1.0, 0.3, 5) == [0, 5, 10, 15, 20, 25, 30, 34]
    assert leakage.coarse_then_fine(12, lambda i: 0.0, 0.3, 5) == [0, 5, 10, 11]
    with pytest.raises(ValueError, match="stride"):
        leakage.coarse_then_fine(10, lambda i: 0.0, 0.3, 0)
