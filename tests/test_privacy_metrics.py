"""open-unlearning's memorisation and privacy metrics (unlearnkit.metrics.privacy) against closed forms on
hand-made logits, and on a tiny randomly initialised Llama against hand computations with torch itself."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
import torch
from devices import numpy
from unlearnkit import models
from unlearnkit.metrics.privacy import (
    AUC_KEYS,
    MIA_ATTACKS,
    attack_auc,
    exact_memorisation,
    extraction_strength,
    gradnorm_score,
    item_scores,
    loss_score,
    mink_score,
    minkpp_score,
    privacy_summary,
    privleak,
    zlib_score,
)
from unlearnkit.metrics.tofu import encoded_nll

pytestmark = pytest.mark.usefixtures("tiny_model_threads")

V = 6  # vocabulary of the hand-made logits
# Two prompt positions, then 5 answer tokens of which the last is EOS: L = positions 2..6, L⁻ = positions 2..5.
ANSWER = [3, 1, 4, 2, 5]
LABELS = [-100, -100] + ANSWER
#: The definitions' choices of item_scores (the library has no default of its own: the profile names them).
DEFINITIONS = {"gradnorm_reduction": "global", "extraction_no_match": "zero", "answer_tokens": "separate"}


def _logits(predictions: list[int], seed: int = 0, boost: float = 8.0) -> torch.Tensor:
    """Logits [1, 7, V] whose argmax at position t - 1 is ``predictions[t - 2]``, the prediction for label t."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(1, len(LABELS), V, generator=gen)
    for t, token in enumerate(predictions, start=2):
        logits[0, t - 1, token] += boost
    return logits


def _labels(rows: int = 1) -> torch.Tensor:
    return torch.tensor([LABELS] * rows)


# --------------------------------------------------------------------------- memorisation


def test_exact_memorisation_is_the_share_of_argmax_hits_over_the_answer_without_eos():
    # hits at answer tokens 0, 1, 3; a miss at token 2; EOS missed too, which must not count (3/5 if it did)
    predictions = [3, 1, 0, 2, 0]
    em = exact_memorisation(_logits(predictions), _labels())
    assert em.item() == pytest.approx(3 / 4)
    # all four tokens of L⁻ right, EOS still wrong: 1
    assert exact_memorisation(_logits([3, 1, 4, 2, 0]), _labels()).item() == pytest.approx(1.0)
    # an item whose only labelled token is EOS has an empty L⁻: NaN, next to a normal item in the same batch
    labels = torch.tensor([LABELS, [-100] * 6 + [5]])
    logits = torch.cat([_logits(predictions), _logits(predictions, seed=1)])
    em = exact_memorisation(logits, labels)
    assert em[0].item() == pytest.approx(3 / 4) and math.isnan(em[1].item())


@pytest.mark.parametrize(("predictions", "expected", "expected_ou"), [
    ([3, 1, 4, 2, 0], 1.0, 1.0),          # the whole of L⁻ matches (EOS ignored): k* = 0
    ([3, 0, 4, 2, 5], 1 - 2 / 4, 0.5),    # suffix from token 2 on: k* = 2
    ([0, 1, 4, 0, 5], 0.0, 1 / 4),        # the last token of L⁻ misses: no suffix, OU's loop stops at n - 1
])
def test_extraction_strength_is_one_minus_the_first_matching_suffix(predictions, expected, expected_ou):
    logits = _logits(predictions)
    assert extraction_strength(logits, _labels()).item() == pytest.approx(expected)
    assert extraction_strength(logits, _labels(), no_match="ou").item() == pytest.approx(expected_ou)


def test_extraction_strength_of_an_empty_answer_and_a_bad_option():
    labels = torch.tensor([[-100] * 6 + [5]])
    assert math.isnan(extraction_strength(_logits([3, 1, 4, 2, 5]), labels).item())
    assert extraction_strength(_logits([3, 1, 4, 2, 5]), labels, no_match="ou").item() == 0.0  # OU keeps a 0
    with pytest.raises(ValueError, match="no_match"):
        extraction_strength(_logits([3, 1, 4, 2, 5]), _labels(), no_match="one")


# --------------------------------------------------------------------------- membership-inference scores


def _hand_logprobs(logits: torch.Tensor) -> np.ndarray:
    """lp of each answer token, computed apart with numpy: [lp of answer token 0, ..., lp of EOS]."""
    x = numpy(logits[0].double())
    logp = x - np.log(np.exp(x).sum(-1, keepdims=True))
    return np.array([logp[t - 1, LABELS[t]] for t in range(2, len(LABELS))])


