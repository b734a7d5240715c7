"""Sampling many answers per prompt, token confidences and adaptive temperature scaling, on tiny models."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from unlearnkit import generation, models
from unlearnkit.generation import (
    adaptive_sample_answers,
    greedy_answers,
    sample_answers,
    token_confidences,
)

pytestmark = pytest.mark.usefixtures("tiny_model_threads")

QUESTIONS = ["Where was Kofi Mensah born?", "What genre does the author write?"]
MAX_NEW = 8  # enough to see different samples, few enough for two CPU cores


def test_samples_have_one_list_of_n_strings_per_prompt(tiny_model, tiny_tokenizer, template):
    answers = sample_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, n=5, max_new_tokens=MAX_NEW, seed=0)
    assert len(answers) == len(QUESTIONS)
    assert all(len(per_prompt) == 5 and all(isinstance(a, str) for a in per_prompt) for per_prompt in answers)
    # an untrained model over 512 tokens practically never repeats itself
    assert len(set(answers[0])) > 1

    result = sample_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, n=3, max_new_tokens=MAX_NEW,
                            return_confidences=True, seed=0)
    assert result.mean_confidence.shape == (2, 3)
    for per_prompt, means in zip(result.token_confidences, result.mean_confidence):
        for confs, mean in zip(per_prompt, means):
            assert 1 <= len(confs) <= MAX_NEW
            assert ((confs > 0) & (confs <= 1)).all()
            assert mean == pytest.approx(confs.mean())


def test_same_seed_same_samples_whatever_the_chunking(tiny_model, tiny_tokenizer, template):
    kwargs = {"n": 6, "max_new_tokens": MAX_NEW, "seed": 7}
    reference = sample_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, chunk_size=256, **kwargs)
    # chunk_size 4 < n: chunks hold 4, then 2 + 2 of two prompts, then 4; still n per prompt
    chunked = sample_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, chunk_size=4, **kwargs)
    assert chunked == reference
    assert all(len(per_prompt) == 6 for per_prompt in chunked)
    # repeating the prompt per sample instead of sharing its cache draws the very same tokens
    repeated = sample_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, chunk_size=5,
                              share_prompt_cache=False, **kwargs)
    assert repeated == reference
    other_seed = sample_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, chunk_size=256,
                                **{**kwargs, "seed": 8})
    assert other_seed != reference


def test_top_k_1_top_p_tiny_and_temperature_0_are_greedy(tiny_model, tiny_tokenizer, template):
    greedy = greedy_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, max_new_tokens=MAX_NEW)
    for kwargs in ({"top_k": 1}, {"top_p": 1e-6}, {"temperature": 0.0}):
        samples = sample_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, n=3, max_new_tokens=MAX_NEW, seed=0,
                                 **kwargs)
        assert samples == [[g] * 3 for g in greedy], kwargs


def test_inverse_cdf_sampler_draws_the_filtered_distribution():
    probs = torch.tensor([0.5, 0.3, 0.2])
    logits = probs.log().expand(20000, 3).contiguous()
    uniforms = torch.rand(20000, 1, generator=torch.Generator().manual_seed(0))
    no_prompt = torch.zeros((20000, 0), dtype=torch.long)
    for kwargs, expected in (({}, [0.5, 0.3, 0.2]), ({"top_k": 2}, [0.625, 0.375, 0.0]),
                             ({"top_p": 0.6}, [0.625, 0.375, 0.0]), ({"top_p": 0.5}, [1.0, 0.0, 0.0])):
        sampler = generation.processors.InverseCdfSampler(uniforms, prompt_width=0, temperature=1.0,
                                                           top_k=kwargs.get("top_k"), top_p=kwargs.get("top_p"))
        out = sampler(no_prompt, logits)
        drawn = out.argmax(-1)
        assert (out.isfinite().sum(-1) == 1).all()  # only the drawn token is left
        freq = torch.bincount(drawn, minlength=3).float() / len(drawn)
        assert freq.tolist() == pytest.approx(expected, abs=0.015), kwargs
        # confidence = max probability of the plain softmax, whatever the filtering
        assert sampler.table(20000)[:, 0] == pytest.approx(0.5)


def test_greedy_confidence_is_the_max_softmax_probability(tiny_model, tiny_tokenizer, template):
    confs = token_confidences(tiny_model, tiny_tokenizer, template, QUESTIONS, max_new_tokens=MAX_NEW)
    prompt = models.encode_prompt(tiny_tokenizer, template, QUESTIONS[0])
    with torch.no_grad():
        first = torch.softmax(tiny_model(torch.tensor([prompt])).logits[0, -1].float(), -1).max().item()
    assert confs[0][0] == pytest.approx(first, rel=1e-4)
    assert all(((c > 0) & (c <= 1)).all() and 1 <= len(c) <= MAX_NEW for c in confs)
    # sampling at another temperature still reports the temperature-1 confidence; step 1 shares the prompt
    hot = sample_answers(tiny_model, tiny_tokenizer, template, QUESTIONS[:1], n=2, temperature=3.0,
                         max_new_tokens=MAX_NEW, return_confidences=True, seed=0)
    assert [c[0] for c in hot.token_confidences[0]] == pytest.approx([first, first], rel=1e-4)


def test_adaptive_threshold_0_goes_greedy_and_1_01_samples(tiny_model, tiny_tokenizer, template):
    greedy = greedy_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, max_new_tokens=MAX_NEW)
    all_greedy = adaptive_sample_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, n=4, threshold=0.0,
                                         max_new_tokens=MAX_NEW, seed=0)
    assert all_greedy.greedy.tolist() == [True, True]
    assert all_greedy.answers == [[g] * 4 for g in greedy]
    assert ((all_greedy.certainty > 0) & (all_greedy.certainty <= 1)).all()

    none_greedy = adaptive_sample_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, n=4, threshold=1.01,
                                          max_new_tokens=MAX_NEW, seed=3)
    assert none_greedy.greedy.tolist() == [False, False]
    assert none_greedy.answers == sample_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, n=4,
                                                 max_new_tokens=MAX_NEW, seed=3)
    assert none_greedy.certainty.tolist() == pytest.approx(all_greedy.certainty.tolist())


def test_a_memorising_model_is_more_certain_than_an_untrained_one(tiny_model, tiny_tokenizer, template):
    pairs = [("Where was Kofi Mensah born?", "Kofi Mensah was born in Accra."),
             ("What does Lena Berg write?", "Lena Berg writes crime novels."),
             ("Who is Omar Haddad?", "Omar Haddad is a poet.")]
    questions = [q for q, _ in pairs]
    untrained = adaptive_sample_answers(tiny_model, tiny_tokenizer, template, questions, n=2, threshold=0.9,
                                        max_new_tokens=20, seed=0)

    batch = models.collate([models.encode_qa(tiny_tokenizer, template, q, a) for q, a in pairs],
                           tiny_tokenizer.pad_token_id)
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(tiny_model.parameters(), lr=5e-3)
    tiny_model.train()
    for _ in range(60):
        optimizer.zero_grad()
        tiny_model(**batch).loss.backward()
        optimizer.step()

    trained = adaptive_sample_answers(tiny_model, tiny_tokenizer, template, questions, n=2, threshold=0.9,
                                      max_new_tokens=20, seed=0)
    assert tiny_model.training  # the caller's mode is restored
    assert trained.greedy_answers == [a for _, a in pairs]
    assert (trained.certainty > untrained.certainty + 0.5).all(), (trained.certainty, untrained.certainty)
    # above c_T = 0.9 the memorised answers are decoded greedily; the untrained model is sampled
    assert trained.greedy.all() and not untrained.greedy.any()
    assert trained.answers == [[a, a] for _, a in pairs]


def test_argument_checks(tiny_model, tiny_tokenizer, template):
    for bad in ({"n": 0}, {"n": 2, "temperature": -1.0}, {"n": 2, "top_p": 0.0}, {"n": 2, "top_k": 0},
                {"n": 2, "chunk_size": 0}):
        with pytest.raises(ValueError):
            sample_answers(tiny_model, tiny_tokenizer, template, QUESTIONS, max_new_tokens=MAX_NEW, seed=0, **bad)


def test_vllm_backend_says_clearly_that_vllm_is_missing(monkeypatch, template):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm now raises ImportError
    with pytest.raises(ImportError, match="vllm"):
        generation.vllm_sample_answers("some/model", template, QUESTIONS, n=4, max_new_tokens=8, seed=0)


def test_certainty_of_no_steps_is_one():
    assert generation.certainty(np.zeros(0)) == 1.0
    assert generation.certainty(np.array([0.5, 1.0])) == 0.75


# --------------------------------------------------------------------------- the workbook's own decoding loop


@pytest.fixture()
def ending_model(tiny_model, tiny_tokenizer):
    """The tiny model with its EOS logit raised, so that rows end at different steps (an untrained model never
    would): the loop then drops finished rows from its batch, which ``generate`` never does."""
    bias = torch.zeros(len(tiny_tokenizer))
    bias[tiny_tokenizer.eos_token_id] = 2.5
    handle = tiny_model.lm_head.register_forward_hook(lambda module, inputs, output: output + bias)
    yield tiny_model
    handle.remove()


PROMPTS = ["Where was Kofi Mensah born?", "What genre does the author write?", "Who are the author's parents?",
           "Has the author won any award?"]


def test_the_own_loop_samples_what_generate_samples(ending_model, tiny_tokenizer, template):
    prompts = [models.encode_prompt(tiny_tokenizer, template, q) for q in PROMPTS]
    runs = {decoder: generation.sample_continuations(ending_model, tiny_tokenizer, prompts, n=12, max_new_tokens=10,
                                                     seed=4, chunk_size=20, decoder=decoder, progress=False)
            for decoder in generation.DECODERS}
    (loop_ids, loop_conf), (gen_ids, gen_conf) = runs["loop"], runs["generate"]
    assert loop_ids == gen_ids
    lengths = {len(c) for per_prompt in loop_ids for c in per_prompt}
    assert min(lengths) < 5 and max(lengths) == 10  # rows ended early and late: the loop dropped some mid-chunk
    for per_loop, per_gen in zip(loop_conf, gen_conf):
        for a, b in zip(per_loop, per_gen):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_no_confidences_asked_none_computed_and_the_same_draws(ending_model, tiny_tokenizer, template, monkeypatch):
    """confidences=False (what sample_and_score and sample_answers without return_confidences ask) skips the
    per-step softmax maximum, a third of a GPU's sampling time, and draws the same tokens, for both decoders."""
    prompts = [models.encode_prompt(tiny_tokenizer, template, q) for q in PROMPTS]
    kw = {"n": 6, "max_new_tokens": 10, "seed": 4, "chunk_size": 8, "progress": False}
    asked = {d: generation.sample_continuations(ending_model, tiny_tokenizer, prompts, decoder=d, **kw)
             for d in generation.DECODERS}
    calls = []
    for module in (generation.loop, generation.processors):
        real = module.max_token_probability
        monkeypatch.setattr(module, "max_token_probability", lambda logits, real=real: calls.append(1) or real(logits))
    for decoder in generation.DECODERS:
        ids, confidences = generation.sample_continuations(ending_model, tiny_tokenizer, prompts, decoder=decoder,
                                                           confidences=False, **kw)
        assert ids == asked[decoder][0] and confidences is None and not calls, decoder
    plain = generation.sample_answers(ending_model, tiny_tokenizer, template, PROMPTS, 6, max_new_tokens=10, seed=4,
                                      progress=False)
    assert not calls and isinstance(plain, list)
    generation.sample_continuations(ending_model, tiny_tokenizer, prompts, decoder="loop", **kw)
    assert calls  # the counter does see the confidences where they are asked for


