"""Tests of unlearnkit.metrics.meta_eval (docs/metrics.md §3.6 and §10.1): faithfulness AUC, R and Q in both
forms, the harmonic means and leak@k, each against a case worked by hand here (or by brute force over every draw),
not against the code's own arithmetic."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from unlearnkit.metrics import meta_eval as M

# ----------------------------------------------------------------------------- faithfulness


def test_auc_counts_every_p_n_pair_and_a_tie_as_half():
    # P = {0.9, 0.8, 0.5}, N = {0.5, 0.2}: six pairs, P above N in five, one tie (0.5, 0.5) counting 1/2.
    assert M.faithfulness_auc([0.9, 0.8, 0.5], [0.5, 0.2], higher_means_knowledge=True) == pytest.approx(5.5 / 6)


def test_auc_all_tied_is_chance_and_perfect_separation_is_one():
    assert M.faithfulness_auc([0.3, 0.3], [0.3, 0.3, 0.3], higher_means_knowledge=True) == pytest.approx(0.5)
    assert M.faithfulness_auc([0.7, 0.9], [0.1, 0.2], higher_means_knowledge=True) == 1.0
    assert M.faithfulness_auc([0.1, 0.2], [0.7, 0.9], higher_means_knowledge=True) == 0.0


def test_auc_of_a_lower_means_knowledge_metric_is_oriented_by_negation():
    # an NLL: the P models (which know the answers) score lower; read the right way round that separates perfectly
    nll_p, nll_n = [0.4, 0.6], [2.0, 2.5, 0.6]
    assert M.faithfulness_auc(nll_p, nll_n, higher_means_knowledge=False) == pytest.approx(5.5 / 6)
    assert M.faithfulness_auc(nll_p, nll_n, higher_means_knowledge=True) == pytest.approx(0.5 / 6)


@pytest.mark.parametrize("p, n, match", [([], [0.1], "both pools"), ([0.2, float("nan")], [0.1], "NaN")])
def test_auc_refuses_an_empty_pool_or_nan(p, n, match):
    with pytest.raises(ValueError, match=match):
        M.faithfulness_auc(p, n, higher_means_knowledge=True)


# ----------------------------------------------------------------------------- relearning


def test_r_one_directional_by_hand():
    # Δ_u = 0.4, Δ_r = 0.1: the unlearned model relearns four times as much as the retain model -> 0.25;
    # Δ_u = 0.05 < Δ_r = 0.1 -> min(2, 1) = 1; opposite directions -> the negative ratio is clipped to 0.
    r = M.relearning_r([0.1, 0.1, 0.1], [0.5, 0.15, 0.3], 0.2, [0.3, 0.3, 0.1], variant="one_directional")
    np.testing.assert_allclose(r, [0.25, 1.0, 0.0])


def test_r_symmetric_also_penalises_a_model_that_moves_less_than_the_retain_model():
    # Δ_u = 0.4, Δ_r = 0.1: 1 - 0.3 / 0.5 = 0.4; Δ_u = 0.05, Δ_r = 0.1: 1 - 0.05 / 0.15 = 2/3 (one-directional: 1)
    r = M.relearning_r([0.1, 0.1], [0.5, 0.15], 0.2, 0.3, variant="symmetric")
    np.testing.assert_allclose(r, [0.4, 2 / 3])


def test_r_refuses_a_retain_change_that_fits_no_model():
    with pytest.raises(ValueError, match="does not fit"):
        M.relearning_r([0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.1, 0.2], [0.3, 0.3], variant="symmetric")


def test_r_is_the_same_for_a_metric_and_its_negation():
    ub, ua, rb, ra = np.array([0.1, 0.3]), np.array([0.5, 0.35]), 0.2, 0.3
    for variant in M.VARIANTS:
        np.testing.assert_allclose(M.relearning_r(ub, ua, rb, ra, variant=variant),
                                   M.relearning_r(-ub, -ua, -rb, -ra, variant=variant))


def test_r_zero_denominator_is_left_out_and_counted():
    # MIA AUC 1.0 before and after relearning: Δ_u = 0 (one-directional undefined); with Δ_r = 0 too, symmetric too
    one = M.relearning_r([1.0, 0.2], [1.0, 0.6], [0.5, 0.5], [0.5 + 5e-7, 0.6], variant="one_directional")
    assert math.isnan(one[0]) and one[1] == pytest.approx(0.25)
    sym = M.relearning_r([1.0, 0.2], [1.0, 0.6], 0.5, 0.5 + 4e-7, variant="symmetric")
    assert math.isnan(sym[0]) and sym[1] == pytest.approx(1 - (0.4 - 4e-7) / (0.4 + 4e-7))
    s = M.summarise(one)
    assert (s.used, s.left_out) == (1, 1) and s.mean == pytest.approx(0.25)


# ----------------------------------------------------------------------------- quantisation


def test_q_one_directional_restored_knowledge_lowers_q():
    # ROUGE 0.2 -> 0.5 after quantisation: knowledge back, Q = 0.2 / 0.5 = 0.4; an unchanged model scores 1
    q = M.quantisation_q([0.2, 0.3], [0.5, 0.3], variant="one_directional", higher_means_knowledge=True)
    np.testing.assert_allclose(q, [0.4, 1.0])


def test_q_one_directional_of_a_lower_means_knowledge_metric():
    # an NLL falling 2.0 -> 1.0 under quantisation is restored knowledge: Q = 1.0 / 2.0; a rise is not penalised
    q = M.quantisation_q([2.0, 1.0], [1.0, 3.0], variant="one_directional", higher_means_knowledge=False)
    np.testing.assert_allclose(q, [0.5, 1.0])


def test_a_greedy_rouge_that_collapses_looks_robust_one_directionally_and_not_symmetrically():
    # a greedy ROUGE of 0.8 that collapses to 0.02 under quantisation (decoding broken, not knowledge restored)
    one = M.quantisation_q([0.8], [0.02], variant="one_directional", higher_means_knowledge=True)
    sym = M.quantisation_q([0.8], [0.02], variant="symmetric", higher_means_knowledge=True)
    assert one[0] == 1.0  # min(0.8 / 0.02, 1): perfectly robust
    assert sym[0] == pytest.approx(1 - 0.78 / 0.82)  # 0.049: penalised
    # collapsing to exactly 0: the one-directional ratio has no finite value and is left out (counted);
    # the symmetric form scores it 0
    one0 = M.summarise(M.quantisation_q([0.8, 0.4], [0.0, 0.5], variant="one_directional",
                                        higher_means_knowledge=True))
    assert (one0.used, one0.left_out) == (1, 1) and one0.mean == pytest.approx(0.8)
    sym0 = M.quantisation_q([0.8, 0.4], [0.0, 0.5], variant="symmetric", higher_means_knowledge=True)
    np.testing.assert_allclose(sym0, [0.0, 1 - 0.1 / 0.9])


def test_q_symmetric_ignores_orientation_and_leaves_out_a_model_at_zero_throughout():
    b, a = np.array([0.0, 0.3]), np.array([0.0, 0.6])
    up = M.quantisation_q(b, a, variant="symmetric", higher_means_knowledge=True)
    down = M.quantisation_q(b, a, variant="symmetric", higher_means_knowledge=False)
    np.testing.assert_array_equal(up, down)
    assert math.isnan(up[0]) and up[1] == pytest.approx(1 - 0.3 / 0.9)


def test_q_refuses_negative_values_one_directionally_and_a_bad_variant():
    with pytest.raises(ValueError, match="non-negative"):
        M.quantisation_q([-5.0], [-3.0], variant="one_directional", higher_means_knowledge=True)
    with pytest.raises(ValueError, match="variant"):
        M.quantisation_q([0.5], [0.5], variant="one-sided", higher_means_knowledge=True)
    with pytest.raises(ValueError, match="shape"):
        M.quantisation_q([0.5, 0.4], [0.5], variant="symmetric", higher_means_knowledge=True)


def test_summary_of_nothing_defined_is_nan():
    s = M.summarise([float("nan"), float("nan")])
    assert math.isnan(s.mean) and (s.used, s.left_out) == (0, 2)


# ----------------------------------------------------------------------------- harmonic means


def test_harmonic_mean_by_hand_and_at_zero():
    assert M.harmonic_mean(0.5, 1.0) == pytest.approx(2 / 3)
    assert M.harmonic_mean(0.0, 0.9) == 0.0
    assert M.harmonic_mean(0.0, 0.0) == 0.0
    assert math.isnan(M.harmonic_mean(float("nan"), 0.5))
    np.testing.assert_allclose(M.harmonic_mean(np.array([0.5, 1.0]), np.array([1.0, 1.0])), [2 / 3, 1.0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        M.harmonic_mean(1.2, 0.5)


def test_robustness_and_overall_reproduce_a_row_of_the_published_table():
    # the re-implementation's table, extraction strength: Q 0.970, R 0.770 -> robustness 0.859; faithfulness 0.891
    # and robustness 0.859 -> overall 0.875 (three decimals as printed, each from the printed values)
    assert round(M.harmonic_mean(0.770, 0.970), 3) == 0.859
    assert round(M.harmonic_mean(0.891, 0.859), 3) == 0.875


# ----------------------------------------------------------------------------- leak@k


def _brute_leak_at_k(n: int, c: int, k: int) -> Fraction:
    """The share of the C(n, k) draws of k of the n samples (c of them leaking) that hold at least one leak."""
    draws = list(itertools.combinations(range(n), k))
    return Fraction(sum(any(i < c for i in d) for d in draws), len(draws))


def test_leak_at_k_by_hand():
    # n = 4, c = 1, k = 2: 1 - C(3,2)/C(4,2) = 1 - 3/6; c = 2: 1 - C(2,2)/C(4,2) = 5/6; k = 1 is c/n
    np.testing.assert_allclose(M.leak_at_k([1, 2], 4, 2), [0.5, 5 / 6])
    np.testing.assert_allclose(M.leak_at_k([0, 1, 3, 4], 4, 1), [0, 0.25, 0.75, 1])


def test_leak_at_k_against_every_draw():
    n = 7
    for c, k in itertools.product(range(n + 1), range(1, n + 1)):
        assert M.leak_at_k([c], n, k)[0] == pytest.approx(float(_brute_leak_at_k(n, c, k)), abs=1e-12)


def test_leak_at_k_no_leak_and_all_leak():
    n = 128
    for k in M.leak_ks(n):
        assert M.leak_at_k([0], n, k)[0] == 0.0
        assert M.leak_at_k([n], n, k)[0] == 1.0


def test_leak_at_k_large_n_matches_exact_binomials_and_one_leak_is_k_over_n():
    n, c, k = 200, 3, 100
    exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    assert M.leak_at_k([c], n, k)[0] == pytest.approx(float(exact), rel=1e-12)
    ks = np.array(M.leak_ks(128))
    np.testing.assert_allclose([M.leak_at_k([1], 128, k)[0] for k in ks], ks / 128, rtol=1e-12)
    # beyond float range for the binomials themselves: n = 5000 still gives a finite, exact-enough value
    assert M.leak_at_k([1], 5000, 2500)[0] == pytest.approx(0.5, rel=1e-12)


def test_leak_at_k_rises_with_k():
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 129, size=50)
    curve = M.leak_at_k_curve(counts, 128)
    assert curve.ks == (1, 2, 4, 8, 16, 32, 64, 128)
    assert np.all(np.diff(curve.per_question, axis=1) >= -1e-15)
    assert np.all(np.diff(curve.mean) >= 0)
    np.testing.assert_allclose(curve.mean, curve.per_question.mean(axis=0))
    np.testing.assert_allclose(curve.per_question[:, 0], counts / 128)


def test_leak_ks_ends_at_n():
    assert M.leak_ks(1) == [1]
    assert M.leak_ks(8) == [1, 2, 4, 8]
    assert M.leak_ks(200) == [1, 2, 4, 8, 16, 32, 64, 128, 200]


@pytest.mark.parametrize("leaks, n, k, match", [([5], 4, 1, r"\[0, n"), ([-1], 4, 1, r"\[0, n"),
                                                ([1.5], 4, 1, "whole"), ([1], 4, 5, "k must"),
                                                ([1], 0, 1, "positive integer")])
def test_leak_at_k_refuses_bad_input(leaks, n, k, match):
    with pytest.raises(ValueError, match=match):
        M.leak_at_k(leaks, n, k)


def test_leak_curves_from_notebook_05_per_item_tables():
    per_item = {"target": {"key": ["a", "b"], "leaks": [128, 64]}, "retain90": {"key": ["a", "b"], "leaks": [0, 1]}}
    curves = M.leak_at_k_curves(per_item, 128, ks=[1, 2])
    np.testing.assert_allclose(curves["target"].mean, [(1 + 0.5) / 2, (1 + (1 - 64 * 63 / (128 * 127))) / 2])
    np.testing.assert_allclose(curves["retain90"].per_question, [[0, 0], [1 / 128, 2 / 128]])
    with pytest.raises(ValueError, match="no 'leaks' column for x"):
        M.leak_at_k_curves({"x": {"key": ["a"]}}, 128)


def test_leak_curves_of_the_committed_notebook_05_results():
    """Seed 0's committed per-item results: leak@1 is the stored leak rate (a second path to the same number), every
    curve rises with k, and the target leaks at least as often as the retain model at every k."""
    import json

    from unlearnkit.runs.committed import results_dir

    folder = results_dir("default", 0) / "05_probabilistic_bounds"
    per_item = json.loads((folder / "per_item.json").read_text(encoding="utf-8"))
    n = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))["target"]["forget"]["n_samples"]
    curves = M.leak_at_k_curves(per_item, n)
    assert set(curves) == set(per_item) and "retain90" in curves
    for model, curve in curves.items():
        np.testing.assert_allclose(curve.per_question[:, 0], per_item[model]["leak_rate"])
        assert np.all(np.diff(curve.mean) >= 0), model
    assert np.all(curves["target"].mean >= curves["retain90"].mean)