def test_loss_is_the_mean_nll_over_the_answer_with_eos():
    logits = _logits([3, 0, 4, 1, 2], seed=4)
    lp = _hand_logprobs(logits)
    assert loss_score(logits, _labels()).item() == pytest.approx(-lp.mean(), rel=1e-5)


@pytest.mark.parametrize(("k", "count"), [(0.4, 1), (0.5, 2), (0.75, 3), (0.1, 1), (1.0, 4)])
def test_mink_takes_floor_k_n_smallest_logprobs_of_the_answer_without_eos(k, count):
    # distinct log-probs; the EOS one made the smallest of all, so including it would change every result
    logits = torch.zeros(1, len(LABELS), V)
    for t, bump in zip(range(2, 6), [3.0, 0.5, 2.0, -1.0]):
        logits[0, t - 1, LABELS[t]] = bump
    logits[0, 5, LABELS[6]] = -5.0
    lp = _hand_logprobs(logits)
    assert lp[-1] < lp[:-1].min()
    n = 4  # |L⁻|
    assert max(1, math.floor(k * n)) == count
    expected = -np.sort(lp[:-1])[:count].mean()
    assert mink_score(logits, _labels(), k=k).item() == pytest.approx(expected, rel=1e-5)
    # EOS, the smallest log-prob, is not among the candidates; nor is one more token than floor(k n)
    assert mink_score(logits, _labels(), k=k).item() != pytest.approx(-np.sort(lp)[:count].mean(), rel=1e-3)
    if count < n:
        assert mink_score(logits, _labels(), k=k).item() != pytest.approx(-np.sort(lp[:-1])[:count + 1].mean(),
                                                                          rel=1e-3)


def test_minkpp_against_a_hand_computed_mean_and_variance():
    gen = torch.Generator().manual_seed(7)
    logits = torch.randn(1, len(LABELS), V, generator=gen) * 2
    x = numpy(logits[0].double())
    logp = x - np.log(np.exp(x).sum(-1, keepdims=True))
    z = []
    for t in range(2, 6):  # L⁻
        p, lq = np.exp(logp[t - 1]), logp[t - 1]
        mu = (p * lq).sum()
        sigma = math.sqrt(max((p * lq ** 2).sum() - mu ** 2, 1e-6))
        z.append((lq[LABELS[t]] - mu) / sigma)
    z = np.sort(z)
    assert minkpp_score(logits, _labels(), k=0.4).item() == pytest.approx(-z[:1].mean(), rel=1e-5)
    assert minkpp_score(logits, _labels(), k=0.5).item() == pytest.approx(-z[:2].mean(), rel=1e-5)
    # batched rows are scored independently
    both = minkpp_score(torch.cat([logits, _logits([0, 0, 0, 0, 0])]), _labels(2), k=0.5)
    assert both[0].item() == pytest.approx(-z[:2].mean(), rel=1e-5)


def test_zlib_divides_the_loss_by_the_compressed_byte_count():
    texts = ["abc", "hello hello hello hello", "Kofi was born in Accra."]
    # by hand: zlib's 2-byte header + deflate block + 4-byte Adler-32; "abc" takes 11 bytes, the repeated words 16
    assert len(zlib.compress(b"abc")) == 11 and len(zlib.compress(texts[1].encode())) == 16
    got = zlib_score(np.array([2.2, 3.2, 1.0]), texts)
    assert got[:2].tolist() == pytest.approx([2.2 / 11, 3.2 / 16])
    assert got[2] == pytest.approx(1.0 / len(zlib.compress(texts[2].encode("utf-8"))))
    assert zlib_score(torch.tensor([1.0]), ["é"])[0] == pytest.approx(1 / len(zlib.compress("é".encode())))
    with pytest.raises(ValueError, match="texts"):
        zlib_score(np.array([1.0]), ["a", "b"])


# --------------------------------------------------------------------------- GradNorm


