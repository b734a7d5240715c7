"""Chat templates: the tokenizer's own template for Vicuna- and Mistral-style models, the plain one for Phi-1.5."""

from __future__ import annotations

import pytest
from unlearnkit import models

# Small Jinja templates in the two families' shapes (system line + USER/ASSISTANT turns; [INST] with BOS).
VICUNA_STYLE = ("{% for m in messages %}{% if m['role'] == 'user' %}A chat between a user and an assistant. "
                "USER: {{ m['content'] }} {% endif %}{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}")
MISTRAL_STYLE = ("{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}[INST] {{ m['content'] }} [/INST]"
                 "{% endif %}{% endfor %}")


@pytest.fixture()
def chat_tokenizer(tiny_tokenizer):
    import copy

    return copy.deepcopy(tiny_tokenizer)


@pytest.mark.parametrize("jinja", [VICUNA_STYLE, MISTRAL_STYLE], ids=["vicuna-style", "mistral-style"])
def test_a_chat_template_renders_as_the_tokenizer_does_with_a_single_bos(chat_tokenizer, jinja, tmp_path):
    chat_tokenizer.chat_template = jinja
    template = models.chat_template(chat_tokenizer)
    request = "Write a {curly} poem about Oslo"  # braces in a request must survive the format string
    rendered = chat_tokenizer.apply_chat_template([{"role": "user", "content": request}], tokenize=False,
                                                  add_generation_prompt=True)
    assert template.prompt(request) == rendered.removeprefix(chat_tokenizer.bos_token)
    assert not template.question_format.startswith(chat_tokenizer.bos_token)
    ids = models.encode_prompt(chat_tokenizer, template, request)
    assert ids.count(chat_tokenizer.bos_token_id) <= 1  # BOS only where encode_prompt adds it, never twice
    # saved and loaded by folder with template="chat", the same template comes back
    model = models.build_tiny_llama(chat_tokenizer, {"hidden_size": 32, "num_hidden_layers": 1,
                                                     "num_attention_heads": 2, "intermediate_size": 64}, seed=0)
    folder = models.save_model(model, chat_tokenizer, tmp_path / "chat-model", models.TEMPLATES["phi"])
    loaded = models.load_model(folder, template=models.CHAT, dtype="float32")
    assert loaded.template.prompt(request) == template.prompt(request)


def test_without_a_chat_template_the_family_template_is_used(tiny_tokenizer):
    assert not getattr(tiny_tokenizer, "chat_template", None)
    assert models.conversation_template(tiny_tokenizer, "microsoft/phi-1_5") == models.TEMPLATES["phi"]
    with pytest.raises(ValueError, match="no chat template"):
        models.chat_template(tiny_tokenizer)


def test_a_chat_template_that_drops_the_message_is_refused(chat_tokenizer):
    chat_tokenizer.chat_template = "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
    with pytest.raises(ValueError, match="exactly once"):
        models.chat_template(chat_tokenizer)


def test_family_templates_of_the_paper_s_chat_models(tiny_tokenizer):
    vicuna = models.conversation_template(tiny_tokenizer, "lmsys/vicuna-7b-v1.5")
    assert vicuna.name == "vicuna" and vicuna.prompt("Hi").endswith("USER: Hi ASSISTANT:")
    # Mistral-Instruct ships its own chat template; without one its [INST] format is Llama-2's
    assert models.conversation_template(tiny_tokenizer, "mistralai/Mistral-7B-Instruct-v0.3").name == "llama2-chat"


def test_a_model_saved_with_its_chat_template_loads_with_it(chat_tokenizer, tmp_path):
    chat_tokenizer.chat_template = MISTRAL_STYLE
    template = models.chat_template(chat_tokenizer)
    model = models.build_tiny_llama(chat_tokenizer, {"hidden_size": 32, "num_hidden_layers": 1,
                                                     "num_attention_heads": 2, "intermediate_size": 64}, seed=0)
    folder = models.save_model(model, chat_tokenizer, tmp_path / "saved", template)
    assert models.load_model(folder, dtype="float32", template=None).template == template
    with pytest.raises(ValueError, match="chat template"):
        models.template_for(str(folder))