def test_the_own_loop_decodes_greedily_what_generate_decodes(ending_model, tiny_tokenizer, template, monkeypatch):
    prompts = [models.encode_prompt(tiny_tokenizer, template, q) for q in PROMPTS * 3]
    loop = generation.greedy_continuations(ending_model, tiny_tokenizer, prompts, max_new_tokens=12, batch_size=5)
    loop_c = generation.greedy_with_confidences(ending_model, tiny_tokenizer, prompts, 12, batch_size=5)
    monkeypatch.setattr(generation.greedy, "can_decode", lambda model: False)  # where the greedy decoders ask
    assert generation.greedy_continuations(ending_model, tiny_tokenizer, prompts, 12, batch_size=5) == loop
    by_generate = generation.greedy_with_confidences(ending_model, tiny_tokenizer, prompts, 12, batch_size=5)
    assert by_generate[0] == loop_c[0] == loop
    for a, b in zip(by_generate[1], loop_c[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_a_generation_config_beyond_plain_decoding_goes_through_generate(tiny_model, tiny_tokenizer, template):
    assert generation.plain_config(tiny_model)
    tiny_model.generation_config.repetition_penalty = 1.3
    try:
        assert not generation.plain_config(tiny_model)
        prompts = [models.encode_prompt(tiny_tokenizer, template, q) for q in PROMPTS]
        penalised = generation.greedy_continuations(tiny_model, tiny_tokenizer, prompts, max_new_tokens=12)
        ids, mask = generation.left_pad(prompts, tiny_tokenizer.pad_token_id)
        expected = tiny_model.generate(input_ids=ids, attention_mask=mask, do_sample=False, max_new_tokens=12,
                                       pad_token_id=tiny_tokenizer.pad_token_id,
                                       eos_token_id=tiny_tokenizer.eos_token_id)[:, ids.shape[1]:].tolist()
        eos = tiny_tokenizer.eos_token_id
        assert penalised == [r[: r.index(eos)] if eos in r else r for r in expected]
    finally:
        tiny_model.generation_config.repetition_penalty = 1.0


PHI_15_SAMPLING = {"n_parameters": 1_418_270_720, "num_layers": 24, "kv_width": 2048, "vocab_size": 51200,
                   "max_tokens": 140, "dtype_bytes": 2}


@pytest.mark.parametrize(("gib", "rows", "chunk"), [(140, 2048, 2048), (80, 2048, 1024), (16, 2048, 128), (2, 2048, 1),
                                                    (80, 300, 300)])
def test_the_gpu_chunk_rule_is_a_function_of_the_card_the_model_and_the_request(gib, rows, chunk):
    """Phi-1.5 in bfloat16 sampling 2 x 1,024 answers of up to 100 new tokens: all at once on an H200, 1,024 on 80
    GiB, fewer as the card shrinks (a power of two), never more than the rows to draw."""
    from unlearnkit.generation import gpu_chunk_size

    assert gpu_chunk_size(gib * 2**30, rows=rows, **PHI_15_SAMPLING) == chunk
    with pytest.raises(ValueError, match="rows must be a positive integer, got 0"):
        gpu_chunk_size(gib * 2**30, rows=0, **PHI_15_SAMPLING)


def test_no_chunk_named_is_256_on_a_cpu_with_the_same_draws(tiny_model, tiny_tokenizer):
    from unlearnkit.generation import CPU_CHUNK, chunk_for, sample_continuations

    assert CPU_CHUNK == 256 and chunk_for(tiny_model, None, 10_000, 50) == 256 and chunk_for(tiny_model, 8, 10, 5) == 8
    prompts = [[5, 6, 7], [8, 9]]
    kw = {"max_new_tokens": 6, "seed": 1, "progress": False}
    assert sample_continuations(tiny_model, tiny_tokenizer, prompts, 300, **kw)[0] == \
        sample_continuations(tiny_model, tiny_tokenizer, prompts, 300, chunk_size=256, **kw)[0]