def test_gradnorm_against_autograd_by_hand_and_no_grad_left(tiny_model, tiny_tokenizer, template):
    enc = models.encode_qa(tiny_tokenizer, template, "Where was Kofi born?", "Kofi was born in Accra.")
    params = [p for p in tiny_model.parameters() if p.requires_grad]
    ids = torch.tensor([enc["input_ids"]])
    logp = torch.log_softmax(tiny_model(ids).logits[0].float(), -1)
    answer = [t for t, label in enumerate(enc["labels"]) if label != -100][:-1]  # L⁻: EOS dropped
    loss = -torch.stack([logp[t - 1, enc["input_ids"][t]] for t in answer]).mean()
    all_grads = torch.autograd.grad(loss, params, allow_unused=True)
    grads = [g for g in all_grads if g is not None]
    flat = torch.cat([g.flatten() for g in grads])
    per_tensor = torch.stack([g.norm() for g in grads])

    tiny_model.train()
    assert gradnorm_score(tiny_model, enc) == pytest.approx(flat.norm().item(), rel=1e-4)
    assert tiny_model.training  # mode restored
    tiny_model.eval()
    assert gradnorm_score(tiny_model, enc, reduction="ou_mean") == pytest.approx(per_tensor.mean().item(), rel=1e-4)
    assert not tiny_model.training
    assert all(p.grad is None for p in tiny_model.parameters())
    # A score must not depend on how the model reached the scorer: RMU leaves every layer but one frozen, and the
    # model scored straight after it must score as the same weights loaded afresh (every parameter trainable). Frozen
    # tensors are part of the gradient, and stay frozen.
    trainable = [gradnorm_score(tiny_model, enc, reduction=r) for r in ("global", "ou_mean")]
    frozen = [p for name, p in tiny_model.named_parameters() if "layers.1." not in name]
    for p in frozen:
        p.requires_grad_(False)
    assert [gradnorm_score(tiny_model, enc, reduction=r) for r in ("global", "ou_mean")] == trainable
    assert not any(p.requires_grad for p in frozen) and all(p.grad is None for p in tiny_model.parameters())
    for p in frozen:
        p.requires_grad_(True)
    with pytest.raises(ValueError, match="reduction"):
        gradnorm_score(tiny_model, enc, reduction="mean")


# --------------------------------------------------------------------------- AUC, privleak, the summary


def test_attack_auc_forget_zero_holdout_one():
    forget, holdout = [0.1, 0.2, 0.3], [1.0, 2.0, 3.0]
    assert attack_auc(forget, holdout) == 1.0  # holdout loss higher: forget items look like members
    assert attack_auc(holdout, forget) == 0.0
    assert attack_auc([1.0, 1.0], [1.0, 1.0, 1.0]) == 0.5
    assert attack_auc([0.1, np.nan, 0.2], [1.0, np.nan]) == 1.0  # NaNs dropped
    assert attack_auc([0.1, 2.0], [1.0, 3.0]) == pytest.approx(0.75)
    assert math.isnan(attack_auc([np.nan], [1.0]))


def test_privleak_zero_when_equal_and_minus_96_for_a_full_model():
    assert privleak(0.7, 0.7) == pytest.approx(0.0, abs=1e-8)
    assert privleak(0.5) == pytest.approx(0.0, abs=1e-8)
    # a full model: forget items far more likely than holdout ones, AUC 0.98 in attack_auc's convention
    # (1 - AUC = 0.02 in MUSE's), against the retain model's 0.5
    assert privleak(0.98, 0.5) == pytest.approx(-96.0, rel=1e-6)
    assert privleak(0.02, 0.5) == pytest.approx(96.0, rel=1e-6)  # over-unlearned
    assert privleak(0.9, 0.6) == pytest.approx((0.1 - 0.4) / 0.4 * 100, rel=1e-6)


def test_privacy_summary_keys_reference_and_privleak():
    rng = np.random.default_rng(0)
    forget = {key: rng.normal(0, 1, 20) for key in ("loss", "zlib", "mink", "mink++", "gradnorm")}
    holdout = {key: rng.normal(3, 1, 25) for key in forget}
    forget["mink"][:] = np.arange(20)          # MinK AUC = share of (forget, holdout) pairs with forget < holdout
    holdout["mink"][:] = np.arange(25) + 10.5
    forget |= {"exact_memorisation": np.array([0.5, 1.0, np.nan]), "extraction_strength": np.array([0.25, 0.75])}
    ref_forget, ref_holdout = {"loss": forget["loss"] - 5}, {"loss": holdout["loss"] + 1}
    summary = privacy_summary(forget, holdout, ref_forget, ref_holdout)
    assert set(AUC_KEYS) == set(MIA_ATTACKS) and "mia_minkpp_auc" in summary and "mia_mink++_auc" not in summary
    assert summary["exact_memorisation"] == pytest.approx(0.75)
    assert summary["extraction_strength"] == pytest.approx(0.5)
    mink_auc = np.mean([f < h for f in forget["mink"] for h in holdout["mink"]])
    assert summary["mia_mink_auc"] == pytest.approx(mink_auc)
    assert summary["mia_reference_auc"] == pytest.approx(attack_auc(np.full(20, 5.0), np.full(25, -1.0)))  # 0
    assert summary["privleak"] == pytest.approx(privleak(mink_auc, 0.5)) and summary["privleak_retain_auc"] == 0.5
    with_retain = privacy_summary(forget, holdout, retain_auc=0.6, privleak_attack="loss")
    assert "mia_reference_auc" not in with_retain
    assert with_retain["privleak"] == pytest.approx(privleak(with_retain["mia_loss_auc"], 0.6))
    assert with_retain["privleak_retain_auc"] == 0.6
    no_gradnorm = privacy_summary({k: v for k, v in forget.items() if k != "gradnorm"}, holdout)
    assert "mia_gradnorm_auc" not in no_gradnorm


