"""Models: the tiny from-scratch path, saving and loading like any HF model, templates, LoRA, and the
paper-profile path (a model by name) exercised with a tiny model saved to a local folder."""

from __future__ import annotations

import time

import pytest
import torch
from conftest import REAL_TOFU, requires_real_tofu
from devices import close, same
from unlearnkit import config, models, paths, pipeline


def test_templates_follow_the_model_family():
    assert models.template_for("microsoft/phi-1_5").prompt("Q?") == "Question: Q?\nAnswer: "
    assert models.template_for("meta-llama/Llama-2-7b-chat-hf").prompt("Q?") == "[INST] Q? [/INST]"
    with pytest.raises(ValueError, match="known: phi, llama2-chat"):
        models.get_template("mistral")


def test_saved_tiny_model_reloads_with_its_template_and_same_outputs(tiny_model, tiny_tokenizer, tmp_path):
    folder = models.save_model(tiny_model, tiny_tokenizer, tmp_path / "m", models.TEMPLATES["llama2-chat"])
    model, tokenizer, template = models.load_model(folder, dtype="float32", template=None)
    assert template.name == "llama2-chat" and type(model).__name__ == "LlamaForCausalLM"
    ids = torch.tensor([models.encode_prompt(tokenizer, template, "Who?")])
    with torch.no_grad():
        assert close(model(ids).logits, tiny_model(ids).logits, atol=1e-6)
    assert tokenizer.decode(tokenizer("Where was Kofi born?")["input_ids"]) == "Where was Kofi born?"


def test_missing_folder_and_offline_hub_fail_fast(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        models.load_model(tmp_path / "nope", dtype="float32", template=None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.time()
    with pytest.raises(OSError):
        models.load_model("microsoft/phi-1_5", dtype="float32", template=None)
    assert time.time() - start < 30


def test_lora_trains_adapters_only_and_merges(tiny_model):
    before = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    peft_model = models.apply_lora(tiny_model, r=4, lora_alpha=8)
    trainable = [n for n, p in peft_model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    with torch.no_grad():
        for n, p in peft_model.named_parameters():
            if "lora_B" in n:
                p.fill_(0.01)  # B starts at zero; make the adapters do something
    merged = peft_model.merge_and_unload()
    changed = [k for k, v in merged.state_dict().items() if not same(v, before[k])]
    assert changed and all("proj" in k for k in changed)


@pytest.mark.slow
@requires_real_tofu("tests/test_paper_dry.py::test_notebook_01_fine_tunes_the_phi_stand_in_with_the_papers_schedule "
                    "(the paper profile on the synthetic corpus)")
def test_paper_profile_path_with_a_local_model_on_real_tofu(tiny_model, tiny_tokenizer, tmp_path, monkeypatch):
    """The paper profile loads a model by name and TOFU by name; here the same code reads a tiny model
    saved to a local folder and the real TOFU files, offline."""
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    local_model = models.save_model(tiny_model, tiny_tokenizer, tmp_path / "phi-stand-in", models.TEMPLATES["phi"])
    params = config.Params.load("paper", model=str(local_model), data_source=str(REAL_TOFU), dtype="float32",
                                max_authors=21, finetune_epochs=1, finetune_batch_size=8, finetune_grad_accum=2,
                                eval_max_items=6, max_new_tokens=8)
    base = pipeline.base_model(params)
    assert base.template.name == "phi"
    target = pipeline.finetuned_model(params, "full")
    rows = pipeline.corpus(params).load("full")
    assert len(rows) == 21 * 20  # 20 forget10 authors plus the first retain author
    assert len(target.history) == -(-len(rows) // 16)
    assert target.history[0]["lr"] < params.finetune_lr  # warm-up from the paper settings
    results, _ = pipeline.evaluate_models({"target": target.loaded}, params, pipeline.corpus(params))
    assert results["target"]["forget"]["n_items"] == 6 and 0 <= results["target"]["summary"]["model_utility"] <= 1
    # a second call finds the cached model instead of training again
    again = pipeline.finetuned_model(params, "full")
    assert again.history == target.history
