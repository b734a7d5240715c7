"""open-unlearning's TOFU setting without a GPU: ``paper-llama`` (notebooks/params/paper-llama.yaml) runs
meta-llama/Llama-3.2-1B-Instruct with open-unlearning's (OU's) settings, loaded by Hub name and never downloaded here;
``paper-llama-dry`` runs the same settings on a stand-in of Llama 3.2 built by the workbook.

Cheap by design (``make test``): the resolved profiles, the stand-in's architecture and tokenizer, OU's token ids
and one step of notebook 01 (fine-tuning the stand-in with the profile's schedule, in this process). No notebook runs
here: ``make paper-dry``'s full dry run covers the notebooks on the Phi stand-in, and ``runner all --profile
paper-llama-dry`` runs them on this one."""

from __future__ import annotations

import json

import pytest
from unlearnkit import config, models, paths, pipeline
from unlearnkit.data.tofu import holdout_split_for

PROFILE, DRY = "paper-llama", "paper-llama-dry"
STAND_IN = "Llama-3.2-1B-Instruct"

#: OU's template strings for Llama-3.2-1B-Instruct (configs/model/Llama-3.2-1B-Instruct.yaml, template_args): the
#: interface the workbook's ``llama3-ou`` template must reproduce token for token.
OU_SYSTEM = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
OU_USER_START, OU_USER_END = "<|start_header_id|>user<|end_header_id|>\n\n", "<|eot_id|>"
OU_ASSISTANT_START = "<|start_header_id|>assistant<|end_header_id|>\n\n"


def _ou_encoding(tokenizer, question: str, answer: str) -> tuple[list[int], list[int], list[int]]:
    """Prompt ids, Q&A ids and labels as OU's data code makes them without a chat template: the wrapped prompt and
    the prompt + answer each tokenised with special tokens, EOS appended, the labels after the prompt's length."""
    wrapped = OU_SYSTEM + OU_USER_START + question + OU_USER_END + OU_ASSISTANT_START
    prompt = tokenizer(wrapped, add_special_tokens=True)["input_ids"]
    chat = tokenizer(wrapped + answer, add_special_tokens=True)["input_ids"]
    if chat[-1] != tokenizer.eos_token_id:
        chat = chat + [tokenizer.eos_token_id]
    return prompt, chat, [-100] * len(prompt) + chat[len(prompt):]


@pytest.fixture(scope="module")
def params():
    return config.Params.load(DRY)


@pytest.fixture(scope="module")
def stand_in(params):
    return pipeline.build_stand_ins(params)[STAND_IN]


def test_the_profile_is_open_unlearnings_tofu_setting():
    p, paper = config.Params.load(PROFILE), config.Params.load("paper")
    assert (p.model, p.template, p.dtype) == ("meta-llama/Llama-3.2-1B-Instruct", "llama3-ou", "bfloat16")
    assert p.data_source == "locuslab/TOFU" and p.forget_split == "forget10" and p.retain_splits == ["retain90"]
    assert holdout_split_for(p.forget_split) == "holdout10"
    # fine-tuning as OU made tofu_Llama-3.2-1B-Instruct_full: lr 1e-5, 5 epochs, one of them warm-up, batch 32
    assert (p.finetune_lr, p.finetune_epochs, p.finetune_weight_decay, p.finetune_schedule) == (1e-5, 5, 0.01, "linear")
    assert p.finetune_batch_size * p.finetune_grad_accum == 32 and p.finetune_warmup * p.finetune_epochs == 1
    # unlearning as OU's docs/repro.md: lr 1e-5, 10 epochs, one of them warm-up, batch 32, beta 0.1, alpha = gamma = 1
    assert (p.unlearn_lr, p.unlearn_epochs, p.unlearn_weight_decay, p.unlearn_schedule) == (1e-5, 10, 0.01, "linear")
    assert p.unlearn_batch_size * p.unlearn_grad_accum == 32 and p.unlearn_warmup * p.unlearn_epochs == 1
    assert (p.beta, p.forget_weight, p.retain_weight) == (0.1, 1.0, 1.0)
    # OU's scoring, every item of forget10 and holdout10
    assert {k: p[k] for k in pipeline.OU_OPTIONS} == pipeline.OU_OPTIONS and p.eval_max_items is None
    assert p.max_new_tokens == 200  # OU's generation config
    # the methods OU publishes (GradAscent, GradDiff, IdkDPO, NPO, SimNPO, RMU) run in notebook 02, as on paper
    assert {"ga", "gd", "dpo", "npo", "simnpo", "rmu"} <= set(p.methods) and p.methods == paper.methods
    assert p.method_settings == paper.method_settings