# --------------------------------------------------------------------------- one model's item scores


@pytest.fixture(scope="module")
def qa_rows():
    return [
        {"question": "Where was Kofi born?", "answer": "Kofi was born in Accra."},
        {"question": "Who?", "answer": "Nobody at all."},
        {"question": "What did the author write in her long career as a novelist?",
         "answer": "She wrote crime novels set in Lagos, and two memoirs about her grandmother."},
        {"question": "When?", "answer": "In 1990."},
        {"question": "Which prize did he win?", "answer": "The Booker Prize, in his forties."},
    ]


def test_item_scores_agree_with_encoded_nll_and_the_pure_functions(tiny_model, tiny_tokenizer, template, qa_rows):
    scores = item_scores(tiny_model, tiny_tokenizer, template, qa_rows, batch_size=8, gradnorm=False, **DEFINITIONS)
    assert list(scores) == ["loss", "zlib", "mink", "mink++", "exact_memorisation", "extraction_strength"]
    encoded = [models.encode_qa(tiny_tokenizer, template, r["question"], r["answer"]) for r in qa_rows]
    nll = encoded_nll(tiny_model, encoded, models.pad_token_id(tiny_tokenizer), batch_size=8)
    assert scores["loss"] == pytest.approx(nll, rel=1e-5)
    # one item unpadded, the whole sequence through the output head, scored by the pure functions
    enc = encoded[2]
    with torch.no_grad():
        logits = tiny_model(torch.tensor([enc["input_ids"]])).logits
    labels = torch.tensor([enc["labels"]])
    assert scores["mink"][2] == pytest.approx(mink_score(logits, labels).item(), rel=1e-5)
    assert scores["mink++"][2] == pytest.approx(minkpp_score(logits, labels).item(), rel=1e-5)
    assert scores["exact_memorisation"][2] == pytest.approx(exact_memorisation(logits, labels).item())
    assert scores["extraction_strength"][2] == pytest.approx(extraction_strength(logits, labels).item())
    text = tiny_tokenizer.decode([t for t in enc["labels"] if t != -100], skip_special_tokens=True)
    assert text.strip() == qa_rows[2]["answer"]  # OU's ZLib text: the decoded answer, no EOS
    assert scores["zlib"][2] == pytest.approx(nll[2] / len(zlib.compress(text.encode("utf-8"))), rel=1e-5)


def test_item_scores_keep_row_order_and_batching_changes_nothing(tiny_model, tiny_tokenizer, template, qa_rows):
    tiny_model.train()
    one = item_scores(tiny_model, tiny_tokenizer, template, qa_rows, batch_size=1, **DEFINITIONS)
    assert tiny_model.training and all(p.grad is None for p in tiny_model.parameters())
    eight = item_scores(tiny_model, tiny_tokenizer, template, qa_rows, batch_size=8, **DEFINITIONS)
    reordered = item_scores(tiny_model, tiny_tokenizer, template, qa_rows[::-1], batch_size=3, gradnorm=False, **DEFINITIONS)
    assert set(one) == {"loss", "zlib", "mink", "mink++", "gradnorm", "exact_memorisation", "extraction_strength"}
    for key, values in one.items():
        assert len(values) == len(qa_rows) and not np.isnan(values).any()
        np.testing.assert_allclose(eight[key], values, atol=1e-5, rtol=1e-5, err_msg=key)
        if key != "gradnorm":
            np.testing.assert_allclose(reordered[key][::-1], values, atol=1e-5, rtol=1e-5, err_msg=key)
    assert len(set(np.round(one["loss"], 6))) == len(qa_rows)  # distinct items, so the order check means something
    assert one["gradnorm"] == pytest.approx(
        [gradnorm_score(tiny_model, models.encode_qa(tiny_tokenizer, template, r["question"], r["answer"]))
         for r in qa_rows], rel=1e-4)
    ou = item_scores(tiny_model, tiny_tokenizer, template, qa_rows[:2], gradnorm_reduction="ou_mean",
                     extraction_no_match="ou", answer_tokens="separate")
    assert (ou["gradnorm"] < one["gradnorm"][:2]).all()  # a mean of tensor norms is below the global norm
    assert (ou["extraction_strength"] >= one["extraction_strength"][:2]).all()