def test_the_dry_profile_differs_from_paper_llama_as_paper_dry_from_paper(params):
    def counts_and_sizes(layer):
        return {k: v for k, v in layer.items() if k not in ("extends", "model")}

    assert counts_and_sizes(config.profile_layer(DRY)) == counts_and_sizes(config.profile_layer("paper-dry"))
    assert config.profile_base(DRY) == PROFILE and params.model == f"{pipeline.STAND_INS}/{STAND_IN}"
    assert pipeline.stand_ins_named(params)[0] == STAND_IN
    llama = config.Params.load(PROFILE)
    for key in ("template", "answer_tokens", "finetune_lr", "unlearn_schedule", "truth_ratio_guard", "methods"):
        assert params[key] == llama[key], key


def test_the_stand_in_is_a_llama_3_2_read_as_a_hub_model(params, stand_in):
    loaded = models.load_model(stand_in, dtype="float32", template=params.template)
    cfg = loaded.model.config
    assert type(loaded.model).__name__ == "LlamaForCausalLM" and cfg.tie_word_embeddings
    assert loaded.model.lm_head.weight.data_ptr() == loaded.model.model.embed_tokens.weight.data_ptr()
    assert cfg.num_key_value_heads < cfg.num_attention_heads  # grouped-query attention
    assert cfg.rope_parameters["rope_type"] == "llama3" and cfg.rope_parameters["rope_theta"] == 500000.0
    assert not (stand_in / "unlearnkit.json").exists()
    tokenizer = loaded.tokenizer
    assert (tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token) == ("<|begin_of_text|>", "<|eot_id|>",
                                                                               "<|eot_id|>")
    for mark in ("<|start_header_id|>", "<|end_header_id|>"):
        assert len(tokenizer(mark, add_special_tokens=False)["input_ids"]) == 1, mark
    # as Llama 3's tokenizer: BOS from the post-processor, add_bos_token False
    assert tokenizer("x")["input_ids"][0] == tokenizer.bos_token_id and not tokenizer.add_bos_token


def test_the_template_gives_open_unlearnings_token_ids(params, stand_in):
    loaded = models.load_model(stand_in, dtype="float32", template=params.template)
    tokenizer, template = loaded.tokenizer, loaded.template
    assert template.name == "llama3-ou"
    for question, answer in (("Who wrote The Silent Orchard?", "Ana Ruiz wrote it in 1998."),
                             ("Where was she born?", " In Lima, Peru.")):
        prompt, chat, labels = _ou_encoding(tokenizer, question, answer)
        assert models.encode_prompt(tokenizer, template, question) == prompt
        assert prompt[:2] == [tokenizer.bos_token_id] * 2  # OU's two BOS, kept
        assert models.encode_qa(tokenizer, template, question, answer, tokens=params.answer_tokens) == {
            "input_ids": chat, "labels": labels}
    # a Llama 3 model named on the Hub gets the template by family; LLaMA-1's 30B does not
    for name in ("open-unlearning/tofu_Llama-3.2-1B-Instruct_full", "meta-llama/Meta-Llama-3-8B-Instruct"):
        assert models.template_for(name).name == "llama3-ou", name
    assert models.template_for("huggyllama/llama-30b").name == "phi"


@pytest.mark.slow
def test_the_stand_in_fine_tunes_with_open_unlearnings_schedule(params, stand_in, tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    quick = params.replace(finetune_epochs=1)  # one epoch of notebook 01's fine-tuning (400 Q&A of the corpus)
    trained = pipeline.finetuned_model(quick, "full")
    folder = tmp_path / DRY / f"seed-{params.seed}" / "models" / "target"
    assert json.loads((folder / "unlearnkit.json").read_text())["template"] == "llama3-ou"
    history = json.loads((folder / "history.json").read_text())
    rows = len(pipeline.corpus(quick).load("full"))  # world_replay 0: TOFU alone
    assert len(history) == -(-rows // (quick.finetune_batch_size * quick.finetune_grad_accum))
    lrs = [step["lr"] for step in history]
    peak = lrs.index(max(lrs))  # the linear warm-up over a fifth of the run (one of OU's five epochs), then decay
    assert lrs[0] < lrs[peak] <= quick.finetune_lr and abs(peak + 1 - quick.finetune_warmup * len(lrs)) <= 1
    assert lrs[-1] < lrs[peak]
    assert type(trained.model).__name__ == "LlamaForCausalLM" and trained.template.name == "llama3-ou"