def test_item_scores_of_an_answer_cut_to_one_token_are_nan(tiny_model, tiny_tokenizer, template):
    row = {"question": "Where was Kofi born?", "answer": "Kofi was born in Accra."}
    prompt_length = len(models.encode_prompt(tiny_tokenizer, template, row["question"]))
    cut = item_scores(tiny_model, tiny_tokenizer, template, [row], max_length=prompt_length + 1, **DEFINITIONS)
    assert not np.isnan(cut["loss"][0])  # L holds one token
    for key in ("mink", "mink++", "gradnorm", "exact_memorisation", "extraction_strength"):
        assert np.isnan(cut[key][0]), key


def test_evaluate_privacy_scores_the_retain_model_against_half_and_the_others_against_it(
        tiny_model, tiny_tokenizer, template, small_corpus, tmp_path):
    from unlearnkit import config, pipeline

    params = config.Params.load("smoke", eval_max_items=12, mia_gradnorm=False)
    other = models.build_tiny_llama(tiny_tokenizer, {"hidden_size": 64, "num_hidden_layers": 2,
                                                     "num_attention_heads": 2, "intermediate_size": 128}, seed=1)
    named = {"retain90": (tiny_model, tiny_tokenizer, template), "target": (other, tiny_tokenizer, template)}
    summaries, items, skipped = pipeline.evaluate_privacy(named, params, small_corpus, reference="retain90")
    assert skipped is None and len(items["target"]["forget"]["loss"]) == 12
    assert len(items["target"]["holdout"]["loss"]) == 12 and "gradnorm" not in items["target"]["forget"]
    assert summaries["retain90"]["privleak_retain_auc"] == 0.5 and "mia_reference_auc" not in summaries["retain90"]
    retain_auc = summaries["retain90"]["mia_mink_auc"]
    assert summaries["target"]["privleak_retain_auc"] == pytest.approx(retain_auc)
    assert summaries["target"]["privleak"] == pytest.approx(
        privleak(summaries["target"]["mia_mink_auc"], retain_auc))
    # the same from the stored per-item scores (notebook 02 reads notebook 01's)
    again = pipeline.privacy_of(items["target"], items["retain90"])
    assert again == pytest.approx(summaries["target"], nan_ok=True)
    # through evaluate_models: the scores land in each summary
    results, per_item = pipeline.evaluate_models({"target": named["target"]}, params, small_corpus,
                                                 privacy=items["retain90"])
    assert results["target"]["summary"]["privleak"] == pytest.approx(summaries["target"]["privleak"])
    assert per_item["target"][pipeline.PRIVACY]["forget"]["loss"] == pytest.approx(items["target"]["forget"]["loss"])


def test_a_folder_without_holdout_skips_the_privacy_metrics_with_the_reason(tiny_model, tiny_tokenizer, template,
                                                                            small_corpus, tmp_path, capsys):
    import shutil

    from unlearnkit import config, pipeline
    from unlearnkit.data.tofu import TofuSource

    folder = tmp_path / "no-holdout"
    shutil.copytree(small_corpus.folder, folder)
    for name in ("holdout01", "holdout05", "holdout10"):
        (folder / f"{name}.json").unlink()
    params = config.Params.load("smoke", eval_max_items=6)
    results, _ = pipeline.evaluate_models({"m": (tiny_model, tiny_tokenizer, template)}, params, TofuSource(folder),
                                          privacy=True)
    reason = results["m"][pipeline.PRIVACY_SKIPPED]
    assert "holdout10" in reason and "locuslab/TOFU" in reason and "privleak" not in results["m"]["summary"]
    assert reason in capsys.readouterr().out
    assert "m" in pipeline.results_table(results).index.get_level_values("model")


def test_the_tokenizer_never_reads_a_forget_or_holdout_author(small_corpus):
    """A from-scratch tokenizer that merged the forget authors' names would make their answers look like members to
    the retain model too; it reads the retain90 authors and the world knowledge only."""
    from unlearnkit import pipeline

    texts = "\n".join(pipeline.all_texts(small_corpus))
    outside = {r["author"] for split in ("forget10", "holdout10") for r in small_corpus.load(split)}
    inside = {r["author"] for r in small_corpus.load("retain90")}
    assert outside and not any(name in texts for name in outside)
    assert all(name in texts for name in inside)
    assert any(r["answer"] in texts for r in small_corpus.load("world_facts_perturbed"))
